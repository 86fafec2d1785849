/*
 * lua_json.c -- JSON <-> Lua conversion (see lua_json.h).
 *
 * Invariant of lua_json_from: it calls only Lua functions that neither
 * allocate nor run metamethods (lua_next, lua_rawlen, lua_type, lua_to*
 * on values of the matching type), so no Lua error can jump over the cJSON
 * tree it is building.  Number keys are never converted in place (that
 * would break lua_next).
 */
#include "lua_json.h"
#include "lua_sandbox.h"

#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LUA_JSON_MAX_DEPTH 64

/* ------------------------------------------------------------ JSON -> Lua */

static void lua_json_push_value(lua_State *L, const cJSON *v, int depth)
{
    if (depth > LUA_JSON_MAX_DEPTH) luaL_error(L, "JSON nested deeper than %d levels", LUA_JSON_MAX_DEPTH);
    luaL_checkstack(L, 4, "JSON nesting");
    if (cJSON_IsObject(v)) {
        lua_createtable(L, 0, cJSON_GetArraySize(v));
        const cJSON *it;
        cJSON_ArrayForEach(it, v) {
            if (cJSON_IsNull(it) || !it->string) continue;
            lua_json_push_value(L, it, depth + 1);
            lua_setfield(L, -2, it->string);
        }
    } else if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v);
        lua_createtable(L, n, 0);
        lua_Integer i = 1;
        const cJSON *it;
        cJSON_ArrayForEach(it, v) {
            lua_json_push_value(L, it, depth + 1);
            lua_rawseti(L, -2, i++);
        }
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0) lua_pushinteger(L, (lua_Integer)d);
        else lua_pushnumber(L, d);
    } else if (cJSON_IsString(v)) {
        lua_pushstring(L, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        lua_pushboolean(L, cJSON_IsTrue(v));
    } else {
        lua_pushnil(L);
    }
}

typedef struct LuaJsonBox {
    const cJSON *v;
} LuaJsonBox;

static int lua_json_push_p(lua_State *L)
{
    const cJSON *v = ((const LuaJsonBox *)lua_touserdata(L, 1))->v;
    lua_json_push_value(L, v, 0);
    return 1;
}

int lua_json_push(lua_State *L, const cJSON *v)
{
    if (!lua_checkstack(L, 3)) {
        lua_pushliteral(L, "lua stack overflow");
        return LUA_ERRRUN;
    }
    lua_pushcfunction(L, lua_json_push_p);
    LuaJsonBox box = {v};
    lua_pushlightuserdata(L, &box);
    return lua_pcall(L, 1, 1, 0);
}

/* ------------------------------------------------------------ Lua -> JSON */

typedef struct LuaJsonPair {
    const char *key;
    cJSON *val;
} LuaJsonPair;

static int lua_json_pair_cmp(const void *a, const void *b)
{
    return strcmp(((const LuaJsonPair *)a)->key, ((const LuaJsonPair *)b)->key);
}

static cJSON *lua_json_value(lua_State *L, int idx, char *path, size_t plen, int depth, Err *e);

static void lua_json_sub(char *path, size_t cap, size_t plen, const char *key, lua_Integer i)
{
    if (plen >= cap) return;
    if (key) snprintf(path + plen, cap - plen, ".%s", key);
    else snprintf(path + plen, cap - plen, "[%lld]", (long long)i);
}

#define LUA_JSON_PATH_MAX 512

static cJSON *lua_json_table(lua_State *L, int idx, char *path, size_t plen, int depth, Err *e)
{
    if (depth > LUA_JSON_MAX_DEPTH) {
        err_set(e, "%s: nested deeper than %d levels (a table that contains itself?)", path, LUA_JSON_MAX_DEPTH);
        return NULL;
    }
    if (!lua_checkstack(L, 4)) {
        err_set(e, "%s: lua stack overflow", path);
        return NULL;
    }
    /* Classify: keys 1..n (an array) or all strings (an object). */
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
    int strings = 0, ints = 0, other = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        count++;
        if (lua_type(L, -2) == LUA_TSTRING) strings++;
        else if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= n) ints++;
        else other++;
        lua_pop(L, 1);
    }
    if (count > 0 && ints == count && count == n) {
        cJSON *a = cJSON_CreateArray();
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, idx, i);
            lua_json_sub(path, LUA_JSON_PATH_MAX, plen, NULL, i);
            cJSON *v = lua_json_value(L, lua_gettop(L), path, strlen(path), depth + 1, e);
            path[plen] = '\0';
            lua_pop(L, 1);
            if (!v) {
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, v);
        }
        return a;
    }
    if (strings != count) {
        err_set(e, "%s: a table mixes keys: JSON needs all keys strings (an object) or exactly 1..n (an array)",
                path);
        return NULL;
    }
    (void)other;
    LuaJsonPair *pairs = count ? xmalloc((size_t)count * sizeof *pairs) : NULL;
    lua_Integer k = 0;
    int ok = 1;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *key = lua_tostring(L, -2);
        lua_json_sub(path, LUA_JSON_PATH_MAX, plen, key, 0);
        cJSON *v = ok ? lua_json_value(L, lua_gettop(L), path, strlen(path), depth + 1, e) : NULL;
        path[plen] = '\0';
        lua_pop(L, 1);
        if (!ok) continue;
        if (!v) {
            ok = 0;
            continue;
        }
        pairs[k].key = key;
        pairs[k].val = v;
        k++;
    }
    if (!ok) {
        for (lua_Integer i = 0; i < k; i++) cJSON_Delete(pairs[i].val);
        free(pairs);
        return NULL;
    }
    if (k > 1) qsort(pairs, (size_t)k, sizeof *pairs, lua_json_pair_cmp);
    cJSON *o = cJSON_CreateObject();
    for (lua_Integer i = 0; i < k; i++) cJSON_AddItemToObject(o, pairs[i].key, pairs[i].val);
    free(pairs);
    return o;
}

static cJSON *lua_json_value(lua_State *L, int idx, char *path, size_t plen, int depth, Err *e)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return cJSON_CreateNull();
    case LUA_TBOOLEAN: return cJSON_CreateBool(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) return cJSON_CreateNumber((double)lua_tointeger(L, idx));
        if (!isfinite(lua_tonumber(L, idx))) return cJSON_CreateNull();
        return cJSON_CreateNumber(lua_tonumber(L, idx));
    case LUA_TSTRING: return cJSON_CreateString(lua_tostring(L, idx));
    case LUA_TTABLE: return lua_json_table(L, idx, path, plen, depth, e);
    default:
        err_set(e, "%s: a %s cannot be written as JSON", path, lua_typename(L, lua_type(L, idx)));
        return NULL;
    }
}

cJSON *lua_json_from(lua_State *L, int idx, const char *what, Err *e)
{
    char path[LUA_JSON_PATH_MAX + 64];
    snprintf(path, LUA_JSON_PATH_MAX, "%s", what ? what : "value");
    idx = lua_absindex(L, idx);
    cJSON *root = lua_json_value(L, idx, path, strlen(path), 0, e);
    /* the walk is C work the count hook does not see: charged by node */
    if (root && lua_sandbox_charge_try(L, lua_json_count(root)) < 0) {
        cJSON_Delete(root);
        err_set(e, "instruction limit exceeded: more than %llu Lua instructions in one call, C work on "
                   "tables included (an endless loop?)", (unsigned long long)lua_sandbox_max_instructions(L));
        return NULL;
    }
    return root;
}

uint64_t lua_json_count(const cJSON *v)
{
    uint64_t n = 0;
    for (; v; v = v->next) n += 1 + lua_json_count(v->child);
    return n;
}
