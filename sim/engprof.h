/*
 * engprof.h -- serving-engine profiles (models/engines/NAME.json): what an
 * engine adds to the kernels it runs.
 *
 * A scenario's "engine" is a bundled name ("trtllm", "vllm", "sglang"), a
 * path, an object, or {"base": NAME, ...overrides}.  Keys (all optional;
 * every value in a bundled file names its source in "sources"):
 *   "name", "version", "source", "sources"   labels and provenance
 *   "kernel_tables": "vllm"      price iterations with the calibrated
 *                                profile <hardware>-<kernel_tables> when
 *                                one exists (models/profiles/)
 *   "scheduler": {...}           the scheduler a scenario without one gets
 *   "cuda_graph_sizes": [...]    captured decode batch sizes (padding)
 *   "mixed_batch_graphs": bool   mixed prefill+decode batches also run as
 *                                captured (padded) shapes
 *   "iter_overhead": {"base_us", "per_seq_us", "per_gpu_us", "per_layer"}
 *                                time per iteration that no kernel table
 *                                holds: base + per_seq x sequences in the
 *                                batch + per_gpu x (tp - 1); with
 *                                "per_layer": true the three are per
 *                                transformer layer and the model's layer
 *                                count multiplies them (the small per-layer
 *                                kernels -- norms, activation, residual,
 *                                quantisation, launch gaps -- of a step;
 *                                false: per step, host time)
 *   "overlap_scheduler": bool    the host prepares iteration n + 1 while
 *                                the GPU runs n: an iteration takes
 *                                max(GPU, host) instead of GPU + host, and
 *                                each token reaches the client one
 *                                iteration later (its output is processed
 *                                during the next iteration)
 *   "request_overhead": {"before_us", "after_us", "jitter_us", "jitter_per_token_us",
 *                        "end_spread_tokens"}
 *                                per request, outside the engine loop:
 *                                HTTP + tokenisation before the scheduler
 *                                sees it, detokenisation + streaming after
 *                                a token is emitted; both add to the
 *                                client's TTFT and E2E and to a closed-loop
 *                                client's gap between requests.  jitter_us:
 *                                the mean of an exponentially distributed
 *                                extra gap before each closed-loop request
 *                                (the client's handling of the response it
 *                                just streamed varies), so clients that
 *                                finish together do not all send their next
 *                                request at the same instant; its mean
 *                                grows by jitter_per_token_us per token the
 *                                client received in its previous response
 *                                (a longer stream, more client-side
 *                                variation).  end_spread_tokens d: each
 *                                request of a closed-loop workload
 *                                generates its length + k tokens, k drawn
 *                                uniformly from -d .. d (at least 1 token):
 *                                a measured benchmark's responses do not
 *                                all end in the same iteration, so clients
 *                                that started together drift apart instead
 *                                of sending their next prompts as one
 *                                bunch; a stand-in, fitted in decode steps,
 *                                for what moves them (stop detection one
 *                                step late under the overlap scheduler,
 *                                streaming, the client), validate/README.md
 *   "front_end": {"per_request_us", "per_token_us", "per_prompt_token_us"} | false
 *                                the serving process's front end as one
 *                                server (its single event loop): each
 *                                arriving request waits its turn, in order
 *                                of arrival, and takes per_request_us +
 *                                per_prompt_token_us x its prompt tokens
 *                                (tokenisation) of it before the scheduler
 *                                sees it; each
 *                                decode token the replica emits takes
 *                                per_token_us of it (detokenisation, the
 *                                streamed chunk), which delays the requests
 *                                behind it, not the token.  A front end
 *                                that cannot keep up holds the clients at
 *                                its door: a closed loop's request rate
 *                                levels off at 1 / (per_request + tokens x
 *                                per_token) whatever the GPUs could do, and
 *                                the wait is in TTFT.  One per replica
 *                                (engine.h fe_serial); false or absent:
 *                                none (request_overhead is a delay)
 *   "large_allreduce": {"above_tokens", "link_fraction"}
 *                                an iteration of more than above_tokens
 *                                tokens also moves its tensor-parallel
 *                                all-reduce traffic (2 per layer, the
 *                                tokens' hidden states, ring volume
 *                                2 (tp - 1) / tp) at link_fraction of the
 *                                GPU link's bandwidth, on top of the
 *                                priced all-reduce: a stack whose large
 *                                all-reduces are exposed (fitted for the
 *                                Splitwise rows, validate/README.md);
 *                                link_fraction 0: none
 *   "online_fp8": "fp8"|"fp8_block"  the engine quantises a BF16 checkpoint
 *                                to FP8 at load when asked, in this format
 *                                (vLLM's --quantization fp8: per-tensor);
 *                                absent: an FP8 run loads a pre-quantised
 *                                checkpoint (the model's fp8_checkpoint)
 *   "kv": {"fp8_checkpoint": "fp8"|"bf16",  KV dtype for FP8/FP4 weights
 *          "memory": "total_fraction"|"free_fraction", "fraction": 0.9}
 *          total_fraction (vLLM gpu_memory_utilization, SGLang
 *          mem_fraction_static): KV = fraction x memory - weights - reserve;
 *          free_fraction (TensorRT-LLM free_gpu_memory_fraction):
 *          KV = fraction x (memory - weights - reserve).
 */
#ifndef SERVESIM_ENGPROF_H
#define SERVESIM_ENGPROF_H

#include <cjson/cJSON.h>

#include "common.h"
#include "model.h"

#define ENGPROF_SIZES_MAX 512
#define ENGPROF_END_SPREAD_MAX 4096 /* end_spread_tokens: at most this */

typedef enum { ENGKV_HW = 0, ENGKV_TOTAL_FRACTION, ENGKV_FREE_FRACTION } EngKvRule;

typedef struct EngineProfile {
    int present;                 /* 0: no engine named (plain simulator defaults) */
    char name[64];
    char version[64];
    char kernel_tables[32];      /* "" = the hardware's default profile */
    cJSON *scheduler;            /* owned; NULL = none */
    cJSON *launch;               /* "launch": the engine's start command and flags (owned; NULL = none) */
    uint32_t graph_sizes[ENGPROF_SIZES_MAX];
    uint32_t n_sizes;
    int mixed_batch_graphs;
    int has_iter_overhead;       /* 0: the hardware / profile overhead applies */
    double iter_base_s, iter_per_seq_s, iter_per_gpu_s;
    int iter_per_layer;          /* the three above are per layer (x the model's layers) */
    int overlap;
    double req_before_s, req_after_s;
    double req_jitter_s;         /* mean of the exponential extra delay of each triggered request ... */
    double req_jitter_per_token_s; /* ... plus this much per output token of its predecessor */
    uint32_t req_end_spread;     /* closed-loop output lengths +- this many tokens (uniform) */
    int front_end;               /* a serial front end (front_end), else none */
    double fe_per_request_s;     /* its turn per request */
    double fe_per_token_s;       /* its time per emitted token */
    double fe_per_prompt_token_s;/* its turn's time per prompt token (tokenisation) */
    double ar_above_tokens;      /* large_allreduce (ar_link_fraction 0: none) */
    double ar_link_fraction;
    int fp8_checkpoint_kv;       /* -1 = keep the scenario's KV dtype; else a Dtype */
    int online_fp8;              /* -1 = none; else the Dtype of GEMMs an FP8 run of a BF16 checkpoint
                                  * quantised at load ("online_fp8") runs */
    int prefix_cache;            /* -1 = the scenario's; else the engine's default prefix caching (kv.prefix_cache) */
    EngKvRule kv_rule;
    double kv_fraction;
} EngineProfile;

void engprof_init(EngineProfile *p);
void engprof_free(EngineProfile *p);
int engprof_from_json(const cJSON *obj, const char *where, EngineProfile *p, Err *e);
/* A bundled name (models/engines/NAME.json) or a path to a .json file. */
int engprof_load(const char *name_or_path, EngineProfile *p, Err *e);
/* The host time of one iteration of n_seqs sequences on a TP group. */
double engprof_iter_overhead_s(const EngineProfile *p, uint32_t n_seqs, int tp);

#endif
