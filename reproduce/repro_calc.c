/*
 * repro_calc.c -- the computations behind `servesim reproduce` (repro_calc.h).
 *
 * `run` and `replay` documents are the reports the run and replay commands
 * write.  A `calc` file names one calculator in its "kind"; each reads only
 * its own keys (unknown keys are errors naming the file and key) and calls
 * the simulator's modules: the KV pool (kv.h) and the prefix cache
 * (prefix.h) for capacities and sharing, the cost models (cost.h) for step
 * times, FLOPs and bytes, the speculation module (spec.h) for E[N], the
 * verifiers and draft plans, the engine itself for the design board, and
 * the CUDA-graph padding of the cost wrapper (costwrap.h).  Units: a key
 * says its unit (_ms, _s, _mib, _gib, _gb); sizes in MiB/GiB are binary,
 * GB decimal, as in the chapter.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "cluster.h"
#include "cost.h"
#include "costwrap.h"
#include "engine.h"
#include "hw.h"
#include "jsonio.h"
#include "kv.h"
#include "lora.h"
#include "mcfg.h"
#include "model.h"
#include "offload.h"
#include "paths.h"
#include "prefix.h"
#include "replay.h"
#include "report.h"
#include "repro_calc.h"
#include "scenario.h"
#include "sched.h"
#include "spec.h"
#include "tasks.h"
#include "sweep.h"

#define CALC_LIST_MAX 64

/* ------------------------------------------------------------ helpers */

/* A JSON array of numbers into out (at most max); *n its length. */
static int get_nums(const cJSON *in, const char *key, const char *w, int required, double *out, int max, int *n,
                    Err *e)
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

static int load_model(const cJSON *in, const char *w, ModelDesc *m, Dtype *kv, Err *e)
{
    const char *name = "qwen3-8b", *dt = "bf16";
    if (jsonio_str(in, "model", w, 0, &name, e) < 0 || jsonio_str(in, "kv_dtype", w, 0, &dt, e) < 0) return -1;
    if (model_load(name, m, e) < 0) return err_prefix(e, "%s: model", w);
    int d = dtype_parse(dt);
    if (d < 0) return err_set(e, "%s.kv_dtype: got \"%s\", expected bf16, fp16, fp8, q8_0 or q4_0", w, dt);
    if (kv) *kv = (Dtype)d;
    return 0;
}

/* Identical requests admitted back to back by a pool (the engine's
 * admission check, without the engine). */
static int admit_count(const KvConfig *c, uint32_t prompt, uint32_t output, uint32_t first_len, int limit, Err *e)
{
    KvPolicy kv;
    if (kv_pool_new(c, &kv, e) < 0) return -1;
    Request *r = xcalloc((size_t)limit, sizeof *r);
    int n = 0;
    for (; n < limit; n++) {
        request_init(&r[n]);
        r[n].prompt_tokens = prompt;
        r[n].output_tokens = output;
        r[n].idx = (uint32_t)n;
        if (!kv.admit(kv.ctx, &r[n], first_len)) break;
    }
    for (int i = 0; i < n; i++) kv.release(kv.ctx, &r[i]);
    kv.destroy(kv.ctx);
    free(r);
    return n;
}

/* Admits r to a prefix cache, computes its whole prompt and commits it, as
 * one iteration does. */
static int prefix_admit_compute(KvPolicy *kv, Request *r)
{
    if (!kv->admit(kv->ctx, r, r->prefill_target)) return 0;
    if (!kv->grow(kv->ctx, r, r->prefill_target)) return 0;
    r->kv_len = r->prefill_target;
    kv->commit(kv->ctx, r);
    return 1;
}

static void prefix_req(Request *r, uint32_t idx, const uint32_t *ids, uint32_t n_ids, uint32_t prompt, uint32_t output)
{
    request_init(r);
    r->idx = idx;
    r->token_ids = ids;
    r->n_token_ids = n_ids;
    r->prompt_tokens = prompt;
    r->output_tokens = output;
    r->prefill_target = prompt;
}

/* How many requests of `prompt` tokens, the first `shared` of them common,
 * a prefix cache of `cap_bytes` admits under the final reservation (at most
 * limit).  shared = 0: nothing in common. */
static int shared_admit_count(double cap_bytes, uint32_t block, double k, uint32_t prompt, uint32_t output,
                              uint32_t shared, int limit, Err *e)
{
    /* no more requests than the pool can hold private blocks for (each
     * needs at least one), and token ids of bounded size */
    double blocks = floor(cap_bytes / ((double)block * k));
    if (blocks + 2 < (double)limit) limit = (int)blocks + 2;
    if ((double)limit * prompt > 5e7)
        return err_set(e, "%d requests of %u tokens: more token ids than the calculator holds (50,000,000); "
                          "lower capacity_gib or the prompt", limit, prompt);
    PrefixConfig c = {.kv = {.capacity_bytes = cap_bytes, .block_tokens = block, .bytes_per_token = k,
                             .reserve = KV_RESERVE_FINAL},
                      .namespace_seed = 1, .n_requests = (uint32_t)limit};
    KvPolicy kv;
    if (prefix_new(&c, &kv, e) < 0) return -1;
    uint32_t *ids = xmalloc((size_t)limit * prompt * sizeof *ids);
    Request *r = xcalloc((size_t)limit, sizeof *r);
    int n = 0;
    for (; n < limit; n++) {
        uint32_t *t = ids + (size_t)n * prompt;
        for (uint32_t i = 0; i < prompt; i++) t[i] = i < shared ? i : 1000000u * (uint32_t)(n + 1) + i;
        prefix_req(&r[n], (uint32_t)n, t, prompt, prompt, output);
        if (!prefix_admit_compute(&kv, &r[n])) break;
    }
    for (int i = 0; i < n; i++) kv.release(kv.ctx, &r[i]);
    kv.destroy(kv.ctx);
    free(r);
    free(ids);
    return n;
}

/* The step model a file names: an inline cost_model object, or the name of
 * a step profile in models/steps/ (its "cost_model"). */
static int load_linear(const cJSON *in, const char *w, LinearCostCfg *lc, cJSON **profile, Err *e)
{
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(in, "cost_model");
    char where[1200];
    jsonio_path(where, sizeof where, w, "cost_model");
    *profile = NULL;
    if (cJSON_IsString(cm)) {
        char path[1024];
        if (!paths_resolve(path, sizeof path, "step profile", "steps/", cm->valuestring, e))
            return err_prefix(e, "%s", where);
        *profile = jsonio_parse_file(path, e);
        if (!*profile) return -1;
        cm = cJSON_GetObjectItemCaseSensitive(*profile, "cost_model");
        snprintf(where, sizeof where, "%s: cost_model", path);
    }
    if (!cJSON_IsObject(cm)) return err_set(e, "%s: expected a step-model object or a step profile's name", where);
    static const char *const keys[] = {"kind", "fixed_ms", "per_token_us", "per_pair_ns", NULL};
    double f = 0, t = 0, p = 0;
    if (jsonio_check_keys(cm, where, keys, e) < 0 || jsonio_num(cm, "fixed_ms", where, 1, 0, 1e6, &f, e) < 0 ||
        jsonio_num(cm, "per_token_us", where, 1, 0, 1e6, &t, e) < 0 ||
        jsonio_num(cm, "per_pair_ns", where, 0, 0, 1e6, &p, e) < 0)
        return -1;
    *lc = (LinearCostCfg){f * 1e-3, t * 1e-6, p * 1e-9};
    return 0;
}

/* A number given inline or as "measured:KEY" of the step profile's
 * "measured" table (the chapter's experiment 8-1). */
static int num_or_measured(const cJSON *obj, const char *key, const char *w, const cJSON *profile, double *out,
                           Err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[512];
    jsonio_path(p, sizeof p, w, key);
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 0;
    }
    if (cJSON_IsString(v) && !strncmp(v->valuestring, "measured:", 9)) {
        const cJSON *m = profile ? cJSON_GetObjectItemCaseSensitive(profile, "measured") : NULL;
        const cJSON *x = m ? cJSON_GetObjectItemCaseSensitive(m, v->valuestring + 9) : NULL;
        if (cJSON_IsObject(x)) x = cJSON_GetObjectItemCaseSensitive(x, "value");
        if (!cJSON_IsNumber(x))
            return err_set(e, "%s: \"%s\": the step profile (cost_model) has no measured value of that name", p,
                           v->valuestring);
        *out = x->valuedouble;
        return 0;
    }
    return err_set(e, "%s: expected a number or \"measured:KEY\"", p);
}

/* ------------------------------------------------------------ calculators */

/* KV capacity of the pool (003 section 8.1, 8.3): per-request
 * reservations and how many requests a pool admits. */
static int calc_kv_capacity(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "kv_dtype", "capacity_gib", "block_tokens",
                                       "prompt_tokens", "output_tokens", "shared_prefix_tokens", "requests", NULL};
    ModelDesc m;
    Dtype dt;
    double cap = 12;
    int64_t block = 16, prompt = 0, output = 0, shared = 0, n = 16;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, &dt, e) < 0 ||
        jsonio_num(in, "capacity_gib", w, 1, 1e-6, 1e6, &cap, e) < 0 ||
        jsonio_int(in, "block_tokens", w, 0, 1, 4096, &block, e) < 0 ||
        jsonio_int(in, "prompt_tokens", w, 1, 1, 10000000, &prompt, e) < 0 ||
        jsonio_int(in, "output_tokens", w, 1, 1, 10000000, &output, e) < 0 ||
        jsonio_int(in, "shared_prefix_tokens", w, 0, 0, prompt, &shared, e) < 0 ||
        jsonio_int(in, "requests", w, 0, 1, 10000, &n, e) < 0)
        return -1;
    double k = model_kv_bytes_per_token(&m, dt), bt = (double)block;
    KvConfig c = {.capacity_bytes = cap * GIB, .block_tokens = (uint32_t)block, .bytes_per_token = k,
                  .reserve = KV_RESERVE_FINAL};
    Request r;
    request_init(&r);
    r.prompt_tokens = (uint32_t)prompt;
    r.output_tokens = (uint32_t)output;
    uint64_t fin = kv_reserve_tokens(KV_RESERVE_FINAL, &r, 0);
    double fin_mib = (double)kv_blocks_for(fin, (uint32_t)block) * bt * k / MIB;
    double pre_mib = (double)kv_blocks_for((uint64_t)prompt, (uint32_t)block) * bt * k / MIB;
    int limit = 100000;
    int a_final = admit_count(&c, (uint32_t)prompt, (uint32_t)output, (uint32_t)prompt, limit, e);
    c.reserve = KV_RESERVE_ON_DEMAND;
    int a_pre = admit_count(&c, (uint32_t)prompt, (uint32_t)output, (uint32_t)prompt, limit, e);
    if (a_final < 0 || a_pre < 0) return err_prefix(e, "%s", w);
    KvPolicy kv;
    if (kv_pool_new(&c, &kv, e) < 0) return err_prefix(e, "%s", w);
    cJSON_AddNumberToObject(out, "total_blocks", (double)kv.total_blocks(kv.ctx));
    kv.destroy(kv.ctx);
    cJSON_AddNumberToObject(out, "kv_bytes_per_token", k);
    cJSON_AddNumberToObject(out, "final_tokens", (double)fin);
    cJSON_AddNumberToObject(out, "final_mib", fin_mib);
    cJSON_AddNumberToObject(out, "prefill_mib", pre_mib);
    cJSON_AddNumberToObject(out, "admitted_final", a_final);
    cJSON_AddNumberToObject(out, "admitted_prefill_only", a_pre);
    cJSON_AddNumberToObject(out, "prefill_admitted_final_mib", a_pre * fin_mib);
    cJSON_AddNumberToObject(out, "input_gib_each", (double)prompt * k / GIB);
    cJSON_AddNumberToObject(out, "input_gib_all", (double)n * (double)prompt * k / GIB);
    cJSON_AddNumberToObject(out, "final_gib_all", (double)n * fin_mib / 1024);
    cJSON_AddNumberToObject(out, "fits_all", a_final >= n);
    if (shared > 0) {
        double sh_mib = (double)kv_blocks_for((uint64_t)shared, (uint32_t)block) * bt * k / MIB;
        uint64_t priv = fin - (uint64_t)shared;
        int a_sh = shared_admit_count(cap * GIB, (uint32_t)block, k, (uint32_t)prompt, (uint32_t)output,
                                      (uint32_t)shared, limit, e);
        if (a_sh < 0) return err_prefix(e, "%s", w);
        cJSON_AddNumberToObject(out, "shared_mib", sh_mib);
        cJSON_AddNumberToObject(out, "private_tokens", (double)priv);
        cJSON_AddNumberToObject(out, "private_mib", (double)kv_blocks_for(priv, (uint32_t)block) * bt * k / MIB);
        cJSON_AddNumberToObject(out, "admitted_shared", a_sh);
        cJSON_AddNumberToObject(out, "fits_all_shared", a_sh >= n);
    }
    return 0;
}

/* Paged blocks and sharing (003 figures 8-10 to 8-13, exercise 8-3). */
static int calc_paged(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "lengths", "max_tokens", "block_tokens",
                                       "shared_with_first", NULL};
    double len[CALC_LIST_MAX], ps[CALC_LIST_MAX], sh[CALC_LIST_MAX];
    int nl, np, ns;
    int64_t maxt = 16;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "lengths", w, 1, len, CALC_LIST_MAX, &nl, e) < 0 ||
        get_nums(in, "block_tokens", w, 1, ps, CALC_LIST_MAX, &np, e) < 0 ||
        get_nums(in, "shared_with_first", w, 1, sh, CALC_LIST_MAX, &ns, e) < 0 ||
        jsonio_int(in, "max_tokens", w, 1, 1, 100000, &maxt, e) < 0)
        return -1;
    if (ns != nl) return err_set(e, "%s.shared_with_first: expected one entry per length (%d)", w, nl);
    for (int i = 0; i < nl; i++)
        if (!(len[i] >= 1 && len[i] <= (double)maxt && len[i] == floor(len[i])) || !(sh[i] >= 0 && sh[i] <= len[i]))
            return err_set(e, "%s.lengths[%d]: got %g (shared %g), expected an integer in [1, max_tokens] and a shared "
                              "count within it", w, i, len[i], sh[i]);
    uint32_t *ids = xcalloc((size_t)nl * (size_t)maxt, sizeof *ids);
    for (int i = 0; i < nl; i++)
        for (uint32_t t = 0; t < (uint32_t)len[i]; t++)
            ids[(size_t)i * (size_t)maxt + t] = t < (uint32_t)sh[i] ? 10 + t : 1000u * (uint32_t)(i + 1) + t;
    for (int j = 0; j < np; j++) {
        uint32_t p = (uint32_t)ps[j];
        if (!(ps[j] >= 1 && ps[j] <= 4096)) {
            free(ids);
            return err_set(e, "%s.block_tokens[%d]: got %g, expected an integer in [1, 4096]", w, j, ps[j]);
        }
        PrefixConfig c = {.kv = {.capacity_bytes = 100000.0 * p, .block_tokens = p, .bytes_per_token = 1,
                                 .reserve = KV_RESERVE_FINAL},
                          .namespace_seed = 1, .n_requests = (uint32_t)nl};
        KvPolicy kv;
        if (prefix_new(&c, &kv, e) < 0) {
            free(ids);
            return err_prefix(e, "%s", w);
        }
        Request r[CALC_LIST_MAX];
        uint64_t max_slots = 0, paged = 0, stored = 0, entries = 0, waste_max = 0;
        for (int i = 0; i < nl; i++) {
            prefix_req(&r[i], (uint32_t)i, ids + (size_t)i * (size_t)maxt, (uint32_t)len[i], (uint32_t)len[i], 1);
            max_slots += kv_blocks_for(kv_reserve_tokens(KV_RESERVE_MAX, &r[i], (uint32_t)maxt), p) * p;
            uint64_t b = kv_blocks_for(kv_reserve_tokens(KV_RESERVE_FINAL, &r[i], (uint32_t)maxt), p);
            paged += b * p;
            entries += b;
            stored += (uint64_t)len[i];
            if (b * p - (uint64_t)len[i] > waste_max) waste_max = b * p - (uint64_t)len[i];
            prefix_admit_compute(&kv, &r[i]);
        }
        char key[32];
        snprintf(key, sizeof key, "p%u", p);
        cJSON *o = cJSON_AddObjectToObject(out, key);
        cJSON_AddNumberToObject(o, "reserve_max_slots", (double)max_slots);
        cJSON_AddNumberToObject(o, "paged_slots", (double)paged);
        cJSON_AddNumberToObject(o, "shared_slots", (double)kv.used_blocks(kv.ctx) * p);
        cJSON_AddNumberToObject(o, "stored_tokens", (double)stored);
        cJSON_AddNumberToObject(o, "unused_slots", (double)(paged - stored));
        cJSON_AddNumberToObject(o, "block_table_entries", (double)entries);
        cJSON_AddNumberToObject(o, "max_waste", (double)waste_max);
        cJSON_AddNumberToObject(o, "waste_bound", (double)(p - 1));
        cJSON_AddNumberToObject(o, "second_hit_tokens", nl > 1 ? r[1].prefix_hit_tokens : 0);
        for (int i = 0; i < nl; i++) kv.release(kv.ctx, &r[i]);
        kv.destroy(kv.ctx);
    }
    free(ids);
    return 0;
}

/* Branch sharing (003 section 8.3): references against physical blocks. */
static int calc_branches(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "branches", "prefix_blocks", "private_blocks",
                                       "block_tokens", NULL};
    int64_t nb = 4, pre = 95, priv = 9, bt = 16;
    if (jsonio_check_keys(in, w, keys, e) < 0 || jsonio_int(in, "branches", w, 1, 1, 64, &nb, e) < 0 ||
        jsonio_int(in, "prefix_blocks", w, 1, 0, 100000, &pre, e) < 0 ||
        jsonio_int(in, "private_blocks", w, 1, 1, 100000, &priv, e) < 0 ||
        jsonio_int(in, "block_tokens", w, 0, 1, 1024, &bt, e) < 0)
        return -1;
    if ((double)nb * (double)(pre + priv) * (double)bt > 5e7)
        return err_set(e, "%s: %lld branches x %lld blocks x %lld tokens: more than the calculator holds (50,000,000 "
                          "token ids)", w, (long long)nb, (long long)(pre + priv), (long long)bt);
    uint32_t len = (uint32_t)((pre + priv) * bt), shared = (uint32_t)(pre * bt);
    uint32_t *ids = xmalloc((size_t)nb * len * sizeof *ids);
    for (uint32_t s = 0; s < (uint32_t)nb; s++)
        for (uint32_t i = 0; i < len; i++) ids[(size_t)s * len + i] = i < shared ? i : 100000000u * (s + 1) + i;
    PrefixConfig c = {.kv = {.capacity_bytes = (double)(nb * (pre + priv) + 1) * bt, .block_tokens = (uint32_t)bt,
                             .bytes_per_token = 1, .reserve = KV_RESERVE_FINAL},
                      .namespace_seed = 1, .n_requests = (uint32_t)nb};
    KvPolicy kv;
    if (prefix_new(&c, &kv, e) < 0) {
        free(ids);
        return err_prefix(e, "%s", w);
    }
    Request r[64];
    double refs = 0;
    for (uint32_t s = 0; s < (uint32_t)nb; s++) {
        prefix_req(&r[s], s, ids + (size_t)s * len, len, len, 1);
        prefix_admit_compute(&kv, &r[s]);
        refs += prefix_request_blocks(&kv, &r[s]);
    }
    double phys = (double)kv.used_blocks(kv.ctx);
    cJSON_AddNumberToObject(out, "references", refs);
    cJSON_AddNumberToObject(out, "physical_blocks", phys);
    cJSON_AddNumberToObject(out, "saving", 1 - phys / refs);
    for (uint32_t s = 0; s < (uint32_t)nb; s++) kv.release(kv.ctx, &r[s]);
    kv.destroy(kv.ctx);
    free(ids);
    return 0;
}

/* Bytes read per output token d(b, L) = Dw / b + L k and the crossover
 * batch bKV (003 figure 8-3, exercise 8-1). */
static int calc_read_per_token(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "kv_dtype", "contexts", "batches",
                                       "resident_batch", "resident_context", "hardware", NULL};
    ModelDesc m;
    Dtype dt;
    const char *hwn = NULL;
    double ctx[CALC_LIST_MAX], bs[CALC_LIST_MAX];
    int nc, nb;
    int64_t rb = 0, rl = 0;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, &dt, e) < 0 ||
        get_nums(in, "contexts", w, 1, ctx, CALC_LIST_MAX, &nc, e) < 0 ||
        get_nums(in, "batches", w, 1, bs, CALC_LIST_MAX, &nb, e) < 0 ||
        jsonio_int(in, "resident_batch", w, 0, 1, 100000, &rb, e) < 0 ||
        jsonio_int(in, "resident_context", w, 0, 1, 10000000, &rl, e) < 0 ||
        jsonio_str(in, "hardware", w, 0, &hwn, e) < 0)
        return -1;
    double k = model_kv_bytes_per_token(&m, dt);
    cJSON_AddNumberToObject(out, "weights_read_bytes", m.weights_read_bytes);
    cJSON_AddNumberToObject(out, "weights_read_gib", m.weights_read_bytes / GIB);
    cJSON_AddNumberToObject(out, "weights_gib", dtype_bytes(m.weight_dtype, (double)m.params) / GIB);
    if (hwn) {
        HwDesc hw;
        if (hw_load(hwn, &hw, e) < 0) return err_prefix(e, "%s: hardware", w);
        cJSON_AddNumberToObject(out, "weights_read_ms_at_peak_bw", m.weights_read_bytes / hw.mem_bw_bytes_per_s * 1e3);
    }
    cJSON_AddNumberToObject(out, "kv_bytes_per_token", k);
    cJSON_AddNumberToObject(out, "kv_kib_per_token", k / 1024);
    for (int i = 0; i < nc; i++) {
        if (!(ctx[i] >= 1)) return err_set(e, "%s.contexts[%d]: got %g, expected a positive length", w, i, ctx[i]);
        char key[64];
        snprintf(key, sizeof key, "bkv_L%.0f", ctx[i]);
        cJSON_AddNumberToObject(out, key, (double)cost_kv_crossover_batch(&m, k, ctx[i]));
        for (int j = 0; j < nb; j++) {
            if (!(bs[j] >= 1)) return err_set(e, "%s.batches[%d]: got %g, expected a positive batch", w, j, bs[j]);
            snprintf(key, sizeof key, "d_gib_L%.0f_b%.0f", ctx[i], bs[j]);
            cJSON_AddNumberToObject(out, key, cost_bytes_per_output_token(&m, k, bs[j], ctx[i]) / GIB);
        }
    }
    if (rb > 0 && rl > 0)  /* every weight resident plus the KV after one decode step */
        cJSON_AddNumberToObject(out, "resident_gb",
                                (dtype_bytes(m.weight_dtype, (double)m.params) + (double)rb * (double)(rl + 1) * k) /
                                    1e9);
    return 0;
}

/* The linear step model on named batches (003 section 8.2). */
static int calc_step(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "cost_model", "batches", "model", "hardware", NULL};
    if (jsonio_check_keys(in, w, keys, e) < 0) return -1;
    /* with a model and a GPU: each batch's read bound (weights + every KV
     * token read, at peak bandwidth) beside the step model's time */
    const char *hwn = NULL;
    ModelDesc m;
    HwDesc hw;
    int bound = 0;
    if (jsonio_str(in, "hardware", w, 0, &hwn, e) < 0) return -1;
    if (hwn) {
        if (load_model(in, w, &m, NULL, e) < 0) return -1;
        if (hw_load(hwn, &hw, e) < 0) return err_prefix(e, "%s: hardware", w);
        bound = 1;
    }
    LinearCostCfg lc;
    cJSON *profile = NULL;
    if (load_linear(in, w, &lc, &profile, e) < 0) return -1;
    cJSON_Delete(profile);
    CostModel cm, roof = {0};
    if (cost_linear_new(&lc, &cm, e) < 0) return err_prefix(e, "%s", w);
    /* the same batches priced by the GPU's calibrated roofline (hw_load
     * attaches its profile), for cases that rest on the measurement */
    if (bound) {
        RooflineCfg rc = {.model = m, .hw = hw, .tp = 1, .compute_dtype = DTYPE_BF16,
                          .kv_bytes_per_token = model_kv_bytes_per_token(&m, DTYPE_BF16), .act_bytes = 2};
        if (cost_roofline_new(&rc, &roof, e) < 0) {
            cm.destroy(cm.ctx);
            return err_prefix(e, "%s", w);
        }
    }
    const cJSON *bat = cJSON_GetObjectItemCaseSensitive(in, "batches");
    char p[512];
    jsonio_path(p, sizeof p, w, "batches");
    int rc = cJSON_IsObject(bat) ? 0 : err_set(e, "%s: expected an object of named batches [[count, c, h], ...]", p);
    const cJSON *b;
    BatchItem items[1024];
    cJSON_ArrayForEach(b, bat)
    {
        if (rc < 0) break;
        char q[600];
        jsonio_path(q, sizeof q, p, b->string);
        uint32_t n = 0;
        double pairs = 0, kv_read = 0;
        const cJSON *it;
        if (!cJSON_IsArray(b)) rc = err_set(e, "%s: expected [[count, c, h], ...]", q);
        cJSON_ArrayForEach(it, b)
        {
            if (rc < 0) break;
            const cJSON *a0 = cJSON_GetArrayItem(it, 0), *a1 = cJSON_GetArrayItem(it, 1), *a2 = cJSON_GetArrayItem(it, 2);
            if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3 || !cJSON_IsNumber(a0) || !cJSON_IsNumber(a1) ||
                !cJSON_IsNumber(a2) || a0->valuedouble < 1 || a1->valuedouble < 1 || a2->valuedouble < 0 ||
                n + a0->valuedouble > 1024 || a1->valuedouble > 1e7 || a2->valuedouble > 1e7) {
                rc = err_set(e, "%s: expected items [count >= 1, new tokens c >= 1, cached h >= 0], at most 1024 rows",
                             q);
                break;
            }
            for (int k = 0; k < (int)a0->valuedouble; k++) {
                items[n++] = (BatchItem){.req = n, .c = (uint32_t)a1->valuedouble, .h = (uint32_t)a2->valuedouble,
                                         .kind = a1->valuedouble > 1 ? ITEM_PREFILL : ITEM_DECODE, .samples = 1};
                pairs += (double)batch_pairs(items[n - 1].c, items[n - 1].h);
                kv_read += (double)items[n - 1].h + items[n - 1].c;
            }
        }
        if (rc < 0 || n == 0) {
            if (rc == 0) rc = err_set(e, "%s: an empty batch", q);
            break;
        }
        CostBreakdown cb;
        cm.iter_time(cm.ctx, items, n, &cb);
        cJSON *o = cJSON_AddObjectToObject(out, b->string);
        cJSON_AddNumberToObject(o, "ms", cb.t_s * 1e3);
        cJSON_AddNumberToObject(o, "pairs", pairs);
        if (bound) {
            double rb = (m.weights_read_bytes + kv_read * model_kv_bytes_per_token(&m, DTYPE_BF16)) /
                        hw.mem_bw_bytes_per_s * 1e3;
            cJSON_AddNumberToObject(o, "read_bound_ms", rb);
            cJSON_AddNumberToObject(o, "over_bound_ms", cb.t_s * 1e3 - rb);
            CostBreakdown rb2;
            roof.iter_time(roof.ctx, items, n, &rb2);
            cJSON_AddNumberToObject(o, "roofline_ms", rb2.t_s * 1e3);
        }
    }
    cm.destroy(cm.ctx);
    if (bound) roof.destroy(roof.ctx);
    return rc;
}

/* FLOPs, bytes and roofline times of named batches for a model on a GPU
 * (003 sections 8.3, 8.5, 8.6): cost_flops counts FLOPs (LM head only on
 * sampled positions); times are FLOPs / (peak x efficiency). */
static int calc_flops(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "hardware", "peak_tflops", "batches", NULL};
    ModelDesc m;
    HwDesc hw;
    const char *hwn = "rtx-pro-6000";
    double peak = 0;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, NULL, e) < 0 ||
        jsonio_str(in, "hardware", w, 0, &hwn, e) < 0 || jsonio_num(in, "peak_tflops", w, 0, 1e-3, 1e6, &peak, e) < 0)
        return -1;
    if (hw_load(hwn, &hw, e) < 0 || hw_attach_profile(&hw, "none", e) < 0) return err_prefix(e, "%s: hardware", w);
    if (peak > 0) hw.peak_flops[DTYPE_BF16] = peak * 1e12;
    const cJSON *bat = cJSON_GetObjectItemCaseSensitive(in, "batches");
    char p[512];
    jsonio_path(p, sizeof p, w, "batches");
    if (!cJSON_IsObject(bat)) return err_set(e, "%s: expected an object of named batches", p);
    const cJSON *b;
    BatchItem items[1024];
    cJSON_ArrayForEach(b, bat)
    {
        char q[600];
        jsonio_path(q, sizeof q, p, b->string);
        static const char *const bk[] = {"items", "efficiency", "kv_dtype", "sampled", "verify", "effective_bw_gb_s",
                                         "conversion_ns_per_token", NULL};
        double eff = 1, ebw = 0, conv_ns = 0;
        int sampled = 1, verify = 0;
        const char *kvd = "bf16";
        if (jsonio_expect_object(b, q, e) < 0 || jsonio_check_keys(b, q, bk, e) < 0 ||
            jsonio_num(b, "efficiency", q, 0, 1e-6, 1, &eff, e) < 0 || jsonio_str(b, "kv_dtype", q, 0, &kvd, e) < 0 ||
            jsonio_bool(b, "sampled", q, 0, &sampled, e) < 0 || jsonio_bool(b, "verify", q, 0, &verify, e) < 0 ||
            jsonio_num(b, "effective_bw_gb_s", q, 0, 1e-3, 1e6, &ebw, e) < 0 ||
            jsonio_num(b, "conversion_ns_per_token", q, 0, 0, 1e9, &conv_ns, e) < 0)
            return -1;
        int kd = dtype_parse(kvd);
        if (kd < 0) return err_set(e, "%s.kv_dtype: got \"%s\", expected bf16, fp8, q8_0 or q4_0", q, kvd);
        const cJSON *its = cJSON_GetObjectItemCaseSensitive(b, "items"), *it;
        uint32_t n = 0;
        double tokens = 0;
        if (!cJSON_IsArray(its)) return err_set(e, "%s.items: expected [[count, c, h], ...]", q);
        cJSON_ArrayForEach(it, its)
        {
            const cJSON *a0 = cJSON_GetArrayItem(it, 0), *a1 = cJSON_GetArrayItem(it, 1), *a2 = cJSON_GetArrayItem(it, 2);
            if (!cJSON_IsNumber(a0) || !cJSON_IsNumber(a1) || !cJSON_IsNumber(a2) || a0->valuedouble < 1 ||
                a1->valuedouble < 1 || a2->valuedouble < 0 || n + a0->valuedouble > 1024 || a1->valuedouble > 1e7 ||
                a2->valuedouble > 1e7)
                return err_set(e, "%s.items: expected [count >= 1, new tokens c >= 1, cached h >= 0], at most 1024 rows",
                               q);
            for (int k = 0; k < (int)a0->valuedouble; k++)
                items[n++] = (BatchItem){.req = n, .c = (uint32_t)a1->valuedouble, .h = (uint32_t)a2->valuedouble,
                                         .kind = verify ? ITEM_VERIFY : a1->valuedouble > 1 ? ITEM_PREFILL : ITEM_DECODE,
                                         .samples = (uint8_t)sampled};
            tokens += a0->valuedouble * a1->valuedouble;
        }
        if (n == 0) return err_set(e, "%s.items: an empty batch", q);
        double fl = cost_flops(&m, items, n);
        double kb = model_kv_bytes_per_token(&m, (Dtype)kd);
        RooflineCfg rc = {.model = m, .hw = hw, .tp = 1, .compute_dtype = DTYPE_BF16, .kv_bytes_per_token = kb,
                          .act_bytes = 2};
        CostModel cm;
        if (cost_roofline_new(&rc, &cm, e) < 0) return err_prefix(e, "%s", q);
        CostBreakdown cb;
        cm.iter_time(cm.ctx, items, n, &cb);
        cm.destroy(cm.ctx);
        cJSON *o = cJSON_AddObjectToObject(out, b->string);
        cJSON_AddNumberToObject(o, "tflop", fl / 1e12);
        cJSON_AddNumberToObject(o, "gflop", fl / 1e9);
        cJSON_AddNumberToObject(o, "ms", fl / (hw.peak_flops[DTYPE_BF16] * eff) * 1e3);
        cJSON_AddNumberToObject(o, "s", fl / (hw.peak_flops[DTYPE_BF16] * eff));
        /* bytes read: weights, every cached and new token's KV (the new
         * tokens' KV writes left out, as the chapter counts reads) */
        cJSON_AddNumberToObject(o, "read_gb", (cb.bytes - tokens * kb) / 1e9);
        cJSON_AddNumberToObject(o, "read_ms_at_peak_bw", (cb.bytes - tokens * kb) / hw.mem_bw_bytes_per_s * 1e3);
        if (ebw > 0) cJSON_AddNumberToObject(o, "read_ms_at_effective_bw", (cb.bytes - tokens * kb) / (ebw * 1e9) * 1e3);
        if (conv_ns > 0) {
            /* the KV format's conversion cost, as the engine's cost wrapper
             * (costwrap.h) adds it: the rate x the tokens the batch reads */
            CostWrapCfg wc = {.conversion_s_per_token = conv_ns * 1e-9};
            CostModel in2, wrapped;
            CostBreakdown c1;
            if (cost_roofline_new(&rc, &in2, e) < 0 || costwrap_new(&wc, in2, &wrapped, e) < 0)
                return err_prefix(e, "%s", q);
            wrapped.iter_time(wrapped.ctx, items, n, &c1);
            wrapped.destroy(wrapped.ctx);
            double conv_ms = (c1.t_s - cb.t_s) * 1e3;
            cJSON_AddNumberToObject(o, "conversion_ms", conv_ms);
            if (ebw > 0)
                cJSON_AddNumberToObject(o, "read_plus_conversion_ms_at_effective_bw",
                                        (cb.bytes - tokens * kb) / (ebw * 1e9) * 1e3 + conv_ms);
        }
        cJSON_AddNumberToObject(o, "kv_mib", tokens * kb / MIB);
        cJSON_AddNumberToObject(o, "ms_per_mib", fl / (hw.peak_flops[DTYPE_BF16] * eff) * 1e3 / (tokens * kb / MIB));
    }
    return 0;
}

/* Speculative-decoding plans (003 section 8.5, exercise 8-7): E[N], ms
 * per output token, the draft time at which speculation stops paying, and
 * the setup time a draft index needs to earn back. */
static int calc_spec_plan(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "plans", NULL};
    if (jsonio_check_keys(in, w, keys, e) < 0) return -1;
    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(in, "plans"), *pl;
    char p[512];
    jsonio_path(p, sizeof p, w, "plans");
    if (!cJSON_IsObject(plans)) return err_set(e, "%s: expected an object of named plans", p);
    cJSON_ArrayForEach(pl, plans)
    {
        char q[600];
        jsonio_path(q, sizeof q, p, pl->string);
        static const char *const pk[] = {"accept", "draft_len", "verify_ms", "per_draft_ms", "group", "draft_ms",
                                         "draft_forwards", "tokens_per_round", "setup_s", "tokens", "plain_ms", NULL};
        double a = 0, verify = 0, per = 0, draft = 0, tpr = 0, setup = 0, plain = 0;
        int64_t m = 1, group = 1, fw = 1, tokens = 0;
        if (jsonio_expect_object(pl, q, e) < 0 || jsonio_check_keys(pl, q, pk, e) < 0 ||
            jsonio_num(pl, "accept", q, 0, 0, 1, &a, e) < 0 || jsonio_int(pl, "draft_len", q, 1, 1, SPEC_M_MAX, &m, e) < 0 ||
            jsonio_num(pl, "verify_ms", q, 1, 0, 1e6, &verify, e) < 0 ||
            jsonio_num(pl, "per_draft_ms", q, 0, 0, 1e6, &per, e) < 0 ||
            jsonio_int(pl, "group", q, 0, 1, SPEC_M_MAX, &group, e) < 0 ||
            jsonio_num(pl, "draft_ms", q, 0, 0, 1e6, &draft, e) < 0 ||
            jsonio_int(pl, "draft_forwards", q, 0, 1, SPEC_M_MAX, &fw, e) < 0 ||
            jsonio_num(pl, "tokens_per_round", q, 0, 1, SPEC_M_MAX + 1, &tpr, e) < 0 ||
            jsonio_num(pl, "setup_s", q, 0, 0, 1e6, &setup, e) < 0 ||
            jsonio_int(pl, "tokens", q, 0, 0, 10000000, &tokens, e) < 0 ||
            jsonio_num(pl, "plain_ms", q, 0, 0, 1e6, &plain, e) < 0)
            return -1;
        SpecCfg c = {.enabled = 1, .draft_len = (uint32_t)m};
        if (tpr > 0) {
            /* an assumed mean: every round accepts tpr - 1 drafts */
            c.n_counts = (uint32_t)tpr;
            if (tpr != floor(tpr) || tpr > (double)m + 1)
                return err_set(e, "%s.tokens_per_round: got %g, expected an integer in [1, draft_len + 1]", q, tpr);
            c.counts[(int)tpr - 1] = 1;
        } else {
            c.n_rates = 1;
            c.rates[0] = a;
        }
        /* verify rows padded to multiples of group (captured shapes) */
        double padded = (double)(group * ((m + group - 1) / group));
        double round = verify + per * padded + draft * (double)fw;
        double en = spec_expected_tokens(&c, (uint32_t)m);
        double mpt = spec_time_per_token(&c, (uint32_t)m, round);
        cJSON *o = cJSON_AddObjectToObject(out, pl->string);
        cJSON_AddNumberToObject(o, "expected_tokens", en);
        cJSON_AddNumberToObject(o, "round_ms", round);
        cJSON_AddNumberToObject(o, "draft_total_ms", draft * (double)fw);
        cJSON_AddNumberToObject(o, "ms_per_token", mpt);
        /* (verify + x) / E[N] = verify: the draft time where it breaks even */
        cJSON_AddNumberToObject(o, "breakeven_draft_ms", verify * (en - 1));
        if (plain > 0) {
            cJSON_AddNumberToObject(o, "saved_ms_per_token", plain - mpt);
            if (setup > 0) cJSON_AddNumberToObject(o, "setup_breakeven_tokens", setup * 1e3 / (plain - mpt));
            if (tokens > 0) cJSON_AddNumberToObject(o, "plain_s", (double)tokens * plain / 1e3);
        }
        if (tokens > 0) cJSON_AddNumberToObject(o, "total_s", setup + (double)tokens * mpt / 1e3);
    }
    return 0;
}

/* The rejection-sampling verifier (000 example 31.3 and its exercise; 003
 * figures 8-30/8-31): acceptance probabilities, the residual, and the
 * output distribution over `draws` seeded draws. */
static int calc_spec_verify(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "p", "q", "draws", "seed", NULL};
    double p[CALC_LIST_MAX], q[CALC_LIST_MAX];
    int np, nq;
    int64_t draws = 200000, seed = 1;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "p", w, 1, p, CALC_LIST_MAX, &np, e) < 0 ||
        get_nums(in, "q", w, 1, q, CALC_LIST_MAX, &nq, e) < 0 ||
        jsonio_int(in, "draws", w, 0, 1, 10000000, &draws, e) < 0 ||
        jsonio_int(in, "seed", w, 0, 0, INT64_MAX, &seed, e) < 0)
        return -1;
    if (np != nq) return err_set(e, "%s: p has %d entries and q %d; expected the same vocabulary", w, np, nq);
    double sp = 0, sq = 0;
    for (int i = 0; i < np; i++) {
        if (!(p[i] >= 0) || !(q[i] >= 0)) return err_set(e, "%s: p[%d] = %g, q[%d] = %g: expected probabilities", w, i, p[i], i, q[i]);
        sp += p[i];
        sq += q[i];
    }
    if (fabs(sp - 1) > 1e-9 || fabs(sq - 1) > 1e-9)
        return err_set(e, "%s: p sums to %g and q to %g; expected 1", w, sp, sq);
    double res[CALC_LIST_MAX];
    double mass = spec_residual(p, q, (size_t)np, res);
    cJSON *acc = cJSON_AddArrayToObject(out, "accept"), *rs = cJSON_AddArrayToObject(out, "residual");
    cJSON *am = cJSON_AddArrayToObject(out, "accepted_mass");
    for (int i = 0; i < np; i++) {
        double a = q[i] > 0 ? fmin(1, p[i] / q[i]) : 0;
        cJSON_AddItemToArray(acc, cJSON_CreateNumber(a));
        cJSON_AddItemToArray(rs, cJSON_CreateNumber(res[i]));
        cJSON_AddItemToArray(am, cJSON_CreateNumber(q[i] * a));
    }
    cJSON_AddNumberToObject(out, "rejected_mass", mass);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    double cnt[2][CALC_LIST_MAX] = {{0}};
    for (int rule = 0; rule < 2; rule++) {
        gsl_rng_set(r, (unsigned long)seed);
        for (int64_t d = 0; d < draws; d++) {
            int accepted;
            size_t x = rule == 0 ? spec_verify_exact(p, q, (size_t)np, r, &accepted, NULL)
                                 : spec_verify_resample_p(p, q, (size_t)np, r, &accepted, NULL);
            cnt[rule][x] += 1;
        }
    }
    gsl_rng_free(r);
    cJSON *fin = cJSON_AddArrayToObject(out, "final"), *bad = cJSON_AddArrayToObject(out, "final_resample_p");
    for (int i = 0; i < np; i++) {
        cJSON_AddItemToArray(fin, cJSON_CreateNumber(cnt[0][i] / (double)draws));
        cJSON_AddItemToArray(bad, cJSON_CreateNumber(cnt[1][i] / (double)draws));
    }
    cJSON_AddNumberToObject(out, "draws", (double)draws);
    return 0;
}

/* Greedy verification (003 figure 8-29): the first mismatch ends the round. */
static int calc_greedy(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "draft", "target", NULL};
    double d[CALC_LIST_MAX], t[CALC_LIST_MAX];
    int nd, nt;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "draft", w, 1, d, SPEC_M_MAX, &nd, e) < 0 ||
        get_nums(in, "target", w, 1, t, SPEC_M_MAX, &nt, e) < 0)
        return -1;
    if (nd != nt) return err_set(e, "%s: draft has %d tokens and target %d; expected one target token per draft", w, nd, nt);
    uint32_t du[SPEC_M_MAX], tu[SPEC_M_MAX];
    for (int i = 0; i < nd; i++) {
        if (!(d[i] >= 0 && t[i] >= 0 && d[i] < 4e9 && t[i] < 4e9))
            return err_set(e, "%s: token ids must be non-negative integers (draft[%d] = %g, target[%d] = %g)", w, i, d[i], i, t[i]);
        du[i] = (uint32_t)d[i];
        tu[i] = (uint32_t)t[i];
    }
    uint32_t acc = spec_verify_greedy(du, tu, (uint32_t)nd);
    cJSON_AddNumberToObject(out, "accepted", acc);
    /* the target's own token at the first mismatch (or after the last
     * draft) is emitted too */
    cJSON_AddNumberToObject(out, "emitted", acc + 1);
    return 0;
}

/* The blockwise softmax merge of FlashAttention (000 example 31.2): each
 * block keeps (numerator, denominator); merging adds them.  The wrong way
 * averages the blocks' normalised outputs. */
static int calc_merge(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "weights", "values", "blocks", NULL};
    double wt[CALC_LIST_MAX], v[CALC_LIST_MAX], bl[CALC_LIST_MAX];
    int nw, nv, nb;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "weights", w, 1, wt, CALC_LIST_MAX, &nw, e) < 0 ||
        get_nums(in, "values", w, 1, v, CALC_LIST_MAX, &nv, e) < 0 ||
        get_nums(in, "blocks", w, 1, bl, CALC_LIST_MAX, &nb, e) < 0)
        return -1;
    if (nw != nv) return err_set(e, "%s: %d weights and %d values; expected one weight per value", w, nw, nv);
    double num = 0, den = 0, sum_norm = 0;
    int pos = 0;
    cJSON *blocks = cJSON_AddArrayToObject(out, "blocks");
    for (int b = 0; b < nb; b++) {
        if (!(bl[b] >= 1) || pos + (int)bl[b] > nw)
            return err_set(e, "%s.blocks[%d]: got %g; the block sizes must split the %d weights", w, b, bl[b], nw);
        double bn = 0, bd = 0;
        for (int i = 0; i < (int)bl[b]; i++, pos++) {
            if (!(wt[pos] > 0)) return err_set(e, "%s.weights[%d]: got %g, expected a positive weight", w, pos, wt[pos]);
            bn += wt[pos] * v[pos];
            bd += wt[pos];
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "numerator", bn);
        cJSON_AddNumberToObject(o, "denominator", bd);
        cJSON_AddItemToArray(blocks, o);
        num += bn;
        den += bd;
        sum_norm += bn / bd;
    }
    if (pos != nw) return err_set(e, "%s.blocks: cover %d of the %d weights", w, pos, nw);
    double full_n = 0, full_d = 0;
    for (int i = 0; i < nw; i++) {
        full_n += wt[i] * v[i];
        full_d += wt[i];
    }
    cJSON_AddNumberToObject(out, "full", full_n / full_d);
    cJSON_AddNumberToObject(out, "full_numerator", full_n);
    cJSON_AddNumberToObject(out, "full_denominator", full_d);
    cJSON_AddNumberToObject(out, "merged", num / den);
    cJSON_AddNumberToObject(out, "naive_average", sum_norm / nb);
    return 0;
}

/* Prefix reuse (000 section 31.3): in order, each prompt is computed and
 * committed; a later one reuses the cached blocks of its longest common
 * prefix from the start, inside its tenant. */
static int calc_prefix_reuse(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "block_tokens", "prompts", NULL};
    int64_t bt = 1;
    if (jsonio_check_keys(in, w, keys, e) < 0 || jsonio_int(in, "block_tokens", w, 0, 1, 1024, &bt, e) < 0) return -1;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(in, "prompts"), *x;
    char p[512];
    jsonio_path(p, sizeof p, w, "prompts");
    int n = cJSON_GetArraySize(pr);
    if (!cJSON_IsArray(pr) || n < 1 || n > CALC_LIST_MAX) return err_set(e, "%s: expected 1 to %d prompts", p, CALC_LIST_MAX);
    PrefixConfig c = {.kv = {.capacity_bytes = 100000.0 * (double)bt, .block_tokens = (uint32_t)bt, .bytes_per_token = 1,
                             .reserve = KV_RESERVE_FINAL},
                      .namespace_seed = prefix_namespace("qwen3-8b", "", "rope"), .n_requests = (uint32_t)n};
    KvPolicy kv;
    if (prefix_new(&c, &kv, e) < 0) return err_prefix(e, "%s", w);
    Request r[CALC_LIST_MAX];
    uint32_t *ids = xcalloc((size_t)n * 1024, sizeof *ids);
    cJSON *hits = cJSON_AddObjectToObject(out, "hit_tokens");
    int i = 0, rc = 0;
    char tenants[CALC_LIST_MAX][64];
    cJSON_ArrayForEach(x, pr)
    {
        char q[600];
        jsonio_index(q, sizeof q, p, i);
        static const char *const pk[] = {"id", "token_ids", "tenant", NULL};
        const char *id = NULL, *tenant = "default";
        double t[1024];
        int nt;
        if (jsonio_expect_object(x, q, e) < 0 || jsonio_check_keys(x, q, pk, e) < 0 ||
            jsonio_str(x, "id", q, 1, &id, e) < 0 || jsonio_str(x, "tenant", q, 0, &tenant, e) < 0 ||
            get_nums(x, "token_ids", q, 1, t, 1024, &nt, e) < 0) {
            rc = -1;
            break;
        }
        for (int k = 0; k < nt; k++) ids[(size_t)i * 1024 + (size_t)k] = (uint32_t)t[k];
        prefix_req(&r[i], (uint32_t)i, ids + (size_t)i * 1024, (uint32_t)nt, (uint32_t)nt, 1);
        /* tenants by name: the first one seen is 0, the next 1, ... */
        snprintf(tenants[i], sizeof tenants[i], "%s", tenant);
        for (int k = 0; k <= i; k++)
            if (!strcmp(tenants[k], tenant)) {
                r[i].tenant = (uint32_t)k;
                break;
            }
        prefix_admit_compute(&kv, &r[i]);
        cJSON_AddNumberToObject(hits, id, r[i].prefix_hit_tokens);
        i++;
    }
    for (int k = 0; k < i; k++) kv.release(kv.ctx, &r[k]);
    kv.destroy(kv.ctx);
    free(ids);
    return rc;
}

/* ------------------------------------------------ the design board (8.6.3) */

/* The chapter's stated costs: an iteration with a prefill takes prefill_s,
 * every other (a decode or verify round of the batch) round_s. */
typedef struct BoardCost {
    double prefill_s, round_s;
} BoardCost;

static int board_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    const BoardCost *b = ctx;
    int prefill = 0;
    for (uint32_t i = 0; i < n; i++) prefill |= items[i].kind == ITEM_PREFILL;
    *out = (CostBreakdown){0};
    out->t_s = prefill ? b->prefill_s : b->round_s;
    return 0;
}

/* The engine runs `n` requests of `new_tokens` prompt tokens (what is left
 * to prefill) and `out_tokens` outputs, all at 0 ms, with speculation
 * emitting tokens_per_round tokens a round (0: none); returns the last
 * finish time in seconds, or -1. */
static double board_run(uint32_t n, uint32_t new_tokens, uint32_t out_tokens, double prefill_s, double round_s,
                        double tokens_per_round, double draft_s, Err *e)
{
    Request *reqs = xcalloc(n, sizeof *reqs);
    for (uint32_t i = 0; i < n; i++) {
        request_init(&reqs[i]);
        reqs[i].prompt_tokens = new_tokens;
        reqs[i].output_tokens = out_tokens;
    }
    BoardCost bc = {prefill_s, round_s};
    EngineConfig cfg = {0};
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = n};
    KvConfig kc = {.capacity_bytes = 0, .block_tokens = 16, .bytes_per_token = 1, .reserve = KV_RESERVE_FINAL,
                   .unbounded = 1};
    kc.capacity_bytes = (double)n * 16.0 * (double)(new_tokens + out_tokens + 16);
    double t = -1;
    if (sched_new(&sc, &cfg.sched, e) < 0) goto out;
    if (kv_pool_new(&kc, &cfg.kv, e) < 0) {
        cfg.sched.destroy(cfg.sched.ctx);
        goto out;
    }
    cfg.cost = (CostModel){.name = "board", .ctx = &bc, .iter_time = board_time};
    if (tokens_per_round > 1) {
        SpecEngineCfg sp = {.dflt = {.enabled = 1, .method = SPEC_LOOKUP, .draft_len = (uint32_t)tokens_per_round - 1,
                                     .n_counts = (uint32_t)tokens_per_round, .draft_s = draft_s},
                            .seed = 1};
        sp.dflt.counts[(int)tokens_per_round - 1] = 1;
        if (spec_policy_new(&sp, &cfg.spec, e) < 0) {
            cfg.sched.destroy(cfg.sched.ctx);
            cfg.kv.destroy(cfg.kv.ctx);
            goto out;
        }
        cfg.has_spec = 1;
    }
    Engine *eng = engine_new(reqs, n, &cfg, e);
    if (eng && engine_run(eng, e) == 0) {
        t = 0;
        for (uint32_t i = 0; i < n; i++) t = fmax(t, (double)reqs[i].t_finish_ns / 1e9);
    }
    engine_free(eng);
out:
    free(reqs);
    return t;
}

static int calc_board(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "cost_model", "kv_gib", "block_tokens", "requests",
                                       "prompt_tokens", "shared_prefix_tokens", "output_tokens", "deadline_s",
                                       "options", NULL};
    ModelDesc m;
    LinearCostCfg lc;
    cJSON *profile = NULL;
    double kv_gib = 12, deadline = 7;
    int64_t bt = 16, n = 16, prompt = 8192, shared = 6144, outt = 256;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, NULL, e) < 0 ||
        jsonio_num(in, "kv_gib", w, 1, 1e-3, 1e6, &kv_gib, e) < 0 ||
        jsonio_int(in, "block_tokens", w, 0, 1, 1024, &bt, e) < 0 ||
        jsonio_int(in, "requests", w, 1, 1, 1024, &n, e) < 0 ||
        jsonio_int(in, "prompt_tokens", w, 1, 1, 1000000, &prompt, e) < 0 ||
        jsonio_int(in, "shared_prefix_tokens", w, 0, 0, prompt - 1, &shared, e) < 0 ||
        jsonio_int(in, "output_tokens", w, 1, 1, 100000, &outt, e) < 0 ||
        jsonio_num(in, "deadline_s", w, 1, 0, 1e6, &deadline, e) < 0 || load_linear(in, w, &lc, &profile, e) < 0)
        return -1;
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(in, "options"), *o;
    char p[512];
    jsonio_path(p, sizeof p, w, "options");
    int rc = cJSON_IsObject(opts) ? 0 : err_set(e, "%s: expected an object of named options", p);
    int feasible = 0;
    cJSON_ArrayForEach(o, opts)
    {
        if (rc < 0) break;
        char q[600];
        jsonio_path(q, sizeof q, p, o->string);
        static const char *const ok[] = {"kv_dtype", "shared", "extra_mib", "prefill_s", "round_ms",
                                         "tokens_per_round", "draft_ms", "note", NULL};
        const char *kvd = "bf16";
        int sh = 0;
        double extra = 0, pre = 0, round = 0, tpr = 1, draft = 0;
        if (jsonio_expect_object(o, q, e) < 0 || jsonio_check_keys(o, q, ok, e) < 0 ||
            jsonio_str(o, "kv_dtype", q, 0, &kvd, e) < 0 || jsonio_bool(o, "shared", q, 0, &sh, e) < 0 ||
            jsonio_num(o, "extra_mib", q, 0, 0, 1e9, &extra, e) < 0 ||
            num_or_measured(o, "prefill_s", q, profile, &pre, e) < 0 ||
            num_or_measured(o, "round_ms", q, profile, &round, e) < 0 ||
            jsonio_num(o, "tokens_per_round", q, 0, 1, SPEC_M_MAX, &tpr, e) < 0 ||
            jsonio_num(o, "draft_ms", q, 0, 0, 1e6, &draft, e) < 0) {
            rc = -1;
            break;
        }
        int d = dtype_parse(kvd);
        if (d < 0 || tpr != floor(tpr) || !(pre > 0) || !(round > 0)) {
            rc = err_set(e, "%s: kv_dtype \"%s\", tokens_per_round %g, prefill_s %g, round_ms %g: expected a KV dtype, "
                            "a whole number of tokens and positive times", q, kvd, tpr, pre, round);
            break;
        }
        double k = model_kv_bytes_per_token(&m, (Dtype)d);
        double cap = kv_gib * GIB - extra * MIB;
        int adm = cap > 0 ? shared_admit_count(cap, (uint32_t)bt, k, (uint32_t)prompt, (uint32_t)outt,
                                               sh ? (uint32_t)shared : 0, (int)n, e)
                          : 0;
        if (adm < 0) {
            rc = err_prefix(e, "%s", q);
            break;
        }
        /* with the shared prefix cached, only the private part is prefilled;
         * prefill_s is the whole batch's prefill either way */
        double t = board_run((uint32_t)n, (uint32_t)(sh ? prompt - shared : prompt), (uint32_t)outt, pre,
                             round * 1e-3, tpr, draft * 1e-3, e);
        if (t < 0) {
            rc = err_prefix(e, "%s", q);
            break;
        }
        cJSON *r = cJSON_AddObjectToObject(out, o->string);
        cJSON_AddNumberToObject(r, "admitted", adm);
        cJSON_AddBoolToObject(r, "fits", adm >= n);
        cJSON_AddNumberToObject(r, "kv_mib_needed",
                                (sh ? (double)kv_blocks_for((uint64_t)shared, (uint32_t)bt) * (double)bt * k / MIB : 0) +
                                    (double)n * (double)kv_blocks_for((uint64_t)(prompt - (sh ? shared : 0) + outt - 1),
                                                                      (uint32_t)bt) * (double)bt * k / MIB +
                                    extra);
        cJSON_AddNumberToObject(r, "time_s", t);
        cJSON_AddBoolToObject(r, "on_time", t <= deadline);
        cJSON_AddBoolToObject(r, "feasible", adm >= n && t <= deadline);
        feasible += adm >= n && t <= deadline;
    }
    if (rc == 0) cJSON_AddNumberToObject(out, "feasible_options", feasible);
    cJSON_Delete(profile);
    return rc;
}

/* CUDA-graph padding (003 section 8.2): decode rows padded to the next
 * captured size. */
static int calc_graph_pad(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "captured", "rows", NULL};
    double cap[COSTWRAP_SIZES_MAX], rows[CALC_LIST_MAX];
    int nc, nr;
    if (jsonio_check_keys(in, w, keys, e) < 0 ||
        get_nums(in, "captured", w, 1, cap, COSTWRAP_SIZES_MAX, &nc, e) < 0 ||
        get_nums(in, "rows", w, 1, rows, CALC_LIST_MAX, &nr, e) < 0)
        return -1;
    CostWrapCfg c = {.n_sizes = (uint32_t)nc};
    for (int i = 0; i < nc; i++) {
        if (!(cap[i] >= 1 && cap[i] <= 1e6) || (i && cap[i] <= cap[i - 1]))
            return err_set(e, "%s.captured[%d]: got %g, expected ascending positive sizes", w, i, cap[i]);
        c.graph_sizes[i] = (uint32_t)cap[i];
    }
    for (int i = 0; i < nr; i++) {
        if (!(rows[i] >= 1 && rows[i] <= 1e6)) return err_set(e, "%s.rows[%d]: got %g, expected a positive count", w, i, rows[i]);
        char key[48];
        uint32_t pd = costwrap_padded(&c, (uint32_t)rows[i]);
        snprintf(key, sizeof key, "padded_%.0f", rows[i]);
        cJSON_AddNumberToObject(out, key, pd);
        snprintf(key, sizeof key, "padding_%.0f", rows[i]);
        cJSON_AddNumberToObject(out, key, pd - (uint32_t)rows[i]);
    }
    return 0;
}

/* KV formats (003 section 8.4): bytes per group of 32 values and the KV of
 * named lengths in each format. */
static int calc_kv_format(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "dtypes", "lengths", "requests", NULL};
    ModelDesc m;
    int64_t n = 1;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, NULL, e) < 0 ||
        jsonio_int(in, "requests", w, 0, 1, 100000, &n, e) < 0)
        return -1;
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(in, "dtypes"), *d;
    const cJSON *lens = cJSON_GetObjectItemCaseSensitive(in, "lengths"), *l;
    if (!cJSON_IsArray(dts) || !cJSON_IsObject(lens))
        return err_set(e, "%s: expected \"dtypes\": [names] and \"lengths\": {name: tokens}", w);
    cJSON_ArrayForEach(d, dts)
    {
        int dt = cJSON_IsString(d) ? dtype_parse(d->valuestring) : -1;
        if (dt < 0) return err_set(e, "%s.dtypes: expected names such as bf16, fp8, q8_0, q4_0", w);
        cJSON *o = cJSON_AddObjectToObject(out, d->valuestring);
        cJSON_AddNumberToObject(o, "bytes_per_32", dtype_bytes((Dtype)dt, 32));
        /* 256 values: a whole Q2_K super-block, eight q8_0/q4_0 blocks */
        cJSON_AddNumberToObject(o, "bytes_per_256", dtype_bytes((Dtype)dt, 256));
        cJSON_AddNumberToObject(o, "bits_per_value", dtype_bytes((Dtype)dt, 256) * 8 / 256);
        double k = model_kv_bytes_per_token(&m, (Dtype)dt);
        cJSON_ArrayForEach(l, lens)
        {
            if (!cJSON_IsNumber(l) || !(l->valuedouble >= 1))
                return err_set(e, "%s.lengths.%s: expected a positive token count", w, l->string);
            char key[96];
            snprintf(key, sizeof key, "%s_mib", l->string);
            cJSON_AddNumberToObject(o, key, l->valuedouble * k / MIB);
            snprintf(key, sizeof key, "%s_gib_all", l->string);
            cJSON_AddNumberToObject(o, key, (double)n * l->valuedouble * k / GIB);
        }
    }
    return 0;
}

/* LoRA adapter sizes (003 section 8.2, issue 18's lora.h). */
static int calc_lora(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "rank", "targets", "dtype", "adapters", NULL};
    ModelDesc m;
    int64_t rank = 16, n = 100;
    const char *targets = "q,v", *dt = "bf16";
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, NULL, e) < 0 ||
        jsonio_int(in, "rank", w, 0, 1, 4096, &rank, e) < 0 || jsonio_str(in, "targets", w, 0, &targets, e) < 0 ||
        jsonio_str(in, "dtype", w, 0, &dt, e) < 0 || jsonio_int(in, "adapters", w, 0, 1, LORA_ADAPTERS_MAX, &n, e) < 0)
        return -1;
    LoraCfg c = {.rank = (uint32_t)rank, .adapters = (uint32_t)n};
    char p[300];
    jsonio_path(p, sizeof p, w, "targets");
    if (lora_targets_parse(targets, p, &c.targets, e) < 0) return -1;
    int d = dtype_parse(dt);
    if (d < 0) return err_set(e, "%s.dtype: got \"%s\", expected bf16, fp16, fp8 or fp32", w, dt);
    c.dtype = (Dtype)d;
    double b = lora_adapter_bytes(&m, &c);
    cJSON_AddNumberToObject(out, "adapter_mib", b / MIB);
    cJSON_AddNumberToObject(out, "all_gib", b * (double)n / GIB);
    return 0;
}

/* Weight offload (003 section 8.4, exercise 8-5; issue 18's offload.h). */
static int calc_offload(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "every", "buffers", "links", "steps",
                                       "state_mib", NULL};
    ModelDesc m;
    int64_t every = 4, steps = 255;
    double bufs[8], states[8];
    int nb, ns;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, NULL, e) < 0 ||
        jsonio_int(in, "every", w, 0, 1, 1024, &every, e) < 0 || jsonio_int(in, "steps", w, 0, 1, 10000000, &steps, e) < 0 ||
        get_nums(in, "buffers", w, 1, bufs, 8, &nb, e) < 0 || get_nums(in, "state_mib", w, 1, states, 8, &ns, e) < 0)
        return -1;
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(in, "links"), *l;
    if (!cJSON_IsArray(links) || cJSON_GetArraySize(links) < 1)
        return err_set(e, "%s.links: expected link names such as [\"pcie_gen5_x16\", \"nvlink_c2c\"]", w);
    for (int j = 0; j < nb; j++) {
        if (!(bufs[j] >= 1 && bufs[j] <= 64 && bufs[j] == floor(bufs[j])))
            return err_set(e, "%s.buffers[%d]: got %g, expected an integer in [1, 64]", w, j, bufs[j]);
        OffloadCfg c = {.every = (uint32_t)every, .buffers = (uint32_t)bufs[j], .link_bytes_per_s = 64e9};
        OffloadPlan pl;
        if (offload_plan(&m, 1, &c, &pl, e) < 0) return err_prefix(e, "%s", w);
        char key[32];
        snprintf(key, sizeof key, "buffers_%d", (int)bufs[j]);
        cJSON *o = cJSON_AddObjectToObject(out, key);
        cJSON_AddNumberToObject(o, "freed_mib", pl.freed_bytes / MIB);
        cJSON_AddNumberToObject(o, "net_mib", pl.net_bytes / MIB);
        cJSON_AddNumberToObject(o, "layers", pl.layers);
        cJSON_AddNumberToObject(o, "copy_gb", pl.layers * pl.layer_bytes / 1e9);
        for (int k = 0; k < ns; k++) {
            if (!(states[k] > 0)) return err_set(e, "%s.state_mib[%d]: got %g, expected a size", w, k, states[k]);
            snprintf(key, sizeof key, "more_states_%.0f", states[k]);
            cJSON_AddNumberToObject(o, key, floor(pl.net_bytes / MIB / states[k]));
        }
    }
    int i = 0;
    cJSON_ArrayForEach(l, links)
    {
        char p[300];
        jsonio_index(p, sizeof p, w, i++);
        if (!cJSON_IsString(l)) return err_set(e, "%s: expected a link name", p);
        double bw = offload_link_parse(l->valuestring, p, e);
        if (bw < 0) return -1;
        OffloadCfg c = {.every = (uint32_t)every, .buffers = 1, .link_bytes_per_s = bw};
        OffloadPlan pl;
        if (offload_plan(&m, 1, &c, &pl, e) < 0) return err_prefix(e, "%s", w);
        cJSON *o = cJSON_AddObjectToObject(out, l->valuestring);
        cJSON_AddNumberToObject(o, "copy_ms", pl.copy_s * 1e3);
        cJSON_AddNumberToObject(o, "steps_s", pl.copy_s * (double)steps);
    }
    return 0;
}

/* The value of keeping a cached prefix (003 figure 8-22, exercise 8-4;
 * issue 18's offload_cache_value). */
static int calc_cache_value(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", "kv_dtype", "peak_tflops", "efficiency", "link",
                                       "prefixes", NULL};
    ModelDesc m;
    Dtype dt;
    double peak = 503.8, eff = 0.62;
    const char *link = "pcie_gen5_x16";
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, &dt, e) < 0 ||
        jsonio_num(in, "peak_tflops", w, 0, 1e-3, 1e6, &peak, e) < 0 ||
        jsonio_num(in, "efficiency", w, 0, 1e-6, 1, &eff, e) < 0 || jsonio_str(in, "link", w, 0, &link, e) < 0)
        return -1;
    char p[300];
    jsonio_path(p, sizeof p, w, "link");
    double bw = offload_link_parse(link, p, e);
    if (bw < 0) return -1;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(in, "prefixes"), *x;
    if (!cJSON_IsObject(pr)) return err_set(e, "%s.prefixes: expected {NAME: {\"tokens\": T, \"p_hit\": P}}", w);
    cJSON_ArrayForEach(x, pr)
    {
        char q[600];
        jsonio_path(q, sizeof q, w, x->string);
        static const char *const pk[] = {"tokens", "p_hit", NULL};
        int64_t t = 0;
        double ph = 0.5;
        if (jsonio_expect_object(x, q, e) < 0 || jsonio_check_keys(x, q, pk, e) < 0 ||
            jsonio_int(x, "tokens", q, 1, 1, 10000000, &t, e) < 0 || jsonio_num(x, "p_hit", q, 0, 0, 1, &ph, e) < 0)
            return -1;
        CacheValue cv;
        offload_cache_value(&m, model_kv_bytes_per_token(&m, dt), (double)t, ph, peak * 1e12 * eff, bw, &cv);
        cJSON *o = cJSON_AddObjectToObject(out, x->string);
        cJSON_AddNumberToObject(o, "mib", cv.bytes / MIB);
        cJSON_AddNumberToObject(o, "recompute_ms", cv.recompute_s * 1e3);
        cJSON_AddNumberToObject(o, "fetch_ms", cv.fetch_s * 1e3);
        cJSON_AddNumberToObject(o, "value_ms", cv.value_s * 1e3);
        cJSON_AddNumberToObject(o, "value_ms_per_mib", cv.value_s_per_mib * 1e3);
        cJSON_AddNumberToObject(o, "breakeven_p", cv.breakeven_p);
    }
    return 0;
}

typedef struct Calc {
    const char *kind;
    int (*fn)(const cJSON *in, const char *w, cJSON *out, Err *e);
} Calc;

/* Model weights (003 section 8.4, issue 17's quantised formats): the
 * bundled model's file size, its quantisation metadata and the rest. */
static int calc_model_size(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "model", NULL};
    ModelDesc m;
    if (jsonio_check_keys(in, w, keys, e) < 0 || load_model(in, w, &m, NULL, e) < 0) return -1;
    cJSON_AddNumberToObject(out, "params_b", (double)m.params / 1e9);
    cJSON_AddNumberToObject(out, "params_active_b", (double)m.params_active / 1e9);
    cJSON_AddNumberToObject(out, "weights_gib", m.weights_total_bytes / GIB);
    cJSON_AddNumberToObject(out, "meta_gib", m.weights_meta_bytes / GIB);
    cJSON_AddNumberToObject(out, "codes_gib", (m.weights_total_bytes - m.weights_meta_bytes) / GIB);
    return 0;
}

/* Linear-attention (KDA) state snapshots (003 section 8.3, figure 8-19;
 * issue 17's prefix_snapshot_restore): a prefix match of `matched` tokens
 * restores from the last snapshot at or below it and recomputes the rest;
 * a prefix of `prefix_tokens` holds prefix_tokens / interval snapshots of
 * `snapshot_mib` each. */
static int calc_snapshots(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "matched", "prefix_tokens", "snapshot_mib", "intervals", NULL};
    int64_t matched = 0, prefix = 0;
    double mib = 0;
    if (jsonio_check_keys(in, w, keys, e) < 0 || jsonio_int(in, "matched", w, 1, 0, INT64_C(1) << 40, &matched, e) < 0 ||
        jsonio_int(in, "prefix_tokens", w, 1, 0, INT64_C(1) << 40, &prefix, e) < 0 ||
        jsonio_num(in, "snapshot_mib", w, 1, 0, 1e9, &mib, e) < 0)
        return -1;
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(in, "intervals"), *x;
    if (!cJSON_IsArray(iv) || cJSON_GetArraySize(iv) < 1)
        return err_set(e, "%s.intervals: expected [tokens between snapshots, ...]", w);
    cJSON_ArrayForEach(x, iv)
    {
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 1e9 || x->valuedouble != floor(x->valuedouble))
            return err_set(e, "%s.intervals: expected whole token counts >= 0 (0: no snapshots), got %g", w,
                           cJSON_IsNumber(x) ? x->valuedouble : NAN);
        uint32_t i = (uint32_t)x->valuedouble;
        uint64_t rc = 0, from = prefix_snapshot_restore((uint64_t)matched, i, &rc);
        double count = i ? (double)((uint64_t)prefix / i) : 0;
        char key[32];
        snprintf(key, sizeof key, "every_%u", i);
        cJSON *o = cJSON_AddObjectToObject(out, key);
        cJSON_AddNumberToObject(o, "restore_from", (double)from);
        cJSON_AddNumberToObject(o, "recompute", (double)rc);
        cJSON_AddNumberToObject(o, "snapshots", count);
        cJSON_AddNumberToObject(o, "snapshots_mib", count * mib);
    }
    return 0;
}

/* Amdahl's law over a task's parts (003 section 8.6, exercise 8-8; issue
 * 18's tasks_amdahl): each part alone halved, and one part `speedup` times
 * faster with `added_s` of new work. */
static int calc_amdahl(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "parts", "speedup_part", "speedup", "added_s", NULL};
    const char *sp = NULL;
    double s = 1, add = 0, total = 0;
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(in, "parts"), *p;
    if (jsonio_check_keys(in, w, keys, e) < 0 || jsonio_str(in, "speedup_part", w, 0, &sp, e) < 0 ||
        jsonio_num(in, "speedup", w, 0, 1e-6, 1e9, &s, e) < 0 || jsonio_num(in, "added_s", w, 0, 0, 1e12, &add, e) < 0)
        return -1;
    if (!cJSON_IsObject(parts) || !parts->child) return err_set(e, "%s.parts: expected {name: seconds, ...}", w);
    cJSON_ArrayForEach(p, parts)
    {
        if (!cJSON_IsNumber(p) || !(p->valuedouble >= 0) || p->valuedouble > 1e12)
            return err_set(e, "%s.parts.%s: expected seconds >= 0", w, p->string);
        total += p->valuedouble;
    }
    if (!(total > 0)) return err_set(e, "%s.parts: the parts sum to 0 s", w);
    cJSON_AddNumberToObject(out, "total_s", total);
    const cJSON *found = NULL;
    cJSON_ArrayForEach(p, parts)
    {
        cJSON *o = cJSON_AddObjectToObject(out, p->string);
        double f = p->valuedouble / total;
        cJSON_AddNumberToObject(o, "fraction", f);
        cJSON_AddNumberToObject(o, "halved_total_s", total / tasks_amdahl(f, 2));
        if (sp && !strcmp(sp, p->string)) found = p;
    }
    if (sp) {
        if (!found) return err_set(e, "%s.speedup_part: got \"%s\", expected the name of one of \"parts\"", w, sp);
        double nt = total / tasks_amdahl(found->valuedouble / total, s) + add;
        cJSON_AddNumberToObject(out, "new_total_s", nt);
        cJSON_AddNumberToObject(out, "net_speedup", total / nt);
    }
    return 0;
}

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

static cJSON *compute_run(const char *path, const char *arg, Err *e)
{
    Scenario s;
    if (scenario_load_file(path, 0, 0, &s, e) < 0) return NULL;
    if (arg && !strcmp(arg, "roofline")) s.cost_kind = COST_ROOFLINE;
    Cluster *cl = cluster_new(&s, NULL, e);
    if (!cl || cluster_run(cl, e) < 0) {
        cluster_free(cl);
        scenario_free(&s);
        return NULL;
    }
    Slo slo_table[METRICS_CLS_MAX];
    MetricsCfg mc;
    RunData rd;
    Summary sum;
    cluster_summarize(cl, &s, slo_table, &mc, &rd, &sum);
    cJSON *root = report_json(&mc, &rd, &sum, 1);
    cJSON *sc = cJSON_CreateObject();
    scenario_to_json(&s, sc);
    cJSON_AddItemToObject(root, "scenario", sc);
    cluster_free(cl);
    scenario_free(&s);
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

/* One run of a scenario text: its report's summary numbers. */
static int sweep_one(const char *text, const char *name, double *completion, double *goodput, Err *e)
{
    Scenario s;
    if (scenario_load_text(text, name, 0, 0, &s, e) < 0) return -1;
    Cluster *cl = cluster_new(&s, NULL, e);
    int rc = -1;
    if (cl && cluster_run(cl, e) == 0) {
        Slo slo_table[METRICS_CLS_MAX];
        MetricsCfg mc;
        RunData rd;
        Summary sum;
        cluster_summarize(cl, &s, slo_table, &mc, &rd, &sum);
        cJSON *root = report_json(&mc, &rd, &sum, 0);
        rc = repro_get(root, "summary.throughput.requests_per_s", completion, e) < 0 ||
                     repro_get(root, "summary.goodput.requests_per_s", goodput, e) < 0
                 ? -1
                 : 0;
        cJSON_Delete(root);
    }
    cluster_free(cl);
    scenario_free(&s);
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

/* ------------------------------------------------------------ paths */

static int get_one(const cJSON *doc, const char *expr, size_t len, double *out, Err *e)
{
    const cJSON *cur = doc;
    size_t i = 0;
    char tok[128];
    while (i < len) {
        if (expr[i] == '.') i++;
        size_t j = i;
        if (expr[i] == '[') {
            size_t c = i + 1;
            while (c < len && expr[c] != ']') c++;
            if (c >= len || c - i - 1 >= sizeof tok) break;
            memcpy(tok, expr + i + 1, c - i - 1);
            tok[c - i - 1] = 0;
            char *end;
            long idx = strtol(tok, &end, 10);
            if (!*end && cJSON_IsArray(cur)) {
                cur = cJSON_GetArrayItem(cur, (int)idx);
            } else {
                const cJSON *x, *hit = NULL;
                cJSON_ArrayForEach(x, cur)
                {
                    const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
                    if (cJSON_IsString(id) && !strcmp(id->valuestring, tok)) hit = x;
                }
                cur = hit;
            }
            i = c + 1;
        } else {
            while (j < len && expr[j] != '.' && expr[j] != '[') j++;
            if (j - i >= sizeof tok || j == i) break;
            memcpy(tok, expr + i, j - i);
            tok[j - i] = 0;
            cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
            i = j;
        }
        if (!cur) break;
    }
    if (i < len || !cur) return err_set(e, "no value at \"%.*s\" (stopped at \"%.*s\")", (int)len, expr, (int)(len - (i < len ? i : len)), expr + (i < len ? i : len));
    if (cJSON_IsBool(cur)) {
        *out = cJSON_IsTrue(cur);
        return 0;
    }
    if (!cJSON_IsNumber(cur)) return err_set(e, "\"%.*s\" is not a number", (int)len, expr);
    *out = cur->valuedouble;
    return 0;
}

/* expr := term (" + " | " - " term)*, term := factor (" * " | " / " factor)*,
 * factor := number | path | "(" expr ")"; operators stand between spaces
 * so that a path may hold '-'. */
typedef struct ExprCur {
    const cJSON *doc;
    const char *s;
    Err *e;
} ExprCur;

static int expr_sum(ExprCur *c, double *out);

static void expr_skip(ExprCur *c)
{
    while (*c->s == ' ') c->s++;
}

static int expr_factor(ExprCur *c, double *out)
{
    expr_skip(c);
    if (*c->s == '(') {
        c->s++;
        if (expr_sum(c, out) < 0) return -1;
        expr_skip(c);
        if (*c->s != ')') return err_set(c->e, "expected ')' at \"%s\"", c->s);
        c->s++;
        return 0;
    }
    size_t n = 0;
    while (c->s[n] && c->s[n] != ' ' && c->s[n] != ')') n++;
    if (!n) return err_set(c->e, "expected a path or a number at \"%s\"", c->s);
    char *end;
    double v = strtod(c->s, &end);
    if (end == c->s + n) {
        *out = v;
    } else if (get_one(c->doc, c->s, n, out, c->e) < 0) {
        return -1;
    }
    c->s += n;
    return 0;
}

static int expr_term(ExprCur *c, double *out)
{
    if (expr_factor(c, out) < 0) return -1;
    for (;;) {
        expr_skip(c);
        char op = *c->s;
        if ((op != '*' && op != '/') || c->s[1] != ' ') return 0;
        c->s++;
        double b;
        if (expr_factor(c, &b) < 0) return -1;
        *out = op == '*' ? *out * b : *out / b;
    }
}

static int expr_sum(ExprCur *c, double *out)
{
    if (expr_term(c, out) < 0) return -1;
    for (;;) {
        expr_skip(c);
        char op = *c->s;
        if ((op != '+' && op != '-') || c->s[1] != ' ') return 0;
        c->s++;
        double b;
        if (expr_term(c, &b) < 0) return -1;
        *out = op == '+' ? *out + b : *out - b;
    }
}

int repro_get(const cJSON *doc, const char *expr, double *out, Err *e)
{
    ExprCur c = {doc, expr, e};
    if (expr_sum(&c, out) < 0) return -1;
    expr_skip(&c);
    if (*c.s) return err_set(e, "unexpected \"%s\" in \"%s\"", c.s, expr);
    return 0;
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
