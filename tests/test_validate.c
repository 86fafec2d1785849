/*
 * test_validate.c -- engine profiles, the benchmark client and `servesim
 * validate` (issue 12):
 *  - an engine profile changes the schedule as documented: TensorRT-LLM
 *    (whole prompts within max_num_tokens 8192) vs vLLM (chunked at its
 *    8192-token budget);
 *  - an FP8 checkpoint runs with an FP8 KV cache under every engine, which
 *    doubles the KV capacity in tokens;
 *  - the KV memory rules (vLLM total fraction, TensorRT-LLM free fraction);
 *  - the warm-up barrier holds the measured requests until the last
 *    warm-up response;
 *  - the request overhead adds to TTFT and E2E and delays a closed-loop
 *    client's next request;
 *  - validate lists rows it cannot model with the reason, never drops
 *    them, and gives the same numbers with 1 and 2 worker processes;
 *  - the benchmark's reused dataset entries (aiperf --num-dataset-entries)
 *    hit an engine's default prefix cache, and a scenario can turn it off;
 *  - a Qwen3 "fp8" row runs the block-scaled FP8 of its published
 *    checkpoint;
 *  - several files validate as one file of all their rows; leave-one-
 *    engine-out leaves the whole engine family out of the fit; --bands
 *    writes the stored band and merges it into an existing one (issue 34).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "jsonio.h"
#include "outfile.h"
#include "scenario.h"
#include "testhelp.h"
#include "validate.h"
#include "vrows.h"

static int load(const char *text, Scenario *s)
{
    Err e = {0};
    int rc = scenario_load_text(text, "t.json", 0, 0, s, &e);
    if (rc < 0) fprintf(stderr, "  %s\n", e.msg);
    return rc;
}

/* Runs a single-replica scenario; returns the engine (caller frees) and
 * fills the summary. */
static Engine *run1(Scenario *s, Summary *sum)
{
    Err e = {0};
    Engine *eng = scenario_engine(s, NULL, &e);
    if (!eng) {
        fprintf(stderr, "  %s\n", e.msg);
        return NULL;
    }
    if (engine_run(eng, &e) < 0) fprintf(stderr, "  %s\n", e.msg);
    Slo tab[METRICS_CLS_MAX];
    MetricsCfg mc;
    RunData rd;
    scenario_metrics_cfg(s, &mc, tab, METRICS_CLS_MAX);
    scenario_rundata(s, eng, &rd);
    metrics_summarize(&mc, &rd, sum);
    return eng;
}

/* The three runs of a comparison test: their engines and scenarios. */
static void free_runs3(Engine *ea, Engine *eb, Engine *ec, Scenario *a, Scenario *b, Scenario *c)
{
    engine_free(ea);
    engine_free(eb);
    engine_free(ec);
    scenario_free(a);
    scenario_free(b);
    scenario_free(c);
}


#define FOUR_LONG                                                                                         \
    "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 6000, \"output_tokens\": 4},"  \
    "{\"arrival_ms\": 0, \"prompt_tokens\": 6000, \"output_tokens\": 4},"                                 \
    "{\"arrival_ms\": 0, \"prompt_tokens\": 6000, \"output_tokens\": 4}]}"

static void test_engine_profile_schedule(void)
{
    /* TensorRT-LLM: no chunking; a second 6000-token prompt does not fit
     * the first iteration's 8192 tokens, so it waits whole */
    Scenario s;
    Summary sum;
    CHECK(load("{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"trtllm\", " FOUR_LONG "}",
               &s) == 0);
    CHECK_INT(s.sched.kind, SCHED_CONTINUOUS);
    CHECK_INT(s.sched.max_num_tokens, 8192);
    CHECK_INT(s.sched.max_running, 2048);
    Engine *eng = run1(&s, &sum);
    CHECK(eng != NULL);
    uint64_t n = 0;
    const IterRecord *it = eng ? engine_iterations(eng, &n) : NULL;
    CHECK(n >= 3);
    if (it && n >= 3) {
        CHECK_INT(it[0].n_prefill, 1);
        CHECK_INT(it[0].prefill_tokens, 6000);
        CHECK_INT(it[1].n_prefill, 1); /* the second prompt, whole, beside the first's decode */
        CHECK_INT(it[1].prefill_tokens, 6000);
        CHECK_INT(it[1].n_decode, 1);
    }
    engine_free(eng);
    scenario_free(&s);

    /* vLLM: chunked prefill at an 8192-token budget: the first iteration
     * takes the first prompt and a 2192-token chunk of the second */
    CHECK(load("{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", " FOUR_LONG "}",
               &s) == 0);
    CHECK_INT(s.sched.kind, SCHED_CHUNKED);
    CHECK_INT(s.sched.token_budget, 8192);
    CHECK_INT(s.sched.max_running, 1024);
    CHECK_INT(s.wrap.n_sizes, 51);
    eng = run1(&s, &sum);
    it = eng ? engine_iterations(eng, &n) : NULL;
    CHECK(n >= 2);
    if (it && n >= 2) {
        CHECK_INT(it[0].n_prefill, 2);
        CHECK_INT(it[0].prefill_tokens, 8192);
        /* the first decodes (1 token of the budget); the rest of #2 and a chunk of #3 */
        CHECK_INT(it[1].n_decode, 1);
        CHECK_INT(it[1].prefill_tokens, 8191);
    }
    engine_free(eng);
    scenario_free(&s);

    /* a scenario's own scheduler wins over the engine's */
    CHECK(load("{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
               "\"scheduler\": {\"kind\": \"chunked\", \"token_budget\": 512}, " FOUR_LONG "}",
               &s) == 0);
    CHECK_INT(s.sched.token_budget, 512);
    scenario_free(&s);
}

static void test_fp8_checkpoint_kv(void)
{
    /* the same FP8 checkpoint: BF16 KV when the scenario says so, FP8 KV by
     * the engine's rule -- twice the tokens in the same bytes */
    const char *eng[] = {"trtllm", "vllm", "sglang"};
    for (int k = 0; k < 3; k++) {
        char text[1024];
        Scenario a, b;
        snprintf(text, sizeof text,
                 "{\"model\": {\"base\": \"llama-3.1-70b\", \"dtype\": \"fp8\"}, \"hardware\": \"h200-sxm\", "
                 "\"engine\": \"%s\", \"kv\": {\"dtype\": \"bf16\"}, " FOUR_LONG "}", eng[k]);
        CHECK(load(text, &a) == 0);
        snprintf(text, sizeof text,
                 "{\"model\": {\"base\": \"llama-3.1-70b\", \"dtype\": \"fp8\"}, \"hardware\": \"h200-sxm\", "
                 "\"engine\": \"%s\", " FOUR_LONG "}", eng[k]);
        CHECK(load(text, &b) == 0);
        CHECK_INT(a.kv_dtype, DTYPE_BF16);
        CHECK_INT(b.kv_dtype, DTYPE_FP8);
        CHECK_NEAR(a.kv.bytes_per_token, 327680, 0); /* 2 x 80 layers x 8 heads x 128 x 2 B */
        CHECK_NEAR(b.kv.bytes_per_token, 163840, 0);
        CHECK_NEAR(b.kv.capacity_bytes / b.kv.bytes_per_token, 2 * a.kv.capacity_bytes / a.kv.bytes_per_token, 1e-6);
        scenario_free(&a);
        scenario_free(&b);
    }
    /* a BF16 checkpoint keeps a BF16 cache */
    Scenario c;
    CHECK(load("{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"trtllm\", " FOUR_LONG "}",
               &c) == 0);
    CHECK_INT(c.kv_dtype, DTYPE_BF16);
    scenario_free(&c);
}

static void test_kv_memory_rules(void)
{
    /* H200: 143,165 MiB as CUDA reports it; reserve 3.5 GiB; Llama-3.1-8B BF16 weights */
    Scenario v, t;
    CHECK(load("{\"model\": \"llama-3.1-8b\", \"hardware\": \"h200-sxm\", \"engine\": \"vllm\", " FOUR_LONG "}",
               &v) == 0);
    CHECK(load("{\"model\": \"llama-3.1-8b\", \"hardware\": \"h200-sxm\", \"engine\": \"trtllm\", " FOUR_LONG "}",
               &t) == 0);
    double mem = 143165.0 * MIB, reserve = 3.5 * GIB, w = dtype_bytes(DTYPE_BF16, (double)v.model.params);
    CHECK_REL(v.kv.capacity_bytes, 0.9 * mem - w - reserve, 1e-12);
    CHECK_REL(t.kv.capacity_bytes, 0.9 * (mem - w - reserve), 1e-12);
    scenario_free(&v);
    scenario_free(&t);
}

#define BENCH(warm)                                                                                            \
    "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\", "  \
    "\"max_running\": 64}, \"workload\": {\"kind\": \"closed_loop\", \"clients\": 3, \"count\": 9, "          \
    "\"warmup_requests\": " #warm ", \"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 100, \"max\": 3000}, " \
    "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 2, \"max\": 60}}, \"metrics\": {\"warmup_requests\": " #warm "}}"

static void test_warmup_barrier(void)
{
    Scenario s;
    Summary sum;
    CHECK(load(BENCH(4), &s) == 0);
    CHECK_INT(s.barrier_members, 4);
    CHECK_INT(s.barrier.n_waiters, 3);
    Engine *eng = run1(&s, &sum);
    CHECK(eng != NULL);
    int64_t last_warm = 0, first_measured = INT64_MAX;
    uint32_t warm = 0, measured = 0;
    for (uint32_t i = 0; i < s.wl.n; i++) {
        const Request *r = &s.wl.reqs[i];
        CHECK_INT(r->state, REQ_FINISHED);
        if (r->barrier_member) {
            warm++;
            if (r->t_finish_ns > last_warm) last_warm = r->t_finish_ns;
        } else {
            measured++;
            if (r->t_arrive_ns < first_measured) first_measured = r->t_arrive_ns;
        }
    }
    CHECK_INT(warm, 4);
    CHECK_INT(measured, 5);
    /* profiling starts at the last warm-up response, not before */
    CHECK_INT(first_measured, last_warm);
    /* the three clients start the measured phase together */
    uint32_t at_barrier = 0;
    for (uint32_t i = 0; i < s.wl.n; i++) at_barrier += s.wl.reqs[i].t_arrive_ns == last_warm;
    CHECK_INT(at_barrier, 3);
    CHECK_INT(sum.ttft_s.n, 5); /* only the measured requests count */
    engine_free(eng);
    scenario_free(&s);
}

static void test_request_overhead(void)
{
    /* one client, two requests: the overhead adds to TTFT and E2E and the
     * second request reaches the engine before+after later */
    const char *fmt = "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": {\"base\": \"vllm\", "
                      "\"request_overhead\": {\"before_us\": %d, \"after_us\": %d}}, "
                      "\"workload\": {\"kind\": \"closed_loop\", \"clients\": 1, \"count\": 2, \"prompt_tokens\": 500, "
                      "\"output_tokens\": 10}}";
    char text[1024];
    Scenario a, b;
    Summary sa, sb;
    snprintf(text, sizeof text, fmt, 0, 0);
    CHECK(load(text, &a) == 0);
    snprintf(text, sizeof text, fmt, 30000, 5000);
    CHECK(load(text, &b) == 0);
    Engine *ea = run1(&a, &sa), *eb = run1(&b, &sb);
    CHECK(ea && eb);
    CHECK_NEAR(sb.ttft_s.mean - sa.ttft_s.mean, 0.035, 1e-9);
    CHECK_NEAR(sb.e2e_s.mean - sa.e2e_s.mean, 0.035, 1e-9);
    CHECK_NEAR(sb.tpot_s.mean, sa.tpot_s.mean, 1e-12);
    /* the second request: arrives 35 ms after the first one finished */
    const Request *b0 = &b.wl.reqs[0], *b1 = &b.wl.reqs[1];
    CHECK_INT(b1->t_arrive_ns - b0->t_finish_ns, 35000000);
    engine_free(ea);
    engine_free(eb);
    scenario_free(&a);
    scenario_free(&b);
}

/* The serial front end (engprof.h "front_end", engine.h fe_serial).
 * Per request: three requests sent at 0 pass it one at a time, 20 ms
 * each, so they reach the scheduler at 20, 40 and 60 ms and each one's
 * TTFT holds its wait (from the send, t_arrive_ns, which stays 0).  Per
 * token: one client, two requests of 50 tokens at 20 ms a streamed token:
 * the first request's 49 decode tokens are 980 ms of the front end's
 * work, queued from its send at 0, so the second request -- sent when the
 * first finished, long before -- reaches the scheduler at exactly 980 ms.
 * Saturated: 32 clients, 100 tokens each, 1 ms a token: the front end
 * streams 1,000 tokens a second, so the loop completes 1,000 / 99 requests
 * a second whatever the GPU could do.  Bad front ends are named. */
static void test_front_end(void)
{
    const char *fmt = "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": {\"base\": \"vllm\", "
                      "\"request_overhead\": {\"before_us\": 0}, \"front_end\": %s}, \"workload\": %s}";
    char text[1400];
    Scenario a, b, c, d;
    Summary sa, sb, sc, sd;
    snprintf(text, sizeof text, fmt, "{\"per_request_us\": 20000}",
             "{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 2},"
             " {\"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 2},"
             " {\"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 2}]}");
    CHECK(load(text, &a) == 0);
    Engine *ea = run1(&a, &sa);
    CHECK(ea != NULL);
    Slo tab[METRICS_CLS_MAX];
    MetricsCfg mc;
    scenario_metrics_cfg(&a, &mc, tab, METRICS_CLS_MAX);
    for (uint32_t i = 0; i < 3; i++) {
        const Request *r = &a.wl.reqs[i];
        CHECK_INT(r->t_arrive_ns, 0);
        CHECK_INT(r->fe_wait_ns, 20000000LL * (i + 1));
        CHECK_INT(metrics_ttft_ns(&mc, r), r->t_first_token_ns); /* sent at 0 */
        CHECK(r->t_first_sched_ns >= r->fe_wait_ns);
    }
    /* a turn that grows with the prompt: 5 ms + 100 us per prompt token,
     * prompts of 100, 300 and 50 tokens queued at 0: turns 15, 35, 10 ms */
    {
        Scenario pp;
        Summary sp;
        snprintf(text, sizeof text, fmt, "{\"per_request_us\": 5000, \"per_prompt_token_us\": 100}",
                 "{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 2},"
                 " {\"arrival_ms\": 0, \"prompt_tokens\": 300, \"output_tokens\": 2},"
                 " {\"arrival_ms\": 0, \"prompt_tokens\": 50, \"output_tokens\": 2}]}");
        CHECK(load(text, &pp) == 0);
        Engine *ep = run1(&pp, &sp);
        CHECK(ep != NULL);
        if (ep) {
            CHECK_INT(pp.wl.reqs[0].fe_wait_ns, 15000000LL);
            CHECK_INT(pp.wl.reqs[1].fe_wait_ns, 50000000LL);
            CHECK_INT(pp.wl.reqs[2].fe_wait_ns, 60000000LL);
            engine_free(ep);
        }
        scenario_free(&pp);
        /* a negative time is refused, naming the key */
        snprintf(text, sizeof text, fmt, "{\"per_prompt_token_us\": -1}",
                 "{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 10, \"output_tokens\": 2}]}");
        Err pe = {0};
        CHECK(scenario_load_text(text, "fe.json", 0, 0, &pp, &pe) < 0);
        CHECK_CONTAINS(pe.msg, "per_prompt_token_us");
    }
    /* the same requests run again (a sweep's next point): the front end
     * starts afresh and the arrivals are the workload's */
    Summary sa2;
    Engine *ea2 = run1(&a, &sa2);
    CHECK(ea2 != NULL);
    CHECK_NEAR(sa2.ttft_s.mean, sa.ttft_s.mean, 0);
    CHECK_INT(a.wl.reqs[2].fe_wait_ns, 60000000LL);
    engine_free(ea2);
    /* one client, every response its 50 tokens (no end spread): the
     * front end's 49 x 20 ms of b0's streamed tokens hold b1 at its door */
    snprintf(text, sizeof text,
             "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": {\"base\": \"vllm\", "
             "\"request_overhead\": {\"before_us\": 0, \"end_spread_tokens\": 0}, \"front_end\": "
             "{\"per_token_us\": 20000}}, \"workload\": {\"kind\": \"closed_loop\", \"clients\": 1, \"count\": 2, "
             "\"prompt_tokens\": 200, \"output_tokens\": 50}}");
    CHECK(load(text, &b) == 0);
    Engine *eb = run1(&b, &sb);
    CHECK(eb != NULL);
    const Request *b0 = &b.wl.reqs[0], *b1 = &b.wl.reqs[1];
    CHECK_INT(b0->fe_wait_ns, 0);
    CHECK(b0->t_finish_ns < 980000000LL);
    CHECK_INT(b1->t_arrive_ns, b0->t_finish_ns);
    CHECK_INT(b1->fe_wait_ns, 980000000LL - b0->t_finish_ns);
    CHECK(b1->t_first_sched_ns >= 980000000LL);
    scenario_metrics_cfg(&b, &mc, tab, METRICS_CLS_MAX);
    CHECK_INT(metrics_ttft_ns(&mc, b1), b1->t_first_token_ns - b0->t_finish_ns);
    /* saturated, against the same loop with no front end */
    const char *loop = "{\"kind\": \"closed_loop\", \"clients\": 32, \"count\": 640, \"prompt_tokens\": 200, "
                       "\"output_tokens\": 100}";
    snprintf(text, sizeof text, fmt, "{\"per_token_us\": 1000}", loop);
    CHECK(load(text, &c) == 0);
    snprintf(text, sizeof text, fmt, "false", loop);
    CHECK(load(text, &d) == 0);
    Engine *ec = run1(&c, &sc), *ed = run1(&d, &sd);
    CHECK(ec && ed);
    CHECK(sd.requests_per_s > 2 * 1000.0 / 99); /* the GPU alone: 26.5 a second */
    CHECK_NEAR(sc.requests_per_s, 1000.0 / 99, 0.02 * 1000.0 / 99);
    CHECK(sc.ttft_s.mean > 1.0);     /* the clients wait at its door ... */
    CHECK_NEAR(sc.tpot_s.mean, sd.tpot_s.mean, 0.5 * sd.tpot_s.mean); /* ... not between tokens */
    engine_free(ea);
    engine_free(eb);
    engine_free(ec);
    engine_free(ed);
    scenario_free(&a);
    scenario_free(&b);
    scenario_free(&c);
    scenario_free(&d);
    /* bad input */
    Err e = {0};
    Scenario x;
    snprintf(text, sizeof text, fmt, "3", loop);
    CHECK(scenario_load_text(text, "t.json", 0, 0, &x, &e) < 0);
    CHECK(strstr(e.msg, "front_end") != NULL);
    snprintf(text, sizeof text, fmt, "{\"per_token_us\": -1}", loop);
    CHECK(scenario_load_text(text, "t.json", 0, 0, &x, &e) < 0);
    CHECK(strstr(e.msg, "per_token_us") != NULL);
    snprintf(text, sizeof text, fmt, "{\"per_tokens_us\": 1}", loop);
    CHECK(scenario_load_text(text, "t.json", 0, 0, &x, &e) < 0);
    CHECK(strstr(e.msg, "per_tokens_us") != NULL);
}

/* iter_overhead.per_layer (engprof.h): the three constants are per
 * transformer layer, so Llama-3.1-8B (32 layers) at 10 us + 0.5 us a
 * sequence + 2 us a GPU per layer runs exactly as 320 us + 16 us + 64 us
 * per step; the same numbers per step make every iteration 310 us + 15.5
 * us a sequence + 62 us shorter (TP 2: one extra GPU).  A per_layer that is
 * not true or false is named. */
static void test_iter_overhead_per_layer(void)
{
    const char *fmt = "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"tp\": 2, \"engine\": {\"base\": \"trtllm\", "
                      "\"iter_overhead\": {\"base_us\": %s, \"per_seq_us\": %s, \"per_gpu_us\": %s, \"per_layer\": %s}}, "
                      "\"workload\": {\"kind\": \"closed_loop\", \"clients\": 3, \"count\": 12, \"prompt_tokens\": 400, "
                      "\"output_tokens\": 30}}";
    char text[1024];
    Scenario a, b, c;
    Summary sa, sb, sc;
    snprintf(text, sizeof text, fmt, "10", "0.5", "2", "true");
    CHECK(load(text, &a) == 0);
    snprintf(text, sizeof text, fmt, "320", "16", "64", "false");
    CHECK(load(text, &b) == 0);
    snprintf(text, sizeof text, fmt, "10", "0.5", "2", "false");
    CHECK(load(text, &c) == 0);
    CHECK_INT(a.model.layers, 32);
    Engine *ea = run1(&a, &sa), *eb = run1(&b, &sb), *ec = run1(&c, &sc);
    CHECK(ea && eb && ec);
    CHECK_NEAR(sa.ttft_s.mean, sb.ttft_s.mean, 1e-12);
    CHECK_NEAR(sa.tpot_s.mean, sb.tpot_s.mean, 1e-12);
    CHECK_NEAR(sa.e2e_s.mean, sb.e2e_s.mean, 1e-12);
    /* three clients decoding together: a step is 310 + 3 x 15.5 + 62 us
     * longer per layer-scaled constants than per-step ones */
    CHECK(sa.tpot_s.mean - sc.tpot_s.mean > 0.9 * (310 + 3 * 15.5 + 62) * 1e-6);
    CHECK(sa.tpot_s.mean - sc.tpot_s.mean < 1.0 * (310 + 3 * 15.5 + 62) * 1e-6 + 1e-9);
    free_runs3(ea, eb, ec, &a, &b, &c);
    Err e = {0};
    snprintf(text, sizeof text, fmt, "10", "0.5", "2", "1");
    CHECK(scenario_load_text(text, "layer.json", 0, 0, &a, &e) < 0);
    CHECK(strstr(e.msg, "per_layer") != NULL && strstr(e.msg, "true or false") != NULL);
}

/* request_overhead.end_spread_tokens (engprof.h): every request of a
 * closed loop generates its length +- up to d tokens (uniform), drawn from
 * the seed, so the clients that started together end in different
 * iterations; 0 leaves the lengths as they are, an open-loop workload is
 * never touched, and the engine's bad value is named. */
static void test_end_spread(void)
{
    const char *fmt = "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"seed\": %d, \"engine\": {\"base\": \"trtllm\", "
                      "\"request_overhead\": {\"end_spread_tokens\": %s}}, \"workload\": %s}";
    const char *closed = "{\"kind\": \"closed_loop\", \"clients\": 4, \"count\": 400, \"warmup_requests\": 8, "
                         "\"prompt_tokens\": 300, \"output_tokens\": 20}";
    const char *open = "{\"kind\": \"poisson\", \"rate_per_s\": 5, \"count\": 50, \"prompt_tokens\": 300, "
                       "\"output_tokens\": 20}";
    char text[1024];
    Scenario a, b, c, d;
    snprintf(text, sizeof text, fmt, 7, "3", closed);
    CHECK(load(text, &a) == 0);
    snprintf(text, sizeof text, fmt, 7, "3", closed);
    CHECK(load(text, &b) == 0);
    snprintf(text, sizeof text, fmt, 8, "0", closed);
    CHECK(load(text, &c) == 0);
    snprintf(text, sizeof text, fmt, 7, "3", open);
    CHECK(load(text, &d) == 0);
    uint32_t seen[7] = {0}, same = 0;
    double sum = 0;
    CHECK_INT(a.wl.n, 400);
    for (uint32_t i = 0; i < a.wl.n; i++) {
        int k = (int)a.wl.reqs[i].output_tokens - 20;
        CHECK(k >= -3 && k <= 3);
        if (k >= -3 && k <= 3) seen[k + 3]++;
        sum += k;
        CHECK_INT(a.wl.reqs[i].max_output_tokens, a.wl.reqs[i].output_tokens);
        same += a.wl.reqs[i].output_tokens == b.wl.reqs[i].output_tokens;
    }
    for (int k = 0; k < 7; k++) CHECK(seen[k] > 30); /* each of the 7 values about 57 times */
    CHECK(fabs(sum / a.wl.n) < 0.3);                  /* centred: the mean length stays 20 */
    CHECK_INT(same, 400);                             /* the same seed, the same lengths */
    for (uint32_t i = 0; i < c.wl.n; i++) CHECK_INT(c.wl.reqs[i].output_tokens, 20);
    for (uint32_t i = 0; i < d.wl.n; i++) CHECK_INT(d.wl.reqs[i].output_tokens, 20);
    scenario_free(&a);
    scenario_free(&b);
    scenario_free(&c);
    scenario_free(&d);
    Err e = {0};
    snprintf(text, sizeof text, fmt, 7, "1.5", closed);
    CHECK(scenario_load_text(text, "spread.json", 0, 0, &a, &e) < 0);
    CHECK(strstr(e.msg, "end_spread_tokens") != NULL);
    snprintf(text, sizeof text, fmt, 7, "5000", closed);
    CHECK(scenario_load_text(text, "spread.json", 0, 0, &a, &e) < 0);
    CHECK(strstr(e.msg, "end_spread_tokens") != NULL && strstr(e.msg, "5000") != NULL);
}

/* An engine's exposed large all-reduce (engprof.h "large_allreduce"): an
 * iteration of more than above_tokens tokens pays its all-reduce traffic
 * again at link_fraction of the link -- Qwen3-8B (36 layers, hidden 4096)
 * at TP 2 on H100 (450 GB/s a direction): 2 x 36 x 4096 x 2 B x 2 (2-1)/2
 * = 589,824 B a token at half the link, 2.62144 us; nothing at or below
 * the threshold. */
static void test_large_allreduce(void)
{
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"tp\": 2, "
                      "\"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 10, \"per_token_us\": 100, \"per_pair_ns\": 0}, "
                      "\"scheduler\": {\"kind\": \"continuous\"}, \"engine\": {\"large_allreduce\": {\"above_tokens\": %d, \"link_fraction\": %s}}, "
                      "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 200, \"output_tokens\": 2}]}}";
    char text[1024];
    Scenario a, b, c;
    Summary sa, sb, sc;
    snprintf(text, sizeof text, fmt, 100, "0");
    CHECK(load(text, &a) == 0);
    snprintf(text, sizeof text, fmt, 100, "0.5");
    CHECK(load(text, &b) == 0);
    snprintf(text, sizeof text, fmt, 200, "0.5");
    CHECK(load(text, &c) == 0);
    Engine *ea = run1(&a, &sa), *eb = run1(&b, &sb), *ec = run1(&c, &sc);
    CHECK(ea && eb && ec);
    CHECK_NEAR(sb.ttft_s.mean - sa.ttft_s.mean, 200 * 589824.0 / (0.5 * 450e9), 2e-9); /* 0.524288 ms */
    CHECK_NEAR(sc.ttft_s.mean, sa.ttft_s.mean, 1e-12); /* 200 tokens: not above 200 */
    CHECK_NEAR(sb.tpot_s.mean, sa.tpot_s.mean, 1e-12); /* a decode row of 1 token: below */
    free_runs3(ea, eb, ec, &a, &b, &c);
    /* a fraction above 1: the key, the value and the range */
    Err e = {0};
    snprintf(text, sizeof text, fmt, 100, "1.5");
    CHECK(scenario_load_text(text, "t.json", 0, 0, &a, &e) < 0);
    CHECK(strstr(e.msg, "large_allreduce") && strstr(e.msg, "link_fraction"));
}


/* Writes text to DIR/rows.csv (its path into path) and reads it as rows. */
static int read_rows_text(const char *dir, const char *text, char *path, size_t n_path, VRow **rows, uint32_t *n,
                          VFormat *fmt)
{
    snprintf(path, n_path, "%s/rows.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    Err e = {0};
    int rc = vrows_read(path, VFMT_AUTO, NULL, 0, rows, n, fmt, &e);
    if (rc < 0) fprintf(stderr, "  %s\n", e.msg);
    return rc;
}

/* A silicon file of the minimal columns and the rows in body, in a new
 * directory dir (a mkdtemp template): its rows parsed into *rows (*n). */
static int silicon_rows(char *dir, const char *body, VRow **rows, uint32_t *n)
{
    if (!mkdtemp(dir)) return -1;
    char path[512], *text = xmalloc(strlen(body) + 200);
    sprintf(text, "id,backend,backend_version,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,"
                  "tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n%s", body);
    VFormat fmt;
    int rc = read_rows_text(dir, text, path, sizeof path, rows, n, &fmt);
    free(text);
    return rc;
}

static void test_validate_rows(void)
{
    char dir[] = "/tmp/servesim-validate-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[512];
    VRow *rows;
    uint32_t n;
    VFormat fmt;
    Err e = {0};
    CHECK(read_rows_text(dir,
                         "id,backend,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,"
                         "silicon_ttft_ms,silicon_tpot_ms\n"
                         "a,vllm,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,512,32,,2,1,1,40,8\n"
                         "b,vllm,someone/Unknown-7B,h100_sxm,agg,512,32,,2,1,1,40,8\n"
                         "c,trtllm,Qwen/Qwen3-32B,h100_sxm,disagg,512,32,fp8,2,1,1,40,8\n"
                         "d,mystery,Qwen/Qwen3-32B,h100_sxm,agg,512,32,fp8,2,1,1,40,8\n"
                         "e,trtllm,Qwen/Qwen3-32B,h100_sxm,agg,512,32,w4a16,2,1,1,40,8\n"
                         "f,trtllm,qwen/qwen3-32b-fp8,h200_sxm,agg,520,32,fp8,4,2,1,60,9\n",
                         path, sizeof path, &rows, &n, &fmt) == 0);
    CHECK_INT(fmt, VFMT_SILICON);
    CHECK_INT(n, 6);
    if (n == 6) {
        CHECK(rows[0].skip[0] == 0);
        CHECK_CONTAINS(rows[0].model, "llama-3.1-8b");
        CHECK_CONTAINS(rows[1].skip, "unknown model \"someone/Unknown-7B\"");
        CHECK_CONTAINS(rows[2].skip, "mode \"disagg\"");
        CHECK_CONTAINS(rows[3].skip, "unknown engine \"mystery\"");
        CHECK_CONTAINS(rows[4].skip, "unknown precision gemm_quant_mode \"w4a16\"");
        CHECK(rows[5].skip[0] == 0); /* hf ids match without case */
        CHECK(!strcmp(rows[5].dtype, "fp8_block")); /* Qwen3's FP8 release is block-scaled */
        /* the harness's scheduler (aiconfigurator's benchmark rules):
         * max_num_tokens = concurrency + isl + 1500, TensorRT-LLM's rounded
         * up to its 32-token block; max_batch_size = the concurrency */
        char *sc = vrows_scenario(&rows[5], NULL);
        CHECK_CONTAINS(sc, "\"scheduler\": {\"kind\": \"continuous\", \"max_num_tokens\": 2048, \"max_running\": 4}");
        free(sc);
        sc = vrows_scenario(&rows[0], NULL);
        CHECK_CONTAINS(sc, "\"scheduler\": {\"kind\": \"chunked\", \"token_budget\": 2014, \"max_running\": 2}");
        free(sc);
        vrows_simulate(&rows[0], NULL);
        CHECK(rows[0].err[0] == 0);
        CHECK(rows[0].pred_ttft_ms > 5 && rows[0].pred_ttft_ms < 500);
        CHECK(rows[0].pred_tpot_ms > 1 && rows[0].pred_tpot_ms < 50);
    }
    free(rows);
    /* a filter on a column */
    VFilter fl = {"backend", "trtllm"};
    CHECK(vrows_read(path, VFMT_AUTO, &fl, 1, &rows, &n, &fmt, &e) == 0);
    CHECK_INT(n, 3);
    free(rows);
    VFilter bad = {"nosuch", "x"};
    CHECK(vrows_read(path, VFMT_AUTO, &bad, 1, &rows, &n, &fmt, &e) < 0);
    CHECK_CONTAINS(e.msg, "no column \"nosuch\"");
    /* the command: the same JSON with one worker and with two; the unknown
     * model's row is in it with its reason */
    char cmd[2048], out1[600], out2[600];
    snprintf(out1, sizeof out1, "%s/j1.json", dir);
    snprintf(out2, sizeof out2, "%s/j2.json", dir);
    const char *b = getenv("SERVESIM_BIN");
    if (b) {
        snprintf(cmd, sizeof cmd, "%s validate %s --jobs 1 --json %s > %s/o1.txt 2>&1", b, path, out1, dir);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "%s validate %s --jobs 2 --json %s > %s/o2.txt 2>&1", b, path, out2, dir);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "cmp -s %s %s", out1, out2);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "grep -q 'not modelled: line 3 b: unknown model' %s/o1.txt", dir);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "grep -q '\"not_modelled\":.*unknown model' %s", out1);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "%s validate %s/none.csv > %s/o3.txt 2>&1", b, dir, dir);
        CHECK(system(cmd) != 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* Issue 35, class 6: a measurement or a --set value is a plain decimal:
 * "inf" is not a measured time (it gave nan% before), "0x10" is not 16 and
 * "--set before_us=" is not 0. */
static void test_validate_decimals(void)
{
    double v = -1;
    CHECK(common_parse_decimal("12.5", &v) == 0 && v == 12.5);
    CHECK(common_parse_decimal("-1e3", &v) == 0 && v == -1000);
    CHECK(common_parse_decimal(".5", &v) == 0 && v == 0.5);
    static const char *const bad[] = {"", "inf", "-inf", "nan", "0x10", "1e", "1e+", ".", "+", "12abc", " 12", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = -1;
        CHECK(common_parse_decimal(bad[i], &v) < 0);
        CHECK(v == -1);
    }
    char dir[] = "/tmp/servesim-valdec-XXXXXX", path[600];
    VRow *rows;
    uint32_t n;
    CHECK(silicon_rows(dir,
                       "a,trtllm,,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,inf,18.6\n"
                       "b,trtllm,,Qwen/Qwen3-32B,h100_sxm,agg,0x10,128,fp8,8,1,1,272,18.6\n"
                       "c,trtllm,,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,272,nan\n",
                       &rows, &n) == 0);
    snprintf(path, sizeof path, "%s/rows.csv", dir);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_CONTAINS(rows[0].skip, "measured TTFT \"inf\"");
        CHECK_CONTAINS(rows[1].skip, "isl 0x10");
        CHECK_CONTAINS(rows[2].skip, "TPOT \"nan\"");
    }
    free(rows);
    const char *b = getenv("SERVESIM_BIN");
    if (b) {
        char cmd[1400];
        static const char *const sets[] = {"before_us=", "before_us=0x10", "before_us=inf"};
        for (int i = 0; i < 3; i++) {
            snprintf(cmd, sizeof cmd, "%s validate %s --set %s > %s/o.txt 2>&1", b, path, sets[i], dir);
            CHECK(system(cmd) != 0);
            snprintf(cmd, sizeof cmd, "grep -q 'expected a decimal value in \\[0, 1e7\\], got' %s/o.txt", dir);
            CHECK(system(cmd) == 0);
        }
    }
    th_rm_tree(dir);
}

/* What the harness deployed beside the engines' defaults
 * (validate/README.md, "The server the harness deployed"): TensorRT-LLM's
 * KV fraction of its version's template (0.80 for 1.0.0rc3, 0.90 for
 * 1.2.0rc6.post1, the engine's own 0.9 for a version without a template),
 * vLLM's CUDA graphs captured at every batch 1 .. the concurrency, and the
 * --extra-clients what-if (clients beyond the server's max_batch_size). */
static void test_validate_harness_rules(void)
{
    char dir[] = "/tmp/servesim-valhar-XXXXXX", path[512];
    CHECK(mkdtemp(dir) != NULL);
    VRow *rows;
    uint32_t n;
    VFormat fmt;
    CHECK(read_rows_text(dir,
                         "id,backend,backend_version,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,"
                         "tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n"
                         "a,trtllm,1.0.0rc3,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,272,18.6\n"
                         "b,trtllm,,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,272,18.6\n"
                         "c,trtllm,1.2.0rc6.post1,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,272,18.6\n"
                         "d,vllm,0.12.0,nvidia/Llama-3.1-8B-Instruct-FP8,h200_sxm,agg,1000,100,fp8,3,1,1,70,9\n",
                         path, sizeof path, &rows, &n, &fmt) == 0);
    CHECK_INT(n, 4);
    if (n == 4) {
        CHECK_NEAR(rows[0].kv_fraction, 0.80, 0);
        CHECK_NEAR(rows[1].kv_fraction, 0, 0);
        CHECK_NEAR(rows[2].kv_fraction, 0.90, 0);
        CHECK_NEAR(rows[3].kv_fraction, 0, 0);
        Scenario s[4];
        int ok[4];
        for (int i = 0; i < 4; i++) {
            char *sc = vrows_scenario(&rows[i], NULL);
            ok[i] = sc && load(sc, &s[i]) == 0;
            CHECK(ok[i]);
            /* the benchmark's prompts are not served from a prefix cache
             * (validate/README.md): off on every silicon row */
            if (i == 0)
                CHECK_CONTAINS(sc, "\"engine\": {\"base\": \"trtllm-1.0\", \"kv\": {\"prefix_cache\": false, "
                                   "\"fraction\": 0.8}}");
            if (i == 1) CHECK_CONTAINS(sc, "\"engine\": {\"base\": \"trtllm\", \"kv\": {\"prefix_cache\": false}}");
            /* vLLM 0.12.0's template passes no --max-num-batched-tokens:
             * the engine's own 8192 */
            if (i == 3) CHECK_CONTAINS(sc, "\"token_budget\": 8192");
            free(sc);
        }
        if (ok[0] && ok[1] && ok[2]) {
            /* the same free memory after weights: the pools are 0.8 / 0.9 and 0.9 / 0.9 of the engine's */
            CHECK(s[1].kv.capacity_bytes > 1e9);
            CHECK_NEAR(s[0].kv.capacity_bytes / s[1].kv.capacity_bytes, 0.8 / 0.9, 1e-9);
            CHECK_NEAR(s[2].kv.capacity_bytes / s[1].kv.capacity_bytes, 1, 1e-9);
            /* the rest of the engine file stays: FP8 KV for the FP8 checkpoint */
            CHECK_INT(s[0].kv_dtype, DTYPE_FP8);
        }
        if (ok[3]) {
            CHECK_INT(s[3].wrap.n_sizes, 3);
            for (uint32_t i = 0; i < s[3].wrap.n_sizes && i < 3; i++) CHECK_INT(s[3].wrap.graph_sizes[i], i + 1);
        }
        for (int i = 0; i < 4; i++)
            if (ok[i]) scenario_free(&s[i]);
        /* one client beyond the server's batch: the scheduler still runs 8,
         * so each request waits for a finishing one and TTFT grows */
        vrows_simulate(&rows[0], NULL);
        double t0 = rows[0].pred_ttft_ms;
        rows[0].extra_clients = 1;
        char *sc = vrows_scenario(&rows[0], NULL);
        CHECK_CONTAINS(sc, "\"max_running\": 8}");
        CHECK_CONTAINS(sc, "\"clients\": 9, \"count\": 198, \"warmup_requests\": 18");
        free(sc);
        vrows_simulate(&rows[0], NULL);
        CHECK(rows[0].err[0] == 0);
        /* the wait is about one request's decode over the 8 slots (128 x
         * TPOT / 8, about 250 ms here), less the bunching it breaks up */
        CHECK(rows[0].pred_ttft_ms > t0 + 100);
    }
    free(rows);
    const char *b = getenv("SERVESIM_BIN");
    if (b) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "%s validate %s --extra-clients 2x > %s/o.txt 2>&1", b, path, dir);
        CHECK(system(cmd) != 0);
        snprintf(cmd, sizeof cmd, "grep -q 'extra-clients: expected a whole number 0 to 1024, got: 2x' %s/o.txt", dir);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "%s validate %s --extra-clients 1 --scenario a | grep -q '\"clients\": 9'", b, path);
        CHECK(system(cmd) == 0);
    }
    th_rm_tree(dir);
}

static double json_num_at(const char *path, const char *k1, const char *k2, const char *k3);

/* A silicon CSV of Llama-3.1-8B TensorRT-LLM rows on H100: shape[i] =
 * {isl, osl, clients, tp}, with the given measured TTFT and TPOT. */
/* The rows of fit tests: TensorRT-LLM, Llama-3.1-8B on H100, one row a
 * shape (isl, osl, clients, tp); rows from `versioned` on name
 * backend_version 1.0.0rc3 (models/engines/trtllm-1.0.json). */
static void fit_rows_csv(char *text, size_t size, const int (*shape)[4], int ns, const double *ttft,
                           const double *tpot, int versioned)
{
    int k = snprintf(text, size, "id,backend,backend_version,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,"
                                 "tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n");
    for (int i = 0; i < ns && k > 0 && (size_t)k < size; i++)
        k += snprintf(text + k, size - (size_t)k,
                      "r%d,trtllm,%s,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,%d,%d,,%d,%d,1,%.9g,%.9g\n", i,
                      i >= versioned ? "1.0.0rc3" : "", shape[i][0], shape[i][1], shape[i][2], shape[i][3], ttft[i],
                      tpot[i]);
}


/* The twelve row shapes of the fit tests (isl, osl, clients, tp). */
static const int fit_shapes[][4] = {{256, 96, 2, 1}, {512, 128, 4, 1}, {1024, 96, 6, 1}, {256, 128, 8, 2},
                                    {512, 96, 3, 2}, {2048, 128, 4, 2}, {384, 112, 5, 1}, {768, 96, 2, 2},
                                    {256, 112, 6, 2}, {1024, 128, 3, 1}, {640, 96, 7, 1}, {1536, 112, 2, 2}};
enum { FIT_NSHAPES = sizeof fit_shapes / sizeof fit_shapes[0] };

/* Rows the simulator itself "measured": `copies` x the ns0 shapes (the
 * twelve above when shapes0 is NULL), copy k >= 1 naming backend_version
 * 1.0.0rc3 (trtllm-1.0.json), each simulated with th[copy]; then
 * `servesim validate --fit` over them, its JSON into dir/fit.json (js).
 * Returns the command's status. */
static int fit_synthetic_of(const char *bin, const char *dir, const int (*shapes0)[4], int ns0, int copies,
                            const VTheta *th, char *js, size_t n_js)
{
    enum { MAXS = 2 * FIT_NSHAPES + 8 };
    int shape[MAXS][4], ns = copies * ns0;
    char text[8192], path[512], cmd[2048];
    double ttft[MAXS], tpot[MAXS];
    if (ns > MAXS) return -1;
    for (int i = 0; i < ns; i++) {
        memcpy(shape[i], shapes0[i % ns0], sizeof shape[i]);
        ttft[i] = tpot[i] = 1; /* placeholders until simulated */
    }
    fit_rows_csv(text, sizeof text, (const int(*)[4])shape, ns, ttft, tpot, ns0);
    VRow *rows;
    uint32_t n;
    VFormat fmt;
    if (read_rows_text(dir, text, path, sizeof path, &rows, &n, &fmt) < 0) return -1;
    CHECK_INT(n, ns);
    for (uint32_t i = 0; i < n && (int)i < ns; i++) {
        int k = (int)i / ns0;
        CHECK(!strcmp(rows[i].engine, k ? "trtllm-1.0" : "trtllm"));
        vrows_simulate(&rows[i], &th[k]);
        CHECK(rows[i].err[0] == 0);
        ttft[i] = rows[i].pred_ttft_ms;
        tpot[i] = rows[i].pred_tpot_ms;
    }
    free(rows);
    fit_rows_csv(text, sizeof text, (const int(*)[4])shape, ns, ttft, tpot, ns0);
    if (read_rows_text(dir, text, path, sizeof path, &rows, &n, &fmt) < 0) return -1; /* path: the measured rows */
    free(rows);
    snprintf(js, n_js, "%s/fit.json", dir);
    snprintf(cmd, sizeof cmd, "%s validate %s --fit --no-rows --jobs 2 --json %s > %s/fit.txt 2>&1", bin, path, js, dir);
    return system(cmd);
}

static int fit_synthetic(const char *bin, const char *dir, int copies, const VTheta *th, char *js, size_t n_js)
{
    return fit_synthetic_of(bin, dir, fit_shapes, FIT_NSHAPES, copies, th, js, n_js);
}

/* One fitted engine's constant `key` from fit.json (NAN where absent). */
static double fit_value(const cJSON *root, const char *engine, const char *key)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(root, "fit")) {
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(x, "engine");
        if (cJSON_IsString(en) && !strcmp(en->valuestring, engine))
            return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(x, key));
    }
    return NAN;
}

/* One fitted engine's host terms, before_us and end spread from fit.json
 * (NAN where absent), in that order. */
static void fit_of(const cJSON *root, const char *engine, double h[5])
{
    static const char *const keys[5] = {"base_us", "per_seq_us", "per_gpu_us", "before_us", "end_spread_tokens"};
    for (int k = 0; k < 5; k++) h[k] = fit_value(root, engine, keys[k]);
}

/* A fit's host terms in a form of their own (VTheta.form): an engine with
 * too few rows gets the other engines' time in the form it was fitted in
 * -- per layer from TensorRT-LLM's rows --, times its own model's layers:
 * a vLLM row (per step in its file) of Llama-3.1-8B (32 layers) at 10 us
 * + 0.5 us a sequence a layer runs as at 320 us + 16 us a step; form 0
 * keeps the engine file's per step, and the row reports the form it ran. */
static void test_validate_theta_form(void)
{
    char dir[] = "/tmp/servesim-valform-XXXXXX", path[512];
    CHECK(mkdtemp(dir) != NULL);
    VRow *rows = NULL;
    uint32_t n = 0;
    VFormat fmt;
    CHECK(read_rows_text(dir,
                         "id,backend,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,"
                         "silicon_ttft_ms,silicon_tpot_ms\n"
                         "a,vllm,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,512,32,,3,1,1,40,8\n",
                         path, sizeof path, &rows, &n, &fmt) == 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        const VTheta layer = {.base_us = 10, .per_seq_us = 0.5, .form = 2}, step = {.base_us = 320, .per_seq_us = 16, .form = 1},
                     own = {.base_us = 10, .per_seq_us = 0.5};
        char *t = vrows_scenario(&rows[0], &layer);
        CHECK(t && strstr(t, "\"per_layer\": true") != NULL);
        free(t);
        double ttft[3], tpot[3];
        int per[3];
        const VTheta *th[3] = {&layer, &step, &own};
        for (int k = 0; k < 3; k++) {
            vrows_simulate(&rows[0], th[k]);
            CHECK(rows[0].err[0] == 0);
            ttft[k] = rows[0].pred_ttft_ms;
            tpot[k] = rows[0].pred_tpot_ms;
            per[k] = rows[0].per_layer;
        }
        CHECK_NEAR(ttft[0], ttft[1], 1e-9);
        CHECK_NEAR(tpot[0], tpot[1], 1e-9);
        CHECK(tpot[0] > tpot[2] + 0.25); /* 310 us + 15.5 us a sequence more a step */
        CHECK_INT(per[0], 1);
        CHECK_INT(per[1], 0);
        CHECK_INT(per[2], 0);                     /* vllm.json: per step */
        CHECK_NEAR(rows[0].host_scale, 1, 0);
    }
    free(rows);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* --fit on rows the simulator itself "measured" with known constants: the
 * request overhead is found on its grid (16 ms: 0 and 2 .. 128 ms in
 * doublings), though the overhead also delays each client's next request
 * and so moves the bunching (a formula would not recover it), and the
 * host time comes back within a few percent.  Two versions of one engine
 * ("trtllm" and "trtllm-1.0", one family) made with one host time and an
 * overhead each (16 ms and 4 ms): the host time is fitted on both
 * versions' rows together, so the two fits carry the same host terms, and
 * each version's overhead comes back.  The first version's rows also end
 * spread by +-2 tokens (end_spread_tokens): found on the spread's grid
 * (1 .. 4) with the overhead beside it, and none found in the second's. */
static void test_validate_fit_recovers(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    const VTheta th[2] = {{.base_us = 1500, .per_seq_us = 20, .per_gpu_us = 100, .before_us = 16000, .end_spread_tokens = 2},
                          {.base_us = 1500, .per_seq_us = 20, .per_gpu_us = 100, .before_us = 4000}};
    for (int copies = 1; copies <= 2; copies++) {
        char dir[] = "/tmp/servesim-valfit-XXXXXX", js[600], cmd[600];
        CHECK(mkdtemp(dir) != NULL);
        CHECK(fit_synthetic(b, dir, copies, th, js, sizeof js) == 0);
        Err e = {0};
        cJSON *root = jsonio_parse_file(js, &e);
        double h[2][5];
        fit_of(root, "trtllm", h[0]);
        CHECK_NEAR(h[0][3], 16000, 0);
        CHECK_NEAR(h[0][4], 2, 0);
        /* the host terms share what the rows show: per-sequence time and
         * the base trade against each other over so few batch sizes */
        CHECK_NEAR(h[0][0] + 5 * h[0][1], 1500 + 5 * 20, 160);
        if (copies == 2) {
            fit_of(root, "trtllm-1.0", h[1]);
            for (int t = 0; t < 3; t++) CHECK_NEAR(h[1][t], h[0][t], 0); /* one host time for the family */
            CHECK_NEAR(h[1][3], 4000, 0);
            CHECK_NEAR(h[1][4], 0, 0);
            CHECK_NEAR(fit_value(root, "trtllm-1.0", "front_end_per_token_us"), 0, 0);
        }
        CHECK_NEAR(fit_value(root, "trtllm", "front_end_per_token_us"), 0, 0); /* none made, none found */
        /* with the fitted constants the rows come back within a few percent */
        CHECK(json_num_at(js, "overall", "ttft", "mape") < 0.02);
        CHECK(json_num_at(js, "overall", "tpot", "mape") < 0.02);
        cJSON_Delete(root);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
    }
}

/* --fit finds a serial front end where it binds (engprof.h "front_end",
 * validate.c vfit_request_closed): the twelve low-concurrency shapes,
 * where 200 us a streamed token never queues, beside three of 48 and 64
 * clients, where the front end streams fewer tokens a second (5,000) than
 * the GPUs make, all simulated with no request overhead and 200 us a
 * token.  Searched with none, before_us comes out at 0 (the few saturated
 * rows cannot pull it up); the front end's grid at that pair then finds
 * 200 us. */
static void test_validate_fit_front_end(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    int shapes[FIT_NSHAPES + 3][4];
    memcpy(shapes, fit_shapes, sizeof fit_shapes);
    const int busy[3][4] = {{256, 64, 64, 2}, {512, 64, 48, 2}, {256, 96, 64, 1}};
    memcpy(shapes[FIT_NSHAPES], busy, sizeof busy);
    const VTheta th = {.base_us = 1500, .per_seq_us = 20, .per_gpu_us = 100, .fe_per_token_us = 200};
    char dir[] = "/tmp/servesim-valfe-XXXXXX", js[600], cmd[600];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(fit_synthetic_of(b, dir, (const int(*)[4])shapes, FIT_NSHAPES + 3, 1, &th, js, sizeof js) == 0);
    Err e = {0};
    cJSON *root = jsonio_parse_file(js, &e);
    CHECK(root != NULL);
    CHECK_NEAR(fit_value(root, "trtllm", "front_end_per_token_us"), 200, 0);
    CHECK_NEAR(fit_value(root, "trtllm", "before_us"), 0, 0);
    CHECK_NEAR(fit_value(root, "trtllm", "end_spread_tokens"), 0, 0);
    /* the host time refitted beside it is a little off (1,498 us + 18.6 us a
     * sequence), which a saturated loop's TTFT amplifies: 5.9% / 2.9% */
    CHECK(json_num_at(js, "overall", "ttft", "mape") < 0.08);
    CHECK(json_num_at(js, "overall", "tpot", "mape") < 0.04);
    cJSON_Delete(root);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A row that repeats an earlier row's measurement (the same isl, osl,
 * clients, TP, TTFT and TPOT, under another model name: the MoE file's
 * DeepSeek-R1 / V3 pairs) is counted and named: the JSON's
 * overall.repeated_measurements and the row's "repeats"; a row differing
 * in the clients alone, or in the last digit of TPOT, is not a repeat. */
static void test_validate_repeats(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-valrep-XXXXXX", path[512], js[600], cmd[2048];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(js, sizeof js, "%s/v.json", dir);
    VRow *rows = NULL;
    uint32_t n;
    VFormat fmt;
    CHECK(read_rows_text(dir,
                         "id,backend,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,"
                         "silicon_ttft_ms,silicon_tpot_ms\n"
                         "a,trtllm,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,512,32,,2,1,1,40.125,8.5\n"
                         "b,trtllm,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,512,32,,4,1,1,40.125,8.5\n"
                         "c,trtllm,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,512,32,,2,1,1,40.125,8.50001\n"
                         "d,trtllm,nvidia/Llama-3.1-8B-Instruct-FP8,h100_sxm,agg,512,32,,2,1,1,40.125,8.5\n"
                         "e,trtllm,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,512,32,,2,1,1,40.125,8.5\n",
                         path, sizeof path, &rows, &n, &fmt) == 0);
    free(rows);
    snprintf(cmd, sizeof cmd, "%s validate %s --rows --json %s > %s/o.txt 2>&1", b, path, js, dir);
    CHECK(system(cmd) == 0);
    CHECK_NEAR(json_num_at(js, "overall", "repeated_measurements", NULL), 2, 0);
    Err e = {0};
    cJSON *root = jsonio_parse_file(js, &e);
    const cJSON *x;
    char got[64] = "";
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(root, "rows")) {
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(x, "repeats");
        size_t k = strlen(got);
        snprintf(got + k, sizeof got - k, "%s:%s ", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "id")),
                 cJSON_IsString(rep) ? rep->valuestring : "-");
    }
    CHECK(!strcmp(got, "a:- b:- c:- d:a e:a "));
    cJSON_Delete(root);
    snprintf(cmd, sizeof cmd, "grep -q '^  repeats line 2: line 6 e$' %s/o.txt", dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* --scenario ID prints the scenario a row runs as: `servesim run` of it
 * gives the row's predicted TTFT and TPOT; an id no row has is an error
 * naming it. */
static void test_validate_scenario_of_row(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-valscn-XXXXXX", text[2048], path[512], cmd[4096], js[600], out[600];
    CHECK(mkdtemp(dir) != NULL);
    double ttft[2] = {100, 200}, tpot[2] = {5, 6};
    fit_rows_csv(text, sizeof text, fit_shapes, 2, ttft, tpot, 2);
    VRow *rows;
    uint32_t n;
    VFormat fmt;
    CHECK(read_rows_text(dir, text, path, sizeof path, &rows, &n, &fmt) == 0);
    free(rows);
    snprintf(js, sizeof js, "%s/v.json", dir);
    snprintf(out, sizeof out, "%s/o.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s validate %s --no-rows --json %s > /dev/null && %s validate %s --scenario r1 > %s/s.json && "
             "%s run %s/s.json --quiet --summary-only --json %s",
             b, path, js, b, path, dir, b, dir, out);
    CHECK(system(cmd) == 0);
    Err e = {0};
    cJSON *v = jsonio_parse_file(js, &e), *o = jsonio_parse_file(out, &e);
    const cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "rows"), 1);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(o, "summary");
    CHECK(r1 && sum);
    if (r1 && sum) {
        double pt = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r1, "predicted_ttft_ms"));
        double pp = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r1, "predicted_tpot_ms"));
        double rt = 1e3 * cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sum, "ttft_s"), "mean"));
        double rp = 1e3 * cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sum, "tpot_s"), "mean"));
        CHECK(pt > 0 && pp > 0);
        CHECK_NEAR(rt, pt, 1e-6 * pt);
        CHECK_NEAR(rp, pp, 1e-6 * pp);
    }
    cJSON_Delete(v);
    cJSON_Delete(o);
    snprintf(cmd, sizeof cmd, "%s validate %s --scenario r9 > %s/none.txt 2>&1", b, path, dir);
    CHECK(system(cmd) != 0);
    snprintf(cmd, sizeof cmd, "grep -q 'no row of .* has the id \"r9\"' %s/none.txt", dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static void test_compare_warns_on_workload(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-cmpw-XXXXXX", cmd[2048], path[600];
    CHECK(mkdtemp(dir) != NULL);
    /* the default run against itself: no warning; against another seed's
     * run (other lengths): a warning naming the difference */
    snprintf(cmd, sizeof cmd, "cd %s && %s run --quiet --json a.json && %s run --quiet --seed 7 --json b.json", dir, b, b);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s compare a.json a.json > same.txt 2>&1 && %s compare a.json b.json > diff.txt 2>&1",
             dir, b, b);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "grep -q 'warning' %s/same.txt", dir);
    CHECK(system(path) != 0);
    snprintf(path, sizeof path, "grep -q 'served different workloads (mean output length' %s/diff.txt", dir);
    CHECK(system(path) == 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s compare a.json b.json --json 2>/dev/null | grep -q workload_warning", dir, b);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* The figures validate/README.md and README.md quote, from the data in
 * ../shared/data/e2e with the bundled profiles and engine files. */
static double json_num_at(const char *path, const char *k1, const char *k2, const char *k3)
{
    Err e = {0};
    cJSON *root = jsonio_parse_file(path, &e), *o = root;
    const char *ks[3] = {k1, k2, k3};
    for (int i = 0; i < 3 && o && ks[i]; i++) o = cJSON_GetObjectItemCaseSensitive(o, ks[i]);
    double v = cJSON_IsNumber(o) ? o->valuedouble : NAN;
    cJSON_Delete(root);
    return v;
}

/* slices[] entry named slice: its metric's (ttft, tpot) key (mape, bias). */
static double json_slice_num(const char *path, const char *slice, const char *metric, const char *key)
{
    Err e = {0};
    cJSON *root = jsonio_parse_file(path, &e), *x;
    double v = NAN;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(root, "slices")) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(x, "slice");
        if (!cJSON_IsString(nm) || strcmp(nm->valuestring, slice)) continue;
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(x, metric), key);
        if (cJSON_IsNumber(o)) v = o->valuedouble;
    }
    cJSON_Delete(root);
    return v;
}

/* Runs `servesim validate FILE ARGS --no-rows --json DIR/NAME` in a fresh
 * temporary DIR (dir: a mkdtemp template): 0 when $SERVESIM_BIN or FILE is
 * missing (the test is skipped, saying so), else 1 with js the JSON's path
 * (the caller removes dir with rm_tree). */
static int validate_json(const char *file, const char *args, char *dir, const char *name, char *js, size_t n)
{
    const char *b = getenv("SERVESIM_BIN");
    FILE *f = fopen(file, "r");
    if (!b || !f) {
        printf("     (skipped: needs $SERVESIM_BIN and %s)\n", file);
        if (f) fclose(f);
        return 0;
    }
    fclose(f);
    CHECK(mkdtemp(dir) != NULL);
    char cmd[2048];
    snprintf(js, n, "%s/%s", dir, name);
    snprintf(cmd, sizeof cmd, "%s validate %s %s --no-rows --json %s > /dev/null", b, file, args, js);
    CHECK(system(cmd) == 0);
    return 1;
}


static void test_validate_published_figures(void)
{
    const char *spl = "../shared/data/e2e/splitwise_perf_model.csv";
    char dir[] = "/tmp/servesim-valfig-XXXXXX", cmd[2048], js[600];
    if (!validate_json("../shared/data/e2e/silicon_visible.csv", "", dir, "silicon.json", js, sizeof js)) return;
    CHECK_NEAR(json_num_at(js, "overall", "rows", NULL), 594, 0);
    /* 11 vLLM rows below the physics floor (vrows_floor) */
    CHECK_NEAR(json_num_at(js, "overall", "simulated", NULL), 583, 0);
    CHECK_NEAR(json_num_at(js, "overall", "not_modelled", NULL), 11, 0);
    CHECK_NEAR(json_num_at(js, "overall", "repeated_measurements", NULL), 0, 0);
    /* 0.2530 / 0.0815 over 594 rows before the prefix cache went off for
     * silicon rows, the floor and the refit of 2026-12-03 (validate/README.md) */
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "mape"), 0.2716, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "mape"), 0.0914, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "median_abs_error"), 0.1906, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "median_abs_error"), 0.0657, 0.0005);
    th_rm_tree(dir);
    /* issue 34's file: vLLM 0.12.0 (Qwen3-32B, H100) and SGLang 0.5.6.post2
     * (Llama-3.1-8B, H200), in sample with the shipped constants */
    strcpy(dir, "/tmp/servesim-valfig-XXXXXX");
    if (!validate_json("../shared/data/e2e/silicon_visible_vllm_sglang.csv", "", dir, "vs.json", js, sizeof js)) return;
    CHECK_NEAR(json_num_at(js, "overall", "simulated", NULL), 139, 0);
    /* 0.3260 / 0.1027 before the H100's memory was taken as CUDA reports
     * it (79.15 GiB, not 80: a smaller KV pool for Qwen3-32B on one GPU);
     * 0.3249 / 0.1031 (SGLang 0.5684 / 0.1134) before the host time was
     * fitted without the front end (2026-12-04, validate.c vfit_host_again);
     * 0.2883 / 0.0901 before vLLM's online FP8 quantisation (per-tensor);
     * 0.2890 / 0.0714 before SGLang's (per-tensor GEMMs, a BF16 KV cache for
     * a checkpoint quantised at load, refitted 2026-12-06) */
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "mape"), 0.2836, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "mape"), 0.0756, 0.0005);
    static const struct {
        const char *slice;
        double ttft, tpot;
    } vs[] = {{"Qwen/Qwen3-32B | h100_sxm | vllm | bf16", 0.1473, 0.0510},
              /* 1.9199 / 1.5074 while an fp8 row of the BF16 checkpoint ran
               * block-scaled GEMMs on vLLM too (vllm.json "online_fp8");
               * 1.9449 / 0.6413 with an FP8 KV cache */
              {"Qwen/Qwen3-32B | h100_sxm | vllm | fp8", 1.9202, 0.8537},
              /* 0.4577 / 0.0742 on block-scaled GEMMs and an FP8 KV cache */
              {"meta-llama/Llama-3.1-8B-Instruct | h200_sxm | sglang | fp8_block", 0.4435, 0.0731}};
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(json_slice_num(js, vs[i].slice, "ttft", "mape"), vs[i].ttft, 0.0005);
        CHECK_NEAR(json_slice_num(js, vs[i].slice, "tpot", "mape"), vs[i].tpot, 0.0005);
    }
    th_rm_tree(dir);
    strcpy(dir, "/tmp/servesim-valfig-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(js, sizeof js, "%s/splitwise.json", dir);
    snprintf(cmd, sizeof cmd, "%s validate %s --no-rows --json %s > /dev/null", getenv("SERVESIM_BIN"), spl, js);
    CHECK(system(cmd) == 0);
    CHECK_NEAR(json_num_at(js, "overall", "simulated", NULL), 630, 0); /* BLOOM-176B included */
    CHECK_NEAR(json_num_at(js, "overall", "not_modelled", NULL), 630, 0); /* 10 of them below the compute floor */
    /* the file lists 120 of its measurements twice, digit for digit */
    CHECK_NEAR(json_num_at(js, "overall", "repeated_measurements", NULL), 120, 0);
    /* 0.2085 / 0.1348 before the stack's exposed large all-reduce
     * (models/engines/splitwise.json "large_allreduce") */
    /* 0.1012 / 0.0527 before the least-absolute-error host refit (2026-12-03) */
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "mape"), 0.1014, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "median_abs_error"), 0.0767, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "mape"), 0.0500, 0.0005);
    th_rm_tree(dir);
}

/* The what-if validate/README.md and README.md quote: the Llama-3.1-8B rows
 * (TensorRT-LLM 1.0.0rc3) with one closed-loop client beyond the server's
 * batch ("Two client behaviours in one engine version"): TTFT MAPE 30.2%
 * as run, 19.5% so. */
static void test_validate_extra_clients_figure(void)
{
    char dir[] = "/tmp/servesim-valxc-XXXXXX", js[600];
    if (!validate_json("../shared/data/e2e/silicon_visible.csv",
                       "--filter model_path=meta-llama/Llama-3.1-8B-Instruct --extra-clients 1", dir, "x.json", js,
                       sizeof js))
        return;
    CHECK_NEAR(json_num_at(js, "overall", "simulated", NULL), 177, 0);
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "mape"), 0.1952, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "bias"), -0.1145, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "mape"), 0.0913, 0.0005);
    th_rm_tree(dir);
}

/* Issue 17: every row of the MoE file modelled; the figures published in
 * validate/README.md (shipped engine constants, fitted on the dense rows
 * only: every MoE row is out of sample). */
static void test_validate_moe_figures(void)
{
    char dir[] = "/tmp/servesim-valmoe-XXXXXX", js[600];
    if (!validate_json("../shared/data/e2e/silicon_visible_moe.csv", "", dir, "moe.json", js, sizeof js)) return;
    CHECK_NEAR(json_num_at(js, "overall", "rows", NULL), 185, 0);
    CHECK_NEAR(json_num_at(js, "overall", "simulated", NULL), 185, 0);
    CHECK_NEAR(json_num_at(js, "overall", "not_modelled", NULL), 0, 0);
    CHECK_NEAR(json_num_at(js, "overall", "failed", NULL), 0, 0);
    /* DeepSeek-R1 / V3 pairs and two writings of one layout (validate/README.md) */
    CHECK_NEAR(json_num_at(js, "overall", "repeated_measurements", NULL), 28, 0);
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "mape"), 0.4412, 0.0005); /* 0.3942 before the end spread */
    /* 0.2041 before the host time's least-absolute-error refit (2026-12-03),
     * 0.2092 before its second pass ran without the front end (2026-12-04) */
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "mape"), 0.2051, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "ttft", "median_abs_error"), 0.4644, 0.0005);
    CHECK_NEAR(json_num_at(js, "overall", "tpot", "median_abs_error"), 0.1703, 0.0005);
    /* per slice: DeepSeek-V3, DeepSeek-R1, gpt-oss-120b (file order) */
    Err e = {0};
    cJSON *root = jsonio_parse_file(js, &e);
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(root, "slices");
    static const double ttft[3] = {0.4942, 0.6070, 0.3250}, tpot[3] = {0.1289, 0.2727, 0.1883};
    CHECK_INT(cJSON_GetArraySize(sl), 3);
    for (int i = 0; i < 3 && i < cJSON_GetArraySize(sl); i++) {
        const cJSON *x = cJSON_GetArrayItem(sl, i);
        CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(x, "ttft"), "mape")->valuedouble,
                   ttft[i], 0.0005);
        CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(x, "tpot"), "mape")->valuedouble,
                   tpot[i], 0.0005);
    }
    cJSON_Delete(root);
    th_rm_tree(dir);
}


/* aiperf reuses its 100 dataset entries in order: with 2 entries, requests
 * 2 and 3 send requests 0 and 1's prompts, and the engines' default prefix
 * caching (vLLM V1, SGLang, TensorRT-LLM block reuse) serves their full
 * blocks from the cache; without entries, or with the cache off, nothing
 * hits. */
static void test_dataset_entries_reuse(void)
{
    static const char *const eng[] = {"vllm", "sglang", "trtllm"};
    for (int k = 0; k < 3; k++) {
        for (int variant = 0; variant < 3; variant++) {
            char text[1024];
            snprintf(text, sizeof text,
                     "{\"model\": \"llama-3.1-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"%s\", %s"
                     "\"workload\": {\"kind\": \"closed_loop\", \"clients\": 1, \"count\": 4, "
                     "\"prompt_tokens\": 1000, \"output_tokens\": 4%s}}",
                     eng[k], variant == 2 ? "\"kv\": {\"prefix_cache\": false}, " : "",
                     variant == 1 ? "" : ", \"dataset_entries\": 2");
            Scenario s;
            CHECK(load(text, &s) == 0);
            CHECK_INT(s.prefix_cache, variant == 2 ? 0 : 1);
            CHECK_INT(s.wl.reqs[2].prompt_tokens, 1000);
            CHECK_INT(s.wl.reqs[2].n_hash_ids, variant == 1 ? 0 : 2);
            if (variant != 1) {
                CHECK(s.wl.reqs[2].hash_ids[0] == s.wl.reqs[0].hash_ids[0]);
                CHECK(s.wl.reqs[3].hash_ids[1] == s.wl.reqs[1].hash_ids[1]);
                CHECK(s.wl.reqs[1].hash_ids[0] != s.wl.reqs[0].hash_ids[0]);
            }
            Summary sum;
            Engine *e = run1(&s, &sum);
            CHECK(e != NULL);
            if (e) {
                /* two repeated prompts: their full blocks (16 tokens each;
                 * the last partial one is recomputed) */
                uint64_t want = variant == 0 ? 2 * (1000 / 16) * 16 : 0;
                CHECK_INT(sum.has_prefix, variant == 2 ? 0 : 1);
                if (sum.has_prefix) CHECK_INT(sum.prefix.hit_tokens, want);
                engine_free(e);
            }
            scenario_free(&s);
        }
    }
}

/* Qwen3's FP8 release is block-scaled (128 x 128): its rows' "fp8" runs the
 * fp8_block kernels; Llama's NVIDIA FP8 checkpoint stays per-tensor. */
static void test_fp8_checkpoint_format(void)
{
    ModelDesc q, l;
    Err e = {0};
    CHECK(model_load("qwen3-32b", &q, &e) == 0);
    CHECK(model_load("llama-3.1-70b", &l, &e) == 0);
    CHECK_INT(q.fp8_checkpoint, DTYPE_FP8_BLOCK);
    CHECK_INT(l.fp8_checkpoint, DTYPE_FP8);
    Scenario s;
    Err e2 = {0};
    CHECK(scenario_load_text("{\"model\": {\"base\": \"qwen3-32b\", \"fp8_checkpoint\": \"fp4\"}, "
                             "\"hardware\": \"h100-sxm\", \"engine\": \"trtllm\", " FOUR_LONG "}",
                             "t.json", 0, 0, &s, &e2) < 0);
    CHECK(strstr(e2.msg, "fp8_checkpoint") != NULL);
    CHECK(strstr(e2.msg, "fp4") != NULL);
    /* vLLM and SGLang quantise a BF16 checkpoint at load, per-tensor
     * (models/engines/{vllm,sglang}.json "online_fp8"): an fp8 row of
     * Qwen/Qwen3-32B runs fp8 GEMMs there; the -FP8 release (block-scaled)
     * on vLLM, and any fp8 Qwen3 row on TensorRT-LLM (no online
     * quantisation: the release), fp8_block */
    char dir[] = "/tmp/servesim-fp8ck-XXXXXX";
    VRow *rows;
    uint32_t n;
    CHECK(silicon_rows(dir,
                       "a,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,272,18.6\n"
                       "b,vllm,0.12.0,Qwen/Qwen3-32B-FP8,h100_sxm,agg,1024,128,fp8,8,1,1,272,18.6\n"
                       "c,trtllm,1.0.0rc3,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,fp8,8,1,1,272,18.6\n"
                       "d,sglang,0.5.6.post2,meta-llama/Llama-3.1-8B-Instruct,h200_sxm,agg,1000,100,fp8_block,8,1,1,"
                       "272,18.6\n"
                       "e,sglang,0.5.6.post2,nvidia/Llama-3.1-8B-Instruct-FP8,h200_sxm,agg,1000,100,fp8_block,8,1,1,"
                       "272,18.6\n",
                       &rows, &n) == 0);
    CHECK_INT(n, 5);
    if (n == 5) {
        CHECK(!strcmp(rows[0].dtype, "fp8"));
        CHECK(!strcmp(rows[1].dtype, "fp8_block"));
        CHECK(!strcmp(rows[2].dtype, "fp8_block"));
        /* SGLang's online FP8 is per-tensor whatever the row calls it:
         * block scales need an FP8-serialised checkpoint (sglang.json
         * "online_fp8"); a pre-quantised release keeps the row's format */
        CHECK(!strcmp(rows[3].dtype, "fp8"));
        CHECK(!strcmp(rows[4].dtype, "fp8_block"));
        char *sc = vrows_scenario(&rows[0], NULL);
        CHECK_CONTAINS(sc, "\"compute_dtype\": \"fp8\"}");
        /* quantised at load: the KV cache stays in the model's BF16
         * (--kv-cache-dtype auto) */
        CHECK_CONTAINS(sc, "\"kv\": {\"dtype\": \"bf16\"}");
        free(sc);
        sc = vrows_scenario(&rows[3], NULL);
        CHECK_CONTAINS(sc, "\"kv\": {\"dtype\": \"bf16\"}");
        free(sc);
        for (int i = 1; i < 5; i += 3) { /* the releases: the engine's FP8-checkpoint KV rule */
            sc = vrows_scenario(&rows[i], NULL);
            CHECK(strstr(sc, "\"dtype\": \"bf16\"") == NULL);
            free(sc);
        }
    }
    free(rows);
    th_rm_tree(dir);
    /* the key's value is checked */
    EngineProfile ep;
    engprof_init(&ep);
    cJSON *bad = cJSON_Parse("{\"online_fp8\": \"int8\"}");
    Err e3 = {0};
    CHECK(engprof_from_json(bad, "x.json", &ep, &e3) < 0);
    CHECK_CONTAINS(e3.msg, "online_fp8");
    cJSON_Delete(bad);
    engprof_free(&ep);
}

/* NVFP4 GEMMs take their activations already quantised (TensorRT-LLM fuses
 * the FP4 quantisation into the RMSNorm / SwiGLU / attention output before
 * them); the NVFP4 table times a separate quantisation kernel with every
 * call, so a small-m NVFP4 GEMM is priced no slower than the BF16 kernel
 * moving NVFP4's bytes (sim/cost.c).  A 70B TP8 decode step of 4 requests
 * on B200: NVFP4 GEMMs 2.142 ms (4.96 ms from the table alone), below FP8's
 * 2.726 and BF16's 4.026. */
static void test_nvfp4_prequantised(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) {
        printf("     (skipped: needs $SERVESIM_BIN)\n");
        return;
    }
    char dir[] = "/tmp/servesim-nvfp4-XXXXXX", cmd[2048], js[600];
    CHECK(mkdtemp(dir) != NULL);
    static const char *const dt[] = {"nvfp4", "fp8", "bf16"};
    static const double want[] = {2.1416, 2.7263, 4.0264};
    for (int i = 0; i < 3; i++) {
        snprintf(js, sizeof js, "%s/%s.json", dir, dt[i]);
        snprintf(cmd, sizeof cmd,
                 "%s cost --hardware b200 --profile b200-trtllm --model llama-3.1-70b --dtype %s --tp 8 "
                 "--batch 1:1024,1:1024,1:1024,1:1024 --json > %s", b, dt[i], js);
        CHECK(system(cmd) == 0);
        CHECK_NEAR(json_num_at(js, "gemm_ms", NULL, NULL), want[i], 0.0005);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A Splitwise row whose prompt_time is below its batch's compute floor (the
 * prefill FLOPs at tp x the GPU's dense BF16 peak) did not do the work it
 * names: listed with both numbers, not simulated; a feasible row is kept. */
static void test_validate_compute_floor(void)
{
    char dir[] = "/tmp/servesim-floor-XXXXXX", path[600], cmd[700];
    CHECK(mkdtemp(dir) != NULL);
    VRow *rows;
    uint32_t n;
    VFormat fmt;
    CHECK(read_rows_text(dir,
                         "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,"
                         "token_time,e2e_time,tensor_parallel\n"
                         "llama2-70b,a100-80gb,512,1,128,1,0.7,196.25,54.88,7168.98,2\n"
                         "llama2-70b,a100-80gb,512,64,128,1,0.7,793.0,60.0,9000,2\n",
                         path, sizeof path, &rows, &n, &fmt) == 0);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK(rows[0].skip[0] == 0);
        CHECK_CONTAINS(rows[1].skip, "prompt_time 793 ms is below the batch's compute floor of 7224 ms");
        CHECK_CONTAINS(rows[1].skip, "64 x 512 prompt tokens at 2 x 312 TFLOP/s dense BF16");
    }
    free(rows);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

void suite_validate(void);
void suite_validate(void)
{
    RUN(test_engine_profile_schedule);
    RUN(test_fp8_checkpoint_kv);
    RUN(test_kv_memory_rules);
    RUN(test_warmup_barrier);
    RUN(test_request_overhead);
    RUN(test_iter_overhead_per_layer);
    RUN(test_validate_theta_form);
    RUN(test_end_spread);
    RUN(test_front_end);
    RUN(test_large_allreduce);
    RUN(test_validate_rows);
    RUN(test_validate_decimals);
    RUN(test_validate_harness_rules);
    RUN(test_validate_fit_recovers);
    RUN(test_validate_fit_front_end);
    RUN(test_validate_repeats);
    RUN(test_validate_scenario_of_row);
    RUN(test_compare_warns_on_workload);
    RUN(test_validate_published_figures);
    RUN(test_validate_extra_clients_figure);
    RUN(test_validate_moe_figures);
    RUN(test_dataset_entries_reuse);
    RUN(test_fp8_checkpoint_format);
    RUN(test_nvfp4_prequantised);
    RUN(test_validate_compute_floor);
}
