/*
 * hw.c -- GPU descriptions: datasheet peaks, default efficiencies, and the
 * KV capacity they leave for a model.
 *
 * Owns: reading models/hardware/<name>.json into an HwDesc in SI units
 * (the file says *_us, *_gib where it is friendlier; the struct holds s and
 * B), writing one back in the file's format, efficiency curves, and
 * attaching a calibrated profile: the one a file names ("profile"), else
 * for a bundled name the bundled models/profiles/<name>.json.
 *
 * Invariants after hw_from_json: every efficiency lies in (0, 1]; curve
 * abscissae are > 0 and strictly ascending; bandwidths, memory and the BF16
 * peak are > 0; idle power <= busy power.  Figures outside generous but
 * physical ranges are refused, so a unit slip (GB for B, TFLOP/s for
 * FLOP/s) is caught at load time instead of yielding a silently absurd
 * simulation.
 *
 * `sources` (per-figure citations) is optional for the loader -- a user's
 * own hardware file need not cite anything -- but every bundled file has
 * one entry per figure, which tests/test_hw.c enforces.
 */
#include "hw.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"
#include "workload.h"

/* ------------------------------------------------------------------ */
/* Efficiency curves */

double effcurve_at(const EffCurve *c, double x)
{
    if (c->n <= 0) return c->flat;
    if (c->n == 1 || !(x > c->x[0])) return c->eff[0];
    if (x >= c->x[c->n - 1]) return c->eff[c->n - 1];
    /* GEMM efficiency grows roughly with the log of the row count until
     * the tensor cores saturate, so interpolate in log2(x). */
    int i = 1;
    while (i < c->n - 1 && c->x[i] < x) i++;
    double l0 = log2(c->x[i - 1]), l1 = log2(c->x[i]), t = (log2(x) - l0) / (l1 - l0);
    return c->eff[i - 1] + t * (c->eff[i] - c->eff[i - 1]);
}

/* ------------------------------------------------------------------ */
/* Reading */

static const char *const hw_keys[] = {
    "name", "source", "peak_flops", "mem_bw_bytes_per_s", "mem_bytes", "link_bw_bytes_per_s",
    "link_latency_us", "efficiency", "iter_overhead_us", "runtime_reserve_gib", "mem_util",
    "power_w", "usd_per_gpu_hour", "sources", "profile", "host_link_bw_bytes_per_s", "unified_memory", NULL,
};
static const char *const hw_eff_keys[] = {"gemm_compute", "mem", "attn_compute", "attn_mem",
                                          NULL};
static const char *const hw_curve_keys[] = {"rows", "eff", NULL};
static const char *const hw_power_keys[] = {"idle", "busy", NULL};

/* The loose physical bounds below only catch unit slips. */
#define HW_MAX_FLOPS 1e18  /* 1 EFLOP/s on one chip */
#define HW_MAX_BW 1e14     /* 100 TB/s */
#define HW_MAX_MEM 1e13    /* 10 TB */

/* A fraction in (0, 1]. */
static int hw_fraction(const cJSON *obj, const char *key, const char *where, int required,
                       double *out, Err *e)
{
    double v = *out;
    int r = jsonio_num(obj, key, where, required, -HUGE_VAL, HUGE_VAL, &v, e);
    if (r <= 0) return r;
    if (!(v > 0.0 && v <= 1.0)) {
        char path[512];
        return err_set(e, "%s: got %.12g, expected a fraction in (0, 1]",
                       jsonio_path(path, sizeof path, where, key), v);
    }
    *out = v;
    return 1;
}

static int hw_curve(const cJSON *obj, const char *key, const char *where, EffCurve *c, Err *e)
{
    memset(c, 0, sizeof *c);
    char cw[512];
    jsonio_path(cw, sizeof cw, where, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return err_set(e, "%s: missing key \"%s\"", where, key);
    if (cJSON_IsNumber(v)) {
        c->flat = 1.0;
        return hw_fraction(obj, key, where, 1, &c->flat, e) < 0 ? -1 : 0;
    }
    if (!cJSON_IsObject(v))
        return err_set(e, "%s: expected a fraction in (0, 1] or {\"rows\": [...], \"eff\": [...]}",
                       cw);
    if (jsonio_check_keys(v, cw, hw_curve_keys, e)) return -1;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(v, "rows");
    const cJSON *eff = cJSON_GetObjectItemCaseSensitive(v, "eff");
    char rw[600], ew[600];
    jsonio_path(rw, sizeof rw, cw, "rows");
    jsonio_path(ew, sizeof ew, cw, "eff");
    if (!rows) return err_set(e, "%s: missing key \"rows\"", cw);
    if (!eff) return err_set(e, "%s: missing key \"eff\"", cw);
    if (jsonio_expect_array(rows, rw, e) || jsonio_expect_array(eff, ew, e)) return -1;
    int n = cJSON_GetArraySize(rows);
    if (n < 1 || n > HW_CURVE_MAX)
        return err_set(e, "%s: got %d points, expected 1 to %d", rw, n, HW_CURVE_MAX);
    if (cJSON_GetArraySize(eff) != n)
        return err_set(e, "%s: got %d values, expected %d (one per entry of rows)", ew,
                       cJSON_GetArraySize(eff), n);
    int i = 0;
    for (const cJSON *r = rows->child, *f = eff->child; r && f; r = r->next, f = f->next, i++) {
        char iw[700];
        if (!cJSON_IsNumber(r) || !isfinite(r->valuedouble) || !(r->valuedouble > 0) ||
            (i > 0 && !(r->valuedouble > c->x[i - 1])))
            return err_set(e, "%s: expected numbers > 0 in strictly ascending order",
                           jsonio_index(iw, sizeof iw, rw, i));
        if (!cJSON_IsNumber(f) || !(f->valuedouble > 0) || !(f->valuedouble <= 1))
            return err_set(e, "%s: expected a fraction in (0, 1]",
                           jsonio_index(iw, sizeof iw, ew, i));
        c->x[i] = r->valuedouble;
        c->eff[i] = f->valuedouble;
    }
    c->n = n;
    c->flat = c->eff[n - 1];
    return 0;
}

static int hw_peaks(const cJSON *obj, const char *where, HwDesc *h, Err *e)
{
    char pw[512];
    jsonio_path(pw, sizeof pw, where, "peak_flops");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, "peak_flops");
    if (!p) return err_set(e, "%s: missing key \"peak_flops\"", where);
    const char *names[DTYPE_COUNT + 1];
    for (int i = 0; i < DTYPE_COUNT; i++) names[i] = dtype_name((Dtype)i);
    names[DTYPE_COUNT] = NULL;
    if (jsonio_check_keys(p, pw, names, e)) return -1;
    for (int i = 0; i < DTYPE_COUNT; i++)
        if (jsonio_num(p, names[i], pw, i == DTYPE_BF16, 0.0, HW_MAX_FLOPS, &h->peak_flops[i],
                       e) < 0)
            return -1;
    if (!(h->peak_flops[DTYPE_BF16] > 0))
        return err_set(e, "%s.bf16: got 0, expected the dense BF16 peak in FLOP/s (> 0)", pw);
    /* FP16 tensor-core throughput equals BF16 on every GPU here; block-scaled
     * FP8 runs on the FP8 tensor cores (the scales are applied in the
     * epilogue or between K blocks), so its peak is FP8's. */
    if (h->peak_flops[DTYPE_FP16] == 0) h->peak_flops[DTYPE_FP16] = h->peak_flops[DTYPE_BF16];
    if (h->peak_flops[DTYPE_FP8_BLOCK] == 0) h->peak_flops[DTYPE_FP8_BLOCK] = h->peak_flops[DTYPE_FP8];
    return 0;
}

int hw_from_json(const cJSON *obj, const char *where, HwDesc *h, Err *e)
{
    memset(h, 0, sizeof *h);
    if (jsonio_check_keys(obj, where, hw_keys, e)) return -1;

    const char *s = NULL;
    if (jsonio_str(obj, "name", where, 1, &s, e) < 0) return -1;
    if (!*s || strlen(s) >= sizeof h->name) {
        char path[512];
        return err_set(e, "%s: expected 1 to %zu characters",
                       jsonio_path(path, sizeof path, where, "name"), sizeof h->name - 1);
    }
    snprintf(h->name, sizeof h->name, "%s", s);
    const char *note = where;
    if (jsonio_str(obj, "source", where, 0, &note, e) < 0) return -1;
    snprintf(h->source, sizeof h->source, "%s", note);

    if (hw_peaks(obj, where, h, e)) return -1;

    double latency_us = 0, overhead_us = 0, reserve_gib = 0;
    if (jsonio_num(obj, "mem_bw_bytes_per_s", where, 1, 1e9, HW_MAX_BW, &h->mem_bw_bytes_per_s,
                   e) < 0 ||
        jsonio_num(obj, "mem_bytes", where, 1, 1e9, HW_MAX_MEM, &h->mem_bytes, e) < 0 ||
        jsonio_num(obj, "link_bw_bytes_per_s", where, 1, 1e8, HW_MAX_BW,
                   &h->link_bw_bytes_per_s, e) < 0 ||
        jsonio_num(obj, "link_latency_us", where, 1, 0, 1e6, &latency_us, e) < 0 ||
        jsonio_num(obj, "iter_overhead_us", where, 1, 0, 1e6, &overhead_us, e) < 0 ||
        jsonio_num(obj, "runtime_reserve_gib", where, 1, 0, h->mem_bytes / GIB, &reserve_gib,
                   e) < 0)
        return -1;
    h->link_latency_s = latency_us * 1e-6;
    h->host_link_bw_bytes_per_s = 0;
    if (jsonio_num(obj, "host_link_bw_bytes_per_s", where, 0, 1e8, HW_MAX_BW, &h->host_link_bw_bytes_per_s, e) < 0)
        return -1;
    h->iter_overhead_s = overhead_us * 1e-6;
    h->runtime_reserve_bytes = reserve_gib * GIB;
    h->mem_util = 0.9;
    if (hw_fraction(obj, "mem_util", where, 1, &h->mem_util, e) < 0) return -1;
    if (jsonio_bool(obj, "unified_memory", where, 0, &h->unified_memory, e) < 0) return -1;

    char ew[512];
    jsonio_path(ew, sizeof ew, where, "efficiency");
    const cJSON *eff = cJSON_GetObjectItemCaseSensitive(obj, "efficiency");
    if (!eff) return err_set(e, "%s: missing key \"efficiency\"", where);
    if (jsonio_check_keys(eff, ew, hw_eff_keys, e)) return -1;
    if (hw_curve(eff, "gemm_compute", ew, &h->gemm_compute_eff, e) ||
        hw_fraction(eff, "mem", ew, 1, &h->mem_eff, e) < 0 ||
        hw_fraction(eff, "attn_compute", ew, 1, &h->attn_compute_eff, e) < 0 ||
        hw_fraction(eff, "attn_mem", ew, 1, &h->attn_mem_eff, e) < 0)
        return -1;

    const cJSON *pw = cJSON_GetObjectItemCaseSensitive(obj, "power_w");
    if (pw) {
        char w[512];
        jsonio_path(w, sizeof w, where, "power_w");
        if (jsonio_check_keys(pw, w, hw_power_keys, e) ||
            jsonio_num(pw, "idle", w, 1, 0, 1e5, &h->idle_w, e) < 0 ||
            jsonio_num(pw, "busy", w, 1, 0, 1e5, &h->busy_w, e) < 0)
            return -1;
        if (h->idle_w > h->busy_w)
            return err_set(e, "%s: idle %.6g W exceeds busy %.6g W", w, h->idle_w, h->busy_w);
    }
    if (jsonio_num(obj, "usd_per_gpu_hour", where, 0, 0, 1e4, &h->usd_per_gpu_hour, e) < 0)
        return -1;

    if (cJSON_GetObjectItemCaseSensitive(obj, "profile")) {
        const char *pn = NULL;
        if (jsonio_str(obj, "profile", where, 1, &pn, e) < 0) return -1;
        char dir[1024], pp[4096];
        size_t len = strlen(pn);
        if (len >= 5 && !strcmp(pn + len - 5, ".json")) {
            /* a path: beside the file that names it, then the data directory (paths.h) */
            workload_base_dir(where, dir, sizeof dir);
            if (!(pn = paths_resolve_in(pp, sizeof pp, "profile", "profiles/", pn, dir, e))) {
                char path[512];
                return err_prefix(e, "%s", jsonio_path(path, sizeof path, where, "profile"));
            }
        }
        if (hw_attach_profile(h, pn, e) < 0) {
            char path[512];
            return err_prefix(e, "%s", jsonio_path(path, sizeof path, where, "profile"));
        }
    }

    const cJSON *src = cJSON_GetObjectItemCaseSensitive(obj, "sources");
    if (src) {
        char w[512];
        jsonio_path(w, sizeof w, where, "sources");
        if (jsonio_check_keys(src, w, hw_keys, e)) return -1;
        for (const cJSON *it = src->child; it; it = it->next) {
            if (!cJSON_IsString(it) || !it->valuestring || !*it->valuestring) {
                char kw[700];
                return err_set(e, "%s: expected a non-empty string citing the figure",
                               jsonio_path(kw, sizeof kw, w, it->string));
            }
        }
    }
    return 0;
}

int hw_load(const char *name_or_path, HwDesc *h, Err *e)
{
    char path[4096];
    if (!paths_resolve(path, sizeof path, "hardware", "hardware/", name_or_path, e)) return -1;
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int r = hw_from_json(root, path, h, e);
    cJSON_Delete(root);
    if (r < 0) return r;
    return hw_default_profile(h, name_or_path, e);
}

int hw_default_profile(HwDesc *h, const char *name, Err *e)
{
    /* A bundled name brings its bundled profile unless the file chose. */
    char pp[4096];
    if (h->profile_name[0] || !profile_bundled_path(name, pp, sizeof pp)) return 0;
    if (hw_attach_profile(h, name, e) < 0) return err_prefix(e, "hardware %s", name);
    return 0;
}

int hw_attach_profile(HwDesc *h, const char *name_or_path, Err *e)
{
    if (!name_or_path || !strcmp(name_or_path, "none")) {
        h->profile.present = 0;
        snprintf(h->profile_name, sizeof h->profile_name, "%s", name_or_path ? "none" : "");
        return 0;
    }
    if (strlen(name_or_path) >= sizeof h->profile_name)
        return err_set(e, "profile \"%.64s...\": expected a name or path of at most %zu characters", name_or_path,
                       sizeof h->profile_name - 1);
    /* Into a copy first: a profile that fails to load leaves h as it was. */
    Profile *p = xmalloc(sizeof *p);
    if (profile_load(name_or_path, p, e) < 0) {
        free(p);
        return -1;
    }
    h->profile = *p;
    free(p);
    snprintf(h->profile_name, sizeof h->profile_name, "%s", name_or_path);
    if (h->profile.iter_overhead_s >= 0) h->iter_overhead_s = h->profile.iter_overhead_s;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Writing (the file format, so that the output loads again) */

void hw_to_json(const HwDesc *h, cJSON *obj)
{
    cJSON_AddStringToObject(obj, "name", h->name);
    if (h->source[0]) cJSON_AddStringToObject(obj, "source", h->source);
    cJSON *p = cJSON_AddObjectToObject(obj, "peak_flops");
    for (int i = 0; p && i < DTYPE_COUNT; i++)
        if (h->peak_flops[i] > 0) jsonio_add_num(p, dtype_name((Dtype)i), h->peak_flops[i]);
    jsonio_add_num(obj, "mem_bw_bytes_per_s", h->mem_bw_bytes_per_s);
    /* Byte counts are exact integers; do not round them. */
    cJSON_AddNumberToObject(obj, "mem_bytes", h->mem_bytes);
    if (h->unified_memory) cJSON_AddBoolToObject(obj, "unified_memory", 1);
    jsonio_add_num(obj, "link_bw_bytes_per_s", h->link_bw_bytes_per_s);
    jsonio_add_num(obj, "link_latency_us", h->link_latency_s * 1e6);
    if (h->host_link_bw_bytes_per_s > 0) jsonio_add_num(obj, "host_link_bw_bytes_per_s", h->host_link_bw_bytes_per_s);
    cJSON *eff = cJSON_AddObjectToObject(obj, "efficiency");
    if (eff) {
        const EffCurve *c = &h->gemm_compute_eff;
        if (c->n > 0) {
            cJSON *g = cJSON_AddObjectToObject(eff, "gemm_compute");
            cJSON *rows = g ? cJSON_AddArrayToObject(g, "rows") : NULL;
            cJSON *ev = g ? cJSON_AddArrayToObject(g, "eff") : NULL;
            for (int i = 0; rows && ev && i < c->n; i++) {
                cJSON_AddItemToArray(rows, cJSON_CreateNumber(c->x[i]));
                cJSON_AddItemToArray(ev, cJSON_CreateNumber(c->eff[i]));
            }
        } else {
            jsonio_add_num(eff, "gemm_compute", c->flat);
        }
        jsonio_add_num(eff, "mem", h->mem_eff);
        jsonio_add_num(eff, "attn_compute", h->attn_compute_eff);
        jsonio_add_num(eff, "attn_mem", h->attn_mem_eff);
    }
    jsonio_add_num(obj, "iter_overhead_us", h->iter_overhead_s * 1e6);
    jsonio_add_num(obj, "runtime_reserve_gib", h->runtime_reserve_bytes / GIB);
    jsonio_add_num(obj, "mem_util", h->mem_util);
    if (h->idle_w > 0 || h->busy_w > 0) {
        cJSON *pw = cJSON_AddObjectToObject(obj, "power_w");
        if (pw) {
            jsonio_add_num(pw, "idle", h->idle_w);
            jsonio_add_num(pw, "busy", h->busy_w);
        }
    }
    if (h->usd_per_gpu_hour > 0) jsonio_add_num(obj, "usd_per_gpu_hour", h->usd_per_gpu_hour);
    if (h->profile_name[0]) cJSON_AddStringToObject(obj, "profile", h->profile_name);
}

/* ------------------------------------------------------------------ */
/* Memory */

double hw_kv_capacity_bytes(const HwDesc *h, const ModelDesc *m, int tp)
{
    if (tp < 1) tp = 1; /* NEVER: callers validate tp */
    /* Every parameter is resident (the input table included), split evenly
     * over the TP group; each GPU also keeps its own runtime reserve. */
    double weights = m->weights_total_bytes; /* = dtype_bytes(weight_dtype, params) for one format */
    /* the KV heads split over the group down to one a GPU; past that
     * (tp > kv_heads) they are replicated, so the group holds the tokens
     * of min(tp, kv_heads) GPUs' room, not tp's (issue 35) */
    double split = m->kv_heads > 0 && m->kv_heads < tp ? m->kv_heads : tp;
    return split * (h->mem_bytes * h->mem_util - weights / tp - h->runtime_reserve_bytes);
}
