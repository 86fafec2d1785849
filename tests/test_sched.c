/*
 * test_sched.c -- the chapter's four-request example (003 section 8.2,
 * figures 8-5/8-6/8-7) under static, continuous and chunked scheduling,
 * token by token, with the step model T = 26.22 ms + 30.4 us * new tokens
 * + 3 ns * pairs and at most two running requests.
 *
 * r0, r1 arrive at 0 ms (2048 in; 8 and 2 out), r2 at 20 ms (8192 in, 2
 * out), r3 at 30 ms (2048 in, 4 out).  The expected times were derived by
 * hand from the step model; the first few are spelled out in comments.
 */
#include <stdlib.h>

#include "cJSON.h"
#include "report.h"
#include "simtest.h"
#include "testhelp.h"
#include "testrun.h"

static const SimSpec four[4] = {{0, 2048, 8}, {0, 2048, 2}, {20, 8192, 2}, {30, 2048, 4}};

static SimRun *run_four(SchedKind kind)
{
    SimRun *R = calloc(1, sizeof *R);
    SchedConfig sc = {.kind = kind, .max_running = 2, .token_budget = 512};
    simtest_run(R, four, 4, sc, &simtest_chapter_cost, KV_RESERVE_FINAL, 0, 0, 16);
    return R;
}

static void check_times(const SimRun *R, int i, const double *ms, int n)
{
    CHECK_INT(R->reqs[i].generated, n);
    for (int k = 0; k < n; k++) CHECK_NEAR(simtest_ms(R->times[i][k]), ms[k], 2e-6);
}

static void test_step_model_numbers(void)
{
    /* 2K decode: 26.22 + 0.0304 + 3e-6 * 2049 = 26.2565 ms -> "26.26";
     * 2K prefill: 26.22 + 30.4e-3 * 2048 + 3e-6 * 2,098,176 = 94.77 -> "94.8". */
    CostModel cm;
    Err e;
    CHECK(cost_linear_new(&simtest_chapter_cost, &cm, &e) == 0);
    CostBreakdown cb;
    BatchItem dec = {.req = 0, .c = 1, .h = 2048, .kind = ITEM_DECODE, .samples = 1};
    BatchItem pre = {.req = 0, .c = 2048, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
    cm.iter_time(cm.ctx, &dec, 1, &cb);
    CHECK_NEAR(cb.t_s * 1e3, 26.256547, 1e-6);
    CHECK_NEAR(cb.t_s * 1e3, 26.26, 0.005);
    cm.iter_time(cm.ctx, &pre, 1, &cb);
    CHECK_NEAR(cb.t_s * 1e3, 94.773728, 1e-6);
    CHECK_NEAR(cb.t_s * 1e3, 94.8, 0.05);
    /* pairs(512, 0) and pairs(512, 7680) */
    CHECK_INT((long long)batch_pairs(512, 0), 131328);
    CHECK_INT((long long)batch_pairs(512, 7680), 4063488);
    cm.destroy(cm.ctx);
}

static void test_four_static(void)
{
    SimRun *R = run_four(SCHED_STATIC);
    CHECK_INT(R->rc, 0);
    /* r0 and r1 prefill together: 26.22 + 30.4e-3 * 4096 + 3e-6 * 4,196,352
     * = 163.327456 ms; r0's slot keeps decoding alone after r1 leaves; r2 and
     * r3 wait for the whole batch to finish, then prefill together. */
    static const double r0[] = {163.327456, 189.620550, 215.877100, 242.133653,
                                268.390209, 294.646768, 320.903330, 347.159895};
    static const double r1[] = {163.327456, 189.620550};
    static const double r2[] = {791.646007, 817.957533};
    static const double r3[] = {791.646007, 817.957533, 844.214083, 870.470636};
    check_times(R, 0, r0, 8);
    check_times(R, 1, r1, 2);
    check_times(R, 2, r2, 2);
    check_times(R, 3, r3, 4);
    CHECK_INT(R->st.iterations, 12);
    CHECK_INT(R->st.peak_running, 2);
    free(R);
}

static void test_four_continuous(void)
{
    SimRun *R = run_four(SCHED_CONTINUOUS);
    CHECK_INT(R->rc, 0);
    /* When r1 leaves at 189.62 ms, r2's 8192-token prefill joins r0's decode:
     * 26.22 + 30.4e-3 * 8193 + 3e-6 * (2050 + 33,558,528) = 375.968934 ms. */
    static const double r0[] = {163.327456, 189.620550, 565.589484, 591.901016,
                                686.711300, 713.004406, 739.297518, 765.590636};
    static const double r2[] = {565.589484, 591.901016};
    static const double r3[] = {686.711300, 713.004406, 739.297518, 765.590636};
    check_times(R, 0, r0, 8);
    check_times(R, 2, r2, 2);
    check_times(R, 3, r3, 4);
    CHECK_INT(R->st.iterations, 8);
    /* The chapter's point: r0's next-token gap grows more than tenfold. */
    double before = simtest_ms(R->times[0][1] - R->times[0][0]);
    double stretched = simtest_ms(R->times[0][2] - R->times[0][1]);
    CHECK_NEAR(before, 26.293094, 1e-5);
    CHECK_NEAR(stretched, 375.968934, 1e-5);
    CHECK(stretched > 10 * before);
    free(R);
}

static void test_four_chunked(void)
{
    SimRun *R = run_four(SCHED_CHUNKED);
    CHECK_INT(R->rc, 0);
    /* B = 512: r0's prompt goes in four chunks of 512 (the first
     * 26.22 + 15.5648 + 0.393984 = 42.178784 ms); r1 gets admitted only when
     * budget remains after r0's decode token. */
    static const double r0[] = {173.433728, 215.617123, 258.583884, 302.334011,
                                346.867504, 373.270221, 399.563330, 441.746743};
    static const double r1[] = {373.270221, 399.563330};
    static const double r2[] = {1210.979127, 1253.964317};
    static const double r3[] = {1368.540986, 1394.797533, 1421.054083, 1447.310636};
    check_times(R, 0, r0, 8);
    check_times(R, 1, r1, 2);
    check_times(R, 2, r2, 2);
    check_times(R, 3, r3, 4);
    CHECK_INT(R->st.iterations, 34);
    /* Chunking bounds r0's worst gap at one 512-token iteration, far below
     * the continuous schedule's 375.97 ms: the iteration of r1's fourth
     * chunk (511 tokens over 1533 cached) beside r0's decode (over 2051),
     * 26.22 + 30.4e-3 * 512 + 3e-6 * (914,179 + 2052) = 44.533493 ms
     * (README.md: "44.53 ms"); the first chunk iteration, 42.18 ms, is the
     * shortest. */
    int64_t worst = 0;
    for (int k = 1; k < 8; k++)
        if (R->times[0][k] - R->times[0][k - 1] > worst) worst = R->times[0][k] - R->times[0][k - 1];
    CHECK(simtest_ms(worst) < 60.0);
    CHECK_NEAR(simtest_ms(worst), 44.533493, 1e-5);
    free(R);
}

static void test_serial_is_static_one(void)
{
    /* max_running = 1: strictly one request at a time, in arrival order. */
    SimRun *R = calloc(1, sizeof *R);
    SchedConfig sc = {.kind = SCHED_STATIC, .max_running = 1};
    simtest_run(R, four, 4, sc, &simtest_chapter_cost, KV_RESERVE_FINAL, 0, 0, 16);
    CHECK_INT(R->rc, 0);
    CHECK_INT(R->st.peak_running, 1);
    for (int i = 1; i < 4; i++) CHECK(R->reqs[i].t_first_token_ns > R->reqs[i - 1].t_finish_ns);
    /* r0 alone: prefill 94.773728 ms, then 7 decodes at h = 2048..2054 */
    double t = 94.773728;
    for (int k = 0; k < 7; k++) t += 26.22 + 0.0304 + 3e-6 * (2048 + k + 1);
    CHECK_NEAR(simtest_ms(R->reqs[0].t_finish_ns), t, 1e-5);
    free(R);
}

/* ------------------------------------ chunked, "mixed": false (SGLang) */

/* r0 (16 in, 8 out) decodes alone; r1's 1000-token prompt arrives at 50 ms,
 * during r0's first decode.  Budget 512, at most four running. */
static const SimSpec mix_two[2] = {{0, 16, 8}, {50, 1000, 2}};

static SimRun *run_mix(int apart, uint32_t cap)
{
    SimRun *R = calloc(1, sizeof *R);
    SchedConfig sc = {.kind = SCHED_CHUNKED, .max_running = 4, .token_budget = 512, .long_prefill_threshold = cap,
                      .prefill_apart = apart};
    simtest_run(R, mix_two, 2, sc, &simtest_chapter_cost, KV_RESERVE_FINAL, 0, 0, 16);
    return R;
}

/* Iterations that start in [from, to): how many, and how many of them
 * carry a decode. */
static int iters_between(const SimRun *R, int64_t from, int64_t to, int *with_decode)
{
    int n = 0;
    *with_decode = 0;
    for (uint64_t k = 0; k < R->n_iters && k < 64; k++)
        if (R->iter_start[k] >= from && R->iter_start[k] < to) {
            n++;
            *with_decode += R->iter_decode[k] > 0;
        }
    return n;
}

/* Both modes share the first two iterations: r0's prefill, 26.22 +
 * 0.0304 * 16 + 3e-6 * 136 = 26.706808 ms, and its first decode (h = 16,
 * 17 pairs) 26.250451 ms, ending at 52.957259 with r1 waiting. */
static void test_mixed_decode_joins_prefill(void)
{
    SimRun *R = run_mix(0, 0);
    CHECK_INT(R->rc, 0);
    /* mixed (today's chunked): r0's decode (18 pairs) takes one token of
     * the budget, r1 the other 511 (130,816 pairs): 26.22 + 15.5648 +
     * 3e-6 * 130,834 = 42.177302 ms; then r0's decode beside r1's last 489
     * over 511 (369,703 pairs in all): 26.22 + 14.896 + 1.109109 =
     * 42.225109 ms; then both decode (h = 19 and 1000): 26.283863 ms. */
    static const double r0[] = {26.706808, 52.957259, 95.134561, 137.359670,
                                163.643533, 189.893996, 216.144462, 242.394931};
    static const double r1[] = {137.359670, 163.643533};
    check_times(R, 0, r0, 8);
    check_times(R, 1, r1, 2);
    CHECK_NEAR(simtest_ms(R->times[0][2] - R->times[0][1]), 42.177302, 2e-6);
    CHECK_INT(R->st.iterations, 8);
    free(R);
}

/* mixed false (SGLang's default): r1's prompt alone in each iteration, r0
 * silent for ceil(1000 / chunk) prefill iterations, then a decode of both
 * (h = 17 and 1000, 1019 pairs): 26.283857 ms.  With chunk 512 r0's gap
 * is 110.625357 ms, against 42.177302 mixed.
 *   chunk 512 (the budget): 512 tokens (131,328 pairs), 26.22 + 15.5648 +
 *     0.393984 = 42.178784 ms; its last 488 over 512 (369,172 pairs),
 *     26.22 + 14.8352 + 1.107516 = 42.162716 ms.
 *   long_prefill_threshold 256: 256, 256, 256 and 232 tokens over 0, 256,
 *     512 and 768 cached, 34.101088 + 34.297696 + 34.494304 + 33.888412 ms
 *     (the last: 26.22 + 7.0528 + 3e-6 * 205,204). */
static void test_apart_decode_waits_for_prefill(void)
{
    static const struct {
        uint32_t cap;
        int prefills;
        double r0[8], r1[2], gap;
    } cases[] = {
        {0, 2,
         {26.706808, 52.957259, 163.582616, 189.833073, 216.083533, 242.333996, 268.584462, 294.834931},
         {137.298759, 163.582616}, 42.178784 + 42.162716 + 26.283857},
        {256, 4,
         {26.706808, 52.957259, 216.022616, 242.273073, 268.523533, 294.773996, 321.024462, 347.274931},
         {189.738759, 216.022616}, 34.101088 + 34.297696 + 34.494304 + 33.888412 + 26.283857}};
    for (int i = 0; i < 2; i++) {
        SimRun *R = run_mix(1, cases[i].cap);
        CHECK_INT(R->rc, 0);
        check_times(R, 0, cases[i].r0, 8);
        check_times(R, 1, cases[i].r1, 2);
        /* r0's stretched gap: every prefill iteration and the decode */
        CHECK_NEAR(simtest_ms(R->times[0][2] - R->times[0][1]), cases[i].gap, 2e-6);
        int dec = -1;
        CHECK_INT(iters_between(R, R->times[0][1], R->times[1][0], &dec), cases[i].prefills);
        CHECK_INT(dec, 0);
        CHECK_INT(R->st.iterations, 8 + cases[i].prefills);
        free(R);
    }
}

/* Nothing waits while the requests decode (both prompts fit the first
 * iteration's budget): mixed false schedules exactly what mixed does. */
static void test_apart_nothing_waiting(void)
{
    static const SimSpec two[3] = {{0, 300, 6}, {0, 200, 5}, {400, 100, 3}};
    SimRun *A = calloc(1, sizeof *A), *B = calloc(1, sizeof *B);
    SchedConfig sc = {.kind = SCHED_CHUNKED, .max_running = 4, .token_budget = 512};
    simtest_run(A, two, 3, sc, &simtest_chapter_cost, KV_RESERVE_FINAL, 0, 0, 16);
    sc.prefill_apart = 1;
    simtest_run(B, two, 3, sc, &simtest_chapter_cost, KV_RESERVE_FINAL, 0, 0, 16);
    CHECK_INT(A->rc, 0);
    CHECK_INT(B->rc, 0);
    CHECK_INT(A->st.iterations, B->st.iterations);
    /* r2 arrives when the others are done: their prefill and 5 decodes,
     * then r2's prefill and 2 decodes */
    CHECK_INT(B->st.iterations, 9);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(B->reqs[i].generated, two[i].output);
        for (uint32_t k = 0; k < two[i].output; k++) CHECK_INT(B->times[i][k], A->times[i][k]);
    }
    /* the prefill of both, 26.22 + 15.2 + 3e-6 * (45,150 + 20,100) */
    CHECK_NEAR(simtest_ms(B->times[0][0]), 41.61575, 2e-6);
    free(A);
    free(B);
}

#define MIX_HEAD "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"workload\": {\"requests\": " \
    "[{\"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2}]}, \"scheduler\": "

/* "mixed" is a chunked key, true or false; bad input names the key and the
 * value. */
static void test_apart_bad_input(void)
{
    static const struct { const char *sched, *needle[3]; } cases[] = {
        {"{\"kind\": \"chunked\", \"mixed\": \"yes\"}}", {"bad.json: scheduler.mixed", "\"yes\"", "true or false"}},
        {"{\"kind\": \"chunked\", \"mixed\": 0}}", {"scheduler.mixed", "got 0", "true or false"}},
        {"{\"kind\": \"continuous\", \"mixed\": false}}", {"unknown key \"mixed\"", "continuous", "allowed"}},
        {"{\"kind\": \"vllm\", \"mixed\": true}}", {"unknown key \"mixed\"", "vllm", "allowed"}},
        {NULL, {NULL}}};
    static char text[1024];
    for (int i = 0; cases[i].sched; i++) {
        snprintf(text, sizeof text, MIX_HEAD "%s", cases[i].sched);
        Scenario s;
        Err e;
        int rc = scenario_load_text(text, "bad.json", 0, 0, &s, &e);
        CHECK(rc < 0);
        if (rc < 0)
            for (int k = 0; k < 3; k++) CHECK_CONTAINS(e.msg, cases[i].needle[k]);
        else
            scenario_free(&s);
    }
}

/* The scenario's echo and the run's header show "mixed" false, and only
 * then (the default's outputs stay the same bytes). */
static void test_apart_echo(void)
{
    static const char *const sched[3] = {"{\"kind\": \"chunked\", \"token_budget\": 8192, \"mixed\": false}}",
                                         "{\"kind\": \"chunked\", \"token_budget\": 8192, \"mixed\": true}}",
                                         "{\"kind\": \"chunked\", \"token_budget\": 8192}}"};
    static char text[1024];
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, MIX_HEAD "%s", sched[i]);
        TestRun *R = testrun_new(text, "mix.json");
        CHECK(R != NULL);
        if (!R) continue;
        CHECK_INT(R->s.sched.prefill_apart, i == 0);
        CHECK_INT(R->m.finished, 1);
        cJSON *j = cJSON_CreateObject();
        scenario_to_json(&R->s, j);
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(j, "mixed");
        if (i == 0) CHECK(cJSON_IsFalse(mx));
        else CHECK(mx == NULL);
        cJSON_Delete(j);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        report_print(f, &R->s, &R->mc, &R->m);
        fclose(f);
        CHECK_CONTAINS(buf, i == 0 ? "chunked scheduler (budget 8192, mixed false), max_running 256\n"
                                   : "chunked scheduler (budget 8192), max_running 256\n");
        free(buf);
        testrun_free(R);
    }
}

/* Mixed false under pressure: a small on-demand pool (preemptions),
 * cancels, and a disaggregated decode side whose requests arrive with
 * their KV (admitted decoding, never planned in a prefill iteration).  The
 * engine's invariant checks hold and every request is accounted for. */
static void test_apart_under_pressure(void)
{
    static const char *const poisson =
        "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 40, \"count\": 200, "
        "\"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 64, \"max\": 3000}, "
        "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 8, \"max\": 256}, "
        "\"cancel\": {\"fraction\": 0.2, \"after_ms\": {\"dist\": \"exponential\", \"mean\": 500}}}";
    static const char *const deploy[] = {
        "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 32, \"token_budget\": 1024, \"mixed\": false}, "
        "\"kv\": {\"capacity_gib\": 0.6, \"reserve\": \"on_demand\"}",
        "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 32, \"token_budget\": 1024, "
        "\"long_prefill_threshold\": 300, \"max_partial_prefills\": 2, \"mixed\": false}, "
        "\"kv\": {\"capacity_gib\": 0.5, \"reserve\": \"final\", \"prefix_cache\": true}",
        "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 32, \"token_budget\": 1024, \"mixed\": false}, "
        "\"kv\": {\"capacity_gib\": 0.5}, \"disagg\": {\"prefill\": {\"replicas\": 1}, \"decode\": {\"replicas\": 2}, "
        "\"link_gb_per_s\": 50}",
        NULL};
    static char text[4096];
    for (int v = 0; deploy[v]; v++) {
        snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"seed\": 5, %s, %s}",
                 deploy[v], poisson);
        TestRun *R = testrun_new(text, "pressure.json");
        CHECK(R != NULL);
        if (!R) continue;
        CHECK_INT(R->m.requests, 200);
        CHECK_INT(R->m.finished + R->m.rejected + R->m.cancelled, 200);
        CHECK(R->m.finished > 100);
        if (v == 0) CHECK(R->m.preemptions > 0);
        testrun_free(R);
    }
}

void suite_sched(void);
void suite_sched(void)
{
    RUN(test_step_model_numbers);
    RUN(test_four_static);
    RUN(test_four_continuous);
    RUN(test_four_chunked);
    RUN(test_serial_is_static_one);
    RUN(test_mixed_decode_joins_prefill);
    RUN(test_apart_decode_waits_for_prefill);
    RUN(test_apart_nothing_waiting);
    RUN(test_apart_bad_input);
    RUN(test_apart_echo);
    RUN(test_apart_under_pressure);
}
