/*
 * repro_calc.c -- the computations behind `servesim reproduce` (repro_calc.h).
 *
 * `run` and `replay` documents are the reports the run and replay commands
 * write, `sweep` the means over rates and seeds; a `calc` file names one
 * calculator in its "kind", dispatched here through the table below to
 * repro_mem.c, repro_cost.c and repro_decode.c (repro_calc_int.h).  Units:
 * a key says its unit (_ms, _s, _mib, _gib, _gb); sizes in MiB/GiB are
 * binary, GB decimal, as in the chapter.
 */
#include <math.h>
#include <string.h>

#include "cluster.h"
#include "jsonio.h"
#include "replay.h"
#include "report.h"
#include "repro_calc.h"
#include "repro_calc_int.h"
#include "streamrun.h"
#include "sweep.h"

/* ------------------------------------------------------------ helpers */

/* A JSON array of numbers into out (at most max); *n its length. */
int get_nums(const cJSON *in, const char *key, const char *w, int required, double *out, int max, int *n, Err *e)
{
    char p[256];
    jsonio_path(p, sizeof p, w, key);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(in, key);
    *n = 0;
    if (!a) return required ? err_set(e, "%s: missing key \"%s\"", w, key) : 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 || cJSON_GetArraySize(a) > max)
        return err_set(e, "%s: expected an array of 1 to %d numbers", p, max);
    const cJSON *x;
    cJSON_ArrayForEach(x, a)
    {
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
            return err_set(e, "%s[%d]: expected a number", p, *n);
        out[(*n)++] = x->valuedouble;
    }
    return 1;
}

int load_model(const cJSON *in, const char *w, ModelDesc *m, Dtype *kv, Err *e)
{
    const char *name = "qwen3-8b", *dt = "bf16";
    if (jsonio_str(in, "model", w, 0, &name, e) < 0 || jsonio_str(in, "kv_dtype", w, 0, &dt, e) < 0) return -1;
    if (model_load(name, m, e) < 0) return err_prefix(e, "%s: model", w);
    int d = dtype_parse(dt);
    if (d < 0) return err_set(e, "%s.kv_dtype: got \"%s\", expected bf16, fp16, fp8, q8_0 or q4_0", w, dt);
    if (kv) *kv = (Dtype)d;
    return 0;
}

/* ------------------------------------------------------------ calculators */

/* ------------------------------------------------ the design board (8.6.3) */

static const Calc calcs[] = {
    {"kv_capacity", calc_kv_capacity}, {"paged", calc_paged},       {"branches", calc_branches},
    {"read_per_token", calc_read_per_token}, {"step", calc_step},   {"flops", calc_flops},
    {"spec_plan", calc_spec_plan},     {"spec_verify", calc_spec_verify}, {"greedy", calc_greedy},
    {"merge", calc_merge},             {"prefix_reuse", calc_prefix_reuse}, {"board", calc_board},
    {"graph_pad", calc_graph_pad},     {"kv_format", calc_kv_format}, {"lora", calc_lora},
    {"offload", calc_offload},         {"cache_value", calc_cache_value},
    {"model_size", calc_model_size},   {"snapshots", calc_snapshots}, {"amdahl", calc_amdahl},
};

/* ------------------------------------------------------------ run, replay */

/* a run document's "roofline" argument: the same scenario on the roofline */
static void run_roofline(Scenario *s, void *ctx)
{
    (void)ctx;
    s->cost_kind = COST_ROOFLINE;
}

/* `servesim run --json`'s report of the scenario at path (without the
 * error band), its requests included: on the streamed engine, read back
 * whole. */
static cJSON *compute_run(const char *path, const char *arg, Err *e)
{
    StreamRun *r = xmalloc(sizeof *r);
    StreamOutputs so = {.json_requests = 1};
    if (arg && !strcmp(arg, "roofline")) so.adjust = run_roofline;
    cJSON *root = NULL;
    if (streamrun(r, path, NULL, NULL, 0, 0, 0, &so, e) == 0) {
        cJSON *tree = streamrun_report(r, NULL, 1);
        root = streamrun_json(r, tree, e);
        cJSON_Delete(tree);
    }
    streamrun_free(r);
    free(r);
    return root;
}

static cJSON *compute_replay(const char *path, const char *arg, Err *e)
{
    Replay rp;
    if (replay_load(path, &rp, e) < 0) return NULL;
    if (arg && mcfg_parse_window_arg(arg, &rp.mcfg, e) < 0) {
        replay_free(&rp);
        return NULL;
    }
    RunData rd;
    Summary sum;
    replay_rundata(&rp, &rd);
    metrics_summarize(&rp.mcfg, &rd, &sum);
    cJSON *root = report_json(&rp.mcfg, &rd, &sum, 1);
    replay_free(&rp);
    return root;
}

/* One run of a scenario text (the streamed engine, as a sweep's): its
 * report's summary numbers. */
static int sweep_one(const char *text, const char *name, double *completion, double *goodput, Err *e)
{
    RunSummary o;
    int rc = run_summary(&o, NULL, text, name, 0, 0, 0, e);
    if (rc == 0) {
        cJSON *root = report_json(o.mc, &o.rd, o.sum, 0);
        rc = repro_get(root, "summary.throughput.requests_per_s", completion, e) < 0 ||
                     repro_get(root, "summary.goodput.requests_per_s", goodput, e) < 0
                 ? -1
                 : 0;
        cJSON_Delete(root);
    }
    run_summary_free(&o);
    return rc;
}

static cJSON *compute_sweep(const char *path, const char *arg, Err *e)
{
    double rates[32];
    int nr = 0;
    long seeds = 1;
    const char *p = arg ? arg : "";
    while (*p && *p != '/' && nr < 32) {
        char *end;
        rates[nr++] = strtod(p, &end);
        if (end == p || !(rates[nr - 1] > 0)) break;
        p = *end == ',' ? end + 1 : end;
    }
    if (*p == '/') seeds = strtol(p + 1, NULL, 10);
    if (nr == 0 || seeds < 1 || seeds > 64) {
        err_set(e, "%s: sweep arguments \"%s\": expected RATES/SEEDS such as 1,4,16/3", path, arg ? arg : "");
        return NULL;
    }
    cJSON *in = jsonio_parse_file(path, e);
    if (!in) return NULL;
    double seed0 = 1;
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(in, "seed");
    if (cJSON_IsNumber(sd)) seed0 = sd->valuedouble;
    cJSON *out = cJSON_CreateObject();
    for (int i = 0; i < nr && out; i++) {
        double c_sum = 0, g_sum = 0;
        for (long k = 0; k < seeds; k++) {
            cJSON *copy = cJSON_Duplicate(in, 1);
            cJSON *w = cJSON_GetObjectItemCaseSensitive(copy, "workload");
            char *text = NULL;
            double c = 0, g = 0;
            int rc = w && sweep_set_rate(w, "workload", rates[i], e) == 0 ? 0 : -1;
            if (!w) err_set(e, "%s: missing key \"workload\"", path);
            if (rc == 0) {
                cJSON_DeleteItemFromObjectCaseSensitive(copy, "seed");
                cJSON_AddNumberToObject(copy, "seed", seed0 + (double)k);
                text = cJSON_PrintUnformatted(copy);
                rc = sweep_one(text, path, &c, &g, e);
            }
            cJSON_free(text);
            cJSON_Delete(copy);
            if (rc < 0) {
                cJSON_Delete(out);
                out = NULL;
                break;
            }
            c_sum += c;
            g_sum += g;
        }
        if (!out) break;
        char key[48];
        snprintf(key, sizeof key, "r%g", rates[i]);
        cJSON *o = cJSON_AddObjectToObject(out, key);
        cJSON_AddNumberToObject(o, "completion_rps", c_sum / (double)seeds);
        cJSON_AddNumberToObject(o, "goodput_rps", g_sum / (double)seeds);
    }
    cJSON_Delete(in);
    return out;
}

cJSON *repro_compute(ReproKind kind, const char *path, const char *arg, Err *e)
{
    if (kind == REPRO_SWEEP) return compute_sweep(path, arg, e);
    if (kind == REPRO_RUN) return compute_run(path, arg, e);
    if (kind == REPRO_REPLAY) return compute_replay(path, arg, e);
    cJSON *in = jsonio_parse_file(path, e);
    if (!in) return NULL;
    const char *k = NULL;
    if (jsonio_expect_object(in, path, e) < 0 || jsonio_str(in, "kind", path, 1, &k, e) < 0) {
        cJSON_Delete(in);
        return NULL;
    }
    for (size_t i = 0; i < sizeof calcs / sizeof calcs[0]; i++) {
        if (strcmp(k, calcs[i].kind)) continue;
        cJSON *out = cJSON_CreateObject();
        if (calcs[i].fn(in, path, out, e) < 0) {
            cJSON_Delete(out);
            out = NULL;
        }
        cJSON_Delete(in);
        return out;
    }
    char list[512] = "";
    for (size_t i = 0; i < sizeof calcs / sizeof calcs[0]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", calcs[i].kind);
    err_set(e, "%s.kind: got \"%s\", expected one of %s", path, k, list);
    cJSON_Delete(in);
    return NULL;
}

void repro_file_source(const char *path, char *buf, size_t n)
{
    Err e;
    buf[0] = 0;
    cJSON *in = jsonio_parse_file(path, &e);
    if (!in) return;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(in, "source");
    if (!cJSON_IsString(s)) s = cJSON_GetObjectItemCaseSensitive(in, "name");
    if (cJSON_IsString(s)) snprintf(buf, n, "%s", s->valuestring);
    cJSON_Delete(in);
}
