/*
 * model.c -- transformer descriptions and the bytes and FLOPs derived from
 * them.
 *
 * Owns: dtype sizes, reading models/<name>.json, and model_derive(), the
 * single place where parameter counts, weight bytes per step, KV bytes per
 * token and FLOP counts are computed.  Nothing derived is ever read from a
 * file.
 *
 * Counting conventions (checked against Hugging Face parameter counts in
 * tests/test_model.c):
 *   per layer   q = hidden*q_heads*head_dim, k = v = hidden*kv_heads*head_dim,
 *               o = q_heads*head_dim*hidden, MLP = (gated ? 3 : 2)*hidden*ffn
 *               (MoE: experts such MLPs of expert_ffn plus a hidden*experts
 *               router), two RMSNorms of hidden, optional QKV biases and
 *               per-head q/k norms (2*head_dim).
 *   matmul      q+k+v+o + the MLP matrices a token actually multiplies (MoE:
 *               active experts and the router); biases and norms excluded.
 *   total       embed + layers*layer + final norm + (tied ? 0 : LM head).
 *   bytes/step  every parameter but the input table, which a step only
 *               gathers a few rows of; when tied the LM head reads the table,
 *               so the whole of params counts.
 *
 * Sums are done in double and checked against a sanity cap before being
 * stored as integers: any real model is far below 2^53, where doubles hold
 * integers exactly, and an absurd file cannot overflow an int64_t.
 */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"

/* Larger than any model worth simulating, far below 2^53. */
#define MODEL_MAX_PARAMS 1e15

/* ------------------------------------------------------------------ */
/* Dtypes */

static const char *const dtype_names[DTYPE_COUNT + 1] = {
    "bf16", "fp16", "fp8", "fp32", "q8_0", "q4_0", "fp8_block", "nvfp4", NULL,
};

double dtype_bytes(Dtype t, double n)
{
    switch (t) {
    case DTYPE_BF16:
    case DTYPE_FP16: return 2.0 * n;
    case DTYPE_FP8: return n;
    case DTYPE_FP32: return 4.0 * n;
    /* GGML block formats: 32 values share one fp16 scale. */
    case DTYPE_Q8_0: return 34.0 * ceil(n / 32.0);
    case DTYPE_Q4_0: return 18.0 * ceil(n / 32.0);
    /* One FP32 scale per 128 x 128 weight block (DeepSeek-V3's format; the
     * kernels are DeepGEMM / CUTLASS block-scaled). */
    case DTYPE_FP8_BLOCK: return n * (1.0 + 4.0 / 16384.0);
    /* E2M1 nibbles with one E4M3 scale per 16 values (the per-tensor FP32
     * global scale is negligible). */
    case DTYPE_NVFP4: return 9.0 * ceil(n / 16.0);
    case DTYPE_COUNT: break;
    }
    return 2.0 * n; /* NEVER: an out-of-range enum; count it as 16-bit */
}

double dtype_act_bytes(Dtype t)
{
    switch (t) {
    case DTYPE_FP8_BLOCK: return 1.0 + 4.0 / 128.0;
    case DTYPE_NVFP4: return 9.0 / 16.0;
    default: return dtype_bytes(t, 1024) / 1024;
    }
}

const char *dtype_name(Dtype t)
{
    return ((int)t >= 0 && (int)t < DTYPE_COUNT) ? dtype_names[t] : "?";
}

int dtype_parse(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < DTYPE_COUNT; i++)
        if (strcmp(dtype_names[i], name) == 0) return i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Derivations */

double model_kv_bytes_per_token(const ModelDesc *m, Dtype kv_dtype)
{
    /* Block formats quantize each head's K (or V) vector on its own, so
     * blocks are rounded up per head vector, not over the whole token. */
    return 2.0 * m->layers * m->kv_heads * dtype_bytes(kv_dtype, m->head_dim);
}

int model_derive(ModelDesc *m, const char *where, Err *e)
{
    if (!where) where = m->name;
    if (m->layers < 1 || m->hidden < 1 || m->q_heads < 1 || m->kv_heads < 1 ||
        m->head_dim < 1 || m->vocab < 1)
        return err_set(e, "%s: layers, hidden, q_heads, kv_heads, head_dim and vocab must all "
                          "be >= 1", where);
    if (m->q_heads % m->kv_heads != 0)
        return err_set(e, "%s: kv_heads = %d does not divide q_heads = %d (each KV head must "
                          "serve a whole group of query heads)", where, m->kv_heads, m->q_heads);
    if ((int)m->weight_dtype < 0 || (int)m->weight_dtype >= DTYPE_COUNT)
        return err_set(e, "%s: unknown weight dtype %d", where, (int)m->weight_dtype);
    if (m->experts == 0) {
        if (m->ffn < 1) return err_set(e, "%s: a dense model needs ffn >= 1", where);
        if (m->active_experts != 0 || m->expert_ffn != 0)
            return err_set(e, "%s: active_experts/expert_ffn given without experts", where);
    } else {
        if (m->experts < 1 || m->active_experts < 1 || m->active_experts > m->experts)
            return err_set(e, "%s: moe: need 1 <= active_experts (%d) <= experts (%d)", where,
                           m->active_experts, m->experts);
        if (m->expert_ffn < 1) return err_set(e, "%s: moe: expert_ffn must be >= 1", where);
    }

    double h = m->hidden, hd = m->head_dim, qh = m->q_heads, kvh = m->kv_heads;
    double mats = m->gated_mlp ? 3.0 : 2.0;
    double q = h * qh * hd, k = h * kvh * hd, v = k, o = qh * hd * h;
    double attn = q + k + v + o;
    double mlp_all, mlp_active;
    if (m->experts > 0) {
        double router = h * m->experts;
        mlp_all = m->experts * mats * h * m->expert_ffn + router;
        mlp_active = m->active_experts * mats * h * m->expert_ffn + router;
    } else {
        mlp_all = mlp_active = mats * h * m->ffn;
    }
    double extras = 2.0 * h; /* input and post-attention RMSNorm */
    if (m->qkv_bias) extras += qh * hd + 2.0 * kvh * hd;
    if (m->qk_norm) extras += 2.0 * hd;

    double layer = attn + mlp_all + extras;
    double embed = (double)m->vocab * h;
    double total = embed + m->layers * layer + h + (m->tied_embeddings ? 0.0 : embed);
    if (!(total <= MODEL_MAX_PARAMS))
        return err_set(e, "%s: %.3g parameters is beyond any plausible model (cap %.0e); check "
                          "the sizes", where, total, MODEL_MAX_PARAMS);

    m->embed_params = (int64_t)embed;
    m->layer_params = (int64_t)layer;
    m->layer_matmul_params = (int64_t)(attn + mlp_active);
    m->lm_head_params = (int64_t)embed;
    m->params = (int64_t)total;
    m->weights_read_bytes = dtype_bytes(m->weight_dtype, m->tied_embeddings ? total : total - embed);
    m->flops_per_token = 2.0 * m->layers * (double)m->layer_matmul_params;
    m->flops_per_pair = 4.0 * m->layers * qh * hd;
    m->lm_head_flops = 2.0 * m->vocab * h;
    return 0;
}

/* ------------------------------------------------------------------ */
/* JSON */

static const char *const model_keys[] = {
    "name", "source", "layers", "hidden", "q_heads", "kv_heads", "head_dim", "ffn", "vocab",
    "tied_embeddings", "gated_mlp", "qkv_bias", "qk_norm", "max_context", "dtype", "moe",
    "hf_id", /* Hugging Face ids of the checkpoints this description covers (validate matches rows by them) */
    NULL,
};
static const char *const model_moe_keys[] = {"experts", "active_experts", "expert_ffn", NULL};
/* Weights come in these (fp8_block: DeepSeek-style 128 x 128 block-scaled
 * FP8 checkpoints; nvfp4: NVIDIA ModelOpt FP4 checkpoints); the GGML block
 * formats are for KV here. */
static const char *const model_weight_dtypes[] = {"bf16", "fp16", "fp8", "fp32", "fp8_block", "nvfp4", NULL};

/* Reads an int key into an int field; limits keep every product finite. */
static int model_get_int(const cJSON *obj, const char *key, const char *where, int required,
                         int64_t min, int64_t max, int *field, Err *e)
{
    int64_t v = *field;
    int r = jsonio_int(obj, key, where, required, min, max, &v, e);
    if (r > 0) *field = (int)v;
    return r;
}

static int model_copy_str(char *dst, size_t n, const char *src, const char *where,
                          const char *key, Err *e)
{
    size_t len = strlen(src);
    if (len == 0 || len >= n) {
        char path[512];
        return err_set(e, "%s: got a string of %zu characters, expected 1 to %zu",
                       jsonio_path(path, sizeof path, where, key), len, n - 1);
    }
    memcpy(dst, src, len + 1);
    return 0;
}

int model_from_json(const cJSON *obj, const char *where, ModelDesc *m, Err *e)
{
    memset(m, 0, sizeof *m);
    m->gated_mlp = 1;
    if (jsonio_check_keys(obj, where, model_keys, e)) return -1;

    const char *s = NULL;
    if (jsonio_str(obj, "name", where, 1, &s, e) < 0) return -1;
    if (model_copy_str(m->name, sizeof m->name, s, where, "name", e)) return -1;
    if (jsonio_str(obj, "source", where, 1, &s, e) < 0) return -1;
    if (model_copy_str(m->source, sizeof m->source, s, where, "source", e)) return -1;

    const int64_t big = 1 << 20;
    if (model_get_int(obj, "layers", where, 1, 1, 4096, &m->layers, e) < 0 ||
        model_get_int(obj, "hidden", where, 1, 1, big, &m->hidden, e) < 0 ||
        model_get_int(obj, "q_heads", where, 1, 1, 65536, &m->q_heads, e) < 0 ||
        model_get_int(obj, "kv_heads", where, 1, 1, 65536, &m->kv_heads, e) < 0 ||
        model_get_int(obj, "head_dim", where, 1, 1, 65536, &m->head_dim, e) < 0 ||
        model_get_int(obj, "vocab", where, 1, 1, 1 << 24, &m->vocab, e) < 0 ||
        model_get_int(obj, "max_context", where, 0, 0, INT32_MAX, &m->max_context, e) < 0)
        return -1;
    if (jsonio_bool(obj, "tied_embeddings", where, 1, &m->tied_embeddings, e) < 0 ||
        jsonio_bool(obj, "gated_mlp", where, 0, &m->gated_mlp, e) < 0 ||
        jsonio_bool(obj, "qkv_bias", where, 0, &m->qkv_bias, e) < 0 ||
        jsonio_bool(obj, "qk_norm", where, 0, &m->qk_norm, e) < 0)
        return -1;
    int dt = 0;
    if (jsonio_enum(obj, "dtype", where, 1, model_weight_dtypes, &dt, e) < 0) return -1;
    m->weight_dtype = (Dtype)dtype_parse(model_weight_dtypes[dt]);

    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(obj, "moe");
    if (moe) {
        char mw[512];
        jsonio_path(mw, sizeof mw, where, "moe");
        if (jsonio_check_keys(moe, mw, model_moe_keys, e)) return -1;
        if (model_get_int(moe, "experts", mw, 1, 1, 65536, &m->experts, e) < 0 ||
            model_get_int(moe, "active_experts", mw, 1, 1, 65536, &m->active_experts, e) < 0 ||
            model_get_int(moe, "expert_ffn", mw, 1, 1, big, &m->expert_ffn, e) < 0)
            return -1;
        /* A MoE config may still name a dense intermediate size (unused when
         * every layer is sparse); keep it for reference. */
        if (model_get_int(obj, "ffn", where, 0, 1, big, &m->ffn, e) < 0) return -1;
    } else {
        if (model_get_int(obj, "ffn", where, 1, 1, big, &m->ffn, e) < 0) return -1;
    }
    return model_derive(m, where, e);
}

int model_load(const char *name_or_path, ModelDesc *m, Err *e)
{
    char path[4096];
    if (!paths_resolve(path, sizeof path, "model", "", name_or_path, e)) return -1;
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int r = model_from_json(root, path, m, e);
    cJSON_Delete(root);
    return r;
}

void model_to_json(const ModelDesc *m, cJSON *obj)
{
    cJSON_AddStringToObject(obj, "name", m->name);
    cJSON_AddStringToObject(obj, "source", m->source);
    cJSON_AddNumberToObject(obj, "layers", m->layers);
    cJSON_AddNumberToObject(obj, "hidden", m->hidden);
    cJSON_AddNumberToObject(obj, "q_heads", m->q_heads);
    cJSON_AddNumberToObject(obj, "kv_heads", m->kv_heads);
    cJSON_AddNumberToObject(obj, "head_dim", m->head_dim);
    if (m->ffn > 0) cJSON_AddNumberToObject(obj, "ffn", m->ffn);
    cJSON_AddNumberToObject(obj, "vocab", m->vocab);
    cJSON_AddBoolToObject(obj, "tied_embeddings", m->tied_embeddings);
    cJSON_AddBoolToObject(obj, "gated_mlp", m->gated_mlp);
    cJSON_AddBoolToObject(obj, "qkv_bias", m->qkv_bias);
    cJSON_AddBoolToObject(obj, "qk_norm", m->qk_norm);
    cJSON_AddNumberToObject(obj, "max_context", m->max_context);
    cJSON_AddStringToObject(obj, "dtype", dtype_name(m->weight_dtype));
    if (m->experts > 0) {
        cJSON *moe = cJSON_AddObjectToObject(obj, "moe");
        if (moe) {
            cJSON_AddNumberToObject(moe, "experts", m->experts);
            cJSON_AddNumberToObject(moe, "active_experts", m->active_experts);
            cJSON_AddNumberToObject(moe, "expert_ffn", m->expert_ffn);
        }
    }
    /* Counts are integers below 2^53: written exactly, not rounded. */
    cJSON_AddNumberToObject(obj, "params", (double)m->params);
    cJSON_AddNumberToObject(obj, "weights_read_bytes", m->weights_read_bytes);
    cJSON_AddNumberToObject(obj, "kv_bytes_per_token", model_kv_bytes_per_token(m, DTYPE_BF16));
    jsonio_add_num(obj, "flops_per_token", m->flops_per_token);
    jsonio_add_num(obj, "flops_per_pair", m->flops_per_pair);
    jsonio_add_num(obj, "lm_head_flops", m->lm_head_flops);
}
