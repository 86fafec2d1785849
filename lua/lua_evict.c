/*
 * lua_evict.c -- the Lua-backed prefix-cache eviction rule (see
 * lua_evict.h).
 *
 * Owns: the view v, the candidates list handed to evict() and the check of
 * its answer; the sandboxed state (one per policy, so per replica), the
 * scenario keys and the failure record are lua_plugin.c's.
 *
 * Invariants: the views read the caller's EvictCandidate array only while
 * evict() runs (ev->c is NULL otherwise, and a view used then raises); a
 * candidate view is stamped with the call that handed it out, so one kept
 * in an upvalue raises in a later call instead of reading another block;
 * after the first failure (ev->plug.failed) the script is never called
 * again.
 */
#include "lua_evict.h"

#include <stdio.h>
#include <stdlib.h>

#include "lua_sandbox.h"
#include "lua_view.h"

#define LUA_EVICT_VIEW_MAGIC 0x45565631u /* "EVV1" */
#define LUA_EVICT_LIST_MAGIC 0x4556434cu /* "EVCL" */
#define LUA_EVICT_CAND_MAGIC 0x45564331u /* "EVC1" */

/* The message for an eviction object whose kind is not "lua". */
#define LUA_EVICT_KIND_HINT "an eviction object needs \"kind\": \"lua\" (or give \"eviction\" as \"lru\" or \"value\")"

typedef struct LuaEvict {
    LuaPlugin plug;
    int ref_evict;
    int ref_view;
    int ref_list;
    int line;                   /* where evict is defined (0 = unknown) */
    const EvictCandidate *c;    /* during evict() */
    uint32_t n;
    uint32_t block_tokens;      /* 0 = not given */
    uint64_t calls;
} LuaEvict;

typedef struct LuaEvictObj {
    uint32_t magic;
    uint32_t i;                 /* a candidate view: its position (0-based) */
    uint64_t call;              /* a candidate view: the call that handed it out */
    LuaEvict *ev;
} LuaEvictObj;

static LuaEvictObj *lua_evict_obj(lua_State *L, int idx, uint32_t magic)
{
    return lua_view_obj(L, idx, sizeof(LuaEvictObj), magic);
}

/* The field code of the key at 2 (upvalue 1 = codes), 0 when unknown. */
static int lua_evict_code(lua_State *L)
{
    lua_pushvalue(L, 2);
    int code = lua_rawget(L, lua_upvalueindex(1)) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    return code;
}

static const char *lua_evict_key(lua_State *L)
{
    return lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
}

static const char *const lua_evict_cand_fields[] = {"block", "depth", "hits", "lookups_since", "index", NULL};

/* c[i].field; upvalue 1 = field codes */
static int lua_evict_cand_index(lua_State *L)
{
    LuaEvictObj *o = lua_evict_obj(L, 1, LUA_EVICT_CAND_MAGIC);
    if (!o) return luaL_error(L, "not an eviction candidate");
    const LuaEvict *ev = o->ev;
    if (!ev->c || o->call != ev->calls || o->i >= ev->n)
        return luaL_error(L, "an eviction candidate is readable only inside the evict() call that received it");
    const EvictCandidate *x = &ev->c[o->i];
    switch (lua_evict_code(L)) {
    case 1: lua_pushinteger(L, (lua_Integer)x->block); break;
    case 2: lua_pushinteger(L, (lua_Integer)x->depth); break;
    case 3: lua_pushinteger(L, (lua_Integer)x->hits); break;
    case 4: lua_pushinteger(L, (lua_Integer)x->lookups_since); break;
    case 5: lua_pushinteger(L, (lua_Integer)o->i + 1); break;
    default:
        return luaL_error(L, "an eviction candidate has no field '%s' (block, depth, hits, lookups_since, index)",
                          lua_evict_key(L));
    }
    return 1;
}

/* c[i]; upvalues 1 = cache of candidate views, 2 = their metatable */
static int lua_evict_list_index(lua_State *L)
{
    LuaEvictObj *o = lua_evict_obj(L, 1, LUA_EVICT_LIST_MAGIC);
    if (!o) return luaL_error(L, "not a candidates list");
    LuaEvict *ev = o->ev;
    if (!ev->c) return luaL_error(L, "the candidates list is readable only inside evict()");
    int isint = 0;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    if (!isint || lua_type(L, 2) != LUA_TNUMBER)
        return luaL_error(L, "the candidates are indexed by 1..#c, not by %s", luaL_typename(L, 2));
    if (i < 1 || i > (lua_Integer)ev->n) {
        lua_pushnil(L);
        return 1;
    }
    int made = 0;
    LuaEvictObj *v = lua_view_item(L, lua_upvalueindex(1), lua_upvalueindex(2), i, sizeof *v, &made);
    if (made) *v = (LuaEvictObj){.magic = LUA_EVICT_CAND_MAGIC, .i = (uint32_t)i - 1, .ev = ev};
    v->call = ev->calls;
    return 1;
}

static int lua_evict_list_len(lua_State *L)
{
    LuaEvictObj *o = lua_evict_obj(L, 1, LUA_EVICT_LIST_MAGIC);
    if (!o || !o->ev->c) return luaL_error(L, "the candidates list is readable only inside evict()");
    lua_pushinteger(L, o->ev->n);
    return 1;
}

static const char *const lua_evict_view_fields[] = {"n", "calls", "block_tokens", NULL};

/* v.field; upvalue 1 = field codes */
static int lua_evict_view_index(lua_State *L)
{
    LuaEvictObj *o = lua_evict_obj(L, 1, LUA_EVICT_VIEW_MAGIC);
    if (!o) return luaL_error(L, "not an eviction view");
    const LuaEvict *ev = o->ev;
    if (!ev->c) return luaL_error(L, "the eviction view is readable only inside evict()");
    switch (lua_evict_code(L)) {
    case 1: lua_pushinteger(L, ev->n); break;
    case 2: lua_pushinteger(L, (lua_Integer)ev->calls); break;
    case 3:
        if (ev->block_tokens) lua_pushinteger(L, ev->block_tokens);
        else lua_pushnil(L);
        break;
    default:
        return luaL_error(L, "the eviction view has no field '%s' (n, calls, block_tokens)", lua_evict_key(L));
    }
    return 1;
}

/* Builds the view and the candidates list, runs the script, keeps evict();
 * protected with the LuaEvict at 1.  Returns an error message or nothing. */
static int lua_evict_init_p(lua_State *L)
{
    static const LuaViewList list = {.name = "eviction candidates", .index = lua_evict_list_index,
                                     .len = lua_evict_list_len, .item_name = "eviction candidate",
                                     .item_fields = lua_evict_cand_fields, .item_index = lua_evict_cand_index};
    LuaEvict *ev = lua_touserdata(L, 1);
    lua_settop(L, 1);
    LuaEvictObj *o = lua_view_list_push(L, &list, sizeof *o);
    *o = (LuaEvictObj){.magic = LUA_EVICT_LIST_MAGIC, .ev = ev};
    ev->ref_list = luaL_ref(L, LUA_REGISTRYINDEX);
    /* the view */
    o = lua_newuserdatauv(L, sizeof *o, 0);
    *o = (LuaEvictObj){.magic = LUA_EVICT_VIEW_MAGIC, .ev = ev};
    lua_view_push_codes(L, lua_evict_view_fields);
    lua_pushcclosure(L, lua_evict_view_index, 1);
    lua_view_metatable(L, "eviction view", NULL);
    lua_setmetatable(L, -2);
    ev->ref_view = luaL_ref(L, LUA_REGISTRYINDEX);
    /* the script */
    if (lua_plugin_run_script(L, &ev->plug) || lua_plugin_entry(L, "evict", "(v, c)")) return 1;
    int line = lua_plugin_line(L, -1);
    if (line > 0) ev->line = line;
    ev->ref_evict = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* (LuaEvict) -> evict(v, c); under lua_sandbox_call. */
static int lua_evict_call_p(lua_State *L)
{
    LuaEvict *ev = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ev->ref_evict);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ev->ref_view);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ev->ref_list);
    lua_call(L, 2, 1);
    return 1;
}

/* What the script returned at idx, for a message. */
static void lua_evict_describe(lua_State *L, int idx, char *out, size_t n)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) snprintf(out, n, "%lld", (long long)lua_tointeger(L, idx));
        else snprintf(out, n, "%.17g", (double)lua_tonumber(L, idx));
        break;
    case LUA_TSTRING: snprintf(out, n, "a string \"%.40s\"", lua_tostring(L, idx)); break;
    case LUA_TNIL: snprintf(out, n, "nil (nothing)"); break;
    default: snprintf(out, n, "a %s", luaL_typename(L, idx)); break;
    }
}

static int lua_evict_choose(void *ctx, const EvictCandidate *c, uint32_t n, Err *e)
{
    LuaEvict *ev = ctx;
    lua_State *L = ev->plug.L;
    if (lua_plugin_check(&ev->plug, e) < 0) return -1;
    if (n == 0) return err_set(e, "%s: no candidates to choose from", ev->plug.what);
    ev->calls++;
    ev->c = c;
    ev->n = n;
    int out = -1;
    lua_pushcfunction(L, lua_evict_call_p);
    lua_pushlightuserdata(L, ev);
    if (lua_plugin_call(&ev->plug, 1, NULL) < 0) {
        lua_plugin_prefix(&ev->plug, NULL, "evict(v, c) with %u candidates (call %llu)", n,
                          (unsigned long long)ev->calls);
    } else {
        int isint = 0;
        lua_Integer k = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
        if (!isint || k < 1 || k > (lua_Integer)n) {
            char got[96], line[24] = "";
            lua_evict_describe(L, -1, got, sizeof got);
            if (ev->line) snprintf(line, sizeof line, "%d:", ev->line);
            lua_plugin_error(&ev->plug, NULL, "evict(v, c) with %u candidates (call %llu): %s:%s evict returned %s; "
                             "expected a candidate index 1..%u", n, (unsigned long long)ev->calls, ev->plug.path, line,
                             got, n);
        } else {
            out = (int)k - 1;
        }
        lua_pop(L, 1);
    }
    ev->c = NULL;
    ev->n = 0;
    return out < 0 ? lua_plugin_check(&ev->plug, e) : out;
}

static void lua_evict_destroy(void *ctx)
{
    LuaEvict *ev = ctx;
    if (!ev) return;
    lua_plugin_close(&ev->plug);
    free(ev);
}

void lua_evict_set_block_tokens(const EvictPolicy *p, uint32_t block_tokens)
{
    if (p && p->choose == lua_evict_choose && p->ctx) ((LuaEvict *)p->ctx)->block_tokens = block_tokens;
}

void lua_evict_defaults(LuaEvictConfig *c) { lua_plugin_defaults(c); }

int lua_evict_create(const LuaEvictConfig *c, EvictPolicy *out, Err *e)
{
    LuaEvict *ev = xcalloc(1, sizeof *ev);
    ev->ref_evict = ev->ref_view = ev->ref_list = LUA_NOREF;
    if (lua_plugin_open(&ev->plug, "lua eviction policy", c, lua_evict_init_p, ev, e) < 0) {
        free(ev);
        return -1;
    }
    *out = (EvictPolicy){.ctx = ev, .choose = lua_evict_choose, .destroy = lua_evict_destroy};
    return 0;
}

int lua_evict_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e)
{
    return lua_plugin_validate(cfg, where, base_dir, LUA_EVICT_KIND_HINT, e);
}

int lua_evict_new(const cJSON *cfg, const char *where, const char *base_dir, EvictPolicy *out, Err *e)
{
    LuaEvictConfig c;
    char path[LUA_PLUGIN_PATH_MAX];
    if (lua_plugin_parse(cfg, where, base_dir, LUA_EVICT_KIND_HINT, &c, path, sizeof path, e) < 0) return -1;
    return lua_evict_create(&c, out, e);
}
