/*
 * scenario.c -- scenario parsing, defaults and engine assembly (see
 * scenario.h).
 */
#include "scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "jsonio.h"
#include "paths.h"
#include "plugin.h"
#include "rng.h"
#include "prefix.h"
#include "reqarray.h"

/* A realistic default: chat-like lengths (lognormal around 1K in / 256 out,
 * in the range of the Azure 2023 conversation trace), 10 requests/s on one
 * H100 with a vLLM-like chunked scheduler (2048-token budget, up to 256
 * running) and on-demand paged KV. */
const char scenario_default_json[] =
    "{\n"
    "  \"name\": \"default: Qwen3-8B on one H100, Poisson 10 req/s\",\n"
    "  \"model\": \"qwen3-8b\",\n"
    "  \"hardware\": \"h100-sxm\",\n"
    "  \"tp\": 1,\n"
    "  \"cost_model\": {\"kind\": \"roofline\"},\n"
    "  \"scheduler\": {\"kind\": \"chunked\", \"max_running\": 256, \"token_budget\": 2048},\n"
    "  \"kv\": {\"block_tokens\": 16, \"reserve\": \"on_demand\"},\n"
    "  \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 10, \"count\": 2000,\n"
    "               \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 1024, \"sigma\": 0.8, \"min\": 16, \"max\": 16384},\n"
    "               \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 256, \"sigma\": 0.7, \"min\": 1, \"max\": 2048}},\n"
    "  \"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50},\n"
    "  \"seed\": 1\n"
    "}\n";

void scenario_free(Scenario *s)
{
    workload_free(&s->wl);
    workload_stream_free(s->wl_stream);
    s->wl_stream = NULL;
    cJSON_Delete(s->wl_json);
    s->wl_json = NULL;
    for (uint32_t i = 0; i < s->n_plugin_sched; i++) cJSON_Delete(s->plugin_sched[i]);
    s->n_plugin_sched = 0;
    cJSON_Delete(s->plugin_router);
    s->plugin_router = NULL;
    cJSON_Delete(s->plugin_evict);
    s->plugin_evict = NULL;
    free(s->spec_by_cls);
    s->spec_by_cls = NULL;
    engprof_free(&s->engine);
    free(s->barrier_waiters);
    s->barrier_waiters = NULL;
}

/* Overrides dst's keys with src's; objects merge key by key, anything else
 * replaces. */
static void merge_into(cJSON *dst, const cJSON *src)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, src) {
        cJSON *old = cJSON_GetObjectItemCaseSensitive(dst, it->string);
        if (old && cJSON_IsObject(old) && cJSON_IsObject(it)) {
            merge_into(old, it);
        } else {
            cJSON *copy = cJSON_Duplicate(it, 1);
            if (old) cJSON_ReplaceItemInObjectCaseSensitive(dst, it->string, copy);
            else cJSON_AddItemToObject(dst, it->string, copy);
        }
    }
}

/* {"base": NAME, ...overrides}: the bundled description NAME (from
 * models/<sub>) with the given keys replaced, validated as a whole by the
 * normal reader.  Returns a new tree, or NULL + err; *had_base = 0 and NULL
 * when v has no "base". */
static cJSON *with_base(const cJSON *v, const char *where, const char *sub, int *had_base, Err *e)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(v, "base");
    *had_base = b != NULL;
    if (!b) return NULL;
    char p[256], file[1024];
    jsonio_path(p, sizeof p, where, "base");
    if (!cJSON_IsString(b)) {
        err_set(e, "%s: expected the name of a bundled description", p);
        return NULL;
    }
    paths_data_file(file, sizeof file, sub, b->valuestring);
    cJSON *root = jsonio_parse_file(file, e);
    if (!root) {
        char names[512];
        err_set(e, "%s: unknown \"%s\"; available: %s", p, b->valuestring, paths_list_names(names, sizeof names, sub));
        return NULL;
    }
    cJSON *over = cJSON_Duplicate(v, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(over, "base");
    merge_into(root, over);
    cJSON_Delete(over);
    return root;
}

/* A description given as a bundled name, an object, or {"base": NAME,
 * ...overrides}; `what` words the message ("model", "hardware"). */
typedef int (*FromJson)(const cJSON *obj, const char *where, void *out, Err *e);
typedef int (*LoadNamed)(const char *name_or_path, void *out, Err *e);

static int parse_desc(const cJSON *v, const char *where, const char *sub, const char *what, const char *example,
                      FromJson from_json, LoadNamed load, void *out, Err *e)
{
    if (cJSON_IsString(v)) {
        /* a path: beside the scenario, then the data directory (paths.h) */
        char dir[1024], path[4096];
        const char *name = v->valuestring;
        size_t len = strlen(name);
        if (len >= 5 && !strcmp(name + len - 5, ".json")) {
            workload_base_dir(where, dir, sizeof dir);
            if (!(name = paths_resolve_in(path, sizeof path, what, sub, name, dir, e))) return err_prefix(e, "%s", where);
        }
        return load(name, out, e) < 0 ? err_prefix(e, "%s", where) : 0;
    }
    if (!cJSON_IsObject(v))
        return err_set(e, "%s: expected a %s name (e.g. \"%s\") or a %s object", where, what, example, what);
    int had_base;
    cJSON *merged = with_base(v, where, sub, &had_base, e);
    if (!had_base) return from_json(v, where, out, e);
    if (!merged) return -1;
    int rc = from_json(merged, where, out, e);
    cJSON_Delete(merged);
    return rc;
}

static int model_from_json_v(const cJSON *o, const char *w, void *out, Err *e) { return model_from_json(o, w, out, e); }
static int model_load_v(const char *n, void *out, Err *e) { return model_load(n, out, e); }
static int hw_from_json_v(const cJSON *o, const char *w, void *out, Err *e) { return hw_from_json(o, w, out, e); }
static int hw_load_v(const char *n, void *out, Err *e) { return hw_load(n, out, e); }
static int eng_from_json_v(const cJSON *o, const char *w, void *out, Err *e) { return engprof_from_json(o, w, out, e); }
static int eng_load_v(const char *n, void *out, Err *e) { return engprof_load(n, out, e); }

/* How "engine" names its profile, for its measured error band
 * (errband.h): a bundled name, or the "base" an object builds on.  An
 * object's own "error_band" is taken out (*bare: the object without it,
 * owned), so the profile reader sees engine keys only; the caller reads
 * the band once the profile's name is known. */
static void engine_ref(const cJSON *v, Scenario *s, cJSON **bare)
{
    *bare = NULL;
    const char *file = NULL;
    if (cJSON_IsString(v)) {
        size_t n = strlen(v->valuestring);
        snprintf(s->engine_label, sizeof s->engine_label, "%s", v->valuestring);
        if (n >= 5 && !strcmp(v->valuestring + n - 5, ".json"))
            s->engine_unbanded = "given as a file path: bands are measured for the bundled engines; name one, or "
                                 "give the engine object an \"error_band\" of your own measurement";
        else
            file = v->valuestring;
    } else if (cJSON_IsObject(v)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(v, "base");
        if (cJSON_IsString(b)) file = b->valuestring;
        else
            s->engine_unbanded = "given inline without a \"base\": its error was never measured; give it an "
                                 "\"error_band\" of your own measurement";
        if (cJSON_GetObjectItemCaseSensitive(v, "error_band")) {
            *bare = cJSON_Duplicate(v, 1);
            cJSON_DeleteItemFromObjectCaseSensitive(*bare, "error_band");
        }
    }
    if (file && strlen(file) < sizeof s->engine_file) {
        snprintf(s->engine_file, sizeof s->engine_file, "%s", file);
        snprintf(s->engine_label, sizeof s->engine_label, "%s", file);
    } else if (file) {
        s->engine_unbanded = "a name longer than any band file entry";
    }
}

int scenario_error_band(const Scenario *s, ErrBand *out, Err *e)
{
    ErrBandRef ref = {.has_engine = s->engine.present, .unbanded = s->engine_unbanded,
                      .own = s->engine_band.present ? &s->engine_band : NULL};
    snprintf(ref.file, sizeof ref.file, "%s", s->engine_file);
    snprintf(ref.label, sizeof ref.label, "%s", s->engine_label);
    return errband_resolve(&ref, out, e);
}

/* The engine profile: graph sizes, host time, and the calibrated profile of
 * its own kernel tables (<hardware>-<kernel_tables>) when one is bundled. */
static int apply_engine(Scenario *s, const char *hw_key, const char *where, Err *e)
{
    EngineProfile *ep = &s->engine;
    memcpy(s->wrap.graph_sizes, ep->graph_sizes, ep->n_sizes * sizeof ep->graph_sizes[0]);
    s->wrap.n_sizes = ep->n_sizes;
    s->wrap.mixed_graphs = ep->mixed_batch_graphs;
    if (ep->kernel_tables[0] && hw_key) {
        char name[96], file[1024];
        snprintf(name, sizeof name, "%s-%s", hw_key, ep->kernel_tables);
        paths_data_file(file, sizeof file, "profiles/", name);
        FILE *f = fopen(file, "r");
        if (f) {
            fclose(f);
            if (hw_attach_profile(&s->hw, name, e) < 0) return err_prefix(e, "%s.kernel_tables", where);
            snprintf(s->kernel_profile, sizeof s->kernel_profile, "%s", name);
        }
    }
    if (ep->has_iter_overhead) {
        /* the engine's host time replaces the hardware's flat overhead */
        s->hw.iter_overhead_s = 0;
        s->wrap.has_host = 1;
        s->wrap.host_per_seq_s = ep->iter_per_seq_s;
        s->wrap.overlap = ep->overlap;
    }
    return 0;
}

/* Sliding-window and recurrent layers (issue 17): a sequence's window KV
 * and fixed state go into the pool beside the full layers' per-token KV;
 * with the prefix cache the recurrent state is snapshotted every
 * snapshot_tokens (kv.snapshot_tokens, default 4096, rounded to blocks) and
 * each cached snapshot's bytes are spread over the tokens it covers. */
static int scenario_kv_hybrid(Scenario *s, const char *w, Err *e)
{
    const ModelDesc *m = &s->model;
    if (m->n_sliding == 0 && m->n_linear == 0) return 0;
    if (m->n_full == 0)
        return err_set(e, "%s: model %s has no full-attention layer; a pool of only windowed or recurrent state "
                          "is not modelled", w, m->name);
    s->kv.window_bytes_per_token = m->n_sliding * model_kv_bytes_per_token_layer(m, s->kv_dtype);
    s->kv.window_tokens = (uint32_t)m->sliding_window;
    s->kv.fixed_bytes = m->linear_state_bytes;
    if (m->n_linear > 0 && s->kv.snapshot_tokens == 0) s->kv.snapshot_tokens = 4096;
    if (m->n_linear > 0 && s->prefix_cache) s->kv.snapshot_bytes = m->linear_state_bytes;
    return 0;
}

const char *scenario_cost_kind_name(CostKind k)
{
    return k == COST_LINEAR ? "linear" : k == COST_TABLE ? "table" : "roofline";
}

/* "cost_model": {"kind": "table", "x": "bytes" | "tokens", "points":
 * [[x, step ms], ...]} -- measured step times, x ascending. */
static int parse_cost_table(const cJSON *v, const char *where, Scenario *s, Err *e)
{
    static const char *const keys[] = {"kind", "x", "points", "source", NULL};
    static const char *const xs[] = {"bytes", "tokens", NULL};
    if (jsonio_check_keys(v, where, keys, e) < 0) return -1;
    TableCostCfg *t = &s->table;
    memset(t, 0, sizeof *t);
    if (jsonio_enum(v, "x", where, 0, xs, &t->by_tokens, e) < 0) return -1;
    const char *src = NULL;
    if (jsonio_str(v, "source", where, 0, &src, e) < 0) return -1;
    char pw[300];
    jsonio_path(pw, sizeof pw, where, "points");
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(v, "points");
    if (!pts) return err_set(e, "%s: missing key \"points\" ([[x, step ms], ...])", where);
    if (jsonio_expect_array(pts, pw, e) < 0) return -1;
    int n = cJSON_GetArraySize(pts);
    if (n < 2 || n > COST_TABLE_MAX)
        return err_set(e, "%s: got %d points, expected 2 to %d [x, step ms] pairs", pw, n, COST_TABLE_MAX);
    for (int i = 0; i < n; i++) {
        const cJSON *p = cJSON_GetArrayItem(pts, i);
        char iw[340];
        jsonio_index(iw, sizeof iw, pw, i);
        const cJSON *x = cJSON_GetArrayItem(p, 0), *ms = cJSON_GetArrayItem(p, 1);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(x) || !cJSON_IsNumber(ms) ||
            !(x->valuedouble >= 0) || !(ms->valuedouble >= 0) || !isfinite(x->valuedouble) ||
            !(ms->valuedouble < 1e9))
            return err_set(e, "%s: expected [%s, step ms] with both numbers >= 0", iw,
                           t->by_tokens ? "new tokens" : "bytes moved");
        t->x[i] = x->valuedouble;
        t->t_s[i] = ms->valuedouble * 1e-3;
        if (i > 0 && !(t->x[i] > t->x[i - 1]))
            return err_set(e, "%s: x %.6g does not exceed the previous point's %.6g (points must ascend)", iw,
                           t->x[i], t->x[i - 1]);
    }
    t->n = n;
    return 0;
}

static int parse_cost(const cJSON *v, const char *where, Scenario *s, Err *e);

/* "cost_model": NAME -- a named step profile, models/steps/NAME.json, whose
 * "cost_model" object is used as if written here (the chapter's experiment
 * 8-1 step model is "ch8-experiment-8-1"). */
static int parse_cost_named(const char *name, const char *where, Scenario *s, Err *e)
{
    char path[4096], dir[1024];
    workload_base_dir(where, dir, sizeof dir);
    if (!paths_resolve_in(path, sizeof path, "step profile", "steps/", name, dir, e)) return err_prefix(e, "%s", where);
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(root, "cost_model");
    char w[4200];
    snprintf(w, sizeof w, "%s: cost_model", path);
    int rc = cm && !cJSON_IsString(cm) ? parse_cost(cm, w, s, e)
                                       : err_set(e, "%s: expected a \"cost_model\" object in the step profile", path);
    cJSON_Delete(root);
    return rc;
}

static int parse_cost(const cJSON *v, const char *where, Scenario *s, Err *e)
{
    static const char *const kinds[] = {"linear", "roofline", "table", NULL};
    if (cJSON_IsString(v)) return parse_cost_named(v->valuestring, where, s, e);
    if (jsonio_expect_object(v, where, e) < 0) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, " or the name of a step profile in models/steps/");
        return -1;
    }
    int kind;
    if (jsonio_enum(v, "kind", where, 1, kinds, &kind, e) < 0) return -1;
    s->cost_kind = (CostKind)kind;
    if (kind == COST_TABLE) return parse_cost_table(v, where, s, e);
    if (kind == COST_LINEAR) {
        static const char *const keys[] = {"kind", "fixed_ms", "per_token_us", "per_pair_ns", NULL};
        if (jsonio_check_keys(v, where, keys, e) < 0) return -1;
        double f = 0, t = 0, p = 0;
        if (jsonio_num(v, "fixed_ms", where, 1, 0, 1e6, &f, e) < 0) return -1;
        if (jsonio_num(v, "per_token_us", where, 1, 0, 1e6, &t, e) < 0) return -1;
        if (jsonio_num(v, "per_pair_ns", where, 0, 0, 1e6, &p, e) < 0) return -1;
        s->linear = (LinearCostCfg){f * 1e-3, t * 1e-6, p * 1e-9};
        return 0;
    }
    static const char *const keys[] = {"kind", "compute_dtype", "efficiency", "iter_overhead_us", "profile",
                                       "weights_separate_memory", NULL};
    if (jsonio_check_keys(v, where, keys, e) < 0) return -1;
    if (jsonio_bool(v, "weights_separate_memory", where, 0, &s->weights_separate, e) < 0) return -1;
    /* a calibrated profile by name or path ("none": the flat efficiencies);
     * explicit efficiencies replace the bundled profile */
    const char *prof = NULL;
    if (jsonio_str(v, "profile", where, 0, &prof, e) < 0) return -1;
    if (prof) {
        char path[4096], dir[1024];
        size_t len = strlen(prof);
        if (len >= 5 && !strcmp(prof + len - 5, ".json")) {
            /* a path: beside the scenario, then the data directory (paths.h) */
            workload_base_dir(where, dir, sizeof dir);
            if (!(prof = paths_resolve_in(path, sizeof path, "profile", "profiles/", prof, dir, e)))
                return err_prefix(e, "%s.profile", where);
        }
        if (hw_attach_profile(&s->hw, prof, e) < 0) return err_prefix(e, "%s.profile", where);
    } else if (cJSON_GetObjectItemCaseSensitive(v, "efficiency")) {
        hw_attach_profile(&s->hw, "none", e);
    }
    const char *dt = NULL;
    if (jsonio_str(v, "compute_dtype", where, 0, &dt, e) < 0) return -1;
    if (dt) {
        int d = dtype_parse(dt);
        if (d != DTYPE_BF16 && d != DTYPE_FP16 && d != DTYPE_FP8 && d != DTYPE_FP8_BLOCK && d != DTYPE_NVFP4)
            return err_set(e, "%s.compute_dtype: got \"%s\", expected bf16, fp16, fp8, fp8_block or nvfp4", where, dt);
        s->compute_dtype = (Dtype)d;
    }
    double us = -1;
    if (jsonio_num(v, "iter_overhead_us", where, 0, 0, 1e7, &us, e) < 0) return -1;
    if (us >= 0) s->hw.iter_overhead_s = us * 1e-6;
    const cJSON *eff = cJSON_GetObjectItemCaseSensitive(v, "efficiency");
    if (eff) {
        char p[256];
        jsonio_path(p, sizeof p, where, "efficiency");
        if (jsonio_expect_object(eff, p, e) < 0) return -1;
        static const char *const ek[] = {"gemm_compute", "mem", "attn_compute", "attn_mem", NULL};
        if (jsonio_check_keys(eff, p, ek, e) < 0) return -1;
        double x = -1;
        if (jsonio_num(eff, "gemm_compute", p, 0, 1e-6, 1, &x, e) < 0) return -1;
        if (x > 0) s->hw.gemm_compute_eff = (EffCurve){.flat = x, .n = 0};
        if (jsonio_num(eff, "mem", p, 0, 1e-6, 1, &s->hw.mem_eff, e) < 0) return -1;
        if (jsonio_num(eff, "attn_compute", p, 0, 1e-6, 1, &s->hw.attn_compute_eff, e) < 0) return -1;
        if (jsonio_num(eff, "attn_mem", p, 0, 1e-6, 1, &s->hw.attn_mem_eff, e) < 0) return -1;
    }
    return 0;
}

/* An empirical distribution of accepted draft counts from a file: one
 * observed count per line ('#' comments allowed). */
static int spec_counts_file(const char *name, const char *where, SpecCfg *c, Err *e)
{
    /* relative to the scenario's directory first, as every other file it names */
    char dir[512], path[1024];
    workload_base_dir(where, dir, sizeof dir);
    if (workload_resolve(dir, name, where, path, sizeof path, e) < 0) return -1;
    char *text = read_text_file(path, NULL, e);
    if (!text) return err_prefix(e, "%s", where);
    memset(c->counts, 0, sizeof c->counts);
    c->n_counts = 0;
    int line = 0;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        line++;
        char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q && *q != '#') {
            char *end;
            long k = strtol(q, &end, 10);
            while (*end == ' ' || *end == '\t' || *end == '\r') end++;
            if (end == q || *end || k < 0 || k > SPEC_M_MAX) {
                /* the excerpt is copied out before the text is freed */
                char ex[64];
                text_excerpt(q, strlen(q), ex, sizeof ex);
                free(text);
                return err_set(e, "%s:%d: got \"%s\", expected an accepted-draft count in 0..%d", path, line, ex,
                               SPEC_M_MAX);
            }
            c->counts[k] += 1;
            if ((uint32_t)k + 1 > c->n_counts) c->n_counts = (uint32_t)k + 1;
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(text);
    if (c->n_counts == 0) return err_set(e, "%s: %s holds no counts", where, path);
    return 0;
}

static int parse_spec_one(const cJSON *v, const char *where, Scenario *s, SpecCfg *c, int allow_top, Err *e)
{
    static const char *const top[] = {"method", "draft_len", "accept", "accept_counts", "accept_file", "draft_ms",
                                      "index_build_ms", "draft_model", "expectation", "max_running", "classes",
                                      "enabled", NULL};
    static const char *const cls[] = {"method", "draft_len", "accept", "accept_counts", "accept_file", "draft_ms",
                                      "index_build_ms", "expectation", "max_running", "enabled", NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, allow_top ? top : cls, e) < 0) return -1;
    char p[300];
    c->enabled = 1;
    if (jsonio_bool(v, "enabled", where, 0, &c->enabled, e) < 0) return -1;
    int m = (int)c->method;
    if (jsonio_enum(v, "method", where, allow_top, spec_method_names, &m, e) < 0) return -1;
    c->method = (SpecMethod)m;
    int64_t len = c->draft_len, mr = c->max_running;
    if (jsonio_int(v, "draft_len", where, allow_top, 1, SPEC_M_MAX, &len, e) < 0) return -1;
    if (jsonio_int(v, "max_running", where, 0, 1, 1 << 20, &mr, e) < 0) return -1;
    c->draft_len = (uint32_t)len;
    c->max_running = (uint32_t)mr;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "accept");
    const cJSON *ac = cJSON_GetObjectItemCaseSensitive(v, "accept_counts");
    const cJSON *af = cJSON_GetObjectItemCaseSensitive(v, "accept_file");
    if ((a != NULL) + (ac != NULL) + (af != NULL) > 1)
        return err_set(e, "%s: give one of accept, accept_counts, accept_file", where);
    if (allow_top && !a && !ac && !af)
        return err_set(e, "%s: missing the acceptance: \"accept\" (a rate or per-position rates), "
                          "\"accept_counts\" or \"accept_file\"", where);
    if (a) {
        jsonio_path(p, sizeof p, where, "accept");
        c->n_counts = 0;
        if (cJSON_IsNumber(a)) {
            c->n_rates = 1;
            c->rates[0] = a->valuedouble;
        } else if (cJSON_IsArray(a) && cJSON_GetArraySize(a) >= 1 && cJSON_GetArraySize(a) <= SPEC_M_MAX) {
            c->n_rates = 0;
            const cJSON *x;
            cJSON_ArrayForEach(x, a) c->rates[c->n_rates++] = cJSON_IsNumber(x) ? x->valuedouble : -1;
        } else {
            return err_set(e, "%s: expected a rate in [0, 1] or an array of per-position rates", p);
        }
        for (uint32_t i = 0; i < c->n_rates; i++)
            if (!(c->rates[i] >= 0 && c->rates[i] <= 1))
                return err_set(e, "%s: got %g, expected rates in [0, 1]", p, c->rates[i]);
    }
    if (ac) {
        jsonio_path(p, sizeof p, where, "accept_counts");
        if (!cJSON_IsArray(ac) || cJSON_GetArraySize(ac) < 1 || cJSON_GetArraySize(ac) > SPEC_M_MAX + 1)
            return err_set(e, "%s: expected weights of 0, 1, 2, ... accepted drafts", p);
        c->n_rates = 0;
        c->n_counts = 0;
        double tot = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, ac) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0) return err_set(e, "%s: weights must be numbers >= 0", p);
            c->counts[c->n_counts++] = x->valuedouble;
            tot += x->valuedouble;
        }
        if (!(tot > 0)) return err_set(e, "%s: the weights sum to 0", p);
    }
    if (af) {
        jsonio_path(p, sizeof p, where, "accept_file");
        if (!cJSON_IsString(af)) return err_set(e, "%s: expected a file name", p);
        c->n_rates = 0;
        if (spec_counts_file(af->valuestring, p, c, e) < 0) return -1;
    }
    double ms = c->draft_s * 1e3, ib = c->index_build_s * 1e3;
    if (jsonio_num(v, "draft_ms", where, 0, 0, 1e6, &ms, e) < 0) return -1;
    if (jsonio_num(v, "index_build_ms", where, 0, 0, 1e9, &ib, e) < 0) return -1;
    c->draft_s = ms * 1e-3;
    c->index_build_s = ib * 1e-3;
    if (jsonio_bool(v, "expectation", where, 0, &c->expectation, e) < 0) return -1;
    const cJSON *dm = cJSON_GetObjectItemCaseSensitive(v, "draft_model");
    if (dm) {
        jsonio_path(p, sizeof p, where, "draft_model");
        if (parse_desc(dm, p, "", "model", "qwen3-0.6b", model_from_json_v, model_load_v, &s->draft_model, e) < 0)
            return -1;
        s->has_draft_model = 1;
    }
    if (c->method == SPEC_DRAFT_MODEL && allow_top && !s->has_draft_model)
        return err_set(e, "%s: method \"draft_model\" needs \"draft_model\" (a model name)", where);
    return 0;
}

static int parse_spec(const cJSON *v, const char *where, Scenario *s, Err *e)
{
    if (parse_spec_one(v, where, s, &s->spec, 1, e) < 0) return -1;
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(v, "classes");
    if (!cl) return 0;
    char p[256], cp[320];
    jsonio_path(p, sizeof p, where, "classes");
    if (jsonio_expect_object(cl, p, e) < 0) return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, cl) {
        if (s->n_spec_cls >= MCFG_CLASSES_MAX) return err_set(e, "%s: more than %d classes", p, MCFG_CLASSES_MAX);
        jsonio_path(cp, sizeof cp, p, it->string);
        SpecCfg *c = &s->spec_cls[s->n_spec_cls];
        *c = s->spec;
        if (parse_spec_one(it, cp, s, c, 0, e) < 0) return -1;
        snprintf(s->spec_cls_name[s->n_spec_cls], sizeof s->spec_cls_name[0], "%s", it->string);
        s->n_spec_cls++;
    }
    return 0;
}

/* Keys each scheduler kind accepts, besides the shared ones; with k NULL,
 * writes the list into buf. */
static int sched_key_ok(int kind, const char *k, char *buf, size_t n)
{
    static const char *const shared[] = {"kind", "order", "admission", NULL};
    static const char *const plain[] = {"max_running", "token_budget", NULL};
    static const char *const cont[] = {"max_running", "token_budget", "max_num_tokens", "max_partial_prefills", NULL};
    static const char *const chunked[] = {"max_running", "token_budget", "long_prefill_threshold",
                                          "max_partial_prefills", "mixed", NULL};
    static const char *const vllm[] = {"max_num_seqs", "max_num_batched_tokens", "preemption", "watermark",
                                       "swap_gb_per_s", NULL};
    const char *const *lists[] = {shared, kind == SCHED_CHUNKED  ? chunked
                                          : kind == SCHED_VLLM ? vllm
                                          : kind == SCHED_CONTINUOUS ? cont
                                                                     : plain};
    size_t used = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l][i]; i++) {
            if (k && !strcmp(lists[l][i], k)) return 1;
            if (buf && used < n) used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", lists[l][i]);
        }
    return 0;
}

static int parse_sched(const cJSON *v, const char *where, Scenario *s, Err *e)
{
    if (jsonio_expect_object(v, where, e) < 0) return -1;
    int kind;
    const PluginProvider *pp = plugin_for(v);
    if (pp && pp->validate_sched) {
        /* a scripted policy (a Lua one): its provider builds it when each
         * engine is made; the object and the script path are checked now */
        char dir[512];
        workload_base_dir(where, dir, sizeof dir);
        if (pp->validate_sched(v, where, dir, e) < 0) return -1;
        if (s->n_plugin_sched == 4) return err_set(e, "%s: at most 4 scripted schedulers in one scenario", where);
        cJSON *copy = cJSON_Duplicate(v, 1);
        s->plugin_sched[s->n_plugin_sched++] = copy;
        const cJSON *mr = cJSON_GetObjectItemCaseSensitive(v, "max_running");
        s->sched = (SchedConfig){.kind = SCHED_CONTINUOUS,
                                 .max_running = cJSON_IsNumber(mr) ? (uint32_t)mr->valuedouble : 256, .plugin = copy};
        return 0;
    }
    if (jsonio_enum(v, "kind", where, 1, sched_kind_names, &kind, e) < 0) return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        char allowed[512] = "";
        if (!sched_key_ok(kind, it->string, NULL, 0)) {
            sched_key_ok(kind, NULL, allowed, sizeof allowed);
            return err_set(e, "%s: unknown key \"%s\" for a %s scheduler; allowed: %s", where, it->string,
                           sched_kind_names[kind], allowed);
        }
    }
    SchedConfig *c = &s->sched;
    /* vLLM v0's defaults without chunked prefill: max_num_seqs 256 and
     * max_num_batched_tokens = max(max_model_len, 2048), so that any prompt
     * the model accepts can be prefilled */
    int64_t vllm_tb = s->model.max_context > 2048 ? s->model.max_context : 2048;
    int64_t mr = 256, tb = kind == SCHED_VLLM ? vllm_tb : 2048, lp = 0, mp = 0, mnt = 0;
    if (kind == SCHED_VLLM) {
        if (jsonio_int(v, "max_num_seqs", where, 0, 1, 1 << 20, &mr, e) < 0) return -1;
        if (jsonio_int(v, "max_num_batched_tokens", where, 0, 1, 1 << 24, &tb, e) < 0) return -1;
    } else {
        if (jsonio_int(v, "max_running", where, 0, 1, 1 << 20, &mr, e) < 0) return -1;
        if (jsonio_int(v, "token_budget", where, 0, 1, 1 << 24, &tb, e) < 0) return -1;
    }
    if (jsonio_int(v, "max_num_tokens", where, 0, 1, 1 << 24, &mnt, e) < 0) return -1;
    if (jsonio_int(v, "long_prefill_threshold", where, 0, 1, 1 << 24, &lp, e) < 0) return -1;
    if (jsonio_int(v, "max_partial_prefills", where, 0, 1, 1 << 20, &mp, e) < 0) return -1;
    *c = (SchedConfig){.kind = (SchedKind)kind, .max_running = (uint32_t)mr, .token_budget = (uint32_t)tb,
                       .long_prefill_threshold = (uint32_t)lp, .max_partial_prefills = (uint32_t)mp,
                       .max_num_tokens = (uint32_t)mnt,
                       .watermark = 0.01 /* vLLM's default */};
    if (jsonio_num(v, "watermark", where, 0, 0, 0.99, &c->watermark, e) < 0) return -1;
    /* chunked: false is SGLang's default (sched.h) */
    int mixed = 1;
    if (jsonio_bool(v, "mixed", where, 0, &mixed, e) < 0) return -1;
    c->prefill_apart = !mixed;
    static const char *const modes[] = {"recompute", "swap", NULL};
    if (jsonio_enum(v, "preemption", where, 0, modes, &s->preempt_swap, e) < 0) return -1;
    /* PCIe Gen5 x16, 64 GB/s per direction (gpus.md) */
    double gbs = 64;
    if (jsonio_num(v, "swap_gb_per_s", where, 0, 1e-3, 1e5, &gbs, e) < 0) return -1;
    s->swap_bw_bytes_per_s = gbs * 1e9;
    static const char *const orders[] = {"fcfs", "priority", "edf", NULL};
    if (jsonio_enum(v, "order", where, 0, orders, &s->queue_order, e) < 0) return -1;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "admission");
    if (a) {
        char p[256];
        jsonio_path(p, sizeof p, where, "admission");
        static const char *const ak[] = {"max_queue", "max_ttft_ms", "deadline_aware", NULL};
        if (jsonio_expect_object(a, p, e) < 0 || jsonio_check_keys(a, p, ak, e) < 0) return -1;
        int64_t mq = 0;
        double ttft = 0;
        if (jsonio_int(a, "max_queue", p, 0, 0, 1 << 30, &mq, e) < 0) return -1;
        if (jsonio_num(a, "max_ttft_ms", p, 0, 1e-6, 1e9, &ttft, e) < 0) return -1;
        if (jsonio_bool(a, "deadline_aware", p, 0, &c->deadline_aware, e) < 0) return -1;
        c->max_queue = (uint32_t)mq;
        c->max_ttft_s = ttft * 1e-3;
    }
    return 0;
}

static int parse_kv(const cJSON *v, const char *where, Scenario *s, double *cap_gib, Err *e)
{
    static const char *const keys[] = {"capacity_gib", "block_tokens", "reserve", "dtype", "max_tokens",
                                       "unbounded", "prefix_cache", "eviction", "conversion_ns_per_token",
                                       "snapshot_tokens", NULL};
    static const char *const evict[] = {"lru", "value", NULL};
    static const char *const modes[] = {"max", "final", "on_demand", NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    if (jsonio_num(v, "capacity_gib", where, 0, 1e-6, 1e6, cap_gib, e) < 0) return -1;
    int64_t bt = s->kv.block_tokens, mt = 0;
    if (jsonio_int(v, "block_tokens", where, 0, 1, 1 << 20, &bt, e) < 0) return -1;
    if (jsonio_int(v, "max_tokens", where, 0, 1, 1 << 30, &mt, e) < 0) return -1;
    s->kv.block_tokens = (uint32_t)bt;
    s->kv.max_tokens = (uint32_t)mt;
    int64_t snap = 0;
    if (jsonio_int(v, "snapshot_tokens", where, 0, 1, 1 << 24, &snap, e) < 0) return -1;
    if (snap % bt != 0)
        return err_set(e, "%s.snapshot_tokens: got %lld, expected a multiple of block_tokens (%lld): a snapshot "
                          "sits at a block boundary", where, (long long)snap, (long long)bt);
    s->kv.snapshot_tokens = (uint32_t)snap;
    int mode = (int)s->kv.reserve;
    if (jsonio_enum(v, "reserve", where, 0, modes, &mode, e) < 0) return -1;
    s->kv.reserve = (KvReserve)mode;
    const char *dt = NULL;
    if (jsonio_str(v, "dtype", where, 0, &dt, e) < 0) return -1;
    if (dt) {
        int d = dtype_parse(dt);
        if (d < 0) return err_set(e, "%s.dtype: got \"%s\", expected bf16, fp16, fp8, q8_0 or q4_0", where, dt);
        s->kv_dtype = (Dtype)d;
    }
    if (jsonio_bool(v, "unbounded", where, 0, &s->kv.unbounded, e) < 0) return -1;
    if (jsonio_bool(v, "prefix_cache", where, 0, &s->prefix_cache, e) < 0) return -1;
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(v, "eviction");
    if (cJSON_IsObject(ev)) {
        /* a scripted rule (a Lua one): its provider builds it when each
         * engine is made; the object and the script path are checked now */
        char p[300], dir[512], kinds[128];
        jsonio_path(p, sizeof p, where, "eviction");
        const PluginProvider *pp = plugin_for(ev);
        if (!pp || !pp->validate_evict)
            return err_set(e, "%s: an eviction object needs \"kind\" naming a scripted rule (%s)", p,
                           plugin_kinds(kinds, sizeof kinds));
        if (!s->prefix_cache)
            return err_set(e, "%s: a Lua eviction rule needs \"prefix_cache\": true (the rule picks which cached "
                              "prefix block to drop)", p);
        workload_base_dir(where, dir, sizeof dir);
        if (pp->validate_evict(ev, p, dir, e) < 0) return -1;
        cJSON_Delete(s->plugin_evict);
        s->plugin_evict = cJSON_Duplicate(ev, 1);
        s->prefix_evict = PREFIX_EVICT_CUSTOM;
    } else if (jsonio_enum(v, "eviction", where, 0, evict, &s->prefix_evict, e) < 0) {
        return -1;
    }
    double conv = 0;
    if (jsonio_num(v, "conversion_ns_per_token", where, 0, 0, 1e6, &conv, e) < 0) return -1;
    s->wrap.conversion_s_per_token = conv * 1e-9;
    return 0;
}

/* Weights resident on one GPU under the MoE layout: everything but the
 * routed experts split over tp, the routed experts over ep x moe_tp. */
double scenario_weights_per_gpu(const Scenario *s, int tp)
{
    const ModelDesc *m = &s->model;
    if (m->experts <= 0) return dtype_bytes(m->weight_dtype, (double)m->params) / tp;
    /* every parameter in its stored format (MXFP4 experts beside BF16
     * attention counted as such) */
    double all = m->weights_total_bytes;
    double ep = s->ep ? s->ep : 1, adp = s->attn_dp ? s->attn_dp : 1;
    double mtp = s->moe_tp ? s->moe_tp : tp * adp / ep;
    double rb = (double)m->moe_layers * m->experts * m->expert_bytes;
    return (all - rb) / tp + rb / (ep * mtp);
}

/* KV room of one replica of tp GPUs: hw_kv_capacity_bytes, or for a MoE
 * model the weights per GPU above; MLA's latent cache is not split by heads,
 * so every GPU of the TP group holds all of it and the room is one GPU's. */
static double scenario_kv_room(const Scenario *s, const HwDesc *h, int tp)
{
    if (s->model.experts <= 0 && s->model.attn != MODEL_ATTN_MLA) return hw_kv_capacity_bytes(h, &s->model, tp);
    double per_gpu = h->mem_bytes * h->mem_util - scenario_weights_per_gpu(s, tp) - h->runtime_reserve_bytes;
    /* GQA's KV heads split down to one a GPU, then replicate (hw.c) */
    double split = s->model.kv_heads > 0 && s->model.kv_heads < tp ? s->model.kv_heads : tp;
    return (s->model.attn == MODEL_ATTN_MLA ? 1 : split) * per_gpu;
}

/* A TP degree the model's attention can be split over: every GPU takes a
 * whole share of the query heads, and of the KV heads until each has one
 * (past that the KV heads are replicated, tp a multiple of them), as the
 * engines require (vLLM: "Total number of attention heads must be
 * divisible by tensor parallel size").  MLA's heads are all query heads. */
static int check_tp_heads(const ModelDesc *m, int tp, const char *where, Err *e)
{
    if (tp <= 1 || m->q_heads < 1) return 0;
    if (m->q_heads % tp != 0)
        return err_set(e, "%s: tp %d does not divide the %d attention heads of %s (each GPU takes a whole share of "
                          "them)", where, tp, m->q_heads, m->name);
    int kvh = m->kv_heads;
    if (m->attn != MODEL_ATTN_MLA && kvh > 0 && (kvh >= tp ? kvh % tp != 0 : tp % kvh != 0))
        return err_set(e, "%s: tp %d and the %d KV heads of %s: expected tp to divide them or be a multiple of them "
                          "(replicated past one a GPU)", where, tp, kvh, m->name);
    return 0;
}

/* "parallel": {"ep", "moe_tp", "attention_dp"} beside "tp". */
static int parse_parallel(const cJSON *v, const char *where, Scenario *s, Err *e)
{
    static const char *const keys[] = {"ep", "moe_tp", "attention_dp", NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    int64_t ep = 0, mtp = 0, adp = 0;
    if (jsonio_int(v, "ep", where, 0, 1, 1024, &ep, e) < 0 || jsonio_int(v, "moe_tp", where, 0, 1, 1024, &mtp, e) < 0 ||
        jsonio_int(v, "attention_dp", where, 0, 1, 1024, &adp, e) < 0)
        return -1;
    int64_t ad = adp ? adp : 1, g = (int64_t)s->tp * ad;
    if (!ep) ep = mtp ? g / mtp : 1;
    if (!mtp) mtp = g / ep;
    if (ep * mtp != g)
        return err_set(e, "%s: ep %lld x moe_tp %lld = %lld GPUs, expected tp %d x attention_dp %lld = %lld (the "
                          "experts are spread over every GPU of the deployment)",
                       where, (long long)ep, (long long)mtp, (long long)(ep * mtp), s->tp, (long long)ad,
                       (long long)g);
    if (s->model.experts <= 0 && (ep > 1 || mtp != s->tp))
        return err_set(e, "%s: ep %lld / moe_tp %lld given, but %s is dense (no experts)", where, (long long)ep,
                       (long long)mtp, s->model.name);
    if (s->model.experts > 0 && s->model.experts % ep != 0)
        return err_set(e, "%s: ep %lld does not divide the %d experts of %s", where, (long long)ep,
                       s->model.experts, s->model.name);
    s->ep = (int)ep;
    s->moe_tp = (int)mtp;
    s->attn_dp = (int)ad;
    return 0;
}

static int parse_pool(const cJSON *v, const char *where, Scenario *s, Pool *pool, Err *e)
{
    static const char *const keys[] = {"replicas", "hardware", "tp", "scheduler", "kv_capacity_gib", NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    char p[300];
    int64_t n = pool->replicas, tp = pool->tp;
    if (jsonio_int(v, "replicas", where, 0, 1, 4096, &n, e) < 0) return -1;
    if (jsonio_int(v, "tp", where, 0, 1, 64, &tp, e) < 0) return -1;
    pool->replicas = (uint32_t)n;
    pool->tp = (int)tp;
    char tpw[300];
    if (check_tp_heads(&s->model, pool->tp, jsonio_path(tpw, sizeof tpw, where, "tp"), e) < 0) return -1;
    const cJSON *x;
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "hardware"))) {
        jsonio_path(p, sizeof p, where, "hardware");
        if (parse_desc(x, p, "hardware/", "hardware", "h100-sxm", hw_from_json_v, hw_load_v, &pool->hw, e) < 0)
            return -1;
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(v, "scheduler"))) {
        jsonio_path(p, sizeof p, where, "scheduler");
        SchedConfig saved = s->sched;
        int rc = parse_sched(x, p, s, e);
        pool->sched = s->sched;
        s->sched = saved;
        if (rc < 0) return -1;
    }
    double cap = -1;
    if (jsonio_num(v, "kv_capacity_gib", where, 0, 1e-6, 1e6, &cap, e) < 0) return -1;
    if (cap > 0) {
        pool->kv.capacity_bytes = cap * GIB;
    } else if (s->kv_capacity_derived) {
        pool->kv.capacity_bytes = scenario_kv_room(s, &pool->hw, pool->tp);
        if (!(pool->kv.capacity_bytes > 0) && !pool->kv.unbounded)
            return err_set(e, "%s: %s weights do not fit on %s at tp %d: no room for KV", where, s->model.name,
                           pool->hw.name, pool->tp);
    }
    return 0;
}

/* "cluster": {"replicas", "router"} or "disagg": {"prefill": POOL, "decode":
 * POOL, "link_gb_per_s", "link_latency_us", "first_token", "router"}. */
static int parse_deploy(const cJSON *root, const char *w, Scenario *s, Err *e)
{
    char p[256], pp[300];
    s->n_pools = 1;
    s->pools[0] = (Pool){.replicas = 1, .hw = s->hw, .tp = s->tp, .sched = s->sched, .kv = s->kv};
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "disagg");
    int router = ROUTER_ROUND_ROBIN;
    if (c && d) return err_set(e, "%s: give either \"cluster\" or \"disagg\", not both", w);
    if (c) {
        jsonio_path(p, sizeof p, w, "cluster");
        static const char *const keys[] = {"replicas", "router", NULL};
        if (jsonio_expect_object(c, p, e) < 0 || jsonio_check_keys(c, p, keys, e) < 0) return -1;
        int64_t n = 1;
        if (jsonio_int(c, "replicas", p, 1, 1, 4096, &n, e) < 0) return -1;
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(c, "router");
        if (cJSON_IsObject(rv)) {
            char rp[300], dir[512], kinds[128];
            jsonio_path(rp, sizeof rp, p, "router");
            workload_base_dir(w, dir, sizeof dir);
            const PluginProvider *rprov = plugin_for(rv);
            if (!rprov || !rprov->validate_router)
                return err_set(e, "%s: a router object needs \"kind\" naming a scripted router (%s)", rp,
                               plugin_kinds(kinds, sizeof kinds));
            if (rprov->validate_router(rv, rp, dir, e) < 0) return -1;
            cJSON_Delete(s->plugin_router);
            s->plugin_router = cJSON_Duplicate(rv, 1);
            router = ROUTER_PLUGIN;
        } else if (jsonio_enum(c, "router", p, 0, scenario_router_names, &router, e) < 0) {
            return -1;
        }
        s->pools[0].replicas = (uint32_t)n;
    }
    if (d) {
        jsonio_path(p, sizeof p, w, "disagg");
        static const char *const keys[] = {"prefill", "decode", "link_gb_per_s", "link_latency_us", "first_token",
                                           "router", NULL};
        static const char *const ft[] = {"prefill", "decode", NULL};
        if (jsonio_expect_object(d, p, e) < 0 || jsonio_check_keys(d, p, keys, e) < 0) return -1;
        s->pools[1] = s->pools[0];
        const char *side[2] = {"prefill", "decode"};
        for (int k = 0; k < 2; k++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(d, side[k]);
            jsonio_path(pp, sizeof pp, p, side[k]);
            if (x && parse_pool(x, pp, s, &s->pools[k], e) < 0) return -1;
        }
        /* AIC's inter-node figures for H100/H200: 50 GB/s per GPU (CX7),
         * 10 us per transfer (systems/h100_sxm.yaml) */
        double gbs = 50, us = 10;
        if (jsonio_num(d, "link_gb_per_s", p, 0, 1e-3, 1e5, &gbs, e) < 0) return -1;
        if (jsonio_num(d, "link_latency_us", p, 0, 0, 1e7, &us, e) < 0) return -1;
        if (jsonio_enum(d, "first_token", p, 0, ft, &s->first_token_on_decode, e) < 0) return -1;
        if (jsonio_enum(d, "router", p, 0, scenario_router_names, &router, e) < 0) return -1;
        s->link_bw_bytes_per_s = gbs * 1e9;
        s->link_latency_s = us * 1e-6;
        s->disagg = 1;
        s->n_pools = 2;
    }
    s->router = (RouterKind)router;
    if (s->router == ROUTER_PLUGIN && !s->plugin_router)
        return err_set(e, "%s: router \"lua\" is given as an object: {\"kind\": \"lua\", \"script\": PATH} "
                          "(in \"cluster\")", w);
    if (s->router == ROUTER_PREFIX_AFFINITY && !s->prefix_cache)
        return err_set(e, "%s: router \"prefix_affinity\" needs \"kv\": {\"prefix_cache\": true}", w);
    return 0;
}

/* "lora", "offload", "kv_transfer" and the weights-outside-HBM flag (issue
 * 18): the adapter cache's memory leaves the KV pool, offloaded weights
 * give theirs (net of the prefetch buffers) to it. */
static int parse_resources(const cJSON *root, const char *w, Scenario *s, Err *e)
{
    char p[256];
    const cJSON *v;
    if (s->weights_separate && s->cost_kind == COST_ROOFLINE && s->hw.profile.present)
        return err_set(e, "%s.cost_model.weights_separate_memory: the calibrated profile %s prices GEMMs with their "
                          "weight reads; use the analytic roofline (\"profile\": \"none\") for this what-if", w,
                       s->hw.profile_name);
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "lora"))) {
        jsonio_path(p, sizeof p, w, "lora");
        if (lora_parse(v, p, &s->model, s->hw.host_link_bw_bytes_per_s, &s->lora, e) < 0) return -1;
        s->has_lora = 1;
        s->lora_bytes = s->lora.gpu_slots * lora_adapter_bytes(&s->model, &s->lora);
        if (!s->kv.unbounded && !(s->kv.capacity_bytes - s->lora_bytes > 0))
            return err_set(e, "%s.gpu_slots: %u adapters of %.2f MiB (%.2f GiB) leave no room in the %.2f GiB KV pool",
                           p, s->lora.gpu_slots, s->lora_bytes / s->lora.gpu_slots / MIB, s->lora_bytes / GIB,
                           s->kv.capacity_bytes / GIB);
        s->kv.capacity_bytes -= s->lora_bytes;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "offload"))) {
        jsonio_path(p, sizeof p, w, "offload");
        if (offload_parse(v, p, s->hw.host_link_bw_bytes_per_s, &s->offload, e) < 0) return -1;
        if (offload_plan(&s->model, s->tp, &s->offload, &s->offload_plan, e) < 0) return err_prefix(e, "%s", w);
        s->has_offload = 1;
        s->kv.capacity_bytes += s->offload_plan.net_bytes * s->tp;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "kv_transfer"))) {
        jsonio_path(p, sizeof p, w, "kv_transfer");
        if (offload_kv_parse(v, p, &s->kv_xfer_ratio, &s->kv_xfer_dec_bytes_per_s, e) < 0) return -1;
    }
    return 0;
}

int scenario_check_adapter(const Scenario *s, const char *w, const char *id, uint32_t adapter, Err *e)
{
    if (!adapter) return 0;
    if (!s->has_lora)
        return err_set(e, "%s: workload: request %s names adapter %u, but the scenario has no \"lora\" key "
                          "(e.g. \"lora\": {\"adapters\": 100, \"rank\": 16})", w, id, adapter);
    if (adapter > s->lora.adapters)
        return err_set(e, "%s: workload: request %s names adapter %u, expected 1 .. lora.adapters (%u)", w, id, adapter,
                       s->lora.adapters);
    return 0;
}

/* Requests name adapters only when the scenario has them (a streamed
 * workload's, as they are pulled: scenario_build.c stream_pull). */
static int check_adapters(const Scenario *s, const char *w, Err *e)
{
    for (uint32_t i = 0; i < s->wl.n; i++)
        if (scenario_check_adapter(s, w, s->wl.reqs[i].id, s->wl.reqs[i].adapter, e) < 0) return -1;
    if (s->has_lora) {
        double reps = 0;
        for (uint32_t p = 0; p < s->n_pools; p++) reps += s->pools[p].replicas;
        if (reps * s->lora.adapters > 1e7)
            return err_set(e, "%s: lora.adapters: %u adapters x %.0f replicas exceed the bound of 10,000,000 adapter "
                              "records (28 B each); use fewer replicas or adapters", w, s->lora.adapters, reps);
    }
    if (s->router == ROUTER_ADAPTER_AFFINITY && !s->has_lora)
        return err_set(e, "%s: router \"adapter_affinity\" needs a \"lora\" key", w);
    return 0;
}

/* parse_root's mark for a streamed load (never a real stream pointer). */
#define SCENARIO_STREAM_PENDING ((WlStream *)&scenario_stream_mark)
static char scenario_stream_mark;

/* A streamed run's warm-up and cool-down (metrics.h stream_known): a first
 * pass over a copy of the stream reads its first arrival, and, when a
 * cool-down needs the end, every request for the last arrival and the
 * count.  The time it takes is the stream's generation alone (no engine);
 * a stream that cannot be read again has said so when it was opened. */
static int stream_arrivals(const cJSON *v, const char *p, Scenario *s, Err *e)
{
    MetricsCfg *m = &s->metrics;
    if (!(m->warmup_s > 0 || m->cooldown_s > 0 || m->warmup_requests || m->cooldown_requests)) return 0;
    /* a chain's later requests arrive when the run says: their ranks,
     * the first arrival and the window's start are counted as they arrive
     * (metrics.c metrics_acc_arrive), the count by this pass; the last
     * arrival is the run's */
    const int chains = workload_stream_chains(s->wl_stream);
    /* parallel sampling's branches arrive with their parent, after every
     * other request in workload order: ranked as they arrive, as chains */
    const int branched = workload_stream_branched(s->wl_stream);
    /* a cool-down by time: the last arrival is the run's, found by a
     * first run (streamrun.c) */
    m->stream_need_hi = chains && m->cooldown_s > 0;
    Workload names;
    workload_init(&names, s->wl.kind);
    WlStream *pre = workload_stream_reopen(s->wl_stream, v, p, s->seed, &names, e);
    if (pre && (chains || branched)) workload_stream_flat(pre); /* every request, later turns included */
    const int whole = m->cooldown_s > 0 || m->cooldown_requests;
    const int64_t warm_ns = llround(m->warmup_s * 1e9);
    uint64_t n = 0;
    int64_t lo = 0, hi = 0, t0 = 0;
    int has_t0 = 0;
    Request r;
    int got = pre ? 1 : -1;
    while (got > 0 && (whole || !has_t0))
        if ((got = workload_stream_next(pre, &r, e)) > 0) {
            if (n == 0) lo = r.t_arrive_ns;
            /* the first request past the warm-up (metrics.c metrics_acc_included
             * checks the cool-down): the window's start */
            if (!has_t0 && n >= m->warmup_requests && r.t_arrive_ns >= lo + warm_ns) {
                t0 = r.t_arrive_ns;
                has_t0 = 1;
            }
            /* a branch (past every other request) arrives with its parent */
            if (n == 0 || !branched || r.t_arrive_ns > hi) hi = r.t_arrive_ns;
            n++;
        }
    workload_stream_free(pre);
    workload_free(&names);
    if (got < 0) return -1;
    m->stream_known = 1;
    m->stream_chains = chains || branched;
    m->stream_lo_ns = lo;
    m->stream_hi_ns = hi;
    m->stream_t0_ns = t0;
    m->stream_n = whole ? n : UINT64_MAX;
    return 0;
}
WlStream *scenario_stream_reopen(const Scenario *s, Workload *names, Err *e)
{
    if (!s->wl_stream) {
        err_set(e, "internal: %s: a second copy of a workload that is not streamed", s->source);
        return NULL;
    }
    WlStream *pre = workload_stream_reopen(s->wl_stream, s->wl_json, s->wl_where, s->seed, names, e);
    if (pre) workload_stream_flat(pre);
    return pre;
}

static int parse_root(const cJSON *root, const char *name, int has_seed, uint64_t seed, Scenario *s, Err *e)
{
    static const char *const keys[] = {"name", "description", "model", "hardware", "tp", "cost_model",
                                       "scheduler", "kv", "workload", "slo", "price", "seed", "report", "metrics",
                                       "engine", "cluster", "disagg", "speculation", "lora", "offload",
                                       "kv_transfer", "parallel", "source", NULL};
    char p[256];
    const char *w = name;
    if (jsonio_expect_object(root, w, e) < 0 || jsonio_check_keys(root, w, keys, e) < 0) return -1;
    const char *nm = NULL;
    if (jsonio_str(root, "name", w, 0, &nm, e) < 0) return -1;
    snprintf(s->name, sizeof s->name, "%s", nm ? nm : name);

    const cJSON *v;
#define SUB(key) (jsonio_path(p, sizeof p, w, key), cJSON_GetObjectItemCaseSensitive(root, key))
    if (!(v = SUB("model"))) return err_set(e, "%s: missing key \"model\"", w);
    if (parse_desc(v, p, "", "model", "qwen3-8b", model_from_json_v, model_load_v, &s->model, e) < 0) return -1;
    if (!(v = SUB("hardware"))) return err_set(e, "%s: missing key \"hardware\"", w);
    if (parse_desc(v, p, "hardware/", "hardware", "h100-sxm", hw_from_json_v, hw_load_v, &s->hw, e) < 0) return -1;
    const char *hw_key = cJSON_IsString(v) ? v->valuestring : NULL;
    {
        /* hardware built on a bundled one keeps its calibrated profile */
        const cJSON *hb = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "base") : NULL;
        if (cJSON_IsString(hb) && hw_default_profile(&s->hw, hb->valuestring, e) < 0) return err_prefix(e, "%s", p);
        if (cJSON_IsString(hb)) hw_key = hb->valuestring;
    }
    if (hw_key && strchr(hw_key, '/')) hw_key = NULL; /* a path: no bundled engine profiles */
    engprof_init(&s->engine);
    if ((v = SUB("engine"))) {
        cJSON *bare;
        engine_ref(v, s, &bare);
        int rc = parse_desc(bare ? bare : v, p, "engines/", "engine", "vllm", eng_from_json_v, eng_load_v, &s->engine, e);
        cJSON_Delete(bare);
        if (rc < 0) return -1;
        if (!s->engine_label[0]) snprintf(s->engine_label, sizeof s->engine_label, "%s", s->engine.name);
        const cJSON *own = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "error_band") : NULL;
        char bp[300];
        if (own && errband_from_json(own, jsonio_path(bp, sizeof bp, p, "error_band"), s->engine_label,
                                     &s->engine_band, e) < 0)
            return -1;
        if (apply_engine(s, hw_key, p, e) < 0) return -1;
    }
    int64_t tp = 1;
    if (jsonio_int(root, "tp", w, 0, 1, 64, &tp, e) < 0) return -1;
    s->tp = (int)tp;
    char tpw[300];
    if (check_tp_heads(&s->model, s->tp, jsonio_path(tpw, sizeof tpw, w, "tp"), e) < 0) return -1;
    if ((v = SUB("parallel")) && parse_parallel(v, p, s, e) < 0) return -1;
    /* quantised weights run their own GEMMs (fp8, fp8_block, nvfp4); 16- and
     * 32-bit ones the BF16 tensor-core path */
    s->compute_dtype = s->model.weight_dtype == DTYPE_FP8 || s->model.weight_dtype == DTYPE_FP8_BLOCK ||
                               s->model.weight_dtype == DTYPE_NVFP4
                           ? s->model.weight_dtype
                           : DTYPE_BF16;
    s->cost_kind = COST_ROOFLINE;
    if ((v = SUB("cost_model")) && parse_cost(v, p, s, e) < 0) return -1;
    s->sched = (SchedConfig){.kind = SCHED_CHUNKED, .max_running = 256, .token_budget = 2048};
    if ((v = SUB("scheduler"))) {
        if (parse_sched(v, p, s, e) < 0) return -1;
    } else if (s->engine.scheduler) {
        char ep[400];
        snprintf(ep, sizeof ep, "%s (engine %s)", p, s->engine.name);
        if (parse_sched(s->engine.scheduler, ep, s, e) < 0) return -1;
    } else {
        return err_set(e, "%s: missing key \"scheduler\" (or an \"engine\" that brings one)", w);
    }

    s->kv.block_tokens = 16;
    s->kv.reserve = KV_RESERVE_ON_DEMAND;
    s->kv_dtype = DTYPE_BF16;
    double cap_gib = -1;
    if ((v = SUB("kv")) && parse_kv(v, p, s, &cap_gib, e) < 0) return -1;
    /* the engine's rule for quantised checkpoints (FP8 weights run with an
     * FP8 KV cache unless the scenario names a KV dtype) */
    int low_precision = s->model.weight_dtype != DTYPE_BF16 && s->model.weight_dtype != DTYPE_FP16 &&
                        s->model.weight_dtype != DTYPE_FP32;
    if (s->engine.fp8_checkpoint_kv >= 0 && low_precision && !(v && cJSON_GetObjectItemCaseSensitive(v, "dtype")))
        s->kv_dtype = (Dtype)s->engine.fp8_checkpoint_kv;
    /* the engine's default prefix caching (vLLM V1, SGLang's radix cache)
     * unless the scenario says */
    if (s->engine.prefix_cache >= 0 && !(v && cJSON_GetObjectItemCaseSensitive(v, "prefix_cache")))
        s->prefix_cache = s->engine.prefix_cache;
    if (s->engine.kv_rule == ENGKV_TOTAL_FRACTION) s->hw.mem_util = s->engine.kv_fraction;
    s->kv.bytes_per_token = model_kv_bytes_per_token(&s->model, s->kv_dtype);
    if (scenario_kv_hybrid(s, w, e) < 0) return -1;
    if (cap_gib > 0) {
        s->kv.capacity_bytes = cap_gib * GIB;
        double room = scenario_kv_room(s, &s->hw, s->tp);
        if (!s->kv.unbounded && s->kv.capacity_bytes > room * (1 + 1e-9))
            return err_set(e, "%s.capacity_gib: got %g, but only %.2f GiB fit: %d x %s (%.2f GiB x %.2f usable) "
                              "- %s weights (%.2f GiB) - runtime reserve (%.2f GiB per GPU); lower it, raise tp or "
                              "use \"unbounded\": true for a what-if", jsonio_path(p, sizeof p, w, "kv"), cap_gib, room > 0 ? room / GIB : 0.0,
                           s->tp, s->hw.name, s->hw.mem_bytes / GIB, s->hw.mem_util, s->model.name,
                           s->model.weights_read_bytes / GIB, s->hw.runtime_reserve_bytes / GIB);
    } else {
        s->kv.capacity_bytes = scenario_kv_room(s, &s->hw, s->tp);
        if (s->engine.kv_rule == ENGKV_FREE_FRACTION) {
            /* TensorRT-LLM: a fraction of what is free after weights and
             * the runtime's own memory */
            double mu = s->hw.mem_util;
            s->hw.mem_util = 1;
            s->kv.capacity_bytes = s->engine.kv_fraction * scenario_kv_room(s, &s->hw, s->tp);
            s->hw.mem_util = mu;
        }
        s->kv_capacity_derived = 1;
        if (!(s->kv.capacity_bytes > 0) && !s->kv.unbounded)
            return err_set(e, "%s: %s weights (%.2f GiB over tp %d) plus the runtime reserve (%.2f GiB) do not "
                              "fit in %s memory (%.2f GiB x %.2f usable): no room for KV; raise tp or give "
                              "kv.capacity_gib", w, s->model.name, s->model.weights_read_bytes / GIB, s->tp,
                           s->hw.runtime_reserve_bytes / GIB, s->hw.name, s->hw.mem_bytes / GIB, s->hw.mem_util);
    }
    if (s->kv.max_tokens == 0) s->kv.max_tokens = (uint32_t)s->model.max_context;

    if ((v = SUB("speculation"))) {
        if (parse_spec(v, p, s, e) < 0) return -1;
        if (s->has_draft_model) {
            /* the draft model shares the GPU: its weights leave less room for
             * KV, and its KV sits in the same pool */
            if (s->kv_capacity_derived) s->kv.capacity_bytes -= s->draft_model.weights_read_bytes;
            s->kv.bytes_per_token += model_kv_bytes_per_token(&s->draft_model, s->kv_dtype);
        }
    }
    if (parse_resources(root, w, s, e) < 0) return -1;
    if (parse_deploy(root, w, s, e) < 0) return -1;
    if (s->attn_dp > 1) {
        char pp[300];
        jsonio_path(pp, sizeof pp, w, "parallel");
        /* attention data parallelism: attn_dp replicas of the tp-GPU
         * attention group behind the router (round robin unless the
         * cluster names another), their MoE layers priced together */
        if (s->disagg)
            return err_set(e, "%s: attention_dp with \"disagg\" is not modelled (give the layout per "
                              "replica without disagg)", pp);
        if ((uint64_t)s->pools[0].replicas * (uint64_t)s->attn_dp > 4096)
            return err_set(e, "%s: attention_dp %d x %u cluster replicas = %llu attention replicas, "
                              "expected at most 4096", pp, s->attn_dp, s->pools[0].replicas,
                           (unsigned long long)s->pools[0].replicas * (unsigned long long)s->attn_dp);
        s->pools[0].replicas *= (uint32_t)s->attn_dp;
    }
    if ((v = SUB("slo")) && mcfg_parse_slo(v, p, &s->slo, &s->slo_classes, e) < 0) return -1;
    s->price = (Price){.usd_per_gpu_hour = s->hw.usd_per_gpu_hour, .gpus = s->tp, .billing = BILL_EXACT};
    if ((v = SUB("price")) && mcfg_parse_price(v, p, 0, &s->price, e) < 0) return -1;
    if ((v = SUB("metrics")) && mcfg_parse_metrics(v, p, &s->metrics, e) < 0) return -1;
    int64_t sd = 1;
    if (jsonio_int(root, "seed", w, 0, 0, INT64_MAX, &sd, e) < 0) return -1;
    s->seed = has_seed ? seed : (uint64_t)sd;
    s->keep_token_times = -1; /* not given: decided by the workload's size below */
    s->keep_iterations = 1;
    if ((v = SUB("report"))) {
        static const char *const rk[] = {"token_times", "iterations", NULL};
        if (jsonio_expect_object(v, p, e) < 0 || jsonio_check_keys(v, p, rk, e) < 0) return -1;
        if (jsonio_bool(v, "token_times", p, 0, &s->keep_token_times, e) < 0) return -1;
        if (jsonio_bool(v, "iterations", p, 0, &s->keep_iterations, e) < 0) return -1;
    }
    if (!(v = SUB("workload"))) return err_set(e, "%s: missing key \"workload\"", w);
    if (s->wl_stream == SCENARIO_STREAM_PENDING) {
        /* a streamed run: the generator is opened, its names go to wl */
        s->wl_stream = NULL;
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(v, "kind");
        memset(&s->wl, 0, sizeof s->wl);
        workload_init(&s->wl, cJSON_IsString(k) ? k->valuestring
                              : cJSON_GetObjectItemCaseSensitive(v, "trace")    ? "trace"
                              : cJSON_GetObjectItemCaseSensitive(v, "requests") ? "requests"
                                                                                : "stream");
        if (!(s->wl_stream = workload_stream_open(v, p, s->seed, &s->wl, e))) return -1;
        if (!cJSON_GetObjectItemCaseSensitive(v, "requests")) s->wl_json = cJSON_Duplicate(v, 1);
        snprintf(s->wl_where, sizeof s->wl_where, "%s", p);
        snprintf(s->wl.source, sizeof s->wl.source, "%s, streamed", s->wl.kind);
        /* a trace's records may cancel: with per-token times asked for,
         * they are kept whatever the outputs (see streamrun.c) */
        s->stream_cancels = workload_stream_may_cancel(s->wl_stream) ||
                            (s->keep_token_times > 0 && cJSON_GetObjectItemCaseSensitive(v, "trace"));
        if (stream_arrivals(v, p, s, e) < 0) return -1;
        if (s->keep_token_times < 0) {
            /* report.token_times not given: a first pass over a second copy
             * of the stream sums the output tokens, as far as the limit */
            Workload names;
            workload_init(&names, s->wl.kind);
            WlStream *pre = workload_stream_reopen(s->wl_stream, v, p, s->seed, &names, e);
            if (pre) workload_stream_flat(pre); /* every request, later turns included */
            if (pre && !strcmp(s->wl.kind, "closed_loop")) /* the lengths after the end spread */
                workload_stream_client(pre, s->seed, s->engine.req_end_spread, 0, 0);
            uint64_t tok = 0;
            Request r;
            int got = pre ? 1 : -1;
            while (got > 0 && tok <= SCENARIO_TOKEN_TIMES_AUTO)
                if ((got = workload_stream_next(pre, &r, e)) > 0) {
                    tok += r.output_tokens;
                    s->stream_cancels |= r.cancel_after_ns > 0;
                }
            workload_stream_free(pre);
            workload_free(&names);
            if (got < 0) return -1;
            s->token_times_auto = 1;
            s->keep_token_times = s->metrics.has_window || tok <= SCENARIO_TOKEN_TIMES_AUTO;
        }
        /* the engine profile's client: drawn by the source as it makes
         * each request, in workload order (the end spread: closed loops) */
        if (workload_stream_chains(s->wl_stream))
            workload_stream_client(s->wl_stream, s->seed, !strcmp(s->wl.kind, "closed_loop") ?
                                   s->engine.req_end_spread : 0, s->engine.req_jitter_s,
                                   s->engine.req_jitter_per_token_s);
        uint32_t first_w, n_w;
        s->barrier_members = workload_stream_barrier(s->wl_stream, &first_w, &n_w);
        if (n_w) {
            /* the waiters by the chain the stream makes each one from */
            s->barrier_waiters = xmalloc(n_w * sizeof *s->barrier_waiters);
            for (uint32_t q = 0; q < n_w; q++) s->barrier_waiters[q] = first_w + q;
            s->barrier.waiters = s->barrier_waiters;
            s->barrier.n_waiters = n_w;
        }
    } else if (workload_from_json(v, p, s->seed, &s->wl, e) < 0) return -1;
    if (s->engine.req_end_spread > 0 && !s->wl_stream && !strcmp(s->wl.kind, "closed_loop")) {
        /* the engine profile's end spread (engprof.h): one draw per
         * request, in workload order, from its own stream; a client asking
         * for exactly its length (ignore_eos) still gets what it generates */
        int64_t d = s->engine.req_end_spread;
        gsl_rng *rs = rng_stream(s->seed, RNG_STREAM_END_SPREAD);
        for (uint32_t i = 0; i < s->wl.n; i++) {
            Request *r = &s->wl.reqs[i];
            int64_t k = (int64_t)gsl_rng_uniform_int(rs, (unsigned long)(2 * d + 1)) - d;
            int64_t out = (int64_t)r->output_tokens + k;
            if (out < 1) out = 1;
            if (out > WL_LEN_MAX) out = WL_LEN_MAX;
            if (r->max_output_tokens == r->output_tokens || r->max_output_tokens < out)
                r->max_output_tokens = (uint32_t)out;
            r->output_tokens = (uint32_t)out;
        }
        gsl_rng_free(rs);
    }
    if (s->keep_token_times < 0) {
        /* report.token_times not given: kept while the workload's output
         * is at most SCENARIO_TOKEN_TIMES_AUTO tokens (8 MB of times; the
         * summary's ITL is streamed without them) or a fixed window needs
         * them */
        uint64_t tok = 0;
        for (uint32_t i = 0; i < s->wl.n; i++) tok += s->wl.reqs[i].output_tokens;
        s->token_times_auto = 1;
        s->keep_token_times = s->metrics.has_window || tok <= SCENARIO_TOKEN_TIMES_AUTO;
    }
    for (uint32_t i = 0; i < s->wl.n; i++) {
        s->barrier_members += s->wl.reqs[i].barrier_member;
        s->barrier.n_waiters += s->wl.reqs[i].barrier_waiter;
    }
    if (s->barrier.n_waiters && !s->wl_stream) {
        /* the chain that makes each waiter from the array (reqarray.h) */
        s->barrier_waiters = xmalloc(s->barrier.n_waiters * sizeof *s->barrier_waiters);
        uint32_t k = 0;
        for (uint32_t i = 0; i < s->wl.n; i++)
            if (s->wl.reqs[i].barrier_waiter) s->barrier_waiters[k++] = reqarray_waiter(s->wl.n, i);
        s->barrier.waiters = s->barrier_waiters;
    }
    s->barrier.left = s->barrier_members;
    if (check_adapters(s, w, e) < 0) return -1;
    if (s->engine.req_jitter_s > 0 || s->engine.req_jitter_per_token_s > 0) {
        /* the client's variable time between a response and its next
         * request: one draw per triggered request, in workload order, added
         * to its think time; the mean grows with the predecessor's output
         * (a barrier waiter's: its own, as every request of a fixed-length
         * benchmark has the same) */
        uint32_t *prev_out = xcalloc(s->wl.n, sizeof *prev_out);
        for (uint32_t i = 0; i < s->wl.n; i++) {
            if (s->wl.reqs[i].next_req < s->wl.n) prev_out[s->wl.reqs[i].next_req] = s->wl.reqs[i].output_tokens;
        }
        gsl_rng *rj = rng_stream(s->seed, RNG_STREAM_CLIENT_JITTER);
        for (uint32_t i = 0; i < s->wl.n; i++) {
            Request *r = &s->wl.reqs[i];
            if (!r->triggered) continue;
            double toks = r->barrier_waiter ? r->output_tokens : prev_out[i];
            double mean = s->engine.req_jitter_s + s->engine.req_jitter_per_token_s * toks;
            r->think_ns += mean > 0 ? llround(gsl_ran_exponential(rj, mean) * 1e9) : 0;
        }
        gsl_rng_free(rj);
        free(prev_out);
    }
#undef SUB
    return 0;
}

int scenario_load_text(const char *text, const char *name, int has_seed, uint64_t seed, Scenario *s, Err *e)
{
    memset(s, 0, sizeof *s);
    snprintf(s->source, sizeof s->source, "%s", name);
    cJSON *root = jsonio_parse(text, name, e);
    if (!root) return -1;
    int rc = parse_root(root, name, has_seed, seed, s, e);
    cJSON_Delete(root);
    if (rc < 0) scenario_free(s);
    return rc;
}

int scenario_load_text_stream(const char *text, const char *name, int has_seed, uint64_t seed, Scenario *s,
                              Err *e)
{
    memset(s, 0, sizeof *s);
    snprintf(s->source, sizeof s->source, "%s", name);
    cJSON *root = jsonio_parse(text, name, e);
    if (!root) return -1;
    s->wl_stream = SCENARIO_STREAM_PENDING;
    int rc = parse_root(root, name, has_seed, seed, s, e);
    cJSON_Delete(root);
    if (s->wl_stream == SCENARIO_STREAM_PENDING) s->wl_stream = NULL; /* failed before the workload */
    if (rc < 0) scenario_free(s);
    return rc;
}

int scenario_load_file_stream(const char *path, int has_seed, uint64_t seed, Scenario *s, Err *e)
{
    char *text = read_text_file(path, NULL, e);
    if (!text) return -1;
    int rc = scenario_load_text_stream(text, path, has_seed, seed, s, e);
    free(text);
    return rc;
}

int scenario_load_file(const char *path, int has_seed, uint64_t seed, Scenario *s, Err *e)
{
    char *text = read_text_file(path, NULL, e);
    if (!text) return -1;
    int rc = scenario_load_text(text, path, has_seed, seed, s, e);
    free(text);
    return rc;
}

const char *const scenario_router_names[] = {"round_robin", "least_requests", "least_tokens", "prefix_affinity", "lua",
                                              "adapter_affinity", NULL};
