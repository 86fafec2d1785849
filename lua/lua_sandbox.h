/*
 * lua_sandbox.h -- one sandboxed Lua 5.4 state: the only place servesim
 * creates a lua_State.
 *
 * What a script gets (SPEC section 3, issue 8):
 *   - the base library without dofile and loadfile, and with `load`
 *     restricted to text chunks ("t" mode; a binary chunk is refused);
 *   - table, string (without string.dump), math (seeded, so runs repeat)
 *     and utf8; no io, os, debug, coroutine or package;
 *   - `require NAME` only for modules in the project's lua/lib/ (NAME made
 *     of letters, digits, '_' and '.') and for the modules the host
 *     preloads (the experiment API's "servesim");
 *   - every call through lua_sandbox_call: a count hook bounds the Lua
 *     instructions of that call, the allocator bounds the state's memory,
 *     and a message handler appends a traceback to any error.
 *
 * Invariants: the allocator's running total equals the bytes Lua holds;
 * past the instruction limit every further Lua instruction raises, so a
 * script cannot catch the error with pcall and keep looping; errors leave
 * through lua_sandbox_call as an Err that starts with the script's
 * "file:line:" where Lua knows it.
 *
 * This header includes lua.h: only the lua_* modules may include it (the
 * engine never does).
 */
#ifndef SERVESIM_LUA_SANDBOX_H
#define SERVESIM_LUA_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "common.h"

typedef struct LuaSandboxLimits {
    uint64_t max_instructions; /* Lua VM instructions per lua_sandbox_call (0 = unbounded) */
    size_t max_memory_bytes;   /* bytes the whole state may hold (0 = unbounded) */
    uint64_t seed;             /* math.random's seed */
} LuaSandboxLimits;

/* Policy defaults: a scheduler callback is short; an experiment script is
 * one long call that holds whole reports. */
#define LUA_SANDBOX_POLICY_INSTRUCTIONS 50000000ull
#define LUA_SANDBOX_POLICY_MEMORY (64u * 1024u * 1024u)
#define LUA_SANDBOX_SCRIPT_INSTRUCTIONS 2000000000ull
#define LUA_SANDBOX_SCRIPT_MEMORY ((size_t)2048u * 1024u * 1024u)

typedef struct LuaSandbox LuaSandbox;

/* NULL + e when even the libraries do not fit in max_memory_bytes. */
LuaSandbox *lua_sandbox_new(const LuaSandboxLimits *lim, Err *e);
void lua_sandbox_free(LuaSandbox *sb);
lua_State *lua_sandbox_state(LuaSandbox *sb);
/* The sandbox owning L (every state made here has it as allocator data). */
LuaSandbox *lua_sandbox_of(lua_State *L);
const LuaSandboxLimits *lua_sandbox_limits(const LuaSandbox *sb);
/* Bytes Lua holds now. */
size_t lua_sandbox_memory(const LuaSandbox *sb);

/* Charges work done inside a C function the script called (a list it
 * handed over, a search over the queue) to the current call's instruction
 * budget, in instruction-equivalents: the count hook sees only Lua
 * instructions, so a loop over v:estimate{...a million items...} would
 * otherwise run for hours inside one budget.  Raises the limit's error
 * when the budget is spent. */
void lua_sandbox_charge(lua_State *L, uint64_t work);
/* The same without raising, for a caller that must free what it holds
 * first: -1 when the budget is spent (every further Lua instruction then
 * raises the limit's error). */
int lua_sandbox_charge_try(lua_State *L, uint64_t work);
uint64_t lua_sandbox_max_instructions(lua_State *L);

/* Names the script in messages Lua cannot place (memory exhausted). */
void lua_sandbox_set_name(LuaSandbox *sb, const char *name);

/* Makes `require "name"` return what open(L) pushes (called once, lazily). */
void lua_sandbox_preload(LuaSandbox *sb, const char *name, lua_CFunction open);

/* Loads a script file as a text chunk named after its path and pushes the
 * chunk's function; -1 + e (nothing pushed) on a missing file or a syntax
 * error. */
int lua_sandbox_load_file(LuaSandbox *sb, const char *path, Err *e);

/* lua_pcall of the function below nargs arguments, with the instruction
 * budget re-armed and a traceback handler.  On error: -1, e = "<what>:
 * <message>\n<traceback>" (what may be NULL), nothing left on the stack. */
int lua_sandbox_call(LuaSandbox *sb, int nargs, int nresults, const char *what, Err *e);

/* The directory `require` reads (<data>/lua/lib). */
const char *lua_sandbox_lib_dir(char *buf, size_t n);
/* Resolves a script path: relative to base_dir (a scenario file's
 * directory) when it exists there, else as given (absolute, or relative to
 * the working directory), else relative to the data directory (so
 * "lua/policies/fcfs.lua" works from anywhere).  -1 + e naming the places
 * tried. */
int lua_sandbox_resolve(const char *path, const char *base_dir, char *out, size_t n, Err *e);

#endif
