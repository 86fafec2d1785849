/*
 * test_kv.c -- the KV pool's reservation modes against the chapter's
 * capacity numbers (003 section 8.1, 8.3): 12 GiB, 16-token blocks,
 * Qwen3-8B at 147,456 B per token.
 */
#include <stdlib.h>
#include <string.h>

#include "kv.h"
#include "simtest.h"
#include "testhelp.h"

static const double qwen3_8b_kv = 147456; /* 2 * 36 * 8 * 128 * 2 B */

/* How many identical requests the pool admits back to back. */
static int admit_count(KvReserve mode, uint32_t prompt, uint32_t output, uint32_t first_len, double cap,
                       uint32_t block, uint32_t max_tokens)
{
    KvConfig c = {.capacity_bytes = cap, .block_tokens = block, .bytes_per_token = qwen3_8b_kv,
                  .reserve = mode, .max_tokens = max_tokens};
    KvPolicy kv;
    Err e;
    if (kv_pool_new(&c, &kv, &e) < 0) return -1;
    Request *r = calloc(1000, sizeof *r);
    int n = 0;
    for (; n < 1000; n++) {
        r[n].prompt_tokens = prompt;
        r[n].output_tokens = output;
        r[n].idx = (uint32_t)n; /* as engine_new numbers requests */
        if (!kv.admit(kv.ctx, &r[n], first_len)) break;
    }
    uint64_t used = kv.used_blocks(kv.ctx);
    for (int i = 0; i < n; i++) kv.release(kv.ctx, &r[i]);
    if (kv.used_blocks(kv.ctx) != 0 || used > kv.total_blocks(kv.ctx)) n = -2;
    kv.destroy(kv.ctx);
    free(r);
    return n;
}

static void test_capacity_chapter(void)
{
    double cap = 12 * GIB;
    /* 5461 blocks of 16 tokens: floor(12 GiB / 2,359,296 B) */
    KvConfig c = {.capacity_bytes = cap, .block_tokens = 16, .bytes_per_token = qwen3_8b_kv,
                  .reserve = KV_RESERVE_FINAL};
    KvPolicy kv;
    Err e;
    CHECK(kv_pool_new(&c, &kv, &e) == 0);
    CHECK_INT(kv.total_blocks(kv.ctx), 5461);
    kv.destroy(kv.ctx);
    /* 2K in / 256 out reserves 2048 + 255 = 2303 -> 2304 tokens = 324 MiB: 37 */
    Request r = {.prompt_tokens = 2048, .output_tokens = 256};
    CHECK_INT(kv_reserve_tokens(KV_RESERVE_FINAL, &r, 0), 2303);
    CHECK_NEAR(kv_blocks_for(2303, 16) * 16 * qwen3_8b_kv / MIB, 324.0, 1e-9);
    CHECK_INT(admit_count(KV_RESERVE_FINAL, 2048, 256, 2048, cap, 16, 0), 37);
    /* counting only the prefill (288 MiB each): 42 */
    CHECK_INT(admit_count(KV_RESERVE_ON_DEMAND, 2048, 256, 2048, cap, 16, 0), 42);
    /* 8K in / 256 out: 8447 -> 8448 tokens = 1188 MiB: 10 */
    CHECK_NEAR(kv_blocks_for(8192 + 255, 16) * 16 * qwen3_8b_kv / MIB, 1188.0, 1e-9);
    CHECK_INT(admit_count(KV_RESERVE_FINAL, 8192, 256, 8192, cap, 16, 0), 10);
}

static void test_paged_example(void)
{
    /* Lengths 9, 13, 5, 15 with a per-sequence maximum of 16 and p = 4:
     * reserve-max takes 4 x 16 = 64 slots, paged final takes
     * 12 + 16 + 8 + 16 = 52; waste per sequence <= p - 1. */
    const uint32_t len[] = {9, 13, 5, 15};
    uint64_t max_slots = 0, paged_slots = 0, stored = 0;
    for (int i = 0; i < 4; i++) {
        Request r = {.prompt_tokens = len[i], .output_tokens = 1};
        max_slots += kv_blocks_for(kv_reserve_tokens(KV_RESERVE_MAX, &r, 16), 4) * 4;
        uint64_t p = kv_blocks_for(kv_reserve_tokens(KV_RESERVE_FINAL, &r, 16), 4) * 4;
        CHECK(p - len[i] <= 3);
        paged_slots += p;
        stored += len[i];
    }
    CHECK_INT(max_slots, 64);
    CHECK_INT(paged_slots, 52);
    CHECK_INT(stored, 42);
}

static void test_reserve_max_uses_max_output(void)
{
    Request r = {.prompt_tokens = 100, .output_tokens = 10, .max_output_tokens = 500};
    CHECK_INT(kv_reserve_tokens(KV_RESERVE_MAX, &r, 4096), 600);
    r.max_output_tokens = 0;
    CHECK_INT(kv_reserve_tokens(KV_RESERVE_MAX, &r, 4096), 4096);
    CHECK_INT(kv_reserve_tokens(KV_RESERVE_ON_DEMAND, &r, 4096), 0);
}

static void test_pool_too_small(void)
{
    KvConfig c = {.capacity_bytes = 1000, .block_tokens = 16, .bytes_per_token = qwen3_8b_kv,
                  .reserve = KV_RESERVE_FINAL};
    KvPolicy kv;
    Err e = {0};
    CHECK(kv_pool_new(&c, &kv, &e) < 0);
    CHECK_CONTAINS(e.msg, "holds no block");
}

static void test_on_demand_preempts(void)
{
    /* A pool of 10 blocks of 16 tokens, three requests of 48 in / 40 out
     * under continuous batching: on-demand growth runs out, the most
     * recently admitted request is preempted (recompute) and still
     * finishes with all its tokens. */
    SimSpec sp[3] = {{0, 48, 40}, {0, 48, 40}, {0, 48, 40}};
    SimRun *R = calloc(1, sizeof *R);
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = 3};
    simtest_run(R, sp, 3, sc, &simtest_chapter_cost, KV_RESERVE_ON_DEMAND, 10 * 16 * qwen3_8b_kv, qwen3_8b_kv, 16);
    CHECK_INT(R->rc, 0);
    CHECK(R->st.preemptions >= 1);
    CHECK(R->st.kv_peak_used_blocks <= 10);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(R->reqs[i].state, REQ_FINISHED);
        CHECK_INT(R->reqs[i].generated, 40);
    }
    CHECK(R->reqs[2].preemptions >= 1);
    CHECK(R->st.recomputed_tokens > 0);
    /* every token time strictly increases within a request */
    for (int i = 0; i < 3; i++)
        for (int k = 1; k < 40; k++) CHECK(R->times[i][k] > R->times[i][k - 1]);
    free(R);
}

/* Issue 17: sliding-window layers stop growing at the window, recurrent
 * layers hold a fixed state; both are charged as whole blocks. */
static void test_hybrid_seq_blocks(void)
{
    ModelDesc g, k;
    Err e = {0};
    if (model_load("gpt-oss-120b", &g, &e) || model_load("kimi-linear-48b-a3b", &k, &e)) { CHECK(0); return; }
    /* gpt-oss-120b: 18 full layers of 2 x 8 x 64 BF16 per token = 36,864 B,
     * 18 sliding ones keep 128 tokens of the same */
    KvConfig c = {.capacity_bytes = 12 * GIB, .block_tokens = 16,
                  .bytes_per_token = model_kv_bytes_per_token(&g, DTYPE_BF16), .reserve = KV_RESERVE_FINAL,
                  .window_bytes_per_token = 18 * model_kv_bytes_per_token_layer(&g, DTYPE_BF16),
                  .window_tokens = (uint32_t)g.sliding_window};
    CHECK_NEAR(c.bytes_per_token, 36864, 0);
    CHECK_INT(kv_seq_blocks(&c, 0), 0);
    CHECK_INT(kv_seq_blocks(&c, 100), 7 + 7);   /* 100 window tokens = 6.25 blocks' bytes */
    CHECK_INT(kv_seq_blocks(&c, 8192), 512 + 8); /* the window is full: 128 tokens = 8 blocks */
    CHECK_INT(kv_seq_blocks(&c, 100000), 6250 + 8);
    /* the bytes agree with the model's own count, to within block rounding */
    CHECK_NEAR(kv_seq_blocks(&c, 8192) * 16 * c.bytes_per_token, model_kv_bytes_for_tokens(&g, DTYPE_BF16, 8192), 0);
    /* Kimi Linear: 7 MLA layers at 576 BF16 values per token, 20 KDA
     * layers' state of 41.4 MiB per sequence: 337 blocks of 16 x 8,064 B */
    KvConfig h = {.capacity_bytes = 12 * GIB, .block_tokens = 16,
                  .bytes_per_token = model_kv_bytes_per_token(&k, DTYPE_BF16), .reserve = KV_RESERVE_FINAL,
                  .fixed_bytes = k.linear_state_bytes};
    CHECK_NEAR(h.bytes_per_token, 8064, 0);
    CHECK_INT(kv_seq_blocks(&h, 8192), 512 + 337);
    CHECK_INT(kv_seq_blocks(&h, 1), 1 + 337);
    KvPolicy kv;
    CHECK(kv_pool_new(&h, &kv, &e) == 0);
    uint64_t total = kv.total_blocks(kv.ctx);
    CHECK_INT(total, (uint64_t)(12 * GIB / (16 * 8064.0)));
    /* 8K in / 256 out: 8447 tokens = 528 blocks + 337 of state each */
    int n = 0;
    Request r[200];
    memset(r, 0, sizeof r);
    for (; n < 200; n++) {
        r[n].prompt_tokens = 8192;
        r[n].output_tokens = 256;
        r[n].idx = (uint32_t)n;
        if (!kv.admit(kv.ctx, &r[n], 8192)) break;
    }
    CHECK_INT(n, (int)(total / (528 + 337)));
    CHECK_INT(kv.need_blocks(kv.ctx, &r[0]), 528 + 337);
    kv.destroy(kv.ctx);
}

void suite_kv(void);
void suite_kv(void)
{
    RUN(test_hybrid_seq_blocks);
    RUN(test_capacity_chapter);
    RUN(test_paged_example);
    RUN(test_reserve_max_uses_max_output);
    RUN(test_pool_too_small);
    RUN(test_on_demand_preempts);
}
