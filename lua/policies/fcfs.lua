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
-- By default v:advance_all() advances the running requests in one call and
-- Lua makes the admission decisions, so the Lua work per iteration does not
-- grow with the batch.  args.per_request = true walks the running list in
-- Lua, one decision per request: the same schedule, several times slower
-- (a Lua round trip per running request per iteration).

local args = ...
local per_request = args and args.per_request

-- The view and its lists are the same objects at every call: look the
-- fields and methods up once.
local running, waiting, max_running, advance_all, try_admit, decode, prefill

local function setup(v)
  running, waiting, max_running = v.running, v.waiting, v.max_running
  advance_all, try_admit, decode, prefill = v.advance_all, v.try_admit, v.decode, v.prefill
end

-- Every running request advances, written out request by request.
local function advance_each(v)
  -- Re-read #running on every step: growing on-demand KV may preempt the
  -- most recently admitted request, which shortens the list past i.
  local i = 1
  while i <= #running do
    local r = running[i]
    if r.decoding then decode(v, r) else prefill(v, r) end
    i = i + 1
  end
end

local M = {}

function M.schedule(v)
  if not running then setup(v) end
  if per_request then advance_each(v) else advance_all(v) end
  while #running < max_running and #waiting > 0 do
    -- try_admit admits with the whole prompt as the first chunk, or
    -- answers false when the KV cache cannot hold the request now.
    if not try_admit(v, waiting[1]) then break end
  end
end

return M
