/*
 * kv.h -- the KV block pool with reservation modes (SPEC section 4).
 *
 * Capacity in bytes becomes floor(capacity / (block_tokens * bytes_per_token))
 * blocks.  A request is admitted only if its reservation fits:
 *   max        contiguous: ceil((prompt + max_output) / block) blocks at admission
 *   final      paged: ceil((prompt + output - 1) / block) at admission -- the
 *              last output token is never fed back, so 2048 in / 256 out
 *              needs 2303 tokens = 144 blocks of 16
 *   on_demand  paged: ceil(kv_len / block) as the sequence grows; the engine
 *              preempts when the pool is exhausted
 * Invariant: 0 <= used <= total, and used equals the sum of the blocks the
 * pool records for each request (by Request.idx).  Prefix sharing (hash chains, refcounts, LRU)
 * implements the same KvPolicy interface in its own module.
 */
#ifndef SERVESIM_KV_H
#define SERVESIM_KV_H

#include "policy.h"

typedef struct KvConfig {
    double capacity_bytes;
    uint32_t block_tokens;
    double bytes_per_token;
    KvReserve reserve;
    uint32_t max_tokens;     /* per-sequence cap for reserve=max when a request gives no max output */
    int unbounded;           /* what-if: a pool that never binds */
    /* Hybrid models (issue 17): beside the full-attention KV of
     * bytes_per_token, a sequence holds min(tokens, window_tokens) tokens of
     * window_bytes_per_token (sliding-window layers) and fixed_bytes of
     * recurrent state (linear layers), charged as whole blocks of
     * block_tokens * bytes_per_token.  All 0 for a plain model. */
    double window_bytes_per_token;
    uint32_t window_tokens;
    double fixed_bytes;
    /* Prefix caching of a model with recurrent layers: the state is
     * snapshotted every snapshot_tokens tokens (a multiple of block_tokens;
     * 0 = no recurrent state): a hit restores from the last snapshot at or
     * below the matched length and recomputes the rest. */
    uint32_t snapshot_tokens;
    /* Bytes of one snapshot (the recurrent state) when the prefix cache keeps
     * them: each cached block carries block_tokens / snapshot_tokens of one,
     * so a block is block_tokens * (bytes_per_token + snapshot_bytes /
     * snapshot_tokens).  0 without a prefix cache or recurrent layers. */
    double snapshot_bytes;
} KvConfig;

/* Creates the counting pool.  Fails if not even one block fits. */
int kv_pool_new(const KvConfig *cfg, KvPolicy *out, Err *e);

/* Blocks for `tokens` tokens. */
static inline uint64_t kv_blocks_for(uint64_t tokens, uint32_t block_tokens)
{
    return (tokens + block_tokens - 1) / block_tokens;
}

/* Bytes of one block: block_tokens * bytes_per_token, plus the share of a
 * recurrent-state snapshot each cached block carries (snapshot_bytes). */
double kv_block_bytes(const KvConfig *cfg);

/* Blocks a sequence of `tokens` tokens holds: its full-attention KV plus,
 * for hybrid models, its sliding-window KV and fixed state rounded up to
 * whole blocks (kv_blocks_for when the model has neither). */
uint64_t kv_seq_blocks(const KvConfig *cfg, uint64_t tokens);

/* The tokens a request reserves at admission under a mode (0 for on_demand). */
uint64_t kv_reserve_tokens(KvReserve mode, const Request *r, uint32_t max_tokens);

/* Admits r to kv and computes its whole prompt in one step, as one
 * iteration would (admit, grow, commit): for calculators and tests that
 * drive a KV policy without an engine.  0 when it does not fit. */
int kv_admit_whole_prompt(KvPolicy *kv, Request *r);

const char *kv_reserve_name(KvReserve mode);

#endif
