-- cli.lua -- key=value arguments for experiment scripts.
--
--   local cli = require "cli"
--   local a = cli.parse(servesim.args, {rates = "1,4,16", count = 200})
--   for _, r in ipairs(cli.numbers(a.rates)) do ... end
--
-- Unknown keys are errors (naming the known ones), so a typo does not
-- silently run the default experiment.

local cli = {}

function cli.parse(list, defaults)
  local out = {}
  for k, v in pairs(defaults) do out[k] = v end
  for _, a in ipairs(list) do
    local k, v = string.match(a, "^([%w_]+)=(.*)$")
    if not k then error("argument '" .. a .. "': expected key=value", 2) end
    if defaults[k] == nil then
      local known = {}
      for name in pairs(defaults) do known[#known + 1] = name end
      table.sort(known)
      error("unknown argument '" .. k .. "' (known: " .. table.concat(known, ", ") .. ")", 2)
    end
    if math.type(defaults[k]) then
      local n = tonumber(v)
      if not n then error("argument " .. k .. "=" .. v .. ": expected a number", 2) end
      out[k] = n
    else
      out[k] = v
    end
  end
  return out
end

-- "1,4,16" -> {1, 4, 16}
function cli.numbers(s)
  local out = {}
  for part in string.gmatch(tostring(s), "[^,]+") do
    local n = tonumber(part)
    if not n then error("'" .. part .. "' is not a number", 2) end
    out[#out + 1] = n
  end
  return out
end

-- A deep copy of a plain table (scenarios are edited per run).
function cli.copy(t)
  if type(t) ~= "table" then return t end
  local out = {}
  for k, v in pairs(t) do out[k] = cli.copy(v) end
  return out
end

return cli
