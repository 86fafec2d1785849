/*
 * sched.h -- the built-in schedulers of SPEC section 3.
 *
 *   static      request-level batching: when nothing runs, admit up to
 *               max_running FCFS, prefill them together, decode every
 *               unfinished member each iteration; the next batch forms
 *               only when all members are done.  max_running = 1 is the
 *               serial schedule.
 *   continuous  iteration-level (Orca): one decode token for every running
 *               request, then admit FCFS while fewer than max_running run
 *               and KV allows; each newcomer's whole prefill joins this
 *               iteration.  With max_num_tokens (TensorRT-LLM's, chunking
 *               off), newcomers join while the iteration's new tokens stay
 *               within it; the first prompt joins even when it alone is
 *               larger, so a long prompt is never starved.
 *   chunked     Sarathi-Serve with a token budget B per iteration: decode
 *               tokens first (they count against B), then prefill chunks of
 *               admitted requests in admission order, each min(remaining
 *               prompt, remaining budget), then admit FCFS while fewer than
 *               max_running run and budget remains, each taking a chunk.
 *               Optional vLLM-v1 knobs: a per-request chunk cap
 *               (long_prefill_threshold) and at most max_partial_prefills
 *               requests prefilling per iteration.
 *               "mixed": false (prefill_apart) is SGLang's default (no
 *               --enable-mixed-chunk): when any prefill can be planned --
 *               a running request still prefilling, continued first, or a
 *               waiting request admissible under max_running and KV -- the
 *               iteration holds only prefill chunks, steps 2 and 3 above
 *               with the whole budget B, and every running decode waits
 *               for it; otherwise every running request decodes, however
 *               many (SGLang's decode batch has no token budget).  A
 *               request admitted decoding (handed over with its KV, swapped
 *               back in) is not planned in a prefill iteration: it decodes
 *               in the next decode iteration (this one when nothing
 *               prefills).  A request whose chunk found the pool short
 *               and preempted itself is not admitted again in the same
 *               iteration, so the decodes get theirs (else nothing would
 *               free blocks).  The queue is FCFS, SGLang's default
 *               schedule_policy in 0.5.x.  SGLang's knobs map onto B
 *               alone: its PrefillAdder charges every chunk to both
 *               max_prefill_tokens (16384) and chunked_prefill_size (8192
 *               on H100/H200, 16384 on B200) and cuts the last request
 *               admitted to what the latter leaves, so B is
 *               chunked_prefill_size while that is the smaller, with no
 *               per-request cap; --enable-mixed-chunk charges the running
 *               decodes to both first, which is "mixed": true.
 *   vllm        vLLM v0's default: when waiting requests fit -- max_num_seqs
 *               running, max_num_batched_tokens new tokens, and KV blocks
 *               for their whole prompt leaving `watermark` of the pool free
 *               -- the iteration prefills them (and nothing else); otherwise
 *               every running request decodes.  On-demand KV; when a decode
 *               cannot get a block the most recently admitted request is
 *               preempted (recompute or swap: the engine's setting).
 * Admission control applies to every kind: at arrival, reject when the
 * queue is full, when the predicted TTFT exceeds a limit, or (deadline
 * aware) when the predicted completion misses the request's deadline; at
 * every boundary, reject queued requests that can no longer make their
 * deadline even if started now.  Predictions use the engine's cost model.
 */
#ifndef SERVESIM_SCHED_H
#define SERVESIM_SCHED_H

#include "policy.h"

typedef enum { SCHED_STATIC = 0, SCHED_CONTINUOUS, SCHED_CHUNKED, SCHED_VLLM, SCHED_KIND_COUNT } SchedKind;

typedef struct SchedConfig {
    SchedKind kind;
    uint32_t max_running;  /* requests admitted at once (vllm: max_num_seqs) */
    uint32_t token_budget; /* chunked: new tokens per iteration (vllm: max_num_batched_tokens) */
    uint32_t max_num_tokens; /* continuous: whole prompts join while the iteration's new tokens stay
                              * within it (TensorRT-LLM without chunking); 0 = no limit */
    /* chunked, vLLM-v1 style */
    uint32_t long_prefill_threshold; /* a chunk takes at most this many tokens (0 = no cap) */
    uint32_t max_partial_prefills;   /* requests prefilling in one iteration (0 = no cap) */
    int prefill_apart;               /* "mixed": false -- an iteration prefills or decodes, never both
                                      * (SGLang without --enable-mixed-chunk); 0 = mixed (the default) */
    /* vllm */
    double watermark;      /* fraction of KV blocks kept free when admitting */
    /* admission control (every kind) */
    uint32_t max_queue;    /* reject an arrival that finds this many waiting (0 = no limit) */
    double max_ttft_s;     /* reject when the predicted TTFT exceeds it (0 = no limit) */
    int deadline_aware;    /* reject as soon as the predicted completion misses the deadline */
    const struct cJSON *plugin; /* a scripted kind ("lua"): the scheduler object (owned by the scenario),
                                 * built by its provider (plugin.h) instead of sched_new; NULL for C kinds */
} SchedConfig;

int sched_new(const SchedConfig *cfg, Scheduler *out, Err *e);
const char *sched_kind_name(SchedKind k);
extern const char *const sched_kind_names[];

#endif
