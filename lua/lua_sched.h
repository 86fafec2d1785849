/*
 * lua_sched.h -- a scheduler written in Lua, behind the Scheduler interface
 * of policy.h, so the engine runs it exactly like a C one.
 *
 * Scenario form:
 *   "scheduler": {"kind": "lua", "script": "lua/policies/fcfs.lua",
 *                 "args": {...}, "max_running": 256, "token_budget": 2048,
 *                 "max_instructions": 50000000, "max_memory_mib": 256,
 *                 "seed": 1}
 * Only kind and script are required.  max_running and token_budget are
 * limits the engine side enforces on the script's decisions (no
 * token_budget: no per-iteration token limit); the other keys size the
 * sandbox (lua_sandbox.h).
 *
 * The script returns a table {schedule = f, on_arrival = g} (or just the
 * function schedule).  At each boundary schedule(v) gets the read-only view
 * v and decides through v's methods (v:decode(r), v:prefill(r, c),
 * v:admit(r [, c]), v:try_admit(r [, c]), v:preempt(r), v:reject(r)) or by
 * returning a decision table {preempt = {...}, reject = {...}, decode =
 * {...}, prefill = {{r, c}, ...}, admit = {r or {r, c}, ...}}, applied in
 * that order.  Every decision is validated (known request, right state,
 * chunk in 1..prompt tokens left, budget, max_running, KV through
 * eng_admit's answer, one item per request); a bad one stops the run with
 * an error naming the script, the line and the decision.  lua/README.md
 * documents the view.
 *
 * This header does not include lua.h: scenario.c may call lua_sched_new
 * without knowing Lua.
 */
#ifndef SERVESIM_LUA_SCHED_H
#define SERVESIM_LUA_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "policy.h"

typedef struct LuaSchedConfig {
    const char *script;        /* path of the policy (resolved by the caller) */
    const cJSON *args;         /* optional: the script's argument table */
    uint32_t max_running;      /* requests admitted at once (default 256) */
    uint32_t token_budget;     /* new tokens per iteration (0 = no limit) */
    uint64_t max_instructions; /* per callback */
    size_t max_memory_bytes;   /* the policy's Lua state */
    uint64_t seed;             /* math.random's seed */
} LuaSchedConfig;

/* Defaults: max_running 256, no token budget, the sandbox's policy limits. */
void lua_sched_defaults(LuaSchedConfig *c);

int lua_sched_create(const LuaSchedConfig *c, Scheduler *out, Err *e);

/* From a scenario's scheduler object (kind "lua").  where: the key path for
 * messages ("s.json: scheduler"); base_dir: the scenario file's directory,
 * against which a relative script path resolves first ("" = none). */
int lua_sched_new(const cJSON *cfg, const char *where, const char *base_dir, Scheduler *out, Err *e);

/* The checks of lua_sched_new without running the script (keys, types,
 * the script's path), for a scenario parser that builds engines later. */
int lua_sched_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e);

/* 1 when a scheduler object says "kind": "lua". */
int lua_sched_is_lua(const cJSON *cfg);

#endif
