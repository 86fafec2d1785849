/*
 * calib_meas.h -- kernel measurements: the CSV schema shared by the
 * calibration driver, the importers of published tables, and the fitter.
 *
 * One row is one timed launch of an operator at one shape:
 *
 *   op,dtype,kv_dtype,m,n,k,batch,chunk,ctx,q_heads,kv_heads,head_dim,size_bytes,flops,bytes,latency_ms,tag
 *
 *   op          gemm | attn_prefill | attn_decode | allreduce | mem_read | mem_copy | launch |
 *               moe | alltoall
 *   dtype       element type of the GEMM inputs / the attention's Q (bf16, fp16, fp8, fp32;
 *               GEMMs also fp8_block, nvfp4)
 *   kv_dtype    attention: KV-cache element type; otherwise = dtype
 *   m, n, k     GEMM: token rows, output features, input features (as in NVIDIA's tables)
 *   batch       attention: sequences; allreduce: GPUs
 *   chunk, ctx  attention: new tokens per sequence c and cached tokens before them h
 *               (decode: c = 1, h = context - 1)
 *   q_heads, kv_heads, head_dim   attention heads on the GPU
 *   size_bytes  allreduce: message bytes; mem_*: buffer bytes
 *   flops, bytes  derived from the shape by calib_meas_counts (profile.c's accounting);
 *               a file whose values disagree with the shape is refused
 *   latency_ms  measured time of one launch
 *   moe         m tokens entering the layer, n expert FFN per GPU, k hidden, batch local
 *               experts, chunk top-k, ctx routed experts (profile_moe_shape); dtype the experts'
 *   tag         provenance (importer and kernel, e.g. "aic:vllm_flash_attn", "vidur:qkv", "cpu")
 *
 * Unused columns hold 0.  Importers turn NVIDIA's aiconfigurator tables and
 * Vidur's profiling CSVs into the same rows.
 */
#ifndef SERVESIM_CALIB_MEAS_H
#define SERVESIM_CALIB_MEAS_H

#include <stdio.h>

#include "common.h"
#include "model.h"

typedef enum {
    MEAS_GEMM = 0,
    MEAS_ATTN_PREFILL,
    MEAS_ATTN_DECODE,
    MEAS_ALLREDUCE,
    MEAS_MEM_READ,
    MEAS_MEM_COPY,
    MEAS_LAUNCH,
    MEAS_MOE,      /* one GPU's fused MoE layer: m tokens entering it, n the local expert FFN
                      slice (FFN / MoE-TP), k hidden, batch the local experts (experts / EP),
                      chunk top-k, ctx the model's routed experts */
    MEAS_ALLTOALL, /* NCCL all-to-all: batch GPUs, size_bytes each GPU's buffer */
    MEAS_MLA_PREFILL, /* MLA attention (DeepSeek-V3 shape: latent 512, rope 64, nope 128):
                         batch, chunk, ctx as attention, q_heads the local heads */
    MEAS_MLA_DECODE,
    MEAS_OP_COUNT
} MeasOp;

const char *calib_meas_op_name(int op);

/* The MLA shape of aiconfigurator's MLA tables (collect_mla.py defaults). */
#define MEAS_MLA_KV_LORA 512
#define MEAS_MLA_ROPE 64
#define MEAS_MLA_NOPE 128

/* The routing distribution of the moe_perf rows a fit keeps: power_law_1.01,
 * where EP rank 0 (the timed GPU) gets the heaviest expert group -- the rank
 * every other waits for (calib/README.md). */
#define MEAS_MOE_DISTRIBUTION "power_law_1.01"

typedef struct Meas {
    int op;              /* MeasOp */
    int dtype, kv_dtype; /* Dtype */
    double m, n, k;
    double batch, chunk, ctx;
    double q_heads, kv_heads, head_dim;
    double size_bytes;
    double flops, bytes; /* from calib_meas_counts */
    double latency_ms;
    char tag[40];
} Meas;

typedef struct MeasSet {
    Meas *rows;
    size_t n, cap;
    char sources[2048]; /* "; "-separated list of what was read */
    size_t skipped;      /* rows of imported tables not used (other dtypes, windows, beams) */
} MeasSet;

void calib_meas_init(MeasSet *s);
void calib_meas_free(MeasSet *s);
/* Fills flops, bytes from the shape; returns -1 (with a message naming the
 * bad field) when the shape is invalid for its op. */
int calib_meas_counts(Meas *r, Err *e);
/* The profile features (profile.h), FLOPs and bytes of a valid row: the
 * single place a measured shape meets the simulator's accounting. */
void calib_meas_features(const Meas *r, double *feat, double *flops, double *bytes);
/* Appends a row (its counts computed); -1 when invalid. */
int calib_meas_add(MeasSet *s, const Meas *r, Err *e);

/* Reads any supported file: the servesim measurement CSV, an
 * aiconfigurator directory -- a per-GPU one (kernels/aiconfigurator/<gpu>)
 * or a per-engine one (kernels/aiconfigurator_backends/<gpu>/<backend>-<v>):
 * every gemm_perf.csv, context_attention_perf.csv,
 * generation_attention_perf.csv, custom_allreduce_perf.csv and nccl_perf.csv
 * in it -- or one of those files, Vidur's mlp.csv, attention.csv or
 * all_reduce.csv.  The kind is told by the header (an attention table
 * without op_name by its file name). */
int calib_meas_import(MeasSet *s, const char *path, Err *e);

int calib_meas_write_csv(const MeasSet *s, FILE *f);
int calib_meas_write_file(const MeasSet *s, const char *path, Err *e);

/* A short description of the row's shape ("m=64 n=4096 k=4096", ...). */
const char *calib_meas_shape_str(const Meas *r, char *buf, size_t n);

/* Element bytes of a Dtype used by the counts (fp32 4, bf16/fp16 2, fp8 1;
 * fp8_block and nvfp4 activations with their scales, dtype_act_bytes). */
double calib_meas_elem_bytes(int dtype);

/* The profile operator (ProfOpKind) a row calibrates, -1 when none. */
int calib_meas_prof_op(const Meas *r);

#endif
