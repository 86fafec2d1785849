/*
 * prefix.c -- the prefix-caching KV policy (see prefix.h).
 *
 * Data: a growable array of physical blocks, a stack of free block ids, an
 * intrusive doubly linked LRU list of cached blocks nobody references, an
 * open-addressing hash table (linear probing, backward-shift deletion) from
 * block key to block id, and one block table per request (indexed by
 * Request.idx).  Allocation happens per block, never per token; block
 * tables grow by doubling.
 */
#include "prefix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define VALUE_CANDIDATES 32

typedef struct PBlock {
    uint64_t key;       /* content key, valid when hashed */
    uint32_t ref;       /* block tables referencing it */
    uint32_t prev, next;/* LRU links when on_lru */
    uint32_t hits;      /* times found by a lookup */
    uint32_t depth;     /* block index in its sequence */
    uint64_t born;      /* lookup counter when it entered the cache */
    uint8_t hashed;     /* in the hash table: reusable content */
    uint8_t on_lru;
} PBlock;

typedef struct ReqTab {
    uint32_t *b;
    uint32_t n, cap;
    uint32_t hashed_upto; /* blocks [0, hashed_upto) have keys (hit or committed) */
    uint64_t last_key;    /* key of block hashed_upto - 1 (or the request's seed) */
    uint8_t looked_up;    /* counted in lookup_tokens already */
    uint8_t id_hash_set;  /* id_hash holds str_hash(request id) (reset on release) */
    uint64_t id_hash;
    uint64_t owner;       /* Request.seq + 1 of the request using it (a streamed engine reuses slots) */
} ReqTab;

typedef struct Prefix {
    PrefixConfig cfg;
    uint64_t limit;       /* blocks the pool may hold */
    PBlock *blk;
    uint32_t n_blk, cap_blk;
    uint32_t *free_ids;
    uint32_t n_free;
    uint32_t lru_head, lru_tail;
    uint64_t *ht_key;     /* 0 = empty */
    uint32_t *ht_val;
    uint32_t ht_cap, ht_n;
    ReqTab *tabs;
    uint32_t n_tabs;      /* grown to the largest Request.idx seen (a streamed engine's slots) */
    uint64_t n_ref;       /* blocks with ref > 0 */
    uint64_t lookups;
    KvStats st;
    Err evict_err;        /* the first failure of a custom eviction policy */
} Prefix;

/* ------------------------------------------------------------ hashing */

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, then mixed */
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return mix(h);
}

uint64_t prefix_snapshot_restore(uint64_t matched, uint32_t interval, uint64_t *recompute)
{
    uint64_t from = interval ? matched / interval * interval : matched;
    if (recompute) *recompute = matched - from;
    return from;
}

uint64_t prefix_namespace(const char *model, const char *adapter, const char *positions)
{
    return mix(str_hash(model) ^ mix(str_hash(adapter) ^ mix(str_hash(positions))));
}

static uint64_t req_seed(const Prefix *p, const Request *r)
{
    uint64_t h = mix(p->cfg.namespace_seed ^ mix(0x7e4a47ULL + r->tenant));
    /* a LoRA adapter changes every K/V: requests with different adapters
     * never share blocks (the base model's keys are unchanged) */
    return r->adapter ? mix(h ^ mix(0xada97e7ULL + r->adapter)) : h;
}

/* Key of block j of r given its parent's key; idh = str_hash(r->id), which
 * the callers compute once per request rather than once per block. */
static uint64_t block_key(const Prefix *p, const Request *r, uint64_t parent, uint32_t j, uint64_t idh)
{
    const uint32_t B = p->cfg.kv.block_tokens;
    uint64_t start = (uint64_t)j * B, h = parent;
    if (r->token_ids && start + B <= r->n_token_ids) {
        for (uint32_t t = 0; t < B; t++) h = mix(h ^ r->token_ids[start + t]);
    } else if (r->synth_key && start + B <= r->n_token_ids) {
        for (uint32_t t = 0; t < B; t++) h = mix(h ^ request_token_id(r, (uint32_t)start + t));
    } else if (r->hash_ids && r->hash_block_tokens && r->hash_block_tokens % B == 0 &&
               start + B <= (uint64_t)r->n_hash_ids * r->hash_block_tokens) {
        uint64_t q = start / r->hash_block_tokens;
        h = mix(mix(h ^ r->hash_ids[q]) ^ (start % r->hash_block_tokens));
    } else {
        /* content known to this request only */
        h = mix(h ^ mix(idh ^ ((uint64_t)j << 1 | 1)));
    }
    return h ? h : 1;
}

/* ---------------------------------------------------------- hash table */

static uint32_t ht_slot(const Prefix *p, uint64_t key)
{
    return (uint32_t)(mix(key) & (p->ht_cap - 1));
}

static uint32_t ht_find(const Prefix *p, uint64_t key)
{
    if (!p->ht_cap) return NIL;
    for (uint32_t i = ht_slot(p, key);; i = (i + 1) & (p->ht_cap - 1)) {
        if (p->ht_key[i] == 0) return NIL;
        if (p->ht_key[i] == key) return p->ht_val[i];
    }
}

static void ht_put_raw(Prefix *p, uint64_t key, uint32_t val)
{
    uint32_t i = ht_slot(p, key);
    while (p->ht_key[i]) i = (i + 1) & (p->ht_cap - 1);
    p->ht_key[i] = key;
    p->ht_val[i] = val;
}

static void ht_insert(Prefix *p, uint64_t key, uint32_t val)
{
    if ((p->ht_n + 1) * 2 > p->ht_cap) {
        uint64_t *ok = p->ht_key;
        uint32_t *ov = p->ht_val, oc = p->ht_cap;
        p->ht_cap = oc ? oc * 2 : 1024;
        p->ht_key = xcalloc(p->ht_cap, sizeof *p->ht_key);
        p->ht_val = xmalloc(p->ht_cap * sizeof *p->ht_val);
        for (uint32_t i = 0; i < oc; i++)
            if (ok[i]) ht_put_raw(p, ok[i], ov[i]);
        free(ok);
        free(ov);
    }
    ht_put_raw(p, key, val);
    p->ht_n++;
}

static void ht_remove(Prefix *p, uint64_t key)
{
    uint32_t mask = p->ht_cap - 1, i = ht_slot(p, key);
    while (p->ht_key[i] != key) {
        if (p->ht_key[i] == 0) return;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion keeps every probe sequence unbroken */
    for (uint32_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        if (p->ht_key[j] == 0) break;
        uint32_t home = ht_slot(p, p->ht_key[j]);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            p->ht_key[i] = p->ht_key[j];
            p->ht_val[i] = p->ht_val[j];
            i = j;
        }
    }
    p->ht_key[i] = 0;
    p->ht_n--;
}

/* ----------------------------------------------------------------- LRU */

static void lru_unlink(Prefix *p, uint32_t b)
{
    PBlock *x = &p->blk[b];
    if (!x->on_lru) return;
    if (x->prev != NIL) p->blk[x->prev].next = x->next; else p->lru_head = x->next;
    if (x->next != NIL) p->blk[x->next].prev = x->prev; else p->lru_tail = x->prev;
    x->on_lru = 0;
    x->prev = x->next = NIL;
}

static void lru_push(Prefix *p, uint32_t b)
{
    PBlock *x = &p->blk[b];
    x->prev = p->lru_tail;
    x->next = NIL;
    if (p->lru_tail != NIL) p->blk[p->lru_tail].next = b; else p->lru_head = b;
    p->lru_tail = b;
    x->on_lru = 1;
}

/* ------------------------------------------------------------- blocks */

static void ref_block(Prefix *p, uint32_t b)
{
    PBlock *x = &p->blk[b];
    if (x->ref++ == 0) {
        p->n_ref++;
        lru_unlink(p, b);
    }
}

static void unref_block(Prefix *p, uint32_t b)
{
    PBlock *x = &p->blk[b];
    if (NEVER(x->ref == 0)) return;
    if (--x->ref > 0) return;
    p->n_ref--;
    if (x->hashed) lru_push(p, b);
    else p->free_ids[p->n_free++] = b;
}

/* The cached block to drop: the least recently used, or under the value
 * rule the one among the oldest few with the smallest p_hit x recompute
 * cost, p_hit estimated as (hits + 1) / (lookups since cached + 2) and the
 * recompute cost growing with the block's depth (its attention spans the
 * whole prefix before it). */
static uint32_t victim(Prefix *p)
{
    uint32_t best = p->lru_head;
    if (best == NIL || p->cfg.evict == PREFIX_EVICT_LRU) return best;
    if (p->cfg.evict == PREFIX_EVICT_CUSTOM) {
        EvictCandidate c[PREFIX_EVICT_CANDIDATES];
        uint32_t n = 0;
        for (uint32_t b = p->lru_head; b != NIL && n < PREFIX_EVICT_CANDIDATES; b = p->blk[b].next)
            c[n++] = (EvictCandidate){.block = b, .depth = p->blk[b].depth, .hits = p->blk[b].hits,
                                      .lookups_since = p->lookups - p->blk[b].born};
        Err e = {0};
        int k = p->cfg.custom.choose(p->cfg.custom.ctx, c, n, &e);
        if (k >= 0 && (uint32_t)k < n) return c[k].block;
        if (!p->evict_err.msg[0]) {
            if (!e.msg[0]) snprintf(e.msg, sizeof e.msg, "eviction policy chose %d of %u candidates", k, n);
            p->evict_err = e;
        }
        return best;
    }
    double best_v = 1e300;
    const double B = p->cfg.kv.block_tokens;
    uint32_t b = p->lru_head;
    for (int k = 0; k < VALUE_CANDIDATES && b != NIL; k++, b = p->blk[b].next) {
        const PBlock *x = &p->blk[b];
        double p_hit = (x->hits + 1.0) / ((double)(p->lookups - x->born) + 2.0);
        double t_r = B * (1.0 + x->depth * B / 8192.0);
        double v = p_hit * t_r;
        if (v < best_v) {
            best_v = v;
            best = b;
        }
    }
    return best;
}

/* A block for new content, or NIL when the pool is exhausted. */
static uint32_t alloc_block(Prefix *p)
{
    uint32_t b;
    if (p->n_free) {
        b = p->free_ids[--p->n_free];
    } else if (p->n_blk < p->limit) {
        if (p->n_blk == p->cap_blk) {
            p->cap_blk = p->cap_blk ? p->cap_blk * 2 : 1024;
            p->blk = xrealloc(p->blk, p->cap_blk * sizeof *p->blk);
            p->free_ids = xrealloc(p->free_ids, p->cap_blk * sizeof *p->free_ids);
        }
        b = p->n_blk++;
    } else if ((b = victim(p)) != NIL) {
        lru_unlink(p, b);
        ht_remove(p, p->blk[b].key);
        p->st.evictions++;
    } else {
        return NIL;
    }
    p->blk[b] = (PBlock){.prev = NIL, .next = NIL};
    p->blk[b].ref = 1;
    p->n_ref++;
    return b;
}

static void tab_push(ReqTab *t, uint32_t b)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->b = xrealloc(t->b, t->cap * sizeof *t->b);
    }
    t->b[t->n++] = b;
}

/* Request r's table, grown for a slot past the end and reset when a new
 * request takes the slot (its seq differs from the owner's). */
static ReqTab *tab(Prefix *p, const Request *r)
{
    if (r->idx >= p->n_tabs) {
        uint32_t n = p->n_tabs * 2 > r->idx ? p->n_tabs * 2 : r->idx + 1;
        p->tabs = xrealloc(p->tabs, (size_t)n * sizeof *p->tabs);
        memset(p->tabs + p->n_tabs, 0, (size_t)(n - p->n_tabs) * sizeof *p->tabs);
        p->n_tabs = n;
    }
    ReqTab *t = &p->tabs[r->idx];
    if (t->owner != r->seq + 1) {
        t->n = t->hashed_upto = 0;
        t->last_key = 0;
        t->looked_up = t->id_hash_set = 0;
        t->owner = r->seq + 1;
    }
    return t;
}

static uint32_t tab_blocks(const Prefix *p, const Request *r)
{
    return r->idx < p->n_tabs && p->tabs[r->idx].owner == r->seq + 1 ? p->tabs[r->idx].n : 0;
}

static int fill_to(Prefix *p, Request *r, uint64_t blocks)
{
    ReqTab *t = tab(p, r);
    while (t->n < blocks) {
        uint32_t b = alloc_block(p);
        if (b == NIL) return 0;
        p->blk[b].depth = t->n;
        tab_push(t, b);
    }
    return 1;
}

static uint64_t tab_id_hash(ReqTab *t, const Request *r)
{
    if (!t->id_hash_set) {
        t->id_hash = str_hash(r->id);
        t->id_hash_set = 1;
    }
    return t->id_hash;
}

static void pf_release(void *ctx, Request *r)
{
    Prefix *p = ctx;
    ReqTab *t = tab(p, r);
    for (uint32_t i = t->n; i-- > 0;) unref_block(p, t->b[i]);
    t->n = 0;
    t->hashed_upto = 0;
    t->last_key = 0;
    t->id_hash_set = 0;
}

/* ------------------------------------------------------------ policy */

static uint64_t final_tokens(const Prefix *p, const Request *r)
{
    KvReserve m = p->cfg.kv.reserve == KV_RESERVE_ON_DEMAND ? KV_RESERVE_FINAL : p->cfg.kv.reserve;
    return kv_reserve_tokens(m, r, p->cfg.kv.max_tokens);
}

static void pf_commit(void *ctx, Request *r);

static int pf_admit(void *ctx, Request *r, uint32_t first_chunk)
{
    Prefix *p = ctx;
    ReqTab *t = tab(p, r);
    const uint32_t B = p->cfg.kv.block_tokens;
    if (NEVER(t->n)) pf_release(ctx, r);
    if (r->kv_len > 0) {
        /* swapped back in, or arriving from a prefill replica: its KV comes
         * as it was, no lookup */
        uint64_t want = p->cfg.kv.reserve == KV_RESERVE_ON_DEMAND
                            ? kv_seq_blocks(&p->cfg.kv, (uint64_t)r->kv_len + first_chunk)
                            : kv_seq_blocks(&p->cfg.kv, final_tokens(p, r));
        if (!fill_to(p, r, want)) {
            pf_release(ctx, r);
            return 0;
        }
        t->hashed_upto = 0;
        t->last_key = req_seed(p, r);
        pf_commit(ctx, r);
        return 1;
    }
    /* Longest run of cached full blocks from the start; at least one token
     * of the prefill is always computed (it yields the next token). */
    uint32_t max_hit = r->prefill_target ? (r->prefill_target - 1) / B : 0;
    uint64_t key = req_seed(p, r);
    t->last_key = key;
    uint32_t j = 0;
    p->lookups++;
    uint64_t idh = tab_id_hash(t, r);
    for (; j < max_hit; j++) {
        uint64_t k = block_key(p, r, key, j, idh);
        uint32_t b = ht_find(p, k);
        if (b == NIL) break;
        ref_block(p, b);
        p->blk[b].hits++;
        tab_push(t, b);
        key = k;
    }
    if (p->cfg.kv.snapshot_tokens) {
        /* Recurrent layers: their state exists only at snapshots, so the
         * hit restores from the last one at or below the match and the
         * rest is recomputed (its blocks are dropped from the table). */
        uint64_t from = prefix_snapshot_restore(j * (uint64_t)B, p->cfg.kv.snapshot_tokens, NULL);
        uint32_t keep = (uint32_t)(from / B);
        while (j > keep) {
            unref_block(p, t->b[--t->n]);
            j--;
        }
        key = j ? p->blk[t->b[j - 1]].key : req_seed(p, r);
    }
    t->hashed_upto = j;
    t->last_key = key;
    uint32_t hit = j * B;
    uint64_t want = p->cfg.kv.reserve == KV_RESERVE_ON_DEMAND
                        ? kv_seq_blocks(&p->cfg.kv, MIN((uint64_t)hit + first_chunk, (uint64_t)r->prefill_target))
                        : kv_seq_blocks(&p->cfg.kv, final_tokens(p, r));
    if (!fill_to(p, r, want)) {
        pf_release(ctx, r);
        return 0;
    }
    r->kv_len = hit;
    if (!t->looked_up) {
        t->looked_up = 1;
        p->st.lookup_tokens += r->prompt_tokens;
        p->st.hit_tokens += hit;
        r->prefix_hit_tokens = hit;
    }
    return 1;
}

static int pf_grow(void *ctx, Request *r, uint32_t kv_len)
{
    Prefix *p = ctx;
    ReqTab *t = tab(p, r);
    const uint32_t B = p->cfg.kv.block_tokens;
    /* Copy-on-write: positions [kv_len_now, kv_len) are about to be
     * written; any block they fall in that another table also references
     * (a forked branch) is replaced by a private one -- a real copy when it
     * already holds some of this sequence's tokens. */
    if (kv_len > r->kv_len) {
        uint32_t last = (kv_len - 1) / B;
        for (uint32_t j = r->kv_len / B; j <= last && j < t->n; j++) {
            if (p->blk[t->b[j]].ref <= 1) continue;
            uint32_t c = alloc_block(p);
            if (c == NIL) return 0;
            p->blk[c].depth = j;
            unref_block(p, t->b[j]);
            t->b[j] = c;
            if (j * B < r->kv_len) p->st.cow_copies++;
        }
    }
    return fill_to(p, r, kv_seq_blocks(&p->cfg.kv, kv_len));
}

static void pf_commit(void *ctx, Request *r)
{
    Prefix *p = ctx;
    ReqTab *t = tab(p, r);
    uint32_t full = r->kv_len / p->cfg.kv.block_tokens;
    if (full > t->n) full = t->n;
    uint64_t idh = tab_id_hash(t, r);
    /* A request whose content is its own (no token ids or block hashes)
     * never preempted has inserted none of its keys yet, and no other
     * request has them: no lookup is needed before inserting. */
    int fresh = !request_has_ids(r) && !r->hash_ids && r->preemptions == 0;
    for (uint32_t j = t->hashed_upto; j < full; j++) {
        uint64_t k = block_key(p, r, t->last_key, j, idh);
        t->last_key = k;
        PBlock *x = &p->blk[t->b[j]];
        if (!x->hashed && (fresh || ht_find(p, k) == NIL)) {
            /* new content: reusable from now on */
            x->key = k;
            x->hashed = 1;
            x->born = p->lookups;
            ht_insert(p, k, t->b[j]);
        }
    }
    if (full > t->hashed_upto) t->hashed_upto = full;
}

static uint64_t pf_need(void *ctx, const Request *r)
{
    Prefix *p = ctx;
    return kv_seq_blocks(&p->cfg.kv, final_tokens(p, r));
}

static uint32_t pf_blocks_of(void *ctx, const Request *r)
{
    return tab_blocks(ctx, r);
}

static uint64_t pf_used(void *ctx) { return ((Prefix *)ctx)->n_ref; }
static uint64_t pf_total(void *ctx) { return ((Prefix *)ctx)->limit; }

static void pf_stats(void *ctx, KvStats *out)
{
    Prefix *p = ctx;
    *out = p->st;
    out->cached_blocks = p->ht_n;
}

const char *prefix_evict_error(const KvPolicy *kv)
{
    return kv->admit == pf_admit ? ((const Prefix *)kv->ctx)->evict_err.msg : "";
}

static const char *pf_error(void *ctx)
{
    return ((const Prefix *)ctx)->evict_err.msg;
}

static void pf_destroy(void *ctx)
{
    Prefix *p = ctx;
    if (p->cfg.evict == PREFIX_EVICT_CUSTOM && p->cfg.custom.destroy) p->cfg.custom.destroy(p->cfg.custom.ctx);
    for (uint32_t i = 0; i < p->n_tabs; i++) free(p->tabs[i].b);
    free(p->tabs);
    free(p->blk);
    free(p->free_ids);
    free(p->ht_key);
    free(p->ht_val);
    free(p);
}

int prefix_fork(const KvPolicy *kv, Request *parent, Request *child)
{
    Prefix *p = kv->ctx;
    if (kv->admit != pf_admit) return -1;
    /* the tables may grow for a new slot: both sized before a pointer is
     * kept (a streamed branch's slot may be past the parent's) */
    pf_release(p, child);
    ReqTab *pt = tab(p, parent), *ct = tab(p, child);
    for (uint32_t i = 0; i < pt->n; i++) {
        ref_block(p, pt->b[i]);
        tab_push(ct, pt->b[i]);
    }
    ct->hashed_upto = pt->hashed_upto;
    ct->last_key = pt->last_key;
    ct->looked_up = 1;
    child->kv_len = parent->kv_len;
    return 0;
}

static const char *pf_error(void *ctx);

static int pf_fork(void *ctx, Request *parent, Request *child)
{
    KvPolicy kv = {.ctx = ctx, .admit = pf_admit};
    return prefix_fork(&kv, parent, child) == 0;
}

uint32_t prefix_request_blocks(const KvPolicy *kv, const Request *r)
{
    const Prefix *p = kv->ctx;
    return kv->admit == pf_admit ? tab_blocks(p, r) : kv->blocks_of(kv->ctx, r);
}

int prefix_new(const PrefixConfig *cfg, KvPolicy *out, Err *e)
{
    const KvConfig *k = &cfg->kv;
    if (k->block_tokens == 0) return err_set(e, "kv.block_tokens: must be >= 1");
    double block_bytes = kv_block_bytes(k);
    double blocks = k->capacity_bytes / block_bytes;
    if (!k->unbounded && blocks < 1)
        return err_set(e, "kv: capacity %.0f B holds no block of %u tokens (%.0f B)", k->capacity_bytes,
                       k->block_tokens, block_bytes);
    /* block ids are 32-bit (UINT32_MAX is the list's end): a pool of more
     * blocks is refused, not silently cut to 2^32 - 2 (issue 35) */
    if (!k->unbounded && blocks > (double)UINT32_MAX - 1)
        return err_set(e, "kv: capacity %.0f B holds %.0f blocks of %u tokens, more than the prefix cache's %u block ids "
                          "(2^32 - 2); use a larger kv.block_tokens or a smaller capacity",
                       k->capacity_bytes, floor(blocks), k->block_tokens, UINT32_MAX - 1);
    Prefix *p = xcalloc(1, sizeof *p);
    p->cfg = *cfg;
    p->limit = k->unbounded ? (uint64_t)UINT32_MAX - 1 : (uint64_t)blocks;
    p->lru_head = p->lru_tail = NIL;
    p->n_tabs = cfg->n_requests ? cfg->n_requests : 1;
    p->tabs = xcalloc(p->n_tabs, sizeof *p->tabs);
    *out = (KvPolicy){.name = "prefix_cache", .ctx = p, .admit = pf_admit, .grow = pf_grow, .commit = pf_commit,
                      .release = pf_release, .blocks_of = pf_blocks_of, .need_blocks = pf_need, .used_blocks = pf_used,
                      .total_blocks = pf_total, .fork = pf_fork, .error = pf_error, .stats = pf_stats, .destroy = pf_destroy};
    return 0;
}

uint32_t prefix_probe(const KvPolicy *kv, const Request *r)
{
    if (kv->admit != pf_admit) return 0;
    const Prefix *p = kv->ctx;
    const uint32_t B = p->cfg.kv.block_tokens;
    uint32_t max_hit = r->prompt_tokens ? (r->prompt_tokens - 1) / B : 0, j = 0;
    uint64_t key = req_seed(p, r), idh = str_hash(r->id);
    for (; j < max_hit; j++) {
        key = block_key(p, r, key, j, idh);
        if (ht_find(p, key) == NIL) break;
    }
    return j * B;
}
