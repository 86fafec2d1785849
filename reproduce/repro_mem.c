/*
 * repro_mem.c -- the memory calculators of `servesim reproduce`
 * (repro_calc_int.h): KV capacity and admission through the KV pool
 * (kv.h), paged blocks and copy-on-write branches, prefix reuse through the
 * prefix cache (prefix.h), KV formats, model sizes and snapshots
 * (model.h), LoRA adapters (lora.h), weight offload and cache admission
 * values (offload.h).  Sizes in MiB/GiB are binary, GB decimal, as in the
 * chapter.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "lora.h"
#include "offload.h"
#include "prefix.h"
#include "repro_calc_int.h"

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
int shared_admit_count(double cap_bytes, uint32_t block, double k, uint32_t prompt, uint32_t output, uint32_t shared,
                       int limit, Err *e)
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
        if (!kv_admit_whole_prompt(&kv, &r[n])) break;
    }
    for (int i = 0; i < n; i++) kv.release(kv.ctx, &r[i]);
    kv.destroy(kv.ctx);
    free(r);
    free(ids);
    return n;
}

/* KV capacity of the pool (003 section 8.1, 8.3): per-request
 * reservations and how many requests a pool admits. */
int calc_kv_capacity(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_paged(const cJSON *in, const char *w, cJSON *out, Err *e)
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
            kv_admit_whole_prompt(&kv, &r[i]);
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
int calc_branches(const cJSON *in, const char *w, cJSON *out, Err *e)
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
        kv_admit_whole_prompt(&kv, &r[s]);
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

/* Prefix reuse (000 section 31.3): in order, each prompt is computed and
 * committed; a later one reuses the cached blocks of its longest common
 * prefix from the start, inside its tenant. */
int calc_prefix_reuse(const cJSON *in, const char *w, cJSON *out, Err *e)
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
        kv_admit_whole_prompt(&kv, &r[i]);
        cJSON_AddNumberToObject(hits, id, r[i].prefix_hit_tokens);
        i++;
    }
    for (int k = 0; k < i; k++) kv.release(kv.ctx, &r[k]);
    kv.destroy(kv.ctx);
    free(ids);
    return rc;
}

/* KV formats (003 section 8.4): bytes per group of 32 values and the KV of
 * named lengths in each format. */
int calc_kv_format(const cJSON *in, const char *w, cJSON *out, Err *e)
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

/* Model weights (003 section 8.4, issue 17's quantised formats): the
 * bundled model's file size, its quantisation metadata and the rest. */
int calc_model_size(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_snapshots(const cJSON *in, const char *w, cJSON *out, Err *e)
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

/* LoRA adapter sizes (003 section 8.2, issue 18's lora.h). */
int calc_lora(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_offload(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_cache_value(const cJSON *in, const char *w, cJSON *out, Err *e)
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
