/*
 * lua_json.h -- JSON (cJSON) <-> Lua values, for reports, scenario tables,
 * policy arguments and servesim.write_json / servesim.load.
 *
 *   JSON object  <-> table with string keys
 *   JSON array   <-> sequence 1..n (an empty table becomes {}, an object)
 *   number       <-> integer when whole and below 2^53, else float
 *   string, true/false <-> string, boolean;  null -> nil (absent)
 */
#ifndef SERVESIM_LUA_JSON_H
#define SERVESIM_LUA_JSON_H

#include <cjson/cJSON.h>
#include <lua.h>

#include "common.h"

/* Pushes v under lua_pcall, so that a memory error cannot leak the
 * caller's C resources: LUA_OK with the value pushed, or the error status
 * with the error object pushed (the caller frees what it holds, then
 * lua_error). */
int lua_json_push(lua_State *L, const cJSON *v);

/* Converts the value at idx without raising a Lua error (it uses no Lua
 * call that allocates or runs metamethods); object keys come out sorted so
 * that the same table always prints the same JSON.  NULL + e naming the key
 * path ("what.a.b[3]") of a value JSON cannot hold (a function, a mixed or
 * cyclic table). */
cJSON *lua_json_from(lua_State *L, int idx, const char *what, Err *e);
/* Nodes of a tree (v and its siblings and their children): the work the
 * conversions charge to the sandbox's instruction budget. */
uint64_t lua_json_count(const cJSON *v);

#endif
