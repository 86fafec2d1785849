-- value.lua -- a prefix-cache eviction rule by expected value: drop the
-- candidate block worth least,
--
--     V = p_h * (T_r - T_f) - T_m
--
-- p_h   the chance the block is hit again, estimated from its record as
--       (hits + 1) / (lookups_since + 2) (Laplace's rule: a block nobody
--       has reused yet starts at 1/2 and falls as lookups pass it by);
-- T_r   what a miss costs: recomputing the block's block_tokens tokens,
--       whose attention spans the whole prefix before it, so the cost
--       grows with depth: B * (1 + depth * B / attn_tokens) token-equivalents;
-- T_f   what a hit costs instead (args.fetch_cost: fetching the block from a
--       slower tier; 0 here, the cache is in GPU memory);
-- T_m   what keeping it costs (args.hold_cost; the same for every block of a
--       pool, so it shifts every V alike and never changes the choice).
--
-- With the default arguments this is the C rule "eviction": "value"
-- (sim/prefix.c) to the bit: same candidates (the 32 oldest), same
-- arithmetic, ties to the oldest.
--
--   "kv": {"prefix_cache": true,
--          "eviction": {"kind": "lua", "script": "lua/evict/value.lua",
--                       "args": {"fetch_cost": 0, "hold_cost": 0, "attn_tokens": 8192}}}

local args = ...
local fetch_cost = args.fetch_cost or 0
local hold_cost = args.hold_cost or 0
local attn_tokens = args.attn_tokens or 8192

local function evict(v, c)
  local B = v.block_tokens or args.block_tokens or 16
  local best, best_v = 1, math.huge
  for i = 1, #c do
    local x = c[i]
    local p_hit = (x.hits + 1.0) / (x.lookups_since + 2.0)
    local t_r = B * (1.0 + x.depth * B / attn_tokens)
    local val = p_hit * (t_r - fetch_cost) - hold_cost
    if val < best_v then
      best, best_v = i, val
    end
  end
  return best
end

return {evict = evict}
