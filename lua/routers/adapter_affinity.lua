-- adapter_affinity.lua -- a cluster router that keeps each LoRA adapter's
-- requests on one replica (whose adapter cache then holds it), unless that
-- replica is much busier than the least loaded one.  The same rule as the C
-- router "adapter_affinity" (sim/cluster.c), written as a script: on the
-- same scenario it routes every request the same way.
--
-- Scenario: "cluster": {"replicas": 4, "router": {"kind": "lua",
--            "script": "lua/routers/adapter_affinity.lua", "args": {"slack": 2}}}
-- args: slack (stay home while its running + waiting count is at most
-- slack x the least loaded replica's + 2, default 2).

local args = ...
local slack = args.slack or 2

local home = {}

local function least_loaded(loads)
  local best, best_v = 1, math.huge
  for i = 1, #loads do
    local v = loads[i].running + loads[i].waiting
    if v < best_v then best, best_v = i, v end
  end
  return best, best_v
end

local M = {}

function M.route(r, loads)
  local best, best_v = least_loaded(loads)
  local a = r.adapter
  if a == 0 then return best end -- the base model: least loaded
  local h = home[a]
  if h then
    if h <= #loads and loads[h].running + loads[h].waiting <= slack * best_v + 2 then return h end
    return best
  end
  home[a] = best
  return best
end

return M
