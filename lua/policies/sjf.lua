-- sjf.lua -- shortest prompt first, written as a returned decision table.
--
-- Every running request advances (one decode token, or the rest of its
-- prefill).  Then waiting requests are considered shortest prompt first
-- (ties: queue order) and admitted with their whole prompt (or what is left
-- of the token budget, when the scenario sets one) while fewer than
-- max_running run and their KV need fits what is free.  A long request
-- waits while shorter ones keep arriving: SJF lowers mean TTFT at the price
-- of the tail (args.max_wait_s bounds that: a request that has waited longer
-- goes first).
--
-- Scenario: "scheduler": {"kind": "lua", "script": "lua/policies/sjf.lua",
--                         "max_running": 64, "args": {"max_wait_s": 30}}
-- This policy returns its decisions as a table instead of calling the
-- view's methods: {decode = {r, ...}, prefill = {{r, c}, ...}, admit = {r, ...}}.

local queue = require "queue"

local args = ...
local max_wait_s = args.max_wait_s or math.huge

local M = {}

function M.schedule(v)
  local d = {decode = {}, prefill = {}, admit = {}}
  -- the token budget (math.maxinteger without one) bounds the iteration:
  -- decodes first, then prefill chunks, then admissions' first chunks
  local budget = v.budget_left
  local running = v.running
  for i = 1, #running do
    local r = running[i]
    if budget <= 0 then break end
    if r.decoding then
      d.decode[#d.decode + 1] = r
      budget = budget - 1
    else
      local c = math.min(r.prefill_left, budget)
      d.prefill[#d.prefill + 1] = {r, c}
      budget = budget - c
    end
  end
  local room = v.max_running - #running
  if room <= 0 or #v.waiting == 0 then return d end
  local now = v.now
  -- starving requests first (by arrival), then shortest prompt first
  local order = queue.sorted(v.waiting, nil, function(r)
    local starving = now - r.arrival > max_wait_s
    return (starving and 0 or 1) * 1e12 + (starving and r.arrival * 1e3 or r.prompt_tokens)
  end)
  local free = v.kv_free_blocks
  for _, r in ipairs(order) do
    if room == 0 then break end
    local need = v:kv_need(r)  -- at its largest: admission never fails on KV
    if budget <= 0 then break end
    if need <= free then
      local c = math.min(r.prefill_left, budget)
      d.admit[#d.admit + 1] = {r, c}
      budget = budget - c
      free = free - need
      room = room - 1
    end
  end
  return d
end

return M
