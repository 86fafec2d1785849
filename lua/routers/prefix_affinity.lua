-- prefix_affinity.lua -- a cluster router that keeps requests with the
-- same prompt prefix on the same replica (whose prefix cache then holds
-- it), unless that replica is much busier than the least loaded one.
--
-- Scenario: "cluster": {"replicas": 4, "router": {"kind": "lua",
--            "script": "lua/routers/prefix_affinity.lua",
--            "args": {"prefix_tokens": 512, "slack": 2.0}}}
-- args: prefix_tokens (the prefix that names a group, default 512), slack
-- (stay with the group's replica while its outstanding tokens are at most
-- slack x the least loaded replica's + 4096, default 2), max_groups (groups
-- remembered, default 100000; the table restarts when full).

local args = ...
local prefix_tokens = args.prefix_tokens or 512
local slack = args.slack or 2.0
local max_groups = args.max_groups or 100000

local home, groups = {}, 0

local function least_loaded(loads)
  local best, best_v = 1, math.huge
  for i = 1, #loads do
    local v = loads[i].outstanding_tokens
    if v < best_v then best, best_v = i, v end
  end
  return best, best_v
end

local M = {}

function M.route(r, loads)
  local best, best_v = least_loaded(loads)
  local key = r:prefix_key(prefix_tokens)
  if key == nil then return best end  -- no token ids: plain least-loaded
  local h = home[key]
  if h and h <= #loads and loads[h].outstanding_tokens <= slack * best_v + 4096 then
    return h
  end
  if not h then
    groups = groups + 1
    if groups > max_groups then home, groups = {}, 1 end
  end
  home[key] = best
  return best
end

return M
