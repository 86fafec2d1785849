-- planner.lua -- servesim.sweep and servesim.plan hand back the tables
-- `servesim sweep --json` and `servesim plan --json` write.  tests/test_plan.c
-- runs it with (data directory, directory holding s1.json and p1.json from
-- the command line).

local data, out = ...

-- every key and value of a equals b's, and b has no key a lacks
local function same(a, b, path)
  if type(a) ~= type(b) then error(path .. ": " .. type(a) .. " vs " .. type(b)) end
  if type(a) ~= "table" then
    if a ~= b then error(path .. ": " .. tostring(a) .. " vs " .. tostring(b)) end
    return
  end
  for k, v in pairs(a) do same(v, b[k], path .. "." .. tostring(k)) end
  for k in pairs(b) do
    if a[k] == nil then error(path .. "." .. tostring(k) .. ": missing") end
  end
end

local s = servesim.sweep(data .. "/workloads/chapters/ch8_goodput_vs_rate.json",
                         {rates = {0.5, 1, 2, 4, 8, 16, 32, 64}, seeds = 3, jobs = 1})
same(s, servesim.load(out .. "/s1.json"), "sweep")
assert(s.knee.max_goodput_rate_per_s > 2 and s.knee.max_goodput_rate_per_s < 2.1)

local p = servesim.plan(data .. "/workloads/plans/chat_qwen32b_small.json", {jobs = 2})
same(p, servesim.load(out .. "/p1.json"), "plan")
assert(p.recommended == "h200-spec")

-- a scenario given as a table sweeps too; bad options are errors
local sc = servesim.load(data .. "/workloads/chapters/ch8_goodput_vs_rate.json")
local t = servesim.sweep(sc, {rates = {1, 16}, jobs = 1})
assert(#t.points == 2 and t.points[2].completion_rps.mean > t.points[1].completion_rps.mean)
local ok, err = pcall(servesim.sweep, sc, {rates = {1}, auto = true})
assert(not ok and err:find("either opts.rates or opts.auto"), tostring(err))
ok, err = pcall(servesim.sweep, sc, {rates = {0}})
assert(not ok and err:find("opts.rates%[1%] must be a rate > 0"), tostring(err))
print("planner.lua: ok")
