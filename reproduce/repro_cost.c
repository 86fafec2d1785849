/*
 * repro_cost.c -- the step-time calculators of `servesim reproduce`
 * (repro_calc_int.h): bytes read per token and the crossover batches, the
 * chapter's step model and the calibrated roofline beside it (cost.h),
 * FLOPs and bytes of prefill, decode and verify batches, CUDA-graph padding
 * (costwrap.h), and the design board run through the engine itself.
 */
#include <math.h>
#include <string.h>

#include "costwrap.h"
#include "engine.h"
#include "jsonio.h"
#include "kv.h"
#include "paths.h"
#include "repro_calc_int.h"
#include "sched.h"
#include "spec.h"

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

/* Bytes read per output token d(b, L) = Dw / b + L k and the crossover
 * batch bKV (003 figure 8-3, exercise 8-1). */
int calc_read_per_token(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_step(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_flops(const cJSON *in, const char *w, cJSON *out, Err *e)
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

/* The board's requests, streamed into the engine: n alike, all at 0 ms;
 * the last finish kept as they leave. */
typedef struct BoardSrc {
    uint32_t n, made;
    uint32_t prompt, out;
    int64_t last_ns;
} BoardSrc;

static int board_pull(void *ctx, Request *r, Err *e)
{
    (void)e;
    BoardSrc *b = ctx;
    if (b->made >= b->n) return 0;
    request_init(r);
    r->prompt_tokens = b->prompt;
    r->output_tokens = b->out;
    b->made++;
    return 1;
}

static void board_retire(void *ctx, const Request *r, const int64_t *tt)
{
    (void)tt;
    BoardSrc *b = ctx;
    if (r->t_finish_ns > b->last_ns) b->last_ns = r->t_finish_ns;
}

/* The engine runs `n` requests of `new_tokens` prompt tokens (what is left
 * to prefill) and `out_tokens` outputs, all at 0 ms, with speculation
 * emitting tokens_per_round tokens a round (0: none); returns the last
 * finish time in seconds, or -1. */
static double board_run(uint32_t n, uint32_t new_tokens, uint32_t out_tokens, double prefill_s, double round_s,
                        double tokens_per_round, double draft_s, Err *e)
{
    BoardSrc src = {.n = n, .prompt = new_tokens, .out = out_tokens, .last_ns = 0};
    EngineConfig cfg = {0};
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = n};
    KvConfig kc = {.capacity_bytes = 0, .block_tokens = 16, .bytes_per_token = 1, .reserve = KV_RESERVE_FINAL,
                   .unbounded = 1};
    kc.capacity_bytes = (double)n * 16.0 * (double)(new_tokens + out_tokens + 16);
    double t = -1;
    if (sched_new(&sc, &cfg.sched, e) < 0) return -1;
    if (kv_pool_new(&kc, &cfg.kv, e) < 0) {
        cfg.sched.destroy(cfg.sched.ctx);
        return -1;
    }
    if (cost_phase_new(prefill_s, round_s, &cfg.cost, e) < 0) {
        cfg.sched.destroy(cfg.sched.ctx);
        cfg.kv.destroy(cfg.kv.ctx);
        return -1;
    }
    if (tokens_per_round > 1) {
        SpecEngineCfg sp = {.dflt = {.enabled = 1, .method = SPEC_LOOKUP, .draft_len = (uint32_t)tokens_per_round - 1,
                                     .n_counts = (uint32_t)tokens_per_round, .draft_s = draft_s},
                            .seed = 1};
        sp.dflt.counts[(int)tokens_per_round - 1] = 1;
        if (spec_policy_new(&sp, &cfg.spec, e) < 0) {
            cfg.sched.destroy(cfg.sched.ctx);
            cfg.kv.destroy(cfg.kv.ctx);
            cfg.cost.destroy(cfg.cost.ctx);
            return -1;
        }
        cfg.has_spec = 1;
    }
    Engine *eng = engine_new_stream(&cfg, board_pull, &src, board_retire, &src, e);
    if (eng && engine_run(eng, e) == 0) t = (double)src.last_ns / 1e9;
    engine_free(eng);
    return t;
}

int calc_board(const cJSON *in, const char *w, cJSON *out, Err *e)
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
int calc_graph_pad(const cJSON *in, const char *w, cJSON *out, Err *e)
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
