/*
 * lua_evict.h -- a prefix-cache eviction rule written in Lua, behind the
 * EvictPolicy interface of prefix.h.
 *
 * Scenario form (the KV pool's "eviction" given as an object; needs
 * "prefix_cache": true):
 *   "kv": {"prefix_cache": true,
 *          "eviction": {"kind": "lua", "script": "lua/evict/deepest_first.lua",
 *                       "args": {...}, "max_instructions": N,
 *                       "max_memory_mib": M, "seed": S}}
 * Only kind and script are required; the other keys size the sandbox
 * (lua_plugin.h, lua_sandbox.h) as for a Lua scheduler or router.
 *
 * The script returns {evict = function(v, c) ... end} (or the function).
 * When the pool must drop a cached block, evict gets the read-only view v
 * (n = #c, calls = evict calls so far, this one included, block_tokens)
 * and the read-only candidates c[i] (i = 1..#c, oldest first: c[1] is the
 * block LRU would drop), each with block, depth, hits, lookups_since and
 * index; it returns the index 1..#c of the block to drop.
 *
 * EvictPolicy.choose reports a failure (an error in the script, a value
 * that is not an integer in 1..#c) as -1 + Err naming the script, the line
 * and the bad value; the prefix cache keeps the first one and the engine
 * stops the run with it at the next iteration boundary.  After the first
 * failure the script is never called again (every later choose answers
 * -1 with the same message).
 *
 * No lua.h here: scenario.c builds the policy without knowing Lua.
 */
#ifndef SERVESIM_LUA_EVICT_H
#define SERVESIM_LUA_EVICT_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "lua_plugin.h"
#include "prefix.h"

/* script, args, max_instructions (per evict call), max_memory_bytes, seed. */
typedef LuaPluginConfig LuaEvictConfig;

/* Defaults: the sandbox's policy limits, seed 1. */
void lua_evict_defaults(LuaEvictConfig *c);
int lua_evict_create(const LuaEvictConfig *c, EvictPolicy *out, Err *e);

/* From a scenario's eviction object (kind "lua").  where: the key path for
 * messages ("s.json: kv.eviction"); base_dir: the scenario file's
 * directory, against which a relative script path resolves first ("" =
 * none). */
int lua_evict_new(const cJSON *cfg, const char *where, const char *base_dir, EvictPolicy *out, Err *e);
/* The checks of lua_evict_new without running the script (keys, types,
 * the script's path). */
int lua_evict_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e);

/* The pool's block size, shown to the script as v.block_tokens (nil until
 * set).  A no-op for a policy that is not a Lua one. */
void lua_evict_set_block_tokens(const EvictPolicy *p, uint32_t block_tokens);

#endif
