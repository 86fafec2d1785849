/*
 * offload.h -- moving bytes between GPU and host memory: layer weights kept
 * in host memory and streamed into prefetch buffers every iteration, KV
 * transfers compressed when that wins, and the time value of keeping a
 * cached prefix (chapter 8 of ../shared/seeds/003_*.txt, section 8.4 and
 * exercises 8-4, 8-5).
 *
 * Weight offload.  Every `every`-th layer's MLP (layers every-1, 2*every-1,
 * ...) lives in host memory; its bytes are freed on the GPU, `buffers`
 * prefetch buffers of one layer's MLP each are taken back, and the net goes
 * to the KV pool.  In an iteration the compute is split evenly over the
 * layers (the chapter's timeline: 26.26 / 36 ms a layer); the link copies
 * the offloaded layers one after another, copy j starting once the link is
 * free and buffer j mod k is free (layer o(j-k) has finished), and layer l
 * starts when layer l-1 ended and, if offloaded, its copy has landed.  The
 * copies never take fewer than bytes / bandwidth, so an iteration whose
 * compute is shorter becomes link-bound: Qwen3-8B, 9 x 288 MiB over PCIe
 * Gen5 x16 (64 GB/s) is >= 42.5 ms per step against the 26.26 ms decode.
 *
 * Compressed transfer.  Sending r * S bytes and decompressing S at R_dec
 * beats sending S when r S / B + S / R_dec < S / B, i.e. R_dec > B / (1 - r);
 * otherwise the transfer goes uncompressed.
 *
 * Cache value.  Keeping a prefix of M MiB is worth
 *   V = p_hit * (T_recompute - T_fetch) - T_maintain
 * milliseconds per lookup, T_fetch = bytes / link, T_maintain = one copy
 * out = bytes / link; V / M ranks prefixes per MiB.
 *
 * Units: bytes, seconds, bytes per second.
 */
#ifndef SERVESIM_OFFLOAD_H
#define SERVESIM_OFFLOAD_H

#include <cjson/cJSON.h>

#include "common.h"
#include "model.h"
#include "policy.h"

/* Named host links, one direction, each with its source. */
typedef struct OffloadLink {
    const char *name;
    double bytes_per_s;
    const char *source;
} OffloadLink;
extern const OffloadLink offload_links[];
/* bytes/s of a named link, or -1 (message listing the names). */
double offload_link_parse(const char *name, const char *where, Err *e);

/* Bytes of one layer's MLP weights (all experts of a MoE layer). */
double offload_mlp_layer_bytes(const ModelDesc *m);

typedef struct OffloadCfg {
    uint32_t every;            /* offload layers every-1, 2*every-1, ... (>= 1) */
    uint32_t buffers;          /* prefetch buffers, one layer's MLP each (>= 1) */
    double link_bytes_per_s;   /* host -> GPU, one direction */
    char link_name[48];        /* as given ("pcie_gen5_x16", or "" for a number) */
} OffloadCfg;

/* What the configuration frees and costs for model m (per GPU with tp). */
typedef struct OffloadPlan {
    uint32_t layers;           /* layers whose MLP is offloaded */
    double layer_bytes;        /* one layer's MLP */
    double freed_bytes;        /* layers * layer_bytes */
    double buffer_bytes;       /* buffers * layer_bytes */
    double net_bytes;          /* freed - buffers: added to the KV pool */
    double copy_s;             /* per iteration: layers * layer_bytes / link (a lower bound) */
} OffloadPlan;

int offload_plan(const ModelDesc *m, int tp, const OffloadCfg *c, OffloadPlan *out, Err *e);
/* The iteration time when the compute takes compute_s (0 < compute_s),
 * following the pipeline above. */
double offload_iter_s(const ModelDesc *m, const OffloadCfg *c, double layer_bytes_per_gpu, double compute_s);
/* Parses a scenario's "offload" object: {"every": 4, "buffers": 1,
 * "link": "pcie_gen5_x16" | "link_gb_per_s": 64}; without either the link
 * is dflt_link (the hardware's host link) when > 0, else PCIe Gen5 x16. */
int offload_parse(const cJSON *v, const char *where, double dflt_link, OffloadCfg *c, Err *e);
/* The host link of a scenario object ("offload", "lora"): "link" (a named
 * link, offload_link_parse) or "link_gb_per_s", else dflt_link when > 0,
 * else PCIe Gen5 x16; its name ("" for a number) into name. */
int offload_link_json(const cJSON *v, const char *where, double dflt_link, double *bytes_per_s, char *name,
                      size_t name_len, Err *e);
/* The engine hook (policy.h) that stretches iterations to the link. */
int offload_hook_new(const ModelDesc *m, int tp, const OffloadCfg *c, BatchHook *out, Err *e);

/* Time to move `bytes` over a link of bw bytes/s, compressed to `ratio` of
 * the bytes and decompressed at dec_bytes_per_s when that is faster
 * (ratio in (0, 1), dec > bw / (1 - ratio)); ratio <= 0 or dec <= 0 means
 * uncompressed.  *compressed (may be NULL) says which was chosen. */
double offload_kv_transfer_s(double bytes, double bw, double ratio, double dec_bytes_per_s, int *compressed);
/* The decompression rate above which compression wins: bw / (1 - ratio). */
double offload_kv_breakeven_dec(double bw, double ratio);
/* Parses {"compression_ratio": r, "decompress_gb_per_s": R}. */
int offload_kv_parse(const cJSON *v, const char *where, double *ratio, double *dec_bytes_per_s, Err *e);

/* Cache value of one prefix. */
typedef struct CacheValue {
    double tokens, bytes;      /* prefix length and its KV bytes */
    double recompute_s;        /* prefill FLOPs / (peak * efficiency) */
    double fetch_s, maintain_s;/* bytes / link each */
    double p_hit;
    double value_s;            /* p (T_r - T_f) - T_m */
    double value_s_per_mib;
    double breakeven_p;        /* p at which V = 0: T_m / (T_r - T_f) */
} CacheValue;
/* Recompute priced as a prefill of `tokens` from nothing (model FLOPs of
 * cost_flops, the LM head on the last position) at flops_per_s. */
void offload_cache_value(const ModelDesc *m, double kv_bytes_per_token, double tokens, double p_hit,
                         double flops_per_s, double link_bytes_per_s, CacheValue *out);

#endif
