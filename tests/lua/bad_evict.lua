-- bad_evict.lua -- an eviction rule that behaves like LRU (always the
-- oldest candidate, index 1) and misbehaves as args.case says from its
-- args.at-th call on (default: the second).

local args = ...
local case = args.case or "lru"
local at = args.at or 2
local kept = nil

return {
  evict = function(v, c) -- @evict
    if v.calls == 1 then kept = c[1] end
    if v.calls < at then return 1 end
    if case == "zero" then return 0 end
    if case == "too_big" then return #c + 1 end
    if case == "string" then return "first" end
    if case == "numeric_string" then return "1" end
    if case == "float" then return 1.5 end
    if case == "nothing" then return end
    if case == "error" then error("evict boom at call " .. v.calls) end -- @error
    if case == "loop" then while true do end end -- @loop
    if case == "kept" then return kept.depth end -- @kept
    if case == "write" then c[1].hits = 0 end -- @write
    if case == "typo" then return c[1].dept end -- @typo
    return 1
  end,
}
