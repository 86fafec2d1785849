-- deepest_first.lua -- a prefix-cache eviction rule: drop the deepest
-- cached block among the candidates (ties: the oldest).
--
--   "kv": {"prefix_cache": true,
--          "eviction": {"kind": "lua", "script": "lua/evict/deepest_first.lua"}}
--
-- A block deep in a sequence is only reusable by a request that shares the
-- whole prefix before it, so it is hit less often than the blocks above
-- it; dropping it first keeps the shallow, widely shared blocks (system
-- prompts, the first turns of a conversation).  LRU already tends to do
-- this for one finished sequence (its deepest block is released first);
-- this rule does it across sequences too.

local function evict(v, c)
  local best, best_depth = 1, -1
  for i = 1, #c do
    local d = c[i].depth
    if d > best_depth then
      best, best_depth = i, d
    end
  end
  return best
end

return {evict = evict}
