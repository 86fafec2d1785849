/*
 * costcmd.c -- `servesim cost`: the calibrated cost model, queried directly.
 *
 *   servesim cost --hardware NAME [--profile P] [--dtype T] --gemm M,N,K [--json]
 *   servesim cost --hardware NAME [--profile P] --model NAME --batch C:H[,C:H...]
 *                 [--tp N] [--dtype T] [--kv-dtype T] [--json]
 *
 * Owns only argument parsing and printing: the GEMM figure is the
 * profile's (profile_gemm_time), the iteration figure is the roofline's
 * (cost_roofline_new), the same code the simulator runs.  Times print in
 * ms; JSON keys end in _ms.
 */
#include "costcmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "jsonio.h"

static const char costcmd_usage[] =
    "usage: servesim cost --hardware NAME [--profile P] [--dtype T] --gemm M,N,K [--json]\n"
    "       servesim cost --hardware NAME [--profile P] --model NAME --batch C:H[:v][,C:H...]\n"
    "                     [--tp N] [--dtype T] [--kv-dtype T] [--json]\n"
    "\n"
    "Prints what the calibrated cost model predicts.\n"
    "  --hardware NAME   a name in models/hardware/ (h100-sxm, ...) or a .json path; its bundled\n"
    "                    profile (models/profiles/NAME.json) is used when there is one\n"
    "  --profile P       another profile (name in models/profiles/ or .json path), e.g. an\n"
    "                    engine's own (h200-sxm-trtllm, b200-vllm, ...), or 'none' for the\n"
    "                    hardware file's flat efficiencies\n"
    "  --dtype T         compute dtype: bf16 (default), fp16, fp8, fp8_block or nvfp4; it picks\n"
    "                    the GEMM class (gemm_bf16, gemm_fp8, gemm_fp8_block, gemm_nvfp4)\n"
    "  --gemm M,N,K      one GEMM: M token rows, N output features, K input features (as in\n"
    "                    NVIDIA's measured tables); prints latency_ms\n"
    "  --model NAME      a model in models/ (qwen3-8b, ...) or a .json path\n"
    "  --batch C:H,...   one iteration: per request C new tokens over H cached tokens; C = 1\n"
    "                    is a decode step, C > 1 a prefill chunk that completes its prompt\n"
    "                    (every request samples one token); C:H:v is a speculative verify of\n"
    "                    C = m + 1 positions that are all sampled (the LM head C times);\n"
    "                    prints the time and its breakdown\n"
    "  --tp N            tensor-parallel degree (default 1)\n"
    "  --ep N, --moe-tp N, --attention-dp N\n"
    "                    MoE layout: experts over N GPUs, each expert's FFN over N, N attention\n"
    "                    replicas of --tp GPUs whose tokens meet in the MoE layers (the batch is\n"
    "                    one replica's; ep x moe-tp = tp x attention-dp)\n"
    "  --kv-dtype T      KV cache dtype: bf16 (default), fp16, fp8, q8_0, q4_0\n"
    "  --json            JSON instead of text\n"
    "A shape outside the profile's measured grid is reported with how far outside it lies.\n";

static int costcmd_bad(const char *msg, const char *arg)
{
    fprintf(stderr, "servesim cost: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", costcmd_usage);
    return 2;
}

static int costcmd_fail(const Err *e)
{
    fprintf(stderr, "servesim cost: %s\n", e->msg);
    return 1;
}

/* A whole number in [1, max]. */
static int costcmd_count(const char *s, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 1) || v > max || v != floor(v)) return -1;
    *out = v;
    return (int)(end - s);
}

static int costcmd_gemm_dims(const char *s, double d[3])
{
    const char *p = s;
    for (int i = 0; i < 3; i++) {
        int used = costcmd_count(p, 1e9, &d[i]);
        if (used < 0) return -1;
        p += used;
        if (i < 2 && *p++ != ',') return -1;
    }
    return *p ? -1 : 0;
}

/* "C:H,C:H,..." into a freshly allocated item array. */
static BatchItem *costcmd_batch(const char *s, uint32_t *n_out)
{
    uint32_t n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    BatchItem *it = xcalloc(n, sizeof *it);
    const char *p = s;
    for (uint32_t i = 0; i < n; i++) {
        double c, h = 0;
        int used = costcmd_count(p, 1e7, &c);
        if (used < 0) break;
        p += used;
        if (*p != ':') break;
        p++;
        char *end;
        errno = 0;
        h = strtod(p, &end);
        if (end == p || errno || !(h >= 0) || h > 1e9 || h != floor(h)) break;
        p = end;
        it[i] = (BatchItem){.req = i, .c = (uint32_t)c, .h = (uint32_t)h, .kind = c > 1 ? ITEM_PREFILL : ITEM_DECODE,
                            .samples = 1};
        /* C:H:v -- a speculative verify of C = m + 1 positions, every one
         * sampled (the LM head runs C times) */
        if (!strncmp(p, ":v", 2) && (p[2] == ',' || p[2] == '\0')) {
            it[i].kind = ITEM_VERIFY;
            p += 2;
        }
        if (i + 1 == n) {
            if (*p) break;
            *n_out = n;
            return it;
        }
        if (*p++ != ',') break;
    }
    free(it);
    return NULL;
}

typedef struct CostCmdArgs {
    const char *hardware, *profile, *model, *gemm, *batch;
    int dtype, kv_dtype, tp, json;
    int ep, moe_tp, attn_dp; /* MoE layout (0 = not given) */
} CostCmdArgs;

static void costcmd_ex_json(cJSON *o, const CostExtrap *x, int has)
{
    if (!has) return;
    cJSON_AddBoolToObject(o, "extrapolated", x->outside > 0);
    jsonio_add_num(o, "extrapolation_ratio", x->worst_ratio);
    if (x->outside) cJSON_AddStringToObject(o, "extrapolation", x->worst);
    if (x->fallback[0]) cJSON_AddStringToObject(o, "fallback", x->fallback);
}

static int costcmd_print_json(cJSON *o)
{
    char *txt = cJSON_Print(o);
    cJSON_Delete(o);
    if (!txt) return 1;
    puts(txt);
    cJSON_free(txt);
    return 0;
}

static int costcmd_gemm(const CostCmdArgs *a, const HwDesc *hw)
{
    double d[3];
    if (costcmd_gemm_dims(a->gemm, d) < 0)
        return costcmd_bad("--gemm needs M,N,K: three whole numbers >= 1", a->gemm);
    const int op = profile_gemm_op((Dtype)a->dtype);
    double feat[PF_COUNT], f, b, ratio = 1, t, in_b, w_b, out_b;
    profile_gemm_bytes(op, &in_b, &w_b, &out_b);
    profile_gemm_shape(d[0], d[1], d[2], in_b, w_b, out_b, feat, &f, &b);
    const char *how;
    if (hw->profile.present && hw->profile.op[op].present) {
        t = profile_gemm_time(&hw->profile, op, d[0], d[1], d[2], &ratio);
        how = hw->profile_name;
    } else if (hw->profile.present) {
        fprintf(stderr, "servesim cost: profile %s has no %s model (try --profile none for the hardware file's "
                        "roofline)\n", hw->profile_name, profile_op_name(op));
        return 1;
    } else {
        /* No profile: the hardware file's roofline for one GEMM. */
        if (!(hw->peak_flops[a->dtype] > 0)) {
            fprintf(stderr, "servesim cost: hardware %s: no peak FLOP/s for %s\n", hw->name, dtype_name(a->dtype));
            return 1;
        }
        double tc = f / (hw->peak_flops[a->dtype] * effcurve_at(&hw->gemm_compute_eff, d[0]));
        double tm = b / (hw->mem_bw_bytes_per_s * hw->mem_eff);
        t = tc > tm ? tc : tm;
        how = "none (hardware efficiencies)";
    }
    if (a->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "hardware", hw->name);
        cJSON_AddStringToObject(o, "profile", how);
        cJSON_AddStringToObject(o, "dtype", dtype_name(a->dtype));
        jsonio_add_num(o, "m", d[0]);
        jsonio_add_num(o, "n", d[1]);
        jsonio_add_num(o, "k", d[2]);
        jsonio_add_num(o, "latency_ms", t * 1e3);
        jsonio_add_num(o, "flops", f);
        jsonio_add_num(o, "bytes", b);
        jsonio_add_num(o, "tflops", f / t / 1e12);
        cJSON_AddBoolToObject(o, "extrapolated", ratio > 1 + 1e-9);
        jsonio_add_num(o, "extrapolation_ratio", ratio);
        return costcmd_print_json(o);
    }
    printf("GEMM %s m=%.0f n=%.0f k=%.0f on %s (profile: %s)\n", dtype_name(a->dtype), d[0], d[1], d[2], hw->name,
           how);
    printf("  latency_ms  %.6g\n", t * 1e3);
    printf("  flops       %.6g  (%.1f TFLOP/s achieved)\n", f, f / t / 1e12);
    printf("  bytes       %.6g  (%.1f GB/s achieved)\n", b, b / t / 1e9);
    if (ratio > 1 + 1e-9) printf("  extrapolated: %.3gx outside the measured grid\n", ratio);
    return 0;
}

static int costcmd_iter(const CostCmdArgs *a, HwDesc *hw)
{
    Err e = {0};
    ModelDesc m;
    if (model_load(a->model, &m, &e) < 0) return costcmd_fail(&e);
    uint32_t n = 0;
    BatchItem *items = costcmd_batch(a->batch, &n);
    if (!items) return costcmd_bad("--batch needs C:H[:v][,C:H...] with whole numbers C >= 1, H >= 0", a->batch);
    RooflineCfg cfg = {.model = m, .hw = *hw, .tp = a->tp, .compute_dtype = (Dtype)a->dtype,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&m, (Dtype)a->kv_dtype),
                       .act_bytes = dtype_bytes(DTYPE_BF16, 1),
                       .ep = a->ep, .moe_tp = a->moe_tp, .attn_dp = a->attn_dp};
    CostModel cm;
    if (cost_roofline_new(&cfg, &cm, &e) < 0) {
        free(items);
        return costcmd_fail(&e);
    }
    CostBreakdown cb;
    int rc = cm.iter_time(cm.ctx, items, n, &cb);
    CostExtrap x;
    int has = cost_extrapolation(&cm, &x) == 0;
    cm.destroy(cm.ctx);
    if (rc != 0) {
        free(items);
        fprintf(stderr, "servesim cost: the cost model failed on this batch\n");
        return 1;
    }
    const char *how = hw->profile.present ? hw->profile_name : "none (hardware efficiencies)";
    if (a->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "hardware", hw->name);
        cJSON_AddStringToObject(o, "profile", how);
        cJSON_AddStringToObject(o, "model", m.name);
        cJSON_AddNumberToObject(o, "tp", a->tp);
        cJSON_AddStringToObject(o, "dtype", dtype_name(a->dtype));
        cJSON_AddStringToObject(o, "kv_dtype", dtype_name(a->kv_dtype));
        cJSON *arr = cJSON_AddArrayToObject(o, "batch");
        for (uint32_t i = 0; arr && i < n; i++) {
            cJSON *it = cJSON_CreateObject();
            cJSON_AddNumberToObject(it, "c", items[i].c);
            cJSON_AddNumberToObject(it, "h", items[i].h);
            cJSON_AddStringToObject(it, "kind", items[i].kind == ITEM_DECODE   ? "decode"
                                                : items[i].kind == ITEM_VERIFY ? "verify"
                                                                               : "prefill");
            cJSON_AddItemToArray(arr, it);
        }
        jsonio_add_num(o, "t_ms", cb.t_s * 1e3);
        jsonio_add_num(o, "gemm_ms", cb.gemm_s * 1e3);
        jsonio_add_num(o, "attn_ms", cb.attn_s * 1e3);
        jsonio_add_num(o, "lm_head_ms", cb.lm_head_s * 1e3);
        jsonio_add_num(o, "comm_ms", cb.comm_s * 1e3);
        if (a->ep || a->moe_tp || a->attn_dp) {
            cJSON_AddNumberToObject(o, "ep", a->ep);
            cJSON_AddNumberToObject(o, "moe_tp", a->moe_tp);
            cJSON_AddNumberToObject(o, "attention_dp", a->attn_dp);
        }
        jsonio_add_num(o, "overhead_ms", cb.overhead_s * 1e3);
        jsonio_add_num(o, "flops", cb.flops);
        jsonio_add_num(o, "bytes", cb.bytes);
        costcmd_ex_json(o, &x, has);
        free(items);
        return costcmd_print_json(o);
    }
    printf("iteration of %u request%s: %s on %u x %s (tp %d, %s, KV %s; profile: %s)\n", n, n == 1 ? "" : "s",
           m.name, (unsigned)a->tp, hw->name, a->tp, dtype_name(a->dtype), dtype_name(a->kv_dtype), how);
    printf("  t_ms        %10.4f\n", cb.t_s * 1e3);
    printf("  gemm_ms     %10.4f  (dense projections and MLP, all layers)\n", cb.gemm_s * 1e3);
    printf("  attn_ms     %10.4f  (prefill and decode attention, all layers)\n", cb.attn_s * 1e3);
    printf("  lm_head_ms  %10.4f\n", cb.lm_head_s * 1e3);
    printf("  comm_ms     %10.4f  (tensor-parallel all-reduce%s)\n", cb.comm_s * 1e3,
           a->attn_dp > 1 ? "; MoE dispatch and combine across the attention replicas" : "");
    printf("  overhead_ms %10.4f  (per iteration)\n", cb.overhead_s * 1e3);
    printf("  flops %.6g, bytes %.6g\n", cb.flops, cb.bytes);
    if (has && x.fallback[0]) printf("  fallback: %s\n", x.fallback);
    if (has && x.outside && strcmp(x.worst, x.fallback) != 0) printf("  extrapolated: %s\n", x.worst);
    free(items);
    return 0;
}

int costcmd_main(int argc, char **argv)
{
    CostCmdArgs a = {.dtype = DTYPE_BF16, .kv_dtype = DTYPE_BF16, .tp = 1};
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(costcmd_usage, stdout);
            return 0;
        } else if (!strcmp(o, "--json")) {
            a.json = 1;
            continue;
        }
        if (!v) return costcmd_bad("missing value after", o);
        i++;
        if (!strcmp(o, "--hardware")) a.hardware = v;
        else if (!strcmp(o, "--profile")) a.profile = v;
        else if (!strcmp(o, "--model")) a.model = v;
        else if (!strcmp(o, "--gemm")) a.gemm = v;
        else if (!strcmp(o, "--batch")) a.batch = v;
        else if (!strcmp(o, "--dtype")) {
            a.dtype = dtype_parse(v);
            if (a.dtype != DTYPE_BF16 && a.dtype != DTYPE_FP8 && a.dtype != DTYPE_FP16 && a.dtype != DTYPE_FP8_BLOCK &&
                a.dtype != DTYPE_NVFP4)
                return costcmd_bad("--dtype needs bf16, fp16, fp8, fp8_block or nvfp4", v);
        } else if (!strcmp(o, "--kv-dtype")) {
            a.kv_dtype = dtype_parse(v);
            if (a.kv_dtype < 0 || a.kv_dtype == DTYPE_FP32 || a.kv_dtype == DTYPE_FP8_BLOCK || a.kv_dtype == DTYPE_NVFP4)
                return costcmd_bad("--kv-dtype needs bf16, fp16, fp8, q8_0 or q4_0", v);
        } else if (!strcmp(o, "--tp")) {
            double tp;
            if (costcmd_count(v, 1024, &tp) != (int)strlen(v))
                return costcmd_bad("--tp needs a whole number in [1, 1024]", v);
            a.tp = (int)tp;
        } else if (!strcmp(o, "--ep") || !strcmp(o, "--moe-tp") || !strcmp(o, "--attention-dp")) {
            double x;
            if (costcmd_count(v, 1024, &x) != (int)strlen(v))
                return costcmd_bad(!strcmp(o, "--ep") ? "--ep needs a whole number in [1, 1024]"
                                   : !strcmp(o, "--moe-tp") ? "--moe-tp needs a whole number in [1, 1024]"
                                                            : "--attention-dp needs a whole number in [1, 1024]",
                                   v);
            *(!strcmp(o, "--ep") ? &a.ep : !strcmp(o, "--moe-tp") ? &a.moe_tp : &a.attn_dp) = (int)x;
        } else {
            return costcmd_bad("unknown option", o);
        }
    }
    if (!a.hardware) return costcmd_bad("--hardware is required", NULL);
    if (!a.gemm == !a.batch) return costcmd_bad("give exactly one of --gemm and --batch", NULL);
    if (a.batch && !a.model) return costcmd_bad("--batch needs --model", NULL);
    if ((a.ep || a.moe_tp || a.attn_dp) && !a.batch)
        return costcmd_bad("--ep, --moe-tp and --attention-dp need --model and --batch", NULL);
    Err e = {0};
    HwDesc *hw = xmalloc(sizeof *hw);
    int rc;
    if (hw_load(a.hardware, hw, &e) < 0 || (a.profile && hw_attach_profile(hw, a.profile, &e) < 0))
        rc = costcmd_fail(&e);
    else
        rc = a.gemm ? costcmd_gemm(&a, hw) : costcmd_iter(&a, hw);
    free(hw);
    return rc;
}
