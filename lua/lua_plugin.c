/*
 * lua_plugin.c -- the machinery the Lua policy plug-ins share (see
 * lua_plugin.h): reading the common keys of a policy object, opening the
 * policy's sandbox and running its script under lua_sandbox_call, and the
 * messages and first-failure record of its callbacks.
 *
 * Invariants: a LuaPlugin is open (sb and L set) from a successful
 * lua_plugin_open to lua_plugin_close, and a failed open leaves it closed;
 * args is set only while init runs (the caller's cJSON tree is not kept);
 * every message starts with `what`.
 */
#include "lua_plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonio.h"
#include "lua_json.h"
#include "lua_sandbox.h"

static const char *const lua_plugin_keys[] = {"kind", "script", "args", "max_instructions", "max_memory_mib",
                                              "seed", NULL};

/* ------------------------------------------------------ scenario object */

void lua_plugin_defaults(LuaPluginConfig *c)
{
    *c = (LuaPluginConfig){.script = NULL, .args = NULL, .max_instructions = LUA_SANDBOX_POLICY_INSTRUCTIONS,
                           .max_memory_bytes = LUA_SANDBOX_POLICY_MEMORY, .seed = 1};
}

int lua_plugin_parse_head(const cJSON *cfg, const char *where, const char *const *keys, const char *kind_hint,
                          const char **script, Err *e)
{
    if (!keys) keys = lua_plugin_keys;
    if (jsonio_expect_object(cfg, where, e) < 0 || jsonio_check_keys(cfg, where, keys, e) < 0) return -1;
    if (kind_hint) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(cfg, "kind");
        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "lua") != 0) {
            char p[512];
            jsonio_path(p, sizeof p, where, "kind");
            return err_set(e, "%s: %s", p, kind_hint);
        }
    }
    *script = NULL;
    return jsonio_str(cfg, "script", where, 1, script, e);
}

int lua_plugin_parse_tail(const cJSON *cfg, const char *where, const char *base_dir, const char *script,
                          LuaPluginConfig *c, char *path, size_t n, Err *e)
{
    int64_t mi = (int64_t)c->max_instructions, seed = (int64_t)c->seed;
    double mem = (double)c->max_memory_bytes / MIB;
    if (jsonio_int(cfg, "max_instructions", where, 0, 1000, INT64_MAX, &mi, e) < 0) return -1;
    if (jsonio_num(cfg, "max_memory_mib", where, 0, 1, 1 << 20, &mem, e) < 0) return -1;
    if (jsonio_int(cfg, "seed", where, 0, 0, INT64_MAX, &seed, e) < 0) return -1;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(cfg, "args");
    char p[512];
    if (args) {
        jsonio_path(p, sizeof p, where, "args");
        if (jsonio_expect_object(args, p, e) < 0) return -1;
    }
    if (lua_sandbox_resolve(script, base_dir, path, n, e) < 0) {
        jsonio_path(p, sizeof p, where, "script");
        return err_prefix(e, "%s", p);
    }
    c->script = path;
    c->args = args;
    c->max_instructions = (uint64_t)mi;
    c->max_memory_bytes = (size_t)(mem * MIB);
    c->seed = (uint64_t)seed;
    return 0;
}

int lua_plugin_parse(const cJSON *cfg, const char *where, const char *base_dir, const char *kind_hint,
                     LuaPluginConfig *c, char *path, size_t n, Err *e)
{
    const char *script = NULL;
    if (lua_plugin_parse_head(cfg, where, NULL, kind_hint, &script, e) < 0) return -1;
    lua_plugin_defaults(c);
    return lua_plugin_parse_tail(cfg, where, base_dir, script, c, path, n, e);
}

int lua_plugin_validate(const cJSON *cfg, const char *where, const char *base_dir, const char *kind_hint, Err *e)
{
    LuaPluginConfig c;
    char path[LUA_PLUGIN_PATH_MAX];
    return lua_plugin_parse(cfg, where, base_dir, kind_hint, &c, path, sizeof path, e);
}

/* ------------------------------------------------------------ the state */

int lua_plugin_open(LuaPlugin *p, const char *kind, const LuaPluginConfig *c, int (*init)(lua_State *L), void *ctx,
                    Err *e)
{
    if (!c->script || !*c->script) return err_set(e, "%s: no script given", kind);
    snprintf(p->path, sizeof p->path, "%s", c->script);
    snprintf(p->what, sizeof p->what, "%s %s", kind, p->path);
    p->failed = 0;
    LuaSandboxLimits lim = {.max_instructions = c->max_instructions, .max_memory_bytes = c->max_memory_bytes,
                            .seed = c->seed};
    p->sb = lua_sandbox_new(&lim, e);
    if (!p->sb) return err_prefix(e, "%s", p->what);
    lua_State *L = p->L = lua_sandbox_state(p->sb);
    lua_sandbox_set_name(p->sb, p->path);
    p->args = c->args;
    lua_pushcfunction(L, init);
    lua_pushlightuserdata(L, ctx);
    int rc = lua_sandbox_call(p->sb, 1, 1, p->what, e);
    p->args = NULL;
    if (rc == 0 && lua_type(L, -1) == LUA_TSTRING) rc = err_set(e, "%s: %s", p->what, lua_tostring(L, -1));
    lua_settop(L, 0);
    if (rc < 0) lua_plugin_close(p);
    return rc;
}

void lua_plugin_close(LuaPlugin *p)
{
    lua_sandbox_free(p->sb);
    p->sb = NULL;
    p->L = NULL;
}

int lua_plugin_run_script(lua_State *L, const LuaPlugin *p)
{
    if (luaL_loadfilex(L, p->path, "t") != LUA_OK) return 1;
    if (p->args) {
        if (lua_json_push(L, p->args) != LUA_OK) return lua_error(L);
    } else {
        lua_newtable(L);
    }
    lua_call(L, 1, 1);
    return 0;
}

int lua_plugin_entry(lua_State *L, const char *key, const char *params)
{
    if (lua_type(L, -1) == LUA_TTABLE) {
        lua_pushstring(L, key);
        lua_rawget(L, -2);
    }
    if (lua_type(L, -1) == LUA_TFUNCTION) return 0;
    lua_pushfstring(L, "the script must return a table {%s = function%s ... end} (or that function), got %s", key,
                    params, luaL_typename(L, -1));
    return 1;
}

int lua_plugin_line(lua_State *L, int idx)
{
    lua_Debug ar;
    lua_pushvalue(L, idx);
    return lua_getinfo(L, ">S", &ar) ? ar.linedefined : 0;
}

/* ------------------------------------------------------------ callbacks */

int lua_plugin_call(LuaPlugin *p, int nargs, Err *e)
{
    if (lua_sandbox_call(p->sb, nargs, 1, NULL, e ? e : &p->err) == 0) return 0;
    if (!e) p->failed = 1;
    return -1;
}

int lua_plugin_error(LuaPlugin *p, Err *e, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!e) {
        e = &p->err;
        p->failed = 1;
    }
    return err_set(e, "%s: %s", p->what, msg);
}

int lua_plugin_prefix(LuaPlugin *p, Err *e, const char *fmt, ...)
{
    char context[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    return err_prefix(e ? e : &p->err, "%s: %s", p->what, context);
}

int lua_plugin_check(const LuaPlugin *p, Err *e)
{
    if (!p->failed) return 0;
    if (e) *e = p->err;
    return -1;
}
