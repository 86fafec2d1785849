/*
 * lua_plugin.h -- what the three Lua policy plug-ins (lua_sched.c,
 * lua_router.c, lua_evict.c) share: the keys of a policy's scenario
 * object, the sandbox each policy runs in, the loading of its script and
 * the messages and first-failure record of its callbacks.
 *
 * Scenario object, common part:
 *   {"kind": "lua", "script": PATH, "args": {...}, "max_instructions": N,
 *    "max_memory_mib": M, "seed": S}
 * plus the keys a plug-in adds (a scheduler's max_running and
 * token_budget).  Only kind and script are required; the others size the
 * sandbox (lua_sandbox.h).
 *
 * A plug-in embeds a LuaPlugin.  lua_plugin_open makes its sandbox and runs
 * the plug-in's init function under lua_sandbox_call; init builds the
 * plug-in's views, runs the script's chunk (lua_plugin_run_script) and
 * keeps the functions it returns.  Each callback then calls the script
 * through lua_plugin_call.
 *
 * Messages start with the plug-in's `what`, "<kind> <script>" ("lua router
 * lua/routers/x.lua: route(r3) returned 0; ...").  lua_plugin_call,
 * lua_plugin_error and lua_plugin_prefix write into their Err *e, or with
 * e == NULL into the plug-in's own record: the failure of a callback that
 * cannot return one (a router's route, a scheduler's on_arrival) or whose
 * caller keeps the first one (an eviction rule's choose).  A plug-in with
 * a recorded failure (failed) never calls its script again;
 * lua_plugin_check reports the failure.
 *
 * No lua.h here (lua_State and LuaSandbox are only declared):
 * lua_router.h and lua_evict.h include this one for their configuration
 * type, and scenario.c and cluster.c include those without knowing Lua.
 */
#ifndef SERVESIM_LUA_PLUGIN_H
#define SERVESIM_LUA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common.h"

struct lua_State;
struct LuaSandbox;

/* Room for a resolved script path. */
#define LUA_PLUGIN_PATH_MAX 1024

typedef struct LuaPluginConfig {
    const char *script;        /* path (resolved by the caller) */
    const cJSON *args;         /* optional: the script's argument table */
    uint64_t max_instructions; /* per callback */
    size_t max_memory_bytes;   /* the policy's Lua state */
    uint64_t seed;             /* math.random's seed */
} LuaPluginConfig;

/* No script or args, the sandbox's policy limits, seed 1. */
void lua_plugin_defaults(LuaPluginConfig *c);

/* The first part of reading a policy object: cfg is an object whose keys
 * are all in `keys` (NULL: the common ones, in the order above); when
 * kind_hint is not NULL, a "kind" other than "lua" is the error
 * "<where>.kind: <kind_hint>"; "script" is a string, *script.  where: the
 * key path for messages ("s.json: kv.eviction"). */
int lua_plugin_parse_head(const cJSON *cfg, const char *where, const char *const *keys, const char *kind_hint,
                          const char **script, Err *e);
/* The second part: max_instructions, max_memory_mib, seed and args over
 * c's values, and the script resolved (lua_sandbox_resolve) against
 * base_dir (a scenario file's directory; "" = none) into path (n bytes),
 * c->script = path. */
int lua_plugin_parse_tail(const cJSON *cfg, const char *where, const char *base_dir, const char *script,
                          LuaPluginConfig *c, char *path, size_t n, Err *e);
/* An object with only the common keys, both parts, from the defaults. */
int lua_plugin_parse(const cJSON *cfg, const char *where, const char *base_dir, const char *kind_hint,
                     LuaPluginConfig *c, char *path, size_t n, Err *e);
/* lua_plugin_parse's checks, the result dropped. */
int lua_plugin_validate(const cJSON *cfg, const char *where, const char *base_dir, const char *kind_hint, Err *e);

typedef struct LuaPlugin {
    struct LuaSandbox *sb;
    struct lua_State *L;            /* sb's state */
    char path[LUA_PLUGIN_PATH_MAX]; /* the script */
    char what[1100];                /* "<kind> <path>", the head of every message */
    const cJSON *args;              /* during lua_plugin_open only */
    int failed;                     /* a failure is recorded in err */
    Err err;
} LuaPlugin;

/* Makes p's sandbox for c->script with c's limits and runs init under
 * lua_sandbox_call, with ctx as light userdata at 1.  init returns a
 * message string when the script is unusable (the message of a syntax
 * error as Lua gives it, a missing function), or nothing.  kind: "lua
 * router" and the like.  -1 + e ("<kind>: no script given", "<kind>
 * <path>: ...") with p closed. */
int lua_plugin_open(LuaPlugin *p, const char *kind, const LuaPluginConfig *c, int (*init)(struct lua_State *L),
                    void *ctx, Err *e);
void lua_plugin_close(LuaPlugin *p);

/* For init: loads p's script as a text chunk and calls it with the args
 * table (an empty one without args) as `...`; 0 with what it returns on
 * top.  1 with Lua's message on top when the file is missing or does not
 * compile (init returns that message).  Raises on an error in the chunk. */
int lua_plugin_run_script(struct lua_State *L, const LuaPlugin *p);
/* For init, with what the chunk returned on top: that function, or the
 * function at key in that table (raw access), pushed: 0.  Otherwise the
 * message "the script must return a table {<key> = function<params> ...
 * end} (or that function), got <type>" pushed: 1. */
int lua_plugin_entry(struct lua_State *L, const char *key, const char *params);
/* The line where the function at idx is defined (-1: a C function). */
int lua_plugin_line(struct lua_State *L, int idx);

/* lua_sandbox_call of the function below nargs arguments, keeping one
 * result: 0 with it on top, or -1 with nothing left and e = Lua's message
 * and traceback (e NULL: recorded as the failure). */
int lua_plugin_call(LuaPlugin *p, int nargs, Err *e);
/* e = "<what>: <message>" (e NULL: recorded as the failure); returns -1. */
int lua_plugin_error(LuaPlugin *p, Err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Prefixes e's message (a failed lua_plugin_call's; e NULL: the recorded
 * failure's) with "<what>: <context>"; returns -1. */
int lua_plugin_prefix(LuaPlugin *p, Err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* 0 while no failure is recorded; else -1 and, when e is not NULL, e = the
 * failure. */
int lua_plugin_check(const LuaPlugin *p, Err *e);

#endif
