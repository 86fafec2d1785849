/*
 * prefix.h -- the prefix-caching KV policy (SPEC section 4).
 *
 * Physical blocks of block_tokens tokens with reference counts.  A full
 * block's key chains its parent's key with its content: the token ids, or
 * for traces that give only block hashes (Mooncake hash_ids of 512 tokens)
 * the hash and the sub-block's index, all under a namespace of the model,
 * the adapter, the position scheme and the tenant -- so reuse happens only
 * from the start of a sequence, only for whole blocks, only inside one
 * tenant.  A block enters the cache when the iteration that computed it
 * ends (commit).  Blocks nobody references stay cached on an LRU list and
 * are evicted on demand (or by the value rule: keep the blocks with the
 * highest p_hit * recompute cost).  A request without token ids or hashes
 * gets keys of its own: it can only reuse its own blocks after a
 * preemption.  Invariant: every block is exactly one of free, referenced
 * (ref > 0) or cached-unreferenced (on the LRU list, in the hash table).
 */
#ifndef SERVESIM_PREFIX_H
#define SERVESIM_PREFIX_H

#include "kv.h"

typedef enum { PREFIX_EVICT_LRU = 0, PREFIX_EVICT_VALUE, PREFIX_EVICT_CUSTOM } PrefixEvict;

/* What an eviction policy sees of each candidate: a cached block nobody
 * references, oldest first. */
typedef struct EvictCandidate {
    uint32_t block;           /* physical block id */
    uint32_t depth;           /* its index in the sequence that computed it */
    uint32_t hits;            /* lookups that reused it */
    uint64_t lookups_since;   /* lookups since it entered the cache */
} EvictCandidate;

/* A pluggable eviction rule (a Lua script, say): choose returns the index
 * of the candidate to drop, or a negative value on failure (the cache then
 * falls back to LRU and records the failure). */
typedef struct EvictPolicy {
    void *ctx;
    int (*choose)(void *ctx, const EvictCandidate *c, uint32_t n, Err *e);
    void (*destroy)(void *ctx);
} EvictPolicy;

#define PREFIX_EVICT_CANDIDATES 32

typedef struct PrefixConfig {
    KvConfig kv;              /* capacity, block size, reservation mode */
    PrefixEvict evict;
    EvictPolicy custom;       /* PREFIX_EVICT_CUSTOM: owned by the cache */
    uint64_t namespace_seed;  /* hash of model, adapter, position scheme */
    uint32_t n_requests;      /* requests the engine will hold (Request.idx < n) */
} PrefixConfig;

int prefix_new(const PrefixConfig *cfg, KvPolicy *out, Err *e);
/* The first error a custom eviction policy reported (empty if none). */
const char *prefix_evict_error(const KvPolicy *kv);

/* Shares all of parent's blocks with child (parallel sampling: n branches
 * over one prompt).  The child's next append into a shared partial block
 * copies it first (copy-on-write).  Both must be admitted. */
int prefix_fork(const KvPolicy *kv, Request *parent, Request *child);

/* Block references held by r, and the physical blocks referenced by anyone. */
uint32_t prefix_request_blocks(const KvPolicy *kv, const Request *r);

/* Leading prompt tokens of r this cache holds now (a router's probe; no
 * side effects).  0 for a policy that is not a prefix cache. */
uint32_t prefix_probe(const KvPolicy *kv, const Request *r);

uint64_t prefix_namespace(const char *model, const char *adapter, const char *positions);

/* A model with recurrent (linear-attention) layers keeps their state only at
 * snapshots every `interval` tokens: a prefix match of `matched` tokens
 * restores from the last snapshot at or below it (the return value) and
 * recomputes the rest (*recompute).  Chapter 003: snapshots at 4096 and
 * 8192, a 10,752-token match restores from 8192 and recomputes 2,560.
 * interval 0 = no recurrent state: the whole match is used. */
uint64_t prefix_snapshot_restore(uint64_t matched, uint32_t interval, uint64_t *recompute);

#endif
