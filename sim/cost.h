/*
 * cost.h -- per-iteration cost models (SPEC section 5).
 *
 *   linear    T = fixed + per_token * sum(c) + per_pair * sum(pairs(c, h));
 *             the chapters' worked examples (26.22 ms + 30.4 us/token +
 *             3 ns/pair on an RTX PRO 6000) use it.
 *   roofline  per operator class, max(FLOPs / (peak * e_compute),
 *             bytes / (bandwidth * e_mem)), summed, plus the per-iteration
 *             overhead and, for TP > 1, two ring all-reduces per layer.
 *             Classes: dense projections + MLP ("gemm"), prefill attention,
 *             decode attention, LM head.  GEMM compute efficiency may depend
 *             on the rows in the step (a curve from the hardware file).
 *   roofline with a calibrated profile (hw.profile.present): every class
 *             is timed by the profile's fitted operator model (profile.h)
 *             -- each of a layer's GEMMs (QKV, O, gate/up, down; MoE
 *             experts and router) at its own (m, n, k) by the compute
 *             dtype's class (bf16/fp16 gemm_bf16, fp8 gemm_fp8, fp8_block
 *             gemm_fp8_block, nvfp4 gemm_nvfp4; a missing class falls back
 *             to the nearest slower one, counted), one prefill and one
 *             decode attention launch per layer over the batch's sequences
 *             (the *_fp8kv classes for an FP8 KV cache when the profile has
 *             them), the LM head over the sampled rows by gemm_bf16 (split
 *             into measured widths when it is wider than any measured
 *             GEMM), two all-reduces of the hidden states per layer by the
 *             profile's allreduce class when it has one -- plus the
 *             per-iteration overhead.  Every query whose shapes leave the
 *             profile's measured grid is counted (cost_extrapolation).
 *   table     a measured step-time table: T interpolated linearly between
 *             (x, step time) points, x being the bytes the step moves
 *             (weights the step reads, MoE experts only as touched, plus
 *             every sequence's KV read, (h + c) * kv_bytes_per_token) or the
 *             new tokens in it; beyond the table the end segments extend
 *             (never below 0).  The chapter prices its design-board option C
 *             so: 25.40 GB between the measured 19.97 GB / 27.44 ms and
 *             34.46 GB / 29.63 ms rounds gives 28.26 ms.
 * All fill a CostBreakdown: the time of each class, FLOPs and bytes.
 */
#ifndef SERVESIM_COST_H
#define SERVESIM_COST_H

#include "hw.h"
#include "model.h"
#include "policy.h"

typedef struct LinearCostCfg {
    double fixed_s;
    double per_token_s;
    double per_pair_s;
} LinearCostCfg;

int cost_linear_new(const LinearCostCfg *cfg, CostModel *out, Err *e);

/* A stated step time per phase: an iteration with a prefill takes
 * prefill_s, any other (decode or verify rounds) round_s -- how a chapter
 * prices a design from two measured numbers (its design board, 8.6.3). */
int cost_phase_new(double prefill_s, double round_s, CostModel *out, Err *e);

#define COST_TABLE_MAX 64
typedef struct TableCostCfg {
    int by_tokens;             /* 0: x = bytes moved by the step; 1: x = new tokens */
    int n;                     /* points, 2 .. COST_TABLE_MAX, x strictly ascending */
    double x[COST_TABLE_MAX];
    double t_s[COST_TABLE_MAX];
    ModelDesc model;           /* weights read per step (by bytes) */
    double kv_bytes_per_token; /* whole model (by bytes) */
} TableCostCfg;

/* Checks the points (ascending x, times >= 0) and builds the model. */
int cost_table_new(const TableCostCfg *cfg, CostModel *out, Err *e);
/* The table's time at x (the interpolation alone). */
double cost_table_at(const TableCostCfg *cfg, double x);

typedef struct RooflineCfg {
    ModelDesc model;
    HwDesc hw;                 /* efficiencies and overhead already final */
    int tp;                    /* tensor-parallel degree */
    Dtype compute_dtype;       /* selects the peak FLOP/s */
    double kv_bytes_per_token; /* whole model (all layers), before TP split */
    double act_bytes;          /* bytes per activation element (all-reduce payload) */
    int weights_separate;      /* what-if (003 figure 8-4): weights come from a separate memory, so
                                  HBM carries no weight reads (analytic roofline only) */
    /* Mixture-of-experts layout (issue 17; 0 = not given).  The cost model
     * prices one attention replica: `tp` GPUs run its attention; with
     * attn_dp > 1 there are attn_dp such replicas (attention data
     * parallelism), whose tokens meet in the MoE layers: as many as this
     * one's, or the step's total when group_tokens gives it (cluster.c's
     * lock-stepped group).  The routed experts are split over `ep` GPUs (expert
     * parallelism), each expert's FFN over `moe_tp`; ep x moe_tp = tp x
     * attn_dp.  Defaults: moe_tp = tp, ep = 1, attn_dp = 1. */
    int ep, moe_tp, attn_dp;
    /* Optional (cluster.c's lock-stepped attention-DP group): when it points
     * to a value > 0, the tokens of the whole step entering the MoE layers
     * (every rank's) instead of this replica's x attn_dp; < 0, this
     * replica's x attn_dp.  Either way (!= 0) the query reprices a step
     * already counted and is left out of the extrapolation counts. */
    const double *group_tokens;
    /* 1 (TensorRT-LLM): a MoE layer's shared experts run on an auxiliary
     * stream beside the routed experts (DeepseekV3MoE's
     * maybe_execute_in_parallel), which TensorRT-LLM enables only inside
     * CUDA graphs -- decode-only steps of a captured batch size -- so there
     * the layer takes the longer of the two, elsewhere their sum. */
    int moe_shared_overlap;
} RooflineCfg;

int cost_roofline_new(const RooflineCfg *cfg, CostModel *out, Err *e);

/* How often a profile-driven roofline had to extrapolate beyond the
 * profile's measured grid.  A query (one iteration's cost) counts once
 * however many of its operators left the grid; the ratio is how far the
 * farthest shape lay outside (x / grid max, or grid min / x). */
typedef struct CostExtrap {
    uint64_t queries;      /* iterations costed */
    uint64_t outside;      /* of which at least one operator shape was off the grid, or (with a
                              fallback) every one */
    double worst_ratio;    /* >= 1; 1 when none */
    char worst[160];       /* e.g. "layer GEMMs: m outside the measured 1 .. 8192 (x2.44)"; the
                              fallback until a shape leaves the grid */
    char fallback[160];    /* "" or e.g. "gemm_nvfp4 priced by gemm_fp8 (profile h100-sxm has no
                              gemm_nvfp4)": the compute dtype's GEMM class was missing */
} CostExtrap;

/* Fills *out and returns 0 for a roofline that uses a profile; returns -1
 * (and zeroes *out) for any other model.  Pass the roofline's own
 * CostModel, not a wrapper around it. */
int cost_extrapolation(const CostModel *cm, CostExtrap *out);

/* One MoE layer's routed-expert time on one GPU when `tokens` tokens (all
 * attention replicas') enter it, under the roofline's layout; *a2a_s the
 * dispatch + combine communication of that layer.  -1 when the model is
 * dense or the roofline has no MoE layout (the dense pricing applies). */
int cost_moe_layer(const CostModel *cm, double tokens, double *expert_s, double *a2a_s);

/* FLOPs of an iteration under the model's accounting (used by tests and
 * by the roofline): dense + attention + LM head for the sampled positions. */
double cost_flops(const ModelDesc *m, const BatchItem *items, uint32_t n);

#endif

/* The chapter's analytic read model (003 section 8.2): bytes read per
 * output token at batch b and context L, d(b, L) = Dw / b + L k, and the
 * batch at which the KV read reaches the amortised weight read,
 * bKV = ceil(Dw / (L k)). */
double cost_bytes_per_output_token(const ModelDesc *m, double kv_bytes_per_token, double b, double L);
uint64_t cost_kv_crossover_batch(const ModelDesc *m, double kv_bytes_per_token, double L);
