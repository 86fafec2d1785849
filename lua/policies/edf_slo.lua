-- edf_slo.lua -- earliest deadline first with SLO-aware admission control.
--
-- Each request's deadline is its own (deadline_ms in the workload) or, by
-- default, arrival + args.ttft_ms: the time its first token is due.
--   on arrival: predict when its first token would come if it were served
--     in deadline order -- the prefills of every waiting request with an
--     earlier deadline plus its own, priced by the engine's cost model
--     (v:estimate) -- and reject it at once when that misses the deadline
--     (a fast "no" beats a late answer);
--   at every boundary: running requests advance; waiting requests whose
--     deadline has passed are rejected; the rest are admitted earliest
--     deadline first while max_running and the KV cache allow.
--
-- Scenario: "scheduler": {"kind": "lua", "script": "lua/policies/edf_slo.lua",
--                         "max_running": 64, "args": {"ttft_ms": 1000}}
-- args: ttft_ms (default 1000), admission (default true: reject at arrival
-- and when late; false: EDF order only).

local queue = require "queue"

local args = ...
local ttft_s = (args.ttft_ms or 1000) / 1000
local admission = args.admission ~= false

local function deadline(r)
  return r.deadline or (r.arrival + ttft_s)
end

-- Seconds to prefill r alone (the cost model's price of that batch).
local function prefill_s(v, r)
  return v:estimate{{math.max(r.prefill_left, 1), r.kv_len}}
end

local M = {}

function M.on_arrival(v, r)
  if not admission then return end
  local due = deadline(r)
  local t = prefill_s(v, r)
  for i = 1, #v.waiting do
    local w = v.waiting[i]
    if w ~= r and deadline(w) <= due then t = t + prefill_s(v, w) end
  end
  if v.now + t > due then return "reject" end
end

function M.schedule(v)
  v:advance_all()
  local waiting = v.waiting
  if #waiting == 0 then return end
  local order = queue.sorted(waiting, nil, deadline)
  local now = v.now
  for _, r in ipairs(order) do
    if admission and now > deadline(r) then
      v:reject(r)
    elseif #v.running < v.max_running then
      if not v:try_admit(r) then break end  -- the KV cache is full for now
    end
  end
end

return M
