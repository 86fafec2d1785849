/*
 * lua_view.c -- read-only request views for Lua policies, and the pieces
 * the plug-ins build their other views from (see lua_view.h).
 *
 * Invariant: a view never caches a field; it holds a pointer to the
 * engine's record (stable for the engine's lifetime) and reads it on every
 * access, so a view kept across boundaries always shows the present state.
 * A router's views expire (r = NULL) when its callback returns, because the
 * router does not own the records.  A list view caches its item views (the
 * userdata, never what they read), so an item keeps one identity.
 */
#include "lua_view.h"
#include "lua_sandbox.h"

#include <lauxlib.h>
#include <string.h>

#define LUA_VIEW_REQ_MT "servesim.request"

static const char *const lua_view_fields[] = {
    "id", "index", "arrival", "arrival_ns", "prompt_tokens", "output_tokens", "max_output_tokens", "generated",
    "remaining_tokens", "kv_len", "prefill_target", "prefill_left", "decoding", "prefilling", "state",
    "priority", "deadline", "deadline_ns", "class", "tenant", "preemptions", "kv_blocks", "admitted",
    "first_token", "waited", "prefix_hit_tokens", "prefix_key", "adapter", NULL};

enum {
    F_ID = 1, F_INDEX, F_ARRIVAL, F_ARRIVAL_NS, F_PROMPT, F_OUTPUT, F_MAX_OUTPUT, F_GENERATED, F_REMAINING,
    F_KV_LEN, F_PREFILL_TARGET, F_PREFILL_LEFT, F_DECODING, F_PREFILLING, F_STATE, F_PRIORITY, F_DEADLINE,
    F_DEADLINE_NS, F_CLASS, F_TENANT, F_PREEMPTIONS, F_KV_BLOCKS, F_ADMITTED, F_FIRST_TOKEN, F_WAITED,
    F_PREFIX_HIT, F_PREFIX_KEY, F_ADAPTER
};

const char *lua_view_state_name(const Request *r)
{
    switch (r->state) {
    case REQ_PENDING: return "pending";
    case REQ_QUEUED: return "waiting";
    case REQ_RUNNING: return "running";
    case REQ_TRANSFER: return "transfer";
    case REQ_FINISHED: return "finished";
    case REQ_REJECTED: return "rejected";
    case REQ_CANCELLED: return "cancelled";
    default: return "?";
    }
}

void lua_view_push_codes(lua_State *L, const char *const *names)
{
    lua_newtable(L);
    for (int i = 0; names[i]; i++) {
        lua_pushinteger(L, i + 1);
        lua_setfield(L, -2, names[i]);
    }
}

int lua_view_readonly(lua_State *L)
{
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
    return luaL_error(L, "the %s view is read-only (cannot set '%s'); decisions go through the view's "
                         "methods or the returned decision table", luaL_typename(L, 1), k);
}

void *lua_view_obj(lua_State *L, int idx, size_t size, uint32_t magic)
{
    uint32_t *o = lua_touserdata(L, idx);
    if (!o || lua_rawlen(L, idx) != size || *o != magic) return NULL;
    return o;
}

void lua_view_metatable(lua_State *L, const char *name, lua_CFunction len)
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

void *lua_view_list_push(lua_State *L, const LuaViewList *d, size_t size)
{
    lua_newtable(L); /* the cache of item views */
    int cache = lua_gettop(L);
    lua_view_push_codes(L, d->item_fields);
    lua_pushcclosure(L, d->item_index, 1);
    lua_view_metatable(L, d->item_name, NULL); /* cache + 1 */
    void *o = lua_newuserdatauv(L, size, 0);
    lua_pushvalue(L, cache);
    lua_pushvalue(L, cache + 1);
    lua_pushcclosure(L, d->index, 2);
    lua_view_metatable(L, d->name, d->len);
    lua_setmetatable(L, -2);
    lua_replace(L, cache);
    lua_settop(L, cache);
    return o;
}

void *lua_view_item(lua_State *L, int cache_idx, int mt_idx, lua_Integer i, size_t size, int *made)
{
    cache_idx = lua_absindex(L, cache_idx);
    mt_idx = lua_absindex(L, mt_idx);
    *made = lua_rawgeti(L, cache_idx, i) == LUA_TNIL;
    if (!*made) return lua_touserdata(L, -1);
    lua_pop(L, 1);
    void *o = lua_newuserdatauv(L, size, 0);
    lua_pushvalue(L, mt_idx);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, cache_idx, i);
    return o;
}

LuaViewReq *lua_view_req_check(lua_State *L, int idx)
{
    return lua_view_obj(L, idx, sizeof(LuaViewReq), LUA_VIEW_REQ_MAGIC);
}

static const Request *lua_view_req_live(lua_State *L, int idx)
{
    LuaViewReq *q = lua_view_req_check(L, idx);
    if (!q) luaL_error(L, "expected a request view, got %s", luaL_typename(L, idx));
    if (!q->r) luaL_error(L, "request view used after the callback that received it returned");
    return q->r;
}

static void lua_view_push_s(lua_State *L, int64_t ns)
{
    lua_pushnumber(L, (double)ns / 1e9);
}

/* FNV-1a over 32-bit words. */
static uint64_t lua_view_fnv(uint64_t h, uint64_t w)
{
    for (int i = 0; i < 8; i++) {
        h ^= (w >> (8 * i)) & 0xffu;
        h *= 1099511628211ull;
    }
    return h;
}

/* r:prefix_key([tokens]) */
static int lua_view_prefix_key(lua_State *L)
{
    const Request *r = lua_view_req_live(L, 1);
    lua_Integer n = luaL_optinteger(L, 2, 256);
    luaL_argcheck(L, n >= 1, 2, "expected a token count >= 1");
    uint64_t h = lua_view_fnv(14695981039346656037ull, r->tenant);
    if (r->adapter) h = lua_view_fnv(h, 0xada97e7ull + r->adapter); /* adapters never share KV */
    if (request_has_ids(r)) {
        uint32_t m = (uint64_t)n < r->n_token_ids ? (uint32_t)n : r->n_token_ids;
        lua_sandbox_charge(L, m);
        for (uint32_t i = 0; i < m; i++) h = lua_view_fnv(h, request_token_id(r, i));
    } else if (r->hash_ids && r->n_hash_ids) {
        uint32_t bt = r->hash_block_tokens ? r->hash_block_tokens : 1;
        uint64_t blocks = ((uint64_t)n + bt - 1) / bt;
        uint32_t m = blocks < r->n_hash_ids ? (uint32_t)blocks : r->n_hash_ids;
        for (uint32_t i = 0; i < m; i++) h = lua_view_fnv(h, r->hash_ids[i]);
    } else {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)(h >> 1));
    return 1;
}

static int lua_view_req_index(lua_State *L)
{
    const Request *r = lua_view_req_live(L, 1);
    const LuaViewReq *q = lua_touserdata(L, 1);
    lua_pushvalue(L, 2);
    int code = lua_rawget(L, lua_upvalueindex(1)) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    switch (code) {
    case F_ID: lua_pushstring(L, r->id ? r->id : ""); break;
    case F_INDEX: lua_pushinteger(L, q->idx); break;
    case F_ARRIVAL: lua_view_push_s(L, r->t_arrive_ns); break;
    case F_ARRIVAL_NS: lua_pushinteger(L, r->t_arrive_ns); break;
    case F_PROMPT: lua_pushinteger(L, r->prompt_tokens); break;
    case F_OUTPUT: lua_pushinteger(L, r->output_tokens); break;
    case F_MAX_OUTPUT: lua_pushinteger(L, r->max_output_tokens); break;
    case F_GENERATED: lua_pushinteger(L, r->generated); break;
    case F_REMAINING: lua_pushinteger(L, (lua_Integer)r->output_tokens - r->generated); break;
    case F_KV_LEN: lua_pushinteger(L, r->kv_len); break;
    case F_PREFILL_TARGET: lua_pushinteger(L, r->prefill_target); break;
    case F_PREFILL_LEFT:
        lua_pushinteger(L, r->prefill_target > r->kv_len ? (lua_Integer)(r->prefill_target - r->kv_len) : 0);
        break;
    case F_DECODING: lua_pushboolean(L, request_decoding(r)); break;
    case F_PREFILLING: lua_pushboolean(L, r->kv_len < r->prefill_target); break;
    case F_STATE: lua_pushstring(L, lua_view_state_name(r)); break;
    case F_PRIORITY: lua_pushinteger(L, r->priority); break;
    case F_DEADLINE:
        if (r->deadline_ns >= 0) lua_view_push_s(L, r->deadline_ns);
        else lua_pushnil(L);
        break;
    case F_DEADLINE_NS:
        if (r->deadline_ns >= 0) lua_pushinteger(L, r->deadline_ns);
        else lua_pushnil(L);
        break;
    case F_CLASS: lua_pushinteger(L, r->cls); break;
    case F_TENANT: lua_pushinteger(L, r->tenant); break;
    case F_ADAPTER: lua_pushinteger(L, r->adapter); break;
    case F_PREEMPTIONS: lua_pushinteger(L, r->preemptions); break;
    case F_KV_BLOCKS: lua_pushinteger(L, r->kv_blocks); break;
    case F_ADMITTED:
        if (r->t_first_sched_ns >= 0) lua_view_push_s(L, r->t_first_sched_ns);
        else lua_pushnil(L);
        break;
    case F_FIRST_TOKEN:
        if (r->t_first_token_ns >= 0) lua_view_push_s(L, r->t_first_token_ns);
        else lua_pushnil(L);
        break;
    case F_WAITED: lua_view_push_s(L, q->now_ns ? *q->now_ns - r->t_arrive_ns : 0); break;
    case F_PREFIX_HIT: lua_pushinteger(L, r->prefix_hit_tokens); break;
    case F_PREFIX_KEY: lua_pushcfunction(L, lua_view_prefix_key); break;
    default: {
        const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
        return luaL_error(L, "a request has no field '%s' (fields: id, arrival, prompt_tokens, output_tokens, "
                             "generated, kv_len, prefill_left, decoding, state, priority, deadline, ...; see "
                             "lua/README.md)", k);
    }
    }
    return 1;
}

static int lua_view_req_tostring(lua_State *L)
{
    LuaViewReq *q = lua_view_req_check(L, 1);
    if (q && q->r) lua_pushfstring(L, "request %s", q->r->id ? q->r->id : "?");
    else lua_pushliteral(L, "request (expired)");
    return 1;
}

void lua_view_req_metatable(lua_State *L)
{
    if (luaL_newmetatable(L, LUA_VIEW_REQ_MT)) {
        lua_view_push_codes(L, lua_view_fields);
        lua_pushcclosure(L, lua_view_req_index, 1);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, lua_view_readonly);
        lua_setfield(L, -2, "__newindex");
        lua_pushcfunction(L, lua_view_req_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_pushliteral(L, "locked");
        lua_setfield(L, -2, "__metatable");
        lua_pushliteral(L, "request");
        lua_setfield(L, -2, "__name");
    }
}

LuaViewReq *lua_view_req_push(lua_State *L, int mt_idx, uint32_t idx, const Request *r, const int64_t *now_ns,
                              const void *owner)
{
    mt_idx = lua_absindex(L, mt_idx);
    LuaViewReq *q = lua_newuserdatauv(L, sizeof *q, 0);
    *q = (LuaViewReq){.magic = LUA_VIEW_REQ_MAGIC, .idx = idx, .r = r, .now_ns = now_ns, .owner = owner};
    lua_pushvalue(L, mt_idx);
    lua_setmetatable(L, -2);
    return q;
}
