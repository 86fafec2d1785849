/*
 * lua_cmd.c -- the `servesim lua` command (see lua_cmd.h).
 *
 * Invariant: everything that touches the state after its creation runs
 * under lua_pcall (lua_sandbox_call), so no script, however broken, can
 * crash the program; the state is closed on every path.
 */
/* realpath is XSI */
#define _XOPEN_SOURCE 700

#include "lua_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_api.h"
#include "lua_sandbox.h"
#include "paths.h"

const char lua_cmd_usage[] =
    "usage: servesim lua [OPTIONS] SCRIPT.lua [ARGS...]\n"
    "\n"
    "Runs an experiment script with the servesim module (servesim.run, load, models,\n"
    "hardware, info, write_json, write_csv, clock; see lua/README.md).  ARGS reach\n"
    "the script as `...`, as arg[1..] and as servesim.args.\n"
    "\n"
    "The script runs sandboxed: base (no dofile/loadfile, text-only load), table,\n"
    "string, math, utf8; require only for lua/lib/ modules and \"servesim\".\n"
    "  --max-instructions N   Lua instructions the script may run (default 2e9)\n"
    "  --max-memory-mib M     memory the script's state may hold (default 2048)\n"
    "  --seed N               math.random's seed (default 1)\n"
    "  --allow-write PATH     let write_json/write_csv/plot write under (or to) PATH too;\n"
    "                         without it they write only under the working directory\n"
    "                         (repeatable, up to 16)\n"
    "  --allow-read PATH      let the script (and the scenarios and traces it runs) read\n"
    "                         under PATH too; without it only under the script's\n"
    "                         directory, the working directory and the bundled data\n"
    "                         (repeatable, up to 16)\n";

typedef struct LuaCmdCall {
    const char *script;
    int argc;
    char **argv;
    const LuaCmdLimits *lim;
} LuaCmdCall;

/* Sets up the globals and runs the script; protected, LuaCmdCall at 1.
 * Returns the message of a syntax error, or nothing. */
static int lua_cmd_p(lua_State *L)
{
    const LuaCmdCall *c = lua_touserdata(L, 1);
    lua_settop(L, 0);
    lua_pushstring(L, c->script);
    lua_setfield(L, LUA_REGISTRYINDEX, "servesim.script");
    int nw = c->lim ? c->lim->n_allow_write : 0;
    lua_createtable(L, nw, 0);
    for (int i = 0; i < nw; i++) {
        lua_pushstring(L, c->lim->allow_write[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, LUA_REGISTRYINDEX, "servesim.write_roots");
    lua_createtable(L, c->argc, 1); /* arg */
    lua_pushstring(L, c->script);
    lua_rawseti(L, -2, 0);
    lua_createtable(L, c->argc, 0); /* servesim.args */
    for (int i = 0; i < c->argc; i++) {
        lua_pushstring(L, c->argv[i]);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, i + 1);
        lua_rawseti(L, -3, i + 1);
    }
    lua_setfield(L, LUA_REGISTRYINDEX, "servesim.args");
    lua_setglobal(L, "arg");
    lua_sandbox_preload(lua_sandbox_of(L), "servesim", lua_api_open);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "servesim");
    lua_call(L, 1, 1);
    lua_setglobal(L, "servesim");
    if (luaL_loadfilex(L, c->script, "t") != LUA_OK) return 1; /* the syntax error, without a traceback */
    luaL_checkstack(L, c->argc + 2, "too many arguments");
    for (int i = 0; i < c->argc; i++) lua_pushstring(L, c->argv[i]);
    lua_call(L, c->argc, 0);
    return 0;
}

int lua_cmd_run(const char *script, int argc, char **argv, const LuaCmdLimits *lim, Err *e)
{
    LuaSandboxLimits sl = {.max_instructions = LUA_SANDBOX_SCRIPT_INSTRUCTIONS,
                           .max_memory_bytes = LUA_SANDBOX_SCRIPT_MEMORY, .seed = 1};
    if (lim) {
        if (lim->max_instructions) sl.max_instructions = lim->max_instructions;
        if (lim->max_memory_bytes) sl.max_memory_bytes = lim->max_memory_bytes;
        sl.seed = lim->seed;
    }
    FILE *f = fopen(script, "r");
    if (!f) return err_set(e, "cannot open script %s: %s", script, strerror(errno));
    common_note_input(f, script); /* no output over the script */
    fclose(f);
    LuaSandbox *sb = lua_sandbox_new(&sl, e);
    if (!sb) return -1;
    lua_State *L = lua_sandbox_state(sb);
    LuaCmdCall call = {script, argc, argv, lim};
    lua_pushcfunction(L, lua_cmd_p);
    lua_pushlightuserdata(L, &call);
    lua_sandbox_set_name(sb, script);
    int rc = lua_sandbox_call(sb, 1, 1, NULL, e);
    if (rc == 0 && lua_type(L, -1) == LUA_TSTRING) {
        err_set(e, "%s", lua_tostring(L, -1));
        rc = -1;
    }
    lua_sandbox_free(sb);
    return rc;
}

static int lua_cmd_number(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || *s == '-' || !*s) return -1;
    double v = strtod(s, &end); /* accepts 2e9 */
    if (errno || *end || !(v >= 1) || v > (double)max) return -1;
    *out = (uint64_t)v;
    return 0;
}

int lua_cmd_main(int argc, char **argv)
{
    static LuaCmdLimits lim; /* 64 KiB of paths: not on the stack */
    static char allow_read[LUA_CMD_MAX_ALLOW][4096];
    int n_allow_read = 0;
    memset(&lim, 0, sizeof lim);
    lim.seed = 1;
    int i = 0;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(lua_cmd_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--max-instructions") && i + 1 < argc) {
            if (lua_cmd_number(argv[++i], UINT64_MAX / 2, &v) < 0) {
                fprintf(stderr, "servesim: --max-instructions needs a positive number, got %s\n\n%s", argv[i],
                        lua_cmd_usage);
                return 2;
            }
            lim.max_instructions = v;
        } else if (!strcmp(a, "--max-memory-mib") && i + 1 < argc) {
            if (lua_cmd_number(argv[++i], 1u << 20, &v) < 0) {
                fprintf(stderr, "servesim: --max-memory-mib needs a number in [1, 1048576], got %s\n\n%s",
                        argv[i], lua_cmd_usage);
                return 2;
            }
            lim.max_memory_bytes = (size_t)v * 1024u * 1024u;
        } else if (!strcmp(a, "--allow-write") && i + 1 < argc) {
            const char *p = argv[++i];
            if (lim.n_allow_write == LUA_CMD_MAX_ALLOW) {
                fprintf(stderr, "servesim: --allow-write: at most %d paths\n\n%s", LUA_CMD_MAX_ALLOW, lua_cmd_usage);
                return 2;
            }
            Err pe = {0};
            /* an existing path (a directory: "out/", ".") whole, else a file to be */
            if (!realpath(p, lim.allow_write[lim.n_allow_write]) &&
                paths_absolute(p, lim.allow_write[lim.n_allow_write], sizeof lim.allow_write[0], &pe) < 0) {
                fprintf(stderr, "servesim: --allow-write: %s\n", pe.msg);
                return 2;
            }
            lim.n_allow_write++;
        } else if (!strcmp(a, "--allow-read") && i + 1 < argc) {
            const char *p = argv[++i];
            if (n_allow_read == LUA_CMD_MAX_ALLOW) {
                fprintf(stderr, "servesim: --allow-read: at most %d paths\n\n%s", LUA_CMD_MAX_ALLOW, lua_cmd_usage);
                return 2;
            }
            if (!realpath(p, allow_read[n_allow_read])) {
                fprintf(stderr, "servesim: --allow-read %s: %s\n", p, strerror(errno));
                return 2;
            }
            n_allow_read++;
        } else if (!strcmp(a, "--seed") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(argv[++i], &end, 10);
            if (errno || *end || argv[i][0] == '-') {
                fprintf(stderr, "servesim: --seed needs a non-negative integer, got %s\n\n%s", argv[i],
                        lua_cmd_usage);
                return 2;
            }
            lim.seed = s;
        } else {
            fprintf(stderr, "servesim: unknown or incomplete option: %s\n\n%s", a, lua_cmd_usage);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "servesim: a script is required\n\n%s", lua_cmd_usage);
        return 2;
    }
    /* what the script may read: its directory, the working directory, the
     * bundled data (models/ and the tree above it) and --allow-read */
    static char roots_buf[LUA_CMD_MAX_ALLOW + 3][4096];
    const char *roots[LUA_CMD_MAX_ALLOW + 3];
    int nr = 0;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", argv[i]);
    char *slash = strrchr(tmp, '/');
    if (slash) *slash = '\0';
    if (realpath(slash ? (tmp[0] ? tmp : "/") : ".", roots_buf[nr])) roots[nr] = roots_buf[nr], nr++;
    if (realpath(".", roots_buf[nr])) roots[nr] = roots_buf[nr], nr++;
    snprintf(tmp, sizeof tmp, "%s/..", paths_models_dir());
    if (realpath(tmp, roots_buf[nr])) roots[nr] = roots_buf[nr], nr++;
    for (int k = 0; k < n_allow_read; k++) roots[nr++] = allow_read[k];
    common_read_roots(roots, nr);
    Err e = {0};
    int rc = lua_cmd_run(argv[i], argc - i - 1, argv + i + 1, &lim, &e);
    common_read_roots(NULL, 0);
    if (rc < 0) {
        fflush(stdout);
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 1;
    }
    return 0;
}
