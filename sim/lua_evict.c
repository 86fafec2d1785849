/*
 * lua_evict.c -- the Lua-backed prefix-cache eviction rule (see
 * lua_evict.h).
 *
 * Owns: one sandboxed state per policy (so per replica), the view v, the
 * candidates list handed to evict() and the check of its answer.
 *
 * Invariants: the views read the caller's EvictCandidate array only while
 * evict() runs (ev->c is NULL otherwise, and a view used then raises); a
 * candidate view is stamped with the call that handed it out, so one kept
 * in an upvalue raises in a later call instead of reading another block;
 * after the first failure (ev->failed) the script is never called again.
 */
#include "lua_evict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "lua_json.h"
#include "lua_sandbox.h"
#include "lua_view.h"

#define LUA_EVICT_VIEW_MAGIC 0x45565631u /* "EVV1" */
#define LUA_EVICT_LIST_MAGIC 0x4556434cu /* "EVCL" */
#define LUA_EVICT_CAND_MAGIC 0x45564331u /* "EVC1" */

typedef struct LuaEvict {
    LuaSandbox *sb;
    lua_State *L;
    char path[1024];
    const cJSON *args;          /* during creation only */
    int ref_evict;
    int ref_view;
    int ref_list;
    int line;                   /* where evict is defined (0 = unknown) */
    const EvictCandidate *c;    /* during evict() */
    uint32_t n;
    uint32_t block_tokens;      /* 0 = not given */
    uint64_t calls;
    int failed;
    Err err;
} LuaEvict;

typedef struct LuaEvictObj {
    uint32_t magic;
    uint32_t i;                 /* a candidate view: its position (0-based) */
    uint64_t call;              /* a candidate view: the call that handed it out */
    LuaEvict *ev;
} LuaEvictObj;

static LuaEvictObj *lua_evict_obj(lua_State *L, int idx, uint32_t magic)
{
    LuaEvictObj *o = lua_touserdata(L, idx);
    if (!o || lua_rawlen(L, idx) != sizeof *o || o->magic != magic) return NULL;
    return o;
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
    LuaEvictObj *v;
    if (lua_rawgeti(L, lua_upvalueindex(1), i) != LUA_TNIL) {
        v = lua_touserdata(L, -1);
    } else {
        lua_pop(L, 1);
        v = lua_newuserdatauv(L, sizeof *v, 0);
        *v = (LuaEvictObj){.magic = LUA_EVICT_CAND_MAGIC, .i = (uint32_t)i - 1, .ev = ev};
        lua_pushvalue(L, lua_upvalueindex(2));
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_rawseti(L, lua_upvalueindex(1), i);
    }
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

/* A locked, read-only metatable with the closure on top as __index. */
static void lua_evict_metatable(lua_State *L, const char *name, lua_CFunction len)
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

/* Builds the view and the candidates list, runs the script, keeps evict();
 * protected with the LuaEvict at 1.  Returns an error message or nothing. */
static int lua_evict_init_p(lua_State *L)
{
    LuaEvict *ev = lua_touserdata(L, 1);
    lua_settop(L, 1);
    /* the candidates list */
    lua_newtable(L); /* 2: cache of candidate views */
    lua_view_push_codes(L, lua_evict_cand_fields);
    lua_pushcclosure(L, lua_evict_cand_index, 1);
    lua_evict_metatable(L, "eviction candidate", NULL); /* 3 */
    LuaEvictObj *o = lua_newuserdatauv(L, sizeof *o, 0);
    *o = (LuaEvictObj){.magic = LUA_EVICT_LIST_MAGIC, .ev = ev};
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_pushcclosure(L, lua_evict_list_index, 2);
    lua_evict_metatable(L, "eviction candidates", lua_evict_list_len);
    lua_setmetatable(L, -2);
    ev->ref_list = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, 1);
    /* the view */
    o = lua_newuserdatauv(L, sizeof *o, 0);
    *o = (LuaEvictObj){.magic = LUA_EVICT_VIEW_MAGIC, .ev = ev};
    lua_view_push_codes(L, lua_evict_view_fields);
    lua_pushcclosure(L, lua_evict_view_index, 1);
    lua_evict_metatable(L, "eviction view", NULL);
    lua_setmetatable(L, -2);
    ev->ref_view = luaL_ref(L, LUA_REGISTRYINDEX);
    /* the script */
    if (luaL_loadfilex(L, ev->path, "t") != LUA_OK) return 1;
    if (ev->args) {
        if (lua_json_push(L, ev->args) != LUA_OK) return lua_error(L);
    } else {
        lua_newtable(L);
    }
    lua_call(L, 1, 1);
    if (lua_type(L, -1) == LUA_TTABLE) {
        lua_pushliteral(L, "evict");
        lua_rawget(L, -2);
    }
    if (lua_type(L, -1) != LUA_TFUNCTION) {
        lua_pushfstring(L, "the script must return a table {evict = function(v, c) ... end} (or that function), "
                           "got %s", luaL_typename(L, -1));
        return 1;
    }
    lua_Debug ar;
    lua_pushvalue(L, -1);
    if (lua_getinfo(L, ">S", &ar) && ar.linedefined > 0) ev->line = ar.linedefined;
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
    lua_State *L = ev->L;
    if (ev->failed) {
        if (e) *e = ev->err;
        return -1;
    }
    if (n == 0) return err_set(e, "lua eviction policy %s: no candidates to choose from", ev->path);
    ev->calls++;
    ev->c = c;
    ev->n = n;
    int out = -1;
    lua_pushcfunction(L, lua_evict_call_p);
    lua_pushlightuserdata(L, ev);
    if (lua_sandbox_call(ev->sb, 1, 1, NULL, &ev->err) < 0) {
        err_prefix(&ev->err, "lua eviction policy %s: evict(v, c) with %u candidates (call %llu)", ev->path, n,
                   (unsigned long long)ev->calls);
        ev->failed = 1;
    } else {
        int isint = 0;
        lua_Integer k = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0;
        if (!isint || k < 1 || k > (lua_Integer)n) {
            char got[96], line[24] = "";
            lua_evict_describe(L, -1, got, sizeof got);
            if (ev->line) snprintf(line, sizeof line, "%d:", ev->line);
            err_set(&ev->err, "lua eviction policy %s: evict(v, c) with %u candidates (call %llu): %s:%s evict "
                              "returned %s; expected a candidate index 1..%u", ev->path, n,
                    (unsigned long long)ev->calls, ev->path, line, got, n);
            ev->failed = 1;
        } else {
            out = (int)k - 1;
        }
        lua_pop(L, 1);
    }
    ev->c = NULL;
    ev->n = 0;
    if (out < 0 && e) *e = ev->err;
    return out;
}

static void lua_evict_destroy(void *ctx)
{
    LuaEvict *ev = ctx;
    if (!ev) return;
    lua_sandbox_free(ev->sb);
    free(ev);
}

void lua_evict_set_block_tokens(const EvictPolicy *p, uint32_t block_tokens)
{
    if (p && p->choose == lua_evict_choose && p->ctx) ((LuaEvict *)p->ctx)->block_tokens = block_tokens;
}

void lua_evict_defaults(LuaEvictConfig *c)
{
    *c = (LuaEvictConfig){.script = NULL, .args = NULL, .max_instructions = LUA_SANDBOX_POLICY_INSTRUCTIONS,
                          .max_memory_bytes = LUA_SANDBOX_POLICY_MEMORY, .seed = 1};
}

int lua_evict_create(const LuaEvictConfig *c, EvictPolicy *out, Err *e)
{
    if (!c->script || !*c->script) return err_set(e, "lua eviction policy: no script given");
    LuaEvict *ev = xcalloc(1, sizeof *ev);
    snprintf(ev->path, sizeof ev->path, "%s", c->script);
    ev->ref_evict = ev->ref_view = ev->ref_list = LUA_NOREF;
    LuaSandboxLimits lim = {.max_instructions = c->max_instructions, .max_memory_bytes = c->max_memory_bytes,
                            .seed = c->seed};
    ev->sb = lua_sandbox_new(&lim, e);
    if (!ev->sb) {
        err_prefix(e, "lua eviction policy %s", ev->path);
        free(ev);
        return -1;
    }
    lua_State *L = ev->L = lua_sandbox_state(ev->sb);
    lua_sandbox_set_name(ev->sb, ev->path);
    char what[1100];
    snprintf(what, sizeof what, "lua eviction policy %s", ev->path);
    ev->args = c->args;
    lua_pushcfunction(L, lua_evict_init_p);
    lua_pushlightuserdata(L, ev);
    int rc = lua_sandbox_call(ev->sb, 1, 1, what, e);
    ev->args = NULL;
    if (rc == 0 && lua_type(L, -1) == LUA_TSTRING) {
        err_set(e, "%s: %s", what, lua_tostring(L, -1));
        rc = -1;
    }
    lua_settop(L, 0);
    if (rc < 0) {
        lua_evict_destroy(ev);
        return -1;
    }
    *out = (EvictPolicy){.ctx = ev, .choose = lua_evict_choose, .destroy = lua_evict_destroy};
    return 0;
}

/* Checks an eviction object and fills c (c->script points into path). */
static int lua_evict_parse(const cJSON *cfg, const char *where, const char *base_dir, LuaEvictConfig *c, char *path,
                           size_t n, Err *e)
{
    static const char *const keys[] = {"kind", "script", "args", "max_instructions", "max_memory_mib", "seed", NULL};
    if (jsonio_expect_object(cfg, where, e) < 0 || jsonio_check_keys(cfg, where, keys, e) < 0) return -1;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(cfg, "kind");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "lua") != 0) {
        char p[512];
        jsonio_path(p, sizeof p, where, "kind");
        return err_set(e, "%s: an eviction object needs \"kind\": \"lua\" (or give \"eviction\" as \"lru\" or "
                          "\"value\")", p);
    }
    lua_evict_defaults(c);
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

int lua_evict_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e)
{
    LuaEvictConfig c;
    char path[1024];
    return lua_evict_parse(cfg, where, base_dir, &c, path, sizeof path, e);
}

int lua_evict_new(const cJSON *cfg, const char *where, const char *base_dir, EvictPolicy *out, Err *e)
{
    LuaEvictConfig c;
    char path[1024];
    if (lua_evict_parse(cfg, where, base_dir, &c, path, sizeof path, e) < 0) return -1;
    return lua_evict_create(&c, out, e);
}
