-- bad_router.lua -- a router that misbehaves as args.case says, on the
-- second request it routes (the first always goes to replica 1).

local case = (...).case
local calls, kept = 0, nil

return {
  route = function(r, loads)
    calls = calls + 1
    if calls == 1 then
      kept = r
      return 1
    end
    if case == "zero" then return 0 end
    if case == "too_big" then return #loads + 1 end
    if case == "string" then return "first" end
    if case == "string_one" then return "1" end
    if case == "error" then error("router boom " .. r.id) end -- @error
    if case == "loop" then while true do end end
    if case == "kept_view" then return kept.prompt_tokens end -- @kept_view
    if case == "write_load" then loads[1].running = 0 end -- @write_load
    return #loads
  end,
}
