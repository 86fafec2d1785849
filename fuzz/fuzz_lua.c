/* fuzz_lua.c -- the Lua scheduler adapter fed random decisions: the input
 * bytes become a byte string inside a fixed policy (the template below)
 * that, at every boundary, calls v:decode / prefill / admit /
 * try_admit / preempt / reject / advance_all / estimate on requests picked by
 * the bytes (or on nil and numbers), in pcall, then mostly advances and admits
 * as FCFS does, sometimes returning a decision table instead;
 * a small scenario runs to its end or to a clean error. */
#include "fuzz_common.h"

#include <gsl/gsl_errno.h>

#include "engine.h"
#include "lua_register.h"
#include "scenario.h"

static const char policy_head[] = "local D = \"";
static const char policy_tail[] =
    "\"\n"
    "local i = 0\n"
    "local function b() i = i + 1; if i > #D then i = 1 end; return D:byte(i) or 0 end\n"
    "local function pick(v)\n"
    "  local k = b() % 10\n"
    "  if k == 8 then return nil end\n"
    "  if k == 9 then return b() - 128 end\n"
    "  local L = k < 5 and v.running or v.waiting\n"
    "  local n = #L\n"
    "  if n == 0 then return nil end\n"
    "  return L[b() % n + 1]\n"
    "end\n"
    "local M = {}\n"
    "local calls = 0\n"
    "function M.schedule(v)\n"
    /* bounded work per input: the engine's own limit (ENGINE_MAX_PREEMPTIONS,
     * fuzz/README.md) is 100,000 preemptions, too slow per input here */
    "  calls = calls + 1\n"
    "  if calls > 20000 then error(\"fuzz: 20000 boundaries\") end\n"
    "  for _ = 1, b() % 6 do\n"
    "    local op, r = b() % 8, pick(v)\n"
    "    if op == 0 then pcall(v.decode, v, r)\n"
    "    elseif op == 1 then pcall(v.prefill, v, r, b() * 9 - 300)\n"
    "    elseif op == 2 then pcall(v.admit, v, r, b() * 9 - 300)\n"
    "    elseif op == 3 then pcall(v.try_admit, v, r)\n"
    "    elseif op == 4 then pcall(v.preempt, v, r)\n"
    "    elseif op == 5 then pcall(v.reject, v, r)\n"
    "    elseif op == 6 then pcall(v.advance_all, v)\n"
    "    else pcall(v.estimate, v, {{b(), b(), b() % 2 == 0 and \"decode\" or \"prefill\"}}) end\n"
    "  end\n"
    "  local t = b() % 8\n"
    "  if t == 0 then return {decode = {pick(v)}, admit = {pick(v)}} end\n"
    "  if t == 1 then return {prefill = {pick(v), pick(v)}, preempt = {pick(v)}, reject = {pick(v)}} end\n"
    "  if t < 7 then pcall(v.advance_all, v) end\n"
    "  if t < 6 then while #v.waiting > 0 and #v.running < v.max_running and v:try_admit(v.waiting[1]) do end end\n"
    "end\n"
    "return M\n";

static const char scenario_fmt[] =
    "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"lua\", \"script\": \"%s\", "
    "\"max_running\": %d}, \"kv\": {\"capacity_gib\": %g, \"block_tokens\": 16, \"reserve\": \"%s\"}, \"seed\": %d, "
    "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 50, \"count\": %d, \"prompt_tokens\": %d, "
    "\"output_tokens\": %d}}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_limits();
    gsl_set_error_handler_off();
    lua_plugins_register();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6 || size > 4096) return -1;
    /* the policy: the bytes after the first six as \ddd escapes */
    size_t cap = sizeof policy_head + sizeof policy_tail + 4 * size + 8, len = 0;
    char *src = malloc(cap);
    if (!src) return 0;
    len += (size_t)snprintf(src + len, cap - len, "%s", policy_head);
    for (size_t k = 6; k < size; k++) len += (size_t)snprintf(src + len, cap - len, "\\%03u", data[k]);
    if (size == 6) len += (size_t)snprintf(src + len, cap - len, "\\000");
    len += (size_t)snprintf(src + len, cap - len, "%s", policy_tail);
    char script[128];
    snprintf(script, sizeof script, "%s/policy.lua", fuzz_tmpdir());
    const char *p = fuzz_write_file("policy.lua", (const uint8_t *)src, len);
    free(src);
    if (!p) return 0;
    char text[1024];
    snprintf(text, sizeof text, scenario_fmt, script, 1 + data[0] % 8, data[1] % 2 ? 0.003 + 0.0005 * data[1] : 4.0,
             data[1] & 2 ? "final" : "on_demand", data[2], 1 + data[3] % 24, 1 + data[4] * 8, 1 + data[5] % 32);
    Scenario s;
    Err e = {{0}};
    int dbg = getenv("FUZZ_LUA_DEBUG") != NULL; /* prints the scenario and the outcome */
    if (dbg) fprintf(stderr, "%s\n", text);
    if (scenario_load_text(text, "(fuzz)", 0, 0, &s, &e) < 0) {
        if (dbg) fprintf(stderr, "load: %s\n", e.msg);
        fuzz_tmpdir_remove();
        return 0;
    }
    Engine *eng = scenario_engine(&s, NULL, &e);
    int rc = eng ? engine_run(eng, &e) : -1;
    if (dbg) fprintf(stderr, "run: %d %s\n", rc, rc < 0 ? e.msg : "");
    engine_free(eng);
    scenario_free(&s);
    fuzz_tmpdir_remove();
    return 0;
}
