/*
 * test_spec.c -- speculative decoding against the chapters (003 section
 * 8.5, exercises 8-7 and 8-9, the design board; 000 example 31.3).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "jsonio.h"
#include "rng.h"
#include "simtest.h"
#include "spec.h"
#include "testhelp.h"

static SpecCfg rate(double a, uint32_t m)
{
    SpecCfg c = {.enabled = 1, .draft_len = m, .n_rates = 1, .rates = {a}};
    return c;
}

static void test_expected_tokens(void)
{
    SpecCfg lo = rate(0.25, 4), hi = rate(0.75, 4);
    /* E[N] = 1 + a + a^2 + a^3 + a^4 */
    CHECK_NEAR(spec_expected_tokens(&lo, 4), 1.33203125, 1e-12);
    CHECK_NEAR(spec_expected_tokens(&hi, 4), 3.05078125, 1e-12);
    /* a 26.26 ms verify round plus a 0.1 ms lookup draft: 19.8 and 8.64 ms */
    CHECK_NEAR(spec_time_per_token(&lo, 4, 26.36), 19.79, 0.005);
    CHECK_NEAR(spec_time_per_token(&hi, 4, 26.36), 8.64, 0.005);
    /* per-position rates multiply */
    SpecCfg pos = {.enabled = 1, .draft_len = 3, .n_rates = 3, .rates = {0.9, 0.5, 0.1}};
    CHECK_NEAR(spec_expected_tokens(&pos, 3), 1 + 0.9 + 0.45 + 0.045, 1e-12);
    /* an empirical distribution of accepted counts: E = 1 + E[min(K, m)] */
    SpecCfg emp = {.enabled = 1, .draft_len = 2, .n_counts = 4, .counts = {1, 1, 1, 1}};
    CHECK_NEAR(spec_expected_tokens(&emp, 2), 1 + (0 + 1 + 2 + 2) / 4.0, 1e-12);
}

static void test_exercise_8_7(void)
{
    /* a = 3/4, T_m = 26.3 + 3.6 m ms */
    SpecCfg c = rate(0.75, 8);
    const uint32_t ms[4] = {1, 2, 4, 8};
    const double want[4] = {29.9 / 1.75, 33.5 / 2.3125, 40.7 / 3.05078125, 55.1 / 3.69966125488};
    for (int i = 0; i < 4; i++) CHECK_NEAR(spec_time_per_token(&c, ms[i], 26.3 + 3.6 * ms[i]), want[i], 1e-6);
    CHECK_NEAR(want[0], 17.0857, 1e-4);
    CHECK_NEAR(want[2], 13.3408, 1e-4);
    /* grouped execution, 4 ceil(m/4) rows: m = 5 pays for 8 rows and loses to 4 */
    double t4 = spec_time_per_token(&c, 4, 26.3 + 3.6 * 4), t5 = spec_time_per_token(&c, 5, 26.3 + 3.6 * 8);
    CHECK(t4 < t5);
    CHECK_NEAR(t5, 55.1 / 3.28808593750, 1e-6);
    /* ungrouped, m = 4 is the optimum: one draft more or less costs more per
     * token than it adds (Delta T / Delta N versus T / N) */
    CHECK(spec_time_per_token(&c, 5, 26.3 + 3.6 * 5) > t4);
    CHECK(spec_time_per_token(&c, 3, 26.3 + 3.6 * 3) > t4);
}

static void test_rejection_sampler(void)
{
    gsl_rng *r = rng_stream(7, 99);
    const double p[2] = {0.6, 0.4}, q[2] = {0.8, 0.2};
    double out[2] = {0}, wrong[2] = {0}, prop0 = 0, acc0 = 0;
    const int n = 1000000;
    for (int i = 0; i < n; i++) {
        int ok;
        size_t x;
        out[spec_verify_exact(p, q, 2, r, &ok, &x)]++;
        if (x == 0) {
            prop0++;
            acc0 += ok;
        }
        wrong[spec_verify_resample_p(p, q, 2, r, &ok, &x)]++;
    }
    CHECK_NEAR(out[0] / n, 0.6, 0.002);
    CHECK_NEAR(out[1] / n, 0.4, 0.002);
    CHECK_NEAR(acc0 / prop0, 0.75, 0.002);       /* accept Paris with 0.6 / 0.8 */
    CHECK_NEAR(wrong[0] / n, 0.72, 0.002);       /* 0.6 + 0.2 x 0.6: biased */
    CHECK(fabs(wrong[0] / n - out[0] / n) > 0.1);
    double res[2];
    CHECK_NEAR(spec_residual(p, q, 2, res), 0.2, 1e-12);
    CHECK_NEAR(res[0], 0, 1e-12);
    CHECK_NEAR(res[1], 1, 1e-12);
    /* the exercise: p = [0.3, 0.7], q = [0.6, 0.4]: acceptance [0.5, 1], residual [0, 1] */
    const double p2[2] = {0.3, 0.7}, q2[2] = {0.6, 0.4};
    double o2[2] = {0}, pr[2] = {0}, ac[2] = {0};
    for (int i = 0; i < n; i++) {
        int ok;
        size_t x;
        o2[spec_verify_exact(p2, q2, 2, r, &ok, &x)]++;
        pr[x]++;
        ac[x] += ok;
    }
    CHECK_NEAR(ac[0] / pr[0], 0.5, 0.003);
    CHECK_NEAR(ac[1] / pr[1], 1.0, 1e-12);
    CHECK_NEAR(o2[0] / n, 0.3, 0.002);
    spec_residual(p2, q2, 2, res);
    CHECK_NEAR(res[0], 0, 1e-12);
    CHECK_NEAR(res[1], 1, 1e-12);
    /* p == q: every proposal accepted */
    double acc_all = 0;
    for (int i = 0; i < 10000; i++) {
        int ok;
        spec_verify_exact(p, p, 2, r, &ok, NULL);
        acc_all += ok;
    }
    CHECK_INT((int)acc_all, 10000);
    /* greedy: the first mismatch ends the accepted prefix */
    const uint32_t d[4] = {5, 6, 9, 8}, t[4] = {5, 6, 7, 8};
    CHECK_INT(spec_verify_greedy(d, t, 4), 2);
    gsl_rng_free(r);
}

/* Requests one at a time, each 2048 in and 1001 out, verify rounds of
 * 26.26 ms and a 0.1 ms lookup draft: the per-token time converges to
 * 26.36 / E[N]. */
static void test_simulated_rounds_converge(void)
{
    const double a[2] = {0.25, 0.75};
    for (int k = 0; k < 2; k++) {
        static char text[2048];
        snprintf(text, sizeof text,
                 "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\","
                 " \"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 26.26, \"per_token_us\": 0},"
                 " \"scheduler\": {\"kind\": \"static\", \"max_running\": 1}, \"kv\": {\"capacity_gib\": 8},"
                 " \"speculation\": {\"method\": \"lookup\", \"draft_len\": 4, \"accept\": %g, \"draft_ms\": 0.1},"
                 " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 0.01, \"count\": 60,"
                 " \"prompt_tokens\": 2048, \"output_tokens\": 1001}, \"seed\": 3}", a[k]);
        Scenario s;
        Err e = {0};
        CHECK(scenario_load_text(text, "spec.json", 0, 0, &s, &e) == 0);
        if (th_failures) {
            fprintf(stderr, "  %s\n", e.msg);
            return;
        }
        Cluster *c = cluster_new(&s, NULL, &e);
        CHECK(c && cluster_run(c, &e) == 0);
        double sum = 0;
        for (uint32_t i = 0; i < s.wl.n; i++) sum += metrics_tpot_s(&s.wl.reqs[i]);
        double ms = sum / s.wl.n * 1e3, want = 26.36 / spec_expected_tokens(&(SpecCfg){.n_rates = 1, .rates = {a[k]}}, 4);
        CHECK_NEAR(ms, want, want * 0.02);
        const EngineStats *st = engine_stats(cluster_engine(c, 0));
        CHECK_NEAR((double)st->spec_emitted / st->spec_rounds, want > 10 ? 1.332 : 3.05, 0.05);
        /* drafts are never proposed past the last token: at most 4 a round */
        CHECK(st->spec_drafted <= st->spec_rounds * 4 && st->spec_drafted >= st->spec_rounds * 4 - 10 * 60);
        for (uint32_t i = 0; i < s.wl.n; i++) CHECK_INT(s.wl.reqs[i].generated, 1001);
        cluster_free(c);
        scenario_free(&s);
    }
}

/* ------------------------------------------- the design board (8.6.3) */

static double board(double prefill_s, double round_s, const SpecCfg *spec, uint32_t out_tokens)
{
    SimRun *R = calloc(1, sizeof *R);
    for (uint32_t i = 0; i < 16; i++) {
        request_init(&R->reqs[i]);
        snprintf(R->names[i], sizeof R->names[i], "b%u", i);
        R->reqs[i].id = R->names[i];
        /* the 2048 tokens after the 6144-token shared prefix */
        R->reqs[i].prompt_tokens = 2048;
        R->reqs[i].output_tokens = out_tokens;
    }
    EngineConfig cfg = {0};
    Err e;
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = 16};
    KvConfig kc = {.capacity_bytes = 12 * GIB, .block_tokens = 16, .bytes_per_token = 147456,
                   .reserve = KV_RESERVE_FINAL};
    sched_new(&sc, &cfg.sched, &e);
    kv_pool_new(&kc, &cfg.kv, &e);
    cost_phase_new(prefill_s, round_s, &cfg.cost, &e); /* the chapter's stated costs */
    if (spec) {
        SpecEngineCfg sp = {.dflt = *spec, .seed = 1};
        spec_policy_new(&sp, &cfg.spec, &e);
        cfg.has_spec = 1;
    }
    Engine *eng = engine_new(R->reqs, 16, &cfg, &e);
    double t = -1;
    if (eng && engine_run(eng, &e) == 0) {
        t = 0;
        for (int i = 0; i < 16; i++) t = fmax(t, (double)R->reqs[i].t_finish_ns / 1e9);
    }
    engine_free(eng);
    free(R);
    return t;
}

static void test_design_board(void)
{
    /* B: shared prefix, prefill 2.04 s, rounds of 27.35 ms: 9.01 s */
    CHECK_NEAR(board(2.04, 0.02735, NULL, 256), 2.04 + 255 * 0.02735, 1e-6);
    CHECK_NEAR(board(2.04, 0.02735, NULL, 256), 9.01, 0.01);
    /* D: + DFlash drafts (8 positions verified, ~3 tokens a round), prefill
     * 9.4% longer (2.23 s), rounds still 27.35 ms: about 4.56 s */
    SpecCfg d = {.enabled = 1, .method = SPEC_PARALLEL, .draft_len = 7, .n_counts = 3, .counts = {0, 0, 1}};
    double tD = board(2.23, 0.02735, &d, 256);
    CHECK_NEAR(tD, 2.23 + 85 * 0.02735, 1e-6);
    CHECK_NEAR(tD, 4.56, 0.01);
    /* E: context-lookup drafts, 2 tokens a round, 27.35 + 0.1 ms: within 7 s */
    SpecCfg x = {.enabled = 1, .method = SPEC_LOOKUP, .draft_len = 4, .n_counts = 2, .counts = {0, 1}, .draft_s = 1e-4};
    double tE = board(2.04, 0.02735, &x, 256);
    /* 127 rounds of 2 tokens, then the last token as a plain decode */
    CHECK_NEAR(tE, 2.04 + 127 * 0.02745 + 0.02735, 1e-6);
    CHECK_NEAR(tE, 5.55, 0.005);
    CHECK(tE < 7.0);
    /* 16-token outputs: B 2.45 s, D 2.37 s -- the draft model's longer
     * prefill eats most of the 10 saved rounds */
    double b16 = board(2.04, 0.02735, NULL, 16), d16 = board(2.23, 0.02735, &d, 16);
    CHECK_NEAR(b16, 2.45, 0.005);
    CHECK_NEAR(d16, 2.37, 0.005);
    CHECK((b16 - d16) / b16 < 0.05);
    CHECK((9.01 - tD) / 9.01 > 0.45);
}

static void test_spec_with_real_costs(void)
{
    /* a draft model on the same GPU: its weights and KV shrink the pool,
     * its forwards cost time; a batch threshold turns speculation off */
    const char *text =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\"},"
        " \"engine\": {\"cuda_graph_sizes\": [1, 2, 4, 8, 16, 32, 64]},"
        " \"speculation\": {\"method\": \"draft_model\", \"draft_model\": \"qwen3-0.6b\", \"draft_len\": 4,"
        "  \"accept\": [0.9, 0.8, 0.7, 0.6], \"max_running\": 8},"
        " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 20, \"count\": 200,"
        "  \"prompt_tokens\": 512, \"output_tokens\": 128}, \"seed\": 2}";
    Scenario s, plain;
    Err e = {0};
    CHECK(scenario_load_text(text, "draft.json", 0, 0, &s, &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    CHECK_NEAR(s.kv.bytes_per_token, 147456 + 114688, 0);
    Cluster *c = cluster_new(&s, NULL, &e);
    CHECK(c && cluster_run(c, &e) == 0);
    const EngineStats *st = engine_stats(cluster_engine(c, 0));
    CHECK(st->spec_rounds > 0);
    CHECK(st->spec_draft_s > 0);
    CHECK_INT(st->finished, 200);
    /* rounds happened only while at most 8 requests ran: fewer rounds than
     * decode steps overall */
    CHECK(st->spec_emitted < 200 * 127);
    double rate_acc = (double)st->spec_accepted / st->spec_drafted;
    CHECK(rate_acc > 0.3 && rate_acc < 0.9);
    cluster_free(c);
    scenario_free(&s);
    /* bad input: a rate outside [0, 1] */
    CHECK(scenario_load_text("{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"static\"},"
                             " \"speculation\": {\"method\": \"lookup\", \"draft_len\": 4, \"accept\": 1.5},"
                             " \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1}]}}",
                             "bad.json", 0, 0, &plain, &e) < 0);
    CHECK_CONTAINS(e.msg, "bad.json: speculation.accept: got 1.5");
}

void suite_spec(void);
void suite_spec(void)
{
    RUN(test_expected_tokens);
    RUN(test_exercise_8_7);
    RUN(test_rejection_sampler);
    RUN(test_simulated_rounds_converge);
    RUN(test_design_board);
    RUN(test_spec_with_real_costs);
}
