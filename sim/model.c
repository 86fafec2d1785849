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
 *   MoE         dense_layers leading layers use the dense MLP of ffn; the
 *               others hold experts routed MLPs (+ biases), shared_experts
 *               always-active ones and the router (+ its bias).
 *   MLA         q (or q_a, its norm and q_b), kv_a (latent + rope), its
 *               norm, kv_b (latent to nope + v per head), o.
 *   linear      q, k, v, o, beta and the kind's gates (KDA: low-rank decay
 *               and output gates; gated DeltaNet: z and a), the short
 *               convolutions, A_log, dt_bias and the output norm.
 *   formats     one weight format: dtype_bytes over the total, as before;
 *               mixed (the experts' own format, or a GGUF recipe): summed
 *               per tensor class (model_mixed_bytes).
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
    "bf16", "fp16", "fp8", "fp32", "q8_0", "q4_0", "fp8_block", "nvfp4",
    "mxfp4", "int4", "q2_k", "q3_k", "q4_k", "q6_k", NULL,
};

/* Block formats: bytes per block, values per block, metadata bytes per block
 * (GGML ggml-common.h block_q*_K layouts; OCP MX v1.0 for mxfp4; NVIDIA
 * ModelOpt for nvfp4; GPTQ/AWQ group 128 with an fp16 scale for int4). */
static int dtype_block(Dtype t, double *bytes, double *values, double *meta)
{
    static const struct { Dtype t; double bytes, values, meta; } blocks[] = {
        {DTYPE_Q8_0, 34, 32, 2},   {DTYPE_Q4_0, 18, 32, 2},   {DTYPE_NVFP4, 9, 16, 1},
        {DTYPE_MXFP4, 17, 32, 1},  {DTYPE_INT4, 66, 128, 2},  {DTYPE_Q2_K, 84, 256, 20},
        {DTYPE_Q3_K, 110, 256, 14}, {DTYPE_Q4_K, 144, 256, 16}, {DTYPE_Q6_K, 210, 256, 18},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (blocks[i].t == t) {
            *bytes = blocks[i].bytes;
            *values = blocks[i].values;
            *meta = blocks[i].meta;
            return 1;
        }
    return 0;
}

double dtype_bytes(Dtype t, double n)
{
    double bb, bv, bm;
    switch (t) {
    case DTYPE_BF16:
    case DTYPE_FP16: return 2.0 * n;
    case DTYPE_FP8: return n;
    case DTYPE_FP32: return 4.0 * n;
    /* One FP32 scale per 128 x 128 weight block (DeepSeek-V3's format; the
     * kernels are DeepGEMM / CUTLASS block-scaled). */
    case DTYPE_FP8_BLOCK: return n * (1.0 + 4.0 / 16384.0);
    default: break;
    }
    /* Block formats (GGML's 32 values per fp16 scale, nvfp4's 16 per E4M3
     * scale, ...): whole blocks. */
    if (dtype_block(t, &bb, &bv, &bm)) return bb * ceil(n / bv);
    return 2.0 * n; /* NEVER: an out-of-range enum; count it as 16-bit */
}

double dtype_meta_bytes(Dtype t, double n)
{
    double bb, bv, bm;
    if (t == DTYPE_FP8_BLOCK) return n * 4.0 / 16384.0;
    if (dtype_block(t, &bb, &bv, &bm)) return bm * ceil(n / bv);
    return 0;
}

double dtype_act_bytes(Dtype t)
{
    switch (t) {
    case DTYPE_FP8_BLOCK: return 1.0 + 4.0 / 128.0;
    case DTYPE_NVFP4: return 9.0 / 16.0;
    /* Weight-only formats: activations stay 16-bit (Marlin int4, w4a16
     * mxfp4 as the H200 MoE tables time it). */
    case DTYPE_MXFP4:
    case DTYPE_INT4: return 2.0;
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

double model_kv_bytes_per_token_layer(const ModelDesc *m, Dtype kv_dtype)
{
    /* MLA caches one latent (kv_lora_rank) plus the shared RoPE key per
     * token and layer, quantized as one vector.  GQA: block formats quantize
     * each head's K (or V) vector on its own, so blocks are rounded up per
     * head vector, not over the whole token. */
    if (m->attn == MODEL_ATTN_MLA) return dtype_bytes(kv_dtype, m->kv_lora_rank + m->qk_rope_dim);
    return 2.0 * m->kv_heads * dtype_bytes(kv_dtype, m->head_dim);
}

double model_kv_bytes_per_token(const ModelDesc *m, Dtype kv_dtype)
{
    if (m->attn == MODEL_ATTN_GQA && m->n_full == m->layers)
        return 2.0 * m->layers * m->kv_heads * dtype_bytes(kv_dtype, m->head_dim);
    return m->n_full * model_kv_bytes_per_token_layer(m, kv_dtype);
}

double model_kv_bytes_for_tokens(const ModelDesc *m, Dtype kv_dtype, double tokens)
{
    if (!(tokens > 0)) return 0;
    double win = m->sliding_window > 0 && tokens > m->sliding_window ? m->sliding_window : tokens;
    return tokens * model_kv_bytes_per_token(m, kv_dtype) +
           win * m->n_sliding * model_kv_bytes_per_token_layer(m, kv_dtype) + m->linear_state_bytes;
}

/* 1 - (1 - q)^n without losing digits when q is tiny. */
static double model_hit(double q, double n)
{
    if (q >= 1) return 1;
    return -expm1(n * log1p(-q));
}

double model_expected_experts(const ModelDesc *m, double n)
{
    if (m->experts < 1 || !(n > 0)) return 0;
    double E = m->experts, k = m->active_experts;
    if (m->routing == MODEL_ROUTING_UNIFORM || m->routing_s == 0) return E * model_hit(k / E, n);
    /* Zipf: weights w_i = i^-s, falling with i.  Selection probabilities
     * q_i = min(1, c w_i) with sum q_i = k: the most popular experts are
     * capped at 1 (picked by every token) and c spreads the rest. */
    double tail = 0;
    for (int i = 1; i <= m->experts; i++) tail += pow(i, -m->routing_s);
    int capped = 0;
    double c = k / tail;
    while (capped < m->active_experts && c * pow(capped + 1, -m->routing_s) > 1) {
        tail -= pow(capped + 1, -m->routing_s);
        capped++;
        c = (k - capped) / tail;
    }
    double d = capped;
    for (int i = capped + 1; i <= m->experts; i++) d += model_hit(c * pow(i, -m->routing_s), n);
    return d;
}

double model_weights_read_bytes_tokens(const ModelDesc *m, double n)
{
    if (m->experts < 1) return m->weights_read_bytes;
    double idle = m->experts - model_expected_experts(m, n);
    return m->weights_read_bytes - m->moe_layers * idle * m->expert_bytes;
}

/* Causal pairs of c new tokens after h cached ones when each query sees at
 * most w keys (w = 0: unbounded): sum over positions p = h .. h+c-1 of
 * min(p + 1, w). */
static double model_window_pairs(double c, double h, double w)
{
    double n = h + c;
    if (w <= 0 || n <= w) return c * h + c * (c + 1) / 2;
    /* S(x) = sum_{p<x} min(p+1, w) */
    double sn = w * (w + 1) / 2 + (n - w) * w;
    double sh = h <= w ? h * (h + 1) / 2 : w * (w + 1) / 2 + (h - w) * w;
    return sn - sh;
}

double model_attn_flops(const ModelDesc *m, double c, double h, int absorbed)
{
    if (!(c > 0)) return 0;
    double full = (absorbed ? m->flops_per_pair_absorbed : m->flops_per_pair) * model_window_pairs(c, h, 0);
    double slid = m->n_sliding ? m->sliding_flops_per_pair * model_window_pairs(c, h, m->sliding_window) : 0;
    return full + slid + m->linear_flops_per_token * c;
}

/* Parameters of one layer's attention block (matmul: the matrices a token
 * multiplies; all: with biases, norms, sinks, convolutions). */
static void model_attn_params(const ModelDesc *m, ModelLayerKind kind, double *all, double *matmul)
{
    double h = m->hidden, qh = m->q_heads, kvh = m->kv_heads, hd = m->head_dim;
    double mm, extra = 0;
    if (kind == MODEL_LAYER_LINEAR) {
        double kh = m->linear_key_heads, vh = m->linear_heads, dk = m->linear_key_dim,
               dv = m->linear_value_dim, r = m->linear_gate_rank;
        double qk = kh * dk, vd = vh * dv;
        mm = 2 * h * qk + h * vd + vd * h + h * vh; /* q, k, v, o, beta */
        if (m->linear_kind == MODEL_LINEAR_KDA) {
            /* decay gate f (per key channel) and output gate g, low-rank
             * through r when r > 0 (FLA KimiDeltaAttention f_a/f_b, g_a/g_b) */
            mm += r > 0 ? h * r + r * qk : h * qk;
            mm += r > 0 ? h * r + r * vd : h * vd;
            extra += vh + qk + dv; /* A_log, dt_bias, output norm */
        } else {
            /* gated DeltaNet (Qwen3-Next in_proj_qkvz, in_proj_ba): output
             * gate z and decay a */
            mm += h * vd + h * vh;
            extra += 2 * vh + dv; /* A_log, dt_bias, output norm */
        }
        extra += m->linear_conv * (2 * qk + vd); /* depthwise short convolutions */
    } else if (m->attn == MODEL_ATTN_MLA) {
        double qd = m->qk_nope_dim + m->qk_rope_dim, kvl = m->kv_lora_rank, ql = m->q_lora_rank;
        double q = ql > 0 ? h * ql + ql * qh * qd : h * qh * qd;
        mm = q + h * (kvl + m->qk_rope_dim) + kvl * qh * (m->qk_nope_dim + m->v_head_dim) +
             qh * m->v_head_dim * h;
        extra += kvl + (ql > 0 ? ql : 0); /* kv_a and q_a RMSNorms */
    } else {
        mm = h * qh * hd + 2 * h * kvh * hd + qh * hd * h;
        if (m->qkv_bias || m->attn_bias) extra += qh * hd + 2.0 * kvh * hd;
        if (m->attn_bias) extra += h;
        if (m->qk_norm) extra += 2.0 * hd;
    }
    if (m->attn_sinks && kind != MODEL_LAYER_LINEAR) extra += qh;
    *matmul = mm;
    *all = mm + extra;
}

/* Parameters of layer i's MLP: all, and the matrices one token multiplies. */
static void model_mlp_params(const ModelDesc *m, int i, double *all, double *matmul)
{
    double h = m->hidden, mats = m->gated_mlp ? 3.0 : 2.0;
    if (m->experts == 0 || i < m->dense_layers) {
        *all = *matmul = mats * h * m->ffn;
        return;
    }
    double router = h * m->experts, shared = m->shared_experts * mats * h * m->shared_expert_ffn;
    *all = m->experts * (double)m->expert_params + shared + router + (m->router_bias ? m->experts : 0);
    *matmul = m->active_experts * mats * h * m->expert_ffn + shared + router;
}

/* Weight bytes when formats differ by tensor: a GGUF file quantized with
 * llama.cpp's recipe for its ftype (llama-quant.cpp llama_tensor_get_type:
 * for Q2_K, attn_v becomes Q4_K when a KV head serves >= 4 query heads (else
 * Q3_K), attn_output and every ffn_down Q3_K, the output matrix Q6_K, the
 * router (ffn_gate_inp) and 1-D tensors F32; q4_0: output Q6_K; q8_0 all
 * Q8_0), or routed experts in their own format (gpt-oss mxfp4).  Fills
 * total, metadata and the input table's bytes. */
static void model_mixed_bytes(const ModelDesc *m, double *total, double *meta, double *table)
{
    Dtype wd = m->weight_dtype;
    int gguf = wd == DTYPE_Q2_K || wd == DTYPE_Q8_0 || wd == DTYPE_Q4_0;
    Dtype down = wd == DTYPE_Q2_K ? DTYPE_Q3_K : wd;
    Dtype attn_v = wd == DTYPE_Q2_K ? (m->q_heads / m->kv_heads >= 4 ? DTYPE_Q4_K : DTYPE_Q3_K) : wd;
    Dtype attn_o = wd == DTYPE_Q2_K ? DTYPE_Q3_K : wd;
    Dtype head = wd == DTYPE_Q8_0 || !gguf ? wd : DTYPE_Q6_K;
    Dtype small = gguf ? DTYPE_FP32 : wd; /* norms, biases, router */
    double t = 0, mt = 0;
#define MODEL_ADD(dt, n)                                                                        \
    do {                                                                                        \
        double n_ = (n);                                                                        \
        t += dtype_bytes((dt), n_);                                                             \
        mt += dtype_meta_bytes((dt), n_);                                                       \
    } while (0)
    double h = m->hidden, mats = m->gated_mlp ? 3.0 : 2.0;
    double embed = (double)m->vocab * h;
    *table = dtype_bytes(wd, embed);
    MODEL_ADD(wd, embed);
    if (!m->tied_embeddings) MODEL_ADD(head, embed);
    MODEL_ADD(small, h); /* final norm */
    for (int i = 0; i < m->layers; i++) {
        ModelLayerKind kind = (ModelLayerKind)m->layer_kind[i];
        double aall, amm;
        model_attn_params(m, kind, &aall, &amm);
        if (gguf && kind != MODEL_LAYER_LINEAR && m->attn == MODEL_ATTN_GQA) {
            double qh = m->q_heads, kvh = m->kv_heads, hd = m->head_dim;
            MODEL_ADD(wd, h * qh * hd + h * kvh * hd); /* attn_q, attn_k */
            MODEL_ADD(attn_v, h * kvh * hd);
            MODEL_ADD(attn_o, qh * hd * h);
        } else {
            MODEL_ADD(wd, amm);
        }
        MODEL_ADD(small, aall - amm + 2 * h); /* biases, norms, sinks; two RMSNorms */
        if (m->experts == 0 || i < m->dense_layers) {
            MODEL_ADD(wd, (mats - 1) * h * m->ffn);
            MODEL_ADD(down, h * m->ffn);
            continue;
        }
        Dtype ed = m->expert_dtype;
        Dtype edown = gguf ? down : ed;
        double ew = mats * h * m->expert_ffn, eb = (double)m->expert_params - ew;
        MODEL_ADD(gguf ? wd : ed, m->experts * (mats - 1) * h * m->expert_ffn);
        MODEL_ADD(edown, m->experts * h * m->expert_ffn);
        MODEL_ADD(small, m->experts * eb);
        MODEL_ADD(wd, m->shared_experts * (mats - 1) * h * m->shared_expert_ffn);
        MODEL_ADD(down, m->shared_experts * h * m->shared_expert_ffn);
        MODEL_ADD(small, h * m->experts + (m->router_bias ? m->experts : 0));
    }
#undef MODEL_ADD
    *total = t;
    *meta = mt;
}

int model_derive(ModelDesc *m, const char *where, Err *e)
{
    if (!where) where = m->name;
    if (m->layers < 1 || m->hidden < 1 || m->q_heads < 1 || m->kv_heads < 1 ||
        m->head_dim < 1 || m->vocab < 1)
        return err_set(e, "%s: layers, hidden, q_heads, kv_heads, head_dim and vocab must all "
                          "be >= 1", where);
    if (m->layers > MODEL_MAX_LAYERS)
        return err_set(e, "%s: layers: got %d, expected at most %d", where, m->layers, MODEL_MAX_LAYERS);
    if (m->q_heads % m->kv_heads != 0)
        return err_set(e, "%s: kv_heads = %d does not divide q_heads = %d (each KV head must "
                          "serve a whole group of query heads)", where, m->kv_heads, m->q_heads);
    if ((int)m->weight_dtype < 0 || (int)m->weight_dtype >= DTYPE_COUNT)
        return err_set(e, "%s: unknown weight dtype %d", where, (int)m->weight_dtype);
    if (m->experts == 0) {
        if (m->ffn < 1) return err_set(e, "%s: a dense model needs ffn >= 1", where);
        if (m->active_experts != 0 || m->expert_ffn != 0 || m->shared_experts != 0 || m->dense_layers != 0)
            return err_set(e, "%s: active_experts/expert_ffn/shared_experts/dense_layers given without "
                              "experts", where);
        m->expert_dtype = m->weight_dtype;
    } else {
        if (m->experts < 1 || m->active_experts < 1 || m->active_experts > m->experts)
            return err_set(e, "%s: moe: need 1 <= active_experts (%d) <= experts (%d)", where,
                           m->active_experts, m->experts);
        if (m->expert_ffn < 1) return err_set(e, "%s: moe: expert_ffn must be >= 1", where);
        if (m->dense_layers < 0 || m->dense_layers > m->layers)
            return err_set(e, "%s: moe.dense_layers: got %d, expected 0 to layers (%d)", where,
                           m->dense_layers, m->layers);
        if (m->dense_layers > 0 && m->ffn < 1)
            return err_set(e, "%s: moe.dense_layers = %d needs the dense MLP size \"ffn\" (>= 1)", where,
                           m->dense_layers);
        if (m->shared_experts > 0 && m->shared_expert_ffn < 1) m->shared_expert_ffn = m->expert_ffn;
        if ((int)m->expert_dtype < 0 || (int)m->expert_dtype >= DTYPE_COUNT)
            return err_set(e, "%s: unknown expert dtype %d", where, (int)m->expert_dtype);
    }
    if (m->attn == MODEL_ATTN_MLA) {
        if (m->kv_lora_rank < 1 || m->qk_rope_dim < 1 || m->qk_nope_dim < 1 || m->v_head_dim < 1)
            return err_set(e, "%s: attention (mla): kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and "
                              "v_head_dim must all be >= 1", where);
        if (m->kv_heads != m->q_heads || m->head_dim != m->qk_nope_dim + m->qk_rope_dim)
            return err_set(e, "%s: attention (mla): expected kv_heads = q_heads (%d, got %d) and head_dim = "
                              "qk_nope_head_dim + qk_rope_head_dim (%d, got %d)", where, m->q_heads,
                           m->kv_heads, m->qk_nope_dim + m->qk_rope_dim, m->head_dim);
    }
    m->n_full = m->n_sliding = m->n_linear = 0;
    for (int i = 0; i < m->layers; i++) {
        switch (m->layer_kind[i]) {
        case MODEL_LAYER_FULL: m->n_full++; break;
        case MODEL_LAYER_SLIDING: m->n_sliding++; break;
        case MODEL_LAYER_LINEAR: m->n_linear++; break;
        default: return err_set(e, "%s: layer %d: unknown kind %d", where, i, m->layer_kind[i]);
        }
    }
    if (m->n_sliding > 0 && m->sliding_window < 1)
        return err_set(e, "%s: %d sliding layers need \"sliding_window\" >= 1", where, m->n_sliding);
    if (m->n_linear > 0 && (m->linear_heads < 1 || m->linear_key_heads < 1 || m->linear_key_dim < 1 ||
                            m->linear_value_dim < 1))
        return err_set(e, "%s: %d linear layers need \"linear_attention\" with heads, key_head_dim and "
                          "value_head_dim >= 1", where, m->n_linear);

    double h = m->hidden, qh = m->q_heads, hd = m->head_dim, mats = m->gated_mlp ? 3.0 : 2.0;
    m->expert_params = 0;
    if (m->experts > 0)
        m->expert_params = (int64_t)(mats * h * m->expert_ffn +
                                     (m->expert_bias ? (mats - 1) * m->expert_ffn + h : 0));
    m->moe_layers = m->experts > 0 ? m->layers - m->dense_layers : 0;

    double layers_all = 0, layers_mm = 0, last_all = 0, last_mm = 0;
    for (int i = 0; i < m->layers; i++) {
        double aall, amm, mall, mmm;
        model_attn_params(m, (ModelLayerKind)m->layer_kind[i], &aall, &amm);
        model_mlp_params(m, i, &mall, &mmm);
        last_all = aall + mall + 2.0 * h; /* input and post-attention RMSNorm */
        last_mm = amm + mmm;
        layers_all += last_all;
        layers_mm += last_mm;
    }
    double embed = (double)m->vocab * h;
    double total = embed + layers_all + h + (m->tied_embeddings ? 0.0 : embed);
    if (!(total <= MODEL_MAX_PARAMS))
        return err_set(e, "%s: %.3g parameters is beyond any plausible model (cap %.0e); check "
                          "the sizes", where, total, MODEL_MAX_PARAMS);

    m->embed_params = (int64_t)embed;
    m->layer_params = (int64_t)last_all;
    m->layer_matmul_params = (int64_t)last_mm;
    m->lm_head_params = (int64_t)embed;
    m->params = (int64_t)total;
    double idle_experts = m->experts > 0 ? (double)(m->experts - m->active_experts) : 0;
    m->params_active = (int64_t)(total - m->moe_layers * idle_experts * (double)m->expert_params);
    int uniform = m->expert_dtype == m->weight_dtype && m->weight_dtype != DTYPE_Q2_K &&
                  m->weight_dtype != DTYPE_Q8_0 && m->weight_dtype != DTYPE_Q4_0;
    if (uniform) {
        m->weights_read_bytes = dtype_bytes(m->weight_dtype, m->tied_embeddings ? total : total - embed);
        m->weights_total_bytes = dtype_bytes(m->weight_dtype, total);
        m->weights_meta_bytes = dtype_meta_bytes(m->weight_dtype, total);
        m->expert_bytes = dtype_bytes(m->weight_dtype, (double)m->expert_params);
    } else {
        double table;
        model_mixed_bytes(m, &m->weights_total_bytes, &m->weights_meta_bytes, &table);
        m->weights_read_bytes = m->tied_embeddings ? m->weights_total_bytes : m->weights_total_bytes - table;
        int gguf = m->weight_dtype == DTYPE_Q2_K || m->weight_dtype == DTYPE_Q8_0 || m->weight_dtype == DTYPE_Q4_0;
        double ew = h * m->expert_ffn, eb = (double)m->expert_params - mats * ew;
        Dtype down = m->weight_dtype == DTYPE_Q2_K ? DTYPE_Q3_K : m->weight_dtype;
        m->expert_bytes = gguf ? dtype_bytes(m->weight_dtype, (mats - 1) * ew) + dtype_bytes(down, ew) +
                                     dtype_bytes(DTYPE_FP32, eb)
                               : dtype_bytes(m->expert_dtype, mats * ew) + dtype_bytes(m->weight_dtype, eb);
    }

    /* Attention FLOPs per pair.  GQA: QK^T and PV over head_dim each.  MLA
     * naive: q . k over nope + rope dims, p . v over v_head_dim; absorbed:
     * q is mapped into the latent (W_UK folded into the query), so QK^T runs
     * over kv_lora_rank + rope and PV over kv_lora_rank (W_UV applied after). */
    double per_pair_layer, per_pair_abs_layer;
    if (m->attn == MODEL_ATTN_MLA) {
        per_pair_layer = 2.0 * qh * (m->qk_nope_dim + m->qk_rope_dim + m->v_head_dim);
        per_pair_abs_layer = 2.0 * qh * (2.0 * m->kv_lora_rank + m->qk_rope_dim);
    } else {
        per_pair_layer = per_pair_abs_layer = 4.0 * qh * hd;
    }
    m->flops_per_token = 2.0 * layers_mm;
    if (m->n_full == m->layers && m->attn == MODEL_ATTN_GQA) {
        m->flops_per_pair = 4.0 * m->layers * qh * hd;
        m->flops_per_pair_absorbed = m->flops_per_pair;
    } else {
        m->flops_per_pair = m->n_full * per_pair_layer;
        m->flops_per_pair_absorbed = m->n_full * per_pair_abs_layer;
    }
    m->sliding_flops_per_pair = m->n_sliding * per_pair_layer;
    /* A recurrent layer's state S (value heads x dk x dv) per token: decay
     * and delta-rule update (S^T k, then k outer (v - S^T k)) and the readout
     * S^T q: three dk x dv products of 2 FLOPs each per head. */
    m->linear_flops_per_token = m->n_linear * 6.0 * m->linear_heads * (double)m->linear_key_dim * m->linear_value_dim;
    if (m->n_linear > 0) {
        double state = (double)m->linear_heads * m->linear_key_dim * m->linear_value_dim;
        /* the short convolutions keep their last kernel - 1 inputs of q, k
         * and v, in 16-bit like the activations (vLLM's conv state) */
        double conv = m->linear_conv > 1 ? (m->linear_conv - 1.0) *
                          (2.0 * m->linear_key_heads * m->linear_key_dim + (double)m->linear_heads * m->linear_value_dim)
                                         : 0;
        m->linear_state_bytes = m->n_linear * (dtype_bytes(m->linear_state_dtype, state) + 2.0 * conv);
    } else {
        m->linear_state_bytes = 0;
    }
    m->lm_head_flops = 2.0 * m->vocab * h;
    return 0;
}

/* ------------------------------------------------------------------ */
/* JSON */

static const char *const model_keys[] = {
    "name", "source", "layers", "hidden", "q_heads", "kv_heads", "head_dim", "ffn", "vocab",
    "tied_embeddings", "gated_mlp", "qkv_bias", "qk_norm", "max_context", "dtype", "moe",
    "hf_id", /* Hugging Face ids of the checkpoints this description covers (validate matches rows by them) */
    "attention", "layer_types", "sliding_window", "linear_attention", "attention_bias", "attention_sinks",
    "fp8_checkpoint", /* the published FP8 checkpoint's format: "fp8" (per-tensor) or "fp8_block" */
    NULL,
};
static const char *const model_moe_keys[] = {"experts", "active_experts", "expert_ffn", "shared_experts",
                                             "shared_expert_ffn", "dense_layers", "router_bias",
                                             "expert_bias", "dtype", "routing", NULL};
static const char *const model_attn_keys[] = {"kind", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
                                              "qk_nope_head_dim", "v_head_dim", NULL};
static const char *const model_attn_kinds[] = {"gqa", "mla", NULL};
static const char *const model_linear_keys[] = {"kind", "heads", "key_heads", "key_head_dim", "value_head_dim",
                                                "conv_kernel", "gate_rank", "state_dtype", NULL};
static const char *const model_linear_kinds[] = {"kda", "gated_deltanet", NULL};
static const char *const model_layer_kinds[] = {"full", "sliding", "linear", NULL};
static const char *const model_routing_keys[] = {"kind", "s", NULL};
static const char *const model_routing_kinds[] = {"uniform", "zipf", NULL};
/* Weights come in these (fp8_block: DeepSeek-style 128 x 128 block-scaled
 * FP8 checkpoints; nvfp4: NVIDIA ModelOpt FP4 checkpoints; mxfp4: gpt-oss's
 * experts; int4: GPTQ/AWQ weight-only; q8_0, q4_0, q2_k: GGUF files
 * quantized with llama.cpp's recipe for that type). */
static const char *const model_weight_dtypes[] = {"bf16", "fp16", "fp8", "fp32", "fp8_block", "nvfp4", "mxfp4",
                                                  "int4", "q8_0", "q4_0", "q2_k", NULL};
static const char *const model_state_dtypes[] = {"fp32", "bf16", "fp16", NULL};

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
    m->fp8_checkpoint = m->weight_dtype == DTYPE_FP8_BLOCK ? DTYPE_FP8_BLOCK : DTYPE_FP8;
    if (cJSON_GetObjectItemCaseSensitive(obj, "fp8_checkpoint")) {
        static const char *const fp8_kinds[] = {"fp8", "fp8_block", NULL};
        int k = 0;
        if (jsonio_enum(obj, "fp8_checkpoint", where, 1, fp8_kinds, &k, e) < 0) return -1;
        m->fp8_checkpoint = k ? DTYPE_FP8_BLOCK : DTYPE_FP8;
    }

    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(obj, "moe");
    m->expert_dtype = m->weight_dtype;
    if (moe) {
        char mw[512];
        jsonio_path(mw, sizeof mw, where, "moe");
        if (jsonio_check_keys(moe, mw, model_moe_keys, e)) return -1;
        if (model_get_int(moe, "experts", mw, 1, 1, 65536, &m->experts, e) < 0 ||
            model_get_int(moe, "active_experts", mw, 1, 1, 65536, &m->active_experts, e) < 0 ||
            model_get_int(moe, "expert_ffn", mw, 1, 1, big, &m->expert_ffn, e) < 0 ||
            model_get_int(moe, "shared_experts", mw, 0, 0, 64, &m->shared_experts, e) < 0 ||
            model_get_int(moe, "shared_expert_ffn", mw, 0, 1, big, &m->shared_expert_ffn, e) < 0 ||
            model_get_int(moe, "dense_layers", mw, 0, 0, 4096, &m->dense_layers, e) < 0 ||
            jsonio_bool(moe, "router_bias", mw, 0, &m->router_bias, e) < 0 ||
            jsonio_bool(moe, "expert_bias", mw, 0, &m->expert_bias, e) < 0)
            return -1;
        if (cJSON_GetObjectItemCaseSensitive(moe, "dtype")) {
            if (jsonio_enum(moe, "dtype", mw, 1, model_weight_dtypes, &dt, e) < 0) return -1;
            m->expert_dtype = (Dtype)dtype_parse(model_weight_dtypes[dt]);
        }
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(moe, "routing");
        if (rt) {
            char rw[600];
            jsonio_path(rw, sizeof rw, mw, "routing");
            int kind = 0;
            if (cJSON_IsString(rt)) {
                if (jsonio_enum(moe, "routing", mw, 1, model_routing_kinds, &kind, e) < 0) return -1;
                if (kind == MODEL_ROUTING_ZIPF)
                    return err_set(e, "%s: \"zipf\" needs its exponent: {\"kind\": \"zipf\", \"s\": ...}", rw);
            } else {
                if (jsonio_expect_object(rt, rw, e) || jsonio_check_keys(rt, rw, model_routing_keys, e) ||
                    jsonio_enum(rt, "kind", rw, 1, model_routing_kinds, &kind, e) < 0)
                    return -1;
                if (kind == MODEL_ROUTING_ZIPF &&
                    jsonio_num(rt, "s", rw, 1, 0.0, 8.0, &m->routing_s, e) < 0)
                    return -1;
                if (kind == MODEL_ROUTING_UNIFORM && cJSON_GetObjectItemCaseSensitive(rt, "s"))
                    return err_set(e, "%s.s: uniform routing takes no exponent", rw);
            }
            m->routing = (ModelRouting)kind;
        }
        /* A MoE config may still name a dense intermediate size (unused when
         * every layer is sparse, the leading dense layers' size otherwise). */
        if (model_get_int(obj, "ffn", where, m->dense_layers > 0, 1, big, &m->ffn, e) < 0) return -1;
    } else {
        if (model_get_int(obj, "ffn", where, 1, 1, big, &m->ffn, e) < 0) return -1;
    }
    if (jsonio_bool(obj, "attention_bias", where, 0, &m->attn_bias, e) < 0 ||
        jsonio_bool(obj, "attention_sinks", where, 0, &m->attn_sinks, e) < 0 ||
        model_get_int(obj, "sliding_window", where, 0, 1, INT32_MAX, &m->sliding_window, e) < 0)
        return -1;

    const cJSON *at = cJSON_GetObjectItemCaseSensitive(obj, "attention");
    if (at) {
        char aw[512];
        jsonio_path(aw, sizeof aw, where, "attention");
        int kind = 0;
        if (jsonio_expect_object(at, aw, e) || jsonio_check_keys(at, aw, model_attn_keys, e) ||
            jsonio_enum(at, "kind", aw, 1, model_attn_kinds, &kind, e) < 0)
            return -1;
        m->attn = (ModelAttn)kind;
        int mla = kind == MODEL_ATTN_MLA;
        if (model_get_int(at, "q_lora_rank", aw, 0, 0, big, &m->q_lora_rank, e) < 0 ||
            model_get_int(at, "kv_lora_rank", aw, mla, 1, big, &m->kv_lora_rank, e) < 0 ||
            model_get_int(at, "qk_rope_head_dim", aw, mla, 1, 65536, &m->qk_rope_dim, e) < 0 ||
            model_get_int(at, "qk_nope_head_dim", aw, mla, 1, 65536, &m->qk_nope_dim, e) < 0 ||
            model_get_int(at, "v_head_dim", aw, mla, 1, 65536, &m->v_head_dim, e) < 0)
            return -1;
        if (!mla && cJSON_GetArraySize(at) > 1)
            return err_set(e, "%s: the lora ranks and head dims belong to kind \"mla\"", aw);
    }

    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(obj, "layer_types");
    if (lt) {
        char lw[512];
        jsonio_path(lw, sizeof lw, where, "layer_types");
        if (jsonio_expect_array(lt, lw, e)) return -1;
        int n = cJSON_GetArraySize(lt);
        if (n < 1 || n > m->layers)
            return err_set(e, "%s: got %d entries, expected one per layer (%d) or a shorter pattern "
                              "that repeats", lw, n, m->layers);
        unsigned char pat[MODEL_MAX_LAYERS];
        for (int i = 0; i < n; i++) {
            const cJSON *v = cJSON_GetArrayItem(lt, i);
            char iw[600];
            jsonio_index(iw, sizeof iw, lw, i);
            int k = -1;
            for (int j = 0; cJSON_IsString(v) && model_layer_kinds[j]; j++)
                if (!strcmp(v->valuestring, model_layer_kinds[j])) k = j;
            if (k < 0)
                return err_set(e, "%s: got %s%s%s, expected \"full\", \"sliding\" or \"linear\"", iw, cJSON_IsString(v) ? "\"" : "",
                               cJSON_IsString(v) ? v->valuestring : "a non-string", cJSON_IsString(v) ? "\"" : "");
            pat[i] = (unsigned char)k;
        }
        for (int i = 0; i < m->layers; i++) m->layer_kind[i] = pat[i % n];
    }
    int any_sliding = 0, any_linear = 0;
    for (int i = 0; i < m->layers; i++) {
        any_sliding |= m->layer_kind[i] == MODEL_LAYER_SLIDING;
        any_linear |= m->layer_kind[i] == MODEL_LAYER_LINEAR;
    }
    if (m->sliding_window > 0 && !any_sliding)
        return err_set(e, "%s: sliding_window = %d but no layer in \"layer_types\" is \"sliding\"", where,
                       m->sliding_window);
    if (any_sliding && m->sliding_window < 1)
        return err_set(e, "%s: \"layer_types\" has sliding layers: give \"sliding_window\" (tokens, >= 1)",
                       where);

    const cJSON *la = cJSON_GetObjectItemCaseSensitive(obj, "linear_attention");
    if (la && !any_linear)
        return err_set(e, "%s: \"linear_attention\" given but no layer in \"layer_types\" is \"linear\"", where);
    if (any_linear && !la)
        return err_set(e, "%s: \"layer_types\" has linear layers: describe them in \"linear_attention\"", where);
    if (la) {
        char lw[512];
        jsonio_path(lw, sizeof lw, where, "linear_attention");
        int kind = 0, sd = 0;
        if (jsonio_expect_object(la, lw, e) || jsonio_check_keys(la, lw, model_linear_keys, e) ||
            jsonio_enum(la, "kind", lw, 1, model_linear_kinds, &kind, e) < 0 ||
            model_get_int(la, "heads", lw, 1, 1, 65536, &m->linear_heads, e) < 0 ||
            model_get_int(la, "key_head_dim", lw, 1, 1, 65536, &m->linear_key_dim, e) < 0 ||
            model_get_int(la, "value_head_dim", lw, 1, 1, 65536, &m->linear_value_dim, e) < 0 ||
            model_get_int(la, "conv_kernel", lw, 0, 0, 64, &m->linear_conv, e) < 0 ||
            model_get_int(la, "gate_rank", lw, 0, 0, big, &m->linear_gate_rank, e) < 0 ||
            jsonio_enum(la, "state_dtype", lw, 0, model_state_dtypes, &sd, e) < 0)
            return -1;
        m->linear_key_heads = m->linear_heads;
        if (model_get_int(la, "key_heads", lw, 0, 1, 65536, &m->linear_key_heads, e) < 0) return -1;
        m->linear_kind = (ModelLinearKind)kind;
        m->linear_state_dtype = (Dtype)dtype_parse(model_state_dtypes[sd]);
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
    if (m->fp8_checkpoint == DTYPE_FP8_BLOCK && m->weight_dtype != DTYPE_FP8_BLOCK)
        cJSON_AddStringToObject(obj, "fp8_checkpoint", "fp8_block");
    if (m->experts > 0) {
        cJSON *moe = cJSON_AddObjectToObject(obj, "moe");
        if (moe) {
            cJSON_AddNumberToObject(moe, "experts", m->experts);
            cJSON_AddNumberToObject(moe, "active_experts", m->active_experts);
            cJSON_AddNumberToObject(moe, "expert_ffn", m->expert_ffn);
            if (m->shared_experts > 0) {
                cJSON_AddNumberToObject(moe, "shared_experts", m->shared_experts);
                cJSON_AddNumberToObject(moe, "shared_expert_ffn", m->shared_expert_ffn);
            }
            if (m->dense_layers > 0) cJSON_AddNumberToObject(moe, "dense_layers", m->dense_layers);
            if (m->expert_dtype != m->weight_dtype)
                cJSON_AddStringToObject(moe, "dtype", dtype_name(m->expert_dtype));
            if (m->routing == MODEL_ROUTING_ZIPF) {
                cJSON *rt = cJSON_AddObjectToObject(moe, "routing");
                if (rt) {
                    cJSON_AddStringToObject(rt, "kind", "zipf");
                    jsonio_add_num(rt, "s", m->routing_s);
                }
            }
        }
        cJSON_AddNumberToObject(obj, "params_active", (double)m->params_active);
    }
    if (m->attn == MODEL_ATTN_MLA) {
        cJSON *at = cJSON_AddObjectToObject(obj, "attention");
        if (at) {
            cJSON_AddStringToObject(at, "kind", "mla");
            cJSON_AddNumberToObject(at, "q_lora_rank", m->q_lora_rank);
            cJSON_AddNumberToObject(at, "kv_lora_rank", m->kv_lora_rank);
            cJSON_AddNumberToObject(at, "qk_rope_head_dim", m->qk_rope_dim);
            cJSON_AddNumberToObject(at, "qk_nope_head_dim", m->qk_nope_dim);
            cJSON_AddNumberToObject(at, "v_head_dim", m->v_head_dim);
        }
        jsonio_add_num(obj, "flops_per_pair_absorbed", m->flops_per_pair_absorbed);
    }
    if (m->n_full != m->layers) {
        cJSON_AddNumberToObject(obj, "full_layers", m->n_full);
        cJSON_AddNumberToObject(obj, "sliding_layers", m->n_sliding);
        cJSON_AddNumberToObject(obj, "linear_layers", m->n_linear);
        if (m->n_sliding) cJSON_AddNumberToObject(obj, "sliding_window", m->sliding_window);
        if (m->n_linear) cJSON_AddNumberToObject(obj, "linear_state_bytes", m->linear_state_bytes);
    }
    if (m->weights_meta_bytes > 0) {
        cJSON_AddNumberToObject(obj, "weights_total_bytes", m->weights_total_bytes);
        cJSON_AddNumberToObject(obj, "weights_meta_bytes", m->weights_meta_bytes);
    }
    /* Counts are integers below 2^53: written exactly, not rounded. */
    cJSON_AddNumberToObject(obj, "params", (double)m->params);
    cJSON_AddNumberToObject(obj, "weights_read_bytes", m->weights_read_bytes);
    cJSON_AddNumberToObject(obj, "kv_bytes_per_token", model_kv_bytes_per_token(m, DTYPE_BF16));
    jsonio_add_num(obj, "flops_per_token", m->flops_per_token);
    jsonio_add_num(obj, "flops_per_pair", m->flops_per_pair);
    jsonio_add_num(obj, "lm_head_flops", m->lm_head_flops);
}
