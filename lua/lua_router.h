/*
 * lua_router.h -- a cluster router written in Lua, behind the Router
 * interface of policy.h.
 *
 * Scenario form (the cluster's "router" given as an object):
 *   "router": {"kind": "lua", "script": "lua/routers/prefix_affinity.lua",
 *              "args": {...}, "max_instructions": N, "max_memory_mib": M,
 *              "seed": S}
 * Only kind and script are required; the other keys size the sandbox
 * (lua_plugin.h, lua_sandbox.h).
 * The script returns {route = function(r, loads) ... end} (or the
 * function).  route gets the arriving request's read-only view (lua_view.h)
 * and the replicas' loads, loads[i] = {running, waiting, outstanding_tokens,
 * kv_used_blocks, kv_total_blocks, kv_free_blocks} (read-only, i = 1..#loads),
 * and returns the replica number 1..#loads.
 *
 * Router.route cannot return an error, so a failing script (an error, a
 * number out of range, the wrong type) is remembered: that route and every
 * later one answer replica 0, and lua_router_check reports the first error.
 * A cluster calls lua_router_check after routing (or at the end of the run)
 * and stops with that error.
 *
 * No lua.h here: the cluster can call it without knowing Lua.
 */
#ifndef SERVESIM_LUA_ROUTER_H
#define SERVESIM_LUA_ROUTER_H

#include <cjson/cJSON.h>

#include "lua_plugin.h"
#include "policy.h"

/* script, args, max_instructions (per route call), max_memory_bytes, seed. */
typedef LuaPluginConfig LuaRouterConfig;

/* Defaults: the sandbox's policy limits, seed 1. */
void lua_router_defaults(LuaRouterConfig *c);
int lua_router_create(const LuaRouterConfig *c, Router *out, Err *e);
/* From a scenario's router object (kind "lua"); where and base_dir as for
 * lua_sched_new. */
int lua_router_new(const cJSON *cfg, const char *where, const char *base_dir, Router *out, Err *e);
/* The checks of lua_router_new without running the script. */
int lua_router_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e);
/* 0 while the script has behaved; -1 + e with its first error. */
int lua_router_check(const Router *rt, Err *e);

#endif
