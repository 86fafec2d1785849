/*
 * lua_sandbox.c -- the sandboxed Lua state (see lua_sandbox.h).
 *
 * Owns: the allocator with its memory cap, the instruction-count hook, the
 * reduced standard library, `require` from lua/lib/, the text-only `load`,
 * the traceback message handler and the conversion of a Lua error into an
 * Err.  Follows the embedding recipe of lua.c (everything under lua_pcall,
 * a message handler adding a traceback) and the sandbox of Redis'
 * script_lua.c (chosen libraries only, no binary chunks, a count hook that
 * stops runaway scripts).
 *
 * Invariants: `used` is the exact number of bytes Lua holds (the allocator
 * is the only way in or out); setup runs under lua_pcall, so a state that
 * cannot even open its libraries fails cleanly; while the message handler
 * runs, the memory cap is relaxed by a small reserve so that the traceback
 * of an out-of-memory script can still be built.
 */
#include "lua_sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lualib.h>

#include "paths.h"

/* Instructions between two hook calls: small enough that the limit is
 * precise to a few microseconds, large enough to cost nothing. */
#define LUA_SANDBOX_HOOK_STEP 10000
/* Extra bytes the message handler may use past the cap. */
#define LUA_SANDBOX_HANDLER_RESERVE (256u * 1024u)

#define LUA_SANDBOX_LOADED "servesim.loaded"
#define LUA_SANDBOX_PRELOAD "servesim.preload"

struct LuaSandbox {
    lua_State *L;
    LuaSandboxLimits lim;
    size_t used;          /* bytes Lua holds */
    int in_handler;       /* the message handler is running: the reserve is open */
    uint64_t instr_used;  /* instructions of the current call, in hook steps */
    int hook_step;        /* the count the hook is armed with */
    int over;             /* the current call passed its instruction limit */
    char name[512];       /* the script, for messages that Lua cannot place */
};

/* ------------------------------------------------------------- memory */

static void *lua_sandbox_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    LuaSandbox *sb = ud;
    size_t old = ptr ? osize : 0; /* without ptr, osize is a type tag */
    if (nsize == 0) {
        free(ptr);
        sb->used -= old;
        return NULL;
    }
    if (nsize > old && sb->lim.max_memory_bytes) {
        size_t cap = sb->lim.max_memory_bytes + (sb->in_handler ? LUA_SANDBOX_HANDLER_RESERVE : 0);
        if (nsize - old > cap || sb->used > cap - (nsize - old)) return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p) return NULL;
    sb->used = sb->used - old + nsize;
    return p;
}

LuaSandbox *lua_sandbox_of(lua_State *L)
{
    void *ud = NULL;
    (void)lua_getallocf(L, &ud);
    return ud;
}

lua_State *lua_sandbox_state(LuaSandbox *sb) { return sb->L; }
const LuaSandboxLimits *lua_sandbox_limits(const LuaSandbox *sb) { return &sb->lim; }
size_t lua_sandbox_memory(const LuaSandbox *sb) { return sb->used; }

/* -------------------------------------------------------- instructions */

static void lua_sandbox_hook(lua_State *L, lua_Debug *ar);

static void lua_sandbox_over(lua_State *L, LuaSandbox *sb)
{
    if (!sb->over) {
        /* From now on every instruction raises: a script that catches the
         * error with pcall cannot run on. */
        sb->over = 1;
        sb->hook_step = 1;
        lua_sethook(L, lua_sandbox_hook, LUA_MASKCOUNT, 1);
    }
    luaL_error(L, "instruction limit exceeded: more than %I Lua instructions in one call (an endless loop?)",
               (lua_Integer)sb->lim.max_instructions);
}

static void lua_sandbox_hook(lua_State *L, lua_Debug *ar)
{
    LuaSandbox *sb = lua_sandbox_of(L);
    (void)ar;
    sb->instr_used += (uint64_t)sb->hook_step;
    if (sb->instr_used < sb->lim.max_instructions) return;
    lua_sandbox_over(L, sb);
}

int lua_sandbox_charge_try(lua_State *L, uint64_t work)
{
    LuaSandbox *sb = lua_sandbox_of(L);
    if (!sb || !sb->lim.max_instructions) return 0;
    sb->instr_used = work > UINT64_MAX - sb->instr_used ? UINT64_MAX : sb->instr_used + work;
    if (sb->instr_used < sb->lim.max_instructions) return 0;
    if (!sb->over) {
        sb->over = 1;
        sb->hook_step = 1;
        lua_sethook(L, lua_sandbox_hook, LUA_MASKCOUNT, 1);
    }
    return -1;
}

void lua_sandbox_charge(lua_State *L, uint64_t work)
{
    if (lua_sandbox_charge_try(L, work) < 0) lua_sandbox_over(L, lua_sandbox_of(L));
}

uint64_t lua_sandbox_max_instructions(lua_State *L)
{
    LuaSandbox *sb = lua_sandbox_of(L);
    return sb ? sb->lim.max_instructions : 0;
}

/* ------------------------------------------------------------ library */

/* load(chunk [, chunkname [, mode [, env]]]) with the mode forced to text.
 * A string that starts like a binary chunk is refused outright, so that a
 * script that does not check load's result still stops with a clear
 * message. */
static int lua_sandbox_load(lua_State *L)
{
    int n = lua_gettop(L);
    if (lua_type(L, 1) == LUA_TSTRING && lua_tostring(L, 1)[0] == LUA_SIGNATURE[0])
        return luaL_error(L, "load: binary chunks are not allowed in the sandbox (text only)");
    if (n > 4) lua_settop(L, n = 4);
    while (n < 2) {
        lua_pushnil(L);
        n++;
    }
    lua_pushliteral(L, "t");
    if (n == 2) n = 3;
    else lua_replace(L, 3);
    /* env keeps its absence: an explicit nil would become the chunk's _ENV */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

const char *lua_sandbox_lib_dir(char *buf, size_t n)
{
    char root[4096];
    paths_data_root(root, sizeof root);
    if (!strcmp(root, ".")) snprintf(buf, n, "lua/lib");
    else snprintf(buf, n, "%s/lua/lib", root);
    return buf;
}

static int lua_sandbox_valid_module(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 64 || name[0] == '.' || name[len - 1] == '.') return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 (c == '.' && name[i + 1] != '.');
        if (!ok) return 0;
    }
    return 1;
}

/* Marks a module while its chunk runs (a light userdata to its address). */
static char lua_sandbox_loading_mark;

/* require(name): preloaded modules, then <lib>/<name>.lua (dots become
 * slashes).  Results are cached; a module that failed or requires itself
 * stays marked and is refused afterwards. */
static int lua_sandbox_require(lua_State *L)
{
    static const char *const stdlibs[] = {"os", "io", "debug", "package", "coroutine", "ffi", "jit", NULL};
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_SANDBOX_LOADED); /* 2 */
    lua_getfield(L, 2, name);                                /* 3 */
    if (lua_islightuserdata(L, 3))
        return luaL_error(L, "require \"%s\": the module failed while loading or requires itself", name);
    if (!lua_isnil(L, 3)) return 1;
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_SANDBOX_PRELOAD);
    lua_getfield(L, -1, name);
    if (lua_isfunction(L, -1)) {
        lua_call(L, 0, 1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_pushboolean(L, 1);
        }
        lua_pushvalue(L, -1);
        lua_setfield(L, 2, name);
        return 1;
    }
    lua_pop(L, 2);
    for (int i = 0; stdlibs[i]; i++)
        if (!strcmp(name, stdlibs[i]))
            return luaL_error(L, "require \"%s\": not available in the sandbox (no os, io, debug, coroutine or "
                                 "package library; only modules in lua/lib/)", name);
    if (!lua_sandbox_valid_module(name))
        return luaL_error(L, "require \"%s\": a module name is letters, digits, '_' and '.' (a module in lua/lib/)",
                          name);
    char dir[1024], path[1200];
    lua_sandbox_lib_dir(dir, sizeof dir);
    int k = snprintf(path, sizeof path, "%s/", dir);
    for (const char *p = name; *p && k + 6 < (int)sizeof path; p++) path[k++] = *p == '.' ? '/' : *p;
    snprintf(path + k, sizeof path - (size_t)k, ".lua");
    FILE *f = fopen(path, "r");
    if (!f) return luaL_error(L, "require \"%s\": no module %s (only modules in %s may be required)", name, path, dir);
    common_note_input(f, path);
    fclose(f);
    lua_pushlightuserdata(L, &lua_sandbox_loading_mark);
    lua_setfield(L, 2, name);
    if (luaL_loadfilex(L, path, "t") != LUA_OK) return lua_error(L);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, 2, name);
    return 1;
}

/* Opens the chosen libraries and trims them; runs under lua_pcall. */
/* Lua's pattern matcher backtracks inside one C call, where the count
 * hook never runs: k repetitions (*, +, -) over an n-byte subject may take
 * about n^k steps, times n start positions unless anchored.  The wrappers
 * of find, match, gmatch and gsub refuse a call whose bound passes
 * LUA_SANDBOX_PATTERN_WORK before it starts (plain find is linear and
 * passes). */
#define LUA_SANDBOX_PATTERN_WORK 1e10

static int lua_sandbox_pattern_guard(lua_State *L)
{
    const char *name = lua_tostring(L, lua_upvalueindex(2));
    int is_find = !strcmp(name, "find");
    if (lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TSTRING && !(is_find && lua_toboolean(L, 4))) {
        size_t n, m;
        (void)lua_tolstring(L, 1, &n);
        const char *p = lua_tolstring(L, 2, &m);
        int reps = 0;
        for (size_t i = 0; i < m; i++) {
            if (p[i] == '%') {
                i += (i + 1 < m && p[i + 1] == 'b') ? 3 : 1; /* %x, %bxy */
            } else if (p[i] == '[') {
                for (i++; i < m && p[i] != ']'; i++)
                    if (p[i] == '%') i++;
            } else if (i > 0 && (p[i] == '*' || p[i] == '+' || p[i] == '-')) {
                reps++;
            }
        }
        double work = 1;
        int k = reps + (m > 0 && p[0] == '^' && strcmp(name, "gsub") && strcmp(name, "gmatch") ? 0 : 1);
        for (int j = 0; j < k && work <= LUA_SANDBOX_PATTERN_WORK; j++) work *= (double)n + 1;
        if (reps > 1 && work > LUA_SANDBOX_PATTERN_WORK)
            return luaL_error(L, "string.%s: a pattern with %d repetitions over a %d-byte string could run for "
                                 "more than 1e10 steps inside one C call, where the sandbox's instruction limit "
                                 "cannot stop it; anchor the pattern, use fewer repetitions, or split the string",
                              name, reps, (int)(n > INT32_MAX ? INT32_MAX : n));
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* setmetatable without __gc: Lua runs finalizers with debug hooks off
 * (lgc.c, GCTM), in lua_close and in any allocation, so the instruction
 * limit could not stop one; the sandbox refuses them (__close, which runs
 * as ordinary code under the hook, stays allowed). */
static int lua_sandbox_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE && lua_getfield(L, 2, "__gc") != LUA_TNIL)
        return luaL_error(L, "setmetatable: __gc finalizers are not allowed in the sandbox (they would run "
                             "outside its instruction limit)");
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

static int lua_sandbox_setup(lua_State *L)
{
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},         {LUA_TABLIBNAME, luaopen_table},
                                    {LUA_STRLIBNAME, luaopen_string},  {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8},   {NULL, NULL}};
    LuaSandbox *sb = lua_sandbox_of(L);
    for (const luaL_Reg *l = libs; l->func; l++) {
        luaL_requiref(L, l->name, l->func, 1);
        lua_pop(L, 1);
    }
    lua_getglobal(L, "setmetatable");
    lua_pushcclosure(L, lua_sandbox_setmetatable, 1);
    lua_setglobal(L, "setmetatable");
    lua_pushnil(L);
    lua_setglobal(L, "dofile");
    lua_pushnil(L);
    lua_setglobal(L, "loadfile");
    lua_getglobal(L, "load");
    lua_pushcclosure(L, lua_sandbox_load, 1);
    lua_setglobal(L, "load");
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    static const char *const guarded[] = {"find", "match", "gmatch", "gsub"};
    for (int i = 0; i < 4; i++) {
        lua_getfield(L, -1, guarded[i]);
        lua_pushstring(L, guarded[i]);
        lua_pushcclosure(L, lua_sandbox_pattern_guard, 2);
        lua_setfield(L, -2, guarded[i]);
    }
    lua_pop(L, 1);
    /* math.random repeats from run to run */
    lua_getglobal(L, LUA_MATHLIBNAME);
    lua_getfield(L, -1, "randomseed");
    lua_pushinteger(L, (lua_Integer)sb->lim.seed);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LUA_SANDBOX_LOADED);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LUA_SANDBOX_PRELOAD);
    lua_pushcfunction(L, lua_sandbox_require);
    lua_setglobal(L, "require");
    return 0;
}

/* Only reached when an error escapes every lua_pcall: a bug here. */
static int lua_sandbox_panic(lua_State *L)
{
    fprintf(stderr, "servesim: unprotected Lua error: %s\n", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    abort();
}

LuaSandbox *lua_sandbox_new(const LuaSandboxLimits *lim, Err *e)
{
    LuaSandbox *sb = xcalloc(1, sizeof *sb);
    sb->lim = *lim;
    sb->L = lua_newstate(lua_sandbox_alloc, sb);
    if (!sb->L) {
        err_set(e, "lua: cannot create a state within %zu bytes", lim->max_memory_bytes);
        free(sb);
        return NULL;
    }
    lua_atpanic(sb->L, lua_sandbox_panic);
    lua_pushcfunction(sb->L, lua_sandbox_setup);
    if (lua_sandbox_call(sb, 0, 0, "lua: opening the libraries", e) < 0) {
        lua_sandbox_free(sb);
        return NULL;
    }
    return sb;
}

void lua_sandbox_free(LuaSandbox *sb)
{
    if (!sb) return;
    if (sb->L) lua_close(sb->L);
    free(sb);
}

void lua_sandbox_set_name(LuaSandbox *sb, const char *name)
{
    snprintf(sb->name, sizeof sb->name, "%s", name ? name : "");
}

void lua_sandbox_preload(LuaSandbox *sb, const char *name, lua_CFunction open)
{
    lua_State *L = sb->L;
    if (!lua_checkstack(L, 3)) return;
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_SANDBOX_PRELOAD);
    lua_pushcfunction(L, open);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* ---------------------------------------------------------------- calls */

/* 1 when msg starts with a location ("chunk:LINE: "). */
static int lua_sandbox_has_where(const char *msg)
{
    const char *c = strchr(msg, ':');
    if (!c || c == msg) return 0;
    for (const char *p = msg; p < c; p++)
        if (*p == ' ' || *p == '\n' || *p == '\t') return 0;
    const char *d = c + 1;
    if (*d < '0' || *d > '9') return 0;
    while (*d >= '0' && *d <= '9') d++;
    return *d == ':';
}

/* Adds where the error happened when Lua gave none (error() with a table
 * or nil, a C library function's error such as string.find's "pattern too
 * complex", the instruction limit): the innermost Lua frame's
 * "chunk:LINE: ", so every message names the script and the line.  Then a
 * traceback (lua.c's msghandler). */
static int lua_sandbox_msgh(lua_State *L)
{
    LuaSandbox *sb = lua_sandbox_of(L);
    sb->in_handler = 1;
    const char *msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
        else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    if (!lua_sandbox_has_where(msg)) {
        lua_Debug ar;
        for (int lvl = 0; lua_getstack(L, lvl, &ar); lvl++) {
            if (!lua_getinfo(L, "Sl", &ar)) break;
            if (ar.currentline > 0) {
                msg = lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
                break;
            }
        }
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int lua_sandbox_call(LuaSandbox *sb, int nargs, int nresults, const char *what, Err *e)
{
    lua_State *L = sb->L;
    int base = lua_gettop(L) - nargs; /* the function */
    if (!lua_checkstack(L, 4)) {
        lua_settop(L, base - 1);
        return err_set(e, "%s%slua stack overflow", what ? what : "", what ? ": " : "");
    }
    lua_pushcfunction(L, lua_sandbox_msgh);
    lua_insert(L, base);
    sb->instr_used = 0;
    sb->over = 0;
    if (sb->lim.max_instructions) {
        sb->hook_step = sb->lim.max_instructions < LUA_SANDBOX_HOOK_STEP ? (int)sb->lim.max_instructions
                                                                         : LUA_SANDBOX_HOOK_STEP;
        lua_sethook(L, lua_sandbox_hook, LUA_MASKCOUNT, sb->hook_step);
    }
    int st = lua_pcall(L, nargs, nresults, base);
    if (sb->lim.max_instructions) lua_sethook(L, NULL, 0, 0);
    sb->in_handler = 0;
    lua_remove(L, base);
    if (st == LUA_OK) return 0;
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    /* Lua gives no location for these two: name the script at least */
    const char *pre = what ? what : sb->name, *sep = *pre ? ": " : "";
    if (st == LUA_ERRMEM)
        err_set(e, "%s%smemory limit exceeded: the script holds more than its %.0f MiB (a runaway string or "
                   "table?)", pre, sep, (double)sb->lim.max_memory_bytes / MIB);
    else if (st == LUA_ERRERR)
        err_set(e, "%s%serror while reporting an error (%s)", pre, sep, msg ? msg : "?");
    else if (what)
        err_set(e, "%s: %s", what, msg ? msg : "(error object is not a string)");
    else
        err_set(e, "%s", msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
    return -1;
}

typedef struct LuaSandboxPath {
    const char *path;
} LuaSandboxPath;

/* Loads the file named by the LuaSandboxPath at 1; runs protected. */
static int lua_sandbox_load_p(lua_State *L)
{
    const char *path = ((const LuaSandboxPath *)lua_touserdata(L, 1))->path;
    if (luaL_loadfilex(L, path, "t") != LUA_OK) return lua_error(L);
    return 1;
}

int lua_sandbox_load_file(LuaSandbox *sb, const char *path, Err *e)
{
    lua_State *L = sb->L;
    if (!lua_checkstack(L, 3)) return err_set(e, "%s: lua stack overflow", path);
    lua_pushcfunction(L, lua_sandbox_load_p);
    LuaSandboxPath box = {path};
    lua_pushlightuserdata(L, &box);
    int st = lua_pcall(L, 1, 1, 0);
    if (st == LUA_OK) return 0;
    if (st == LUA_ERRMEM)
        err_set(e, "%s: memory limit exceeded while loading the script", path);
    else
        err_set(e, "%s", lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : path);
    lua_pop(L, 1);
    return -1;
}

static int lua_sandbox_exists(const char *p)
{
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    fclose(f);
    return 1;
}

int lua_sandbox_resolve(const char *path, const char *base_dir, char *out, size_t n, Err *e)
{
    if (!path || !*path) return err_set(e, "empty script path");
    char tried[1500];
    int k = 0;
    tried[0] = '\0';
    if (path[0] != '/' && base_dir && *base_dir) {
        size_t bl = strlen(base_dir);
        snprintf(out, n, "%s%s%s", base_dir, base_dir[bl - 1] == '/' ? "" : "/", path);
        if (lua_sandbox_exists(out)) return 0;
        k = snprintf(tried, sizeof tried, "%s, ", out);
    }
    snprintf(out, n, "%s", path);
    if (lua_sandbox_exists(out)) return 0;
    if (path[0] == '/') return err_set(e, "cannot open script %s", path);
    if (k >= 0 && (size_t)k < sizeof tried) k += snprintf(tried + k, sizeof tried - (size_t)k, "%s", path);
    char lib[1024];
    lua_sandbox_lib_dir(lib, sizeof lib);
    size_t ll = strlen(lib);
    if (ll > 8 && strcmp(lib + ll - 8, "/lua/lib") == 0) {
        snprintf(out, n, "%.*s/%s", (int)(ll - 8), lib, path);
        if (lua_sandbox_exists(out)) return 0;
        if (k >= 0 && (size_t)k < sizeof tried) snprintf(tried + k, sizeof tried - (size_t)k, ", %s", out);
    }
    return err_set(e, "cannot open script %s (tried %s)", path, tried);
}
