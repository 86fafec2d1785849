-- preempts every running request at every boundary and admits the head of
-- the queue again with a one-token chunk: its prefill restarts each time
-- and never completes, no request finishes (fuzz/hangs/lua_preempt_livelock
-- did the same).  The engine's ENGINE_MAX_PREEMPTIONS stops the run.
local M = {}
function M.schedule(v)
  for _, r in ipairs(v.running) do v:preempt(r) end
  if #v.waiting > 0 then v:admit(v.waiting[1], 1) end
end
return M
