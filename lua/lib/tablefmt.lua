-- tablefmt.lua -- aligned text tables for experiment scripts.
--
--   local tablefmt = require "tablefmt"
--   print(tablefmt.format(rows, {"policy", "rate", "goodput"}))
--
-- rows are records; numbers print with up to 4 significant decimals, nil
-- as "-".

local tablefmt = {}

local function cell(v)
  if v == nil then return "-" end
  if math.type(v) == "float" then
    if v ~= v then return "nan" end
    return string.format("%.4g", v)
  end
  return tostring(v)
end

function tablefmt.format(rows, columns)
  local width, text = {}, {}
  for c, name in ipairs(columns) do width[c] = #name end
  for i, row in ipairs(rows) do
    text[i] = {}
    for c, name in ipairs(columns) do
      local s = cell(row[name])
      text[i][c] = s
      if #s > width[c] then width[c] = #s end
    end
  end
  local lines = {}
  local head, rule = {}, {}
  for c, name in ipairs(columns) do
    head[c] = string.format("%-" .. width[c] .. "s", name)
    rule[c] = string.rep("-", width[c])
  end
  lines[1] = table.concat(head, "  ")
  lines[2] = table.concat(rule, "  ")
  for i = 1, #rows do
    local parts = {}
    for c = 1, #columns do
      -- numbers right-aligned, words left-aligned
      local fmt = tonumber(text[i][c]) and "%" or "%-"
      parts[c] = string.format(fmt .. width[c] .. "s", text[i][c])
    end
    lines[#lines + 1] = table.concat(parts, "  ")
  end
  return table.concat(lines, "\n")
end

return tablefmt
