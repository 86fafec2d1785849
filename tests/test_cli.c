/*
 * test_cli.c -- the command line as a user meets it: bad input gives a
 * non-zero exit and a message naming the file, the key path and the
 * problem; good input runs; the same scenario and seed give byte-identical
 * reports.  Runs the binary named by $SERVESIM_BIN (make test sets it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <math.h>

#include "common.h"
#include "model.h"
#include "streamrun.h"
#include "testhelp.h"
#include "testrun.h"

static char dir[256];

static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

#define GOOD_HEAD "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", " \
    "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 4}, "

static void expect_fail(const char *file, const char *text, const char *const *needles)
{
    static char out[8192], args[1024];
    const char *p = write_tmp(file, text);
    CHECK(p != NULL);
    snprintf(args, sizeof args, "run %s", p);
    int rc = testrun_cli(args, out, sizeof out);
    CHECK(rc != 0 && rc != -1);
    CHECK_CONTAINS(out, file);
    for (int i = 0; needles[i]; i++) CHECK_CONTAINS(out, needles[i]);
    CHECK(strstr(out, "Sanitizer") == NULL);
}

static void test_bad_input_messages(void)
{
    {
        static const char *const n[] = {"malformed JSON", "line 3", NULL};
        expect_fail("malformed.json", "{\n  \"model\": \"qwen3-8b\",\n  \"tp\": ,\n}\n", n);
    }
    {
        static const char *const n[] = {"scheduler", "unknown key \"max_runing\"", "max_running", NULL};
        expect_fail("unknown_key.json",
                    "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\", "
                    "\"max_runing\": 4}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 10, "
                    "\"output_tokens\": 2}]}}", n);
    }
    {
        static const char *const n[] = {"workload.requests[1]", "missing key \"output_tokens\"", NULL};
        expect_fail("missing.json", GOOD_HEAD "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": "
                    "10, \"output_tokens\": 2}, {\"arrival_ms\": 1, \"prompt_tokens\": 10}]}}", n);
    }
    {
        static const char *const n[] = {"workload.requests[0].prompt_tokens", "-5", "expected", NULL};
        expect_fail("negative.json", GOOD_HEAD "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": "
                    "-5, \"output_tokens\": 2}]}}", n);
    }
    {
        static const char *const n[] = {"model", "qwen9-8b", "qwen3-8b", NULL};
        expect_fail("unknown_model.json", "{\"model\": \"qwen9-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                    "{\"kind\": \"static\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, "
                    "\"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"workload.prompt_tokens", "max", NULL};
        expect_fail("bad_dist.json", GOOD_HEAD "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 1, \"count\": 3, "
                    "\"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 10}, \"output_tokens\": 3}}", n);
    }
    {
        static const char *const n[] = {"scheduler.kind", "fifo", "continuous", NULL};
        expect_fail("bad_kind.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                    "{\"kind\": \"fifo\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, "
                    "\"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"do not fit", "tp", NULL};
        expect_fail("no_fit.json", "{\"model\": \"llama-3.1-70b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                    "{\"kind\": \"static\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, "
                    "\"output_tokens\": 1}]}}", n);
    }
    {
        /* 81,050 MiB x 0.9 - 15.26 GiB of Qwen3-8B weights - 3.5 GiB reserve = 52.48 GiB */
        static const char *const n[] = {"kv.capacity_gib", "got 100", "52.48 GiB fit", NULL};
        expect_fail("kv_too_big.json", GOOD_HEAD "\"kv\": {\"capacity_gib\": 100}, \"workload\": {\"requests\": "
                    "[{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"truncated.json", NULL};
        expect_fail("truncated.json", GOOD_HEAD "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prom", n);
    }
}

static void test_cli_usage_errors(void)
{
    static char out[8192];
    CHECK(testrun_cli("frobnicate", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "unknown command");
    CHECK(testrun_cli("run --bogus", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "--bogus");
    CHECK(testrun_cli("run /nonexistent/s.json", out, sizeof out) == 1);
    CHECK_CONTAINS(out, "/nonexistent/s.json");
    CHECK(testrun_cli("info", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "--model");
    CHECK(testrun_cli("--help", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "run");
    CHECK(testrun_cli("run --help", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "--json");
}

static void test_info(void)
{
    static char out[16384];
    CHECK(testrun_cli("info --model qwen3-8b --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"weights_read_bytes\":\t15136811008");
    CHECK_CONTAINS(out, "\"kv_bytes_per_token\":\t147456");
    CHECK(testrun_cli("info --model qwen3-8b --hardware h100-sxm", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "kv capacity");
    /* a TP group's capacity is over its GPUs, not per GPU (issue 37): the
     * H100's memory as CUDA reports it, 81,050 MiB, x 0.9, less a quarter of
     * the 70B's BF16 weights and the 3.5 GiB reserve, on each of 4 GPUs */
    ModelDesc m;
    Err e = {0};
    CHECK_INT(model_load("llama-3.1-70b", &m, &e), 0);
    double per_gpu = 81050.0 * MIB * 0.9 - m.weights_total_bytes / 4 - 3.5 * GIB, kvb = 327680;
    char want[512];
    CHECK(testrun_cli("info --model llama-3.1-70b --hardware h100-sxm --tp 4", out, sizeof out) == 0);
    snprintf(want, sizeof want, "  kv capacity          %.2f GiB over the 4 GPUs = %.0f tokens (per GPU: memory 79.15 GiB "
             "x 0.90 - weights / tp - reserve 3.5 GiB)\n", 4 * per_gpu / GIB, 4 * per_gpu / kvb);
    CHECK_CONTAINS(out, want);
    CHECK_CONTAINS(out, "  kv capacity          139.52 GiB over the 4 GPUs = 457195 tokens");
    CHECK_CONTAINS(out, "memory per GPU: 71.24 GiB usable (79.15 GiB x 0.90)\n");
    CHECK(!strstr(out, "GiB, per GPU)"));
    /* run of the same TP4 group, two replicas: the figure per GPU is a
     * quarter of info's, per replica info's, in all twice that */
    const char *p = write_tmp("tp4.json", "{\"model\": \"llama-3.1-70b\", \"hardware\": \"h100-sxm\", \"tp\": 4, "
                                          "\"cluster\": {\"replicas\": 2, \"router\": \"round_robin\"}, "
                                          "\"scheduler\": {\"kind\": \"continuous\"}, \"workload\": {\"requests\": ["
                                          "{\"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 4}, "
                                          "{\"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 4}]}}");
    char args[600];
    snprintf(args, sizeof args, "run %s", p);
    CHECK(testrun_cli(args, out, sizeof out) == 0);
    snprintf(want, sizeof want, "  KV: %.2f GiB per GPU (derived from memory) = %.2f GiB per replica (tp 4) = ",
             per_gpu / GIB, 4 * per_gpu / GIB);
    CHECK_CONTAINS(out, want);
    CHECK_CONTAINS(out, "  KV: 34.88 GiB per GPU (derived from memory) = 139.52 GiB per replica (tp 4) = ");
    snprintf(want, sizeof want, "      in all: %.2f GiB = ", 8 * per_gpu / GIB);
    CHECK_CONTAINS(out, want);
    CHECK_CONTAINS(out, " over 2 replicas (8 GPUs), reserve ");
}

static void test_default_run_deterministic(void)
{
    static char a[65536], b[65536], args[1024];
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/a.json", dir);
    snprintf(pb, sizeof pb, "%s/b.json", dir);
    snprintf(args, sizeof args, "run --json %s", pa);
    CHECK(testrun_cli(args, a, sizeof a) == 0);
    CHECK_CONTAINS(a, "TTFT");
    CHECK_CONTAINS(a, "goodput");
    snprintf(args, sizeof args, "run --quiet --json %s", pb);
    CHECK(testrun_cli(args, b, sizeof b) == 0);
    size_t la = 0, lb = 0;
    Err e;
    char *ta = read_file(pa, &la, &e), *tb = read_file(pb, &lb, &e);
    CHECK(ta && tb && la == lb && la > 1000 && memcmp(ta, tb, la) == 0);
    free(ta);
    free(tb);
    /* a different seed gives a different run */
    snprintf(args, sizeof args, "run --quiet --seed 7 --json %s", pb);
    CHECK(testrun_cli(args, b, sizeof b) == 0);
    ta = read_file(pa, &la, &e);
    tb = read_file(pb, &lb, &e);
    CHECK(ta && tb && (la != lb || memcmp(ta, tb, la) != 0));
    free(ta);
    free(tb);
}

static void test_replay_compare_outputs(void)
{
    static char out[65536], args[2048];
    const char *d = SERVESIM_DATA_DIR "/workloads/chapters";
    /* replay: table and files */
    snprintf(args, sizeof args, "replay %s/ch31_table_31_1_continuous.json --window-ms 0,400 --json %s/rp.json "
             "--csv %s/rp.csv --vllm-json %s/rv.json", d, dir, dir, dir);
    CHECK(testrun_cli(args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "fixed window 0.400 s");
    CHECK_CONTAINS(out, "15.0 output tok/s");
    char p[512];
    Err e;
    snprintf(p, sizeof p, "%s/rp.json", dir);
    char *t = read_file(p, NULL, &e);
    CHECK_CONTAINS(t, "\"window_s\":\t0.4");
    CHECK_CONTAINS(t, "\"usd_per_1k_output_tokens\"");
    free(t);
    snprintf(p, sizeof p, "%s/rp.csv", dir);
    t = read_file(p, NULL, &e);
    CHECK_CONTAINS(t, "id,arrival_s,prompt_tokens,output_tokens,class,status,ttft_s,tpot_s");
    free(t);
    /* compare a run's report with its own vLLM-style file: zero error */
    snprintf(args, sizeof args, "run %s/ch8_four_requests_continuous.json --quiet --json %s/sim.json "
             "--vllm-json %s/v.json --trace-events %s/t.json --iterations-csv %s/it.csv", d, dir, dir, dir, dir);
    CHECK(testrun_cli(args, out, sizeof out) == 0);
    snprintf(args, sizeof args, "compare %s/sim.json %s/v.json --json", dir, dir);
    CHECK(testrun_cli(args, out, sizeof out) == 0);
    cJSON *cmp = cJSON_Parse(out);
    CHECK(cmp != NULL);
    if (cmp) {
        /* both files round to 12 significant digits */
        CHECK(fabs(cJSON_GetObjectItemCaseSensitive(cmp, "mean_abs_rel_error")->valuedouble) < 1e-9);
        CHECK(cJSON_GetObjectItemCaseSensitive(cmp, "compared")->valueint >= 16);
        cJSON_Delete(cmp);
    }
    snprintf(args, sizeof args, "compare %s/sim.json %s/rv.json", dir, dir);
    CHECK(testrun_cli(args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "ttft mean (ms)");
    snprintf(p, sizeof p, "%s/it.csv", dir);
    t = read_file(p, NULL, &e);
    CHECK_CONTAINS(t, "2,0.189620550,0.375968934,1,1,8193,8192,1,");
    free(t);
    /* errors */
    CHECK(testrun_cli("replay", out, sizeof out) == 2);
    snprintf(args, sizeof args, "replay %s/ch31_table_31_1_serial.json --iterations-csv %s/x.csv", d, dir);
    CHECK(testrun_cli(args, out, sizeof out) == 2);
    CHECK_CONTAINS(out, "no iterations");
    snprintf(args, sizeof args, "replay %s/ch31_table_31_1_serial.json --window-ms 5", d);
    CHECK(testrun_cli(args, out, sizeof out) == 1);
    CHECK_CONTAINS(out, "--window-ms");
    snprintf(args, sizeof args, "compare %s/sim.json %s/ch31_table_31_1_serial.json", dir, d);
    CHECK(testrun_cli(args, out, sizeof out) == 1);
    CHECK_CONTAINS(out, "neither a servesim report");
}

static void test_spec_and_workload_commands(void)
{
    static char out[65536];
    CHECK(testrun_cli("spec-plan --accept 0.75 --draft-len 4 --verify-ms 26.26 --draft-ms 0.1 --json", out, sizeof out) == 0);
    cJSON *j = cJSON_Parse(out);
    CHECK(j != NULL);
    if (j) {
        CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(j, "expected_tokens_per_round")->valuedouble, 3.05078125, 1e-9);
        CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(j, "ms_per_token")->valuedouble, 26.36 / 3.05078125, 1e-6);
        cJSON_Delete(j);
    }
    /* exercise 8-7 with grouped rows: the best draft length is 4 */
    CHECK(testrun_cli("spec-plan --accept 0.75 --verify-ms 26.3 --per-draft-ms 3.6 --group 4 --max-draft-len 12 --json", out,
             sizeof out) == 0);
    j = cJSON_Parse(out);
    CHECK(j && cJSON_GetObjectItemCaseSensitive(j, "best_draft_len")->valueint == 4);
    cJSON_Delete(j);
    CHECK(testrun_cli("spec-plan --accept 0.6 --model qwen3-8b --hardware rtx-pro-6000 --batch 1 --context 2048", out,
             sizeof out) == 0);
    CHECK_CONTAINS(out, "best draft length");
    CHECK(testrun_cli("spec-verify --p 0.6,0.4 --q 0.8,0.2 --draws 200000 --seed 3 --json", out, sizeof out) == 0);
    j = cJSON_Parse(out);
    CHECK(j != NULL);
    if (j) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "distribution");
        CHECK_NEAR(cJSON_GetArrayItem(d, 0)->valuedouble, 0.6, 0.005);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "acceptance");
        CHECK_NEAR(cJSON_GetArrayItem(a, 0)->valuedouble, 0.75, 0.005);
        cJSON_Delete(j);
    }
    CHECK(testrun_cli("spec-verify --p 0.6,0.4 --q 0.8,0.2 --draws 200000 --rule resample-p --json", out, sizeof out) == 0);
    j = cJSON_Parse(out);
    CHECK(j && fabs(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "distribution"), 0)->valuedouble - 0.72) < 0.005);
    cJSON_Delete(j);
    CHECK(testrun_cli("spec-verify --p 0.6,0.5 --q 0.8,0.2", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "sum to 1");
    CHECK(testrun_cli("spec-plan --draft-len 4", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "--accept");
    /* the workload command on a small fixture */
    CHECK(testrun_cli("workload " SERVESIM_DATA_DIR "/../shared/data/traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv "
             "--stats --json", out, sizeof out) == 0);
    j = cJSON_Parse(out);
    CHECK(j && cJSON_GetObjectItemCaseSensitive(j, "count")->valueint == 8819);
    cJSON_Delete(j);
}

static void test_calib_and_cost_commands(void)
{
    static char out[65536];
    CHECK(testrun_cli("cost --hardware h100-sxm --gemm 4096,4096,4096 --json", out, sizeof out) == 0);
    cJSON *j = cJSON_Parse(out);
    CHECK(j != NULL);
    if (j) {
        double ms = cJSON_GetObjectItemCaseSensitive(j, "latency_ms")->valuedouble;
        /* 137.4 GFLOP at the H100 profile's large-GEMM efficiency: well under
         * the 0.139 ms of the 989 TFLOP/s peak's inverse, above it */
        CHECK(ms > 2 * 4096.0 * 4096 * 4096 / 989e12 * 1e3 && ms < 0.3);
        cJSON_Delete(j);
    }
    CHECK(testrun_cli("cost --hardware h100-sxm --model qwen3-8b --batch 1:2048,2048:0 --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"t_ms\"");
    CHECK(testrun_cli("cost --hardware h100-sxm --gemm 4096,4096", out, sizeof out) != 0);
    CHECK(testrun_cli("help calib", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "calib");
    /* a scenario naming a profile, and one turning profiles off */
    CHECK(testrun_cli("run --quiet " SERVESIM_DATA_DIR "/workloads/chapters/ch8_four_requests_static.json", out, sizeof out) == 0);
}

/* Runs "servesim ARGS" and checks that its output holds every line of
 * lines[] (NULL-terminated) as README.md quotes it. */
static void readme_run(const char *args, const char *const *lines)
{
    static char out[65536];
    int rc = testrun_cli(args, out, sizeof out);
    if (rc != 0) fprintf(stderr, "  servesim %s: exit %d\n", args, rc);
    CHECK_INT(rc, 0);
    for (int i = 0; lines[i]; i++) {
        if (!strstr(out, lines[i])) fprintf(stderr, "  README.md quotes a line 'servesim %s' no longer prints\n", args);
        CHECK_CONTAINS(out, lines[i]);
    }
}

/* Output token times (ms) of request `id` in a JSON report; the count. */
static int report_token_ms(const char *path, const char *id, double *ms, int max)
{
    Err e;
    char *t = read_file(path, NULL, &e);
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    int n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "requests")) {
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(r, "id");
        if (!cJSON_IsString(rid) || strcmp(rid->valuestring, id)) continue;
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "token_times_s")) {
            if (n < max) ms[n++] = x->valuedouble * 1e3;
        }
    }
    cJSON_Delete(j);
    return n;
}

/* The largest gap between consecutive token times (ms). */
static double worst_gap_ms(const double *ms, int n)
{
    double w = 0;
    for (int k = 1; k < n; k++) w = fmax(w, ms[k] - ms[k - 1]);
    return w;
}

/* Every number README.md quotes from a command, run as the README runs it.
 * When one changes, this names the command and the line; the README must
 * follow.  (Numbers the README takes from the C API are checked where they
 * are computed: test_sched.c, test_spec.c, test_prefix.c, test_calib.c.) */
static void test_readme_numbers(void)
{
    static char args[2048];
    const char *ch = SERVESIM_DATA_DIR "/workloads/chapters";
    char path[512];
    double ms[16];

    /* A worked example: the table, r0's token times and the three schedules */
    static const char *const worked[] = {
        "servesim: chapter 8 (003), figures 8-5/8-6/8-7: four requests, continuous scheduling",
        "  Qwen3-8B on 1 GPU(s) of NVIDIA RTX PRO 6000 Blackwell Server Edition 96GB (tp 1), linear cost model, "
        "continuous scheduler, max_running 2",
        "  KV: 12.00 GiB = 5461 blocks of 16 tokens, reserve final",
        "  requests: 4 (4 finished, 0 rejected), 8 iterations, 0 preemptions",
        "  metric          mean       p50       p90       p99       max",
        "  TTFT          382.24    354.46    623.37    653.38    656.71 ms  (n=4)",
        "  TPOT           41.23     26.30     68.12     84.25     86.04 ms  (n=4)",
        "  ITL            61.15     26.29     87.96    345.04    375.97 ms  (n=12)",
        "  E2E             0.57      0.65      0.76      0.76      0.77 s  (n=4)",
        "  queueing      182.88     84.81    444.22    550.13    561.90 ms  (n=4)",
        "  max ITL       113.72     26.30    271.07    365.48    375.97 ms  (n=4)",
        NULL};
    snprintf(path, sizeof path, "%s/readme_cont.json", dir);
    snprintf(args, sizeof args, "run %s/ch8_four_requests_continuous.json --json %s", ch, path);
    readme_run(args, worked);
    CHECK_INT(report_token_ms(path, "r0", ms, 16), 8);
    static const double r0[4] = {163.33, 189.62, 565.59, 591.90};
    for (int k = 0; k < 4; k++) CHECK_NEAR(ms[k], r0[k], 0.005);
    CHECK_NEAR(ms[1] - ms[0], 26.29, 0.005);
    CHECK_NEAR(ms[2] - ms[1], 375.97, 0.005);
    static const char *const none[] = {NULL};
    snprintf(path, sizeof path, "%s/readme_static.json", dir);
    snprintf(args, sizeof args, "run %s/ch8_four_requests_static.json --quiet --json %s", ch, path);
    readme_run(args, none);
    CHECK_INT(report_token_ms(path, "r0", ms, 16), 8);
    double r0_done = ms[7];
    CHECK_NEAR(r0_done, 347.16, 0.005);
    CHECK_INT(report_token_ms(path, "r2", ms, 16), 2);
    CHECK(ms[0] > r0_done);
    snprintf(path, sizeof path, "%s/readme_chunked.json", dir);
    snprintf(args, sizeof args, "run %s/ch8_four_requests_chunked.json --quiet --json %s", ch, path);
    readme_run(args, none);
    CHECK_INT(report_token_ms(path, "r0", ms, 16), 8);
    CHECK_NEAR(worst_gap_ms(ms, 8), 44.53, 0.005);

    /* the embedded default scenario */
    static const char *const dflt[] = {
        "  metric          mean       p50       p90       p99       max",
        "  TTFT           63.61     41.22    129.61    348.15    682.72 ms  (n=2000)",
        "  TPOT           14.81     14.54     18.10     22.65     32.37 ms  (n=2000)",
        "  throughput over the drain window 211.313 s (0.024 -> 211.336 s):",
        "    9.46 req/s, 3096.0 output tok/s, 16184.1 total tok/s",
        "  goodput over the same window (SLO: TTFT <= 500 ms TPOT <= 50 ms): 9.44 req/s, 3092.6 output tok/s, "
        "attainment 99.8%",
        NULL};
    readme_run("run", dflt);

    /* info, spec-plan, spec-verify */
    static const char *const info[] = {"  weights_read_bytes   15136811008 B", "  kv_bytes_per_token   147456 B", NULL};
    readme_run("info --model qwen3-8b", info);
    static const char *const plan75[] = {"     4     3.0508       26.360       8.6404", NULL};
    readme_run("spec-plan --accept 0.75 --draft-len 4 --verify-ms 26.26 --draft-ms 0.1", plan75);
    static const char *const plan25[] = {"     4     1.3320       26.360      19.7893", NULL};
    readme_run("spec-plan --accept 0.25 --draft-len 4 --verify-ms 26.26 --draft-ms 0.1", plan25);
    /* the output follows p, Paris is accepted with 0.75; the wrong rule gives Paris 0.72 */
    static const char *const verify[] = {"       0   0.6000   0.8000     0.600", "     0.750", NULL};
    readme_run("spec-verify --p 0.6,0.4 --q 0.8,0.2", verify);
    static const char *const wrong[] = {"       0   0.6000   0.8000     0.720", NULL};
    readme_run("spec-verify --p 0.6,0.4 --q 0.8,0.2 --rule resample-p", wrong);

    /* replay: chapter 31's table 31.1 */
    static const char *const serial[] = {
        "  TTFT          220.00    240.00    304.00    318.40    320.00 ms  (n=3)",
        "  TPOT           40.00     40.00     40.00     40.00     40.00 ms  (n=2)",
        "  throughput over the drain window 0.360 s (0.000 -> 0.360 s):",
        "    8.33 req/s, 16.7 output tok/s, 44.4 total tok/s",
        "  cost: $2.00/GPU-h x 1 GPU x 0.360 s billed (exact) = $0.000200; $0.033333 per 1k output tokens",
        NULL};
    snprintf(args, sizeof args, "replay %s/ch31_table_31_1_serial.json", ch);
    readme_run(args, serial);
    static const char *const cont[] = {
        "  throughput over the fixed window 0.400 s (0.000 -> 0.400 s):",
        "    7.50 req/s, 15.0 output tok/s, 40.0 total tok/s",
        NULL};
    snprintf(args, sizeof args, "replay %s/ch31_table_31_1_continuous.json --window-ms 0,400", ch);
    readme_run(args, cont);

    /* the error messages README.md shows */
    static char out[8192];
    const char *n = write_tmp("n.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", "
                                        "\"scheduler\": {\"kind\": \"continuous\"}, \"workload\": {\"requests\": "
                                        "[{\"arrival_ms\": 0, \"prompt_tokens\": -5, \"output_tokens\": 2}]}}");
    snprintf(args, sizeof args, "run %s", n);
    CHECK_INT(testrun_cli(args, out, sizeof out), 1);
    CHECK_CONTAINS(out, "n.json: workload.requests[0].prompt_tokens: got -5, expected an integer in [1, 10000000]");
    const char *u = write_tmp("u.json", "{\"model\": \"qwen9-8b\", \"hardware\": \"h100-sxm\", "
                                        "\"scheduler\": {\"kind\": \"continuous\"}, \"workload\": {\"requests\": "
                                        "[{\"arrival_ms\": 0, \"prompt_tokens\": 5, \"output_tokens\": 2}]}}");
    snprintf(args, sizeof args, "run %s", u);
    CHECK_INT(testrun_cli(args, out, sizeof out), 1);
    CHECK_CONTAINS(out, "u.json: model: unknown model \"qwen9-8b\" (no ");
    CHECK_CONTAINS(out, "/models/qwen9-8b.json); available: bloom-176b, deepseek-r1, ");
    const char *m = write_tmp("m.json", "{\n  \"model\": \"qwen3-8b\",\n  \"tp\": ,\n}\n");
    snprintf(args, sizeof args, "run %s", m);
    CHECK_INT(testrun_cli(args, out, sizeof out), 1);
    CHECK_CONTAINS(out, "m.json: line 3, column 9: malformed JSON near ','");
}

/* Issue 17 part A: info's memory breakdown on the M2 Max, a verify item in
 * `servesim cost`, and the table cost model in a scenario -- the lines
 * README.md quotes. */
static void test_issue17_commands(void)
{
    static char out[65536], args[2048];
    /* Chapter 003: Qwen3-235B-A22B Q2_K on an M2 Max: 96 GB = 89.41 GiB, 8 GiB
     * reserved for the system, 64.43 + 15.37 GiB of weights; one 8K request fits */
    static const char *const fit[] = {
        "memory per device (unified: weights, KV and the OS share it): 89.41 GiB usable (89.41 GiB x 1.00)",
        "  reserve                  8.00 GiB (the system's share)",
        "  weights                 79.80 GiB (64.43 codes and float data + 15.37 block metadata)",
        "  kv and state             1.47 GiB (1 x 8192 tokens, bf16)",
        "  free                     0.14 GiB: fits", NULL};
    readme_run("info --model qwen3-235b-a22b-q2_k --hardware m2-max --context 8192", fit);
    static const char *const nofit[] = {"  kv and state             2.94 GiB (2 x 8192 tokens, bf16)",
                                        "  short by                 1.33 GiB: does NOT fit", NULL};
    readme_run("info --model qwen3-235b-a22b-q2_k --hardware m2-max --context 8192 --batch 2", nofit);
    CHECK_INT(testrun_cli("info --model qwen3-235b-a22b-q2_k --hardware m2-max --context 8192 --json", out, sizeof out), 0);
    cJSON *j = cJSON_Parse(out);
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(j, "memory");
    const cJSON *wb = cJSON_GetObjectItemCaseSensitive(mem, "weights_bytes");
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(mem, "weights_meta_bytes");
    CHECK(cJSON_IsNumber(wb) && cJSON_IsNumber(mb));
    if (cJSON_IsNumber(wb) && cJSON_IsNumber(mb)) {
        CHECK_NEAR((wb->valuedouble - mb->valuedouble) / GIB, 64.43, 0.005);
        CHECK_NEAR(mb->valuedouble / GIB, 15.37, 0.005);
    }
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(mem, "fits")));
    cJSON_Delete(j);
    /* experts a step touches under uniform routing: 256 (1 - (1 - 8/256)^16) = 102.0 of 256 at 16 tokens */
    static const char *const touch[] = {"  experts touched      1 tokens: 8.0 of 256", "16 tokens: 102.0 of 256", NULL};
    readme_run("info --model deepseek-v3", touch);
    /* MLA's latent is on every GPU of a TP group: 64 x 8192 x 70,272 B per GPU */
    static const char *const mla[] = {"  kv and state            34.31 GiB (64 x 8192 tokens, bf16)", NULL};
    readme_run("info --model deepseek-v3 --hardware h200-sxm --tp 8 --context 8192 --batch 64", mla);
    CHECK_INT(testrun_cli("info --model deepseek-v3 --context 0", out, sizeof out), 2);
    CHECK_CONTAINS(out, "--context needs an integer in [1, 1e8] (tokens): 0");

    /* 16 requests verifying 8 positions each at 8K: ~2.56 TFLOP */
    char batch[512] = "";
    for (int i = 0; i < 16; i++) strcat(batch, i ? ",8:8192:v" : "8:8192:v");
    snprintf(args, sizeof args, "cost --hardware rtx-pro-6000 --profile none --model qwen3-8b --batch %s --json", batch);
    CHECK_INT(testrun_cli(args, out, sizeof out), 0);
    j = cJSON_Parse(out);
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "flops");
    CHECK(cJSON_IsNumber(fl) && fabs(fl->valuedouble / 1e12 - 2.56) < 0.005);
    CHECK_CONTAINS(out, "\"kind\":\t\"verify\"");
    cJSON_Delete(j);
    CHECK_INT(testrun_cli("cost --hardware rtx-pro-6000 --model qwen3-8b --batch 8:8192:x", out, sizeof out), 2);
    CHECK_CONTAINS(out, "--batch needs C:H[:v][,C:H...]");

    /* a table of measured steps by new tokens: the chapter's 2K decode
     * (26.26 ms) and 2K prefill (94.8 ms) */
    const char *t = write_tmp("table.json",
                              "{\"model\": \"qwen3-8b\", \"hardware\": \"rtx-pro-6000\", \"cost_model\": {\"kind\": "
                              "\"table\", \"x\": \"tokens\", \"points\": [[1, 26.26], [2048, 94.8]]}, \"scheduler\": "
                              "{\"kind\": \"continuous\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, "
                              "\"prompt_tokens\": 2048, \"output_tokens\": 3}]}}");
    snprintf(args, sizeof args, "run %s", t);
    CHECK_INT(testrun_cli(args, out, sizeof out), 0);
    CHECK_CONTAINS(out, "table cost model");
    CHECK_CONTAINS(out, "  TTFT           94.80     94.80     94.80     94.80     94.80 ms  (n=1)");
    CHECK_CONTAINS(out, "  TPOT           26.26     26.26     26.26     26.26     26.26 ms  (n=1)");
    const char *bad = write_tmp("table_bad.json",
                                "{\"model\": \"qwen3-8b\", \"hardware\": \"rtx-pro-6000\", \"cost_model\": {\"kind\": "
                                "\"table\", \"points\": [[2e10, 27.44], [1.5e10, 26.26]]}, \"workload\": {\"requests\": "
                                "[{\"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2}]}}");
    snprintf(args, sizeof args, "run %s", bad);
    CHECK_INT(testrun_cli(args, out, sizeof out), 1);
    CHECK_CONTAINS(out, "table_bad.json: cost_model.points[1]: x 1.5e+10 does not exceed the previous point's 2e+10");
}

/* Counted as a failure, not skipped silently. */
static void cli_no_tmpdir(void)
{
    fprintf(stderr, "  cannot create a temporary directory like %s\n", dir);
    CHECK(0);
}

/* The one path gives the previous release's materialised bytes: `run` of
 * scen prints the table of fixture cli/TAG.table and writes the JSON report
 * (requests and token times included), CSV, token CSV and vLLM file of
 * cli/TAG.json, .csv, .tok and .vllm (each output only where its flag is
 * set in outs: 'j', 'c', 't', 'v' for --vllm-json, or "s" for
 * --summary-only JSON; tests/fixtures/stream/README.md); the table holds
 * table_has.  The outputs lie in the test's directory as TAG.json, .csv,
 * .tok and .vllm until the next call with the same tag. */
static const char *run_vs_fixtures_in(const char *scen, const char *outs, const char *tag, const char *table_has)
{
    static char b[65536], args[6000];
    char f[4][600], flags[2600], name[128];
    const char *ext[4] = {"json", "csv", "tok", "vllm"};
    for (int x = 0; x < 4; x++) snprintf(f[x], sizeof f[x], "%s/%s.%s", dir, tag, ext[x]);
    size_t n = 0, m = sizeof flags;
    flags[0] = '\0';
    if (strchr(outs, 's')) n += (size_t)snprintf(flags + n, m - n, " --summary-only --json %s", f[0]);
    if (strchr(outs, 'j')) n += (size_t)snprintf(flags + n, m - n, " --json %s", f[0]);
    if (strchr(outs, 'c')) n += (size_t)snprintf(flags + n, m - n, " --csv %s", f[1]);
    if (strchr(outs, 't')) n += (size_t)snprintf(flags + n, m - n, " --tokens-csv %s", f[2]);
    if (strchr(outs, 'v')) snprintf(flags + n, m - n, " --vllm-json %s", f[3]);
    snprintf(args, sizeof args, "%s%s", scen, flags);
    int rc = testrun_cli_run(args, b, sizeof b);
    if (rc != 0) fprintf(stderr, "  %s: exit status %d: %s\n", tag, rc, b);
    CHECK_INT(rc, 0);
    CHECK_CONTAINS(b, table_has);
    snprintf(name, sizeof name, "cli/%s.table", tag);
    CHECK(testrun_fixture_text(b, strlen(b), name, dir) == 0);
    for (int x = 0; x < 4; x++) {
        static const char flag[4] = {'j', 'c', 't', 'v'};
        if (!strchr(outs, flag[x]) && !(x == 0 && strchr(outs, 's'))) continue;
        snprintf(name, sizeof name, "cli/%s.%s", tag, ext[x]);
        CHECK(testrun_fixture_file(f[x], name, dir) == 0);
    }
    return b; /* the run's table, until the next call */
}

static void run_vs_fixtures(const char *scen, const char *outs, const char *tag)
{
    run_vs_fixtures_in(scen, outs, tag, "replica ");
}

/* A scenario written to the test's directory; its path in scen. */
static int tmp_scen(char *scen, size_t n, const char *name, const char *text)
{
    const char *p = write_tmp(name, text);
    CHECK(p != NULL);
    if (p) snprintf(scen, n, "%s", p);
    return p != NULL;
}


/* run (issue 36): the default scenario runs on the one streamed path and
 * prints the previous release's materialised table and writes its bytes
 * (fixtures cli/default.*; the JSON report with its requests array and
 * token times, the CSV and the token CSV in workload order, kept as
 * digests); twice gives the same bytes. */
static void test_stream_run(void)
{
    static char a[65536], b[65536], args[2600];
    char ja[512], jb[512], ca[512], cb[512], kb[512];
    snprintf(ja, sizeof ja, "%s/sa.json", dir);
    snprintf(jb, sizeof jb, "%s/sb.json", dir);
    snprintf(ca, sizeof ca, "%s/sa.csv", dir);
    snprintf(cb, sizeof cb, "%s/sb.csv", dir);
    snprintf(kb, sizeof kb, "%s/kb.csv", dir);
    snprintf(args, sizeof args, "--json %s --csv %s --tokens-csv %s", jb, cb, kb);
    CHECK(testrun_cli_run(args, b, sizeof b) == 0);
    CHECK_CONTAINS(b, "requests: 2000 (2000 finished, 0 rejected)");
    CHECK(testrun_fixture_text(b, strlen(b), "cli/default.table", dir) == 0);
    CHECK(testrun_fixture_file(jb, "cli/default.json", dir) == 0);
    CHECK(testrun_fixture_file(cb, "cli/default.csv", dir) == 0);
    CHECK(testrun_fixture_file(kb, "cli/default.tok", dir) == 0);
    Err e;
    size_t la, lb;
    char *ta = read_file(jb, &la, &e);
    cJSON *x = ta ? cJSON_Parse(ta) : NULL;
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(x, "requests"), 0);
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(x, "requests")), 2000);
    CHECK(cJSON_GetObjectItem(r0, "token_times_s") != NULL);
    cJSON_Delete(x);
    free(ta);
    /* --stream is accepted and changes nothing */
    snprintf(args, sizeof args, "run --stream --quiet --json %s", ja);
    CHECK(testrun_cli(args, a, sizeof a) == 0);
    char *tb = read_file(jb, &lb, &e);
    ta = read_file(ja, &la, &e);
    CHECK(ta && tb && la == lb && memcmp(ta, tb, la) == 0);
    free(ta);
    free(tb);
    /* --summary-only: the JSON without the requests */
    snprintf(args, sizeof args, "run --quiet --summary-only --json %s", ca);
    CHECK(testrun_cli(args, a, sizeof a) == 0);
    ta = read_file(ca, &la, &e);
    x = ta ? cJSON_Parse(ta) : NULL;
    CHECK(x && !cJSON_GetObjectItem(x, "requests") && cJSON_GetObjectItem(x, "summary") &&
          cJSON_GetObjectItem(x, "scenario"));
    cJSON_Delete(x);
    free(ta);
    /* README "2. A policy experiment in Lua" quotes the experiment's table */
    static const char *const lua_rows[] = {
        "goodput vs arrival rate: 400 Poisson requests per point, TTFT SLO 1000 ms, TPOT SLO 50 ms\n",
        "rate_per_s  policy          completed_per_s  goodput_per_s  slo_attainment  rejected  ttft_p50_ms  "
        "ttft_p99_ms  tpot_p50_ms\n",
        "        16  continuous (C)            10.02          2.829          0.2825         0         5358    "
        "1.155e+04        16.67\n",
        "        16  edf_slo (Lua)             9.739          9.739          0.7175       113        758.6        "
        "971.8        16.19\n", NULL};
    snprintf(args, sizeof args, "lua --allow-write %s " SERVESIM_DATA_DIR "/lua/experiments/sweep_rates.lua out=%s/sr.csv",
             dir, dir);
    readme_run(args, lua_rows);
    char *top = read_file(SERVESIM_DATA_DIR "/README.md", NULL, &e);
    for (int k = 0; lua_rows[k]; k++) CHECK(top && strstr(top, lua_rows[k]));
    free(top);
    /* sim/README.md "Large runs" quotes the default run */
    static const char *const quoted[] = {
        "  requests: 2000 (2000 finished, 0 rejected), 15411 iterations, 0 preemptions",
        "  TTFT           63.61     41.22    129.61    348.15    682.72 ms  (n=2000)",
        "  ITL            14.75     11.57     25.96     50.54     87.05 ms  (n=652229)", NULL};
    readme_run("run", quoted);
    char *readme = read_file(SERVESIM_DATA_DIR "/sim/README.md", NULL, &e);
    for (int k = 0; quoted[k]; k++) CHECK(readme && strstr(readme, quoted[k]));
    free(readme);
    /* --stream is accepted and does nothing */
    snprintf(args, sizeof args, "run --stream --trace-events %s/t.json", dir);
    CHECK(testrun_cli(args, a, sizeof a) == 0);
    CHECK_CONTAINS(a, "requests: 2000 (2000 finished, 0 rejected)");
    const char *p = write_tmp("sess.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                                          "{\"kind\": \"continuous\"}, \"workload\": {\"kind\": \"sessions\", "
                                          "\"sessions\": 2, \"rate_per_s\": 1, \"turns\": 2, \"first_prompt_tokens\": 10, "
                                          "\"new_tokens_per_turn\": 4, \"output_tokens\": 5}}");
    snprintf(args, sizeof args, "run --stream %s", p);
    CHECK(testrun_cli(args, a, sizeof a) == 0);
    CHECK_CONTAINS(a, "requests: 4 (4 finished, 0 rejected)");
    /* so is --materialise, for a release (issue 36: the materialised
     * path is gone): the same table, and bench says it streamed */
    snprintf(args, sizeof args, "run --materialise %s", p);
    CHECK(testrun_cli(args, b, sizeof b) == 0);
    CHECK(strcmp(a, b) == 0);
    snprintf(args, sizeof args, "bench --scenario %s --materialise", p);
    CHECK(testrun_cli(args, b, sizeof b) == 0);
    CHECK_CONTAINS(b, "sess.json, streamed)");
    CHECK_CONTAINS(b, "4 requests, ");
}

/* Warm-up, cool-down and a fixed window stream (issue 36): by count and
 * by time, with per-token times kept (ITL from the included requests'
 * gaps) and without (ITL n/a, as materialised; a fixed window needs them),
 * on a generator and on a trace; the table, JSON and CSV are the
 * previous release's materialised bytes. */
static void test_stream_warmup(void)
{
    static const char *const metrics[] = {
        "{\"warmup_requests\": 150, \"cooldown_requests\": 90}", "{\"warmup_s\": 3, \"cooldown_s\": 2.5}",
        "{\"warmup_requests\": 40}", "{\"cooldown_s\": 4}", "{\"window_ms\": [2000, 9000]}",
        "{\"warmup_requests\": 50, \"window_ms\": [1000, 6000]}"};
    static const char *const workload[] = {
        "{\"kind\": \"poisson\", \"rate_per_s\": 40, \"count\": 600, \"prompt_tokens\": 256, "
        "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 8, \"max\": 96}}",
        "{\"trace\": \"" SERVESIM_DATA_DIR "/../shared/data/traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv\", "
        "\"format\": \"azure\", \"limit\": 500}"};
    char text[2048], scen[600], tag[32];
    for (size_t w = 0; w < 2; w++)
        for (size_t m = th_step() > 1 ? w : 0; m < sizeof metrics / sizeof *metrics; m += th_step())
            for (int tt = m >= 4; tt < 2; tt++) {
                snprintf(text, sizeof text, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                         "{\"kind\": \"chunked\", \"max_running\": 64, \"token_budget\": 2048}, \"workload\": %s, "
                         "\"metrics\": %s, \"report\": {\"token_times\": %s}, \"seed\": 3}", workload[w], metrics[m],
                         tt ? "true" : "false");
                if (!tmp_scen(scen, sizeof scen, "warm.json", text)) return;
                snprintf(tag, sizeof tag, "w%zu%zu%d", w, m, tt);
                run_vs_fixtures_in(scen, "jc", tag, m != 4 ? "excluded as warm-up/cool-down"
                                                           : "throughput over the fixed window");
            }
}

/* report.token_times unset: per-token times kept up to 1,000,000 output
 * tokens, not past it (the summary's ITL is the same either way, streamed
 * from the engine); --tokens-csv writes one row per token and keeps them
 * whatever the size. */
static void test_token_times_auto(void)
{
    static char out[65536], args[2600];
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\", "
                      "\"max_running\": 256}, \"workload\": {\"kind\": \"constant\", \"rate_per_s\": 50, \"count\": %d, "
                      "\"prompt_tokens\": 8, \"output_tokens\": 1000}, \"seed\": 2%s}";
    char text[1024];
    const char *name[3] = {"auto_small.json", "auto_big.json", "auto_big_kept.json"};
    const int count[3] = {1000, 1001, 1001};
    const char *extra[3] = {"", "", ", \"report\": {\"token_times\": true}"};
    int has_tt[3];
    double itl_p99[3];
    unsigned long long itl_n[3];
    for (int k = 0; k < 3; k++) {
        snprintf(text, sizeof text, fmt, count[k], extra[k]);
        char scen[600], js[600];
        snprintf(scen, sizeof scen, "%s", write_tmp(name[k], text));
        snprintf(js, sizeof js, "%s/%s.out", dir, name[k]);
        snprintf(args, sizeof args, "run %s --quiet --json %s", scen, js);
        CHECK(testrun_cli(args, out, sizeof out) == 0);
        Err e;
        char *t = read_file(js, NULL, &e);
        cJSON *j = t ? cJSON_Parse(t) : NULL;
        free(t);
        const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "requests"), 0);
        has_tt[k] = cJSON_GetObjectItem(r0, "token_times_s") != NULL;
        const cJSON *itl = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "summary"), "itl_s");
        itl_n[k] = (unsigned long long)cJSON_GetNumberValue(cJSON_GetObjectItem(itl, "count"));
        itl_p99[k] = cJSON_GetNumberValue(cJSON_GetObjectItem(itl, "p99"));
        cJSON_Delete(j);
    }
    CHECK(has_tt[0] && !has_tt[1] && has_tt[2]);
    CHECK_INT(itl_n[0], 1000 * 999);
    CHECK_INT(itl_n[1], 1001 * 999);
    CHECK_INT(itl_n[2], 1001 * 999);
    CHECK(itl_p99[1] == itl_p99[2] && itl_p99[1] > 0);
    /* --tokens-csv keeps them for the big one */
    snprintf(args, sizeof args, "run %s/%s --quiet --tokens-csv %s/tok.csv", dir, name[1], dir);
    CHECK(testrun_cli(args, out, sizeof out) == 0);
    snprintf(args, sizeof args, "%s/tok.csv", dir);
    Err e;
    size_t len = 0;
    char *t = read_file(args, &len, &e);
    size_t lines = 0;
    for (size_t i = 0; t && i < len; i++) lines += t[i] == '\n';
    CHECK_INT(lines, 1 + 1001 * 1000);
    CHECK(t && !strncmp(t, "id,token,time_s\n\"0\",0,", 22));
    free(t);
}

/* streamrun takes scen itself (no refusal, nothing materialised) and pulls
 * from lo to hi requests. */
static void check_streams_itself(const char *scen, uint64_t lo, uint64_t hi)
{
    StreamRun *r = xmalloc(sizeof *r);
    Err se = {0};
    CHECK(streamrun(r, scen, NULL, NULL, 0, 0, 0, NULL, &se) == 0);
    CHECK(r->requests >= lo && r->requests <= hi);
    streamrun_free(r);
    free(r);
}

/* --iterations-csv streams (issue 36): one replica's rows are written as
 * its iterations end, the previous release's materialised bytes (fixture
 * cli/it.csv, a digest; the decode fast path on), and streamrun takes it
 * itself; report.iterations false and several replicas fail with the
 * previous release's messages (cli/itbad0.out, cli/itbad1.out). */
static void test_stream_iterations_csv(void)
{
    static char b[65536], args[2600];
    char ia[600], ib[600];
    snprintf(ia, sizeof ia, "%s/ia.csv", dir);
    snprintf(ib, sizeof ib, "%s/ib.csv", dir);
    snprintf(args, sizeof args, "--iterations-csv %s", ib);
    CHECK(testrun_cli_run(args, b, sizeof b) == 0);
    CHECK(testrun_fixture_text(b, strlen(b), "cli/it.table", dir) == 0);
    CHECK(testrun_fixture_file(ib, "cli/it.csv", dir) == 0);
    Err e = {0};
    size_t n = 0;
    char *t = read_file(ib, &n, &e);
    /* the default run's 15,411 iterations and the header */
    size_t lines = 0;
    for (size_t k = 0; t && k < n; k++) lines += t[k] == '\n';
    CHECK_INT(lines, 15412);
    CHECK(t && !strncmp(t, "iteration,start_s,duration_s,", 29));
    free(t);
    StreamRun *r = xmalloc(sizeof *r);
    StreamOutputs so = {.iter_csv = ia};
    Err se = {0};
    CHECK(streamrun(r, NULL, scenario_default_json, "(default)", 0, 0, 0, &so, &se) == 0);
    CHECK_INT(r->n_iter_rows, 15411);
    streamrun_free(r);
    free(r);
    CHECK(testrun_fixture_cmp_file(ia, "cli/it.csv", dir) == 0);
    /* --vllm-json likewise: its per-request arrays in workload order from
     * ordered writers (the cancellation cases of test_stream_cancel check
     * a cluster's and a disaggregated run's too) */
    run_vs_fixtures_in("", "sv", "vl", "SLO verdict");
    r = xmalloc(sizeof *r);
    StreamOutputs sv = {.vllm = 1};
    se = (Err){0};
    CHECK(streamrun(r, NULL, scenario_default_json, "(default)", 0, 0, 0, &sv, &se) == 0);
    snprintf(ib, sizeof ib, "%s/vl2.vllm", dir);
    CHECK(streamrun_write_vllm(r, ib, &se) == 0);
    CHECK(testrun_fixture_cmp_file(ib, "cli/vl.vllm", dir) == 0);
    streamrun_free(r);
    free(r);
    static const char *const bad[] = {
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"}, "
        "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 2, \"count\": 20, \"prompt_tokens\": 50, "
        "\"output_tokens\": 5}, \"report\": {\"iterations\": false}}",
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"}, "
        "\"cluster\": {\"replicas\": 2}, \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 2, \"count\": 20, "
        "\"prompt_tokens\": 50, \"output_tokens\": 5}}"};
    static const char *const why[] = {"need report.iterations (it is false)",
                                      "kept for a single replica; this run has 2"};
    for (int k = 0; k < 2; k++) {
        char scen[600], name[64];
        if (!tmp_scen(scen, sizeof scen, k ? "itbad1.json" : "itbad0.json", bad[k])) continue;
        snprintf(args, sizeof args, "%s --iterations-csv %s/ic.csv", scen, dir);
        CHECK(testrun_cli_run(args, b, sizeof b) != 0);
        CHECK_CONTAINS(b, why[k]);
        snprintf(name, sizeof name, "cli/itbad%d.out", k);
        CHECK(testrun_fixture_text(b, strlen(b), name, dir) == 0);
        char ic[640];
        snprintf(ic, sizeof ic, "%s/ic.csv", dir);
        CHECK(access(ic, F_OK) != 0);
    }
}

/* Workloads only a whole reading can order stream too (issue 36): a request
 * list (classes, tenants, deadlines, cancellations), a JSON-lines trace out
 * of arrival order and an Azure trace's block bootstrap are read whole by
 * the materialised loader and handed to the streamed engine in its order:
 * the previous release's materialised table, JSON, CSV and vLLM file, and
 * streamrun takes each itself; so do a list of "after" chains and parallel
 * sampling. */
static void test_stream_whole_lists(void)
{
    char *list = xmalloc(1 << 16), *lines = xmalloc(1 << 16), scen[600];
    size_t n = (size_t)snprintf(list, 1 << 16, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", "
                                "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 6, \"token_budget\": 512}, "
                                "\"slo\": {\"ttft_ms\": 300}, \"workload\": {\"requests\": [");
    size_t m = 0;
    for (int i = 0; i < 40; i++) {
        /* arrivals out of order: every fifth one earlier than its neighbours */
        double t = i % 5 == 4 ? 13.0 * i - 40 : 13.0 * i;
        n += (size_t)snprintf(list + n, (1 << 16) - n,
                              "%s{\"id\": \"q%d\", \"arrival_ms\": %.1f, \"prompt_tokens\": %d, "
                              "\"output_tokens\": %d, \"class\": \"%s\", \"tenant\": \"%s\"%s%s}",
                              i ? ", " : "", i, t, 60 + 37 * (i % 7), 3 + i % 11, i % 3 ? "chat" : "batch",
                              i % 2 ? "t1" : "t2", i % 4 == 1 ? ", \"deadline_ms\": 250" : "",
                              i % 9 == 2 ? ", \"cancel_after_ms\": 30" : "");
        m += (size_t)snprintf(lines + m, (1 << 16) - m,
                              "{\"id\": \"j%d\", \"arrival_ms\": %.1f, \"prompt_tokens\": %d, \"output_tokens\": %d}\n",
                              i, t, 90 + 11 * i, 4 + i % 5);
    }
    snprintf(list + n, (1 << 16) - n, "]}}");
    char tp[600], text[2048];
    const char *w = write_tmp("unsorted.jsonl", lines);
    snprintf(tp, sizeof tp, "%s", w ? w : "");
    static const char *const tags[] = {"wl0", "wl1", "wl2"};
    for (int k = 0; k < 3; k += (int)th_step()) {
        if (k == 1)
            snprintf(text, sizeof text,
                     "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                     "\"continuous\", \"max_running\": 4}, \"workload\": {\"trace\": \"%s\", \"format\": \"json\"}}",
                     tp);
        if (k == 2)
            snprintf(text, sizeof text,
                     "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                     "\"chunked\", \"max_running\": 64, \"token_budget\": 2048}, \"workload\": {\"trace\": \""
                     SERVESIM_DATA_DIR "/../shared/data/traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv\", "
                     "\"format\": \"azure\", \"window_s\": [0, 600], \"bootstrap_block_s\": 60}, \"seed\": 7}");
        if (!tmp_scen(scen, sizeof scen, "whole.json", k ? text : list)) continue;
        run_vs_fixtures_in(scen, "jcv", tags[k], "requests: ");
        check_streams_itself(scen, k == 2 ? 501 : 40, k == 2 ? UINT64_MAX : 40);
    }
    /* "after" links are chains: each link is made when its predecessor
     * leaves (tool_ms later), on one replica and on two, with a warm-up by
     * count (chains are ranked as they arrive); the task split as well */
    char *agent = xmalloc(1 << 16);
    n = (size_t)snprintf(agent, 1 << 16, "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                         "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 6, \"token_budget\": 1024}, "
                         "\"metrics\": {\"warmup_requests\": 5}, \"workload\": {\"requests\": [");
    for (int c = 0, first = 1; c < 24; c++)
        for (int k = 0; k < 1 + c % 4; k++, first = 0) {
            if (k == 0)
                n += (size_t)snprintf(agent + n, (1 << 16) - n, "%s{\"id\": \"c%d.0\", \"arrival_ms\": %d, ",
                                      first ? "" : ", ", c, (c * 7919) % 9000);
            else
                n += (size_t)snprintf(agent + n, (1 << 16) - n, ", {\"id\": \"c%d.%d\", \"after\": \"c%d.%d\", "
                                      "\"tool_ms\": %d, ", c, k, c, k - 1, (c * 31 + k * 97) % 300);
            n += (size_t)snprintf(agent + n, (1 << 16) - n, "\"prompt_tokens\": %d, \"output_tokens\": %d}",
                                  80 + (c * 13 + k * 29) % 700, 3 + (c + k) % 40);
        }
    snprintf(agent + n, (1 << 16) - n, "]}%s}", "");
    for (int k = 0; k < 2; k += (int)th_step()) {
        if (k == 1) {
            /* the same list on two replicas */
            char *at = strstr(agent, "\"metrics\"");
            if (!at) break;
            memmove(at + 52, at, strlen(at) + 1);
            memcpy(at, "\"cluster\": {\"replicas\": 2, \"router\": \"round_robin\"}, ", 52);
        }
        if (!tmp_scen(scen, sizeof scen, "linked.json", agent)) continue;
        run_vs_fixtures_in(scen, "jcv", k ? "wl4" : "wl3", "tasks: 24 (24 complete, 60 turns)");
        check_streams_itself(scen, 60, 60);
    }
    free(agent);
    /* parallel sampling ("n") streams: the branches are made as the
     * engine forks them (test_stream_sampling) */
    const char *sampled = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                          "\"continuous\"}, \"workload\": {\"requests\": [{\"id\": \"a\", \"arrival_ms\": 0, "
                          "\"prompt_tokens\": 20, \"output_tokens\": 4, \"n\": 3}]}}";
    if (tmp_scen(scen, sizeof scen, "sampled.json", sampled)) {
        run_vs_fixtures_in(scen, "jc", "wl5", "requests: 3 (3 finished");
        StreamRun *r = xmalloc(sizeof *r);
        Err se = {0};
        CHECK(streamrun(r, scen, NULL, NULL, 0, 0, 0, NULL, &se) == 0);
        CHECK(r->eng != NULL);
        CHECK_INT(r->requests, 3);
        CHECK_INT(r->sum.finished, 3);
        CHECK_INT(r->peak_live, 3);
        streamrun_free(r);
        free(r);
    }
    free(list);
    free(lines);
}

/* Parallel sampling streams (issue 36): a request's branches are made in
 * slots the pool kept for them when the engine forks them off its
 * prefill (sharing its blocks, copy-on-write), or when it is rejected (a
 * context too long) or cancelled before; on two replicas with a prefix
 * cache and a pool that makes some branches wait, the previous release's
 * materialised table, CSV, summary and trace (narrowed to a window and
 * five lanes: a rejected parent, a branch, a cancelled parent and its
 * branch, a cancelled request). */
static void test_stream_sampling(void)
{
    const char *scen = SERVESIM_DATA_DIR "/tests/fixtures/sampling_scenario.json";
    run_vs_fixtures_in(scen, "sc", "sampling", "requests: 48 (39 finished, 4 rejected, 5 cancelled), 131 iterations");
    char csv[600];
    snprintf(csv, sizeof csv, "%s/sampling.csv", dir);
    Err e = {0};
    char *c = read_file(csv, NULL, &e);
    /* a rejected parent's branches and a cancelled one's, after every parent */
    CHECK(c && strstr(c, "\n\"q4#3\",0.16,60000,3,\"default\",rejected,,,,,,0,0,context_too_long\n"
                         "\"q6#1\",0.24,1695,11,\"default\",finished,0.034402467,"));
    CHECK(c && strstr(c, "\n\"q10#3\",0.4,1379,7,\"default\",cancelled,,,,,,0,0,\n"));
    free(c);
    /* its trace, written as it runs */
    static char out[65536], args[2000];
    char tr[600];
    snprintf(tr, sizeof tr, "%s/sampling.trace.json", dir);
    snprintf(args, sizeof args, "%s --quiet --trace-events %s --trace-window 0.15,0.45 --trace-ids "
             "q4,q6#1,q10,q10#2,q7", scen, tr);
    CHECK_INT(testrun_cli_run(args, out, sizeof out), 0);
    CHECK(testrun_fixture_file(tr, "cli/sampling.trace.json", dir) == 0);
    c = read_file(tr, NULL, &e);
    CHECK(c && strstr(c, "\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0.000,\"pid\":2,\"tid\":35,\"args\":"
                         "{\"name\":\"q10#2\"}"));
    CHECK(c && strstr(c, "\"name\":\"KV blocks used (replica 1)\""));
    free(c);
    /* on the streamed engine: 48 requests, 24 of them branches, held a few at a time */
    StreamRun *r = xmalloc(sizeof *r);
    CHECK(streamrun(r, scen, NULL, NULL, 0, 0, 0, NULL, &e) == 0);
    CHECK(r->cl != NULL && r->eng == NULL);
    CHECK_INT(r->requests, 48);
    CHECK_INT(r->sum.finished, 39);
    CHECK_INT(r->sum.rejected, 4);
    CHECK_INT(r->sum.cancelled, 5);
    CHECK(r->peak_live >= 4 && r->peak_live < 24);
    streamrun_free(r);
    free(r);
}

/* A CSV trace's own tenants, classes and sessions stream (issue 36): a
 * first pass registers the names before the metrics' class table is made,
 * and a session's turns get the synthetic ids the materialised load gives
 * them (the prefix cache hits them); the previous release's materialised
 * bytes. */
static void test_stream_csv_names(void)
{
    char *csv = xmalloc(1 << 16), tp[600], text[1400], scen[600];
    size_t n = (size_t)snprintf(csv, 1 << 16, "arrival_ms,prompt_tokens,output_tokens,session,class,tenant\n");
    uint32_t ctx[12] = {0};
    for (int i = 0; i < 150; i++) {
        int u = (i * 7) % 12;
        ctx[u] += 150 + (uint32_t)(i * 37) % 200;
        n += (size_t)snprintf(csv + n, (1 << 16) - n, "%d,%u,%d,u%d,%s,%s\n", i * 45, ctx[u], 5 + i % 30, u,
                              i % 3 ? "chat" : "bulk", i % 4 ? "acme" : "zeta");
    }
    const char *w = write_tmp("names.csv", csv);
    snprintf(tp, sizeof tp, "%s", w ? w : "");
    snprintf(text, sizeof text,
             "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
             "\"max_running\": 16, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true}, \"slo\": "
             "{\"ttft_ms\": 200, \"classes\": {\"bulk\": {\"ttft_ms\": 2000}}}, \"workload\": {\"trace\": \"%s\", "
             "\"format\": \"csv\", \"sample\": 0.8}, \"seed\": 9}", tp);
    if (tmp_scen(scen, sizeof scen, "names.json", text)) {
        const char *t = run_vs_fixtures_in(scen, "jc", "nm", "prefix cache: ");
        CHECK(t && strstr(t, "bulk"));
        StreamRun *r = xmalloc(sizeof *r);
        Err se = {0};
        CHECK(streamrun(r, scen, NULL, NULL, 0, 0, 0, NULL, &se) == 0);
        CHECK(r->mc.n_cls == 3);
        streamrun_free(r);
        free(r);
    }
    free(csv);
}

/* A closed loop of any dataset size streams (issue 36): the stream keeps
 * the lengths of min(entries, count) requests, 8 B each; 2 x 10^6 entries
 * (once refused past 10^6) give the previous release's materialised bytes. */
static void test_stream_dataset_entries(void)
{
    char scen[600];
    const char *text = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                       "\"continuous\", \"max_running\": 4}, \"workload\": {\"kind\": \"closed_loop\", \"clients\": 3, "
                       "\"count\": 40, \"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 50, \"max\": 400}, "
                       "\"output_tokens\": 6, \"dataset_entries\": 2000000}, \"seed\": 4}";
    if (!tmp_scen(scen, sizeof scen, "entries.json", text)) return;
    run_vs_fixtures_in(scen, "jc", "de", "requests: 40 (40 finished");
    check_streams_itself(scen, 40, 40);
}

/* A chain's cool-down by time streams (issue 36): the last arrival is the
 * run's, so a first run of the same scenario finds it (the metrics never
 * steer the simulation); sessions with a prefix cache on two replicas and
 * a closed loop give the previous release's materialised bytes. */
static void test_stream_chain_cooldown_s(void)
{
    static const char *const texts[] = {
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
        "\"max_running\": 32, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true}, \"cluster\": {\"replicas\": 2, "
        "\"router\": \"prefix_affinity\"}, \"workload\": {\"kind\": \"sessions\", \"sessions\": 120, \"rate_per_s\": 4, "
        "\"turns\": {\"dist\": \"uniform\", \"min\": 2, \"max\": 5}, \"first_prompt_tokens\": 300, "
        "\"new_tokens_per_turn\": 60, \"output_tokens\": 40, \"think_ms\": 800}, \"metrics\": {\"warmup_s\": 5, "
        "\"cooldown_s\": 7}, \"slo\": {\"ttft_ms\": 300}, \"seed\": 3}",
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", \"workload\": {\"kind\": "
        "\"closed_loop\", \"clients\": 6, \"count\": 90, \"prompt_tokens\": 500, \"output_tokens\": 30}, "
        "\"metrics\": {\"cooldown_s\": 2}, \"seed\": 2}"};
    for (int k = 0; k < 2; k++) {
        char scen[600];
        if (!tmp_scen(scen, sizeof scen, k ? "cdc.json" : "cds.json", texts[k])) continue;
        run_vs_fixtures_in(scen, "jct", k ? "cd1" : "cd0", "excluded as warm-up/cool-down");
        check_streams_itself(scen, k ? 90 : 240, k ? 90 : 600);
    }
}

/* A trace's ids of any length stream (issue 36): each slot keeps its own
 * copy, grown as a longer id comes; 300-character ids give the previous
 * release's materialised table, CSV and JSON, and the streamed engine takes
 * the trace itself (streamrun does not refuse it). */
static void test_stream_long_ids(void)
{
    char *csv = xmalloc(1 << 16), scen[600], text[1200];
    size_t n = (size_t)snprintf(csv, 1 << 16, "arrival_ms,prompt_tokens,output_tokens,id\n");
    for (int i = 0; i < 60; i++) {
        n += (size_t)snprintf(csv + n, (1 << 16) - n, "%d,%d,%d,", i * 40, 100 + 7 * i, 5 + i % 9);
        /* ids of 1 to 300 characters, the long ones ending apart */
        int len = i % 3 == 0 ? 300 : 1 + i;
        for (int k = 0; k < len - 3; k++) csv[n++] = (char)('a' + (i + k) % 26);
        n += (size_t)snprintf(csv + n, (1 << 16) - n, "%03d\n", i);
    }
    const char *tp = write_tmp("long_ids.csv", csv);
    CHECK(tp != NULL);
    snprintf(text, sizeof text,
             "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\", "
             "\"max_running\": 8}, \"workload\": {\"trace\": \"%s\", \"format\": \"csv\"}}", tp ? tp : "");
    if (tmp_scen(scen, sizeof scen, "long_ids.json", text)) {
        const char *t = run_vs_fixtures_in(scen, "jc", "longid", "requests: 60 (60 finished");
        CHECK(t != NULL);
        char path[700], *out;
        snprintf(path, sizeof path, "%s/longid.csv", dir);
        Err e = {0};
        out = read_file(path, NULL, &e);
        /* a 300-character id, whole, in its row */
        char want[320];
        for (int k = 0; k < 297; k++) want[k] = (char)('a' + (57 + k) % 26);
        snprintf(want + 297, sizeof want - 297, "057");
        CHECK(out && strstr(out, want));
        free(out);
        check_streams_itself(scen, 60, 60);
    }
    free(csv);
}

/* run of a trace file streams: the Azure code trace with a window, a
 * sample, time_scale, max_context and a class mix prints the previous
 * release's materialised table and writes its CSV rows (ids are the
 * records' ordinals), with time_scale and with rate_per_s. */
static void test_stream_trace(void)
{
    const char *fmt =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
        "\"max_running\": 64, \"token_budget\": 2048}, \"workload\": {\"trace\": \"" SERVESIM_DATA_DIR
        "/../shared/data/traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv\", \"format\": \"azure\", "
        "\"window_s\": [60, 900], \"sample\": 0.5, %s\"max_context\": 6000, "
        "\"mix\": [{\"weight\": 1, \"class\": \"x\", \"deadline_ms\": 3000}, {\"weight\": 2, \"class\": \"y\"}]}, "
        "\"slo\": {\"ttft_ms\": 400, \"classes\": {\"y\": {\"tpot_ms\": 30}}}, \"seed\": 4}";
    char text[2048], scen[600], cb[700];
    snprintf(text, sizeof text, fmt, "\"time_scale\": 0.8, ");
    if (!tmp_scen(scen, sizeof scen, "trace_stream.json", text)) return;
    run_vs_fixtures_in(scen, "c", "ts", "SLO verdict");
    snprintf(cb, sizeof cb, "%s/ts.csv", dir);
    Err e = {0};
    size_t n = 0, rows = 0;
    char *t = read_file(cb, &n, &e);
    for (size_t k = 0; t && k < n; k++) rows += t[k] == '\n';
    CHECK(rows > 100);
    free(t);
    /* rate_per_s: the speed from a first pass over the file (the same
     * window, sample draws and limit), then streamed */
    snprintf(text, sizeof text, fmt, "\"rate_per_s\": 2, ");
    if (tmp_scen(scen, sizeof scen, "trace_stream_rate.json", text)) run_vs_fixtures_in(scen, "c", "rate", "SLO verdict");
    /* a prefix cache on streamed requests (issue 36): the Mooncake trace's
     * block hashes copied into each slot, the cache's tables grown with the
     * slots; the previous release's materialised table, JSON report and CSV */
    const char *mc = write_tmp("mooncake_stream.json",
                               "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                               "\"chunked\", \"max_running\": 64, \"token_budget\": 4096}, \"kv\": {\"prefix_cache\": "
                               "true}, \"workload\": {\"trace\": \"" SERVESIM_DATA_DIR
                               "/../shared/data/traces/mooncake_fast25/conversation_trace.jsonl\", \"format\": "
                               "\"mooncake\", \"limit\": 1500}, \"slo\": {\"ttft_ms\": 2000}, \"seed\": 3}");
    CHECK_CONTAINS(run_vs_fixtures_in(mc, "jc", "mc", "prefix cache: "), "requests: 1500 (");
}

/* Clusters stream (issue 36): every router pulls from the stream, and the
 * outputs are the previous release's materialised bytes -- round robin,
 * least requests and least tokens on the default workload, prefix affinity
 * with the prefix cache on the Mooncake conversation trace (C and Lua
 * routers), an attention-DP group of 8 lock-stepped ranks, disaggregated
 * deployments with and without per-token times.  test_report.c
 * test_streamrun_cluster shows they stream. */
static void test_stream_cluster(void)
{
    char text[2048], scen[600];
    const char *dflt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                       "\"max_running\": 256, \"token_budget\": 2048}, \"workload\": {\"kind\": \"poisson\", "
                       "\"rate_per_s\": %d, \"count\": %d, \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": "
                       "1024, \"sigma\": 0.8, \"min\": 16, \"max\": 16384}, \"output_tokens\": {\"dist\": "
                       "\"lognormal\", \"median\": 256, \"sigma\": 0.7, \"min\": 1, \"max\": 2048}}, \"slo\": "
                       "{\"ttft_ms\": 500, \"tpot_ms\": 50}, \"seed\": 1, %s}";
    static const char *const routers[][2] = {
        {"\"cluster\": {\"replicas\": 4, \"router\": \"round_robin\"}", "jct"},
        {"\"cluster\": {\"replicas\": 4, \"router\": \"least_requests\"}", "jc"},
        {"\"cluster\": {\"replicas\": 3, \"router\": \"least_tokens\"}", "sc"},
        {"\"disagg\": {\"prefill\": {\"replicas\": 1}, \"decode\": {\"replicas\": 2}, \"link_gb_per_s\": 50}, "
         "\"report\": {\"token_times\": false}", "jc"},
        {"\"disagg\": {\"prefill\": {\"replicas\": 2}, \"decode\": {\"replicas\": 2}, \"first_token\": \"decode\"}, "
         "\"kv\": {\"prefix_cache\": true}", "jct"},
        /* overloaded (10x the rate, tests/test_report.c: over 1,024 held): the
         * shared pool grows while the replicas hold slots */
        {"\"cluster\": {\"replicas\": 3, \"router\": \"prefix_affinity\"}, \"kv\": {\"prefix_cache\": true}", "jct"},
    };
    for (size_t k = 0; k < sizeof routers / sizeof *routers; k += th_step()) {
        char tag[32];
        snprintf(tag, sizeof tag, "cl%zu", k);
        /* 500 requests a case (the suite also runs under valgrind), 1,500 overloaded */
        int over = k + 1 == sizeof routers / sizeof *routers;
        snprintf(text, sizeof text, dflt, over ? 300 : 30, over ? 1500 : 500, routers[k][0]);
        if (!tmp_scen(scen, sizeof scen, "cluster_stream.json", text)) return;
        run_vs_fixtures(scen, routers[k][1], tag);
    }
    const char *mc = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                     "\"max_running\": 64, \"token_budget\": 4096}, \"kv\": {\"prefix_cache\": true}, \"workload\": "
                     "{\"trace\": \"" SERVESIM_DATA_DIR "/../shared/data/traces/mooncake_fast25/conversation_trace.jsonl"
                     "\", \"format\": \"mooncake\", \"limit\": 600}, \"slo\": {\"ttft_ms\": 2000}, \"seed\": 3, "
                     "\"cluster\": {\"replicas\": 4, \"router\": %s}}";
    snprintf(text, sizeof text, mc, "\"prefix_affinity\"");
    if (!tmp_scen(scen, sizeof scen, "cluster_mooncake.json", text)) return;
    run_vs_fixtures(scen, "jct", "clmc");
    snprintf(text, sizeof text, mc, "{\"kind\": \"lua\", \"script\": \"" SERVESIM_DATA_DIR
                                    "/lua/routers/prefix_affinity.lua\"}");
    if (!tmp_scen(scen, sizeof scen, "cluster_mooncake_lua.json", text)) return;
    if (th_step() == 1) run_vs_fixtures(scen, "jc", "clml"); /* the C router's case covers it under valgrind */
    const char *adp = "{\"model\": \"deepseek-v3\", \"hardware\": \"h200-sxm\", \"tp\": 1, \"parallel\": {\"ep\": 8, "
                      "\"attention_dp\": 8}, \"scheduler\": {\"kind\": \"chunked\", \"token_budget\": 8192}, \"kv\": "
                      "{\"dtype\": \"fp8\"}, \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 20, \"count\": 600, "
                      "\"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 1024, \"sigma\": 0.8, \"min\": 16, "
                      "\"max\": 8192}, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 128, \"sigma\": 0.7, "
                      "\"min\": 1, \"max\": 1024}}, \"seed\": 5}";
    if (!tmp_scen(scen, sizeof scen, "cluster_adp.json", adp)) return;
    run_vs_fixtures(scen, "jct", "cladp");
}

/* Sessions and agent tasks stream (issue 36): turns made as their
 * predecessors leave give the previous release's materialised table, --json
 * (requests, token times and the tasks array), --csv and --tokens-csv --
 * with a shared system prompt and the prefix cache on one replica and on a
 * 4-replica prefix_affinity cluster (overloaded too, the shared pool
 * growing), and an agent's tool calls.  test_report.c
 * test_streamrun_sessions shows they stream. */
static void test_stream_sessions(void)
{
    char text[2048], scen[600];
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                      "\"max_running\": %d, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true}, \"workload\": "
                      "{\"kind\": \"%s\", \"sessions\": 120, \"rate_per_s\": %d, \"turns\": {\"dist\": \"uniform\", "
                      "\"min\": 1, \"max\": 7}, \"system_prompt_tokens\": 512, \"first_prompt_tokens\": {\"dist\": "
                      "\"lognormal\", \"median\": 200, \"sigma\": 0.6}, \"%s\": 60, \"output_tokens\": {\"dist\": "
                      "\"lognormal\", \"median\": 60, \"sigma\": 0.5, \"max\": 400}, \"%s\": {\"dist\": "
                      "\"exponential\", \"mean\": 1500}, \"deadline_ms\": 20000}, \"slo\": {\"ttft_ms\": 500}, "
                      "\"seed\": 4%s}";
    static const struct {
        int max_running, rate;
        const char *kind, *newtok, *think, *deploy, *table_has;
    } cases[] = {
        {64, 3, "sessions", "new_tokens_per_turn", "think_ms", "", "tasks: 120 (120 complete"},
        {64, 3, "sessions", "new_tokens_per_turn", "think_ms",
         ", \"cluster\": {\"replicas\": 4, \"router\": \"prefix_affinity\"}", "replica "},
        {4, 60, "sessions", "new_tokens_per_turn", "think_ms",
         ", \"cluster\": {\"replicas\": 4, \"router\": \"prefix_affinity\"}", "replica "},
        {16, 2, "agent", "tool_output_tokens", "tool_ms",
         ", \"cluster\": {\"replicas\": 2, \"router\": \"least_requests\"}", "tasks: 120"},
        {16, 2, "sessions", "new_tokens_per_turn", "think_ms",
         ", \"engine\": {\"base\": \"vllm\", \"request_overhead\": {\"jitter_us\": 2000, "
         "\"jitter_per_token_us\": 30}}", "tasks: 120"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k += th_step()) {
        char tag[32];
        snprintf(tag, sizeof tag, "ss%zu", k);
        snprintf(text, sizeof text, fmt, cases[k].max_running, cases[k].kind, cases[k].rate, cases[k].newtok,
                 cases[k].think, cases[k].deploy);
        if (!tmp_scen(scen, sizeof scen, "sessions_stream.json", text)) return;
        run_vs_fixtures_in(scen, "jct", tag, cases[k].table_has);
    }
}

/* Closed loops stream (issue 36): each client's next request made when its
 * previous one leaves gives the previous release's materialised bytes --
 * think times, a dataset reused in order with the prefix cache on 3
 * replicas, a benchmark client's warm-up barrier, engine profiles (one with
 * client jitter and an end spread). */
static void test_stream_closed(void)
{
    char text[2048], scen[600];
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", %s\"workload\": {\"kind\": "
                      "\"closed_loop\", \"clients\": 24, \"count\": 900, %s\"prompt_tokens\": {\"dist\": "
                      "\"lognormal\", \"median\": 600, \"sigma\": 0.6}, \"output_tokens\": {\"dist\": \"lognormal\", "
                      "\"median\": 50, \"sigma\": 0.6, \"max\": 400}}, \"slo\": {\"ttft_ms\": 500}, \"seed\": 2%s}";
    static const char *const cases[][4] = {
        {"\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 32, \"token_budget\": 2048}, ",
         "\"think_ms\": {\"dist\": \"exponential\", \"mean\": 200}, ", "", "tasks: 24 (24 complete"},
        {"\"scheduler\": {\"kind\": \"continuous\"}, \"kv\": {\"prefix_cache\": true}, ", "\"dataset_entries\": 40, \"warmup_requests\": 10, ",
         ", \"cluster\": {\"replicas\": 3, \"router\": \"least_requests\"}", "tasks: 34 (34 complete"},
        {"", "\"warmup_requests\": 50, \"think_ms\": 100, ", ", \"engine\": \"vllm\"", "tasks: 48"},
        /* an engine profile's client: end spread and jitter drawn as the requests are made */
        {"", "\"warmup_requests\": 30, \"dataset_entries\": 100, ",
         ", \"engine\": {\"base\": \"sglang\", \"request_overhead\": {\"jitter_us\": 3000, "
         "\"jitter_per_token_us\": 40, \"end_spread_tokens\": 5}}", "tasks: 48"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k += th_step()) {
        char tag[32];
        snprintf(tag, sizeof tag, "cs%zu", k);
        snprintf(text, sizeof text, fmt, cases[k][0], cases[k][1], cases[k][2]);
        if (!tmp_scen(scen, sizeof scen, "closed_stream.json", text)) return;
        run_vs_fixtures_in(scen, "jct", tag, cases[k][3]);
    }
}

/* Warm-up and cool-down by count and warm-up by time stream with chains
 * (issue 36): sessions on one replica and on a 2-replica prefix_affinity
 * cluster, closed loops whose clients all start at once (the tie at the
 * start straddles a small warm-up; think 0: every follow-up arrives as its
 * predecessor leaves), ranked as they arrive; the previous release's
 * materialised table (window means and energy), JSON, CSV and token CSV.
 * test_report.c test_streamrun_chain_warmup shows they stream. */
static void test_stream_chain_warmup(void)
{
    char text[2048], scen[600];
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                      "\"max_running\": 32, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true}, \"workload\": "
                      "%s, \"metrics\": %s, \"slo\": {\"ttft_ms\": 500}, \"seed\": 4%s}";
    const char *sess = "{\"kind\": \"sessions\", \"sessions\": 120, \"rate_per_s\": 3, \"turns\": {\"dist\": "
                       "\"uniform\", \"min\": 1, \"max\": 7}, \"system_prompt_tokens\": 512, \"first_prompt_tokens\": "
                       "{\"dist\": \"lognormal\", \"median\": 200, \"sigma\": 0.6}, \"new_tokens_per_turn\": 60, "
                       "\"output_tokens\": {\"dist\": \"lognormal\", \"median\": 60, \"sigma\": 0.5, \"max\": 400}, "
                       "\"think_ms\": {\"dist\": \"exponential\", \"mean\": 1500}}";
    const char *closed = "{\"kind\": \"closed_loop\", \"clients\": 24, \"count\": 900, \"think_ms\": %s, "
                         "\"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 600, \"sigma\": 0.6}, "
                         "\"output_tokens\": {\"dist\": \"lognormal\", \"median\": 50, \"sigma\": 0.6, \"max\": 400}}";
    const char *cl2 = ", \"cluster\": {\"replicas\": 2, \"router\": \"prefix_affinity\"}";
    static const struct {
        int closed;
        const char *think, *metrics;
        int cluster;
    } cases[] = {
        {0, "", "{\"warmup_requests\": 50}", 0},
        {0, "", "{\"cooldown_requests\": 40}", 0},
        {0, "", "{\"warmup_s\": 10}", 0},
        {0, "", "{\"warmup_requests\": 30, \"cooldown_requests\": 60}", 1},
        {0, "", "{\"warmup_s\": 8, \"cooldown_requests\": 25}", 1},
        {1, "{\"dist\": \"exponential\", \"mean\": 200}", "{\"warmup_requests\": 10}", 0},
        {1, "{\"dist\": \"exponential\", \"mean\": 200}", "{\"warmup_requests\": 100, \"cooldown_requests\": 50}", 0},
        {1, "{\"dist\": \"exponential\", \"mean\": 200}", "{\"warmup_s\": 2}", 0},
        {1, "0", "{\"warmup_requests\": 10, \"cooldown_requests\": 5}", 0},
        {1, "0", "{\"warmup_requests\": 30, \"warmup_s\": 1, \"cooldown_requests\": 100}", 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k += th_step()) {
        char w[1024], tag[32];
        if (cases[k].closed) snprintf(w, sizeof w, closed, cases[k].think);
        else snprintf(w, sizeof w, "%s", sess);
        snprintf(text, sizeof text, fmt, w, cases[k].metrics, cases[k].cluster ? cl2 : "");
        snprintf(tag, sizeof tag, "cw%zu", k);
        if (!tmp_scen(scen, sizeof scen, "chain_warm.json", text)) return;
        run_vs_fixtures_in(scen, "jct", tag, "excluded as warm-up/cool-down");
    }
}

/* LoRA adapters stream in chains (issue 36): a session's adapter drawn once
 * when it starts, a closed loop's per request as it is made (the
 * materialised draw order), with the adapter cache on one replica and
 * adapter_affinity on two; the previous release's materialised bytes.  An
 * adapter past lora.adapters fails with the previous release's message (a
 * chain meets its requests out of workload order: the first bad one in
 * workload order is found by a pass over a second copy).  test_report.c
 * test_streamrun_chains shows they stream. */
static void test_stream_chain_lora(void)
{
    char text[2048], scen[600];
    const char *lora = "\"lora\": {\"adapters\": 20, \"rank\": 16, \"targets\": [\"q\", \"v\"], \"gpu_slots\": "
                       "4, \"max_per_batch\": 4}";
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"chunked\", "
                      "\"max_running\": 32, \"token_budget\": 2048}, \"kv\": {\"prefix_cache\": true}, %s, "
                      "\"workload\": %s, \"slo\": {\"ttft_ms\": 500}, \"seed\": 4%s}";
    static const char *const wl[] = {
        "{\"kind\": \"sessions\", \"sessions\": 80, \"rate_per_s\": 3, \"turns\": {\"dist\": \"uniform\", "
        "\"min\": 1, \"max\": 6}, \"system_prompt_tokens\": 256, \"first_prompt_tokens\": 200, "
        "\"new_tokens_per_turn\": 60, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 60, \"sigma\": "
        "0.5, \"max\": 300}, \"think_ms\": 800, \"adapters\": {\"count\": %d, \"zipf_s\": 1.0}}",
        "{\"kind\": \"closed_loop\", \"clients\": 16, \"count\": 400, \"think_ms\": 100, \"prompt_tokens\": "
        "500, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 50, \"sigma\": 0.6, \"max\": 300}, "
        "\"adapters\": {\"count\": %d, \"zipf_s\": 1.0, \"base_share\": 0.2}}"};
    static const char *const deploy[] = {"", ", \"cluster\": {\"replicas\": 2, \"router\": \"adapter_affinity\"}"};
    for (size_t k = 0; k < 4; k += th_step()) {
        char w[1024], tag[32];
        snprintf(w, sizeof w, wl[k % 2], 20);
        snprintf(text, sizeof text, fmt, lora, w, deploy[k / 2]);
        snprintf(tag, sizeof tag, "lo%zu", k);
        if (!tmp_scen(scen, sizeof scen, "chain_lora.json", text)) return;
        run_vs_fixtures_in(scen, "jct", tag, k / 2 ? "replica " : "adapters: ");
    }
    /* adapters 1 .. 30 drawn, 20 in the scenario */
    static char b[65536];
    char w[1024];
    snprintf(w, sizeof w, wl[1], 30);
    snprintf(text, sizeof text, fmt, lora, w, "");
    if (!tmp_scen(scen, sizeof scen, "chain_lora_bad.json", text)) return;
    CHECK_INT(testrun_cli_run(scen, b, sizeof b), 1);
    CHECK(testrun_fixture_text(b, strlen(b), "cli/lobad.out", dir) == 0);
    CHECK_CONTAINS(b, "chain_lora_bad.json: workload: request c15.0 names adapter 25, expected 1 .. lora.adapters (20)");
}

/* Cancellations stream (issue 36): the agent example (cancelled calls in
 * chains), an open loop on 3 replicas with vLLM's overlap scheduler (a
 * cancelled request's blocks outlive the iteration launched with it) and a
 * disaggregated deployment give the previous release's materialised bytes;
 * so does the table alone, whose ITL then still comes from the token times. */
static void test_stream_cancel(void)
{
    char text[2048], scen[600];
    run_vs_fixtures_in(SERVESIM_DATA_DIR "/workloads/agent_coding_tasks.json", "jctv", "can0", "6 cancelled");
    const char *fmt = "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", %s\"workload\": {\"kind\": "
                      "\"poisson\", \"rate_per_s\": 30, \"count\": 800, \"prompt_tokens\": {\"dist\": "
                      "\"lognormal\", \"median\": 800, \"sigma\": 0.8, \"max\": 8192}, \"output_tokens\": "
                      "{\"dist\": \"lognormal\", \"median\": 128, \"sigma\": 0.7, \"max\": 1024}, \"cancel\": "
                      "{\"fraction\": 0.2, \"after_ms\": {\"dist\": \"exponential\", \"mean\": 400}}}, \"seed\": 5%s}";
    static const char *const cases[][2] = {
        {"\"engine\": \"vllm\", ", ", \"cluster\": {\"replicas\": 3, \"router\": \"least_requests\"}"},
        {"\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, \"token_budget\": 2048}, ",
         ", \"disagg\": {\"prefill\": {\"replicas\": 1}, \"decode\": {\"replicas\": 2}}"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k += th_step()) {
        char tag[32];
        snprintf(tag, sizeof tag, "can%zu", k + 1);
        snprintf(text, sizeof text, fmt, cases[k][0], cases[k][1]);
        if (!tmp_scen(scen, sizeof scen, "cancel_stream.json", text)) return;
        run_vs_fixtures_in(scen, "jctv", tag, "cancelled)");
        snprintf(tag, sizeof tag, "can%zut", k + 1);
        run_vs_fixtures_in(scen, "", tag, "ITL  ");
    }
}

void suite_cli(void);
void suite_cli(void)
{
    /* one directory per run: concurrent suites never share a file */
    snprintf(dir, sizeof dir, "/tmp/servesim-test-XXXXXX");
    if (!mkdtemp(dir)) {
        RUN(cli_no_tmpdir);
        return;
    }
    char cmd[300];
    RUN(test_bad_input_messages);
    RUN(test_cli_usage_errors);
    RUN(test_info);
    RUN(test_default_run_deterministic);
    RUN(test_replay_compare_outputs);
    RUN(test_spec_and_workload_commands);
    RUN(test_calib_and_cost_commands);
    RUN(test_readme_numbers);
    RUN(test_stream_run);
    RUN(test_stream_warmup);
    RUN(test_token_times_auto);
    RUN(test_stream_trace);
    RUN(test_stream_long_ids);
    RUN(test_stream_chain_cooldown_s);
    RUN(test_stream_dataset_entries);
    RUN(test_stream_csv_names);
    RUN(test_stream_whole_lists);
    RUN(test_stream_sampling);
    RUN(test_stream_iterations_csv);
    RUN(test_stream_cluster);
    RUN(test_stream_sessions);
    RUN(test_stream_closed);
    RUN(test_stream_chain_warmup);
    RUN(test_stream_chain_lora);
    RUN(test_stream_cancel);
    RUN(test_issue17_commands);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
