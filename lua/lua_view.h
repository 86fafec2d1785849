/*
 * lua_view.h -- read-only request views handed to Lua policies.
 *
 * A request view is a small userdata (LuaViewReq) whose metatable answers
 * field reads from the live Request record through __index, refuses every
 * write through __newindex, and is locked (__metatable), so a script can
 * neither change engine state nor reach the metatable.  Nothing is copied
 * per boundary: a view reads the record when a field is asked for.
 *
 * Fields (times in seconds as floats, *_ns as integers, nil = "not yet"):
 *   id, index (0-based position in the workload), arrival, arrival_ns,
 *   prompt_tokens, output_tokens, max_output_tokens, generated,
 *   remaining_tokens, kv_len, prefill_target, prefill_left, decoding,
 *   prefilling, state ("pending", "waiting", "running", "transfer",
 *   "finished", "rejected"), priority, deadline, deadline_ns, class, tenant,
 *   preemptions, kv_blocks, admitted, first_token, waited, prefix_hit_tokens;
 * method r:prefix_key([tokens]) -> an integer naming the first `tokens`
 *   tokens (default 256) of the prompt within the tenant, or nil when the
 *   request carries no token ids or block hashes.
 *
 * Also the pieces every plug-in's own views are made of (a router's
 * replica loads, an eviction rule's candidates, a scheduler's view): the
 * check of a view userdata, the locked read-only metatable and the cached
 * items of a list view.
 */
#ifndef SERVESIM_LUA_VIEW_H
#define SERVESIM_LUA_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "request.h"

#define LUA_VIEW_REQ_MAGIC 0x52455156u /* "REQV" */

typedef struct LuaViewReq {
    uint32_t magic;
    uint32_t idx;           /* the request's index in the engine's array */
    const Request *r;       /* NULL once the view has expired */
    const int64_t *now_ns;  /* the owner's clock (for `waited`); NULL: arriving now */
    const void *owner;      /* the policy that made the view */
} LuaViewReq;

/* Pushes the metatable of request views (created once per state). */
void lua_view_req_metatable(lua_State *L);
/* Pushes a new request view; the metatable must be at mt_idx. */
LuaViewReq *lua_view_req_push(lua_State *L, int mt_idx, uint32_t idx, const Request *r, const int64_t *now_ns,
                              const void *owner);
/* The view at idx, or NULL when the value is not a request view. */
LuaViewReq *lua_view_req_check(lua_State *L, int idx);

/* A table mapping each name of a NULL-terminated list to its position
 * (1-based), for __index dispatch on interned strings. */
void lua_view_push_codes(lua_State *L, const char *const *names);

/* __newindex of every view: always raises "read-only". */
int lua_view_readonly(lua_State *L);

/* The userdata at idx when it is size bytes and starts with the uint32_t
 * magic, else NULL. */
void *lua_view_obj(lua_State *L, int idx, size_t size, uint32_t magic);
/* Pushes a locked, read-only metatable named name: __index the closure on
 * top (popped), __newindex lua_view_readonly, __len len (when not NULL),
 * __metatable "locked". */
void lua_view_metatable(lua_State *L, const char *name, lua_CFunction len);

/* A list view (a router's loads, an eviction rule's candidates): #list
 * through len, list[i] through index, a closure over a cache of item
 * views (upvalue 1) and the items' metatable (upvalue 2), which answers
 * their fields through item_index, a closure over the codes of
 * item_fields (lua_view_push_codes). */
typedef struct LuaViewList {
    const char *name;
    lua_CFunction index, len;
    const char *item_name;
    const char *const *item_fields;
    lua_CFunction item_index;
} LuaViewList;

/* Pushes a new list view: a userdata of size bytes (returned; its bytes
 * are the caller's to fill) with the metatable d describes. */
void *lua_view_list_push(lua_State *L, const LuaViewList *d, size_t size);
/* For the list's index: pushes item i, the userdata cached at i in the
 * table at cache_idx or, the first time, a new one of size bytes with the
 * metatable at mt_idx, cached there (*made = 1: its bytes are the
 * caller's to fill). */
void *lua_view_item(lua_State *L, int cache_idx, int mt_idx, lua_Integer i, size_t size, int *made);

/* The state names used by the `state` field. */
const char *lua_view_state_name(const Request *r);

#endif
