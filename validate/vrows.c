/*
 * vrows.c -- measured rows -> scenarios -> simulated TTFT and TPOT (see
 * vrows.h).
 */
#include "vrows.h"

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "cost.h"
#include "hw.h"
#include "model.h"
#include "jsonio.h"
#include "metrics.h"
#include "paths.h"
#include "scenario.h"
#include "streamrun.h"

#define VROWS_LINE_MAX 65536
#define VROWS_COLS_MAX 64
#define VROWS_ROWS_MAX 1000000

/* Names the data files use for GPUs and models that are not Hugging Face
 * ids, and the bundled descriptions they are (models/hardware/,
 * models/).  aiconfigurator's `system` column and splitwise-sim's
 * `hardware` and `model` columns. */
static const char *const vrows_gpu_names[][2] = {
    {"h100_sxm", "h100-sxm"}, {"h200_sxm", "h200-sxm"}, {"b200_sxm", "b200"},
    {"a100_sxm", "a100-sxm-80gb"}, {"l40s", "l40s"}, {"rtx_pro_6000_server", "rtx-pro-6000"},
    {"a100-80gb", "a100-sxm-80gb"}, {"h100-80gb", "h100-sxm"}, {NULL, NULL},
};
static const char *const vrows_splitwise_models[][2] = {
    {"llama2-70b", "llama-2-70b"}, {"bloom-176b", "bloom-176b"}, {NULL, NULL},
};

static const char *vrows_lookup(const char *const (*tab)[2], const char *key)
{
    for (int i = 0; tab[i][0]; i++)
        if (!strcasecmp(tab[i][0], key)) return tab[i][1];
    return NULL;
}

/* ------------------------------------------------------------ CSV */

/* Splits a line in place at commas; a field may be double-quoted (with ""
 * for a quote).  Returns the field count, or -1 when there are too many. */
static int vrows_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) return -1;
        if (*p == '"') {
            char *w = ++p;
            f[n++] = w;
            while (*p) {
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            *w = 0;
            while (*p && *p != ',') p++;
        } else {
            f[n++] = p;
            while (*p && *p != ',') p++;
        }
        if (*p != ',') break;
        *p++ = 0;
    }
    return n;
}

static int vrows_col(char **hdr, int nh, const char *name)
{
    for (int i = 0; i < nh; i++)
        if (!strcmp(hdr[i], name)) return i;
    return -1;
}

/* ------------------------------------------------------ model by hf_id */

typedef struct HfEntry {
    char id[128];
    char model[64];
} HfEntry;

typedef struct HfTable {
    HfEntry *e;
    uint32_t n, cap;
} HfTable;

static int vrows_cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every hf_id of every bundled model (files in name order, so the first
 * file that lists an id wins deterministically). */
static void vrows_hf_table(HfTable *t)
{
    const char *dir = paths_models_dir();
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    uint32_t nn = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json")) continue;
        if (nn == cap) names = xrealloc(names, (cap = cap ? 2 * cap : 32) * sizeof *names);
        names[nn] = xmalloc(len - 4);
        memcpy(names[nn], de->d_name, len - 5);
        names[nn++][len - 5] = 0;
    }
    closedir(d);
    qsort(names, nn, sizeof *names, vrows_cmp_name);
    for (uint32_t i = 0; i < nn; i++) {
        char path[4096];
        Err e = {0};
        snprintf(path, sizeof path, "%s/%s.json", dir, names[i]);
        cJSON *root = jsonio_parse_file(path, &e);
        const cJSON *ids = root ? cJSON_GetObjectItemCaseSensitive(root, "hf_id") : NULL, *x;
        cJSON_ArrayForEach(x, ids) {
            if (!cJSON_IsString(x) || strlen(x->valuestring) >= sizeof t->e[0].id || strlen(names[i]) >= 64) continue;
            if (t->n == t->cap) t->e = xrealloc(t->e, (t->cap = t->cap ? 2 * t->cap : 64) * sizeof *t->e);
            snprintf(t->e[t->n].id, sizeof t->e[0].id, "%s", x->valuestring);
            snprintf(t->e[t->n].model, sizeof t->e[0].model, "%s", names[i]);
            t->n++;
        }
        cJSON_Delete(root);
        free(names[i]);
    }
    free(names);
}

static const char *vrows_hf_model(const HfTable *t, const char *id)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (!strcasecmp(t->e[i].id, id)) return t->e[i].model;
    return NULL;
}

/* ------------------------------------------------------------ rows */

static int vrows_exists(const char *sub, const char *name)
{
    char path[4096];
    paths_data_file(path, sizeof path, sub, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* Whole non-negative integer from a field; -1 when it is not one. */
static long vrows_int(const char *s)
{
    double v;
    if (common_parse_decimal(s, &v) < 0 || !(v >= 0) || v > 1e9 || v != floor(v)) return -1;
    return (long)v;
}

/* A measurement: a finite decimal, else NAN (the row is then listed as not
 * modelled, naming the field). */
static double vrows_num(const char *s)
{
    double v;
    return common_parse_decimal(s, &v) < 0 ? NAN : v;
}

#define COL(name) (col[name] >= 0 ? f[col[name]] : "")

enum { S_ID, S_BACKEND, S_VERSION, S_MODEL, S_SYSTEM, S_MODE, S_ISL, S_OSL, S_QUANT, S_BATCH, S_TP, S_PP, S_ATTN_DP,
       S_MOE_TP, S_MOE_EP, S_TTFT, S_TPOT, S_NCOLS };
/* The KV memory fraction the benchmark harness deployed, for a TensorRT-LLM
 * version the harness has a template of its own for: aiconfigurator's
 * generator writes kv_cache_config.free_gpu_memory_fraction from
 * generator/config/backend_templates/trtllm/extra_engine_args.<version>.yaml.j2,
 * whose default (nothing in its rules sets it) is 0.80 in 1.0.0rc3's and
 * 0.90 in 1.2.0rc6.post1's.  The rows of other versions (the 2026 runs name
 * none) keep the engine's 0.9: with 0.80 their 70B TP2 runs at 128 clients
 * would queue for KV, which the measured ones do not (validate/README.md).
 * 0: the engine file's own. */
static const struct {
    const char *version;
    double fraction;
} vrows_trt_templates[] = {{"1.0.0rc3", 0.80}, {"1.2.0rc6.post1", 0.90}};

static double vrows_harness_kv_fraction(const char *backend, const char *version)
{
    if (strcmp(backend, "trtllm")) return 0;
    for (size_t i = 0; i < sizeof vrows_trt_templates / sizeof vrows_trt_templates[0]; i++)
        if (!strcmp(version, vrows_trt_templates[i].version)) return vrows_trt_templates[i].fraction;
    return 0;
}

static const char *const silicon_cols[] = {"id", "backend", "backend_version", "model_path", "system", "mode", "isl", "osl",
                                           "gemm_quant_mode", "batch_size", "tp_size", "pp_size",
                                           "attention_dp_size", "moe_tp_size", "moe_ep_size", "silicon_ttft_ms",
                                           "silicon_tpot_ms"};
enum { W_MODEL, W_HW, W_PROMPT, W_BATCH, W_TOKENS, W_PTIME, W_TTIME, W_TP, W_NCOLS };
static const char *const splitwise_cols[] = {"model", "hardware", "prompt_size", "batch_size", "token_size",
                                             "prompt_time", "token_time", "tensor_parallel"};

static void vrows_floor(VRow *r);

/* The GEMM format of an FP8 run (fp8 or fp8_block) of the checkpoint hf_id on engine: where
 * hf_id names no FP8 release (every pre-quantised one in models/ says "FP8"
 * in its name: Qwen/Qwen3-32B-FP8, nvidia/Llama-3.1-8B-Instruct-FP8) and
 * the engine file says it quantises a BF16 checkpoint at load
 * ("online_fp8": vLLM's and SGLang's --quantization fp8, per-tensor: block
 * scales need an FP8-serialised checkpoint), that format, and the run's KV
 * cache stays in the model's BF16 (--kv-cache-dtype auto); else -1 (the
 * model's published FP8 checkpoint, "fp8_checkpoint"). */
static int vrows_online_fp8(const char *engine, const char *hf_id)
{
    for (const char *c = hf_id; *c; c++)
        if (!strncasecmp(c, "fp8", 3)) return -1;
    EngineProfile ep;
    engprof_init(&ep);
    Err e = {0};
    int d = engprof_load(engine, &ep, &e) == 0 ? ep.online_fp8 : -1;
    engprof_free(&ep);
    return d;
}

static void vrows_silicon(VRow *r, char **f, const int *col, const HfTable *hf)
{
    snprintf(r->id, sizeof r->id, "%s", COL(S_ID)[0] ? COL(S_ID) : "(no id)");
    const char *model = vrows_hf_model(hf, COL(S_MODEL));
    const char *gpu = vrows_lookup(vrows_gpu_names, COL(S_SYSTEM));
    const char *eng = COL(S_BACKEND);
    const char *q = COL(S_QUANT);
    const char *dt = !*q || !strcmp(q, "bfloat16") || !strcmp(q, "bf16") || !strcmp(q, "float16") ? "bf16"
                     : !strcmp(q, "fp8") ? "fp8" : !strcmp(q, "fp8_block") ? "fp8_block"
                     : !strcmp(q, "nvfp4") ? "nvfp4" : NULL;
    snprintf(r->slice, sizeof r->slice, "%s | %s | %s | %s", COL(S_MODEL), COL(S_SYSTEM), eng, *q ? q : "bf16");
    /* the engine profile's name, when the version has its own (below) */
    long isl = vrows_int(COL(S_ISL)), osl = vrows_int(COL(S_OSL)), c = vrows_int(COL(S_BATCH));
    long tp = vrows_int(COL(S_TP)), pp = COL(S_PP)[0] ? vrows_int(COL(S_PP)) : 1;
    long adp = COL(S_ATTN_DP)[0] ? vrows_int(COL(S_ATTN_DP)) : 1, mep = COL(S_MOE_EP)[0] ? vrows_int(COL(S_MOE_EP)) : 1;
    long mtp = COL(S_MOE_TP)[0] ? vrows_int(COL(S_MOE_TP)) : 0;
    /* dense rows write 0 or nothing for "no attention DP / expert parallelism" */
    if (adp == 0) adp = 1;
    if (mep == 0) mep = 1;
    if (mtp <= 0) mtp = tp * adp / mep;
    /* aiconfigurator's batch_size is per attention-DP rank: the run's
     * concurrency is batch_size x attention_dp_size as written */
    long clients = c > 0 && adp > 0 ? c * adp : c;
    /* The EP-scaled encoding (validate/README.md): rows that give both
     * moe_tp_size and moe_ep_size > 1 with tp_size x attention_dp_size =
     * moe_tp_size x moe_ep_size write tp, attention DP and MoE-TP multiplied
     * by the EP degree; their measurements repeat, digit for digit, rows of
     * the plain layout (TP8 EP8 written as tp 64, MoE-TP 8, EP 8; attention
     * DP 8 with EP 8 as attention DP 64, MoE-TP 8).  Decoded by dividing the
     * one of tp / attention DP that is > 1, and MoE-TP, by moe_ep_size. */
    if (mep > 1 && mtp > 1 && tp * adp == mtp * mep && (tp == 1) != (adp == 1) && mtp % mep == 0 &&
        (tp > 1 ? tp : adp) % mep == 0) {
        if (tp > 1) tp /= mep;
        else adp /= mep;
        mtp /= mep;
    }
    r->meas_ttft_ms = vrows_num(COL(S_TTFT));
    r->meas_tpot_ms = vrows_num(COL(S_TPOT));
    if (strcmp(COL(S_MODE), "agg"))
        snprintf(r->skip, sizeof r->skip, "mode \"%s\": only aggregated (\"agg\") runs are modelled", COL(S_MODE));
    else if (!model)
        snprintf(r->skip, sizeof r->skip, "unknown model \"%s\" (no models/*.json lists it in \"hf_id\")",
                 COL(S_MODEL));
    else if (!gpu || !vrows_exists("hardware/", gpu))
        snprintf(r->skip, sizeof r->skip, "unknown GPU \"%s\"", COL(S_SYSTEM));
    else if (!*eng || strchr(eng, '/') || !vrows_exists("engines/", eng))
        snprintf(r->skip, sizeof r->skip, "unknown engine \"%s\" (no models/engines/%s.json)", eng, eng);
    else if (!dt)
        snprintf(r->skip, sizeof r->skip, "unknown precision gemm_quant_mode \"%s\" (expected bf16, fp8, fp8_block "
                                          "or nvfp4)", q);
    else if (isl < 1 || osl < 1 || c < 1 || tp < 1 || tp > 64 || pp < 1 || adp < 1 || mep < 1 || c > 100000 ||
             isl > 10000000 || osl > 10000000)
        snprintf(r->skip, sizeof r->skip, "isl %s, osl %s, batch_size %s, tp_size %s: expected positive integers",
                 COL(S_ISL), COL(S_OSL), COL(S_BATCH), COL(S_TP));
    else if (pp > 1)
        snprintf(r->skip, sizeof r->skip, "pipeline parallelism (pp_size %ld) is not modelled", pp);
    else if (!(r->meas_ttft_ms > 0) || !(r->meas_tpot_ms > 0))
        snprintf(r->skip, sizeof r->skip, "measured TTFT \"%s\" / TPOT \"%s\": expected positive numbers",
                 COL(S_TTFT), COL(S_TPOT));
    if (r->skip[0]) return;
    snprintf(r->model, sizeof r->model, "%s", model);
    snprintf(r->hw, sizeof r->hw, "%s", gpu);
    /* an engine version with a profile of its own (models/engines/trtllm-1.0.json
     * for backend_version 1.0.0rc3), else the engine's current one */
    snprintf(r->engine, sizeof r->engine, "%s", eng);
    const char *ver = COL(S_VERSION);
    int dots = 0;
    size_t vl = 0;
    while (ver[vl] && (isdigit((unsigned char)ver[vl]) || ver[vl] == '.') && !(ver[vl] == '.' && ++dots == 2)) vl++;
    if (vl > 0 && vl < 12 && dots >= 1) {
        char name[48];
        snprintf(name, sizeof name, "%s-%.*s", eng, (int)vl, ver);
        if (strlen(name) < sizeof r->engine && vrows_exists("engines/", name)) snprintf(r->engine, sizeof r->engine, "%s", name);
    }
    r->kv_fraction = vrows_harness_kv_fraction(eng, ver);
    snprintf(r->version, sizeof r->version, "%s", ver);
    snprintf(r->dtype, sizeof r->dtype, "%s", dt);
    {
        /* Precision rules (validate/README.md): "fp8" on a model whose FP8
         * checkpoint is block-scaled (DeepSeek; Qwen3's "-FP8" releases:
         * the model file's "fp8_checkpoint") runs its fp8_block kernels;
         * an engine that quantises a BF16 checkpoint at load
         * ("online_fp8") runs that format with a BF16 KV cache;
         * "nvfp4" on a GPU without FP4 tensor cores (H100, H200) runs the
         * checkpoint's own formats (gpt-oss: BF16 attention, MXFP4 experts
         * as W4A16). */
        ModelDesc *md = xcalloc(1, sizeof *md);
        HwDesc *hd = xcalloc(1, sizeof *hd);
        Err e = {0};
        int have = model_load(model, md, &e) == 0;
        if (have) {
            if (!strcmp(dt, "fp8") || !strcmp(dt, "fp8_block")) {
                /* a BF16 checkpoint quantised at load runs the engine's
                 * online format whatever the row calls it (fp8_block
                 * included: block scales need an FP8 checkpoint) */
                int q8 = vrows_online_fp8(r->engine, COL(S_MODEL));
                r->online_q = q8 >= 0;
                if (q8 < 0 && !strcmp(dt, "fp8")) q8 = md->fp8_checkpoint;
                if (q8 == DTYPE_FP8_BLOCK) snprintf(r->dtype, sizeof r->dtype, "fp8_block");
                if (q8 == DTYPE_FP8) snprintf(r->dtype, sizeof r->dtype, "fp8");
            }
            int hw_ok = hw_load(gpu, hd, &e) == 0;
            if (hw_ok) r->gpu_mem_bytes = hd->mem_bytes;
            if (!strcmp(dt, "nvfp4") && hw_ok && !(hd->peak_flops[DTYPE_NVFP4] > 0))
                snprintf(r->dtype, sizeof r->dtype, "native");
            if (md->experts > 0 && mtp * mep != tp * adp)
                snprintf(r->skip, sizeof r->skip, "moe_tp_size %ld x moe_ep_size %ld != tp_size %ld x "
                                                  "attention_dp_size %ld: the experts must span every GPU", mtp, mep,
                         tp, adp);
            else if (md->experts > 0 && (mep > 1 || adp > 1 || mtp != tp)) {
                r->ep = (int)mep;
                r->moe_tp = (int)mtp;
                r->adp = (int)adp;
            }
        }
        if (!r->skip[0] && have && md->experts <= 0 && (mep > 1 || adp > 1))
            snprintf(r->skip, sizeof r->skip, "attention DP %ld / expert parallelism %ld on the dense model %s", adp,
                     mep, model);
        free(md);
        free(hd);
    }
    r->isl = (int)isl;
    r->osl = (int)osl;
    r->conc = (int)clients;
    r->tp = (int)tp;
    if (!r->skip[0]) vrows_floor(r);
}

static void vrows_splitwise(VRow *r, char **f, const int *col)
{
    const char *model = vrows_lookup(vrows_splitwise_models, COL(W_MODEL));
    const char *gpu = vrows_lookup(vrows_gpu_names, COL(W_HW));
    long p = vrows_int(COL(W_PROMPT)), b = vrows_int(COL(W_BATCH)), t = vrows_int(COL(W_TOKENS));
    long tp = vrows_int(COL(W_TP));
    snprintf(r->id, sizeof r->id, "%s/%s/tp%s/p%s/b%s/o%s:%u", COL(W_MODEL), COL(W_HW), COL(W_TP), COL(W_PROMPT),
             COL(W_BATCH), COL(W_TOKENS), r->line);
    snprintf(r->slice, sizeof r->slice, "%s | %s | tp%s", COL(W_MODEL), COL(W_HW), COL(W_TP));
    r->meas_ttft_ms = vrows_num(COL(W_PTIME));
    r->meas_tpot_ms = vrows_num(COL(W_TTIME));
    if (!model || !vrows_exists("", model))
        snprintf(r->skip, sizeof r->skip, "unknown model \"%s\"", COL(W_MODEL));
    else if (!gpu || !vrows_exists("hardware/", gpu))
        snprintf(r->skip, sizeof r->skip, "unknown GPU \"%s\"", COL(W_HW));
    else if (p < 1 || b < 1 || t < 1 || tp < 1 || tp > 64 || b > 100000 || p > 10000000 || t > 10000000)
        snprintf(r->skip, sizeof r->skip, "prompt_size %s, batch_size %s, token_size %s, tensor_parallel %s: "
                                          "expected positive integers", COL(W_PROMPT), COL(W_BATCH),
                 COL(W_TOKENS), COL(W_TP));
    else if (t >= 512)
        snprintf(r->skip, sizeof r->skip, "token_size %ld >= 512: the run stopped early at EOS (data README)", t);
    else if (!(r->meas_ttft_ms > 0) || !(r->meas_tpot_ms > 0))
        snprintf(r->skip, sizeof r->skip, "prompt_time \"%s\" / token_time \"%s\": expected positive numbers",
                 COL(W_PTIME), COL(W_TTIME));
    if (r->skip[0]) return;
    {
        /* A measured prompt_time below the batch's compute floor -- its
         * prefill FLOPs at the GPUs' dense BF16 peak -- did not prefill the
         * whole batch (the data README's batch-64 TP2 rows): the row names
         * work the run did not do, so it is listed, not simulated. */
        ModelDesc *md = xcalloc(1, sizeof *md);
        HwDesc *hd = xcalloc(1, sizeof *hd);
        Err e = {0};
        if (model_load(model, md, &e) == 0 && hw_load(gpu, hd, &e) == 0 && hd->peak_flops[DTYPE_BF16] > 0) {
            BatchItem it = {.c = (uint32_t)p, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
            double floor_ms = (double)b * cost_flops(md, &it, 1) / ((double)tp * hd->peak_flops[DTYPE_BF16]) * 1e3;
            if (r->meas_ttft_ms < floor_ms)
                snprintf(r->skip, sizeof r->skip,
                         "prompt_time %.0f ms is below the batch's compute floor of %.0f ms (%ld x %ld prompt tokens "
                         "at %ld x %.0f TFLOP/s dense BF16): the run did not prefill the whole batch",
                         r->meas_ttft_ms, floor_ms, b, p, tp, hd->peak_flops[DTYPE_BF16] * 1e-12);
        }
        free(md);
        free(hd);
        if (r->skip[0]) return;
    }
    snprintf(r->model, sizeof r->model, "%s", model);
    snprintf(r->hw, sizeof r->hw, "%s", gpu);
    snprintf(r->dtype, sizeof r->dtype, "bf16");
    /* the software of the Splitwise characterisation runs (models/engines/splitwise.json) */
    snprintf(r->engine, sizeof r->engine, "splitwise");
    r->isl = (int)p;
    r->osl = (int)t;
    r->conc = (int)b;
    r->tp = (int)tp;
}

static int vrows_filter_ok(char **hdr, int nh, char **f, int nf, const VFilter *flt, int n_flt)
{
    for (int k = 0; k < n_flt; k++) {
        int c = vrows_col(hdr, nh, flt[k].key);
        if (c < 0 || c >= nf || strcmp(f[c], flt[k].value)) return 0;
    }
    return 1;
}

int vrows_read(const char *path, VFormat fmt, const VFilter *filters, int n_filters, VRow **rows, uint32_t *n,
               VFormat *fmt_out, Err *e)
{
    *rows = NULL;
    *n = 0;
    FILE *fp = fopen(path, "r");
    if (!fp) return err_set(e, "%s: cannot open: %s", path, strerror(errno));
    common_note_input(fp, path);
    char *line = NULL, *hline = NULL;
    size_t cap = 0;
    ssize_t len;
    char *hdr[VROWS_COLS_MAX], *f[VROWS_COLS_MAX];
    int nh = 0, col[S_NCOLS];
    uint32_t lineno = 0, rcap = 0;
    HfTable hf = {0};
    int rc = -1;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > VROWS_LINE_MAX) {
            err_set(e, "%s:%u: line of %zd bytes, expected at most %d", path, lineno, len, VROWS_LINE_MAX);
            goto out;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        if (!hline) {
            hline = xmalloc((size_t)len + 1);
            memcpy(hline, line, (size_t)len + 1);
            nh = vrows_split(hline, hdr, VROWS_COLS_MAX);
            if (nh < 0) {
                err_set(e, "%s:%u: header of more than %d columns", path, lineno, VROWS_COLS_MAX);
                goto out;
            }
            VFormat guess = vrows_col(hdr, nh, "silicon_ttft_ms") >= 0 ? VFMT_SILICON
                            : vrows_col(hdr, nh, "prompt_time") >= 0 ? VFMT_SPLITWISE : VFMT_AUTO;
            if (fmt == VFMT_AUTO) fmt = guess;
            if (fmt == VFMT_AUTO) {
                err_set(e, "%s:%u: cannot tell the format from the header (expected a silicon_ttft_ms column, "
                           "silicon format, or prompt_time, splitwise format; or give --format)", path, lineno);
                goto out;
            }
            const char *const *need = fmt == VFMT_SILICON ? silicon_cols : splitwise_cols;
            int nneed = fmt == VFMT_SILICON ? S_NCOLS : W_NCOLS;
            for (int i = 0; i < nneed; i++) {
                col[i] = vrows_col(hdr, nh, need[i]);
                /* id, pp, attention DP and MoE columns are optional */
                int optional = fmt == VFMT_SILICON && (i == S_ID || i == S_VERSION || i == S_PP || i == S_ATTN_DP ||
                                                       i == S_MOE_TP || i == S_MOE_EP);
                if (col[i] < 0 && !optional) {
                    err_set(e, "%s:%u: the %s format needs a column \"%s\"", path, lineno,
                            fmt == VFMT_SILICON ? "silicon" : "splitwise", need[i]);
                    goto out;
                }
            }
            for (int k = 0; k < n_filters; k++)
                if (vrows_col(hdr, nh, filters[k].key) < 0) {
                    err_set(e, "--filter %s=%s: %s has no column \"%s\"", filters[k].key, filters[k].value, path,
                            filters[k].key);
                    goto out;
                }
            if (fmt == VFMT_SILICON) vrows_hf_table(&hf);
            continue;
        }
        int nf = vrows_split(line, f, VROWS_COLS_MAX);
        if (nf != nh) {
            err_set(e, "%s:%u: %d fields, the header has %d", path, lineno, nf < 0 ? VROWS_COLS_MAX + 1 : nf, nh);
            goto out;
        }
        if (!vrows_filter_ok(hdr, nh, f, nf, filters, n_filters)) continue;
        if (*n == VROWS_ROWS_MAX) {
            err_set(e, "%s:%u: more than %d rows", path, lineno, VROWS_ROWS_MAX);
            goto out;
        }
        if (*n == rcap) *rows = xrealloc(*rows, (rcap = rcap ? 2 * rcap : 256) * sizeof **rows);
        VRow *r = &(*rows)[(*n)++];
        memset(r, 0, sizeof *r);
        r->line = lineno;
        r->fmt = fmt;
        r->pred_ttft_ms = r->pred_tpot_ms = NAN;
        if (fmt == VFMT_SILICON) vrows_silicon(r, f, col, &hf);
        else vrows_splitwise(r, f, col);
    }
    if (ferror(fp)) {
        err_set(e, "%s: read error: %s", path, strerror(errno));
        goto out;
    }
    if (!hline) {
        err_set(e, "%s: empty file (expected a CSV header)", path);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    if (fmt_out) *fmt_out = fmt;
    free(hf.e);
    free(line);
    free(hline);
    fclose(fp);
    return rc;
}

/* The physics floor of a closed-loop row (issue 34).  Its clients finish
 * rate = c / (TTFT + (osl - 1) TPOT) requests a second by its own means,
 * and each request's prompt must be prefilled.  At the fastest the row's
 * own cost model prices a prefill (its engine's kernel tables, near their
 * peak at the TP degree: the prompts batched up to VROWS_FLOOR_TOKENS
 * tokens an iteration, nothing else running, no host time), those
 * prefills alone take rate x prefill GPU seconds a second, on each
 * attention-DP rank for its share.  Above 1 the run did not do the work it
 * names (a prefix cache, shorter prompts): the row is listed with both
 * numbers, never simulated or fitted around.  Decode work is left out: the
 * tables price a decode step about as the runs measure it, so adding it
 * would call model error a floor (tried, validate/README.md). */
#define VROWS_FLOOR_TOKENS 32768
static char *vrows_scenario_text(const VRow *r, const VTheta *th);
static void vrows_floor(VRow *r)
{
    double e2e_s = (r->meas_ttft_ms + (r->osl - 1) * r->meas_tpot_ms) * 1e-3;
    if (!(e2e_s > 0)) return;
    char *text = vrows_scenario_text(r, NULL);
    if (!text) return;
    Err e = {0};
    Scenario s;
    int rc = scenario_load_text(text, r->id, 0, 0, &s, &e);
    free(text);
    if (rc < 0) return; /* the simulation reports it */
    RooflineCfg rc_cfg = {.model = s.model, .hw = s.hw, .tp = s.tp, .compute_dtype = s.compute_dtype,
                          .kv_bytes_per_token = s.kv.bytes_per_token, .act_bytes = dtype_bytes(DTYPE_BF16, 1),
                          .weights_separate = s.weights_separate, .ep = s.ep, .moe_tp = s.moe_tp,
                          .attn_dp = s.attn_dp, .group_tokens = &s.adp_step_tokens,
                          .moe_shared_overlap = !strcmp(s.engine.kernel_tables, "trtllm")};
    uint32_t k_max = (uint32_t)(VROWS_FLOOR_TOKENS / r->isl);
    if (k_max < 1) k_max = 1;
    CostModel cm;
    double prefill = INFINITY;
    if (s.cost_kind == COST_ROOFLINE && cost_roofline_new(&rc_cfg, &cm, &e) == 0) {
        BatchItem *it = xcalloc(k_max, sizeof *it);
        /* 1, 2, 4, ... prompts, then k_max itself */
        for (uint32_t k = 1, last = 0; !last; k = k * 2 < k_max ? k * 2 : k_max) {
            last = k == k_max;
            for (uint32_t j = 0; j < k; j++)
                it[j] = (BatchItem){.req = j, .c = (uint32_t)r->isl, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
            CostBreakdown out = {0};
            if (cm.iter_time(cm.ctx, it, k, &out) == 0 && out.t_s > 0 && out.t_s / k < prefill) prefill = out.t_s / k;
        }
        free(it);
        cm.destroy(cm.ctx);
    }
    scenario_free(&s);
    /* attention data parallelism: ranks of tp GPUs prefill their own share */
    int ranks = r->adp > 1 ? r->adp : 1;
    double rate = r->conc / e2e_s, busy = rate * prefill / ranks;
    if (isfinite(busy) && busy > 1)
        snprintf(r->skip, sizeof r->skip,
                 "below the physics floor: %.1f req/s measured need %.2f GPU-s of prefill a second at the kernel "
                 "tables' fastest (%.2f ms a %d-token prompt, %d GPU(s)%s)",
                 rate, busy, prefill * 1e3, r->isl, r->tp, ranks > 1 ? " a rank" : "");
}

/* ------------------------------------------------------------ simulate */

/* Measured requests per client and warm-up requests per client: the
 * benchmark template's --num-requests 20 c and --warmup-request-count 2 c
 * (../shared/data/README.md). */
#define VROWS_REQS_PER_CLIENT 20
#define VROWS_WARMUP_PER_CLIENT 2
/* aiperf's --num-dataset-entries default: 100 prompts, reused in order by
 * its default sequential sampling (the data README's command sets
 * neither).  What the server does with a repeated prompt is the harness's
 * server setting (vrows_harness_engine): its generator turns every engine's
 * prefix cache off unless the workload declares a shared prefix, so the
 * reuse is sent but never served from a cache. */
#define VROWS_DATASET_ENTRIES 100

/* The scheduler the benchmark harness deployed (../shared/data/README.md:
 * the rows are aiconfigurator's benchmark runs of configurations its
 * generator wrote).  Its rules for an aggregated worker
 * (aiconfigurator generator/rule_plugin/benchmark/{trtllm,vllm,sglang}.rule)
 * set max_batch_size (TensorRT-LLM's max_batch_size, vLLM's max_num_seqs,
 * SGLang's max_running_requests) to the benchmark's concurrency per worker,
 * and the iteration's token limit:
 *   - TensorRT-LLM and vLLM: max_num_tokens = max_batch_size + isl + 1500,
 *     except where the version's template does not pass it: vLLM 0.12.0's
 *     (backend_templates/vllm/cli_args.0.12.0.j2 writes no
 *     --max-num-batched-tokens, the generic cli_args.j2 does), so those
 *     servers ran vLLM's own default (the engine file's 8,192) with
 *     max_num_seqs = c;
 *     TensorRT-LLM's rounded up to the 32-token KV block
 *     (rule_plugin/trtllm.rule: "Ensure maxNumTokens.value() %
 *     tokensPerBlock == 0", tokens_per_block 32): one 2,048- to
 *     8,192-token prompt (or two of 1,024) joins an iteration beside the
 *     decodes, not the 8,192 tokens of the engine's own default;
 *   - SGLang: max_prefill_tokens = isl + 1500 and enable_mixed_chunk true
 *     (rule_plugin/sglang.rule, written as --max-prefill-tokens and
 *     --enable-mixed-chunk by backend_templates/sglang/cli_args.0.5.6.post2.j2):
 *     the running decodes join the prefill step, and a step's chunks and
 *     decodes count against both max_prefill_tokens and chunked_prefill_size
 *     (SGLang's PrefillAdder subtracts mixed_with_decode_tokens from each;
 *     the template passes no chunked_prefill_size: SGLang's own by device
 *     memory), so the step's budget is the smaller of the two.
 * Writes `"scheduler": {...},` (or nothing for another engine) into buf. */
#define VROWS_HARNESS_EXTRA_TOKENS 1500
#define VROWS_HARNESS_BLOCK 32
/* SGLang's chunked_prefill_size by device memory (server_args.py
 * _handle_gpu_memory_settings, 0.5.x: 8,192 for H100 / H200, below 160 GB;
 * 16,384 for B200) */
static int vrows_sglang_chunk(const VRow *r)
{
    return r->gpu_mem_bytes >= 160.0 * 1024 * 1024 * 1024 ? 16384 : 8192;
}

/* vLLM versions whose harness template passes no --max-num-batched-tokens,
 * and what such a server runs: vLLM's default for the OpenAI server on a GPU
 * of 70 GiB or more (vllm/engine/arg_utils.py EngineArgs._set_default_args,
 * 0.12; models/engines/vllm.json) */
#define VROWS_VLLM_DEFAULT_BUDGET 8192
static int vrows_vllm_default_budget(const char *version)
{
    return !strcmp(version, "0.12.0");
}

static void vrows_harness_scheduler(const VRow *r, char *buf, size_t n)
{
    long per_worker = r->adp > 1 ? r->conc / r->adp : r->conc;
    long mnt = per_worker + r->isl + VROWS_HARNESS_EXTRA_TOKENS;
    buf[0] = 0;
    if (!strncmp(r->engine, "trtllm", 6)) {
        mnt = (mnt + VROWS_HARNESS_BLOCK - 1) / VROWS_HARNESS_BLOCK * VROWS_HARNESS_BLOCK;
        snprintf(buf, n, " \"scheduler\": {\"kind\": \"continuous\", \"max_num_tokens\": %ld, \"max_running\": %ld},\n",
                 mnt, per_worker);
    } else if (!strncmp(r->engine, "vllm", 4) && vrows_vllm_default_budget(r->version)) {
        snprintf(buf, n, " \"scheduler\": {\"kind\": \"chunked\", \"token_budget\": %d, \"max_running\": %ld},\n",
                 VROWS_VLLM_DEFAULT_BUDGET, per_worker);
    } else if (!strncmp(r->engine, "vllm", 4)) {
        snprintf(buf, n, " \"scheduler\": {\"kind\": \"chunked\", \"token_budget\": %ld, \"max_running\": %ld},\n",
                 mnt, per_worker);
    } else if (!strncmp(r->engine, "sglang", 6)) {
        long budget = (long)r->isl + VROWS_HARNESS_EXTRA_TOKENS;
        if (budget > vrows_sglang_chunk(r)) budget = vrows_sglang_chunk(r);
        snprintf(buf, n, " \"scheduler\": {\"kind\": \"chunked\", \"token_budget\": %ld, \"mixed\": true, "
                 "\"max_running\": %ld},\n", budget, per_worker);
    }
}

/* What the harness deployed beside the engine's own defaults, as engine
 * keys (", \"kv\": {...}, \"cuda_graph_sizes\": [...]") into buf, for
 * silicon rows:
 *   - no prefix cache: every engine's rule (aiconfigurator
 *     generator/rule_plugin/{trtllm,vllm,sglang}.rule and the benchmark/ ones)
 *     sets disable_prefix_cache = false only "when ModelConfig.prefix > 0",
 *     so a benchmark without a declared prefix runs with it off
 *     (--no-enable-prefix-caching, --disable-radix-cache,
 *     enable_block_reuse false: generator/config/backend_config_mapping.yaml);
 *   - TensorRT-LLM's KV memory fraction of the version's template
 *     (vrows_harness_kv_fraction);
 *   - vLLM's and SGLang's CUDA-graph batch sizes: the benchmark rules
 *     (cuda_graph_batch_sizes = range(1, max_batch_size + 1), written as
 *     --cudagraph-capture-sizes and --cuda-graph-bs) capture every decode
 *     batch of 1 .. the concurrency per worker, so no step is padded to the
 *     engines' default sizes (1, 2, 4, 8, 16, 24, ...).  TensorRT-LLM's rule
 *     captures the same sizes, but its engine file pads nothing
 *     (enable_padding false in the harness's templates too). */
#define VROWS_HARNESS_GRAPHS_MAX ENGPROF_SIZES_MAX
#define VROWS_HARNESS_MAX (VROWS_HARNESS_GRAPHS_MAX * 5 + 100)
#define VROWS_ENGINE_MAX (VROWS_HARNESS_MAX + 900)
static void vrows_harness_engine(const VRow *r, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    if (r->fmt != VFMT_SILICON) return;
    /* merged key by key into the engine file's "kv" (its memory rule stays) */
    k += (size_t)snprintf(buf, n, ", \"kv\": {\"prefix_cache\": false");
    if (r->kv_fraction > 0 && k < n) k += (size_t)snprintf(buf + k, n - k, ", \"fraction\": %.6g", r->kv_fraction);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "}");
    if ((!strncmp(r->engine, "vllm", 4) || !strncmp(r->engine, "sglang", 6)) && k < n) {
        long per_worker = r->adp > 1 ? r->conc / r->adp : r->conc;
        if (per_worker > VROWS_HARNESS_GRAPHS_MAX) per_worker = VROWS_HARNESS_GRAPHS_MAX;
        k += (size_t)snprintf(buf + k, n - k, ", \"cuda_graph_sizes\": [");
        for (long i = 1; i <= per_worker && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%ld", i > 1 ? ", " : "", i);
        if (k < n) snprintf(buf + k, n - k, "]");
    }
    /* NEVER truncated: n holds every size up to the most an engine takes */
}

static char *vrows_scenario_text(const VRow *r, const VTheta *th)
{
    size_t n = 4096 + VROWS_ENGINE_MAX + (r->fmt == VFMT_SPLITWISE ? (size_t)r->conc * 80 : 0);
    char *buf = xmalloc(n), eng[VROWS_ENGINE_MAX], fe[160], harness[VROWS_HARNESS_MAX];
    int k;
    vrows_harness_engine(r, harness, sizeof harness);
    if (th) {
        /* every constant th's, the front end's too: none at 0 */
        if (th->fe_per_prompt_token_us > 0)
            snprintf(fe, sizeof fe, "{\"per_request_us\": 0, \"per_token_us\": %.17g, \"per_prompt_token_us\": %.17g}",
                     th->fe_per_token_us, th->fe_per_prompt_token_us);
        else if (th->fe_per_token_us > 0)
            snprintf(fe, sizeof fe, "{\"per_request_us\": 0, \"per_token_us\": %.17g}", th->fe_per_token_us);
        else
            snprintf(fe, sizeof fe, "false");
        snprintf(eng, sizeof eng,
                 "{\"base\": \"%s\", \"iter_overhead\": {\"base_us\": %.17g, \"per_seq_us\": %.17g, "
                 "\"per_gpu_us\": %.17g%s}, \"request_overhead\": {\"before_us\": %.17g, \"after_us\": 0, "
                 "\"jitter_us\": %.17g, \"jitter_per_token_us\": %.17g, \"end_spread_tokens\": %.0f}, "
                 "\"front_end\": %s, \"large_allreduce\": {\"above_tokens\": %.17g, \"link_fraction\": %.17g}%s}",
                 r->engine, th->base_us, th->per_seq_us, th->per_gpu_us,
                 th->form == 2 ? ", \"per_layer\": true" : th->form == 1 ? ", \"per_layer\": false" : "",
                 th->before_us, th->jitter_us, th->jitter_per_token_us, th->end_spread_tokens, fe,
                 th->ar_above_tokens, th->ar_link_fraction, harness);
    } else if (harness[0])
        snprintf(eng, sizeof eng, "{\"base\": \"%s\"%s}", r->engine, harness);
    else
        snprintf(eng, sizeof eng, "\"%s\"", r->engine);
    if (r->fmt == VFMT_SPLITWISE) {
        /* a static batch of identical requests, all there at 0; the runs
         * went past the model's context window (max_context 0: no check),
         * and the batch ran whole (KV unbounded: its size is not what these
         * rows measure) */
        k = snprintf(buf, n,
                     "{\"name\": \"%s\", \"model\": {\"base\": \"%s\", \"max_context\": 0}, \"hardware\": \"%s\", "
                     "\"tp\": %d,\n"
                     " \"engine\": %s,\n"
                     " \"scheduler\": {\"kind\": \"static\", \"max_running\": %d},\n"
                     " \"kv\": {\"unbounded\": true},\n"
                     " \"report\": {\"token_times\": false, \"iterations\": false},\n"
                     " \"workload\": {\"requests\": [",
                     r->id, r->model, r->hw, r->tp, eng, r->conc);
        for (int i = 0; i < r->conc && k > 0 && (size_t)k < n; i++)
            k += snprintf(buf + k, n - (size_t)k, "%s\n  {\"arrival_ms\": 0, \"prompt_tokens\": %d, \"output_tokens\": %d}",
                          i ? "," : "", r->isl, r->osl);
        if (k > 0 && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, "]}}\n");
    } else {
        int c = r->conc + r->extra_clients;
        char par[160] = "", mdl[200], cm[120], sch[200];
        vrows_harness_scheduler(r, sch, sizeof sch);
        if (r->ep || r->adp || r->moe_tp)
            snprintf(par, sizeof par, " \"parallel\": {\"ep\": %d, \"moe_tp\": %d, \"attention_dp\": %d},\n", r->ep,
                     r->moe_tp, r->adp);
        if (!strcmp(r->dtype, "native")) {
            /* the checkpoint's own formats (vrows_silicon) */
            snprintf(mdl, sizeof mdl, "\"%s\"", r->model);
            snprintf(cm, sizeof cm, "{\"kind\": \"roofline\"}");
        } else {
            snprintf(mdl, sizeof mdl, "{\"base\": \"%s\", \"dtype\": \"%s\"}", r->model, r->dtype);
            snprintf(cm, sizeof cm, "{\"kind\": \"roofline\", \"compute_dtype\": \"%s\"}", r->dtype);
        }
        k = snprintf(buf, n,
                     "{\"name\": \"%s\", \"model\": %s, \"hardware\": \"%s\", "
                     "\"tp\": %d,\n%s"
                     " \"engine\": %s,\n%s"
                     " \"cost_model\": %s,\n"
                     " \"workload\": {\"kind\": \"closed_loop\", \"clients\": %d, \"count\": %d, "
                     "\"warmup_requests\": %d, \"prompt_tokens\": %d, \"output_tokens\": %d, "
                     "\"dataset_entries\": %d},\n"
                     " \"metrics\": {\"warmup_requests\": %d},%s\n"
                     " \"report\": {\"token_times\": false, \"iterations\": false}}\n",
                     r->id, mdl, r->hw, r->tp, par, eng, sch, cm, c,
                     (VROWS_REQS_PER_CLIENT + VROWS_WARMUP_PER_CLIENT) * c, VROWS_WARMUP_PER_CLIENT * c, r->isl,
                     r->osl, VROWS_DATASET_ENTRIES, VROWS_WARMUP_PER_CLIENT * c,
                     r->online_q ? " \"kv\": {\"dtype\": \"bf16\"}," : "");
    }
    if (k < 0 || (size_t)k >= n) { /* NEVER: n covers every field's largest value */
        free(buf);
        return NULL;
    }
    return buf;
}

char *vrows_scenario(const VRow *r, const VTheta *th)
{
    return vrows_scenario_text(r, th);
}

/* A simulated row's predictions from its run's summary. */
static void vrows_take(VRow *r, const Scenario *s, const Summary *sum)
{
    if (sum->ttft_s.n == 0) {
        snprintf(r->err, sizeof r->err, "no request finished (%u rejected)", sum->rejected);
        return;
    }
    r->pred_ttft_ms = sum->ttft_s.mean * 1e3;
    r->pred_tpot_ms = sum->tpot_s.n ? sum->tpot_s.mean * 1e3 : NAN;
    r->mean_running = sum->mean_running;
    r->per_layer = s->engine.iter_per_layer;
    r->host_scale = r->per_layer ? s->model.layers : 1;
}

void vrows_simulate(VRow *r, const VTheta *th)
{
    r->err[0] = 0;
    r->pred_ttft_ms = r->pred_tpot_ms = r->mean_running = NAN;
    r->host_scale = 1;
    r->per_layer = 0;
    char *text = vrows_scenario(r, th);
    if (!text) {
        snprintf(r->err, sizeof r->err, "scenario text too long");
        return;
    }
    Err e = {0};
    /* the engine's one path, as run, sweep and plan take it */
    RunSummary o;
    if (run_summary(&o, NULL, text, r->id, 0, 0, 0, &e) < 0) snprintf(r->err, sizeof r->err, "%.199s", e.msg);
    else vrows_take(r, o.s, o.sum);
    run_summary_free(&o);
    free(text);
}
