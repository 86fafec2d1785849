-- api.lua -- exercises the servesim module; tests/test_lua.c runs it with
-- (data directory, output directory) and checks the files it writes.

local data, out = ...
local chapter = data .. "/workloads/chapters/ch8_four_requests_continuous.json"

assert(servesim == require "servesim", "require returns the global module")
assert(servesim.args[1] == data and servesim.args[2] == out and arg[1] == data)

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end
assert(has(servesim.models(), "qwen3-8b"), "models() lists qwen3-8b")
assert(has(servesim.hardware(), "h100-sxm"), "hardware() lists h100-sxm")

local info = servesim.info{model = "qwen3-8b"}
assert(info.weights_read_bytes == 15136811008, "weights read per step")
assert(info.kv_bytes_per_token == 147456, "KV bytes per token")
local info2 = servesim.info{model = "qwen3-8b", hardware = "h100-sxm", kv_dtype = "fp8"}
assert(info2.fits == true and info2.kv_bytes_per_token == 73728 and info2.hardware.name:find("H100"))
local ok, err = pcall(servesim.info, {model = "qwen9-8b"})
assert(not ok and err:find("qwen9%-8b"), "unknown model named: " .. tostring(err))

-- the chapter's four requests under C continuous
local rep, t = servesim.run(chapter)
assert(rep.summary.requests == 4 and rep.summary.finished == 4)
assert(rep.scenario.scheduler == "continuous")
assert(rep.requests[1].id == "r0")
assert(math.abs(rep.requests[1].token_times_s[3] - 0.565589484) < 1e-9, "r0's third token")
assert(t.run_s >= 0 and t.load_s >= 0 and t.report_s >= 0)
assert(rep.requests[2].tpot_s ~= nil)

-- a table scenario: the same file with one request slot
local s = servesim.load(chapter)
s.scheduler.max_running = 1
local rep1 = servesim.run(s, {requests = false})
assert(rep1.requests == nil, "requests = false leaves them out")
assert(rep1.summary.ttft_s.mean > rep.summary.ttft_s.mean, "one slot: longer TTFT")

-- errors are Lua errors naming the problem
ok, err = pcall(servesim.run, {model = "qwen3-8b"})
assert(not ok and err:find("missing key"), tostring(err))
ok, err = pcall(servesim.run, {model = "qwen3-8b", scheduler = {kind = "continuous"}, hardware = "h100-sxm",
                               workload = {requests = {{arrival_ms = 0, prompt_tokens = 10, output_tokens = 2}}},
                               bogus = 1})
assert(not ok and err:find("bogus"), tostring(err))
ok, err = pcall(servesim.run, {model = print})
assert(not ok and err:find("function cannot be written as JSON"), tostring(err))
ok, err = pcall(servesim.plot, {})
assert(not ok and err:find("string expected"), tostring(err))

servesim.write_json(out .. "/summary.json", {ttft_p50_s = rep.summary.ttft_s.p50, ids = {"r0", "r1"}, ok = true})
local rows = {}
for _, r in ipairs(rep.requests) do
  rows[#rows + 1] = {id = r.id, ttft_ms = r.ttft_s * 1000, tokens = r.output_tokens, note = r.id == "r1" and "a, \"quoted\"" or nil}
end
servesim.write_csv(out .. "/requests.csv", rows, {"id", "tokens", "ttft_ms", "note"})
servesim.write_csv(out .. "/auto.csv", {{b = 2, a = 1}, {a = 3, c = true}})
servesim.write_csv(out .. "/arrays.csv", {{"x", "y"}, {1, 2.5}})
local back = servesim.load(out .. "/summary.json")
assert(back.ids[2] == "r1" and back.ok == true)
assert(type(servesim.clock()) == "number")

