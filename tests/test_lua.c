/*
 * test_lua.c -- Lua policies and experiment scripts (issue 8).
 *
 *  - the Lua FCFS policy (lua/policies/fcfs.lua) emits every token at the
 *    same nanosecond as the C `continuous` scheduler, on the chapter's
 *    four-request example and on 10,000 Poisson requests (with on-demand
 *    KV, so preemptions are reproduced too); no clock is read here: the
 *    Lua policy's cost is measured by `make bench`
 *    (lua/experiments/bench_overhead.lua);
 *  - every sandbox escape and every bad decision ends in a clean error
 *    whose message names the script, the line and the problem;
 *  - the view is read-only; the servesim module runs scenarios and writes
 *    files; the examples in lua/ run;
 *  - KV eviction rules: a Lua rule answering 1 runs token for token like
 *    "eviction": "lru" and lua/evict/value.lua like "eviction": "value" on
 *    a prefix cache that evicts; every bad answer stops cluster_run with
 *    the script's name, line and value.
 * Fixture scripts live in tests/lua/.  The engines here are assembled by
 * lt_engine() from plain configurations (kv.h, cost.h, sched.h), so a Lua
 * and a C scheduler run on exactly the same engine.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "cost.h"
#include "engine.h"
#include "lua_cmd.h"
#include "paths.h"
#include "lua_evict.h"
#include "lua_router.h"
#include "hw.h"
#include "kv.h"
#include "lua_sched.h"
#include "model.h"
#include "scenario.h"
#include "sched.h"
#include "testhelp.h"
#include "testrun.h"

#define LT_DIR SERVESIM_DATA_DIR "/tests/lua/"
#define LT_FCFS SERVESIM_DATA_DIR "/lua/policies/fcfs.lua"

/* ------------------------------------------------------------- helpers */

typedef struct LtEnv {
    KvConfig kv;
    int roofline;             /* 0: the linear model below */
    LinearCostCfg linear;
    ModelDesc model;          /* roofline */
    HwDesc hw;
} LtEnv;

typedef struct LtRun {
    int rc;
    Err err;
    int64_t *times;           /* every token's emission time */
    uint64_t n_times;
    EngineStats st;
} LtRun;

/* Runs reqs under sched (ownership passes to the engine) with env's KV pool
 * and cost model. */
static void lt_run(LtRun *out, Request *reqs, uint32_t n, Scheduler sched, const LtEnv *env)
{
    memset(out, 0, sizeof *out);
    EngineConfig cfg = {0};
    cfg.sched = sched;
    if ((out->rc = kv_pool_new(&env->kv, &cfg.kv, &out->err)) < 0) {
        sched.destroy(sched.ctx);
        return;
    }
    if (env->roofline) {
        RooflineCfg rc = {.model = env->model, .hw = env->hw, .tp = 1, .compute_dtype = DTYPE_BF16,
                          .kv_bytes_per_token = env->kv.bytes_per_token, .act_bytes = 2};
        out->rc = cost_roofline_new(&rc, &cfg.cost, &out->err);
    } else {
        out->rc = cost_linear_new(&env->linear, &cfg.cost, &out->err);
    }
    if (out->rc < 0) {
        sched.destroy(sched.ctx);
        cfg.kv.destroy(cfg.kv.ctx);
        return;
    }
    cfg.block_tokens = env->kv.block_tokens;
    cfg.kv_bytes_per_token = env->kv.bytes_per_token;
    cfg.keep_token_times = 1;
    Engine *eng = engine_new(reqs, n, &cfg, &out->err);
    if (!eng) {
        out->rc = -1;
        return;
    }
    out->rc = engine_run(eng, &out->err);
    out->st = *engine_stats(eng);
    const int64_t *tt = engine_token_times(eng);
    for (uint32_t i = 0; i < n; i++) out->n_times += reqs[i].output_tokens;
    out->times = calloc(out->n_times ? out->n_times : 1, sizeof *out->times);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < reqs[i].generated; k++) out->times[reqs[i].token_off + k] = tt[reqs[i].token_off + k];
    engine_free(eng);
}

static Scheduler lt_c_sched(SchedKind kind, uint32_t max_running, uint32_t budget)
{
    Scheduler s = {0};
    Err e;
    SchedConfig c = {.kind = kind, .max_running = max_running, .token_budget = budget};
    if (sched_new(&c, &s, &e) < 0) fprintf(stderr, "  %s\n", e.msg);
    return s;
}

/* A Lua scheduler from a script; rc < 0 and e filled on failure. */
static int lt_lua_sched(const char *script, uint32_t max_running, uint32_t budget, uint64_t max_instr,
                        const char *args_json, Scheduler *out, Err *e)
{
    LuaSchedConfig c;
    lua_sched_defaults(&c);
    c.script = script;
    c.max_running = max_running;
    c.token_budget = budget;
    if (max_instr) c.max_instructions = max_instr;
    cJSON *args = args_json ? cJSON_Parse(args_json) : NULL;
    c.args = args;
    int rc = lua_sched_create(&c, out, e);
    cJSON_Delete(args);
    return rc;
}

/* Every token time equal, to the nanosecond. */
static int lt_same_times(const LtRun *a, const LtRun *b)
{
    if (a->n_times != b->n_times) return 0;
    return memcmp(a->times, b->times, a->n_times * sizeof *a->times) == 0;
}

static void lt_free(LtRun *r)
{
    free(r->times);
    r->times = NULL;
}

/* The chapter's engine: 12 GiB of Qwen3-8B KV in 16-token blocks reserved
 * at their final length, T = 26.22 ms + 30.4 us/token + 3 ns/pair. */
static LtEnv lt_chapter_env(void)
{
    LtEnv env = {.kv = {.capacity_bytes = 12.0 * GIB, .block_tokens = 16, .bytes_per_token = 147456,
                        .reserve = KV_RESERVE_FINAL},
                 .linear = {26.22e-3, 30.4e-6, 3e-9}};
    return env;
}

/* ---------------------------------------------------- FCFS == continuous */

static void test_lua_fcfs_four_requests(void)
{
    Scenario s;
    Err e;
    const char *path = SERVESIM_DATA_DIR "/workloads/chapters/ch8_four_requests_continuous.json";
    if (scenario_load_file(path, 0, 0, &s, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    CHECK_INT(s.wl.n, 4);
    /* the reference: the scenario's own engine, C continuous */
    Engine *eng = scenario_engine(&s, NULL, &e);
    CHECK(eng != NULL);
    if (!eng) {
        scenario_free(&s);
        return;
    }
    CHECK_INT(engine_run(eng, &e), 0);
    int64_t ref[16];
    uint64_t nref = 0;
    for (uint32_t i = 0; i < s.wl.n; i++)
        for (uint32_t k = 0; k < s.wl.reqs[i].generated && nref < 16; k++)
            ref[nref++] = engine_token_times(eng)[s.wl.reqs[i].token_off + k];
    uint64_t ref_iters = engine_stats(eng)->iterations;
    engine_free(eng);
    CHECK_INT(nref, 16);

    LtEnv env = lt_chapter_env();
    LtRun c, l;
    lt_run(&c, s.wl.reqs, s.wl.n, lt_c_sched(SCHED_CONTINUOUS, 2, 0), &env);
    Scheduler ls;
    CHECK_INT(lt_lua_sched(LT_FCFS, 2, 0, 0, NULL, &ls, &e), 0);
    lt_run(&l, s.wl.reqs, s.wl.n, ls, &env);
    CHECK_INT(c.rc, 0);
    CHECK_INT(l.rc, 0);
    if (l.rc) fprintf(stderr, "  %s\n", l.err.msg);
    CHECK_INT(l.n_times, 16);
    CHECK(lt_same_times(&c, &l));
    for (uint64_t k = 0; k < 16 && k < l.n_times; k++) CHECK_INT(l.times[k], ref[k]);
    CHECK_INT(l.st.iterations, ref_iters);
    CHECK_INT(l.st.iterations, 8);
    /* the chapter's figures: r0's third token waits for r2's 8192-token
     * prefill (565.589484 ms), r3's first token at 686.711300 ms */
    CHECK_NEAR((double)l.times[2] / 1e6, 565.589484, 2e-6);
    CHECK_NEAR((double)l.times[12] / 1e6, 686.711300, 2e-6);
    lt_free(&c);
    lt_free(&l);
    scenario_free(&s);
}

/* 10,000 Poisson requests at 8 req/s, Qwen3-8B on an H100 (roofline), 8
 * GiB of on-demand KV: loaded (mean TTFT about 1.3 s) and the pool runs
 * out, so about a thousand preemptions happen too. */
static const char lt_poisson_json[] =
    "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"},"
    " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 8, \"count\": 10000,"
    "   \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 1024, \"sigma\": 0.8, \"min\": 16, \"max\": 8192},"
    "   \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 256, \"sigma\": 0.7, \"min\": 1, \"max\": 1024}},"
    " \"seed\": 7}";

static void test_lua_fcfs_poisson_10k(void)
{
    Scenario s;
    Err e;
    if (scenario_load_text(lt_poisson_json, "poisson10k.json", 0, 0, &s, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    CHECK_INT(s.wl.n, 10000);
    LtEnv env = {.kv = {.capacity_bytes = 8.0 * GIB, .block_tokens = 16, .reserve = KV_RESERVE_ON_DEMAND},
                 .roofline = 1};
    CHECK_INT(model_load("qwen3-8b", &env.model, &e), 0);
    CHECK_INT(hw_load("h100-sxm", &env.hw, &e), 0);
    env.kv.bytes_per_token = model_kv_bytes_per_token(&env.model, DTYPE_BF16);
    LtRun c, l, p;
    lt_run(&c, s.wl.reqs, s.wl.n, lt_c_sched(SCHED_CONTINUOUS, 256, 0), &env);
    Scheduler ls;
    CHECK_INT(lt_lua_sched(LT_FCFS, 256, 0, 0, NULL, &ls, &e), 0);
    lt_run(&l, s.wl.reqs, s.wl.n, ls, &env);
    CHECK_INT(lt_lua_sched(LT_FCFS, 256, 0, 0, "{\"per_request\": true}", &ls, &e), 0);
    lt_run(&p, s.wl.reqs, s.wl.n, ls, &env);
    CHECK_INT(p.rc, 0);
    CHECK(lt_same_times(&c, &p));
    CHECK_INT(p.st.preemptions, c.st.preemptions);
    CHECK_INT(c.rc, 0);
    CHECK_INT(l.rc, 0);
    if (l.rc) fprintf(stderr, "  %s\n", l.err.msg);
    CHECK_INT(c.st.finished, 10000);
    CHECK_INT(l.st.finished, 10000);
    CHECK(c.n_times > 1000000);
    CHECK(lt_same_times(&c, &l));
    CHECK_INT(l.st.iterations, c.st.iterations);
    CHECK_INT(l.st.preemptions, c.st.preemptions);
    CHECK(c.st.preemptions > 0);
    printf("     10k Poisson: %llu tokens, %llu iterations, %llu preemptions (timing: make bench)\n",
           (unsigned long long)c.n_times, (unsigned long long)c.st.iterations,
           (unsigned long long)c.st.preemptions);
    lt_free(&p);
    lt_free(&c);
    lt_free(&l);
    scenario_free(&s);
}

/* ------------------------------------------------- bad decisions, errors */

/* The chapter's four requests (r0, r1 at 0 ms: 2048 in, 8 and 2 out; r2 at
 * 20 ms: 8192 in, 2 out; r3 at 30 ms: 2048 in, 4 out). */
typedef struct LtFour {
    Request reqs[4];
} LtFour;

static void lt_four(LtFour *f)
{
    static const char *const ids[] = {"r0", "r1", "r2", "r3"};
    static const double at_ms[] = {0, 0, 20, 30};
    static const uint32_t in[] = {2048, 2048, 8192, 2048}, out[] = {8, 2, 2, 4};
    for (int i = 0; i < 4; i++) {
        request_init(&f->reqs[i]);
        f->reqs[i].id = ids[i];
        f->reqs[i].t_arrive_ns = (int64_t)(at_ms[i] * 1e6);
        f->reqs[i].prompt_tokens = in[i];
        f->reqs[i].output_tokens = out[i];
    }
}

/* The line of the "-- @tag" marker in a fixture (0 if absent). */
static int lt_marker_line(const char *path, const char *tag)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512], mark[80];
    snprintf(mark, sizeof mark, "-- @%s", tag);
    int n = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        char *m = strstr(line, mark);
        if (m && (m[strlen(mark)] == '\n' || m[strlen(mark)] == '\0' || m[strlen(mark)] == ' ')) {
            found = n;
            break;
        }
    }
    fclose(f);
    return found;
}

/* "file.lua:LINE:" of a marker, for CHECK_CONTAINS. */
static const char *lt_where(const char *file, const char *tag)
{
    static char buf[128];
    char path[512];
    snprintf(path, sizeof path, "%s%s", LT_DIR, file);
    snprintf(buf, sizeof buf, "%s:%d:", file, lt_marker_line(path, tag));
    return buf;
}

typedef struct LtCase {
    uint32_t max_running, budget;
    double kv_gib;
    uint64_t max_instr;
    size_t max_mem;
} LtCase;

/* Runs tests/lua/bad_sched.lua's case on the four requests; returns the
 * run's rc (creation failures included) with the message in e. */
static int lt_bad_sched(const char *kase, LtCase c, Err *e, LtFour *f)
{
    LuaSchedConfig cfg;
    lua_sched_defaults(&cfg);
    cfg.script = LT_DIR "bad_sched.lua";
    cfg.max_running = c.max_running ? c.max_running : 2;
    cfg.token_budget = c.budget;
    if (c.max_instr) cfg.max_instructions = c.max_instr;
    if (c.max_mem) cfg.max_memory_bytes = c.max_mem;
    char args[128];
    snprintf(args, sizeof args, "{\"case\": \"%s\"}", kase);
    cJSON *a = cJSON_Parse(args);
    cfg.args = a;
    Scheduler sched;
    int rc = lua_sched_create(&cfg, &sched, e);
    cJSON_Delete(a);
    if (rc < 0) return rc;
    LtEnv env = lt_chapter_env();
    if (c.kv_gib > 0) env.kv.capacity_bytes = c.kv_gib * GIB;
    lt_four(f);
    LtRun r;
    lt_run(&r, f->reqs, 4, sched, &env);
    *e = r.err;
    lt_free(&r);
    return r.rc;
}

/* Expects case kase to fail with a message naming the script and holding
 * every needle; tag (if any) is the marker whose line must be named. */
static void lt_expect_sched_error(const char *kase, LtCase c, const char *tag, const char *const *needles)
{
    Err e = {0};
    LtFour f;
    int rc = lt_bad_sched(kase, c, &e, &f);
    if (rc == 0) fprintf(stderr, "  case %s: no error\n", kase);
    CHECK(rc < 0);
    CHECK_CONTAINS(e.msg, "bad_sched.lua");
    if (tag) CHECK_CONTAINS(e.msg, lt_where("bad_sched.lua", tag));
    for (int i = 0; needles[i]; i++) CHECK_CONTAINS(e.msg, needles[i]);
}

#define LT_NEEDLES(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_lua_bad_decisions(void)
{
    LtCase d = {0};
    lt_expect_sched_error("unknown_id", d, "unknown_id", LT_NEEDLES("admit(\"nope\")", "unknown request id"));
    lt_expect_sched_error("table_unknown_id", d, NULL,
                          LT_NEEDLES("schedule returned admit[1]", "admit(\"nope\")", "unknown request id"));
    lt_expect_sched_error("chunk_zero", d, "chunk_zero", LT_NEEDLES("admit(r0, 0)", "first chunk outside 1..2048"));
    lt_expect_sched_error("chunk_negative", d, NULL,
                          LT_NEEDLES("schedule returned admit[1]", "admit(r0, -5)", "outside 1..2048"));
    lt_expect_sched_error("chunk_fraction", d, "chunk_fraction", LT_NEEDLES("whole number of tokens"));
    lt_expect_sched_error("chunk_string", d, NULL, LT_NEEDLES("admit[1]", "whole number of tokens, got string"));
    LtCase budget = {.budget = 100};
    lt_expect_sched_error("budget", budget, "budget",
                          LT_NEEDLES("admit(r0, 2048)", "exceeds the token budget", "token_budget 100"));
    /* 0.4 GiB holds 182 blocks of 16 tokens: r0's final 2055 tokens (129
     * blocks) fit, r1's do not */
    LtCase kv = {.kv_gib = 0.4};
    lt_expect_sched_error("kv", kv, "kv", LT_NEEDLES("admit(r1, 2048)", "past KV capacity", "53 of 182 blocks free"));
    lt_expect_sched_error("table_kv", kv, NULL, LT_NEEDLES("schedule returned admit[2]", "past KV capacity"));
    LtCase one = {.max_running = 1};
    lt_expect_sched_error("max_running", one, "max_running", LT_NEEDLES("admit(r1)", "max_running is 1"));
    lt_expect_sched_error("duplicate", d, "duplicate", LT_NEEDLES("decode(r0)", "already in this iteration's batch"));
    lt_expect_sched_error("decode_prefilling", d, "decode_prefilling",
                          LT_NEEDLES("decode(r0)", "prompt tokens left to prefill"));
    lt_expect_sched_error("prefill_waiting", d, "prefill_waiting", LT_NEEDLES("prefill(r0)", "waiting, not running"));
    lt_expect_sched_error("decode_finished", d, "decode_finished", LT_NEEDLES("decode(r0)", "finished, not running"));
    lt_expect_sched_error("empty", d, NULL, LT_NEEDLES("planned nothing while 2 requests run"));
}

static void test_lua_callback_errors(void)
{
    LtCase d = {0};
    lt_expect_sched_error("error_nil", d, "error_nil", LT_NEEDLES("error object is a nil value", "stack traceback"));
    lt_expect_sched_error("error_msg", d, "error_msg", LT_NEEDLES("boom", "schedule at t = 0.000000 s"));
    lt_expect_sched_error("wrong_type", d, NULL, LT_NEEDLES("schedule returned a number"));
    lt_expect_sched_error("table_bad_key", d, NULL, LT_NEEDLES("unknown key 'admitt'"));
    lt_expect_sched_error("arrival_wrong_type", d, NULL, LT_NEEDLES("on_arrival(r0)", "returned a table"));
    lt_expect_sched_error("arrival_error", d, "arrival_error", LT_NEEDLES("on_arrival(r0)", "arrival boom r0"));
    lt_expect_sched_error("no_schedule", d, NULL, LT_NEEDLES("nothing for 'schedule'"));
    lt_expect_sched_error("not_a_table", d, NULL, LT_NEEDLES("must return a table", "got number"));
    lt_expect_sched_error("chunk_error", d, "chunk_error", LT_NEEDLES("at load time"));
    lt_expect_sched_error("unknown_field", d, "unknown_field", LT_NEEDLES("no field 'prefil_left'"));
    lt_expect_sched_error("arrival_admit", d, "arrival_admit", LT_NEEDLES("v:admit: on_arrival may only reject"));
    lt_expect_sched_error("arrival_advance", d, "arrival_advance", LT_NEEDLES("v:advance_all: on_arrival may only"));
    lt_expect_sched_error("recursion", d, NULL, LT_NEEDLES("stack overflow"));
    /* admission control through on_arrival's answer */
    Err e;
    LtFour f;
    CHECK_INT(lt_bad_sched("arrival_reject_all", d, &e, &f), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(f.reqs[i].state, REQ_REJECTED);
        CHECK_INT(f.reqs[i].reject_reason, REJECT_ADMISSION);
    }
}

static void test_lua_sched_limits(void)
{
    LtCase fast = {.max_instr = 2000000};
    lt_expect_sched_error("loop", fast, "loop", LT_NEEDLES("instruction limit exceeded", "2000000"));
    lt_expect_sched_error("pcall_loop", fast, NULL, LT_NEEDLES("instruction limit exceeded"));
    LtCase small = {.max_mem = 16u << 20};
    lt_expect_sched_error("memory", small, NULL, LT_NEEDLES("memory limit exceeded", "16 MiB"));
    lt_expect_sched_error("string_rep", small, NULL, LT_NEEDLES("memory limit exceeded"));
}

static void test_lua_view_read_only(void)
{
    LtCase d = {0};
    lt_expect_sched_error("readonly_view", d, "readonly_view", LT_NEEDLES("read-only", "cannot set 'now'"));
    lt_expect_sched_error("readonly_list", d, "readonly_list", LT_NEEDLES("read-only"));
    lt_expect_sched_error("readonly_request", d, "readonly_request",
                          LT_NEEDLES("read-only", "cannot set 'prompt_tokens'"));
    lt_expect_sched_error("rawset_view", d, "rawset_view", LT_NEEDLES("rawset", "table expected"));
    lt_expect_sched_error("setmetatable_request", d, "setmetatable_request",
                          LT_NEEDLES("setmetatable", "table expected, got request"));
}

/* ----------------------------------------------------- sandbox escapes */

static char lt_tmp[256];

/* The file bad_script.lua's os_execute case would write: in this run's
 * own directory. */
static const char *lt_escaped(void)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/escaped", lt_tmp);
    return path;
}

/* Runs bad_script.lua CASE (os_execute: CASE FILE). */
static int lt_script(const char *kase, Err *e)
{
    char *argv[] = {(char *)(uintptr_t)kase, (char *)(uintptr_t)lt_escaped()};
    int argc = strcmp(kase, "os_execute") ? 1 : 2;
    LuaCmdLimits lim = {.max_instructions = 2000000, .max_memory_bytes = 64u << 20, .seed = 1};
    memset(e, 0, sizeof *e);
    return lua_cmd_run(LT_DIR "bad_script.lua", argc, argv, &lim, e);
}

static void lt_expect_escape_blocked(const char *kase, const char *tag, const char *const *needles)
{
    Err e;
    int rc = lt_script(kase, &e);
    if (rc == 0) fprintf(stderr, "  case %s: no error\n", kase);
    CHECK(rc < 0);
    CHECK_CONTAINS(e.msg, "bad_script.lua");
    if (tag) CHECK_CONTAINS(e.msg, lt_where("bad_script.lua", tag));
    for (int i = 0; needles[i]; i++) CHECK_CONTAINS(e.msg, needles[i]);
}

static void test_lua_sandbox_escapes(void)
{
    Err e;
    CHECK_INT(lt_script("ok", &e), 0);
    remove(lt_escaped());
    lt_expect_escape_blocked("os_execute", "os_execute", LT_NEEDLES("global 'os'"));
    FILE *f = fopen(lt_escaped(), "r");
    CHECK(f == NULL);
    if (f) fclose(f);
    lt_expect_escape_blocked("io_open", "io_open", LT_NEEDLES("global 'io'"));
    lt_expect_escape_blocked("require_os", "require_os", LT_NEEDLES("require \"os\": not available in the sandbox"));
    lt_expect_escape_blocked("require_path", "require_path", LT_NEEDLES("a module name is letters"));
    lt_expect_escape_blocked("load_binary", "load_binary", LT_NEEDLES("binary chunks are not allowed"));
    lt_expect_escape_blocked("load_binary_reader", "load_binary_reader",
                             LT_NEEDLES("attempt to load a binary chunk (mode is 't')"));
    lt_expect_escape_blocked("dofile", "dofile", LT_NEEDLES("global 'dofile'"));
    lt_expect_escape_blocked("loadfile", "loadfile", LT_NEEDLES("global 'loadfile'"));
    lt_expect_escape_blocked("string_dump", "string_dump", LT_NEEDLES("field 'dump'"));
    lt_expect_escape_blocked("debug", "debug", LT_NEEDLES("global 'debug'"));
    lt_expect_escape_blocked("string_rep", NULL, LT_NEEDLES("memory limit exceeded", "64 MiB"));
    lt_expect_escape_blocked("doubling", NULL, LT_NEEDLES("memory limit exceeded"));
    lt_expect_escape_blocked("loop", "loop", LT_NEEDLES("instruction limit exceeded"));
    lt_expect_escape_blocked("pcall_loop", NULL, LT_NEEDLES("instruction limit exceeded"));
    /* finalizers run with hooks off (Lua's GC): refused outright; a
     * backtracking pattern is refused before the C matcher starts */
    lt_expect_escape_blocked("gc_loop", "gc_loop", LT_NEEDLES("__gc finalizers are not allowed"));
    lt_expect_escape_blocked("pattern_blowup", "pattern_blowup",
                             LT_NEEDLES("string.find: a pattern with 3 repetitions over a 5000-byte string"));
    lt_expect_escape_blocked("error_nil", "error_nil", LT_NEEDLES("error object is a nil value"));
    lt_expect_escape_blocked("error_table", NULL, LT_NEEDLES("a table error"));
    lt_expect_escape_blocked("write_bad", "write_bad", LT_NEEDLES("servesim.write_json", "/nonexistent-dir"));
    lt_expect_escape_blocked("run_bad", "run_bad", LT_NEEDLES("servesim.run", "missing key"));
    /* a script that is not there, and a syntax error */
    char *none[] = {NULL};
    CHECK(lua_cmd_run(LT_DIR "no_such_script.lua", 0, none, NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "no_such_script.lua");
    char bad[300];
    snprintf(bad, sizeof bad, "%s/syntax.lua", lt_tmp);
    FILE *s = fopen(bad, "w");
    if (s) {
        fputs("local x = \n\nfunction (\n", s);
        fclose(s);
    }
    CHECK(lua_cmd_run(bad, 0, none, NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "syntax.lua:4:");
    CHECK_CONTAINS(e.msg, "near <eof>");
}

/* ------------------------------------------------------- the servesim API */

static char *lt_read(const char *dir, const char *name)
{
    char path[512];
    Err e;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return read_file(path, NULL, &e);
}

static void test_lua_api(void)
{
    char *argv[] = {(char *)(uintptr_t)SERVESIM_DATA_DIR, lt_tmp};
    Err e = {0};
    LuaCmdLimits lim = {.seed = 1};
    /* the script writes into lt_tmp: outside the working directory */
    lim.n_allow_write = paths_absolute(lt_tmp, lim.allow_write[0], sizeof lim.allow_write[0], &e) == 0;
    int rc = lua_cmd_run(LT_DIR "api.lua", 2, argv, &lim, &e);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    CHECK_INT(rc, 0);
    char *t = lt_read(lt_tmp, "summary.json");
    CHECK_CONTAINS(t, "\"ids\":\t[\"r0\", \"r1\"]");
    CHECK_CONTAINS(t, "\"ok\":\ttrue");
    free(t);
    t = lt_read(lt_tmp, "requests.csv");
    /* header from the columns given; a cell with a comma and quotes is quoted */
    CHECK_CONTAINS(t, "id,tokens,ttft_ms,note\nr0,8,163.327456,\nr1,2,163.327456,\"a, \"\"quoted\"\"\"\n");
    free(t);
    t = lt_read(lt_tmp, "auto.csv");
    CHECK(t && !strcmp(t, "a,b,c\n1,2,\n3,,true\n"));
    free(t);
    t = lt_read(lt_tmp, "arrays.csv");
    CHECK(t && !strcmp(t, "x,y\n1,2.5\n"));
    free(t);
}

/* ------------------------------------------------------ example policies */

/* max_running 1: r0 (2048 in) runs from 0 ms; r1 (8192 in) arrives at 10
 * ms, r2 (512 in) at 20 ms, r3 (1024 in) at 30 ms. */
static void lt_sjf_requests(LtFour *f)
{
    static const char *const ids[] = {"r0", "r1", "r2", "r3"};
    static const double at_ms[] = {0, 10, 20, 30};
    static const uint32_t in[] = {2048, 8192, 512, 1024}, out[] = {4, 4, 4, 4};
    for (int i = 0; i < 4; i++) {
        request_init(&f->reqs[i]);
        f->reqs[i].id = ids[i];
        f->reqs[i].t_arrive_ns = (int64_t)(at_ms[i] * 1e6);
        f->reqs[i].prompt_tokens = in[i];
        f->reqs[i].output_tokens = out[i];
    }
}

static void test_lua_sjf(void)
{
    LtEnv env = lt_chapter_env();
    Err e;
    LtFour f, g;
    LtRun a, b, c;
    Scheduler s;
    lt_sjf_requests(&f);
    CHECK_INT(lt_lua_sched(SERVESIM_DATA_DIR "/lua/policies/sjf.lua", 1, 0, 0, NULL, &s, &e), 0);
    lt_run(&a, f.reqs, 4, s, &env);
    CHECK_INT(a.rc, 0);
    if (a.rc) fprintf(stderr, "  %s\n", a.err.msg);
    CHECK_INT(a.st.finished, 4);
    /* shortest prompt first: r2 (512), r3 (1024), then r1 (8192) */
    CHECK(f.reqs[2].t_first_token_ns < f.reqs[3].t_first_token_ns);
    CHECK(f.reqs[3].t_first_token_ns < f.reqs[1].t_first_token_ns);
    /* FCFS serves r1 before r2 */
    lt_sjf_requests(&g);
    CHECK_INT(lt_lua_sched(LT_FCFS, 1, 0, 0, NULL, &s, &e), 0);
    lt_run(&b, g.reqs, 4, s, &env);
    CHECK(g.reqs[1].t_first_token_ns < g.reqs[2].t_first_token_ns);
    /* the same run twice: the same times */
    lt_sjf_requests(&g);
    CHECK_INT(lt_lua_sched(SERVESIM_DATA_DIR "/lua/policies/sjf.lua", 1, 0, 0, NULL, &s, &e), 0);
    lt_run(&c, g.reqs, 4, s, &env);
    CHECK(lt_same_times(&a, &c));
    lt_free(&c);
    /* max_wait_s bounds the wait of the long one: it goes before r3 */
    lt_sjf_requests(&g);
    CHECK_INT(lt_lua_sched(SERVESIM_DATA_DIR "/lua/policies/sjf.lua", 1, 0, 0, "{\"max_wait_s\": 0.05}", &s, &e),
              0);
    lt_run(&c, g.reqs, 4, s, &env);
    CHECK_INT(c.rc, 0);
    CHECK(g.reqs[1].t_first_token_ns < g.reqs[3].t_first_token_ns);
    lt_free(&c);
    /* issue 15: with a token budget the bundled policy stays inside it
     * (it failed "exceeds the token budget" at once) */
    lt_sjf_requests(&g);
    CHECK_INT(lt_lua_sched(SERVESIM_DATA_DIR "/lua/policies/sjf.lua", 2, 512, 0, NULL, &s, &e), 0);
    lt_run(&c, g.reqs, 4, s, &env);
    if (c.rc) fprintf(stderr, "  %s\n", c.err.msg);
    CHECK_INT(c.rc, 0);
    CHECK_INT(c.st.finished, 4);
    lt_free(&a);
    lt_free(&b);
    lt_free(&c);
}

/* 40 requests of 2048 in / 16 out arrive together: at 94.8 ms per
 * prefill, a 1-second TTFT SLO leaves room for about ten. */
static void test_lua_edf_admission(void)
{
    enum { N = 40 };
    Request reqs[N];
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        request_init(&reqs[i]);
        snprintf(ids[i], sizeof ids[i], "q%d", i);
        reqs[i].id = ids[i];
        reqs[i].t_arrive_ns = 0;
        reqs[i].prompt_tokens = 2048;
        reqs[i].output_tokens = 16;
    }
    LtEnv env = lt_chapter_env();
    Err e;
    Scheduler s;
    LtRun r;
    CHECK_INT(lt_lua_sched(SERVESIM_DATA_DIR "/lua/policies/edf_slo.lua", 8, 0, 0, "{\"ttft_ms\": 1000}", &s, &e), 0);
    lt_run(&r, reqs, N, s, &env);
    CHECK_INT(r.rc, 0);
    if (r.rc) fprintf(stderr, "  %s\n", r.err.msg);
    uint32_t rejected = 0, late = 0;
    for (int i = 0; i < N; i++) {
        if (reqs[i].state == REQ_REJECTED) {
            rejected++;
            CHECK_INT(reqs[i].reject_reason, REJECT_ADMISSION);
        } else if (reqs[i].t_first_token_ns - reqs[i].t_arrive_ns > 1000 * NS_PER_MS) {
            late++;
        }
    }
    CHECK(rejected >= 20 && rejected <= 32);
    CHECK_INT(late, 0);
    CHECK_INT(r.st.finished + r.st.rejected, N);
    /* without admission control everything finishes, most of it late */
    CHECK_INT(lt_lua_sched(SERVESIM_DATA_DIR "/lua/policies/edf_slo.lua", 8, 0, 0, "{\"admission\": false}", &s, &e),
              0);
    LtRun all;
    lt_run(&all, reqs, N, s, &env);
    CHECK_INT(all.st.finished, N);
    lt_free(&r);
    lt_free(&all);
}

/* ---------------------------------------------------------------- routers */

static uint32_t lt_ids_a[600], lt_ids_b[600];

static void lt_route_req(Request *r, const char *id, uint32_t idx, const uint32_t *ids)
{
    request_init(r);
    r->id = id;
    r->idx = idx;
    r->prompt_tokens = 600;
    r->output_tokens = 10;
    r->token_ids = ids;
    r->n_token_ids = ids ? 600 : 0;
}

static void test_lua_router_prefix_affinity(void)
{
    for (uint32_t i = 0; i < 600; i++) {
        lt_ids_a[i] = 1000 + i;
        lt_ids_b[i] = i < 100 ? 1000 + i : 5000 + i; /* shares only 100 tokens with A */
    }
    LuaRouterConfig c;
    lua_router_defaults(&c);
    c.script = SERVESIM_DATA_DIR "/lua/routers/prefix_affinity.lua";
    Router rt;
    Err e;
    CHECK_INT(lua_router_create(&c, &rt, &e), 0);
    Request ra, rb, rn;
    lt_route_req(&ra, "a", 0, lt_ids_a);
    lt_route_req(&rb, "b", 1, lt_ids_b);
    lt_route_req(&rn, "n", 2, NULL);
    ReplicaLoad loads[3] = {{.outstanding_tokens = 500}, {.outstanding_tokens = 100}, {.outstanding_tokens = 300}};
    /* a new group goes to the least loaded replica (2, index 1) */
    CHECK_INT(rt.route(rt.ctx, &ra, loads, 3), 1);
    /* and stays there although replica 3 is now lighter */
    loads[1].outstanding_tokens = 900;
    loads[2].outstanding_tokens = 50;
    CHECK_INT(rt.route(rt.ctx, &ra, loads, 3), 1);
    /* another prefix: least loaded */
    CHECK_INT(rt.route(rt.ctx, &rb, loads, 3), 2);
    /* no token ids: least loaded */
    CHECK_INT(rt.route(rt.ctx, &rn, loads, 3), 2);
    /* the group's home is overloaded past the slack: it moves */
    loads[1].outstanding_tokens = 100000;
    CHECK_INT(rt.route(rt.ctx, &ra, loads, 3), 2);
    CHECK_INT(lua_router_check(&rt, &e), 0);
    rt.destroy(rt.ctx);
}

static void lt_expect_router_error(const char *kase, const char *tag, const char *needle)
{
    LuaRouterConfig c;
    lua_router_defaults(&c);
    c.script = LT_DIR "bad_router.lua";
    c.max_instructions = 1000000;
    char args[64];
    snprintf(args, sizeof args, "{\"case\": \"%s\"}", kase);
    cJSON *a = cJSON_Parse(args);
    c.args = a;
    Router rt;
    Err e = {0};
    int rc = lua_router_create(&c, &rt, &e);
    cJSON_Delete(a);
    CHECK_INT(rc, 0);
    if (rc) return;
    Request r1, r2;
    lt_route_req(&r1, "x1", 0, NULL);
    lt_route_req(&r2, "x2", 1, NULL);
    ReplicaLoad loads[2] = {{0}, {0}};
    CHECK_INT(rt.route(rt.ctx, &r1, loads, 2), 0);
    CHECK_INT(lua_router_check(&rt, &e), 0);
    CHECK_INT(rt.route(rt.ctx, &r2, loads, 2), 0);
    CHECK_INT(lua_router_check(&rt, &e), -1);
    CHECK_CONTAINS(e.msg, "bad_router.lua");
    CHECK_CONTAINS(e.msg, "route(x2)");
    if (tag) CHECK_CONTAINS(e.msg, lt_where("bad_router.lua", tag));
    CHECK_CONTAINS(e.msg, needle);
    /* after a failure the script is not called again */
    CHECK_INT(rt.route(rt.ctx, &r2, loads, 2), 0);
    rt.destroy(rt.ctx);
}

static void test_lua_router_errors(void)
{
    lt_expect_router_error("zero", NULL, "returned 0; expected a replica number 1..2");
    lt_expect_router_error("too_big", NULL, "returned 3; expected a replica number 1..2");
    lt_expect_router_error("string", NULL, "returned a string");
    /* issue 15: a string Lua would convert is still not a replica number */
    lt_expect_router_error("string_one", NULL, "returned a string; expected a replica number 1..2");
    lt_expect_router_error("error", "error", "router boom x2");
    lt_expect_router_error("loop", NULL, "instruction limit exceeded");
    lt_expect_router_error("kept_view", "kept_view", "request view used after the callback");
    lt_expect_router_error("write_load", "write_load", "read-only");
    /* a good one */
    LuaRouterConfig c;
    lua_router_defaults(&c);
    c.script = LT_DIR "bad_router.lua";
    Router rt;
    Err e;
    CHECK_INT(lua_router_create(&c, &rt, &e), 0);
    Request r1;
    lt_route_req(&r1, "x1", 0, NULL);
    ReplicaLoad loads[4] = {{0}};
    CHECK_INT(rt.route(rt.ctx, &r1, loads, 4), 0);
    CHECK_INT(rt.route(rt.ctx, &r1, loads, 4), 3);
    CHECK_INT(lua_router_check(&rt, &e), 0);
    rt.destroy(rt.ctx);
    /* a router that returns nothing usable */
    c.script = LT_DIR "bad_sched.lua";
    CHECK(lua_router_create(&c, &rt, &e) < 0);
    CHECK_CONTAINS(e.msg, "{route = function(r, loads)");
}

/* ------------------------------------------ scenarios and the command line */

/* Whether scenario.c builds Lua schedulers ("kind": "lua") yet. */
static int lt_scenario_has_lua(void)
{
    static const char text[] =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"lua\", \"script\": "
        "\"lua/policies/fcfs.lua\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 10, "
        "\"output_tokens\": 2}]}}";
    Scenario s;
    Err e;
    if (scenario_load_text(text, "probe.json", 0, 0, &s, &e) < 0) return 0;
    scenario_free(&s);
    return 1;
}

/* The scenario's run through the cluster path (as `servesim run`); the
 * token times are copied into times[] (up to cap); -1 + e on failure. */
static int lt_scenario_run(const char *text, int64_t *times, uint64_t cap, uint64_t *n, Err *e)
{
    Scenario s;
    if (scenario_load_text(text, SERVESIM_DATA_DIR "/tests/lua/scenario.json", 0, 0, &s, e) < 0) return -1;
    Cluster *c = cluster_new(&s, NULL, e);
    int rc = (!c || cluster_run(c, e) < 0) ? -1 : 0;
    if (rc == 0) {
        RunData rd;
        cluster_rundata(c, &rd);
        *n = 0;
        for (uint32_t i = 0; i < s.wl.n; i++)
            for (uint32_t k = 0; k < s.wl.reqs[i].generated && *n < cap; k++)
                times[(*n)++] = rd.token_times[s.wl.reqs[i].token_off + k];
    }
    cluster_free(c);
    scenario_free(&s);
    return rc;
}

#define LT_CHAPTER_HEAD "{\"model\": \"qwen3-8b\", \"hardware\": \"rtx-pro-6000\", " \
    "\"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 26.22, \"per_token_us\": 30.4, \"per_pair_ns\": 3}, " \
    "\"kv\": {\"capacity_gib\": 12, \"block_tokens\": 16, \"reserve\": \"final\"}, " \
    "\"workload\": {\"requests\": [" \
    "{\"id\": \"r0\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 8}," \
    "{\"id\": \"r1\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 2}," \
    "{\"id\": \"r2\", \"arrival_ms\": 20, \"prompt_tokens\": 8192, \"output_tokens\": 2}," \
    "{\"id\": \"r3\", \"arrival_ms\": 30, \"prompt_tokens\": 2048, \"output_tokens\": 4}]}, "

static void test_lua_scenario(void)
{
    if (!lt_scenario_has_lua()) {
        printf("     (skipped: scenario.c does not build \"kind\": \"lua\" schedulers yet)\n");
        return;
    }
    int64_t c[32], l[32];
    uint64_t nc = 0, nl = 0;
    Err e;
    CHECK_INT(lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 2}}", c, 32,
                              &nc, &e), 0);
    int rc = lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"lua\", \"script\": "
                             "\"../../lua/policies/fcfs.lua\", \"max_running\": 2}}", l, 32, &nl, &e);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    CHECK_INT(rc, 0);
    CHECK_INT(nl, 16);
    CHECK(nc == nl && memcmp(c, l, nl * sizeof *l) == 0);
    /* a script that is not there: named with its key path */
    CHECK(lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"lua\", \"script\": \"nope.lua\"}}", l, 32, &nl,
                          &e) < 0);
    CHECK_CONTAINS(e.msg, "scheduler.script");
    CHECK_CONTAINS(e.msg, "nope.lua");
    /* an unknown key of the Lua scheduler */
    CHECK(lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"lua\", \"script\": \"bad_sched.lua\", "
                          "\"max_runing\": 2}}", l, 32, &nl, &e) < 0);
    CHECK_CONTAINS(e.msg, "max_runing");
    /* a bad decision stops the run with the script's line */
    CHECK(lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"lua\", \"script\": \"bad_sched.lua\", "
                          "\"args\": {\"case\": \"unknown_id\"}}}", l, 32, &nl, &e) < 0);
    CHECK_CONTAINS(e.msg, lt_where("bad_sched.lua", "unknown_id"));
    /* a Lua router in front of two replicas */
    rc = lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 2}, "
                         "\"cluster\": {\"replicas\": 2, \"router\": {\"kind\": \"lua\", \"script\": "
                         "\"../../lua/routers/prefix_affinity.lua\"}}}", l, 32, &nl, &e);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    CHECK_INT(rc, 0);
    CHECK_INT(nl, 16);
    CHECK(lt_scenario_run(LT_CHAPTER_HEAD "\"scheduler\": {\"kind\": \"continuous\"}, \"cluster\": {\"replicas\": 2, "
                          "\"router\": {\"kind\": \"lua\", \"script\": \"bad_router.lua\", \"args\": {\"case\": "
                          "\"error\"}}}}", l, 32, &nl, &e) < 0);
    CHECK_CONTAINS(e.msg, "router boom r1");
}

/* ------------------------------------------------------ KV eviction rules */

#define LT_EVICT_SCRIPT LT_DIR "bad_evict.lua"

/* An EvictPolicy from a script with args.case = kase (NULL: none). */
static int lt_evict_policy(const char *script, const char *kase, EvictPolicy *p, Err *e)
{
    LuaEvictConfig c;
    lua_evict_defaults(&c);
    c.script = script;
    c.max_instructions = 1000000;
    cJSON *a = NULL;
    if (kase) {
        a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "case", kase);
    }
    c.args = a;
    int rc = lua_evict_create(&c, p, e);
    cJSON_Delete(a);
    return rc;
}

static void test_lua_evict_policy(void)
{
    Err e = {0};
    EvictPolicy p;
    EvictCandidate c[5] = {{.block = 10, .depth = 3, .hits = 0, .lookups_since = 4},
                           {.block = 11, .depth = 7, .hits = 2, .lookups_since = 9},
                           {.block = 12, .depth = 2, .hits = 0, .lookups_since = 1},
                           {.block = 13, .depth = 7, .hits = 5, .lookups_since = 6},
                           {.block = 14, .depth = 1, .hits = 1, .lookups_since = 0}};
    /* deepest first: the first of the two depth-7 blocks */
    CHECK_INT(lt_evict_policy(SERVESIM_DATA_DIR "/lua/evict/deepest_first.lua", NULL, &p, &e), 0);
    CHECK_INT(p.choose(p.ctx, c, 5, &e), 1);
    CHECK_INT(p.choose(p.ctx, c + 2, 3, &e), 1);
    CHECK_INT(p.choose(p.ctx, c + 4, 1, &e), 0);
    p.destroy(p.ctx);
    /* the value rule: the smallest p_hit x recompute cost, computed here */
    CHECK_INT(lt_evict_policy(SERVESIM_DATA_DIR "/lua/evict/value.lua", NULL, &p, &e), 0);
    lua_evict_set_block_tokens(&p, 16);
    int want = 0;
    double best = 1e300;
    for (int i = 0; i < 5; i++) {
        double v = (c[i].hits + 1.0) / ((double)c[i].lookups_since + 2.0) * 16.0 * (1.0 + c[i].depth * 16.0 / 8192.0);
        if (v < best) {
            best = v;
            want = i;
        }
    }
    CHECK_INT(p.choose(p.ctx, c, 5, &e), want);
    p.destroy(p.ctx);
    /* a script that returns no evict function */
    CHECK(lt_evict_policy(LT_DIR "bad_router.lua", NULL, &p, &e) < 0);
    CHECK_CONTAINS(e.msg, "bad_router.lua");
    CHECK_CONTAINS(e.msg, "{evict = function(v, c)");
    /* scenario objects: kind, keys, script path */
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"kind\": \"lru\", \"script\": \"x.lua\"}", "s.json: kv.eviction.kind"},
        {"{\"kind\": \"lua\"}", "script"},
        {"{\"kind\": \"lua\", \"script\": \"no_such_rule.lua\"}", "no_such_rule.lua"},
        {"{\"kind\": \"lua\", \"script\": \"bad_evict.lua\", \"max_instructons\": 5}", "max_instructons"},
        {"{\"kind\": \"lua\", \"script\": \"bad_evict.lua\", \"args\": 3}", "args"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *j = cJSON_Parse(bad[i].json);
        CHECK(lua_evict_validate(j, "s.json: kv.eviction", LT_DIR, &e) < 0);
        CHECK_CONTAINS(e.msg, bad[i].needle);
        cJSON_Delete(j);
    }
    cJSON *j = cJSON_Parse("{\"kind\": \"lua\", \"script\": \"bad_evict.lua\", \"args\": {\"case\": \"lru\"}, "
                           "\"max_memory_mib\": 8, \"seed\": 3}");
    CHECK_INT(lua_evict_new(j, "s.json: kv.eviction", LT_DIR, &p, &e), 0);
    CHECK_INT(p.choose(p.ctx, c, 5, &e), 0);
    p.destroy(p.ctx);
    cJSON_Delete(j);
}

/* "bad_evict.lua:LINE:" of the evict function's definition or of a marker. */
static void lt_expect_evict_error(const char *kase, const char *tag, const char *needle)
{
    EvictPolicy p;
    Err e = {0};
    int rc = lt_evict_policy(LT_EVICT_SCRIPT, kase, &p, &e);
    CHECK_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    EvictCandidate c[3] = {{.block = 5, .depth = 1}, {.block = 6, .depth = 2}, {.block = 7, .depth = 0}};
    CHECK_INT(p.choose(p.ctx, c, 3, &e), 0);
    e.msg[0] = '\0';
    CHECK(p.choose(p.ctx, c, 3, &e) < 0);
    CHECK_CONTAINS(e.msg, "lua eviction policy");
    CHECK_CONTAINS(e.msg, "bad_evict.lua");
    CHECK_CONTAINS(e.msg, "(call 2)");
    CHECK_CONTAINS(e.msg, lt_where("bad_evict.lua", tag));
    CHECK_CONTAINS(e.msg, needle);
    /* after a failure the script is not called again: the same message */
    Err e2 = {0};
    CHECK(p.choose(p.ctx, c, 3, &e2) < 0);
    CHECK(strcmp(e.msg, e2.msg) == 0);
    p.destroy(p.ctx);
}

static void test_lua_evict_errors(void)
{
    lt_expect_evict_error("zero", "evict", "evict returned 0; expected a candidate index 1..3");
    lt_expect_evict_error("too_big", "evict", "evict returned 4; expected a candidate index 1..3");
    lt_expect_evict_error("string", "evict", "evict returned a string \"first\"");
    lt_expect_evict_error("numeric_string", "evict", "evict returned a string \"1\"");
    lt_expect_evict_error("float", "evict", "evict returned 1.5");
    lt_expect_evict_error("nothing", "evict", "evict returned nil (nothing)");
    lt_expect_evict_error("error", "error", "evict boom at call 2");
    lt_expect_evict_error("error", "error", "stack traceback");
    lt_expect_evict_error("loop", "loop", "instruction limit exceeded");
    lt_expect_evict_error("kept", "kept", "readable only inside the evict() call that received it");
    lt_expect_evict_error("write", "write", "read-only");
    lt_expect_evict_error("typo", "typo", "no field 'dept'");
}

/* 60 requests in 7 conversations (their prompts share prefixes: one
 * session's ids continue from position 0, and the first 48 are common to
 * all) over a pool of 68 blocks of 16 tokens: blocks are reused and
 * evicted. */
static char *lt_evict_scenario(const char *kv_extra, const char *cluster)
{
    size_t cap = 16384, k = 0;
    char *t = xmalloc(cap);
    k += (size_t)snprintf(t + k, cap - k,
                          "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", "
                          "\"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 5, \"per_token_us\": 30, "
                          "\"per_pair_ns\": 3}, \"scheduler\": {\"kind\": \"continuous\", \"max_running\": 2}, "
                          "\"kv\": {\"capacity_gib\": 0.15, \"block_tokens\": 16, \"reserve\": \"final\"%s}, %s"
                          "\"workload\": {\"requests\": [",
                          kv_extra, cluster ? cluster : "");
    for (int i = 0; i < 60; i++)
        k += (size_t)snprintf(t + k, cap - k,
                              "%s{\"id\": \"q%d\", \"arrival_ms\": %d, \"prompt_tokens\": %d, \"output_tokens\": %d, "
                              "\"session\": \"s%d\", \"shared_prefix_tokens\": 48}",
                              i ? ", " : "", i, 40 * i, 120 + (i * 37) % 360, 3 + i % 5, i % 7);
    snprintf(t + k, cap - k, "]}}");
    return t;
}

typedef struct LtEvictRun {
    int rc;
    Err err;
    int64_t times[1024];
    uint64_t n;
    KvStats kv;
} LtEvictRun;

static void lt_evict_run(const char *kv_extra, const char *cluster, LtEvictRun *out)
{
    char *text = lt_evict_scenario(kv_extra, cluster);
    Scenario s;
    memset(out, 0, sizeof *out);
    out->rc = -1;
    if (scenario_load_text(text, SERVESIM_DATA_DIR "/tests/lua/evict.json", 0, 0, &s, &out->err) == 0) {
        Cluster *c = cluster_new(&s, NULL, &out->err);
        out->rc = (!c || cluster_run(c, &out->err) < 0) ? -1 : 0;
        if (out->rc == 0) {
            RunData rd;
            cluster_rundata(c, &rd);
            for (uint32_t i = 0; i < s.wl.n; i++)
                for (uint32_t k = 0; k < s.wl.reqs[i].generated && out->n < 1024; k++)
                    out->times[out->n++] = rd.token_times[s.wl.reqs[i].token_off + k];
            if (rd.st && rd.st->has_kv_stats) out->kv = rd.st->kv;
        }
        cluster_free(c);
        scenario_free(&s);
    }
    free(text);
}

static int lt_same_evict_run(const LtEvictRun *a, const LtEvictRun *b)
{
    return a->rc == 0 && b->rc == 0 && a->n == b->n && a->n > 0 &&
           memcmp(a->times, b->times, a->n * sizeof a->times[0]) == 0 && a->kv.evictions == b->kv.evictions &&
           a->kv.hit_tokens == b->kv.hit_tokens && a->kv.lookup_tokens == b->kv.lookup_tokens;
}

static void test_lua_evict_scenario(void)
{
    static LtEvictRun c_lru, l_lru, c_val, l_val, deep, two, bad;
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": \"lru\"", NULL, &c_lru);
    if (c_lru.rc) fprintf(stderr, "  %s\n", c_lru.err.msg);
    CHECK_INT(c_lru.rc, 0);
    CHECK(c_lru.kv.evictions > 0);
    CHECK(c_lru.kv.hit_tokens > 0);
    /* a Lua rule that always answers 1 (the oldest) is LRU, token for token */
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": {\"kind\": \"lua\", \"script\": \"bad_evict.lua\"}", NULL,
                 &l_lru);
    if (l_lru.rc) fprintf(stderr, "  %s\n", l_lru.err.msg);
    CHECK(lt_same_evict_run(&c_lru, &l_lru));
    /* lua/evict/value.lua is the C value rule, token for token */
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": \"value\"", NULL, &c_val);
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": {\"kind\": \"lua\", \"script\": \"lua/evict/value.lua\"}",
                 NULL, &l_val);
    if (l_val.rc) fprintf(stderr, "  %s\n", l_val.err.msg);
    CHECK(lt_same_evict_run(&c_val, &l_val));
    CHECK(c_val.kv.evictions > 0);
    /* deepest first runs, and per replica */
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": {\"kind\": \"lua\", \"script\": "
                 "\"../../lua/evict/deepest_first.lua\"}", NULL, &deep);
    if (deep.rc) fprintf(stderr, "  %s\n", deep.err.msg);
    CHECK_INT(deep.rc, 0);
    CHECK(deep.kv.evictions > 0);
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": {\"kind\": \"lua\", \"script\": "
                 "\"../../lua/evict/deepest_first.lua\"}", "\"cluster\": {\"replicas\": 2}, ", &two);
    if (two.rc) fprintf(stderr, "  %s\n", two.err.msg);
    CHECK_INT(two.rc, 0);
    printf("     %llu prompt tokens looked up, %llu evictions; hits: lru %llu, value %llu, deepest first %llu\n",
           (unsigned long long)c_lru.kv.lookup_tokens, (unsigned long long)c_lru.kv.evictions,
           (unsigned long long)c_lru.kv.hit_tokens, (unsigned long long)c_val.kv.hit_tokens,
           (unsigned long long)deep.kv.hit_tokens);
    /* a misbehaving rule stops the run with the script's message */
    static const struct {
        const char *kase, *tag, *needle;
    } cases[] = {
        {"zero", "evict", "evict returned 0; expected a candidate index 1.."},
        {"too_big", "evict", "; expected a candidate index 1.."},
        {"string", "evict", "evict returned a string \"first\""},
        {"error", "error", "evict boom at call 2"},
        {"loop", "loop", "instruction limit exceeded"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char kv[300];
        snprintf(kv, sizeof kv, ", \"prefix_cache\": true, \"eviction\": {\"kind\": \"lua\", \"script\": "
                 "\"bad_evict.lua\", \"max_instructions\": 1000000, \"args\": {\"case\": \"%s\"}}", cases[i].kase);
        lt_evict_run(kv, NULL, &bad);
        CHECK(bad.rc < 0);
        CHECK_CONTAINS(bad.err.msg, "KV policy prefix_cache: lua eviction policy");
        CHECK_CONTAINS(bad.err.msg, "bad_evict.lua");
        CHECK_CONTAINS(bad.err.msg, lt_where("bad_evict.lua", cases[i].tag));
        CHECK_CONTAINS(bad.err.msg, cases[i].needle);
    }
    /* a Lua rule needs the prefix cache; a missing script names its key */
    lt_evict_run(", \"eviction\": {\"kind\": \"lua\", \"script\": \"bad_evict.lua\"}", NULL, &bad);
    CHECK(bad.rc < 0);
    CHECK_CONTAINS(bad.err.msg, "kv.eviction");
    CHECK_CONTAINS(bad.err.msg, "\"prefix_cache\": true");
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": {\"kind\": \"lua\", \"script\": \"nope.lua\"}", NULL, &bad);
    CHECK(bad.rc < 0);
    CHECK_CONTAINS(bad.err.msg, "kv.eviction.script");
    lt_evict_run(", \"prefix_cache\": true, \"eviction\": \"fifo\"", NULL, &bad);
    CHECK(bad.rc < 0);
    CHECK_CONTAINS(bad.err.msg, "eviction");
}

static void test_lua_experiments(void)
{
    if (!lt_scenario_has_lua()) {
        printf("     (skipped: the experiments run Lua schedulers through scenarios, not wired yet)\n");
        return;
    }
    char out[700], csv[600];
    snprintf(csv, sizeof csv, "%s/sweep.csv", lt_tmp);
    snprintf(out, sizeof out, "out=%s", csv);
    char *sweep[] = {(char *)(uintptr_t)"rates=4,40", (char *)(uintptr_t)"count=60", out, (char *)(uintptr_t)"quiet=1"};
    Err e = {0};
    LuaCmdLimits lim = {.seed = 1};
    lim.n_allow_write = paths_absolute(lt_tmp, lim.allow_write[0], sizeof lim.allow_write[0], &e) == 0;
    int rc = lua_cmd_run(SERVESIM_DATA_DIR "/lua/experiments/sweep_rates.lua", 4, sweep, &lim, &e);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    CHECK_INT(rc, 0);
    char *t = read_file(csv, NULL, &e);
    CHECK_CONTAINS(t, "rate_per_s,policy,completed_per_s,goodput_per_s");
    CHECK_CONTAINS(t, "\n4,continuous (C),");
    CHECK_CONTAINS(t, "\n40,edf_slo (Lua),");
    free(t);
    char *bench[] = {(char *)(uintptr_t)"count=300", (char *)(uintptr_t)"repeats=1", (char *)(uintptr_t)"quiet=1"};
    rc = lua_cmd_run(SERVESIM_DATA_DIR "/lua/experiments/bench_overhead.lua", 3, bench, &lim, &e);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    CHECK_INT(rc, 0);
}

/* lua_cmd_main(argv) with stderr captured into out: the exit status. */
static int lt_cmd_main(char *out, size_t n, int argc, ...)
{
    char *argv[16];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 16; i++) argv[i] = va_arg(ap, char *);
    va_end(ap);
    char path[300];
    snprintf(path, sizeof path, "%s/stderr.txt", lt_tmp);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w");
    if (!f || saved < 0) {
        if (f) fclose(f);
        return -1;
    }
    dup2(fileno(f), 2);
    int rc = lua_cmd_main(argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    Err e;
    char *t = read_file(path, NULL, &e);
    snprintf(out, n, "%s", t ? t : "");
    free(t);
    return rc;
}

/* The exit status and message of `servesim lua` without the binary. */
static void test_lua_cmd_exit_status(void)
{
    static char out[8192];
    char *bad = (char *)(uintptr_t)(LT_DIR "bad_script.lua");
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, bad, (char *)(uintptr_t)"ok"), 0);
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, bad, (char *)(uintptr_t)"os_execute"), 1);
    CHECK_CONTAINS(out, "servesim: ");
    CHECK_CONTAINS(out, lt_where("bad_script.lua", "os_execute"));
    CHECK_CONTAINS(out, "global 'os'");
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, bad, (char *)(uintptr_t)"io_open"), 1);
    CHECK_CONTAINS(out, "global 'io'");
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, bad, (char *)(uintptr_t)"require_os"), 1);
    CHECK_CONTAINS(out, "not available in the sandbox");
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, bad, (char *)(uintptr_t)"load_binary"), 1);
    CHECK_CONTAINS(out, "binary chunks are not allowed");
    CHECK_INT(lt_cmd_main(out, sizeof out, 4, (char *)(uintptr_t)"--max-memory-mib", (char *)(uintptr_t)"32", bad,
                          (char *)(uintptr_t)"string_rep"), 1);
    CHECK_CONTAINS(out, "memory limit exceeded");
    CHECK_CONTAINS(out, "32 MiB");
    CHECK_INT(lt_cmd_main(out, sizeof out, 4, (char *)(uintptr_t)"--max-instructions", (char *)(uintptr_t)"1e6", bad,
                          (char *)(uintptr_t)"loop"), 1);
    CHECK_CONTAINS(out, "instruction limit exceeded");
    CHECK_CONTAINS(out, lt_where("bad_script.lua", "loop"));
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, bad, (char *)(uintptr_t)"error_nil"), 1);
    CHECK_CONTAINS(out, "error object is a nil value");
    /* usage errors: 2 */
    CHECK_INT(lt_cmd_main(out, sizeof out, 0), 2);
    CHECK_CONTAINS(out, "a script is required");
    CHECK_INT(lt_cmd_main(out, sizeof out, 2, (char *)(uintptr_t)"--max-instructions", (char *)(uintptr_t)"-5"), 2);
    CHECK_CONTAINS(out, "--max-instructions");
    CHECK_INT(lt_cmd_main(out, sizeof out, 1, (char *)(uintptr_t)"--frob"), 2);
    CHECK_CONTAINS(out, "--frob");
}

static const char *lt_bin(void)
{
    const char *b = getenv("SERVESIM_BIN");
    return b ? b : "./servesim";
}

/* "servesim ARGS" with stderr folded into out; the exit status. */
static int lt_sh(const char *args, char *out, size_t n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", SERVESIM_DATA_DIR, lt_bin(), args);
    return testrun_popen(cmd, out, n);
}

static void lt_expect_cli(const char *args, int want_rc, const char *const *needles)
{
    static char out[16384];
    int rc = lt_sh(args, out, sizeof out);
    if (rc != want_rc) fprintf(stderr, "  servesim %s: exit %d\n%s\n", args, rc, out);
    CHECK_INT(rc, want_rc);
    for (int i = 0; needles[i]; i++) CHECK_CONTAINS(out, needles[i]);
    CHECK(strstr(out, "Sanitizer") == NULL);
}

static void test_lua_cli(void)
{
    static char out[4096];
    if (lt_sh("lua --help", out, sizeof out) != 0 || !strstr(out, "servesim lua")) {
        printf("     (skipped: %s has no 'lua' command yet: main.c does not dispatch to lua_cmd_main)\n", lt_bin());
        return;
    }
    lt_expect_cli("lua", 2, LT_NEEDLES("a script is required"));
    lt_expect_cli("lua --bogus x.lua", 2, LT_NEEDLES("--bogus"));
    lt_expect_cli("lua tests/lua/bad_script.lua ok", 0, LT_NEEDLES(""));
    lt_expect_cli("lua tests/lua/bad_script.lua os_execute", 1,
                  LT_NEEDLES("servesim: ", "global 'os'", lt_where("bad_script.lua", "os_execute")));
    lt_expect_cli("lua tests/lua/bad_script.lua io_open", 1, LT_NEEDLES("global 'io'"));
    lt_expect_cli("lua tests/lua/bad_script.lua require_os", 1, LT_NEEDLES("not available in the sandbox"));
    lt_expect_cli("lua tests/lua/bad_script.lua load_binary", 1, LT_NEEDLES("binary chunks are not allowed"));
    lt_expect_cli("lua --max-memory-mib 32 tests/lua/bad_script.lua string_rep", 1,
                  LT_NEEDLES("bad_script.lua", "memory limit exceeded", "32 MiB"));
    lt_expect_cli("lua --max-instructions 1e6 tests/lua/bad_script.lua loop", 1,
                  LT_NEEDLES("instruction limit exceeded", lt_where("bad_script.lua", "loop")));
    lt_expect_cli("lua tests/lua/bad_script.lua error_nil", 1, LT_NEEDLES("error object is a nil value"));
    lt_expect_cli("lua tests/lua/no_such.lua", 1, LT_NEEDLES("no_such.lua"));
}

/* Counted as a failure, not skipped silently. */
static void lt_no_tmpdir(void)
{
    fprintf(stderr, "  cannot create a temporary directory like %s\n", lt_tmp);
    CHECK(0);
}

void suite_lua(void);
void suite_lua(void)
{
    /* one directory per run: concurrent suites never share a file */
    snprintf(lt_tmp, sizeof lt_tmp, "/tmp/servesim-lua-test-XXXXXX");
    if (!mkdtemp(lt_tmp)) {
        RUN(lt_no_tmpdir);
        return;
    }
    char cmd[300];
    RUN(test_lua_fcfs_four_requests);
    RUN(test_lua_fcfs_poisson_10k);
    RUN(test_lua_bad_decisions);
    RUN(test_lua_callback_errors);
    RUN(test_lua_sched_limits);
    RUN(test_lua_view_read_only);
    RUN(test_lua_sandbox_escapes);
    RUN(test_lua_cmd_exit_status);
    RUN(test_lua_api);
    RUN(test_lua_sjf);
    RUN(test_lua_edf_admission);
    RUN(test_lua_router_prefix_affinity);
    RUN(test_lua_router_errors);
    RUN(test_lua_scenario);
    RUN(test_lua_evict_policy);
    RUN(test_lua_evict_errors);
    RUN(test_lua_evict_scenario);
    RUN(test_lua_experiments);
    RUN(test_lua_cli);
    snprintf(cmd, sizeof cmd, "rm -rf %s", lt_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", lt_tmp);
}
