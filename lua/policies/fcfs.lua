-- fcfs.lua -- iteration-level FCFS batching (Orca): the C `continuous`
-- scheduler of sim/sched.c rewritten in Lua, decision for decision.
--
-- At every boundary: every running request advances (the rest of its
-- prefill, or one decode token), then waiting requests are admitted in
-- queue order, each with its whole prompt as the first chunk, while fewer
-- than max_running run and the KV cache can hold them.
--
-- Scenario: "scheduler": {"kind": "lua", "script": "lua/policies/fcfs.lua",
--                         "max_running": 256}
-- args.per_request = true walks the running list in Lua, one decision per
-- request (the same schedule, several times slower: a Lua round trip per
-- running request per iteration); by default v:advance_all() does that walk
-- in one call and Lua makes the admission decisions.

local args = ...
local per_request = args and args.per_request

local M = {}

-- Every running request advances, written out request by request.
local function advance_each(v)
  local running = v.running
  local decode, prefill = v.decode, v.prefill
  -- Re-read #running on every step: growing on-demand KV may preempt the
  -- most recently admitted request, which shortens the list past i.
  local i = 1
  while i <= #running do
    local r = running[i]
    if r.decoding then decode(v, r) else prefill(v, r) end
    i = i + 1
  end
end

function M.schedule(v)
  if per_request then advance_each(v) else v:advance_all() end
  local running, waiting = v.running, v.waiting
  local max_running = v.max_running
  while #running < max_running and #waiting > 0 do
    -- try_admit admits with the whole prompt as the first chunk, or
    -- answers false when the KV cache cannot hold the request now.
    if not v:try_admit(waiting[1]) then break end
  end
end

return M
