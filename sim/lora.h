/*
 * lora.h -- multi-LoRA serving: adapters as a model resource, an adapter
 * cache on the GPU, and the grouped low-rank GEMMs of a mixed batch.
 *
 * An adapter adds, on each target projection W (d_in -> d_out) of every
 * layer, a rank-r pair A (d_in x r) and B (r x d_out): r (d_in + d_out)
 * parameters.  Qwen3-8B with r = 16 on Q (4096 -> 4096) and V (4096 ->
 * 1024) in BF16: 36 x 16 x (8192 + 5120) x 2 B = 14.625 MiB an adapter,
 * 1.43 GiB for 100 (chapter 8 of ../shared/seeds/003_*.txt).
 *
 * The cache holds `gpu_slots` adapters (their bytes are taken from the KV
 * pool).  A request's adapter must be resident in the iteration it first
 * runs; a missing one is copied over the host link (bytes / bandwidth,
 * added to that iteration, before its compute), evicting the least
 * recently used adapter that no request of the iteration needs.  At most
 * `max_per_batch` (<= gpu_slots) distinct adapters run at once: the
 * scheduler may not admit a request whose adapter would exceed it.  By
 * default such a request steps aside at each boundary (the queue is
 * stably reordered so that the requests that fit, walked in order and
 * counted as if each were admitted, come first -- vLLM's scheduler skips
 * them the same way); with "cap": "block" it holds the queue (FCFS).  The
 * low-rank part of a batch runs grouped by adapter (Punica/S-LoRA's
 * SGMV): per adapter segment of n rows and per target and layer, a shrink
 * (n x d_in) x (d_in x r) and an expand (n x r) x (r x d_out), each
 * max(FLOPs / (peak x e_gemm(n)), bytes / (bandwidth x e_mem)) with the
 * hardware's efficiencies; the more adapters in a batch, the fewer rows per
 * segment and the more adapter weights read.
 *
 * Units: bytes, seconds, bytes per second.
 */
#ifndef SERVESIM_LORA_H
#define SERVESIM_LORA_H

#include <cjson/cJSON.h>

#include "common.h"
#include "hw.h"
#include "model.h"
#include "policy.h"

enum { LORA_Q = 1, LORA_K = 2, LORA_V = 4, LORA_O = 8, LORA_GATE = 16, LORA_UP = 32, LORA_DOWN = 64 };
#define LORA_TARGETS 7
/* Adapter ids per scenario: each replica keeps 28 B per adapter (2.8 MB at
 * the bound); scenario.c also bounds adapters x replicas. */
#define LORA_ADAPTERS_MAX 100000
extern const char *const lora_target_names[LORA_TARGETS]; /* "q", "k", "v", "o", "gate", "up", "down" */

typedef struct LoraCfg {
    uint32_t rank;
    unsigned targets;           /* LORA_* bits */
    Dtype dtype;                /* adapter weights */
    uint32_t adapters;          /* ids 1 .. adapters exist (host memory holds them all) */
    uint32_t gpu_slots;         /* adapters resident on a GPU group at once */
    uint32_t max_per_batch;     /* distinct adapters among running requests */
    double link_bytes_per_s;    /* host -> GPU loads */
    int block;                  /* 1: a request over the cap blocks the queue ("cap": "block");
                                   0: it steps aside for later ones that fit ("skip", vLLM's) */
    char link_name[48];         /* "" when given as a number */
} LoraCfg;

/* "q,v" -> LORA_Q | LORA_V; -1 with a message naming the bad entry. */
int lora_targets_parse(const char *list, const char *where, unsigned *out, Err *e);
/* d_in, d_out of one target projection of m (0 for an unknown bit). */
void lora_target_shape(const ModelDesc *m, unsigned bit, double *d_in, double *d_out);
/* Parameters and bytes of one adapter on m. */
double lora_adapter_params(const ModelDesc *m, uint32_t rank, unsigned targets);
double lora_adapter_bytes(const ModelDesc *m, const LoraCfg *c);
/* Parses a scenario's "lora" object (model: checks targets exist); without
 * "link" or "link_gb_per_s" the link is dflt_link (the hardware's host
 * link) when > 0, else PCIe Gen5 x16. */
int lora_parse(const cJSON *v, const char *where, const ModelDesc *m, double dflt_link, LoraCfg *c, Err *e);

/* FLOPs, bytes and time of the grouped low-rank GEMMs of one adapter
 * segment of n rows (all layers, all targets), per GPU of a tp group. */
double lora_segment_s(const ModelDesc *m, const LoraCfg *c, const HwDesc *hw, int tp, Dtype compute,
                      double n, double *flops, double *bytes);

/* The engine hook (policy.h): admission cap and queue order, cache and
 * loads, segment costs. */
int lora_hook_new(const LoraCfg *c, const ModelDesc *m, const HwDesc *hw, int tp, Dtype compute, BatchHook *out,
                  Err *e);

#endif
