/*
 * lua_api.c -- the `servesim` module of experiment scripts (see
 * lua_api.h).
 *
 * Every function that holds C resources (a run, a cJSON tree, a file)
 * releases them before it raises, and converts to Lua only through
 * lua_json_push (protected), so a Lua error -- a memory limit hit while
 * building a large report, say -- never leaks them.  A run goes through
 * the same calls as `servesim run`: the streamed engine (streamrun.h),
 * report_json and scenario_to_json.
 */
#include "lua_api.h"
#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "jsonio.h"
#include "lua_json.h"
#include "lua_sandbox.h"
#include "metrics.h"
#include "paths.h"
#include "plan.h"
#include "plot.h"
#include "report.h"
#include "scenario.h"
#include "streamrun.h"
#include "sweep.h"

#define LUA_API_VERSION "servesim 0.8 (Lua " LUA_VERSION_MAJOR "." LUA_VERSION_MINOR ")"

static double lua_api_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Raises "servesim.FN: message" (e is copied first: it may live on the
 * caller's stack, which lua_error unwinds). */
static int lua_api_fail(lua_State *L, const char *fn, const Err *e)
{
    lua_pushfstring(L, "servesim.%s: %s", fn, e->msg);
    return lua_error(L);
}

/* Pushes the JSON tree and frees it; raises on a conversion error. */
static int lua_api_push_json(lua_State *L, cJSON *root)
{
    uint64_t nodes = lua_json_count(root);
    int st = lua_json_push(L, root);
    cJSON_Delete(root);
    if (st != LUA_OK) return lua_error(L);
    lua_sandbox_charge(L, nodes); /* C work the count hook does not see */
    return 1;
}

/* -------------------------------------------------------------- run */

/* The scenario at 1: its path (*path), or a table's JSON text (*text, to
 * cJSON_free) and its name for messages (name: after the script, so
 * relative paths -- traces, policies -- resolve against the script's
 * directory first).  -1 + e. */
static int lua_api_scenario_source(lua_State *L, const char **path, char **text, char *name, size_t n_name, Err *e)
{
    *path = NULL;
    *text = NULL;
    if (lua_type(L, 1) == LUA_TSTRING) {
        *path = lua_tostring(L, 1);
        return 0;
    }
    if (lua_type(L, 1) != LUA_TTABLE)
        return err_set(e, "expected a scenario file path or a scenario table, got %s", luaL_typename(L, 1));
    cJSON *root = lua_json_from(L, 1, "scenario", e);
    if (!root) return -1;
    *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!*text) return err_set(e, "scenario: cannot print the table as JSON");
    const char *script = NULL;
    if (lua_getfield(L, LUA_REGISTRYINDEX, "servesim.script") == LUA_TSTRING) script = lua_tostring(L, -1);
    snprintf(name, n_name, "%s (scenario table)", script ? script : "servesim.run");
    lua_pop(L, 1);
    return 0;
}

/* servesim.run's report: the run on the streamed engine (the path
 * `servesim run` takes; its summary alone with run_summary, else with
 * every request, kept in temporary files as they leave and read back into
 * the tree); NULL + e.  *t_run: the run's wall time (the workload is made
 * as it runs). */
static cJSON *lua_api_run_report(lua_State *L, int has_seed, uint64_t seed, int with_requests, double *t_run, Err *e)
{
    const char *path;
    char *text, name[1200];
    if (lua_api_scenario_source(L, &path, &text, name, sizeof name, e) < 0) return NULL;
    cJSON *root = NULL;
    ErrBand band;
    double t0 = lua_api_wall();
    if (!with_requests) {
        RunSummary o;
        int rc = run_summary(&o, path, text, name, has_seed, seed, 0, e);
        *t_run = lua_api_wall() - t0;
        if (rc == 0 && scenario_error_band(o.s, &band, e) == 0) {
            root = report_json(o.mc, &o.rd, o.sum, 0);
            report_band_json(root, &band, o.sum);
            cJSON *sc = cJSON_CreateObject();
            scenario_to_json(o.s, sc);
            cJSON_AddItemToObject(root, "scenario", sc);
        }
        run_summary_free(&o);
        cJSON_free(text);
        return root;
    }
    StreamRun *r = xmalloc(sizeof *r);
    StreamOutputs so = {.json_requests = 1};
    int rc = streamrun(r, path, text, name, has_seed, seed, 0, &so, e);
    *t_run = lua_api_wall() - t0;
    cJSON_free(text);
    if (rc == 0 && scenario_error_band(&r->s, &band, e) == 0) {
        /* `servesim run --json`'s report */
        cJSON *tree = streamrun_report(r, &band, 1);
        root = streamrun_json(r, tree, e);
        cJSON_Delete(tree);
    }
    streamrun_free(r);
    free(r);
    return root;
}

static int lua_api_opt_bool(lua_State *L, int idx, const char *key, int dflt)
{
    if (lua_type(L, idx) != LUA_TTABLE) return dflt;
    int t = lua_getfield(L, idx, key);
    int v = t == LUA_TNIL ? dflt : lua_toboolean(L, -1);
    if (t != LUA_TNIL && t != LUA_TBOOLEAN) luaL_error(L, "servesim.run: opts.%s must be a boolean", key);
    lua_pop(L, 1);
    return v;
}

/* servesim.run's second result: {load_s, run_s, report_s} */
static void lua_api_push_timing(lua_State *L, double load_s, double run_s, double report_s)
{
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, load_s);
    lua_setfield(L, -2, "load_s");
    lua_pushnumber(L, run_s);
    lua_setfield(L, -2, "run_s");
    lua_pushnumber(L, report_s);
    lua_setfield(L, -2, "report_s");
}

/* servesim.run(scenario [, opts]) -> report, timing */
static int lua_api_run(lua_State *L)
{
    luaL_checkany(L, 1);
    if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
    int with_requests = lua_api_opt_bool(L, 2, "requests", 1);
    int has_seed = 0;
    uint64_t seed = 0;
    if (lua_type(L, 2) == LUA_TTABLE) {
        if (lua_getfield(L, 2, "seed") != LUA_TNIL) {
            int ok = 0;
            lua_Integer v = lua_tointegerx(L, -1, &ok);
            if (!ok || v < 0) luaL_error(L, "servesim.run: opts.seed must be a non-negative integer");
            has_seed = 1;
            seed = (uint64_t)v;
        }
        lua_pop(L, 1);
    }
    Err e = {0};
    double t_run = 0, t0 = lua_api_wall();
    cJSON *root = lua_api_run_report(L, has_seed, seed, with_requests, &t_run, &e);
    if (!root) return lua_api_fail(L, "run", &e);
    double t2 = lua_api_wall();
    lua_api_push_json(L, root);
    lua_api_push_timing(L, t2 - t0 - t_run, t_run, lua_api_wall() - t2);
    return 2;
}

/* ---------------------------------------------------------- reading */

/* servesim.load(path) -> table */
static int lua_api_load(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    Err e = {0};
    cJSON *root = jsonio_parse_file(path, &e);
    if (!root) return lua_api_fail(L, "load", &e);
    return lua_api_push_json(L, root);
}

/* Pushes the bundled names of models/<sub> as a sorted list. */
static int lua_api_names(lua_State *L, const char *sub)
{
    char buf[8192];
    paths_list_names(buf, sizeof buf, sub);
    lua_newtable(L);
    if (buf[0] == '(') return 1; /* "(none ...)" */
    lua_Integer i = 1;
    for (char *p = buf; *p;) {
        char *end = strstr(p, ", ");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        lua_pushlstring(L, p, len);
        lua_rawseti(L, -2, i++);
        p += len + (end ? 2 : 0);
    }
    return 1;
}

static int lua_api_models(lua_State *L) { return lua_api_names(L, ""); }
static int lua_api_hardware(lua_State *L) { return lua_api_names(L, "hardware/"); }

/* servesim.info{model = NAME, hardware = NAME, tp = N, kv_dtype = T} */
static int lua_api_info(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "model");
    lua_getfield(L, 1, "hardware");
    lua_getfield(L, 1, "kv_dtype");
    lua_getfield(L, 1, "tp");
    const char *model = lua_tostring(L, 2), *hw = lua_tostring(L, 3);
    const char *kvd = lua_isnil(L, 4) ? "bf16" : lua_tostring(L, 4);
    lua_Integer tp = lua_isnil(L, 5) ? 1 : lua_tointeger(L, 5);
    if (!model) return luaL_error(L, "servesim.info: give {model = NAME} (see servesim.models())");
    if (!kvd) return luaL_error(L, "servesim.info: kv_dtype must be a string");
    if (tp < 1 || tp > 64) return luaL_error(L, "servesim.info: tp must be an integer in [1, 64]");
    int kt = dtype_parse(kvd);
    if (kt < 0) return luaL_error(L, "servesim.info: unknown kv_dtype \"%s\" (bf16, fp16, fp8, q8_0, q4_0)", kvd);
    Err e = {0};
    ModelDesc *m = xmalloc(sizeof *m);
    HwDesc *h = xmalloc(sizeof *h);
    if (model_load(model, m, &e) < 0 || (hw && hw_load(hw, h, &e) < 0)) {
        free(m);
        free(h);
        return lua_api_fail(L, "info", &e);
    }
    double kvb = model_kv_bytes_per_token(m, (Dtype)kt);
    cJSON *o = cJSON_CreateObject();
    model_to_json(m, o);
    cJSON_AddStringToObject(o, "kv_dtype", dtype_name((Dtype)kt));
    cJSON_DeleteItemFromObjectCaseSensitive(o, "kv_bytes_per_token");
    cJSON_AddNumberToObject(o, "kv_bytes_per_token", kvb);
    if (hw) {
        double cap = hw_kv_capacity_bytes(h, m, (int)tp);
        cJSON *ho = cJSON_AddObjectToObject(o, "hardware");
        hw_to_json(h, ho);
        cJSON_AddNumberToObject(o, "tp", (double)tp);
        cJSON_AddNumberToObject(o, "kv_capacity_bytes", cap > 0 ? cap : 0);
        cJSON_AddNumberToObject(o, "kv_capacity_tokens", cap > 0 ? (double)(uint64_t)(cap / kvb) : 0);
        cJSON_AddBoolToObject(o, "fits", cap > 0);
    }
    free(m);
    free(h);
    return lua_api_push_json(L, o);
}

/* ---------------------------------------------------------- writing */

/* Where an experiment script may write.  Scripts are shared like
 * policies, so servesim.write_json/write_csv/plot write only under the
 * working directory, or under (or onto) a path the user named with
 * `servesim lua --allow-write PATH` (issue 15).  The registry's
 * "servesim.write_roots" holds those paths, resolved by lua_cmd; the
 * target is resolved with paths_absolute (its directory through realpath,
 * so neither ".." nor a symlinked directory leads out) and must be a root
 * or lie under one. */
static void lua_api_check_write(lua_State *L, const char *fn, const char *path)
{
    char real[4096], cwd[4096];
    Err e = {0};
    if (paths_absolute(path, real, sizeof real, &e) < 0) luaL_error(L, "servesim.%s: %s", fn, e.msg);
    if (getcwd(cwd, sizeof cwd) && paths_under(real, cwd)) return;
    if (lua_getfield(L, LUA_REGISTRYINDEX, "servesim.write_roots") == LUA_TTABLE) {
        lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, -1, i);
            int ok = lua_type(L, -1) == LUA_TSTRING && paths_under(real, lua_tostring(L, -1));
            lua_pop(L, 1);
            if (ok) {
                lua_pop(L, 1);
                return;
            }
        }
    }
    lua_pop(L, 1);
    luaL_error(L, "servesim.%s: %s is outside the working directory; an experiment script writes only there "
                  "unless you allow more with `servesim lua --allow-write PATH`", fn, path);
}

/* servesim.write_json(path, t) */
static int lua_api_write_json(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    luaL_checkany(L, 2);
    lua_api_check_write(L, "write_json", path);
    Err e = {0};
    cJSON *root = lua_json_from(L, 2, "value", &e);
    if (!root) return lua_api_fail(L, "write_json", &e);
    int rc = jsonio_write_file(root, path, 1, &e);
    cJSON_Delete(root);
    if (rc < 0) return lua_api_fail(L, "write_json", &e);
    lua_pushboolean(L, 1);
    return 1;
}

/* The CSV text is built in C memory owned by a userdata with a __gc, not
 * in a luaL_Buffer: the cells are pushed onto the stack while the text
 * grows, which a luaL_Buffer forbids (issue 15: past LUAL_BUFFERSIZE its
 * box moved under the pushed values and write_csv crashed). */
typedef struct LuaApiText {
    char *p;
    size_t len, cap;
} LuaApiText;

static int lua_api_text_gc(lua_State *L)
{
    LuaApiText *t = lua_touserdata(L, 1);
    free(t->p);
    t->p = NULL;
    return 0;
}

static LuaApiText *lua_api_text_new(lua_State *L)
{
    LuaApiText *t = lua_newuserdatauv(L, sizeof *t, 0);
    memset(t, 0, sizeof *t);
    if (luaL_newmetatable(L, "servesim.text")) {
        lua_pushcfunction(L, lua_api_text_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return t;
}

static void lua_api_text_add(LuaApiText *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (t->len + n + 1 > cap) cap *= 2;
        t->p = xrealloc(t->p, cap);
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

#define LUA_API_ADDS(t, s) lua_api_text_add((t), (s), strlen(s))
#define LUA_API_ADDC(t, c) do { char _c = (c); lua_api_text_add((t), &_c, 1); } while (0)

/* Appends one CSV cell (the value at idx) to b; raises on a table or a
 * function.  Whole numbers print as integers, others with 12 significant
 * digits (as in the JSON report). */
static void lua_api_csv_cell(lua_State *L, LuaApiText *b, int idx, lua_Integer row, const char *col)
{
    char num[64];
    switch (lua_type(L, idx)) {
    case LUA_TNIL: break;
    case LUA_TBOOLEAN: LUA_API_ADDS(b, lua_toboolean(L, idx) ? "true" : "false"); break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) snprintf(num, sizeof num, "%lld", (long long)lua_tointeger(L, idx));
        else snprintf(num, sizeof num, "%.12g", (double)lua_tonumber(L, idx));
        LUA_API_ADDS(b, num);
        break;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (strpbrk(s, ",\"\n\r") == NULL) {
            lua_api_text_add(b, s, len);
            break;
        }
        LUA_API_ADDC(b, '"');
        for (size_t i = 0; i < len; i++) {
            if (s[i] == '"') LUA_API_ADDC(b, '"');
            LUA_API_ADDC(b, s[i]);
        }
        LUA_API_ADDC(b, '"');
        break;
    }
    default:
        luaL_error(L, "servesim.write_csv: row %I, column %s: a %s cannot be a CSV cell", row, col,
                   luaL_typename(L, idx));
    }
}

static int lua_api_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* servesim.write_csv(path, rows [, columns]): rows of records (string
 * keys; the header is `columns`, or every key seen, sorted) or of arrays
 * (written as they are). */
static int lua_api_write_csv(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_api_check_write(L, "write_csv", path);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    lua_Integer nrows = (lua_Integer)lua_rawlen(L, 2);
    for (lua_Integer i = 1; i <= nrows; i++) {
        if (lua_rawgeti(L, 2, i) != LUA_TTABLE)
            luaL_error(L, "servesim.write_csv: row %I is a %s, expected a table", i, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    int records = 1;
    if (nrows > 0) {
        lua_rawgeti(L, 2, 1);
        records = lua_rawlen(L, -1) == 0;
        lua_pop(L, 1);
    }
    /* the columns as an array of strings in a userdata (freed by the GC
     * whatever happens) */
    lua_Integer ncols = 0;
    const char **cols = NULL;
    if (records) {
        if (lua_istable(L, 3)) {
            ncols = (lua_Integer)lua_rawlen(L, 3);
            cols = lua_newuserdatauv(L, (size_t)(ncols ? ncols : 1) * sizeof *cols, 0);
            for (lua_Integer c = 1; c <= ncols; c++) {
                if (lua_rawgeti(L, 3, c) != LUA_TSTRING) luaL_error(L, "servesim.write_csv: columns[%I] is not a string", c);
                cols[c - 1] = lua_tostring(L, -1); /* kept alive by the columns table */
                lua_pop(L, 1);
            }
        } else {
            lua_newtable(L); /* the set of keys */
            int set = lua_gettop(L);
            for (lua_Integer i = 1; i <= nrows; i++) {
                lua_rawgeti(L, 2, i);
                lua_pushnil(L);
                while (lua_next(L, -2)) {
                    lua_pop(L, 1);
                    if (lua_type(L, -1) != LUA_TSTRING)
                        luaL_error(L, "servesim.write_csv: row %I mixes array and record entries", i);
                    lua_pushvalue(L, -1);
                    lua_pushboolean(L, 1);
                    lua_rawset(L, set);
                }
                lua_pop(L, 1);
            }
            lua_pushnil(L);
            while (lua_next(L, set)) {
                ncols++;
                lua_pop(L, 1);
            }
            cols = lua_newuserdatauv(L, (size_t)(ncols ? ncols : 1) * sizeof *cols, 0);
            lua_Integer c = 0;
            lua_pushnil(L);
            while (lua_next(L, set)) {
                cols[c++] = lua_tostring(L, -2); /* kept alive by the set */
                lua_pop(L, 1);
            }
            qsort(cols, (size_t)ncols, sizeof *cols, lua_api_strcmp);
        }
    }
    lua_sandbox_charge(L, (uint64_t)nrows * (uint64_t)(ncols ? ncols : 1)); /* C work the hook does not see */
    LuaApiText *b = lua_api_text_new(L);
    if (records) {
        for (lua_Integer c = 0; c < ncols; c++) {
            if (c) LUA_API_ADDC(b, ',');
            lua_pushstring(L, cols[c]);
            lua_api_csv_cell(L, b, lua_gettop(L), 0, cols[c]);
            lua_pop(L, 1);
        }
        LUA_API_ADDC(b, '\n');
    }
    for (lua_Integer i = 1; i <= nrows; i++) {
        lua_rawgeti(L, 2, i);
        int row = lua_gettop(L);
        if (records) {
            for (lua_Integer c = 0; c < ncols; c++) {
                if (c) LUA_API_ADDC(b, ',');
                lua_pushstring(L, cols[c]);
                lua_rawget(L, row);
                lua_api_csv_cell(L, b, lua_gettop(L), i, cols[c]);
                lua_pop(L, 1);
            }
        } else {
            lua_Integer n = (lua_Integer)lua_rawlen(L, row);
            for (lua_Integer c = 1; c <= n; c++) {
                if (c > 1) LUA_API_ADDC(b, ',');
                lua_rawgeti(L, row, c);
                lua_api_csv_cell(L, b, lua_gettop(L), i, "?");
                lua_pop(L, 1);
            }
        }
        LUA_API_ADDC(b, '\n');
        lua_remove(L, row);
    }
    Err e = {0};
    if (outfile_write(path, b->p ? b->p : "", &e) < 0) return luaL_error(L, "servesim.write_csv: %s", e.msg);
    lua_pushboolean(L, 1);
    return 1;
}


/* ------------------------------------------------------- sweep and plan */

/* The file or table at 1 as text, with the name messages and relative
 * paths use; NULL + e. */
static char *lua_api_input_text(lua_State *L, const char *what, char *name, size_t n, Err *e)
{
    if (lua_type(L, 1) == LUA_TSTRING) {
        snprintf(name, n, "%s", lua_tostring(L, 1));
        return read_file(name, NULL, e);
    }
    if (lua_type(L, 1) != LUA_TTABLE) {
        err_set(e, "expected a %s file path or a %s table, got %s", what, what, luaL_typename(L, 1));
        return NULL;
    }
    cJSON *root = lua_json_from(L, 1, what, e);
    if (!root) return NULL;
    char *cj = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!cj) {
        err_set(e, "%s: cannot print the table as JSON", what);
        return NULL;
    }
    char *text = xstrdup(cj);
    cJSON_free(cj);
    const char *script = NULL;
    if (lua_getfield(L, LUA_REGISTRYINDEX, "servesim.script") == LUA_TSTRING) script = lua_tostring(L, -1);
    snprintf(name, n, "%s (%s table)", script ? script : "servesim", what);
    lua_pop(L, 1);
    return text;
}

/* opts.key as an integer in [lo, hi] (dflt when absent). */
static long lua_api_opt_int(lua_State *L, const char *fn, const char *key, long lo, long hi, long dflt)
{
    if (lua_type(L, 2) != LUA_TTABLE) return dflt;
    long v = dflt;
    if (lua_getfield(L, 2, key) != LUA_TNIL) {
        int ok = 0;
        lua_Integer x = lua_tointegerx(L, -1, &ok);
        if (!ok || x < lo || x > hi) luaL_error(L, "servesim.%s: opts.%s must be an integer in [%d, %d]", fn, key, (int)lo, (int)hi);
        v = (long)x;
    }
    lua_pop(L, 1);
    return v;
}

/* servesim.sweep(scenario, {rates = {...} | auto = true, seeds = N, target = A, jobs = N}) -> the table
 * `servesim sweep --json` writes */
static int lua_api_sweep(lua_State *L)
{
    luaL_checkany(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    double rates[SWEEP_RATES_MAX];
    uint32_t n_rates = 0;
    if (lua_getfield(L, 2, "rates") == LUA_TTABLE) {
        lua_Integer n = luaL_len(L, -1);
        if (n < 1 || n > SWEEP_RATES_MAX) luaL_error(L, "servesim.sweep: opts.rates must hold 1 to %d rates", SWEEP_RATES_MAX);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -1, i);
            int ok = 0;
            double r = lua_tonumberx(L, -1, &ok);
            if (!ok || !(r > 0)) luaL_error(L, "servesim.sweep: opts.rates[%d] must be a rate > 0 (requests/s)", (int)i);
            rates[n_rates++] = r;
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) {
        luaL_error(L, "servesim.sweep: opts.rates must be a list of rates");
    }
    lua_pop(L, 1);
    int auto_rates = lua_api_opt_bool(L, 2, "auto", 0);
    double target = 0;
    if (lua_getfield(L, 2, "target") != LUA_TNIL) {
        int ok = 0;
        target = lua_tonumberx(L, -1, &ok);
        if (!ok || !(target > 0 && target <= 1)) luaL_error(L, "servesim.sweep: opts.target must be in (0, 1]");
    }
    lua_pop(L, 1);
    if (auto_rates == (n_rates > 0)) luaL_error(L, "servesim.sweep: give either opts.rates or opts.auto = true");
    SweepOpts o = {.rates = rates, .n_rates = n_rates, .auto_rates = auto_rates,
                   .seeds = (uint32_t)lua_api_opt_int(L, "sweep", "seeds", 1, SWEEP_SEEDS_MAX, 1), .target = target,
                   .par = {.workers = (int)lua_api_opt_int(L, "sweep", "jobs", 1, 4096, 0)}};
    Err e = {0};
    char name[1200];
    char *text = lua_api_input_text(L, "scenario", name, sizeof name, &e);
    if (!text) return lua_api_fail(L, "sweep", &e);
    cJSON *out = sweep_run(text, name, &o, &e);
    free(text);
    if (!out) return lua_api_fail(L, "sweep", &e);
    return lua_api_push_json(L, out);
}

/* servesim.plan(plan [, {jobs = N}]) -> the table `servesim plan --json` writes */
static int lua_api_plan(lua_State *L)
{
    luaL_checkany(L, 1);
    if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
    PlanOpts o = {.par = {.workers = (int)lua_api_opt_int(L, "plan", "jobs", 1, 4096, 0)}};
    Err e = {0};
    char name[1200];
    char *text = lua_api_input_text(L, "plan", name, sizeof name, &e);
    if (!text) return lua_api_fail(L, "plan", &e);
    cJSON *out = plan_run(text, name, &o, &e);
    free(text);
    if (!out) return lua_api_fail(L, "plan", &e);
    return lua_api_push_json(L, out);
}

/* Saves the table at idx (a report as servesim.run, sweep or plan returns
 * it) as DIR/input_N.json for the plot to read; path receives its name. */
static int lua_api_plot_table(lua_State *L, int idx, const char *dir, int n, char *path, size_t len, Err *e)
{
    cJSON *root = lua_json_from(L, idx, "plot input", e);
    if (!root) return -1;
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt) return err_set(e, "plot input %d: cannot render JSON", n);
    snprintf(path, len, "%s/input_%d.json", dir, n);
    int rc = plot_write_atomic(path, txt, strlen(txt), e);
    cJSON_free(txt);
    return rc;
}

/* servesim.plot(kind, inputs, out [, {title = T, data = DIR}]) -> out.
 * Draws through plot_render, as `servesim plot KIND INPUT... -o OUT` does.
 * inputs: a path, a table holding a report (servesim.run/sweep/plan's
 * result), or a list of either; a table is saved as JSON in the data
 * directory (DIR, default OUT without its extension + ".data") first. */
static int lua_api_plot(lua_State *L)
{
    const char *kind = luaL_checkstring(L, 1);
    luaL_argexpected(L, lua_type(L, 2) == LUA_TSTRING || lua_istable(L, 2), 2, "a path, a report table or a list");
    const char *out = luaL_checkstring(L, 3);
    if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
    PlotJob job = {.kind = kind, .out = out};
    if (lua_istable(L, 4)) {
        if (lua_getfield(L, 4, "title") != LUA_TNIL) job.title = luaL_checkstring(L, -1);
        if (lua_getfield(L, 4, "data") != LUA_TNIL) job.data_dir = luaL_checkstring(L, -1);
        lua_pop(L, 2); /* the strings stay alive in the options table */
    }
    char dir[1024], paths[PLOT_MAX_INPUTS][1100];
    const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    if (job.data_dir) snprintf(dir, sizeof dir, "%s", job.data_dir);
    else snprintf(dir, sizeof dir, "%.*s.data", (int)(dot && (!slash || dot > slash) ? dot - out : (long)strlen(out)),
                  out);
    job.data_dir = dir;
    lua_api_check_write(L, "plot", out);
    lua_api_check_write(L, "plot", dir);
    int list = lua_istable(L, 2) && lua_rawlen(L, 2) > 0;
    int n = lua_type(L, 2) == LUA_TSTRING || !list ? 1 : (int)lua_rawlen(L, 2);
    if (n > PLOT_MAX_INPUTS) return luaL_error(L, "servesim.plot: %d inputs; at most %d", n, PLOT_MAX_INPUTS);
    Err e = {0};
    for (int i = 1; i <= n; i++) {
        if (list) lua_rawgeti(L, 2, i);
        else lua_pushvalue(L, 2);
        if (lua_type(L, -1) == LUA_TSTRING) {
            snprintf(paths[i - 1], sizeof paths[0], "%s", lua_tostring(L, -1));
        } else if (lua_istable(L, -1)) {
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return luaL_error(L, "servesim.plot: %s: cannot create the data directory: %s", dir, strerror(errno));
            if (lua_api_plot_table(L, lua_gettop(L), dir, i, paths[i - 1], sizeof paths[0], &e) < 0)
                return lua_api_fail(L, "plot", &e);
        } else {
            return luaL_error(L, "servesim.plot: inputs[%d]: expected a path or a report table, got a %s", i,
                              luaL_typename(L, -1));
        }
        lua_pop(L, 1);
        job.inputs[job.n_inputs++] = paths[i - 1];
    }
    if (plot_render(&job, &e) < 0) return lua_api_fail(L, "plot", &e);
    lua_pushstring(L, out);
    return 1;
}

static int lua_api_clock(lua_State *L)
{
    lua_pushnumber(L, lua_api_wall());
    return 1;
}

int lua_api_open(lua_State *L)
{
    static const luaL_Reg fns[] = {{"run", lua_api_run},           {"load", lua_api_load},
                                   {"models", lua_api_models},     {"hardware", lua_api_hardware},
                                   {"info", lua_api_info},         {"write_json", lua_api_write_json},
                                   {"write_csv", lua_api_write_csv}, {"plot", lua_api_plot},
                                   {"clock", lua_api_clock},       {"sweep", lua_api_sweep},
                                   {"plan", lua_api_plan},         {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_pushliteral(L, LUA_API_VERSION);
    lua_setfield(L, -2, "version");
    if (lua_getfield(L, LUA_REGISTRYINDEX, "servesim.args") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    lua_setfield(L, -2, "args");
    lua_getfield(L, LUA_REGISTRYINDEX, "servesim.script");
    lua_setfield(L, -2, "script");
    return 1;
}
