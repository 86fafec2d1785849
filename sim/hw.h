/*
 * hw.h -- hardware (GPU) descriptions and calibrated efficiency profiles.
 *
 * A description (models/hardware/<name>.json) carries datasheet peaks --
 * dense FLOP/s per dtype, memory bandwidth and size, interconnect -- each
 * with its source, plus default efficiencies, per-iteration overhead,
 * power and an indicative price.  A calibrated profile (profile.h,
 * models/profiles/<name>.json) attached to the description replaces the
 * efficiencies in the roofline with fitted per-operator latency models;
 * hw_load attaches the profile of the same name when one is bundled.  The
 * profile JSON is the only contract between calibration and simulation.
 *
 * Units: FLOP/s, bytes/s, bytes, seconds in the JSON where named *_s or
 * *_us as the key says; the struct stores SI units (s, B, B/s).
 */
#ifndef SERVESIM_HW_H
#define SERVESIM_HW_H

#include <cjson/cJSON.h>

#include "common.h"
#include "model.h"
#include "profile.h"

/* A piecewise-linear efficiency curve over log2(x); with n == 0 the
 * constant `flat` applies.  Used for shape-dependent efficiencies (GEMM
 * rows, attention context). */
#define HW_CURVE_MAX 32
typedef struct EffCurve {
    double flat;              /* efficiency in (0, 1] when n == 0 */
    int n;
    double x[HW_CURVE_MAX];   /* ascending, > 0 */
    double eff[HW_CURVE_MAX]; /* in (0, 1] */
} EffCurve;

double effcurve_at(const EffCurve *c, double x);

typedef struct HwDesc {
    char name[64];
    double peak_flops[DTYPE_COUNT]; /* dense tensor-core FLOP/s by compute dtype; 0 = unsupported */
    double mem_bw_bytes_per_s;      /* peak HBM/DRAM bandwidth */
    double mem_bytes;               /* device memory */
    int unified_memory;             /* one pool shared by weights, KV and the host OS (Apple silicon):
                                       runtime_reserve is the OS's share */
    double link_bw_bytes_per_s;     /* GPU-GPU, per direction (NVLink, or PCIe when none) */
    double link_latency_s;          /* per collective step */
    double host_link_bw_bytes_per_s;/* GPU <-> host memory, per direction (PCIe); 0 = not given */
    /* Efficiencies (fractions of peak) -- defaults, replaced by a profile. */
    EffCurve gemm_compute_eff;      /* over GEMM rows (tokens in the step) */
    double mem_eff;                 /* achieved / peak bandwidth for streaming reads */
    double attn_compute_eff;        /* prefill attention (FlashAttention-style) */
    double attn_mem_eff;            /* decode attention KV streaming */
    double iter_overhead_s;         /* per engine iteration: launches, scheduling, sampling */
    double runtime_reserve_bytes;   /* activations, CUDA graphs, allocator slack, NCCL buffers */
    double mem_util;                /* fraction of memory the engine may use (vLLM gpu_memory_utilization) */
    double idle_w, busy_w;          /* power draw, 0 = unknown */
    double usd_per_gpu_hour;        /* indicative on-demand price */
    char source[512];               /* short note on where the figures come from */
    /* Calibrated profile: "" = none looked up, "none" = explicitly none,
     * otherwise the name (models/profiles/) or path it was loaded from. */
    char profile_name[256];
    Profile profile;                /* used by the roofline when profile.present */
} HwDesc;

/* An optional "profile" key names the profile to attach (a name in
 * models/profiles/, a path ending in .json, or "none"). */
int hw_from_json(const cJSON *obj, const char *where, HwDesc *h, Err *e);
/* Loads models/hardware/<name>.json or a path ending in .json; for a
 * bundled name without a "profile" key, attaches models/profiles/<name>.json
 * when it exists. */
int hw_load(const char *name_or_path, HwDesc *h, Err *e);
/* Attaches a profile (name, .json path; "none" or NULL detaches).  A
 * profile that gives iter_overhead_us replaces the hardware's overhead. */
int hw_attach_profile(HwDesc *h, const char *name_or_path, Err *e);
/* Attaches models/profiles/<name>.json when it exists and the description
 * named no profile of its own (what hw_load does for a bundled name; for a
 * description built on a bundled one, e.g. {"base": "h100-sxm", ...}). */
int hw_default_profile(HwDesc *h, const char *name, Err *e);
void hw_to_json(const HwDesc *h, cJSON *obj);

/* KV capacity in bytes across a TP group of `tp` GPUs when the user gives
 * none: tp * (mem_bytes * mem_util - weights/tp - runtime_reserve), the
 * weights in their stored formats (m->weights_total_bytes).  Returns
 * a negative number when the weights do not fit. */
double hw_kv_capacity_bytes(const HwDesc *h, const ModelDesc *m, int tp);

#endif
