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
const char *dtype_name(Dtype t);
/* Returns -1 if the name is unknown. */
int dtype_parse(const char *name);

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
    /* Mixture of experts (0 experts = dense).  Each layer has `experts`
     * MLPs of size `expert_ffn`, `active_experts` used per token, plus a
     * router of hidden * experts. */
    int experts;
    int active_experts;
    int expert_ffn;
    char source[256];  /* where the architecture figures come from */

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
} ModelDesc;

/* KV bytes per token for a KV element type: 2 (K and V) * layers * kv_heads
 * * head_dim values.  For Qwen3-8B in BF16: 147,456 B. */
double model_kv_bytes_per_token(const ModelDesc *m, Dtype kv_dtype);

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
