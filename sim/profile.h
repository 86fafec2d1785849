/*
 * profile.h -- calibrated operator-latency profiles (models/profiles/NAME.json),
 * the only contract between calibration and simulation.
 *
 * A profile predicts the latency of one launch of an operator class
 * (a GEMM, one layer's prefill or decode attention over a batch, an
 * all-reduce, a memory stream, an empty launch) from its shape:
 *
 *     t = t0 + per_unit * units + max(flops / (peak_flops * e_compute),
 *                                     bytes / (mem_bw * e_mem))
 *
 * e_compute and e_mem are products of efficiency curves, each over one
 * shape feature (GEMM rows m, attention context, batch x KV heads, ...):
 * ln(eff) is piecewise linear in log2(feature) between knots and constant
 * beyond the first and last knot.  Interpolating ln(eff) rather than eff
 * reproduces a power law (e.g. eff proportional to m while a GEMM is
 * memory-bound) exactly between knots.
 *
 * The same functions evaluate a profile in the fitter (calib/calib_fit.c),
 * in the roofline (sim/cost.c) and in `servesim cost`, so what was fitted
 * is what is simulated.  Each operator records the bounds of the grid it
 * was measured on; profile_extrapolation() says how far a query lies
 * outside them.
 *
 * Units: seconds, FLOPs, bytes, FLOP/s, bytes/s in the struct; the JSON says
 * *_us where microseconds read better.
 */
#ifndef SERVESIM_PROFILE_H
#define SERVESIM_PROFILE_H

#include <cjson/cJSON.h>

#include "common.h"
#include "model.h"

/* Shape features an efficiency curve or a grid bound may be over. */
typedef enum {
    PF_M = 0,     /* GEMM rows (tokens) */
    PF_N,         /* GEMM output features */
    PF_K,         /* GEMM input features */
    PF_NK,        /* GEMM weight elements n * k */
    PF_MN,        /* GEMM output elements m * n */
    PF_TILES,     /* GEMM 128 x 128 output tiles: ceil(m / 128) ceil(n / 128) */
    PF_BATCH,     /* sequences in the launch (all-reduce: none) */
    PF_CHUNK,     /* new tokens per sequence (prefill chunk c; decode 1) */
    PF_KV_MEAN,   /* keys attended per query on average: h + (c + 1) / 2 */
    PF_KV_LEN,    /* keys of the sequence after the step: h + c */
    PF_GROUP,     /* query heads per KV head (GQA group) */
    PF_UNITS,     /* batch x KV heads: the attention kernels' parallel units */
    PF_QROWS,     /* query rows per KV head and sequence: c x group (a GQA-packed tile's rows) */
    PF_CTAS,      /* attention blocks: units x ceil(qrows / 128) */
    PF_BYTES,     /* bytes moved (GEMM, memory kernels) or message bytes (all-reduce) */
    PF_GPUS,      /* GPUs in a collective */
    PF_RING,      /* ring steps of an all-reduce: 2 (gpus - 1) */
    PF_HEAD_DIM,  /* attention head dimension (kernels are instantiated per head size) */
    PF_PEER_BYTES,/* all-reduce: message bytes x (gpus - 1), what a one-shot all-reduce reads
                     from its peers (where a custom all-reduce switches algorithm) */
    PF_COUNT
} ProfFeat;

#define PF_NONE (-1)

const char *profile_feat_name(int f);
/* Returns -1 when the name is unknown. */
int profile_feat_parse(const char *name);

/* Operator classes.  The values are not part of the file format (profiles
 * name their classes), but they index arrays: new classes go last, so that a
 * profile file written before them is rewritten byte for byte. */
typedef enum {
    PROF_GEMM_BF16 = 0, /* BF16/FP16 GEMM: bf16 in, weights, out */
    PROF_GEMM_FP8,      /* FP8 GEMM (per-tensor scales): fp8 in and weights, bf16 out */
    PROF_ATTN_PREFILL,  /* one layer's prefill (context) attention, causal, 16-bit KV */
    PROF_ATTN_DECODE,   /* one layer's decode attention over a paged 16-bit KV cache */
    PROF_ALLREDUCE,     /* all-reduce across a TP group (NCCL or an engine's custom one) */
    PROF_MEM_READ,      /* streaming read of a buffer */
    PROF_MEM_COPY,      /* device-to-device copy (bytes = read + written) */
    PROF_LAUNCH,        /* an empty kernel: launch overhead */
    PROF_GEMM_FP8_BLOCK,   /* block-scaled FP8 GEMM (1 x 128 activation, 128 x 128 weight scales) */
    PROF_GEMM_NVFP4,       /* NVFP4 GEMM (E2M1 with an E4M3 scale per 16 values), bf16 out */
    PROF_ATTN_PREFILL_FP8KV, /* prefill attention writing and reading an FP8 KV cache */
    PROF_ATTN_DECODE_FP8KV,  /* decode attention over an FP8 KV cache */
    PROF_MOE_BF16,      /* one GPU's fused MoE layer (routing, permute, grouped expert GEMMs,
                           finalize; no communication), BF16 experts */
    PROF_MOE_FP8,       /* the same with per-tensor FP8 experts */
    PROF_MOE_FP8_BLOCK, /* the same with block-scaled FP8 experts (DeepSeek) */
    PROF_ALLTOALL,      /* NCCL all-to-all across the expert-parallel group */
    PROF_MLA_PREFILL,   /* MLA context attention (decompressed K/V, causal), 16-bit KV cache */
    PROF_MLA_DECODE,    /* MLA generation attention (absorbed: every head over one latent) */
    PROF_MLA_PREFILL_FP8KV, /* the same over an FP8 KV cache */
    PROF_MLA_DECODE_FP8KV,
    PROF_MOE_W4A16,     /* fused MoE with MXFP4 experts and BF16 activations (gpt-oss on Hopper) */
    PROF_OP_COUNT
} ProfOpKind;

const char *profile_op_name(int op);
int profile_op_parse(const char *name);
/* 1 for the GEMM classes, the attention classes; peaks apply to both. */
int profile_op_is_gemm(int op);
int profile_op_is_attn(int op);
/* MLA attention is timed as an attention launch of this shape (mla_attn_dims):
 * prefill as MHA over the decompressed heads (q_heads = kv_heads = local
 * heads, head_dim = nope + rope), decode as MQA over the cached latent
 * (kv_heads 1, head_dim = kv_lora_rank + rope) whose K and V are one buffer
 * (KV bytes per element halved, so a cached token counts latent bytes once). */
void profile_mla_dims(int decode, double heads, double kv_lora, double rope, double nope, double kv_b,
                      double *qh, double *kvh, double *hd, double *kv_b_eff);
/* 1 for the fused-MoE classes (their compute peak is their dtype's). */
int profile_op_is_moe(int op);
/* The fused-MoE class of an expert dtype (bf16/fp16, fp8, fp8_block, mxfp4
 * as W4A16); -1 for the others (they are priced as grouped GEMMs by the
 * GEMM classes). */
int profile_moe_op(Dtype t);
/* Bytes per activation and per weight element of a fused-MoE class's
 * experts (the GEMM class's; mxfp4: BF16 activations, 17 B per 32 weights). */
void profile_moe_bytes(Dtype t, double *in_b, double *w_b);
/* The GEMM class that prices a compute dtype (bf16, fp16 and the CPU's fp32
 * -> gemm_bf16, fp8, fp8_block, nvfp4); -1 for the GGML block formats. */
int profile_gemm_op(Dtype t);
/* Bytes per element of a GEMM class's activations, weights and output, block
 * scales included (dtype_act_bytes, dtype_bytes): bf16 2/2/2, fp8 1/1/2,
 * fp8_block 1.03125/1.000244/2, nvfp4 0.5625/0.5625/2.  The fitter counts
 * measured rows and the roofline counts simulated launches with these. */
void profile_gemm_bytes(int op, double *in_b, double *w_b, double *out_b);

#define PROF_KNOTS 24
#define PROF_CURVES 4
#define PROF_GRID 5

typedef struct ProfCurve {
    int feat;               /* ProfFeat */
    int n;                  /* knots, >= 1 */
    double lx[PROF_KNOTS];  /* log2(feature) at the knots, strictly ascending */
    double le[PROF_KNOTS];  /* ln(efficiency) at the knots */
} ProfCurve;

/* What a fit reports about itself (kept in the profile for `calib report`). */
typedef struct ProfFitStats {
    int rows;            /* distinct shapes measured */
    int train_rows;      /* shapes the shipped parameters were fitted on (all) */
    int held_out_rows;   /* shapes held out in the validation fit */
    int outliers;        /* training shapes dropped as > 2x off after a first pass */
    double train_median, train_p90;  /* |pred - meas| / meas, shipped fit, all shapes */
    double held_median, held_p90;    /* same, validation fit on 4/5, held-out 1/5 */
    char data[320];      /* what it was fitted from */
} ProfFitStats;

typedef struct ProfOp {
    int present;
    double peak_flops;      /* reference FLOP/s the compute efficiencies are fractions of */
    double bw_bytes_per_s;  /* reference bandwidth (memory, or the link for all-reduce) */
    double t0_s;            /* fixed time per launch */
    double unit_s;          /* time per unit of `unit_feat` */
    int unit_feat;          /* PF_NONE or the feature counting units */
    int n_ec, n_em;
    ProfCurve ec[PROF_CURVES]; /* e_compute = product */
    ProfCurve em[PROF_CURVES]; /* e_mem = product */
    int n_grid;
    int grid_feat[PROF_GRID];
    double grid_lo[PROF_GRID], grid_hi[PROF_GRID]; /* measured range of each feature */
    ProfFitStats fit;
} ProfOp;

typedef struct Profile {
    int present;            /* 0: no profile (the hardware's efficiencies apply) */
    char name[64];
    char hardware[64];      /* the hardware description it was fitted for */
    char source[512];       /* how it was made */
    double iter_overhead_s; /* < 0: not given (use the hardware's) */
    ProfOp op[PROF_OP_COUNT];
} Profile;

/* ------------------------------------------------------------ evaluation */

/* Product of the curves' efficiencies at the feature vector feat[PF_COUNT]. */
double profile_eff(const ProfCurve *c, int n, const double *feat);

/* One launch of `op` for a shape with the given features, FLOPs and bytes. */
double profile_op_time(const ProfOp *op, const double *feat, double flops, double bytes);

/* How far feat lies outside the op's measured grid: 1 inside, otherwise
 * the largest x / hi or lo / x over the grid's features; *which (may be
 * NULL) receives the feature (PF_NONE inside). */
double profile_extrapolation(const ProfOp *op, const double *feat, int *which);

/* Shapes -> features, FLOPs and bytes.  feat[] is fully written (unused
 * features 0).  Bytes per element may be fractional (block formats).
 *   GEMM: flops 2mnk; bytes w_b n k + in_b m k + out_b m n.
 *   attention (per layer, one GPU's heads): `batch` sequences each with c
 *     new tokens over h cached; flops 4 qh hd pairs(c, h) batch; bytes
 *     batch (2 c qh hd act_b (Q in, O out) + (h + c) kvt (K, V read) +
 *     c kvt (new K, V written)) with kvt = 2 kvh hd kv_b.
 *   all-reduce of `bytes` over `gpus`: bytes moved per GPU 2 (g-1)/g bytes.
 *   memory stream: bytes as given. */
void profile_gemm_shape(double m, double n, double k, double in_b, double w_b, double out_b, double *feat,
                        double *flops, double *bytes);
void profile_attn_shape(double batch, double c, double h, double qh, double kvh, double hd, double act_b,
                        double kv_b, double *feat, double *flops, double *bytes);
void profile_comm_shape(double msg_bytes, double gpus, double *feat, double *flops, double *bytes);
void profile_mem_shape(double buf_bytes, double *feat, double *flops, double *bytes);
/* One GPU's fused MoE layer: `tokens` tokens enter it (every attention-DP
 * rank's, as aiconfigurator's tables count them), each routed to `topk` of
 * `experts` experts; the GPU holds `local` of them (experts / EP) with an
 * FFN slice of `inter` (expert FFN / MoE-TP) over `hidden`, gated (3
 * matrices: gate, up, down).  Under uniform routing the GPU receives
 * A = tokens topk local / experts token-expert pairs and touches
 * U = local (1 - (1 - topk / experts)^tokens) distinct experts, each one a
 * GEMM pair over A / U rows:
 *   flops 2 A 3 inter hidden; bytes U 3 inter hidden w_b (weights of the
 *   touched experts only) + A hidden (in_b + 2) (rows in, BF16 rows out);
 *   features m = A / U rows per expert, n = inter, k = hidden, batch = U,
 *   mn = A inter, bytes. */
void profile_moe_shape(double tokens, double experts, double topk, double local, double inter, double hidden,
                       double in_b, double w_b, double *feat, double *flops, double *bytes);
/* The NCCL all-to-all of msg_bytes per GPU over `gpus`: each GPU sends and
 * receives (g - 1)/g of its buffer; features as an all-reduce's. */
void profile_a2a_shape(double msg_bytes, double gpus, double *feat, double *flops, double *bytes);

/* One sequence of an attention launch: c new tokens over h cached. */
typedef struct ProfSeq {
    double c, h;
} ProfSeq;

/* One launch of an attention op over n sequences of mixed lengths: the
 * per-sequence features (chunk, kv_mean, kv_len, qrows, group) come from
 * each sequence, the launch-wide ones (batch, units, ctas, bytes) from the
 * whole launch, and
 *     t = t0 + per_unit units + max(sum F_i / (P ec_i), sum B_i / (BW em_i)).
 * For n identical sequences this is profile_op_time of the uniform shape,
 * i.e. exactly what was fitted.
 *
 * An op measured on one sequence per launch only (its grid's batch range is
 * [1, 1], e.g. Vidur's A100 prefill table) cannot tell per-sequence from
 * launch-wide effects, so a launch-wide curve would price a batch as one
 * sequence of the summed size: causal work is sum c_i^2 / 2, not
 * (sum c_i)^2 / 2.  Such an op prices a batch as one launch's t0 plus each
 * sequence's own per-unit cost and roofline term, every feature that
 * sequence's:  t = t0 + sum_i (per_unit units_i + max(F_i / (P ec_i),
 * B_i / (BW em_i))).
 *
 * *ratio and *which (either may be NULL) receive the worst extrapolation
 * over the sequences. */
double profile_attn_time(const ProfOp *op, const ProfSeq *seq, size_t n, double qh, double kvh, double hd,
                         double act_b, double kv_b, double *ratio, int *which);
/* profile_attn_time of n single-token decode sequences (c = 1) from their
 * sums: sum_h their cached tokens, min_h and max_h the extremes -- the same
 * number, bit for bit (issue 16's decode fast path).  -1 (nothing
 * computed) when the op prices per sequence (single-sequence fits, a curve
 * over a per-sequence feature) or a sum could round. */
/* What profile_attn_decode_sums may keep between calls for one op and
 * launch shape (the caller's, zeroed).  Everything in it is exact: the op's
 * flags and the shape's constants, computed by the same expressions as the
 * per-call code did; where each curve, grid bound and the unit count read
 * their feature (PROF_DSRC_* in profile.c: a constant, the batch, the
 * bytes, ...); each curve's last feature value, ln(efficiency) and knot
 * interval; the last exp(sum of the curves' values). */
typedef struct ProfAttnMemo {
    const ProfOp *op;
    double qh, kvh, hd, act_b, kv_b; /* the launch shape the rest was made for */
    int per_seq, want_ctas, want_range;
    int no_sums;              /* 1: a CTA count that is not a whole number (not priced from sums) */
    double group, kvt, one_ctas, flops_per_pair; /* qh / kvh, 2 kvh hd kv_b, ..., 4 qh hd */
    int unit_src;             /* -1: no per-unit term */
    int src[2][PROF_CURVES];  /* side 0 e_compute, 1 e_mem */
    int grid_src[PROF_GRID];
    double grid_r[PROF_GRID]; /* a bound over a constant value: its ratio (profile_extrapolation's) */
    int n_grid_live, grid_live[PROF_GRID]; /* the bounds a call evaluates, in the grid's order */
    int side_const[2];        /* 1: every curve of the side over a constant value: eff[side] holds */
    int hint[2][PROF_CURVES]; /* the knot interval the last evaluation fell in */
    int ok[2][PROF_CURVES];
    double x[2][PROF_CURVES], le[2][PROF_CURVES];
    int has_eff[2];
    double sum_le[2], eff[2]; /* the last exp(sum of the curves' values) */
} ProfAttnMemo;
int profile_attn_decode_sums(const ProfOp *op, size_t n, double sum_h, double min_h, double max_h, double qh,
                             double kvh, double hd, double act_b, double kv_b, ProfAttnMemo *memo, double *t,
                             double *ratio, int *which);
/* The same in two steps, for a caller that prices many batches of one op
 * and shape: _prepare once (0, or -1 where the op prices per sequence and
 * sums never serve), then _eval per batch of n >= 1 sequences (0, or -1
 * where a sum could round; *ratio and *which set only on 0, which may be
 * NULL). */
int profile_attn_decode_prepare(ProfAttnMemo *memo, const ProfOp *op, double qh, double kvh, double hd, double act_b,
                                double kv_b);
int profile_attn_decode_eval(ProfAttnMemo *memo, size_t n, double sum_h, double min_h, double max_h, double *t,
                             double *ratio, int *which);

/* Convenience: a GEMM's latency under the profile's GEMM class gemm_op
 * (PROF_GEMM_BF16, PROF_GEMM_FP8, ...: the 0 / 1 of bf16 / fp8 as before),
 * counted with that class's bytes (profile_gemm_bytes); *ratio (may be
 * NULL) receives the extrapolation.  Returns a negative number when the
 * profile has no such GEMM. */
double profile_gemm_time(const Profile *p, int gemm_op, double m, double n, double k, double *ratio);

/* ------------------------------------------------------------------ I/O */

int profile_from_json(const cJSON *obj, const char *where, Profile *p, Err *e);
/* Loads models/profiles/<name>.json or a path ending in .json. */
int profile_load(const char *name_or_path, Profile *p, Err *e);
/* 1 and the path when models/profiles/<name>.json exists, else 0. */
int profile_bundled_path(const char *name, char *buf, size_t n);
cJSON *profile_to_json(const Profile *p);
/* Round-trips a profile through its JSON form, so that what is evaluated is
 * exactly what a file holds (numbers are written to 6-12 digits). */
int profile_normalize(Profile *p, Err *e);

#endif
