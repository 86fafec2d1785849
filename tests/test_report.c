/*
 * test_report.c -- scenario files end to end: the chapter's four-request
 * scenarios give the same token times through the scenario reader as
 * through the engine directly, the JSON report keeps its contract (tpot_s
 * null for one-token outputs), and the metrics are the GSL statistics of
 * the per-request values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cluster.h"
#include "extsort.h"
#include "ordw.h"
#include "jsonio.h"
#include "metrics.h"
#include "report.h"
#include "scenario.h"
#include "streamrun.h"
#include "testhelp.h"
#include "testrun.h"

/* the suite's temporary directory (mkdtemp; one per worker): where a
 * fixture's scenario is written when regenerating */
static char tmp_dir[64];
static Slo slo_table[METRICS_CLS_MAX];
static MetricsCfg mc;
static RunData rd;

static void summarize(const Scenario *s, const Engine *eng, Summary *sum)
{
    scenario_metrics_cfg(s, &mc, slo_table, METRICS_CLS_MAX);
    scenario_rundata(s, eng, &rd);
    metrics_summarize(&mc, &rd, sum);
}

static int load_run(const char *path, Scenario *s, Engine **eng, Summary *sum)
{
    Err e = {0};
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", SERVESIM_DATA_DIR, path);
    if (scenario_load_file(full, 0, 0, s, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    *eng = scenario_engine(s, NULL, &e);
    if (!*eng || engine_run(*eng, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    summarize(s, *eng, sum);
    return 0;
}

static const Request *by_id(const Scenario *s, const char *id)
{
    for (uint32_t i = 0; i < s->wl.n; i++)
        if (!strcmp(s->wl.reqs[i].id, id)) return &s->wl.reqs[i];
    return NULL;
}

static void test_chapter_scenario_continuous(void)
{
    Scenario s;
    Engine *eng;
    Summary m;
    CHECK(load_run("workloads/chapters/ch8_four_requests_continuous.json", &s, &eng, &m) == 0);
    if (th_failures) return;
    const Request *r0 = by_id(&s, "r0");
    const int64_t *tt = engine_token_times(eng);
    CHECK(r0 != NULL);
    CHECK_INT(tt[r0->token_off + 2] - tt[r0->token_off + 1], 375968934);
    CHECK_INT(r0->t_finish_ns, 765590636);
    CHECK_INT(m.finished, 4);
    CHECK_INT(m.iterations, 8);
    /* 12 GiB / (16 x 147,456 B) */
    CHECK_INT(m.kv_total_blocks, 5461);
    /* TTFT of r0..r3: 163.327456, 163.327456, 545.589484, 656.7113 ms */
    CHECK_NEAR(m.ttft_s.mean * 1e3, (163.327456 * 2 + 545.589484 + 656.711300) / 4, 1e-6);
    CHECK_NEAR(m.ttft_s.max * 1e3, 656.711300, 1e-6);
    /* window 0 -> 765.590636 ms; 16 output tokens */
    CHECK_NEAR(m.window_s, 0.765590636, 1e-12);
    CHECK_NEAR(m.output_tokens_per_s, 16 / 0.765590636, 1e-9);
    /* SLO TTFT 500 ms, TPOT 50 ms: r0 (TPOT (765.59-163.33)/7 = 86.04 ms)
     * misses, r1 meets, r2 and r3 miss TTFT: 1 of 4 */
    CHECK_INT(m.good, 1);
    CHECK_NEAR(m.slo_attainment, 0.25, 1e-12);
    /* $2/h over the drain window */
    CHECK_NEAR(m.cost_usd, 2.0 * 0.765590636 / 3600, 1e-15);
    engine_free(eng);
    scenario_free(&s);
}

static void test_report_contract(void)
{
    Scenario s;
    Engine *eng;
    Summary m;
    CHECK(load_run("workloads/chapters/ch8_four_requests_static.json", &s, &eng, &m) == 0);
    if (th_failures) return;
    cJSON *root = report_json(&mc, &rd, &m, 1);
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(root, "requests");
    CHECK(cJSON_GetArraySize(reqs) == 4);
    const cJSON *r;
    int seen = 0;
    cJSON_ArrayForEach(r, reqs) {
        static const char *const keys[] = {"id", "arrival_s", "token_times_s", "ttft_s", "tpot_s", "e2e_s", "status",
                                           "preemptions"};
        for (int k = 0; k < 8; k++) CHECK(cJSON_GetObjectItemCaseSensitive(r, keys[k]) != NULL);
        const cJSON *tts = cJSON_GetObjectItemCaseSensitive(r, "token_times_s");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "output_tokens");
        CHECK(cJSON_GetArraySize(tts) == n->valueint);
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring, "r1")) {
            /* r1 under static: tokens at 163.327456 and 189.620550 ms */
            CHECK_NEAR(cJSON_GetArrayItem(tts, 0)->valuedouble, 0.163327456, 1e-12);
            CHECK_NEAR(cJSON_GetArrayItem(tts, 1)->valuedouble, 0.18962055, 1e-12);
            CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(r, "tpot_s")->valuedouble, 0.18962055 - 0.163327456, 1e-12);
            seen++;
        }
        CHECK_INT(cJSON_GetObjectItemCaseSensitive(r, "preemptions")->valueint, 0);
        CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(r, "status")->valuestring, "finished"));
    }
    CHECK_INT(seen, 1);
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(root, "summary");
    static const char *const sk[] = {"ttft_s", "tpot_s", "e2e_s", "throughput", "goodput", "peak_running", "kv",
                                     "iterations"};
    for (int k = 0; k < 8; k++) CHECK(cJSON_GetObjectItemCaseSensitive(su, sk[k]) != NULL);
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(su, "throughput");
    CHECK(cJSON_GetObjectItemCaseSensitive(tp, "window_s") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(tp, "output_tokens_per_s") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(tp, "requests_per_s") != NULL);
    const cJSON *gp = cJSON_GetObjectItemCaseSensitive(su, "goodput");
    CHECK(cJSON_GetObjectItemCaseSensitive(gp, "requests_per_s") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(gp, "slo_attainment") != NULL);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(su, "kv");
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(kv, "total_blocks")->valuedouble, 5461);
    /* r2 (8192 + 1) and r3 (2048 + 3) share the second batch: 513 + 129 blocks */
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(kv, "peak_used_blocks")->valuedouble, 513 + 129);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(su, "iterations")->valuedouble, 12);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(su, "peak_running")->valuedouble, 2);
    for (int k = 0; k < 3; k++) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(su, sk[k]);
        static const char *const dk[] = {"mean", "p50", "p90", "p99"};
        for (int j = 0; j < 4; j++) CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d, dk[j])));
    }
    cJSON_Delete(root);
    engine_free(eng);
    scenario_free(&s);
}

static void test_tpot_null_for_one_token(void)
{
    const char *text =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"},"
        " \"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 10, \"per_token_us\": 10},"
        " \"workload\": {\"requests\": [{\"id\": \"one\", \"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 1},"
        "  {\"id\": \"two\", \"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 2}]}}";
    Scenario s;
    Err e = {0};
    CHECK(scenario_load_text(text, "inline", 0, 0, &s, &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    Engine *eng = scenario_engine(&s, NULL, &e);
    CHECK(eng && engine_run(eng, &e) == 0);
    Summary m;
    summarize(&s, eng, &m);
    CHECK_INT(m.tpot_s.n, 1);  /* TPOT covers fewer requests than TTFT */
    CHECK_INT(m.ttft_s.n, 2);
    /* one iteration of 10 + 10e-3 * 200 = 12 ms, then a decode of 10.01 ms */
    CHECK_NEAR(m.tpot_s.mean, 0.01001, 1e-12);
    cJSON *root = report_json(&mc, &rd, &m, 1);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "requests"), 0);
    CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(r0, "id")->valuestring, "one"));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r0, "tpot_s")));
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(r0, "ttft_s")->valuedouble, 0.012, 1e-12);
    cJSON_Delete(root);
    engine_free(eng);
    scenario_free(&s);
}

static void test_dist_is_gsl_quantiles(void)
{
    double v[5] = {5, 1, 4, 2, 3};
    Dist d;
    metrics_dist(v, 5, &d);
    CHECK_NEAR(d.mean, 3, 1e-12);
    CHECK_NEAR(d.p50, 3, 1e-12);
    CHECK_NEAR(d.p90, 4.6, 1e-12); /* 1 + 0.9 * 4 = 4.6th order statistic */
    CHECK_NEAR(d.p99, 4.96, 1e-12);
    CHECK_NEAR(d.max, 5, 1e-12);
    CHECK_NEAR(d.std, sqrt(2.5), 1e-12);
    metrics_dist(v, 0, &d);
    CHECK(isnan(d.mean));
}


/* Issue 13: a cluster's report adds up.  Two replicas (round robin), the
 * step model 10 ms per iteration, at most 2 running, 16-token prompts:
 *   a (0 ms, 3 out) -> replica 0, b (0 ms, 6 out) -> 1, c (0 ms, 3 out) -> 0,
 *   d (30 ms, 3 out) -> 1.
 * Replica 0 runs a and c from 0 to 30 ms; replica 1 runs b alone until d
 * joins it at 30 ms, both finishing at 60 ms.  Running: replica 0 peak 2,
 * mean 2 x 30 / 60 = 1.0; replica 1 peak 2, mean (1 x 30 + 2 x 30) / 60 =
 * 1.5; the cluster's sum is 3 during 0-30 and 2 during 30-60: peak 3 (not
 * 2 + 2 = 4, the peaks come at different times, nor the largest replica's
 * 2) and mean 2.5 = 1.0 + 1.5.  KV (reserve final, 2 blocks each: 16 + 3 -
 * 1 = 18 and 16 + 6 - 1 = 21 tokens): replica 0 holds 4 blocks for 30 ms,
 * replica 1 2 then 4: peaks 4 and 4, the cluster's 6; means 2, 3 and 5.
 * Waiting: a and c queue at replica 0 at once (peak 2), b alone at replica
 * 1 (1): the cluster's 3.  Busy: 30 / 60 and 60 / 60 of the window, 75% on
 * average.  1 GiB of KV per GPU = floor(2^30 / (16 x 147456 B)) = 455
 * blocks per replica, 910 in all. */
static void test_cluster_rows_add_up(void)
{
    const char *text =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\","
        " \"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 10, \"per_token_us\": 0},"
        " \"scheduler\": {\"kind\": \"continuous\", \"max_running\": 2},"
        " \"kv\": {\"capacity_gib\": 1, \"reserve\": \"final\"},"
        " \"cluster\": {\"replicas\": 2, \"router\": \"round_robin\"},"
        " \"workload\": {\"requests\": ["
        "{\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 16, \"output_tokens\": 3},"
        "{\"id\": \"b\", \"arrival_ms\": 0, \"prompt_tokens\": 16, \"output_tokens\": 6},"
        "{\"id\": \"c\", \"arrival_ms\": 0, \"prompt_tokens\": 16, \"output_tokens\": 3},"
        "{\"id\": \"d\", \"arrival_ms\": 30, \"prompt_tokens\": 16, \"output_tokens\": 3}]}}";
    Scenario s;
    Err e = {0};
    CHECK(scenario_load_text(text, "c2.json", 0, 0, &s, &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    Cluster *c = cluster_new(&s, NULL, &e);
    CHECK(c != NULL && cluster_run(c, &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        cluster_free(c);
        scenario_free(&s);
        return;
    }
    Summary m;
    scenario_metrics_cfg(&s, &mc, slo_table, METRICS_CLS_MAX);
    cluster_rundata(c, &rd);
    metrics_summarize(&mc, &rd, &m);
    CHECK_NEAR(m.window_s, 0.060, 1e-12);
    CHECK_INT(m.per_replica.n, 2);
    ReplicaRow r0, r1, tot;
    metrics_replica_row(&m, 0, &r0);
    metrics_replica_row(&m, 1, &r1);
    metrics_replica_row(&m, UINT32_MAX, &tot);
    CHECK_INT(r0.requests, 2);
    CHECK_INT(r1.requests, 2);
    CHECK_INT(tot.requests, 4);
    CHECK_INT(r0.peak_running, 2);
    CHECK_INT(r1.peak_running, 2);
    CHECK_INT(tot.peak_running, 3);
    CHECK_NEAR(r0.mean_running, 1.0, 1e-9);
    CHECK_NEAR(r1.mean_running, 1.5, 1e-9);
    CHECK_NEAR(tot.mean_running, 2.5, 1e-9);
    CHECK_INT(r0.peak_waiting, 2);
    CHECK_INT(r1.peak_waiting, 1);
    CHECK_INT(tot.peak_waiting, 3);
    CHECK_INT(r0.kv_peak_used_blocks, 4);
    CHECK_INT(r1.kv_peak_used_blocks, 4);
    CHECK_INT(tot.kv_peak_used_blocks, 6);
    CHECK_NEAR(r0.kv_mean_used_blocks, 2.0, 1e-9);
    CHECK_NEAR(r1.kv_mean_used_blocks, 3.0, 1e-9);
    CHECK_NEAR(tot.kv_mean_used_blocks, 5.0, 1e-9);
    CHECK_INT(r0.kv_total_blocks, 455);
    CHECK_INT(tot.kv_total_blocks, 910);
    CHECK_NEAR(r0.busy_share, 0.5, 1e-9);
    CHECK_NEAR(r1.busy_share, 1.0, 1e-9);
    CHECK_NEAR(tot.busy_share, 0.75, 1e-9);

    /* the JSON: per-replica rows, totals of the same quantity, KV capacity
     * per GPU and in all */
    cJSON *root = report_json(&mc, &rd, &m, 0);
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(root, "summary");
    const cJSON *reps = cJSON_GetObjectItemCaseSensitive(su, "replicas");
    CHECK_INT(cJSON_GetArraySize(reps), 2);
    const cJSON *j1 = cJSON_GetArrayItem(reps, 1);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(j1, "mean_running")->valuedouble, 1.5, 1e-9);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(j1, "peak_running")->valuedouble, 2);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(su, "peak_running")->valuedouble, 3);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(su, "mean_running")->valuedouble, 2.5, 1e-9);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(su, "kv");
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(kv, "capacity_gib_per_gpu")->valuedouble, 1, 1e-9);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(kv, "capacity_gib_total")->valuedouble, 2, 1e-9);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(kv, "peak_used_blocks")->valuedouble, 6);
    cJSON_Delete(root);

    /* the table says the same, with the units */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report_print(f, &s, &mc, &m);
    fclose(f);
    CHECK_CONTAINS(buf, "  KV: 1.00 GiB per GPU = 1.00 GiB per replica (tp 1) = 455 blocks of 16 tokens\n");
    CHECK_CONTAINS(buf, "      in all: 2.00 GiB = 910 blocks over 2 replicas (2 GPUs), reserve final\n");
    CHECK_CONTAINS(buf, "  0                 2      2      1.0      2      ");
    CHECK_CONTAINS(buf, "  cluster           4      3      2.5      3      0.0         6         5.0       910   75.0%\n");
    free(buf);
    cluster_free(c);
    scenario_free(&s);
}

/* The ordered writer (sim/ordw.h): records arriving out of order, some
 * held back for long (a straggler per 97), under a memory limit small
 * enough that the heap spills hundreds of runs and the runs are merged
 * again and again (ORDW_MAX_RUNS), come out in sequence with their
 * separators; a gap or a repeat fails. */
static void test_ordw_spills(void)
{
    enum { N = 20000 };
    static uint64_t order[N];
    for (uint64_t i = 0; i < N; i++) order[i] = i;
    uint64_t x = 12345;
    for (uint64_t i = 0; i < N; i++) { /* local shuffles, and stragglers moved far */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t j = i + (x >> 33) % (i % 97 == 0 ? 5000 : 20);
        if (j >= N) j = N - 1;
        uint64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    size_t limits[2] = {300, ORDW_MEM_DEFAULT};
    uint64_t spilled[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        FILE *f = tmpfile();
        CHECK(f != NULL);
        if (!f) return;
        Ordw w;
        ordw_init(&w, f, ",", limits[k]);
        Err e = {0};
        char text[32];
        int bad = 0;
        for (uint64_t i = 0; i < N; i++) {
            int n = snprintf(text, sizeof text, "r%llu", (unsigned long long)order[i]);
            bad |= ordw_add(&w, order[i], text, (size_t)n, &e) < 0;
        }
        CHECK(!bad);
        CHECK(ordw_finish(&w, N, &e) == 0);
        spilled[k] = w.spilled;
        ordw_free(&w);
        rewind(f);
        int ok = 1;
        for (uint64_t i = 0; i < N && ok; i++) {
            unsigned long long v;
            ok = fscanf(f, i ? ",r%llu" : "r%llu", &v) == 1 && v == i;
        }
        CHECK(ok && fgetc(f) == EOF);
        fclose(f);
    }
    CHECK(spilled[0] > 10000 && spilled[1] == 0);
    /* a record missing, and one given twice */
    FILE *f = tmpfile();
    Ordw w;
    Err e = {0};
    ordw_init(&w, f, "", 0);
    CHECK(ordw_add(&w, 0, "a", 1, &e) == 0 && ordw_add(&w, 2, "c", 1, &e) == 0);
    CHECK(ordw_finish(&w, 3, &e) < 0);
    CHECK(strstr(e.msg, "record 2 where 1 was due") != NULL);
    ordw_free(&w);
    ordw_init(&w, f, "", 0);
    CHECK(ordw_add(&w, 0, "a", 1, &e) == 0 && ordw_add(&w, 0, "a", 1, &e) < 0);
    CHECK(strstr(e.msg, "record 0 twice") != NULL);
    ordw_free(&w);
    fclose(f);
}

/* extsort: records in any order come back by key, equal keys in their
 * bytes' order, the same whether they stay in memory or spill to many
 * runs on disk. */
typedef struct SortRec {
    int64_t key;
    uint64_t tag;
} SortRec;

static void test_extsort_spills(void)
{
    SortRec out[2][5000];
    uint32_t runs[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        ExtSort *x = extsort_new(sizeof(SortRec), k ? 1024 : 0);
        Err e = {0};
        uint64_t r = 88172645463325252ull;
        for (int i = 0; i < 5000; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            SortRec rec = {(int64_t)(r % 700) - 350, r % 3};
            CHECK(extsort_add(x, &rec, &e) == 0);
        }
        CHECK_INT(extsort_count(x), 5000);
        CHECK(extsort_rewind(x, &e) == 0);
        int n = 0;
        while (n < 5000 && extsort_next(x, &out[k][n], &e) == 1) n++;
        CHECK_INT(n, 5000);
        CHECK_INT(extsort_next(x, &out[k][0], &e) == 0 ? 0 : 1, 0);
        runs[k] = extsort_runs(x);
        extsort_free(x);
    }
    CHECK(runs[0] == 0 && runs[1] >= 70); /* 64 records a run */
    int sorted = 1;
    for (int i = 1; i < 5000; i++)
        sorted &= out[0][i - 1].key < out[0][i].key ||
                  (out[0][i - 1].key == out[0][i].key && out[0][i - 1].tag <= out[0][i].tag);
    CHECK(sorted);
    CHECK(out[0][0].key == -350 && out[0][4999].key == 349);
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
}

/* --trace-events and --html's inputs stream (issue 36): a run of 20,000
 * requests keeps a few hundred records at once while its trace (a window
 * of it: every lane that meets it), its JSON report with the requests and
 * its iterations are written as it goes; with a 2 KiB memory limit the
 * trace's ordered sections and its sort of the running/waiting steps
 * spill to disk and give the same bytes. */
static void test_streamrun_trace_html(void)
{
    char dir[] = "/tmp/servesim-trace-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char tr[2][600], js[600], it[600];
    const char *text = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                       "\"chunked\", \"max_running\": 64, \"token_budget\": 2048}, \"workload\": {\"kind\": "
                       "\"poisson\", \"rate_per_s\": 40, \"count\": 20000, \"prompt_tokens\": 200, "
                       "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 40}}, \"report\": "
                       "{\"token_times\": false}, \"seed\": 7}";
    snprintf(js, sizeof js, "%s/report.json", dir);
    snprintf(it, sizeof it, "%s/iterations.csv", dir);
    uint64_t iterations = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(tr[k], sizeof tr[k], "%s/t%d.json", dir, k);
        StreamOutputs o = {.trace = tr[k], .trace_opts = {.has_window = 1, .w0_ns = 100000000000, .w1_ns =
                           101000000000}, .json_requests = !k, .iter_keep = !k, .mem_limit = k ? 2048 : 0};
        StreamRun *r = xmalloc(sizeof *r);
        Err e = {0};
        CHECK(streamrun(r, NULL, text, "trace.json", 0, 0, 0, &o, &e) == 0);
        if (th_failures) fprintf(stderr, "  %s\n", e.msg);
        CHECK_INT(r->requests, 20000);
        CHECK(r->eng != NULL && r->peak_live < 500);
        iterations = r->sum.iterations;
        if (k == 0) {
            RunData d;
            streamrun_rundata(r, &d);
            cJSON *root = report_json(&r->mc, &d, &r->sum, 0);
            cJSON_AddRawToObject(root, "requests", STREAMRUN_REQUESTS_RAW);
            CHECK(streamrun_write_json(r, root, js, &e) == 0);
            cJSON_Delete(root);
            CHECK(r->iter_kept != NULL && streamrun_write_iterations(r, it, &e) == 0);
        }
        streamrun_free(r);
        free(r);
    }
    Err e = {0};
    size_t la = 0, lb = 0;
    char *a = read_file(tr[0], &la, &e), *b = read_file(tr[1], &lb, &e);
    CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
    /* the window's second holds some 40 arrivals and a few hundred
     * iterations: the lanes of the requests it meets */
    int lanes = 0, iters = 0, counters = 0;
    for (const char *p = a; p && (p = strstr(p, "\"thread_name\",\"ph\":\"M\",\"ts\":0.000,\"pid\":2")); p++) lanes++;
    for (const char *p = a; p && (p = strstr(p, "{\"name\":\"iteration\"")); p++) iters++;
    for (const char *p = a; p && (p = strstr(p, "{\"name\":\"requests\"")); p++) counters++;
    CHECK(lanes > 30 && lanes < 200);
    CHECK(iters > 100 && iters < 2000 && (uint64_t)iters < iterations / 10);
    CHECK(counters > 60);
    free(a);
    free(b);
    /* the page's inputs: the report with every request, every iteration */
    a = read_file(js, &la, &e);
    CHECK(a && strstr(a, "\"id\":\t\"0\"") && strstr(a, "\"id\":\t\"19999\"") && !strstr(a, "\"id\":\t\"20000\""));
    free(a);
    a = read_file(it, &la, &e);
    uint64_t rows = 0;
    for (size_t i = 0; a && i < la; i++) rows += a[i] == '\n';
    CHECK_INT(rows, iterations + 1);
    free(a);
    unlink(tr[0]);
    unlink(tr[1]);
    unlink(js);
    unlink(it);
    rmdir(dir);
}

/* A streamed run whose ordered outputs spill (a 2 KiB memory limit) writes
 * the bytes of one that holds everything in memory. */
static void test_streamrun_spill_same_bytes(void)
{
    char dir[] = "/tmp/servesim-ordw-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char csv[2][600], tok[2][600], js[2][600];
    uint64_t spilled[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        snprintf(csv[k], sizeof csv[k], "%s/r%d.csv", dir, k);
        snprintf(tok[k], sizeof tok[k], "%s/t%d.csv", dir, k);
        snprintf(js[k], sizeof js[k], "%s/r%d.json", dir, k);
        StreamOutputs o = {.csv = csv[k], .tokens_csv = tok[k], .json_requests = 1, .mem_limit = k ? 2048 : 0};
        StreamRun *r = xmalloc(sizeof *r);
        Err e = {0};
        CHECK(streamrun(r, NULL, scenario_default_json, "(default)", 0, 0, 0, &o, &e) == 0);
        CHECK_INT(r->requests, 2000);
        CHECK(r->peak_live < 400); /* the slots follow the requests in flight */
        RunData d;
        streamrun_rundata(r, &d);
        cJSON *root = report_json(&r->mc, &d, &r->sum, 0);
        cJSON_AddRawToObject(root, "requests", STREAMRUN_REQUESTS_RAW);
        CHECK(streamrun_write_json(r, root, js[k], &e) == 0);
        cJSON_Delete(root);
        spilled[k] = r->csv_w.spilled + r->tok_w.spilled + r->json_w.spilled;
        streamrun_free(r);
        free(r);
    }
    CHECK(spilled[0] == 0 && spilled[1] > 1000);
    const char *pairs[3][2] = {{csv[0], csv[1]}, {tok[0], tok[1]}, {js[0], js[1]}};
    for (int k = 0; k < 3; k++) {
        Err e;
        size_t la = 0, lb = 0;
        char *a = read_file(pairs[k][0], &la, &e), *b = read_file(pairs[k][1], &lb, &e);
        CHECK(a && b && la == lb && la > 1000 && memcmp(a, b, la) == 0);
        free(a);
        free(b);
        unlink(pairs[k][0]);
        unlink(pairs[k][1]);
    }
    rmdir(dir);
}

/* The summary of the streamed run r of scenario text is the previous
 * release's materialised one: fixture report/NAME.summary.json, every
 * field as `run --json` prints it but the dotted key paths in except
 * (NULL-terminated, or NULL). */
static void summary_is_fixture(const char *text, const StreamRun *r, const char *const *except, const char *name)
{
    char fx[160];
    snprintf(fx, sizeof fx, "report/%s.summary.json", name);
    CHECK(testrun_fixture_summary(text, &r->s, &r->mc, &r->sum, except, fx, tmp_dir) == 0);
}

/* A cluster streams (issue 36): `run`'s streamed path takes a 4-replica
 * cluster itself (no refusal, no fallback), pulls all 6,000 requests
 * through the router while holding only those in flight, and reports the
 * previous release's materialised replica rows and summary; so does a
 * disaggregated deployment (with per-token times too), and an attention-DP
 * group streams. */
static void test_streamrun_cluster(void)
{
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                      "\"max_running\": 64, \"token_budget\": 2048}, \"workload\": {\"kind\": \"poisson\", "
                      "\"rate_per_s\": 40, \"count\": 6000, \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": "
                      "512, \"sigma\": 0.8, \"min\": 16, \"max\": 8192}, \"output_tokens\": {\"dist\": \"lognormal\", "
                      "\"median\": 64, \"sigma\": 0.7, \"min\": 1, \"max\": 1024}}, \"report\": {\"token_times\": "
                      "false}, \"seed\": 7, %s}";
    static const char *const deploy[] = {
        "\"cluster\": {\"replicas\": 4, \"router\": \"least_requests\"}",
        "\"disagg\": {\"prefill\": {\"replicas\": 1}, \"decode\": {\"replicas\": 3}}",
    };
    static const char *const names[] = {"cluster", "disagg"};
    char text[2048];
    for (size_t k = 0; k < sizeof deploy / sizeof *deploy; k++) {
        snprintf(text, sizeof text, fmt, deploy[k]);
        StreamRun *r = xmalloc(sizeof *r);
        Err e2 = {0};
        CHECK(streamrun(r, NULL, text, "cl.json", 0, 0, 0, NULL, &e2) == 0);
        if (e2.msg[0]) fprintf(stderr, "  %s\n", e2.msg);
        CHECK(r->cl != NULL && r->eng == NULL);
        CHECK_INT(r->requests, 6000);
        CHECK(r->peak_live > 0 && r->peak_live < 600);
        if (r->cl) summary_is_fixture(text, r, NULL, names[k]);
        fprintf(stderr, "     %s: 6000 requests streamed, at most %u records held\n", k ? "disagg" : "cluster",
                r->peak_live);
        streamrun_free(r);
        free(r);
    }
    /* overloaded (300 req/s on 2 replicas): over 1,024 requests held at
     * once, so the shared pool grows (doubling) while the replicas hold
     * slots; the previous release's rows and summary */
    {
        snprintf(text, sizeof text, fmt, "\"cluster\": {\"replicas\": 2, \"router\": \"least_tokens\"}");
        const char *from = "40, \"count\": 6000", *to = "300,\"count\": 4000"; /* the same length */
        memcpy(strstr(text, from), to, strlen(to));
        Err eo = {0};
        StreamRun *r = xmalloc(sizeof *r);
        CHECK(streamrun(r, NULL, text, "over.json", 0, 0, 0, NULL, &eo) == 0);
        CHECK(r->cl != NULL && r->requests == 4000 && r->peak_live > 1024);
        if (r->cl) summary_is_fixture(text, r, NULL, "overloaded");
        fprintf(stderr, "     overloaded: at most %u records held\n", r->peak_live);
        streamrun_free(r);
        free(r);
    }
    /* an attention-DP group of 8 lock-stepped ranks streams too */
    const char *adp = "{\"model\": \"deepseek-v3\", \"hardware\": \"h200-sxm\", \"tp\": 1, \"parallel\": {\"ep\": 8, "
                      "\"attention_dp\": 8}, \"scheduler\": {\"kind\": \"chunked\", \"token_budget\": 8192}, \"kv\": "
                      "{\"dtype\": \"fp8\"}, \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 10, \"count\": 3000, "
                      "\"prompt_tokens\": 1024, \"output_tokens\": 64}, \"seed\": 5}";
    StreamRun *ra = xmalloc(sizeof *ra);
    Err ea = {0};
    CHECK(streamrun(ra, NULL, adp, "adp.json", 0, 0, 0, NULL, &ea) == 0);
    CHECK(ra->cl != NULL && ra->requests == 3000 && ra->peak_live < 1000);
    CHECK_INT(ra->sum.per_replica.n, 8);
    streamrun_free(ra);
    free(ra);
    /* per-token times kept (--json with requests): a disaggregated run
     * streams too, its ITL taken from them in workload order as the
     * materialised summary took it (the first gap, the KV transfer's,
     * far from the rest: the sketch's sums round by order) */
    snprintf(text, sizeof text, fmt, deploy[1]);
    char *tt = strstr(text, "false}");
    memcpy(tt, "true} ", 6);
    StreamOutputs o = {.json_requests = 1};
    StreamRun *r = xmalloc(sizeof *r);
    Err e = {0};
    CHECK(streamrun(r, NULL, text, "cl.json", 0, 0, 0, &o, &e) == 0);
    CHECK(r->cl != NULL && r->requests == 6000);
    if (r->cl) summary_is_fixture(text, r, NULL, "disagg_token_times");
    streamrun_free(r);
    free(r);
}

/* Sessions stream (issue 36): `run`'s streamed path takes them itself (no
 * refusal), makes every later turn as its predecessor leaves while
 * holding only the turns in flight, and reports the previous release's
 * materialised summary and tasks (fixtures report/sessions*), on one
 * replica and on a 4-replica prefix_affinity cluster with the prefix
 * cache; so does a closed loop with a warm-up barrier, and sessions with
 * cancellations. */
static void test_streamrun_sessions(void)
{
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                      "\"max_running\": 64, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true%s}, "
                      "\"workload\": {\"kind\": \"sessions\", \"sessions\": 1500, \"rate_per_s\": 4, \"turns\": {\"dist\": "
                      "\"uniform\", \"min\": 2, \"max\": 7}, \"system_prompt_tokens\": 1024, \"first_prompt_tokens\": "
                      "200, \"new_tokens_per_turn\": 50, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 40, "
                      "\"sigma\": 0.5, \"max\": 200}, \"think_ms\": %s%s}, "
                      "\"report\": {\"token_times\": false}, \"seed\": 9%s}";
    const char *think = "{\"dist\": \"exponential\", \"mean\": 2000}";
    /* the third: a pool so small that most turns are rejected, and the
     * next turn of each arrives at once (think 0), routed round robin, so
     * a follow-up may leave on another replica before its predecessor is
     * retired: its task waits for it */
    static const char *const deploy[][3] = {
        {"", "", ""},
        {"", "", ", \"cluster\": {\"replicas\": 4, \"router\": \"prefix_affinity\"}"},
        {", \"capacity_gib\": 0.2", "0", ", \"cluster\": {\"replicas\": 3, \"router\": \"round_robin\"}"},
    };
    char text[2048];
    for (size_t k = 0; k < sizeof deploy / sizeof *deploy; k++) {
        snprintf(text, sizeof text, fmt, deploy[k][0], *deploy[k][1] ? deploy[k][1] : think, "", deploy[k][2]);
        StreamRun *r = xmalloc(sizeof *r);
        Err e2 = {0};
        CHECK(streamrun(r, NULL, text, "ss.json", 0, 0, 0, NULL, &e2) == 0);
        if (e2.msg[0]) fprintf(stderr, "  %s\n", e2.msg);
        CHECK(k ? r->cl != NULL : r->eng != NULL);
        uint64_t n = r->requests;
        CHECK(n > 4000);
        CHECK(r->peak_live > 0 && r->peak_live < n / 10);
        if (k == 2) CHECK(r->s.kv.capacity_bytes < 1e9);
        if (k == 2) CHECK(r->tasks.held > 0);
        CHECK(r->sum.tasks.has_tasks);
        CHECK_INT(r->sum.tasks.tasks, 1500);
        char name[32];
        snprintf(name, sizeof name, "sessions%zu", k);
        if (!e2.msg[0]) summary_is_fixture(text, r, NULL, name);
        fprintf(stderr, "     %s: %llu session turns streamed (%llu rejected, %llu left before their predecessor), at "
                "most %u records held\n", k ? "cluster" : "replica", (unsigned long long)n,
                (unsigned long long)r->sum.rejected, (unsigned long long)r->tasks.held, r->peak_live);
        streamrun_free(r);
        free(r);
    }
    /* a closed loop with a warm-up barrier and an engine profile's client
     * (jitter, end spread) streams too, holding at most
     * two requests per client (one that left, not yet retired, and the
     * follow-up it triggered at once) */
    const char *cl = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": {\"base\": "
                     "\"sglang\", \"request_overhead\": {\"jitter_us\": 1000, \"end_spread_tokens\": 3}}, "
                     "\"workload\": {\"kind\": "
                     "\"closed_loop\", \"clients\": 16, \"count\": 3000, \"warmup_requests\": 40, "
                     "\"prompt_tokens\": 300, \"output_tokens\": 20}, \"seed\": 3}";
    StreamRun *rc = xmalloc(sizeof *rc);
    Err ec = {0};
    CHECK(streamrun(rc, NULL, cl, "cl.json", 0, 0, 0, NULL, &ec) == 0);
    if (ec.msg[0]) fprintf(stderr, "  %s\n", ec.msg);
    CHECK(rc->eng != NULL && rc->requests == 3000 && rc->peak_live <= 32); /* a leaver and its follow-up */
    CHECK_INT(rc->sum.finished, 3000);
    CHECK(rc->sum.tasks.has_tasks && rc->sum.tasks.tasks == 32 && rc->sum.tasks.complete == 32);
    streamrun_free(rc);
    free(rc);
    /* cancellations stream: a cancelled turn's slot waits for its cancel
     * event (never meeting the next request of that slot), its session
     * goes on; the previous release's summary, the time-weighted means and
     * the energy included (its streamed path took them past the window's
     * end, where a cancelled request's iterations outlast the last
     * completion: 6.0863 running against 6.0851) */
    snprintf(text, sizeof text, fmt, "", think, ", \"cancel\": {\"fraction\": 0.1, \"after_ms\": 500}", "");
    StreamRun *r = xmalloc(sizeof *r);
    Err e = {0};
    CHECK(streamrun(r, NULL, text, "ss.json", 0, 0, 0, NULL, &e) == 0);
    if (e.msg[0]) fprintf(stderr, "  %s\n", e.msg);
    CHECK(r->sum.cancelled > 100);
    CHECK(r->peak_live < 200);
    if (!e.msg[0]) summary_is_fixture(text, r, NULL, "sessions_cancel");
    streamrun_free(r);
    free(r);
}

/* text run streamed into r (freed by the caller with streamrun_free),
 * its summary checked against fixture report/NAME.summary.json (but for
 * the key paths in except, NULL-terminated, or NULL); 1 when it ran. */
static int stream_vs_fixture(const char *text, const char *name, const char *const *except, StreamRun *r)
{
    Err e = {0};
    int ok = streamrun(r, NULL, text, name, 0, 0, 0, NULL, &e) == 0;
    if (!ok) fprintf(stderr, "  %s\n", e.msg);
    CHECK(ok);
    if (ok) summary_is_fixture(text, r, except, name);
    return ok;
}

/* A streamed run excludes warm-up and cool-down, and keeps a fixed window,
 * itself (issue 36): `run`'s streamed path takes the scenario (no
 * refusal), a first pass having read the stream's arrivals, and reports the
 * previous release's materialised counts, statistics and window means
 * (fixtures report/warmup0, warmup1). */
static void test_streamrun_warmup(void)
{
    static const char *const metrics[2] = {"{\"warmup_requests\": 500, \"cooldown_s\": 10}, \"report\": "
                                           "{\"token_times\": false}",
                                           "{\"window_ms\": [20000, 70000]}"};
    for (int k = 0; k < 2; k++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                 "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 30, \"count\": 3000, \"prompt_tokens\": "
                 "300, \"output_tokens\": 50}, \"metrics\": %s, \"seed\": 11}", metrics[k]);
        StreamRun *r = xmalloc(sizeof *r);
        if (stream_vs_fixture(text, k ? "warmup1" : "warmup0", NULL, r)) {
            CHECK(r->eng != NULL && r->requests == 3000 && r->peak_live < 300);
            /* 500 by count and the last 10 s (about 300) by time; the
             * window: 50 s of the 100 */
            if (k == 0) CHECK(r->sum.included > 2000 && r->sum.included < 2300);
            if (k == 1) CHECK(r->sum.fixed_window && r->sum.completed > 1400 && r->sum.completed < 1600);
        }
        streamrun_free(r);
        free(r);
    }
}

/* A trace's rate_per_s streams (issue 36): its factor from a first pass
 * over the file, the records read one at a time after it; the whole
 * load's arrivals and the previous release's materialised summary
 * (fixture report/trace_rate). */
static void test_streamrun_trace_rate(void)
{
    const char *text = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                       "\"workload\": {\"trace\": \"" SERVESIM_DATA_DIR "/../shared/data/traces/azure_llm_2023/"
                       "AzureLLMInferenceTrace_conv.csv\", \"format\": \"azure\", \"limit\": 3000, \"sample\": 0.7, "
                       "\"rate_per_s\": 4}, \"report\": {\"token_times\": false}, \"seed\": 2}";
    Scenario s;
    Err e = {0};
    CHECK(scenario_load_text(text, "rate.json", 0, 0, &s, &e) == 0);
    if (!th_failures) {
        /* 3,000 requests over (n - 1) / 4 s */
        CHECK_INT(s.wl.n, 3000);
        CHECK_NEAR((double)(s.wl.reqs[2999].t_arrive_ns - s.wl.reqs[0].t_arrive_ns) / 1e9, 2999.0 / 4, 1e-6);
        scenario_free(&s);
    }
    StreamRun *r = xmalloc(sizeof *r);
    if (stream_vs_fixture(text, "trace_rate", NULL, r)) CHECK(r->eng != NULL && r->requests == 3000);
    streamrun_free(r);
    free(r);
}

/* LoRA adapters and weight offload stream (issue 36): the Zipf-popular
 * adapters of workloads/lora/lora_zipf100.json drawn as each request is
 * pulled, the adapter cache's hits and loads and the summary those of the
 * previous release's materialised run (fixture report/lora); an adapter
 * past lora.adapters fails as the whole load does. */
static void test_streamrun_lora(void)
{
    Err e = {0};
    size_t n;
    char *text = read_file(SERVESIM_DATA_DIR "/workloads/lora/lora_zipf100.json", &n, &e);
    CHECK(text != NULL);
    if (!text) return;
    StreamRun *r = xmalloc(sizeof *r);
    if (stream_vs_fixture(text, "lora", NULL, r)) {
        CHECK(r->eng != NULL && r->requests == 1000);
        CHECK(r->sum.hooks.adapter_lookups > 0 && r->sum.hooks.adapter_loads > 0);
    }
    streamrun_free(r);
    free(r);
    /* an adapter the scenario does not have */
    char *bad = strstr(text, "\"adapters\": 100");
    CHECK(bad != NULL);
    if (bad) memcpy(bad, "\"adapters\":  10", 15);
    StreamRun *rb = xmalloc(sizeof *rb);
    Err eb = {0}, em = {0};
    Scenario s;
    CHECK(streamrun(rb, NULL, text, "lora.json", 0, 0, 0, NULL, &eb) < 0);
    CHECK(scenario_load_text(text, "lora.json", 0, 0, &s, &em) < 0);
    CHECK_CONTAINS(em.msg, "expected 1 .. lora.adapters (10)");
    CHECK_CONTAINS(eb.msg, "expected 1 .. lora.adapters (10)");
    streamrun_free(rb);
    free(rb);
    free(text);
}

/* Chains exclude warm-up and cool-down themselves (issue 36): `run`'s
 * streamed path takes sessions and closed loops (every client's first
 * request at once: a tie that straddles the warm-up count) with warm-up
 * by count and time and cool-down by count (no refusal), ranking the
 * requests as they arrive, and reports the previous release's
 * materialised counts, statistics, window means and energy (fixtures
 * report/chain_warmup*); and cool-down by time (the last arrival from a
 * first run). */
static void test_streamrun_chain_warmup(void)
{
    static const char *const wl[] = {
        "{\"kind\": \"sessions\", \"sessions\": 300, \"rate_per_s\": 4, \"turns\": {\"dist\": \"uniform\", "
        "\"min\": 1, \"max\": 6}, \"first_prompt_tokens\": 200, \"new_tokens_per_turn\": 60, \"output_tokens\": "
        "{\"dist\": \"lognormal\", \"median\": 60, \"sigma\": 0.5}, \"think_ms\": 800}",
        "{\"kind\": \"closed_loop\", \"clients\": 24, \"count\": 1500, \"prompt_tokens\": 500, "
        "\"output_tokens\": {\"dist\": \"lognormal\", \"median\": 40, \"sigma\": 0.5}, \"think_ms\": 50}"};
    static const char *const metrics[] = {"{\"warmup_requests\": 10, \"cooldown_requests\": 200}",
                                          "{\"warmup_s\": 20, \"warmup_requests\": 5}"};
    for (size_t k = 0; k < 4; k += th_step()) {
        char text[1500];
        snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                 "\"workload\": %s, \"metrics\": %s, \"report\": {\"token_times\": false}, \"seed\": 5}",
                 wl[k % 2], metrics[k / 2]);
        StreamRun *r = xmalloc(sizeof *r);
        char name[32];
        snprintf(name, sizeof name, "chain_warmup%zu", k);
        if (stream_vs_fixture(text, name, NULL, r)) {
            CHECK(r->eng != NULL && r->requests == r->sum.requests && r->peak_live < r->sum.requests / 10);
            CHECK(r->sum.included < r->sum.requests && r->sum.included > r->sum.requests / 2);
        }
        streamrun_free(r);
        free(r);
    }
    /* requests rejected as they arrive (prompts past the context) among a
     * closed loop's first ones, all at once, straddling the warm-up: each
     * is folded once time passes its arrival, which settles its rank; the
     * summary of the whole run held (metrics_summarize) */
    char text[1500];
    snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
             "\"workload\": {\"kind\": \"closed_loop\", \"clients\": 24, \"count\": 300, \"prompt_tokens\": "
             "{\"dist\": \"uniform\", \"min\": 100, \"max\": 60000}, \"output_tokens\": 20}, \"metrics\": "
             "{\"warmup_requests\": 10, \"cooldown_requests\": 20}, \"seed\": 5}");
    TestRun *R = testrun_new(text, "chainrej.json");
    StreamRun *r = xmalloc(sizeof *r);
    Err ec = {0};
    CHECK(R != NULL);
    CHECK(streamrun(r, NULL, text, "chainrej.json", 0, 0, 0, NULL, &ec) == 0);
    if (ec.msg[0]) fprintf(stderr, "  %s\n", ec.msg);
    if (R && !ec.msg[0]) {
        const Summary *m = &R->m;
        CHECK(r->eng != NULL && r->requests == 300);
        CHECK(m->rejected > 50 && m->rejected < 150);
        CHECK_INT(m->included, 270);
        CHECK_INT(r->sum.included, m->included);
        CHECK_INT(r->sum.rejected, m->rejected);
        CHECK_INT(r->sum.completed, m->completed);
        CHECK(r->sum.ttft_s.p99 == m->ttft_s.p99 && r->sum.window_s == m->window_s && r->sum.good == m->good);
        CHECK(r->sum.itl_s.n == m->itl_s.n && r->sum.itl_s.p99 == m->itl_s.p99 && m->itl_s.n > 1000);
    }
    testrun_free(R);
    streamrun_free(r);
    /* a cool-down by time: the last arrival from a first run (ITL from the
     * token times the run keeps, as the previous release's materialised
     * run took it) */
    snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
             "\"workload\": %s, \"metrics\": {\"cooldown_s\": 5}, \"seed\": 5}", wl[0]);
    if (stream_vs_fixture(text, "chain_cooldown_s", NULL, r))
        CHECK(r->sum.included < r->sum.requests && r->sum.included > r->sum.requests / 2);
    streamrun_free(r);
    free(r);
}

/* Chains stream with LoRA adapters (issue 36): `run`'s streamed path
 * takes sessions and a closed loop with adapters itself (no refusal),
 * holding the requests in flight, with the previous release's
 * materialised adapter cache lookups, hits and loads and summary
 * (fixtures report/chains*). */
static void test_streamrun_chains(void)
{
    static const char *const wl[] = {
        "{\"kind\": \"sessions\", \"sessions\": 300, \"rate_per_s\": 3, \"turns\": {\"dist\": \"uniform\", "
        "\"min\": 1, \"max\": 6}, \"first_prompt_tokens\": 200, \"new_tokens_per_turn\": 60, \"output_tokens\": "
        "60, \"think_ms\": 800, \"adapters\": {\"count\": 20, \"zipf_s\": 1.0}}",
        "{\"kind\": \"closed_loop\", \"clients\": 16, \"count\": 1500, \"prompt_tokens\": 500, "
        "\"output_tokens\": 40, \"adapters\": {\"count\": 20, \"zipf_s\": 1.0}}"};
    for (size_t k = 0; k < 2; k++) {
        char text[1500];
        snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                 "\"lora\": {\"adapters\": 20, \"rank\": 16, \"targets\": [\"q\", \"v\"], \"gpu_slots\": 4, "
                 "\"max_per_batch\": 4}, \"workload\": %s, \"report\": {\"token_times\": false}, \"seed\": 5}",
                 wl[k]);
        StreamRun *r = xmalloc(sizeof *r);
        if (stream_vs_fixture(text, k ? "chains1" : "chains0", NULL, r)) {
            CHECK(r->eng != NULL && r->requests == r->sum.requests && r->peak_live < r->sum.requests / 10);
            CHECK(r->sum.hooks.adapter_lookups > 0 && r->sum.hooks.adapter_loads > 0);
        }
        streamrun_free(r);
        free(r);
    }
}

/* Counted as a failure, not skipped silently. */
static void report_no_tmpdir(void)
{
    fprintf(stderr, "  cannot create a temporary directory like %s\n", tmp_dir);
    CHECK(0);
}

void suite_report(void);
void suite_report(void)
{
    RUN(test_chapter_scenario_continuous);
    RUN(test_report_contract);
    RUN(test_tpot_null_for_one_token);
    RUN(test_dist_is_gsl_quantiles);
    RUN(test_cluster_rows_add_up);
    RUN(test_ordw_spills);
    RUN(test_streamrun_spill_same_bytes);
    RUN(test_streamrun_trace_html);
    RUN(test_extsort_spills);
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/servesim-report-XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        RUN(report_no_tmpdir);
        return;
    }
    RUN(test_streamrun_cluster);
    RUN(test_streamrun_sessions);
    RUN(test_streamrun_warmup);
    RUN(test_streamrun_trace_rate);
    RUN(test_streamrun_lora);
    RUN(test_streamrun_chains);
    RUN(test_streamrun_chain_warmup);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
}
