/*
 * main.c -- the servesim command line.  The only place that exits.
 *
 *   servesim run [SCENARIO] [--json FILE] [--seed N] [--quiet]
 *   servesim info --model NAME [--hardware NAME] [--tp N] [--kv-dtype T] [--json]
 *   servesim bench [--requests N] [--rate R]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <sys/resource.h>

#include <gsl/gsl_errno.h>

#include "cliarg.h"
#include "jsonio.h"
#include "html.h"
#include "lua_cmd.h"
#include "lua_register.h"
#include "metrics.h"
#include "outfile.h"
#include "plancmd.h"
#include "plot.h"
#include "repro.h"
#include "report.h"
#include "calibcmd.h"
#include "cluster.h"
#include "compare.h"
#include "costcmd.h"
#include "replay.h"
#include "scenario.h"
#include "servext.h"
#include "speccmd.h"
#include "streamrun.h"
#include "amdahlcmd.h"
#include "timeline.h"
#include "validate.h"
#include "wlcmd.h"

static const char usage_main[] =
    "servesim -- discrete-event simulator and capacity planner for LLM serving\n"
    "\n"
    "usage: servesim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.json]   simulate a scenario (none: the embedded default,\n"
    "                        Qwen3-8B on one H100 under Poisson traffic)\n"
    "  replay SCHEDULE.json  metrics, goodput and cost of a given token schedule\n"
    "  compare SIM MEASURED  simulated report against a measured benchmark (vLLM result file)\n"
    "  workload SCENARIO|TRACE  describe a workload (--stats, --json) or write it out (--out FILE)\n"
    "  spec-plan             speculative decoding: tokens per round, ms per token, best draft length\n"
    "  spec-verify           run the rejection-sampling verifier and print its output distribution\n"
    "  amdahl                a task split into parts: what speeding up one part buys (agents, sessions)\n"
    "  calib                 calibration: measure kernels, import measured tables, fit profiles, report quality\n"
    "  cost                  the cost model's prediction for one GEMM or one iteration\n"
    "  info                  derived model quantities (weights, KV per token, FLOPs)\n"
    "  lora-size             bytes of a LoRA adapter and of N adapters\n"
    "  offload-plan          weight offload: memory freed, prefetch buffers, copy time per step\n"
    "  cache-value           time value per MiB of keeping a cached prefix (exercise 8-4)\n"
    "  bench                 simulator speed: requests and iterations per wall second\n"
    "  sweep SCENARIO        arrival rates x seeds: throughput, goodput, attainment with CIs, the knee\n"
    "  plan PLAN.json        the cheapest deployment that meets the SLOs (hardware, tp, engine, replicas)\n"
    "  validate FILE         simulate measured serving runs and report the prediction error\n"
    "  plot KIND INPUT... -o FILE.png|.svg  gnuplot pictures: cdf, timeline, kv, batch, roofline, rate, pareto,\n"
    "                        scatter\n"
    "  lua SCRIPT.lua [ARGS]  run an experiment script (sweeps, comparisons; see lua/README.md)\n"
    "  reproduce [CASE|all|--list]  the chapters' worked numbers: the book's value beside servesim's\n"
    "  help [COMMAND]        this text, or a command's options\n"
    "\n"
    "'servesim COMMAND --help' prints a command's options.\n";

#define OUTPUT_OPTIONS \
    "  --json FILE            the JSON report (summary + every request) ('-' = stdout)\n" \
    "  --csv FILE             one row per request (empty cells for undefined values)\n" \
    "  --iterations-csv FILE  one row per iteration: batch, duration, FLOPs, bytes, MFU, MBU, KV (run only)\n" \
    "  --trace-events FILE    Chrome trace-event JSON (open in Perfetto): engine and request lanes,\n" \
    "                         counter tracks (KV blocks, tokens per iteration, running/waiting);\n" \
    "                         a replay: request lanes only, arrival -> first token -> each token\n" \
    "  --trace-window T0,T1   trace only what meets [T0, T1] seconds (run only)\n" \
    "  --trace-requests N     request lanes for the first N requests only (run only)\n" \
    "  --trace-ids ID[,ID...] request lanes for those requests only (run only)\n" \
    "  --trace-engine-only    no request lanes: iterations and counter tracks (run only)\n" \
    "  --vllm-json FILE       summary with vLLM benchmark result keys (mean_ttft_ms, ...)\n" \
    "  --window-ms T0,T1      fixed throughput window instead of first arrival -> last completion\n" \
    "  --quiet                do not print the table\n" \
    "  --tokens-csv FILE      every token's emission time: id,token,time_s (one row per token; a run\n" \
    "                         keeps the times for it even past report.token_times' automatic limit)\n" \
    "  --summary-only         --json without the per-request array\n" \
    "  --exact-stats          exact ITL percentiles however many tokens (default: above 100,000 values\n" \
    "                         a sketch within 0.049% of the exact value; means, counts, maxima exact)\n" \
    "  --no-fast-path         every iteration through the scheduler: the decode fast path off (the\n" \
    "                         same results, slower; for checking it)\n"

static const char usage_run[] =
    "usage: servesim run [SCENARIO.json] [options]\n"
    "\n"
    "  SCENARIO.json          scenario file (see README: model, hardware, tp, cost_model,\n"
    "                         scheduler, kv, workload, slo, price, metrics, seed); omitted:\n"
    "                         the embedded default\n"
    "  --seed N               override the scenario's seed\n"
    "  --print-default        print the embedded default scenario and exit\n"
    "  --materialise, --stream  accepted and ignored: requests (one replica or a cluster's) are\n"
    "                         always pulled as simulated time reaches them, memory following the\n"
    "                         requests in flight (the materialised engine path is gone; the options\n"
    "                         go in a later release)\n"
    "  --html DIR             DIR/index.html: summary, SLO verdict, latency CDFs, KV and batch over time,\n"
    "                         the timeline (runs of <= 64 requests) as SVG inline in the page; the\n"
    "                         report, data files and SVG files beside it\n"
    OUTPUT_OPTIONS;

static const char usage_replay[] =
    "usage: servesim replay SCHEDULE.json [options]\n"
    "\n"
    "SCHEDULE.json: {\"requests\": [{\"id\": \"A\", \"arrival_ms\": 0, \"prompt_tokens\": 4,\n"
    "  \"output_tokens\": 3, \"token_times_ms\": [100, 140, 180]}, ...],\n"
    "  \"price\": {\"usd_per_gpu_hour\": 2.0, \"gpus\": 1, \"billing\": \"exact\"}, \"slo\": {...}}\n"
    "\n"
    OUTPUT_OPTIONS;

static const char usage_compare[] =
    "usage: servesim compare SIM_REPORT.json MEASURED.json [--json]\n"
    "\n"
    "Either file may be a servesim JSON report or a vLLM benchmark result file (with\n"
    "per-request ttfts, itls, input_lens, output_lens, or only its mean/median/p99 keys).\n"
    "Prints TTFT, TPOT, ITL and E2E statistics and throughput side by side with the\n"
    "relative error (sim - measured) / measured.\n";

static const char usage_info[] =
    "usage: servesim info --model NAME [--hardware NAME] [--tp N] [--kv-dtype T]\n"
    "                    [--context N] [--batch B] [--json]\n"
    "\n"
    "  --model NAME      a name in models/ (qwen3-8b, deepseek-v3, ...) or a .json path\n"
    "  --hardware NAME   a name in models/hardware/ (h100-sxm, m2-max, ...): adds KV capacity\n"
    "                    and whether the model and context fit, with the breakdown\n"
    "  --tp N            tensor-parallel degree for the capacity (default 1)\n"
    "  --kv-dtype T      bf16 (default), fp16, fp8, q8_0, q4_0, ...\n"
    "  --context N       tokens per sequence for the fit check (default: the model's max_context)\n"
    "  --batch B         sequences of that length held at once (default 1)\n"
    "  --json            machine-readable output\n";

static const char usage_bench[] =
    "usage: servesim bench [--requests N] [--rate R] [--exact-stats] [--no-fast-path]\n"
    "       servesim bench --scenario FILE [--exact-stats] [--no-fast-path]\n"
    "\n"
    "Simulates N (default 100000) Poisson requests of Qwen3-8B on one H100 with the\n"
    "chunked scheduler and the roofline cost model, or a scenario file as `run` does,\n"
    "with the full summary, and prints wall time, simulated requests and iterations per\n"
    "wall second, ns per request-iteration (one request in one iteration's batch) and\n"
    "peak RSS.  --materialise is accepted and ignored (the materialised path is gone).\n";

static int fail(const Err *e)
{
    fprintf(stderr, "servesim: %s\n", e->msg);
    return 1;
}


static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || *s == '-' || *s == '\0') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Output files a run or replay may write. */
typedef struct Outputs {
    const char *json, *csv, *iter_csv, *trace, *vllm;
    const char *window;
    const char *tokens_csv;
    const char *trace_window, *trace_requests, *trace_ids;
    int quiet, trace_engine_only, exact_stats, summary_only;
} Outputs;

/* Handles an output option at argv[*i]; 1 = consumed, 0 = not an output
 * option, -1 = missing argument. */
static int output_opt(int argc, char **argv, int *i, Outputs *o)
{
    static const char *const names[] = {"--json", "--csv", "--iterations-csv", "--trace-events", "--vllm-json",
                                        "--window-ms", "--trace-window", "--trace-requests", "--trace-ids"};
    const char **dst[] = {&o->json, &o->csv, &o->iter_csv, &o->trace, &o->vllm, &o->window, &o->trace_window,
                          &o->trace_requests, &o->trace_ids};
    for (int k = 0; k < 9; k++)
        if (!strcmp(argv[*i], names[k])) {
            if (++*i >= argc) return -1;
            *dst[k] = argv[*i];
            return 1;
        }
    if (!strcmp(argv[*i], "--quiet")) {
        o->quiet = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--no-fast-path")) {
        /* every iteration through the scheduler (engine.h engine_set_fast_path) */
        engine_fast_path_default(0);
        return 1;
    }
    if (!strcmp(argv[*i], "--trace-engine-only")) {
        o->trace_engine_only = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--exact-stats")) {
        o->exact_stats = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--summary-only")) {
        o->summary_only = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--tokens-csv")) {
        if (++*i >= argc) return -1;
        o->tokens_csv = argv[*i];
        return 1;
    }
    return 0;
}

static int write_json(cJSON *root, const char *path, Err *e)
{
    return jsonio_write_file(root, path, 1, e);
}

/* Every output path is checked before any work, and none may name the
 * input (issue 15): a bad --vllm-json must not leave --json written. */
static int outputs_check(const Outputs *o, const char *input, Err *e)
{
    const char *paths[] = {o->json, o->csv, o->iter_csv, o->trace, o->vllm, o->tokens_csv};
    const char *names[] = {"--json", "--csv", "--iterations-csv", "--trace-events", "--vllm-json", "--tokens-csv"};
    for (int k = 0; k < 6; k++) {
        if (!paths[k]) continue;
        if (outfile_check(paths[k], names[k], e) < 0) return -1;
        if (input && (outfile_same(paths[k], input) || !strcmp(paths[k], input)))
            return err_set(e, "%s %s: is the input file; choose another output name", names[k], paths[k]);
        for (int j = 0; j < k; j++)
            if (paths[j] && strcmp(paths[k], "-") && !strcmp(paths[j], paths[k]))
                return err_set(e, "%s and %s both name %s", names[j], names[k], paths[k]);
    }
    return 0;
}

/* Writes every requested output of a run or replay; s may be NULL, and
 * band (the engine's measured error: a run's, not a replay's). */
static int emit(const Outputs *o, const Scenario *s, const MetricsCfg *mc, const RunData *rd, const Summary *sum,
                const ErrBand *band, Err *e)
{
    int to_stdout = o->json && !strcmp(o->json, "-");
    if (!o->quiet && !to_stdout) report_print_band(stdout, s, mc, sum, band);
    if (o->json) {
        cJSON *root = report_json(mc, rd, sum, !o->summary_only);
        if (band) report_band_json(root, band, sum);
        if (s) {
            cJSON *sc = cJSON_CreateObject();
            scenario_to_json(s, sc);
            cJSON_AddItemToObject(root, "scenario", sc);
        }
        int rc = write_json(root, o->json, e);
        cJSON_Delete(root);
        if (rc < 0) return -1;
    }
    if (o->vllm) {
        cJSON *v = report_vllm_json(mc, rd, sum);
        int rc = write_json(v, o->vllm, e);
        cJSON_Delete(v);
        if (rc < 0) return -1;
    }
    if (o->csv && report_requests_csv(o->csv, mc, rd, e) < 0) return -1;
    if (o->iter_csv && report_iterations_csv(o->iter_csv, mc, rd, e) < 0) return -1;
    if (o->tokens_csv && report_tokens_csv(o->tokens_csv, rd, e) < 0) return -1;
    return 0;
}

/* `run` (streamrun.h): the table, --json (the requests array included
 * unless --summary-only), --csv, --tokens-csv, --iterations-csv,
 * --vllm-json, --trace-events and --html DIR, each written as the run goes
 * or from what it kept on disk, in memory that follows the requests in
 * flight. */
static int run_streamed(const char *path, int has_seed, uint64_t seed, const Outputs *out, const TimelineOpts *to,
                        const char *html_dir, const HtmlCmd *hc)
{
    Err e = {0};
    StreamRun *r = xmalloc(sizeof *r);
    StreamOutputs so = {.csv = out->csv, .tokens_csv = out->tokens_csv, .iter_csv = out->iter_csv, .vllm = out->vllm != NULL,
                        .json_requests = (out->json && !out->summary_only) || html_dir, .window = out->window,
                        .trace = out->trace, .trace_opts = *to, .trace_ids = out->trace_ids,
                        .iter_keep = html_dir != NULL};
    int rc = streamrun(r, path, scenario_default_json, "(embedded default)", has_seed, seed, out->exact_stats, &so,
                       &e);
    ErrBand band;
    if (rc == 0) rc = scenario_error_band(&r->s, &band, &e);
    if (rc == 0) {
        int to_stdout = out->json && !strcmp(out->json, "-");
        if (!out->quiet && !to_stdout) report_print_band(stdout, &r->s, &r->mc, &r->sum, &band);
        /* the report without its requests: --summary-only's, the page's */
        cJSON *root = streamrun_report(r, &band, 0);
        /* ... and with them: the same tree, the arrays spliced in as it is printed */
        cJSON *full = so.json_requests ? streamrun_report(r, &band, 1) : NULL;
        if (out->json)
            rc = out->summary_only ? write_json(root, out->json, &e) : streamrun_write_json(r, full, out->json, &e);
        if (rc == 0 && out->vllm) rc = streamrun_write_vllm(r, out->vllm, &e);
        if (rc == 0 && html_dir) {
            /* the page's inputs, then the page (html.h) */
            char rp[4096], ip[4096];
            snprintf(rp, sizeof rp, "%s/report.json", html_dir);
            snprintf(ip, sizeof ip, "%s/iterations.csv", html_dir);
            int its = r->iter_kept != NULL;
            rc = html_run_dir(html_dir, &e);
            if (rc == 0) rc = streamrun_write_json(r, full, rp, &e);
            if (rc == 0 && its) rc = streamrun_write_iterations(r, ip, &e);
            if (rc == 0) rc = html_run(html_dir, hc, root, r->requests, r->s.keep_token_times, its, &e);
        }
        cJSON_Delete(full);
        cJSON_Delete(root);
    }
    streamrun_free(r);
    free(r);
    return rc < 0 ? fail(&e) : 0;
}

static int cmd_run(int argc, char **argv)
{
    const char *path = NULL, *html_dir = NULL;
    uint64_t seed = 0;
    int has_seed = 0;
    Outputs out = {0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int r = output_opt(argc, argv, &i, &out);
        if (r < 0) return cli_bad_usage("option needs a value", a, usage_run);
        if (r > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_run, stdout);
            return 0;
        } else if (!strcmp(a, "--html")) {
            if (++i >= argc) return cli_bad_usage("--html needs a directory", NULL, usage_run);
            html_dir = argv[i];
        } else if (!strcmp(a, "--print-default")) {
            fputs(scenario_default_json, stdout);
            return 0;
        } else if (!strcmp(a, "--stream") || !strcmp(a, "--materialise")) {
            /* issue 36: one engine path, which streams; accepted for a
             * release, and do nothing */
        } else if (!strcmp(a, "--seed")) {
            if (++i >= argc || parse_u64(argv[i], &seed) < 0)
                return cli_bad_usage("--seed needs a non-negative integer", i < argc ? argv[i] : NULL, usage_run);
            has_seed = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_bad_usage("unknown option", a, usage_run);
        } else if (!path) {
            path = a;
        } else {
            return cli_bad_usage("more than one scenario given", a, usage_run);
        }
    }
    Err e = {0};
    if (outputs_check(&out, path, &e) < 0) return fail(&e);
    /* the trace's narrowing */
    if ((out.trace_window || out.trace_requests || out.trace_ids || out.trace_engine_only) && !out.trace)
        return cli_bad_usage("--trace-window, --trace-requests, --trace-ids and --trace-engine-only narrow "
                             "--trace-events FILE; give it too", NULL, usage_run);
    if (!!out.trace_requests + !!out.trace_ids + out.trace_engine_only > 1)
        return cli_bad_usage("--trace-requests, --trace-ids and --trace-engine-only each choose the request lanes; "
                             "give one", NULL, usage_run);
    TimelineOpts to = {.engine_only = out.trace_engine_only};
    if (out.trace_window) {
        char *end;
        double tw0 = strtod(out.trace_window, &end), tw1 = 0;
        if (*end == ',') tw1 = strtod(end + 1, &end);
        if (*end || !(tw0 >= 0) || !(tw1 > tw0) || end == out.trace_window)
            return cli_bad_usage("--trace-window: expected T0,T1 in seconds with 0 <= T0 < T1", out.trace_window,
                                 usage_run);
        to.has_window = 1;
        to.w0_ns = (int64_t)(tw0 * 1e9);
        to.w1_ns = (int64_t)(tw1 * 1e9);
    }
    uint64_t treq = 0;
    if (out.trace_requests && (parse_u64(out.trace_requests, &treq) < 0 || treq < 1 || treq > UINT32_MAX))
        return cli_bad_usage("--trace-requests: expected a positive integer", out.trace_requests, usage_run);
    to.max_requests = (uint32_t)treq;
    HtmlCmd hc = {"run", argc, argv};
    return run_streamed(path, has_seed, seed, &out, &to, html_dir, &hc);
}

static int cmd_replay(int argc, char **argv)
{
    const char *path = NULL;
    Outputs out = {0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int r = output_opt(argc, argv, &i, &out);
        if (r < 0) return cli_bad_usage("option needs a value", a, usage_replay);
        if (r > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_replay, stdout);
            return 0;
        }
        if (a[0] == '-' && a[1]) return cli_bad_usage("unknown option", a, usage_replay);
        if (path) return cli_bad_usage("more than one schedule given", a, usage_replay);
        path = a;
    }
    if (!path) return cli_bad_usage("a schedule file is required", NULL, usage_replay);
    if (out.iter_csv)
        return cli_bad_usage("a replay has no iterations: --iterations-csv needs a run", NULL, usage_replay);
    if (out.trace_window || out.trace_requests || out.trace_ids || out.trace_engine_only)
        return cli_bad_usage("--trace-window, --trace-requests, --trace-ids and --trace-engine-only narrow a run's "
                         "trace; a replay's --trace-events has every request", NULL, usage_replay);
    Err e = {0};
    if (outputs_check(&out, path, &e) < 0) return fail(&e);
    Replay rp;
    if (replay_load(path, &rp, &e) < 0) return fail(&e);
    rp.mcfg.exact_stats = out.exact_stats;
    if (out.window && mcfg_parse_window_arg(out.window, &rp.mcfg, &e) < 0) {
        replay_free(&rp);
        return fail(&e);
    }
    RunData rd;
    Summary sum;
    replay_rundata(&rp, &rd);
    metrics_summarize(&rp.mcfg, &rd, &sum);
    int rc = emit(&out, NULL, &rp.mcfg, &rd, &sum, NULL, &e);
    if (rc == 0 && out.trace) rc = timeline_write_replay(out.trace, rp.reqs, rp.n, rp.token_times, &e);
    replay_free(&rp);
    return rc < 0 ? fail(&e) : 0;
}

static int cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL};
    int nf = 0, json = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_compare, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_bad_usage("unknown option", argv[i], usage_compare);
        } else if (nf < 2) {
            files[nf++] = argv[i];
        } else {
            return cli_bad_usage("expected exactly two files", argv[i], usage_compare);
        }
    }
    if (nf != 2) return cli_bad_usage("expected exactly two files", NULL, usage_compare);
    Err e = {0};
    CmpSide a, b;
    if (compare_load(files[0], &a, &e) < 0 || compare_load(files[1], &b, &e) < 0) return fail(&e);
    char diff[512];
    if (compare_workload_diff(&a, &b, diff, sizeof diff))
        fprintf(stderr, "servesim compare: warning: the two runs served different workloads (%s); the errors "
                        "below compare unlike things\n", diff);
    if (json) {
        cJSON *o = compare_json(&a, &b);
        char *txt = cJSON_Print(o);
        puts(txt);
        cJSON_free(txt);
        cJSON_Delete(o);
    } else {
        printf("servesim compare: %s (%s) against %s (%s)\n", files[0], a.format, files[1], b.format);
        compare_print(&a, &b);
    }
    return 0;
}

/* What a model needs in memory beside the hardware's pool (per GPU of a TP
 * group): the reserve, the weights in their stored formats, and the KV and
 * fixed state of `batch` sequences of `context` tokens. */
typedef struct InfoFit {
    double usable, reserve, weights, kv, free;
    int fits;
} InfoFit;

static InfoFit info_fit(const ModelDesc *m, const HwDesc *h, Dtype kt, double tp, double context, double batch)
{
    InfoFit f;
    f.usable = h->mem_bytes * h->mem_util;
    f.reserve = h->runtime_reserve_bytes;
    f.weights = m->weights_total_bytes / tp;
    /* KV heads split over the TP group, but a GPU holds at least one: GQA
     * with fewer KV heads than GPUs replicates them, and MLA's single
     * latent is on every GPU; recurrent state splits by its heads. */
    double kv_split = m->attn == MODEL_ATTN_MLA ? 1 : (tp < m->kv_heads ? tp : m->kv_heads);
    double st_split = m->n_linear ? (tp < m->linear_heads ? tp : m->linear_heads) : 1;
    double state = context > 0 ? m->linear_state_bytes : 0;
    f.kv = batch * ((model_kv_bytes_for_tokens(m, kt, context) - state) / kv_split + state / st_split);
    f.free = f.usable - f.reserve - f.weights - f.kv;
    f.fits = f.free >= 0;
    return f;
}

static int cmd_info(int argc, char **argv)
{
    const char *model = NULL, *hw = NULL, *kvd = "bf16";
    uint64_t tp = 1, context = 0, batch = 1;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_info, stdout);
            return 0;
        } else if (!strcmp(a, "--model") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(a, "--hardware") && i + 1 < argc) {
            hw = argv[++i];
        } else if (!strcmp(a, "--kv-dtype") && i + 1 < argc) {
            kvd = argv[++i];
        } else if (!strcmp(a, "--tp") && i + 1 < argc) {
            if (parse_u64(argv[++i], &tp) < 0 || tp < 1 || tp > 64)
                return cli_bad_usage("--tp needs an integer in [1, 64]", argv[i], usage_info);
        } else if (!strcmp(a, "--context") && i + 1 < argc) {
            if (parse_u64(argv[++i], &context) < 0 || context < 1 || context > 100000000)
                return cli_bad_usage("--context needs an integer in [1, 1e8] (tokens)", argv[i], usage_info);
        } else if (!strcmp(a, "--batch") && i + 1 < argc) {
            if (parse_u64(argv[++i], &batch) < 0 || batch < 1 || batch > 1000000)
                return cli_bad_usage("--batch needs an integer in [1, 1e6] (sequences)", argv[i], usage_info);
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else {
            return cli_bad_usage("unknown or incomplete option", a, usage_info);
        }
    }
    if (!model) return cli_bad_usage("--model is required", NULL, usage_info);
    int kt = dtype_parse(kvd);
    if (kt < 0) return cli_bad_usage("unknown --kv-dtype (expected bf16, fp16, fp8, q8_0, q4_0, ...)", kvd, usage_info);
    Err e = {0};
    ModelDesc m;
    HwDesc h;
    if (model_load(model, &m, &e) < 0) return fail(&e);
    if (hw && hw_load(hw, &h, &e) < 0) return fail(&e);
    if (!context) context = m.max_context > 0 ? (uint64_t)m.max_context : 0;
    double kvb = model_kv_bytes_per_token(&m, (Dtype)kt);
    double cap = hw ? hw_kv_capacity_bytes(&h, &m, (int)tp) : 0;
    InfoFit fit = {0};
    if (hw) fit = info_fit(&m, &h, (Dtype)kt, (double)tp, (double)context, (double)batch);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        model_to_json(&m, o);
        cJSON_AddStringToObject(o, "kv_dtype", dtype_name((Dtype)kt));
        cJSON_ReplaceItemInObjectCaseSensitive(o, "kv_bytes_per_token", cJSON_CreateNumber(kvb));
        cJSON *touch = m.experts > 0 ? cJSON_AddArrayToObject(o, "experts_touched") : NULL;
        for (int i = 0; touch && i < 4; i++) {
            static const double n_tok[4] = {1, 16, 64, 256};
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "tokens", n_tok[i]);
            jsonio_add_num(x, "experts", model_expected_experts(&m, n_tok[i]));
            cJSON_AddNumberToObject(x, "weights_read_bytes", model_weights_read_bytes_tokens(&m, n_tok[i]));
            cJSON_AddItemToArray(touch, x);
        }
        if (hw) {
            cJSON *ho = cJSON_AddObjectToObject(o, "hardware");
            hw_to_json(&h, ho);
            cJSON_AddNumberToObject(o, "tp", (double)tp);
            cJSON_AddNumberToObject(o, "kv_capacity_bytes", cap > 0 ? cap : 0);
            cJSON_AddNumberToObject(o, "kv_capacity_tokens", cap > 0 ? (double)(uint64_t)(cap / kvb) : 0);
            cJSON_AddBoolToObject(o, "fits", cap > 0);
            cJSON *mo = cJSON_AddObjectToObject(o, "memory");
            if (mo) {
                cJSON_AddNumberToObject(mo, "context", (double)context);
                cJSON_AddNumberToObject(mo, "batch", (double)batch);
                cJSON_AddNumberToObject(mo, "usable_bytes", fit.usable);
                cJSON_AddNumberToObject(mo, "reserve_bytes", fit.reserve);
                cJSON_AddNumberToObject(mo, "weights_bytes", fit.weights);
                cJSON_AddNumberToObject(mo, "weights_meta_bytes", m.weights_meta_bytes / (double)tp);
                cJSON_AddNumberToObject(mo, "kv_bytes", fit.kv);
                cJSON_AddNumberToObject(mo, "free_bytes", fit.free);
                cJSON_AddBoolToObject(mo, "fits", fit.fits);
            }
        }
        char *txt = cJSON_Print(o);
        puts(txt);
        cJSON_free(txt);
        cJSON_Delete(o);
        return 0;
    }
    printf("model %s  (%s)\n", m.name, m.source);
    printf("  layers %d, hidden %d, heads %d q / %d kv x %d, ffn %d, vocab %d%s, %s weights\n", m.layers, m.hidden,
           m.q_heads, m.kv_heads, m.head_dim, m.ffn, m.vocab, m.tied_embeddings ? " (tied)" : "",
           dtype_name(m.weight_dtype));
    if (m.attn == MODEL_ATTN_MLA)
        printf("  attention            MLA: latent %d + rope %d per token and layer (q_lora %d, nope %d, v %d)\n",
               m.kv_lora_rank, m.qk_rope_dim, m.q_lora_rank, m.qk_nope_dim, m.v_head_dim);
    if (m.n_full != m.layers)
        printf("  layer kinds          %d full, %d sliding (window %d), %d linear (state %.2f MiB per sequence)\n",
               m.n_full, m.n_sliding, m.sliding_window, m.n_linear, m.linear_state_bytes / MIB);
    if (m.experts > 0)
        printf("  moe                  %d experts x %d ffn, %d active, %d shared, %d of %d layers sparse, experts "
               "in %s\n", m.experts, m.expert_ffn, m.active_experts, m.shared_experts, m.moe_layers, m.layers,
               dtype_name(m.expert_dtype));
    printf("  params               %lld (%.3f B)\n", (long long)m.params, m.params / 1e9);
    if (m.experts > 0) {
        printf("  params_active        %lld (%.3f B per token)\n", (long long)m.params_active, m.params_active / 1e9);
        /* what a step of n tokens touches under the description's routing */
        printf("  experts touched      ");
        for (int i = 0; i < 4; i++) {
            static const double n_tok[4] = {1, 16, 64, 256};
            printf("%s%.0f tokens: %.1f of %d (%.2f GiB read)", i ? ", " : "", n_tok[i],
                   model_expected_experts(&m, n_tok[i]), m.experts, model_weights_read_bytes_tokens(&m, n_tok[i]) / GIB);
        }
        printf(" per MoE layer, %s routing\n", m.routing == MODEL_ROUTING_ZIPF ? "zipf" : "uniform");
    }
    printf("  weights_read_bytes   %.0f B (%.2f GiB) per engine step\n", m.weights_read_bytes,
           m.weights_read_bytes / GIB);
    if (m.weights_meta_bytes > 0)
        printf("  weights stored       %.2f GiB = %.2f GiB codes and float data + %.2f GiB block metadata\n",
               m.weights_total_bytes / GIB, (m.weights_total_bytes - m.weights_meta_bytes) / GIB,
               m.weights_meta_bytes / GIB);
    printf("  kv_bytes_per_token   %.0f B (%.2f KiB, %s)\n", kvb, kvb / 1024, dtype_name((Dtype)kt));
    printf("  flops_per_token      %.6g (dense layers)\n", m.flops_per_token);
    printf("  flops_per_pair       %.6g (attention, per query-key pair)\n", m.flops_per_pair);
    printf("  lm_head_flops        %.6g (per sampled position)\n", m.lm_head_flops);
    if (hw) {
        printf("hardware %s x %llu (tp)\n", h.name, (unsigned long long)tp);
        if (cap > 0 && tp > 1)
            printf("  kv capacity          %.2f GiB over the %llu GPUs = %.0f tokens (per GPU: memory %.2f GiB x "
                   "%.2f - weights / tp - reserve %.1f GiB)\n", cap / GIB, (unsigned long long)tp, cap / kvb,
                   h.mem_bytes / GIB, h.mem_util, h.runtime_reserve_bytes / GIB);
        else if (cap > 0)
            printf("  kv capacity          %.2f GiB = %.0f tokens (memory %.2f GiB x %.2f - weights - reserve "
                   "%.1f GiB)\n", cap / GIB, cap / kvb, h.mem_bytes / GIB, h.mem_util, h.runtime_reserve_bytes / GIB);
        else
            printf("  does not fit: weights %.2f GiB per GPU exceed usable memory; raise --tp\n",
                   m.weights_total_bytes / GIB / (double)tp);
        printf("memory per %s%s: %.2f GiB usable (%.2f GiB x %.2f)\n", tp > 1 ? "GPU" : "device",
               h.unified_memory ? " (unified: weights, KV and the OS share it)" : "", fit.usable / GIB,
               h.mem_bytes / GIB, h.mem_util);
        printf("  reserve              %8.2f GiB (%s)\n", fit.reserve / GIB,
               h.unified_memory ? "the system's share" : "activations, graphs, allocator");
        printf("  weights              %8.2f GiB", fit.weights / GIB);
        if (m.weights_meta_bytes > 0)
            printf(" (%.2f codes and float data + %.2f block metadata)",
                   (m.weights_total_bytes - m.weights_meta_bytes) / GIB / (double)tp,
                   m.weights_meta_bytes / GIB / (double)tp);
        printf("\n  kv and state         %8.2f GiB (%llu x %llu tokens, %s)\n", fit.kv / GIB,
               (unsigned long long)batch, (unsigned long long)context, dtype_name((Dtype)kt));
        if (fit.fits)
            printf("  free                 %8.2f GiB: fits\n", fit.free / GIB);
        else
            printf("  short by             %8.2f GiB: does NOT fit\n", -fit.free / GIB);
    }
    return 0;
}

/* Peak resident memory of this process so far (MB). */
static double peak_rss_mb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
    return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* CPU time of this process so far (user + system, s): the figure a loaded
 * machine disturbs least. */
static double cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void bench_figures(double wall, uint64_t requests, const EngineStats *st)
{
    double items = (double)(st->batch_items ? st->batch_items : 1), cpu = cpu_s();
    printf("  wall %.3f s (cpu %.3f s): %.0f simulated requests/s, %.0f iterations/s, %.1f ns per "
           "request-iteration (%.1f ns of cpu; %llu request-iterations), peak RSS %.0f MB\n",
           wall, cpu, requests / wall, st->iterations / wall, wall * 1e9 / items, cpu * 1e9 / items,
           (unsigned long long)st->batch_items, peak_rss_mb());
    printf("  decode fast path: %llu of %llu iterations (%.1f%%; --no-fast-path: none)\n",
           (unsigned long long)st->fast_iterations, (unsigned long long)st->iterations,
           st->iterations ? 100.0 * (double)st->fast_iterations / (double)st->iterations : 0.0);
}

/* A scenario file run as `servesim run --quiet` does (full summary): the
 * figures of one replay. */
static int bench_scenario(const char *path, int exact)
{
    Err e = {0};
    double t0 = wall_s();
    RunSummary o;
    if (run_summary(&o, path, NULL, NULL, 0, 0, exact, &e) < 0) {
        run_summary_free(&o);
        return fail(&e);
    }
    double wall = wall_s() - t0;
    const char *name = o.s->name;
    const Summary *sum = o.sum;
    printf("bench: %s (%s, streamed)\n", strncmp(name, "bench: ", 7) ? name : name + 7, path);
    printf("  %u requests, %llu iterations, ITL n=%llu p99 %.2f ms, TTFT p99 %.2f ms (full summary%s)\n",
           sum->requests, (unsigned long long)sum->iterations, (unsigned long long)sum->itl_s.n,
           sum->itl_s.p99 * 1e3, sum->ttft_s.p99 * 1e3, exact ? ", exact statistics" : "");
    bench_figures(wall, sum->requests, o.rd.st);
    run_summary_free(&o);
    return 0;
}

static int cmd_bench(int argc, char **argv)
{
    uint64_t n = 100000;
    double rate = 12;
    int exact = 0;
    const char *scenario = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_bench, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--requests") && i + 1 < argc) {
            if (parse_u64(argv[++i], &n) < 0 || n < 1 || n > 1000000000)
                return cli_bad_usage("--requests needs an integer in [1, 1e9]", argv[i], usage_bench);
        } else if (!strcmp(argv[i], "--rate") && i + 1 < argc) {
            char *end;
            rate = strtod(argv[++i], &end);
            if (*end || !(rate > 0)) return cli_bad_usage("--rate needs a positive number", argv[i], usage_bench);
        } else if (!strcmp(argv[i], "--scenario") && i + 1 < argc) {
            scenario = argv[++i];
        } else if (!strcmp(argv[i], "--exact-stats")) {
            exact = 1;
        } else if (!strcmp(argv[i], "--materialise")) {
            /* issue 36: the materialised path is gone; accepted for a release */
        } else if (!strcmp(argv[i], "--no-fast-path")) {
            engine_fast_path_default(0);
        } else {
            return cli_bad_usage("unknown option", argv[i], usage_bench);
        }
    }
    if (scenario) return bench_scenario(scenario, exact);
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\": \"bench\", \"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\",\n"
             " \"cost_model\": {\"kind\": \"roofline\"},\n"
             " \"scheduler\": {\"kind\": \"chunked\", \"max_running\": 256, \"token_budget\": 2048},\n"
             " \"kv\": {\"reserve\": \"on_demand\"},\n"
             " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": %g, \"count\": %llu,\n"
             "   \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 1024, \"sigma\": 0.8, \"min\": 16, \"max\": 16384},\n"
             "   \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 256, \"sigma\": 0.7, \"min\": 1, \"max\": 2048}},\n"
             " \"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50}, \"report\": {\"token_times\": false, \"iterations\": false}, \"seed\": 1}",
             rate, (unsigned long long)n);
    Err e = {0};
    printf("bench: %llu Poisson requests at %g req/s, Qwen3-8B on H100, chunked (2048), roofline, streamed\n",
           (unsigned long long)n, rate);
    double t0 = wall_s();
    StreamRun *r = xmalloc(sizeof *r);
    if (streamrun(r, NULL, text, "(bench)", 0, 0, exact, NULL, &e) < 0) {
        streamrun_free(r);
        free(r);
        return fail(&e);
    }
    double wall = wall_s() - t0;
    const Summary *sum = &r->sum;
    printf("  simulated %.1f s of serving: %u finished, %llu iterations, p50 TTFT %.1f ms, p99 ITL %.2f ms\n",
           sum->window_s, sum->finished, (unsigned long long)sum->iterations, sum->ttft_s.p50 * 1e3,
           sum->itl_s.p99 * 1e3);
    printf("  at most %u request records held at once (running peak %u, waiting peak %u)\n", r->peak_live,
           sum->peak_running, sum->peak_waiting);
    RunData rd;
    streamrun_rundata(r, &rd);
    bench_figures(wall, r->requests, rd.st);
    streamrun_free(r);
    free(r);
    return 0;
}

#ifndef SERVESIM_VERSION
#define SERVESIM_VERSION "0.15"
#endif

static const char *const help_topics[] = {"run", "replay", "compare", "workload", "spec-plan", "spec-verify", "info",
                                          "cost", "sweep", "plan", "calib", "lua", "bench", "validate", "plot", "reproduce", NULL};

static int main_dispatch(int argc, char **argv);

/* A result printed to stdout counts only if it got there: a full disk or a
 * closed pipe fails the command (issue 15). */
int main(int argc, char **argv)
{
    /* a file-size limit (ulimit -f) makes the write fail with EFBIG, which
     * the output code reports and cleans up after, instead of killing the
     * process mid-file (and gnuplot, which inherits it) */
    signal(SIGXFSZ, SIG_IGN);
    /* no output over a file this command read (common_note_input) */
    common_guard_inputs(1);
    int rc = main_dispatch(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "servesim: stdout: write error: %s\n", errno ? strerror(errno) : "unknown");
        return rc ? rc : 1;
    }
    return rc;
}

static int main_dispatch(int argc, char **argv)
{
    gsl_set_error_handler_off();
    lua_plugins_register();
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        const char *topic = argc > 2 ? argv[2] : NULL;
        char help[] = "--help";
        char *hv[] = {help, NULL};
        if (topic && !strcmp(topic, "workload")) return wlcmd_main(1, hv);
        if (topic && !strcmp(topic, "calib")) return calibcmd_main(1, hv);
        if (topic && !strcmp(topic, "cost")) return costcmd_main(1, hv);
        if (topic && !strcmp(topic, "validate")) return validate_main(1, hv);
        if (topic && !strcmp(topic, "sweep")) return plancmd_sweep(1, hv);
        if (topic && !strcmp(topic, "plan")) return plancmd_plan(1, hv);
        if (topic && !strcmp(topic, "plot")) return plot_main(1, hv);
        if (topic && !strcmp(topic, "reproduce")) return repro_main(1, hv);
        if (topic && !strcmp(topic, "spec-plan")) return speccmd_plan(1, hv);
        if (topic && !strcmp(topic, "spec-verify")) return speccmd_verify(1, hv);
        if (topic && !strcmp(topic, "lora-size")) return servext_lora_size(1, hv);
        if (topic && !strcmp(topic, "offload-plan")) return servext_offload_plan(1, hv);
        if (topic && !strcmp(topic, "cache-value")) return servext_cache_value(1, hv);
        if (topic && !strcmp(topic, "amdahl")) return amdahlcmd_main(1, hv);
        int known = !topic;
        for (int k = 0; topic && help_topics[k]; k++) known |= !strcmp(topic, help_topics[k]);
        if (!known) {
            fprintf(stderr, "servesim: no help on '%s'; topics: run, replay, compare, workload, spec-plan, "
                            "spec-verify, info, cost, sweep, plan, calib, lua, bench, validate, plot, reproduce\n", topic);
            return 2;
        }
        fputs(!topic ? usage_main : !strcmp(topic, "lua") ? lua_cmd_usage : !strcmp(topic, "run") ? usage_run : !strcmp(topic, "info") ? usage_info
              : !strcmp(topic, "bench") ? usage_bench : !strcmp(topic, "replay") ? usage_replay
              : !strcmp(topic, "compare") ? usage_compare : usage_main, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("servesim %s\n", SERVESIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "lua")) return lua_cmd_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "replay")) return cmd_replay(argc - 2, argv + 2);
    if (!strcmp(cmd, "workload")) return wlcmd_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "spec-plan")) return speccmd_plan(argc - 2, argv + 2);
    if (!strcmp(cmd, "calib")) return calibcmd_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "cost")) return costcmd_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "spec-verify")) return speccmd_verify(argc - 2, argv + 2);
    if (!strcmp(cmd, "compare")) return cmd_compare(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate")) return validate_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "sweep")) return plancmd_sweep(argc - 2, argv + 2);
    if (!strcmp(cmd, "plan")) return plancmd_plan(argc - 2, argv + 2);
    if (!strcmp(cmd, "plot")) return plot_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "lora-size")) return servext_lora_size(argc - 2, argv + 2);
    if (!strcmp(cmd, "offload-plan")) return servext_offload_plan(argc - 2, argv + 2);
    if (!strcmp(cmd, "cache-value")) return servext_cache_value(argc - 2, argv + 2);
    if (!strcmp(cmd, "amdahl")) return amdahlcmd_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "reproduce")) return repro_main(argc - 2, argv + 2);
    fprintf(stderr, "servesim: unknown command '%s'\n\n%s", cmd, usage_main);
    return 2;
}
