/*
 * lua_router.c -- the Lua-backed cluster router (see lua_router.h).
 *
 * Owns: one sandboxed state per router, the loads list handed to route()
 * and the check of its answer.
 *
 * Invariants: the loads views read the caller's ReplicaLoad array only
 * while route() runs (rt->loads is NULL otherwise, and a view used later
 * raises); the request view of each call expires when the call returns,
 * since the router does not own the request records; after the first
 * failure (rt->failed) the script is never called again.
 */
#include "lua_router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "lua_json.h"
#include "lua_sandbox.h"
#include "lua_view.h"

#define LUA_ROUTER_LOADS_MAGIC 0x4c4f4144u /* "LOAD" */
#define LUA_ROUTER_LOAD_MAGIC 0x4c4f4131u  /* "LOA1" */

typedef struct LuaRouter {
    LuaSandbox *sb;
    lua_State *L;
    char path[1024];
    const cJSON *args;          /* during creation only */
    int ref_route;
    int ref_loads;              /* the loads list */
    int ref_reqmt;
    const ReplicaLoad *loads;   /* during route() */
    uint32_t n;
    const Request *req;         /* during route() */
    LuaViewReq *view;           /* the request view of the call under way */
    uint64_t calls;
    int failed;
    Err err;
} LuaRouter;

typedef struct LuaRouterObj {
    uint32_t magic;
    uint32_t i;                 /* a load view: its replica (0-based) */
    LuaRouter *rt;
} LuaRouterObj;

static LuaRouterObj *lua_router_obj(lua_State *L, int idx, uint32_t magic)
{
    LuaRouterObj *o = lua_touserdata(L, idx);
    if (!o || lua_rawlen(L, idx) != sizeof *o || o->magic != magic) return NULL;
    return o;
}

static const char *const lua_router_load_fields[] = {"running", "waiting", "outstanding_tokens", "kv_used_blocks",
                                                     "kv_total_blocks", "kv_free_blocks", "replica", NULL};

/* loads[i].field; upvalue 1 = field codes */
static int lua_router_load_index(lua_State *L)
{
    LuaRouterObj *o = lua_router_obj(L, 1, LUA_ROUTER_LOAD_MAGIC);
    if (!o) return luaL_error(L, "not a replica load");
    const LuaRouter *rt = o->rt;
    if (!rt->loads || o->i >= rt->n) return luaL_error(L, "a replica load is readable only inside route()");
    const ReplicaLoad *l = &rt->loads[o->i];
    lua_pushvalue(L, 2);
    int code = lua_rawget(L, lua_upvalueindex(1)) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    switch (code) {
    case 1: lua_pushinteger(L, l->running); break;
    case 2: lua_pushinteger(L, l->waiting); break;
    case 3: lua_pushinteger(L, (lua_Integer)l->outstanding_tokens); break;
    case 4: lua_pushinteger(L, (lua_Integer)l->kv_used_blocks); break;
    case 5: lua_pushinteger(L, (lua_Integer)l->kv_total_blocks); break;
    case 6:
        lua_pushinteger(L, l->kv_total_blocks > l->kv_used_blocks ? (lua_Integer)(l->kv_total_blocks - l->kv_used_blocks)
                                                                 : 0);
        break;
    case 7: lua_pushinteger(L, (lua_Integer)o->i + 1); break;
    default: {
        const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
        return luaL_error(L, "a replica load has no field '%s' (running, waiting, outstanding_tokens, "
                             "kv_used_blocks, kv_total_blocks, kv_free_blocks, replica)", k);
    }
    }
    return 1;
}

/* loads[i]; upvalues 1 = cache of load views, 2 = their metatable */
static int lua_router_loads_index(lua_State *L)
{
    LuaRouterObj *o = lua_router_obj(L, 1, LUA_ROUTER_LOADS_MAGIC);
    if (!o) return luaL_error(L, "not a loads list");
    LuaRouter *rt = o->rt;
    if (!rt->loads) return luaL_error(L, "the loads list is readable only inside route()");
    int isint = 0;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    if (!isint) return luaL_error(L, "loads is indexed by replica number 1..#loads, not by %s", luaL_typename(L, 2));
    if (i < 1 || i > (lua_Integer)rt->n) {
        lua_pushnil(L);
        return 1;
    }
    if (lua_rawgeti(L, lua_upvalueindex(1), i) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    LuaRouterObj *v = lua_newuserdatauv(L, sizeof *v, 0);
    *v = (LuaRouterObj){.magic = LUA_ROUTER_LOAD_MAGIC, .i = (uint32_t)i - 1, .rt = rt};
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, lua_upvalueindex(1), i);
    return 1;
}

static int lua_router_loads_len(lua_State *L)
{
    LuaRouterObj *o = lua_router_obj(L, 1, LUA_ROUTER_LOADS_MAGIC);
    if (!o || !o->rt->loads) return luaL_error(L, "the loads list is readable only inside route()");
    lua_pushinteger(L, o->rt->n);
    return 1;
}

/* A locked, read-only metatable with the closure on top as __index. */
static void lua_router_metatable(lua_State *L, const char *name, lua_CFunction len)
{
    lua_newtable(L);
    lua_rotate(L, -2, 1); /* mt, index */
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, lua_view_readonly);
    lua_setfield(L, -2, "__newindex");
    if (len) {
        lua_pushcfunction(L, len);
        lua_setfield(L, -2, "__len");
    }
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
}

/* Builds the loads list, runs the script, keeps route(); protected with
 * the LuaRouter at 1.  Returns an error message or nothing. */
static int lua_router_init_p(lua_State *L)
{
    LuaRouter *rt = lua_touserdata(L, 1);
    lua_settop(L, 1);
    lua_newtable(L); /* 2: cache of load views */
    lua_view_push_codes(L, lua_router_load_fields);
    lua_pushcclosure(L, lua_router_load_index, 1);
    lua_router_metatable(L, "replica load", NULL); /* 3 */
    LuaRouterObj *o = lua_newuserdatauv(L, sizeof *o, 0);
    *o = (LuaRouterObj){.magic = LUA_ROUTER_LOADS_MAGIC, .i = 0, .rt = rt};
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_pushcclosure(L, lua_router_loads_index, 2);
    lua_router_metatable(L, "replica loads", lua_router_loads_len);
    lua_setmetatable(L, -2);
    rt->ref_loads = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, 1);
    lua_view_req_metatable(L);
    rt->ref_reqmt = luaL_ref(L, LUA_REGISTRYINDEX);
    if (luaL_loadfilex(L, rt->path, "t") != LUA_OK) return 1;
    if (rt->args) {
        if (lua_json_push(L, rt->args) != LUA_OK) return lua_error(L);
    } else {
        lua_newtable(L);
    }
    lua_call(L, 1, 1);
    if (lua_type(L, -1) == LUA_TTABLE) {
        lua_pushliteral(L, "route");
        lua_rawget(L, -2);
    }
    if (lua_type(L, -1) != LUA_TFUNCTION) {
        lua_pushfstring(L, "the script must return a table {route = function(r, loads) ... end} (or that "
                           "function), got %s", luaL_typename(L, -1));
        return 1;
    }
    rt->ref_route = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* (LuaRouter) -> route(r, loads); under lua_sandbox_call. */
static int lua_router_call_p(lua_State *L)
{
    LuaRouter *rt = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, rt->ref_route);
    lua_rawgeti(L, LUA_REGISTRYINDEX, rt->ref_reqmt);
    rt->view = lua_view_req_push(L, -1, rt->req->idx, rt->req, NULL, rt);
    lua_remove(L, -2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, rt->ref_loads);
    lua_call(L, 2, 1);
    return 1;
}

/* Expires the request view of the call that just returned, in case the
 * script kept it.  Safe because nothing has allocated in the state since
 * the call returned, so the view has not been collected. */
static void lua_router_expire(LuaRouter *rt)
{
    if (rt->view) rt->view->r = NULL;
    rt->view = NULL;
}

static uint32_t lua_router_route(void *ctx, const Request *r, const ReplicaLoad *loads, uint32_t n)
{
    LuaRouter *rt = ctx;
    lua_State *L = rt->L;
    if (rt->failed || n == 0) return 0;
    rt->calls++;
    rt->loads = loads;
    rt->n = n;
    rt->req = r;
    uint32_t out = 0;
    lua_pushcfunction(L, lua_router_call_p);
    lua_pushlightuserdata(L, rt);
    int rc = lua_sandbox_call(rt->sb, 1, 1, NULL, &rt->err);
    lua_router_expire(rt);
    if (rc < 0) {
        err_prefix(&rt->err, "lua router %s: route(%s)", rt->path, r->id ? r->id : "?");
        rt->failed = 1;
    } else {
        int isint = 0;
        lua_Integer k = lua_tointegerx(L, -1, &isint);
        if (!isint || k < 1 || k > (lua_Integer)n) {
            char got[64];
            if (isint) snprintf(got, sizeof got, "%lld", (long long)k);
            else snprintf(got, sizeof got, "a %s", luaL_typename(L, -1));
            err_set(&rt->err, "lua router %s: route(%s) returned %s; expected a replica number 1..%u", rt->path,
                    r->id ? r->id : "?", got, n);
            rt->failed = 1;
        } else {
            out = (uint32_t)k - 1;
        }
        lua_pop(L, 1);
    }
    rt->loads = NULL;
    rt->req = NULL;
    return out;
}

static void lua_router_destroy(void *ctx)
{
    LuaRouter *rt = ctx;
    if (!rt) return;
    lua_sandbox_free(rt->sb);
    free(rt);
}

int lua_router_check(const Router *rtr, Err *e)
{
    if (!rtr || rtr->route != lua_router_route) return 0;
    const LuaRouter *rt = rtr->ctx;
    if (!rt->failed) return 0;
    if (e) *e = rt->err;
    return -1;
}

void lua_router_defaults(LuaRouterConfig *c)
{
    *c = (LuaRouterConfig){.script = NULL, .args = NULL, .max_instructions = LUA_SANDBOX_POLICY_INSTRUCTIONS,
                           .max_memory_bytes = LUA_SANDBOX_POLICY_MEMORY, .seed = 1};
}

int lua_router_create(const LuaRouterConfig *c, Router *out, Err *e)
{
    if (!c->script || !*c->script) return err_set(e, "lua router: no script given");
    LuaRouter *rt = xcalloc(1, sizeof *rt);
    snprintf(rt->path, sizeof rt->path, "%s", c->script);
    rt->ref_route = rt->ref_loads = rt->ref_reqmt = LUA_NOREF;
    LuaSandboxLimits lim = {.max_instructions = c->max_instructions, .max_memory_bytes = c->max_memory_bytes,
                            .seed = c->seed};
    rt->sb = lua_sandbox_new(&lim, e);
    if (!rt->sb) {
        err_prefix(e, "lua router %s", rt->path);
        free(rt);
        return -1;
    }
    lua_State *L = rt->L = lua_sandbox_state(rt->sb);
    lua_sandbox_set_name(rt->sb, rt->path);
    char what[1100];
    snprintf(what, sizeof what, "lua router %s", rt->path);
    rt->args = c->args;
    lua_pushcfunction(L, lua_router_init_p);
    lua_pushlightuserdata(L, rt);
    int rc = lua_sandbox_call(rt->sb, 1, 1, what, e);
    rt->args = NULL;
    if (rc == 0 && lua_type(L, -1) == LUA_TSTRING) {
        err_set(e, "%s: %s", what, lua_tostring(L, -1));
        rc = -1;
    }
    lua_settop(L, 0);
    if (rc < 0) {
        lua_router_destroy(rt);
        return -1;
    }
    *out = (Router){.ctx = rt, .route = lua_router_route, .destroy = lua_router_destroy};
    return 0;
}

/* Checks a router object and fills c (c->script points into path). */
static int lua_router_parse(const cJSON *cfg, const char *where, const char *base_dir, LuaRouterConfig *c, char *path,
                            size_t n, Err *e)
{
    static const char *const keys[] = {"kind", "script", "args", "max_instructions", "max_memory_mib", "seed", NULL};
    if (jsonio_expect_object(cfg, where, e) < 0 || jsonio_check_keys(cfg, where, keys, e) < 0) return -1;
    lua_router_defaults(c);
    const char *script = NULL;
    if (jsonio_str(cfg, "script", where, 1, &script, e) < 0) return -1;
    int64_t mi = (int64_t)c->max_instructions, seed = 1;
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

int lua_router_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e)
{
    LuaRouterConfig c;
    char path[1024];
    return lua_router_parse(cfg, where, base_dir, &c, path, sizeof path, e);
}

int lua_router_new(const cJSON *cfg, const char *where, const char *base_dir, Router *out, Err *e)
{
    LuaRouterConfig c;
    char path[1024];
    if (lua_router_parse(cfg, where, base_dir, &c, path, sizeof path, e) < 0) return -1;
    return lua_router_create(&c, out, e);
}
