/*
 * lua_cmd.h -- `servesim lua [OPTIONS] SCRIPT.lua [ARGS...]`: runs an
 * experiment script in the sandbox (lua_sandbox.h) with the `servesim`
 * module (lua_api.h) as a global and through require "servesim".
 *
 * The script's arguments are its `...`, the global `arg` (arg[0] = the
 * script, as in the lua program) and servesim.args.  An error ends the
 * command with exit status 1 and a message naming the script, the line and
 * a traceback.
 */
#ifndef SERVESIM_LUA_CMD_H
#define SERVESIM_LUA_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define LUA_CMD_MAX_ALLOW 16

typedef struct LuaCmdLimits {
    uint64_t max_instructions; /* for the whole script (0 = the default) */
    size_t max_memory_bytes;   /* 0 = the default */
    uint64_t seed;             /* math.random */
    /* where servesim.write_json/write_csv/plot may write besides the
     * working directory (--allow-write; resolved paths, lua_api_resolve_path) */
    int n_allow_write;
    char allow_write[LUA_CMD_MAX_ALLOW][4096];
} LuaCmdLimits;

/* Runs the script with argv[0..argc) as its arguments; -1 + e on any
 * error (the script's included). */
int lua_cmd_run(const char *script, int argc, char **argv, const LuaCmdLimits *lim, Err *e);

/* The command line: argv holds what follows "lua".  Returns the exit
 * status (0 ok, 1 script error, 2 usage). */
int lua_cmd_main(int argc, char **argv);

extern const char lua_cmd_usage[];

#endif
