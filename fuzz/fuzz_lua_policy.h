/* fuzz_lua_policy.h -- how fuzz_lua turns its input into a Lua policy and a
 * scenario, shared with tests/test_fuzz.c, which replays every input under
 * fuzz/regress/lua/ through `servesim run` the same way.
 *
 * Input: bytes 0-5 choose max_running, the KV pool and its reserve, the
 * seed, the request count (1-24), prompt and output lengths; the rest is
 * the decision string inside the fixed policy below. */
#ifndef SERVESIM_FUZZ_LUA_POLICY_H
#define SERVESIM_FUZZ_LUA_POLICY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

/* The policy's source for an input of 6..4096 bytes (malloc'd, *len its
 * length), or NULL. */
static char *fuzz_lua_policy(const uint8_t *data, size_t size, size_t *len_out)
{
    if (size < 6 || size > 4096) return NULL;
    /* the bytes after the first six as \ddd escapes */
    size_t cap = sizeof policy_head + sizeof policy_tail + 4 * size + 8, len = 0;
    char *src = malloc(cap);
    if (!src) return NULL;
    len += (size_t)snprintf(src + len, cap - len, "%s", policy_head);
    for (size_t k = 6; k < size; k++) len += (size_t)snprintf(src + len, cap - len, "\\%03u", data[k]);
    if (size == 6) len += (size_t)snprintf(src + len, cap - len, "\\000");
    len += (size_t)snprintf(src + len, cap - len, "%s", policy_tail);
    *len_out = len;
    return src;
}

/* The scenario running the policy at `script`. */
static void fuzz_lua_scenario(char *text, size_t n, const uint8_t *data, const char *script)
{
    snprintf(text, n, scenario_fmt, script, 1 + data[0] % 8, data[1] % 2 ? 0.003 + 0.0005 * data[1] : 4.0,
             data[1] & 2 ? "final" : "on_demand", data[2], 1 + data[3] % 24, 1 + data[4] * 8, 1 + data[5] % 32);
}

#endif
