/*
 * test_fast.c -- the engine's decode fast path (issue 16, engine.h
 * engine_set_fast_path) gives the slow path's results bit for bit.
 *
 *  - its pieces: a decode batch priced from its sums (CostModel.decode_time)
 *    equals the same batch priced item by item, CostBreakdown and
 *    extrapolation counters alike (with prefill chunks after the decodes,
 *    as the chunked scheduler's decode group prices them), for the
 *    profile-driven and flat
 *    roofline, tensor parallelism, the linear model and the engine
 *    wrapper (CUDA-graph padding, KV conversion, host time); count copies
 *    of a gap added at once equal count single adds (sketch and exact);
 *  - whole runs: `servesim run --json` with and without --no-fast-path
 *    writes the same bytes for the chunked, vLLM and continuous
 *    schedulers, KV pressure with preemption, a closed loop, a prefix cache
 *    (where the fast path stays off), an engine profile and the default
 *    scenario, and the fast path did advance iterations where it applies
 *    (`servesim bench --scenario` counts them).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "cost.h"
#include "costwrap.h"
#include "qsketch.h"
#include "streamrun.h"
#include "testhelp.h"
#include "testrun.h"

/* ------------------------------------------------- pricing from the sums */

/* Two instances of one cost model (each keeps its own memo and
 * extrapolation counters): one priced by items, one by sums. */
static void check_sums_match(CostModel *a, CostModel *b, uint32_t seed, int expect_supported)
{
    static BatchItem items[410];
    uint64_t x = seed * 2654435761u + 1;
    int supported = 0;
    for (int round = 0; round < 300; round++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t n = 1 + (uint32_t)(x >> 33) % 300;
        CostDecodeAgg ag = {.n = n, .sum_h = 0, .min_h = UINT32_MAX, .max_h = 0};
        for (uint32_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            /* mostly inside the profile's grids, some far outside */
            uint32_t h = round % 7 == 3 ? 1 + (uint32_t)(x >> 40) % 300000 : 1 + (uint32_t)(x >> 40) % 20000;
            items[i] = (BatchItem){.req = i, .c = 1, .h = h, .kind = ITEM_DECODE, .samples = 1};
            ag.sum_h += h;
            ag.min_h = h < ag.min_h ? h : ag.min_h;
            ag.max_h = h > ag.max_h ? h : ag.max_h;
        }
        /* most rounds a mixed batch: prefill chunks after the decodes, as
         * the chunked scheduler orders them */
        uint32_t np = round % 3 == 0 ? 0 : 1 + (uint32_t)(x >> 50) % 3;
        for (uint32_t i = 0; i < np; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            items[n + i] = (BatchItem){.req = n + i, .c = 1 + (uint32_t)(x >> 40) % 2048,
                                       .h = (uint32_t)(x >> 20) % 4096, .kind = ITEM_PREFILL,
                                       .samples = (uint8_t)(i & 1)};
        }
        CostBreakdown ci, cs;
        memset(&ci, 0, sizeof ci);
        memset(&cs, 0, sizeof cs);
        CHECK(a->iter_time(a->ctx, items, n + np, &ci) == 0);
        int rc = b->decode_time ? b->decode_time(b->ctx, &ag, items + n, np, &cs) : 1;
        if (rc == 1) {
            CHECK(b->iter_time(b->ctx, items, n + np, &cs) == 0); /* what the engine does then */
        } else {
            supported = 1;
            CHECK_INT(rc, 0);
        }
        if (memcmp(&ci, &cs, sizeof ci) != 0) {
            fprintf(stderr, "  round %d, n %u: items t %.17g gemm %.17g attn %.17g bytes %.17g, sums t %.17g "
                            "gemm %.17g attn %.17g bytes %.17g\n", round, n, ci.t_s, ci.gemm_s, ci.attn_s, ci.bytes,
                    cs.t_s, cs.gemm_s, cs.attn_s, cs.bytes);
            CHECK(0);
            break;
        }
    }
    CHECK_INT(supported, expect_supported);
    CostExtrap xa, xb;
    if (cost_extrapolation(a, &xa) == 0 && cost_extrapolation(b, &xb) == 0) {
        CHECK_INT(xa.queries, xb.queries);
        CHECK_INT(xa.outside, xb.outside);
        CHECK(xa.worst_ratio == xb.worst_ratio);
        CHECK(!strcmp(xa.worst, xb.worst));
    }
}

static int roof_pair(const char *model, const char *hw, const char *profile, int tp, CostModel *a, CostModel *b)
{
    static ModelDesc m;
    static HwDesc h;
    Err e = {0};
    if (model_load(model, &m, &e) < 0 || hw_load(hw, &h, &e) < 0 ||
        (profile && hw_attach_profile(&h, profile, &e) < 0)) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    RooflineCfg cfg = {.model = m, .hw = h, .tp = tp, .compute_dtype = DTYPE_BF16,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&m, DTYPE_BF16), .act_bytes = 2};
    if (cost_roofline_new(&cfg, a, &e) < 0 || cost_roofline_new(&cfg, b, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    return 0;
}

/* check_sums_match, then both models released. */
static void check_sums_then_free(CostModel *a, CostModel *b, int seed, int expect)
{
    check_sums_match(a, b, seed, expect);
    a->destroy(a->ctx);
    b->destroy(b->ctx);
}

static void test_fast_decode_sums_roofline(void)
{
    CostModel a, b;
    /* the calibrated H100 profile (the default scenario's pricing) */
    CHECK(roof_pair("qwen3-8b", "h100-sxm", NULL, 1, &a, &b) == 0);
    check_sums_then_free(&a, &b, 1, 1);
    /* the hardware file's flat efficiencies, tensor parallelism's ring */
    CHECK(roof_pair("llama-3.1-70b", "h100-sxm", "none", 4, &a, &b) == 0);
    check_sums_then_free(&a, &b, 2, 1);
    /* the profile's all-reduce class with TP 2 */
    CHECK(roof_pair("llama-2-70b", "h100-sxm", NULL, 2, &a, &b) == 0);
    check_sums_then_free(&a, &b, 3, 1);
    /* a profile without an all-reduce class (the link's ring) under TP 2;
     * one whose decode e_compute is over the group and the head size (both
     * constant: roofline_decode_plain's memo holds them) */
    CHECK(roof_pair("qwen3-32b", "h200-sxm", NULL, 2, &a, &b) == 0);
    check_sums_then_free(&a, &b, 8, 1);
    CHECK(roof_pair("llama-3.1-8b", "b200", "b200-vllm", 1, &a, &b) == 0);
    check_sums_then_free(&a, &b, 9, 1);
    /* a MoE model: priced from sums through roofline_time */
    CHECK(roof_pair("qwen3-30b-a3b", "h100-sxm", NULL, 1, &a, &b) == 0);
    check_sums_then_free(&a, &b, 10, 1);
}

static void test_fast_decode_sums_wrap_linear(void)
{
    CostModel a, b, wa, wb;
    Err e = {0};
    CHECK(roof_pair("qwen3-8b", "h100-sxm", NULL, 1, &a, &b) == 0);
    CostWrapCfg wc = {.graph_sizes = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160}, .n_sizes = 12,
                      .conversion_s_per_token = 3e-12, .has_host = 1, .host_base_s = 2e-3, .host_per_seq_s = 1e-5,
                      .overlap = 1, .ar_above_tokens = 8, .ar_s_per_token = 1e-7}; /* batches of > 8 rows: the exposed all-reduce */
    CHECK(costwrap_new(&wc, a, &wa, &e) == 0);
    CHECK(costwrap_new(&wc, b, &wb, &e) == 0);
    check_sums_then_free(&wa, &wb, 4, 1);
    /* mixed batches padded too, host time added (no overlap) */
    CHECK(roof_pair("qwen3-8b", "h100-sxm", NULL, 1, &a, &b) == 0);
    wc.mixed_graphs = 1;
    wc.overlap = 0;
    CHECK(costwrap_new(&wc, a, &wa, &e) == 0);
    CHECK(costwrap_new(&wc, b, &wb, &e) == 0);
    check_sums_then_free(&wa, &wb, 7, 1);
    LinearCostCfg lc = {.fixed_s = 26.22e-3, .per_token_s = 30.4e-6, .per_pair_s = 3e-9};
    CHECK(cost_linear_new(&lc, &a, &e) == 0);
    CHECK(cost_linear_new(&lc, &b, &e) == 0);
    check_sums_then_free(&a, &b, 5, 1);
    /* sliding-window layers price each sequence's window: not from sums
     * (the engine then prices the items) */
    CHECK(roof_pair("gpt-oss-120b", "h100-sxm", NULL, 1, &a, &b) == 0);
    check_sums_then_free(&a, &b, 6, 0);
}

/* ------------------------------------------------------- gaps at once */

static void test_fast_sketch_add_n(void)
{
    QSketch s1, s2;
    qsketch_init(&s1);
    qsketch_init(&s2);
    uint64_t x = 7;
    for (int k = 0; k < 2000; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int64_t v = 15000000 + (int64_t)((x >> 40) % 40000000);
        uint64_t cnt = (x >> 20) % 300;
        qsketch_add_n(&s1, v, cnt);
        for (uint64_t i = 0; i < cnt; i++) qsketch_add(&s2, v);
    }
    CHECK_INT(s1.n, s2.n);
    CHECK(s1.isum == s2.isum); /* exact integers: count copies at once are count additions */
    CHECK(s1.isumsq == s2.isumsq);
    CHECK(!s1.inexact && !s2.inexact);
    CHECK(s1.shift == s2.shift);
    CHECK_INT(s1.min, s2.min);
    CHECK_INT(s1.max, s2.max);
    CHECK_INT(s1.n_buckets, s2.n_buckets);
    CHECK(memcmp(s1.counts, s2.counts, s1.n_buckets * sizeof *s1.counts) == 0);
    qsketch_free(&s1);
    qsketch_free(&s2);
    /* long stretches (sums through many binades, ties when the ulp is 2,
     * 8, ...), gaps above and below the first (negative shifted values) */
    for (int trial = 0; trial < 6; trial++) {
        qsketch_init(&s1);
        qsketch_init(&s2);
        for (int k = 0; k < 400; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int64_t v = trial < 3 ? 40000000 + (int64_t)((x >> 40) % 9) - 4 /* tiny odd/even gaps */
                                  : (int64_t)((x >> 30) % 4000000000ull);
            uint64_t cnt = trial % 2 ? (x >> 12) % 20000 : (x >> 12) % 7;
            qsketch_add_n(&s1, v, cnt);
            for (uint64_t i = 0; i < cnt; i++) qsketch_add(&s2, v);
        }
        if (!(s1.isum == s2.isum && s1.isumsq == s2.isumsq && s1.n == s2.n))
            fprintf(stderr, "  trial %d: the sums differ\n", trial);
        CHECK(s1.isum == s2.isum);
        CHECK(s1.isumsq == s2.isumsq);
        CHECK(qsketch_sd(&s1) == qsketch_sd(&s2));
        CHECK_INT(s1.n, s2.n);
        qsketch_free(&s1);
        qsketch_free(&s2);
    }
    /* an accumulator crossing from exact values into its sketch */
    StatAcc a1, a2;
    statacc_init(&a1, 1000);
    statacc_init(&a2, 1000);
    for (int k = 0; k < 60; k++) {
        int64_t v = 20000000 + 12345 * k;
        statacc_add_ns_n(&a1, v, 37);
        for (int i = 0; i < 37; i++) statacc_add_ns(&a2, v);
    }
    CHECK_INT(a1.n, 60 * 37);
    CHECK_INT(a1.n, a2.n);
    CHECK(a1.sketched && a2.sketched);
    CHECK(a1.sk.isum == a2.sk.isum && a1.sk.isumsq == a2.sk.isumsq);
    CHECK_NEAR(qsketch_quantile(&a1.sk, 0.99), qsketch_quantile(&a2.sk, 0.99), 0);
    statacc_free(&a1);
    statacc_free(&a2);
    /* ... and its sketch is the one of the values added one by one as they
     * were kept (seconds, back to ns), then as they come: runs of one gap
     * go in at once (to_sketch), and gaps of 4 s and more one by one */
    for (int trial = 0; trial < 2; trial++) {
        QSketch ref;
        qsketch_init(&ref);
        statacc_init(&a1, 1000);
        uint64_t idx = 0;
        for (int k = 0; k < 60; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int64_t v = trial ? (int64_t)((x >> 20) % 6000000000ull) : 20000000 + (int64_t)((x >> 40) % 5000);
            uint64_t cnt = 1 + (x >> 12) % 60;
            statacc_add_ns_n(&a1, v, cnt);
            for (uint64_t i = 0; i < cnt; i++, idx++)
                qsketch_add(&ref, idx <= 1000 ? (int64_t)llround((double)v / 1e9 * 1e9) : v);
        }
        CHECK(a1.sketched);
        CHECK_INT(a1.sk.n, ref.n);
        CHECK(a1.sk.isum == ref.isum && a1.sk.isumsq == ref.isumsq && a1.sk.inexact == ref.inexact);
        CHECK(a1.sk.shift == ref.shift && a1.sk.min == ref.min && a1.sk.max == ref.max);
        CHECK_INT(a1.sk.n_buckets, ref.n_buckets);
        CHECK(memcmp(a1.sk.counts, ref.counts, ref.n_buckets * sizeof *ref.counts) == 0);
        statacc_free(&a1);
        qsketch_free(&ref);
    }
}

/* ------------------------------------------------------------ whole runs */

static char dir[256];

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = '\0';
    fclose(f);
    return b;
}

#define FAST_HEAD "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"seed\": 3, " \
    "\"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50}, \"report\": {\"token_times\": false}, "
#define FAST_POISSON "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 20, \"count\": 600, " \
    "\"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 800, \"sigma\": 0.8, \"min\": 16, \"max\": 8000}, " \
    "\"output_tokens\": {\"dist\": \"lognormal\", \"median\": 200, \"sigma\": 0.8, \"min\": 1, \"max\": 1500}}}"

/* Runs the scenario with the fast path on and off (and streamed when
 * stream): the reports must be the same bytes.  Returns the iterations the
 * fast path advanced (bench --scenario), or -1. */
static long fast_same(const char *name, const char *text, const char *extra, int stream)
{
    static char out[8192], args[2048], path[512], ja[512], jb[512];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    long fast = -1;
    for (int st = 0; st <= stream; st++) {
        snprintf(ja, sizeof ja, "%s/%s_%d_fast.json", dir, name, st);
        snprintf(jb, sizeof jb, "%s/%s_%d_slow.json", dir, name, st);
        snprintf(args, sizeof args, "run %s %s --quiet --json %s %s", st ? "--stream" : "", path, ja, extra);
        int rc = testrun_cli(args, out, sizeof out);
        if (rc != 0) fprintf(stderr, "  %s: %s\n", name, out);
        CHECK_INT(rc, 0);
        snprintf(args, sizeof args, "run %s %s --quiet --json %s --no-fast-path %s", st ? "--stream" : "", path,
                 jb, extra);
        CHECK_INT(testrun_cli(args, out, sizeof out), 0);
        size_t na = 0, nb = 0;
        char *a = slurp(ja, &na), *b = slurp(jb, &nb);
        CHECK(a && b && na > 1000);
        if (a && b && (na != nb || memcmp(a, b, na) != 0)) {
            fprintf(stderr, "  %s%s: the reports differ with and without the fast path (%s, %s)\n", name,
                    st ? " (streamed)" : "", ja, jb);
            CHECK(0);
        }
        free(a);
        free(b);
    }
    snprintf(args, sizeof args, "bench --scenario %s", path);
    CHECK_INT(testrun_cli(args, out, sizeof out), 0);
    const char *p = strstr(out, "decode fast path: ");
    CHECK(p != NULL);
    if (p) fast = strtol(p + strlen("decode fast path: "), NULL, 10);
    return fast;
}

static void test_fast_reports_identical(void)
{
    static char text[4096];
    /* "mixed": false (SGLang's default) too */
    for (int apart = 0; apart < 2; apart++) {
        snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 128, "
                 "\"token_budget\": 1024%s}, " FAST_POISSON, apart ? ", \"mixed\": false" : "");
        CHECK(fast_same(apart ? "chunked_apart" : "chunked", text, "", 1) > 100);
    }
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"vllm\", \"max_num_seqs\": 64}, " FAST_POISSON);
    CHECK(fast_same("vllm", text, "", 0) > 100);
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 48}, "
             FAST_POISSON);
    CHECK(fast_same("continuous", text, "", 0) > 100);
    /* an engine profile: CUDA-graph padding and host time (costwrap);
     * its RadixAttention prefix cache off (that keeps the fast path off,
     * checked below) */
    snprintf(text, sizeof text, FAST_HEAD "\"engine\": \"sglang\", \"scheduler\": {\"kind\": \"chunked\", "
             "\"max_running\": 128, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": false}, " FAST_POISSON);
    CHECK(fast_same("sglang", text, "", 1) > 100);
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 32}, "
             "\"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 20, \"per_token_us\": 30, \"per_pair_ns\": 3}, "
             FAST_POISSON);
    CHECK(fast_same("linear", text, "", 0) > 100);
    /* closed-loop clients: a finish triggers the next arrival */
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, "
             "\"token_budget\": 2048}, \"workload\": {\"kind\": \"closed_loop\", \"clients\": 16, \"count\": 400, "
             "\"think_ms\": 0, \"prompt_tokens\": 500, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 200, "
             "\"sigma\": 0.7, \"min\": 1, \"max\": 1000}}}");
    CHECK(fast_same("closed", text, "", 0) > 100);
    /* a prefix cache commits blocks every iteration: the fast path stays
     * off, and the results are the same */
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, "
             "\"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true}, " FAST_POISSON);
    CHECK_INT(fast_same("prefix", text, "", 0), 0);
}

/* KV pressure: requests preempted and recomputed; the fast path stops
 * where the pool could run short and the scheduler preempts. */
static void test_fast_kv_pressure(void)
{
    static char text[4096], ja[600];
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 256, "
             "\"token_budget\": 2048}, \"kv\": {\"capacity_gib\": 1.5, \"reserve\": \"on_demand\"}, " FAST_POISSON);
    CHECK(fast_same("kvpress", text, "", 1) > 1000);
    snprintf(ja, sizeof ja, "%s/kvpress_0_fast.json", dir);
    size_t n = 0;
    char *a = slurp(ja, &n);
    const char *p = a ? strstr(a, "\"preemptions\":") : NULL; /* the summary's, first */
    CHECK(p != NULL);
    if (p) CHECK(strtol(p + strlen("\"preemptions\":"), NULL, 10) > 100);
    free(a);
}

#define FAST_POISSON_OPEN "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 25, \"count\": 500, " \
    "\"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 800, \"sigma\": 0.8, \"min\": 16, \"max\": 8000}, " \
    "\"output_tokens\": {\"dist\": \"lognormal\", \"median\": 200, \"sigma\": 0.8, \"min\": 1, \"max\": 1500}"

/* What the decode group does not follow dissolves it (cancels, with and
 * without the overlap scheduler's late release; parallel-sampling
 * branches; a group larger than the token budget; preemption with swap;
 * partial prefills under KV pressure): still the same bytes. */
static void test_fast_dissolve_cases(void)
{
    static char text[1 << 14];
    const char *cancel = ", \"cancel\": {\"fraction\": 0.2, \"after_ms\": {\"dist\": \"exponential\", \"mean\": 3000}}}}";
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 128, "
             "\"token_budget\": 1024}, " FAST_POISSON_OPEN "%s", cancel);
    CHECK(fast_same("cancel", text, "", 0) > 1000);
    snprintf(text, sizeof text, FAST_HEAD "\"engine\": {\"name\": \"async\", \"overlap_scheduler\": true}, "
             "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 128, \"token_budget\": 1024}, "
             FAST_POISSON_OPEN "%s", cancel);
    CHECK(fast_same("cancel_overlap", text, "", 0) > 1000);
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, "
             "\"token_budget\": 2048}, \"workload\": {\"kind\": \"sessions\", \"sessions\": 60, \"turns\": "
             "{\"dist\": \"uniform\", \"min\": 2, \"max\": 6}, \"rate_per_s\": 2, \"first_prompt_tokens\": 600, "
             "\"new_tokens_per_turn\": {\"dist\": \"lognormal\", \"median\": 80, \"sigma\": 0.6}, "
             "\"output_tokens\": 200, \"think_ms\": {\"dist\": \"exponential\", \"mean\": 2000}, "
             "\"system_prompt_tokens\": 1024, \"max_prompt_tokens\": 32768}}");
    CHECK(fast_same("sessions", text, "", 0) > 1000);
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 96, "
             "\"token_budget\": 48, \"order\": \"priority\", \"admission\": {\"max_queue\": 40}}, "
             "\"kv\": {\"capacity_gib\": 2, \"reserve\": \"final\"}, " FAST_POISSON_OPEN "}}");
    CHECK(fast_same("smallbudget", text, "", 0) > 1000);
    /* and with "mixed": false (SGLang's default): no decode group, only
     * runs of pure decode iterations */
    for (int apart = 0; apart < 2; apart++) {
        snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 200, "
                 "\"token_budget\": 512, \"long_prefill_threshold\": 256, \"max_partial_prefills\": 2%s}, "
                 "\"kv\": {\"capacity_gib\": 1.2, \"reserve\": \"on_demand\"}, " FAST_POISSON_OPEN "}}",
                 apart ? ", \"mixed\": false" : "");
        CHECK(fast_same(apart ? "partial_apart" : "partial", text, "", 0) > 1000);
    }
    /* the continuous scheduler's group: admissions capped by max_num_tokens
     * (which counts the group's tokens), KV pressure, cancels */
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 128, "
             "\"max_num_tokens\": 3000, \"max_partial_prefills\": 2}, \"kv\": {\"capacity_gib\": 1.5, "
             "\"reserve\": \"on_demand\"}, " FAST_POISSON_OPEN ", \"cancel\": {\"fraction\": 0.1, \"after_ms\": 4000}}}");
    CHECK(fast_same("contpress", text, "", 0) > 1000);
    snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"vllm\", \"max_num_seqs\": 128, "
             "\"preemption\": \"swap\"}, \"kv\": {\"capacity_gib\": 1.5, \"reserve\": \"on_demand\"}, "
             FAST_POISSON_OPEN "}}");
    CHECK(fast_same("vllmswap", text, "", 0) > 1000);
    /* parallel sampling: every fourth request has three branches */
    int k = snprintf(text, sizeof text, FAST_HEAD "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, "
                     "\"token_budget\": 2048}, \"workload\": {\"requests\": [");
    uint64_t x = 11;
    for (int i = 0; i < 120 && k < (int)sizeof text - 200; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        k += snprintf(text + k, sizeof text - (size_t)k, "%s{\"id\": \"r%d\", \"arrival_ms\": %d, "
                      "\"prompt_tokens\": %d, \"output_tokens\": %d%s}", i ? ", " : "", i, 125 * i,
                      50 + (int)((x >> 33) % 2950), 1 + (int)((x >> 20) % 600), i % 4 ? "" : ", \"n\": 3");
    }
    snprintf(text + k, sizeof text - (size_t)k, "]}}");
    CHECK(fast_same("nsample", text, "", 0) > 500);
}

/* The default scenario (run without a file), and with per-token times
 * kept (the fast path steps aside: every token is recorded) -- where a
 * streamed run keeps them: only for an output that shows them (bench
 * --scenario, as run, has none; the JSON report's requests do). */
static void test_fast_default_scenario(void)
{
    static char out[1 << 15], text[(1 << 15) + 64];
    CHECK_INT(testrun_cli("run --print-default", out, sizeof out), 0);
    char *brace = strrchr(out, '}');
    CHECK(brace != NULL);
    if (!brace) return;
    *brace = '\0';
    snprintf(text, sizeof text, "%s, \"report\": {\"token_times\": false}}", out);
    CHECK(fast_same("default", text, "", 1) > 1000);
    snprintf(text, sizeof text, "%s}", out);
    CHECK_INT(fast_same("default_tt", text, "", 0), 15410);
    /* the JSON report's requests need every token's time: the fast path
     * advances none of the 15,411 iterations */
    StreamRun *r = xmalloc(sizeof *r);
    StreamOutputs o = {.json_requests = 1};
    Err e = {0};
    CHECK(streamrun(r, NULL, text, "default_tt.json", 0, 0, 0, &o, &e) == 0);
    CHECK(r->eng != NULL);
    if (r->eng) {
        CHECK_INT(engine_stats(r->eng)->iterations, 15411);
        CHECK_INT(engine_stats(r->eng)->fast_iterations, 0);
    }
    streamrun_free(r);
    free(r);
}

/* README.md "Speed" quotes the Azure trace's count (deterministic). */
static void test_fast_readme_azure(void)
{
    static char out[8192];
    CHECK(access("workloads/bench_azure_conv.json", R_OK) == 0); /* make test runs from the repository root */
    CHECK_INT(testrun_cli("bench --scenario workloads/bench_azure_conv.json", out, sizeof out), 0);
    CHECK_CONTAINS(out, "decode fast path: 418847 of 418867 iterations (100.0%; --no-fast-path: none)");
    CHECK_CONTAINS(out, "19366 requests, 418867 iterations, ITL n=4069299 p99 41.96 ms");
}

static void fast_no_tmpdir(void)
{
    CHECK(0);
}

void suite_fast(void);
void suite_fast(void)
{
    RUN(test_fast_decode_sums_roofline);
    RUN(test_fast_decode_sums_wrap_linear);
    RUN(test_fast_sketch_add_n);
    RUN(test_fast_readme_azure);
    snprintf(dir, sizeof dir, "/tmp/servesim-fast-XXXXXX");
    if (!mkdtemp(dir)) {
        RUN(fast_no_tmpdir);
        return;
    }
    RUN(test_fast_reports_identical);
    RUN(test_fast_kv_pressure);
    RUN(test_fast_dissolve_cases);
    RUN(test_fast_default_scenario);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
