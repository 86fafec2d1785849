-- sweep_rates.lua -- goodput against arrival rate for two policies: the C
-- `continuous` scheduler and the Lua SLO-aware EDF with admission control
-- (lua/policies/edf_slo.lua), on Qwen3-8B / one H100 with Poisson traffic.
--
--   servesim lua lua/experiments/sweep_rates.lua [rates=2,8,16,32] [count=400]
--                [ttft_ms=1000] [max_running=64] [out=sweep_rates.csv] [quiet=0]
--
-- Prints a comparison table and writes it as CSV.  Past the knee the
-- continuous scheduler keeps completing requests but misses their TTFT
-- SLO (goodput falls); admission control rejects what it cannot serve in
-- time and keeps the rest good.

local cli = require "cli"
local tablefmt = require "tablefmt"

local a = cli.parse(servesim.args, {rates = "2,8,16,32", count = 400, ttft_ms = 1000, out = "sweep_rates.csv",
                                    max_running = 64, quiet = 0})
local say = a.quiet == 0 and print or function() end

local base = {
  name = "sweep_rates",
  model = "qwen3-8b",
  hardware = "h100-sxm",
  kv = {reserve = "on_demand", capacity_gib = 16},
  workload = {
    kind = "poisson", count = a.count, rate_per_s = 1,
    prompt_tokens = {dist = "lognormal", median = 1024, sigma = 0.8, min = 16, max = 8192},
    output_tokens = {dist = "lognormal", median = 256, sigma = 0.7, min = 1, max = 1024},
  },
  slo = {ttft_ms = a.ttft_ms, tpot_ms = 50},
  report = {iterations = false},
  seed = 1,
}

local policies = {
  {name = "continuous (C)", scheduler = {kind = "continuous", max_running = a.max_running}},
  {name = "edf_slo (Lua)", scheduler = {kind = "lua", script = "lua/policies/edf_slo.lua",
                                       max_running = a.max_running, args = {ttft_ms = a.ttft_ms}}},
}

local rows = {}
for _, rate in ipairs(cli.numbers(a.rates)) do
  for _, p in ipairs(policies) do
    local s = cli.copy(base)
    s.workload.rate_per_s = rate
    s.scheduler = cli.copy(p.scheduler)
    local rep = servesim.run(s, {requests = false})
    local su = rep.summary
    local ms = function(x) return x and x * 1000 end
    rows[#rows + 1] = {
      policy = p.name, rate_per_s = rate,
      completed_per_s = su.throughput.requests_per_s,
      goodput_per_s = su.goodput.requests_per_s,
      slo_attainment = su.goodput.slo_attainment,
      rejected = su.rejected,
      ttft_p50_ms = ms(su.ttft_s.p50), ttft_p99_ms = ms(su.ttft_s.p99),
      tpot_p50_ms = ms(su.tpot_s.p50),
    }
  end
end

local columns = {"rate_per_s", "policy", "completed_per_s", "goodput_per_s", "slo_attainment", "rejected",
                 "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms"}
say(string.format("goodput vs arrival rate: %d Poisson requests per point, TTFT SLO %g ms, TPOT SLO 50 ms",
                    a.count, a.ttft_ms))
say(tablefmt.format(rows, columns))
servesim.write_csv(a.out, rows, columns)
say("wrote " .. a.out)
