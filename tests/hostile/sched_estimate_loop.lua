-- builds one 100,000-item list and hands it to v:estimate in an endless
-- loop: about 10 Lua instructions a call, but 100,000 items of C work.
-- The sandbox charges the items to the call's instruction budget
-- (lua_sandbox_charge), so the policy's 5e7 limit stops it after ~60 calls.
local M = {}
function M.schedule(v)
  local items = {}
  for i = 1, 100000 do items[i] = {1, i} end
  while true do v:estimate(items) end
end
return M
