-- edf_slo.lua -- earliest deadline first with SLO-aware admission control.
--
-- Each request's deadline is its own (deadline_ms in the workload) or, by
-- default, arrival + args.ttft_ms: the time its first token is due.
--   on arrival: predict when its first token would come if it were served
--     in deadline order -- waiting for a free slot (the running requests'
--     remaining tokens at the current decode step time) and for the
--     prefills of every waiting request with an earlier deadline, then its
--     own, each priced by the engine's cost model (v:estimate) -- and reject
--     it at once when that misses the deadline (a fast "no" beats a late
--     answer);
--   at every boundary: running requests advance; a waiting request that
--     would miss its deadline even if its prefill started now is rejected;
--     the rest are admitted earliest deadline first while max_running and
--     the KV cache allow.
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

-- Seconds until the k-th running request finishes (k >= 1), decoding the
-- current batch at its present step time.
local function slot_free_s(v, k)
  local running = v.running
  if #running == 0 or k > #running then return math.huge end
  local batch, left = {}, {}
  for i = 1, #running do
    local r = running[i]
    batch[i] = {1, r.kv_len, "decode"}
    left[i] = r.remaining_tokens
  end
  table.sort(left)
  return left[k] * v:estimate(batch)
end

-- When r's first token would come, served in deadline order.
local function predict_s(v, r)
  local due = deadline(r)
  local ahead, t = 0, prefill_s(v, r)
  local waiting = v.waiting
  for i = 1, #waiting do
    local w = waiting[i]
    if w ~= r and deadline(w) <= due then
      ahead = ahead + 1
      t = t + prefill_s(v, w)
    end
  end
  local free = v.max_running - #v.running
  if ahead >= free then t = t + slot_free_s(v, ahead - free + 1) end
  return t
end

local M = {}

function M.on_arrival(v, r)
  if admission and v.now + predict_s(v, r) > deadline(r) then return "reject" end
end

function M.schedule(v)
  v:advance_all()
  local waiting = v.waiting
  if #waiting == 0 then return end
  local now = v.now
  for _, r in ipairs(queue.sorted(waiting, nil, deadline)) do
    if admission and now + prefill_s(v, r) > deadline(r) then
      v:reject(r)
    elseif #v.running < v.max_running then
      if not v:try_admit(r) then break end  -- the KV cache is full for now
    end
  end
end

return M
