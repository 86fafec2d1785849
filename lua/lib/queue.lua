-- queue.lua -- ordering helpers for Lua scheduling policies.
--
--   local queue = require "queue"
--   local cands = queue.sorted(v.waiting, function(a, b) return a.prompt_tokens < b.prompt_tokens end)
--
-- Views are read-only and live: a sort copies the requests into a plain
-- array first.  Ties keep queue order (the sort is made stable by position),
-- so a policy stays deterministic.

local queue = {}

-- The requests of a view list (v.waiting or v.running) as a plain array.
function queue.copy(list)
  local out = {}
  for i = 1, #list do out[i] = list[i] end
  return out
end

-- A copy of list sorted by less(a, b); equal requests keep their order.
-- key(r), when given, is computed once per request and compared instead.
function queue.sorted(list, less, key)
  local items, pos, k = queue.copy(list), {}, {}
  for i, r in ipairs(items) do
    pos[r] = i
    if key then k[r] = key(r) end
  end
  local cmp
  if key then
    cmp = function(a, b)
      local ka, kb = k[a], k[b]
      if ka ~= kb then return ka < kb end
      return pos[a] < pos[b]
    end
  else
    cmp = function(a, b)
      if less(a, b) then return true end
      if less(b, a) then return false end
      return pos[a] < pos[b]
    end
  end
  table.sort(items, cmp)
  return items
end

return queue
