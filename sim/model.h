/*
 * model.h -- transformer model descriptions and the quantities derived
 * from them.
 *
 * A description (models/<name>.json) gives only the architecture: layers,
 * hidden size, query/KV heads, head dim, FFN size, vocab, tied embeddings,
 * weight dtype, and optional details (QK-norm, QKV bias, MoE).  Everything
 * a cost model needs -- parameter count, weight bytes read per engine step,
 * KV bytes per token, FLOPs per token and per attention pair -- is computed
 * here, never typed into a file.
 *
 * Units: counts are plain integers, bytes are bytes, FLOPs count a
 * multiply-add as 2.
 *
 * Fields added for the models served in 2026 (issue 17; all optional, a
 * dense GQA description derives exactly what it did before):
 *   MoE ("moe": {...})   experts, active_experts (top-k), expert_ffn,
 *                        shared_experts + shared_expert_ffn (always active),
 *                        dense_layers (leading layers with a dense MLP of
 *                        `ffn`: DeepSeek's first_k_dense_replace),
 *                        router_bias / expert_bias, dtype (the routed experts'
 *                        format: gpt-oss ships them in mxfp4), routing
 *                        ("uniform" or {"kind": "zipf", "s": ...}).
 *                        Derived: moe_layers, expert_params (one routed expert),
 *                        expert_bytes, params_active; model_expected_experts()
 *                        and model_weights_read_bytes_tokens() count only the
 *                        experts a batch of n tokens touches.
 *   Attention            attn = MODEL_ATTN_GQA (q/kv heads x head_dim) or
 *                        MODEL_ATTN_MLA ("attention": {"kind": "mla",
 *                        q_lora_rank, kv_lora_rank, qk_rope_head_dim,
 *                        qk_nope_head_dim, v_head_dim}): the cache holds one
 *                        latent of kv_lora_rank + rope dims per token per
 *                        layer; flops_per_pair is the naive (decompressed)
 *                        form, flops_per_pair_absorbed the weight-absorbed one.
 *   Layer kinds          layer_kind[i] in {FULL, SLIDING, LINEAR} from
 *                        "layer_types" (one entry per layer, or a shorter
 *                        pattern repeated); sliding layers keep at most
 *                        sliding_window tokens; linear (recurrent: KDA, gated
 *                        DeltaNet) layers keep a fixed state of
 *                        linear_state_bytes per sequence ("linear_attention").
 *                        n_full / n_sliding / n_linear count them.  KV for a
 *                        sequence: model_kv_bytes_for_tokens().
 *   Formats              mxfp4, int4 (weight-only, group 128), q2_k, q3_k,
 *                        q4_k, q6_k beside the old ones; a "q2_k" model follows
 *                        llama.cpp's Q2_K recipe (model_gguf_bytes()).
 */
#ifndef SERVESIM_MODEL_H
#define SERVESIM_MODEL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common.h"

typedef enum {
    DTYPE_BF16 = 0, /* 2 B per element */
    DTYPE_FP16,     /* 2 B */
    DTYPE_FP8,      /* 1 B */
    DTYPE_FP32,     /* 4 B */
    DTYPE_Q8_0,     /* 34 B per 32 values (GGML: 32 int8 codes + fp16 scale) */
    DTYPE_Q4_0,     /* 18 B per 32 values (16 B of nibbles + fp16 scale) */
    DTYPE_FP8_BLOCK,/* FP8 with block scales (DeepSeek style): 1 B per value plus one FP32
                       scale per 128 x 128 weight block (dtype_bytes) or per 1 x 128
                       activation group (dtype_act_bytes) */
    DTYPE_NVFP4,    /* NVIDIA FP4 (E2M1): 0.5 B per value plus one FP8 (E4M3) scale per
                       16 values = 9 B per 16 values, weights and activations alike */
    DTYPE_MXFP4,    /* OCP MX FP4 (E2M1) with one E8M0 scale per 32 values = 17 B per 32
                       (gpt-oss's routed experts) */
    DTYPE_INT4,     /* int4 weight-only (GPTQ/AWQ/Marlin): 4-bit codes plus one fp16 scale
                       per group of 128 = 66 B per 128 values */
    DTYPE_Q2_K,     /* GGML Q2_K: 256 values in 84 B = 64 B of 2-bit codes + 16 B of 4-bit
                       sub-block scales/mins + fp16 d and dmin (2.625 bits per value) */
    DTYPE_Q3_K,     /* GGML Q3_K: 110 B per 256 = 32 B high bits + 64 B low bits + 12 B
                       scales + fp16 d */
    DTYPE_Q4_K,     /* GGML Q4_K: 144 B per 256 = 128 B codes + 12 B scales + 2 fp16 */
    DTYPE_Q6_K,     /* GGML Q6_K: 210 B per 256 = 128 B low + 64 B high bits + 16 B int8
                       scales + fp16 d */
    DTYPE_COUNT
} Dtype;

/* Bytes for n values of type t stored as weights or KV (block formats round
 * up to whole blocks; fp8_block's 128 x 128 blocks are two-dimensional, so
 * their scales are counted per value: 4 B / 16384). */
double dtype_bytes(Dtype t, double n);
/* Bytes per activation element of a GEMM whose inputs are of type t, scales
 * included: fp8_block quantizes activations in 1 x 128 groups with an FP32
 * scale (1 + 4/128 B), nvfp4 in groups of 16 with an FP8 scale (9/16 B). */
double dtype_act_bytes(Dtype t);
/* The part of dtype_bytes(t, n) that is block metadata (scales, mins) rather
 * than codes: Q2_K 20 of every 84 B, q8_0 2 of 34, nvfp4 1 of 9; 0 for
 * plain formats. */
double dtype_meta_bytes(Dtype t, double n);
const char *dtype_name(Dtype t);
/* Returns -1 if the name is unknown. */
int dtype_parse(const char *name);

typedef enum { MODEL_ATTN_GQA = 0, MODEL_ATTN_MLA } ModelAttn;
typedef enum { MODEL_LAYER_FULL = 0, MODEL_LAYER_SLIDING, MODEL_LAYER_LINEAR } ModelLayerKind;
typedef enum { MODEL_LINEAR_KDA = 0, MODEL_LINEAR_GDN } ModelLinearKind;
typedef enum { MODEL_ROUTING_UNIFORM = 0, MODEL_ROUTING_ZIPF } ModelRouting;

#define MODEL_MAX_LAYERS 4096

typedef struct ModelDesc {
    char name[64];
    int layers;
    int hidden;
    int q_heads;
    int kv_heads;
    int head_dim;
    int ffn;           /* intermediate size of one (dense) MLP */
    int vocab;
    int tied_embeddings; /* LM head shares the input embedding table */
    int gated_mlp;     /* 1: SwiGLU (gate, up, down = 3 matrices); 0: 2 matrices */
    int qkv_bias;      /* biases on q, k, v projections (Qwen2) */
    int qk_norm;       /* per-head RMSNorm on q and k (Qwen3): 2 * head_dim params */
    int max_context;   /* tokens; 0 = unknown */
    Dtype weight_dtype;
    Dtype fp8_checkpoint; /* format of the published FP8 checkpoint ("fp8_checkpoint"): DTYPE_FP8
                             per-tensor (default) or DTYPE_FP8_BLOCK (128 x 128 block scales) */
    /* Mixture of experts (0 experts = dense).  Each layer has `experts`
     * MLPs of size `expert_ffn`, `active_experts` used per token, plus a
     * router of hidden * experts. */
    int experts;
    int active_experts;
    int expert_ffn;
    int shared_experts;    /* always-active experts per MoE layer (DeepSeek, Kimi: 1) */
    int shared_expert_ffn; /* intermediate size of one shared expert */
    int dense_layers;      /* leading layers with a dense MLP of `ffn` (first_k_dense_replace) */
    int router_bias;       /* router has one bias per expert (gpt-oss) */
    int expert_bias;       /* expert projections have biases (gpt-oss) */
    Dtype expert_dtype;    /* routed experts' weight format (defaults to weight_dtype) */
    ModelRouting routing;  /* how tokens pick experts, for the distinct-experts estimate */
    double routing_s;      /* zipf exponent: expert i (1-based) is picked with weight i^-s */

    /* Attention variants */
    ModelAttn attn;
    int q_lora_rank;       /* MLA: 0 = queries projected straight from hidden */
    int kv_lora_rank;      /* MLA: the cached latent's width */
    int qk_rope_dim;       /* MLA: decoupled RoPE key dims, cached beside the latent */
    int qk_nope_dim;       /* MLA: per-head key dims without RoPE */
    int v_head_dim;        /* MLA: per-head value dims */
    int attn_bias;         /* biases on q, k, v and o (gpt-oss); qkv_bias covers q, k, v only */
    int attn_sinks;        /* one learned sink logit per query head per layer (gpt-oss) */
    int sliding_window;    /* tokens a sliding layer keeps (0 = none) */
    unsigned char layer_kind[MODEL_MAX_LAYERS]; /* ModelLayerKind of each layer */
    /* Linear/recurrent layers (Kimi Delta Attention, gated DeltaNet) */
    ModelLinearKind linear_kind;
    int linear_heads;      /* value heads (state matrices) */
    int linear_key_heads;  /* key heads (= linear_heads for KDA) */
    int linear_key_dim;    /* per-head key dims */
    int linear_value_dim;  /* per-head value dims */
    int linear_conv;       /* short causal convolution kernel over q, k, v (0 = none) */
    int linear_gate_rank;  /* KDA: low-rank decay/output gates of this rank (0 = full rank) */
    Dtype linear_state_dtype; /* recurrent state element type (fp32) */
    char source[1024]; /* where the architecture figures come from (config.json fields) */

    /* ---- derived by model_derive() ---- */
    int64_t embed_params;       /* vocab * hidden (input table) */
    int64_t layer_params;       /* all parameters of one decoder layer */
    int64_t layer_matmul_params;/* weights that multiply activations (per token: active experts only) */
    int64_t lm_head_params;     /* vocab * hidden (shared with embed when tied) */
    int64_t params;             /* total parameters */
    double weights_read_bytes;  /* bytes read per engine step: all params but the input table
                                   (the table itself when tied, since the LM head reads it) */
    double flops_per_token;     /* 2 * layers * layer_matmul_params (no LM head, no attention) */
    double flops_per_pair;      /* attention: 4 * layers * q_heads * head_dim per query-key pair */
    double lm_head_flops;       /* 2 * vocab * hidden per sampled position */
    int n_full, n_sliding, n_linear; /* layers of each kind */
    int moe_layers;             /* layers with routed experts (layers - dense_layers) */
    int64_t expert_params;      /* one routed expert of one layer (biases included) */
    double expert_bytes;        /* bytes of one routed expert of one layer */
    int64_t params_active;      /* parameters one token uses: all but the unrouted experts */
    double flops_per_pair_absorbed; /* MLA decode with W_UK/W_UV absorbed (GQA: = flops_per_pair) */
    double sliding_flops_per_pair;  /* per pair inside the window, summed over sliding layers */
    double linear_state_bytes;  /* fixed recurrent state of one sequence, all linear layers */
    double linear_flops_per_token; /* recurrent state update + readout, all linear layers */
    double weights_meta_bytes;  /* block metadata (scales) within weights_total_bytes */
    double weights_total_bytes; /* every parameter in its stored format (the file's payload) */
} ModelDesc;

/* KV bytes per token of the layers whose cache grows with the context (full
 * attention) for a KV element type: 2 (K and V) * layers * kv_heads *
 * head_dim values; MLA: kv_lora_rank + qk_rope_dim values per layer.  For
 * Qwen3-8B in BF16: 147,456 B; DeepSeek-V3 (MLA) 70,272 B. */
double model_kv_bytes_per_token(const ModelDesc *m, Dtype kv_dtype);

/* KV bytes of one layer for one token (a full or sliding layer). */
double model_kv_bytes_per_token_layer(const ModelDesc *m, Dtype kv_dtype);

/* All the per-sequence state of a sequence of `tokens` tokens: full layers
 * grow with it, sliding layers stop at the window, linear layers hold a fixed
 * state (0 when tokens == 0). */
double model_kv_bytes_for_tokens(const ModelDesc *m, Dtype kv_dtype, double tokens);

/* Expected number of distinct routed experts one MoE layer runs for a batch
 * of n tokens, each choosing active_experts of experts: uniform routing gives
 * E * (1 - (1 - k/E)^n); zipf routing sums 1 - (1 - q_i)^n over experts with
 * per-token selection probabilities q_i = min(1, c * i^-s), c set so that
 * sum q_i = k.  0 for a dense model. */
double model_expected_experts(const ModelDesc *m, double n_tokens);

/* Weight bytes a step of n tokens reads: every weight but the input table and
 * the routed experts no token chose (model_expected_experts per MoE layer).
 * Equals weights_read_bytes for a dense model. */
double model_weights_read_bytes_tokens(const ModelDesc *m, double n_tokens);

/* Attention FLOPs of one sequence adding c tokens after h cached ones, over
 * every layer kind: full layers per causal pair (the
 * pair count c*h + c(c+1)/2) at flops_per_pair (or flops_per_pair_absorbed),
 * sliding layers only the pairs inside the window,
 * linear layers linear_flops_per_token per new token.  `absorbed` picks
 * MLA's absorbed form (decode) over the naive one. */
double model_attn_flops(const ModelDesc *m, double c, double h, int absorbed);

/* Fills the derived fields; checks consistency (e.g. q_heads divisible by
 * kv_heads).  where names the source for messages. */
int model_derive(ModelDesc *m, const char *where, Err *e);

/* Parses a description object (unknown keys rejected). */
int model_from_json(const cJSON *obj, const char *where, ModelDesc *m, Err *e);

/* Loads models/<name>.json from the models directory (see paths.h) or a
 * path ending in .json.  An unknown name lists the known ones. */
int model_load(const char *name_or_path, ModelDesc *m, Err *e);

/* Adds the description and derived quantities to a JSON object. */
void model_to_json(const ModelDesc *m, cJSON *obj);

#endif
