/*
 * lua_router.c -- the Lua-backed cluster router (see lua_router.h).
 *
 * Owns: the loads list handed to route() and the check of its answer; the
 * sandboxed state (one per router), the scenario keys and the failure
 * record are lua_plugin.c's.
 *
 * Invariants: the loads views read the caller's ReplicaLoad array only
 * while route() runs (rt->loads is NULL otherwise, and a view used later
 * raises); the request view of each call expires when the call returns,
 * since the router does not own the request records; after the first
 * failure (rt->plug.failed) the script is never called again.
 */
#include "lua_router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_sandbox.h"
#include "lua_view.h"

#define LUA_ROUTER_LOADS_MAGIC 0x4c4f4144u /* "LOAD" */
#define LUA_ROUTER_LOAD_MAGIC 0x4c4f4131u  /* "LOA1" */

typedef struct LuaRouter {
    LuaPlugin plug;
    int ref_route;
    int ref_loads;              /* the loads list */
    int ref_reqmt;
    const ReplicaLoad *loads;   /* during route() */
    uint32_t n;
    const Request *req;         /* during route() */
    LuaViewReq *view;           /* the request view of the call under way */
} LuaRouter;

typedef struct LuaRouterObj {
    uint32_t magic;
    uint32_t i;                 /* a load view: its replica (0-based) */
    LuaRouter *rt;
} LuaRouterObj;

static LuaRouterObj *lua_router_obj(lua_State *L, int idx, uint32_t magic)
{
    return lua_view_obj(L, idx, sizeof(LuaRouterObj), magic);
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
    int made = 0;
    LuaRouterObj *v = lua_view_item(L, lua_upvalueindex(1), lua_upvalueindex(2), i, sizeof *v, &made);
    if (made) *v = (LuaRouterObj){.magic = LUA_ROUTER_LOAD_MAGIC, .i = (uint32_t)i - 1, .rt = rt};
    return 1;
}

static int lua_router_loads_len(lua_State *L)
{
    LuaRouterObj *o = lua_router_obj(L, 1, LUA_ROUTER_LOADS_MAGIC);
    if (!o || !o->rt->loads) return luaL_error(L, "the loads list is readable only inside route()");
    lua_pushinteger(L, o->rt->n);
    return 1;
}

/* Builds the loads list, runs the script, keeps route(); protected with
 * the LuaRouter at 1.  Returns an error message or nothing. */
static int lua_router_init_p(lua_State *L)
{
    static const LuaViewList list = {.name = "replica loads", .index = lua_router_loads_index,
                                     .len = lua_router_loads_len, .item_name = "replica load",
                                     .item_fields = lua_router_load_fields, .item_index = lua_router_load_index};
    LuaRouter *rt = lua_touserdata(L, 1);
    lua_settop(L, 1);
    LuaRouterObj *o = lua_view_list_push(L, &list, sizeof *o);
    *o = (LuaRouterObj){.magic = LUA_ROUTER_LOADS_MAGIC, .i = 0, .rt = rt};
    rt->ref_loads = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_view_req_metatable(L);
    rt->ref_reqmt = luaL_ref(L, LUA_REGISTRYINDEX);
    if (lua_plugin_run_script(L, &rt->plug) || lua_plugin_entry(L, "route", "(r, loads)")) return 1;
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
    lua_State *L = rt->plug.L;
    if (rt->plug.failed || n == 0) return 0;
    rt->loads = loads;
    rt->n = n;
    rt->req = r;
    uint32_t out = 0;
    lua_pushcfunction(L, lua_router_call_p);
    lua_pushlightuserdata(L, rt);
    int rc = lua_plugin_call(&rt->plug, 1, NULL);
    lua_router_expire(rt);
    if (rc < 0) {
        lua_plugin_prefix(&rt->plug, NULL, "route(%s)", r->id ? r->id : "?");
    } else {
        /* a number, not a string Lua would convert ("1"): a policy's
         * answer has one type (issue 15) */
        int isint = 0;
        lua_Integer k = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
        if (!isint || k < 1 || k > (lua_Integer)n) {
            char got[64];
            if (isint) snprintf(got, sizeof got, "%lld", (long long)k);
            else snprintf(got, sizeof got, "a %s", luaL_typename(L, -1));
            lua_plugin_error(&rt->plug, NULL, "route(%s) returned %s; expected a replica number 1..%u",
                             r->id ? r->id : "?", got, n);
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
    lua_plugin_close(&rt->plug);
    free(rt);
}

int lua_router_check(const Router *rtr, Err *e)
{
    if (!rtr || rtr->route != lua_router_route) return 0;
    return lua_plugin_check(&((const LuaRouter *)rtr->ctx)->plug, e);
}

void lua_router_defaults(LuaRouterConfig *c) { lua_plugin_defaults(c); }

int lua_router_create(const LuaRouterConfig *c, Router *out, Err *e)
{
    LuaRouter *rt = xcalloc(1, sizeof *rt);
    rt->ref_route = rt->ref_loads = rt->ref_reqmt = LUA_NOREF;
    if (lua_plugin_open(&rt->plug, "lua router", c, lua_router_init_p, rt, e) < 0) {
        free(rt);
        return -1;
    }
    *out = (Router){.ctx = rt, .route = lua_router_route, .destroy = lua_router_destroy};
    return 0;
}

int lua_router_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e)
{
    return lua_plugin_validate(cfg, where, base_dir, NULL, e);
}

int lua_router_new(const cJSON *cfg, const char *where, const char *base_dir, Router *out, Err *e)
{
    LuaRouterConfig c;
    char path[LUA_PLUGIN_PATH_MAX];
    if (lua_plugin_parse(cfg, where, base_dir, NULL, &c, path, sizeof path, e) < 0) return -1;
    return lua_router_create(&c, out, e);
}
