/*
 * test_engine.c -- the loop's time semantics (SPEC section 2): arrivals at
 * an iteration boundary are visible to it, an idle replica starts at the
 * next arrival, a request that can never fit is rejected rather than
 * blocking the queue, and runs are deterministic.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "simtest.h"
#include "testhelp.h"

static SimRun *run(const SimSpec *sp, uint32_t n, SchedKind kind, uint32_t max_running, KvReserve mode,
                   double cap_blocks)
{
    SimRun *R = calloc(1, sizeof *R);
    SchedConfig sc = {.kind = kind, .max_running = max_running, .token_budget = 512};
    simtest_run(R, sp, n, sc, &simtest_chapter_cost, mode, cap_blocks * 16 * 147456, 147456, 16);
    return R;
}

static void test_arrival_at_boundary_is_visible(void)
{
    /* r0's prefill ends at exactly 94.773728 ms; r1 arriving at that
     * nanosecond joins the very next iteration, one nanosecond later it
     * waits for the one after. */
    SimSpec sp[2] = {{0, 2048, 3}, {94.773728, 2048, 1}};
    SimRun *R = run(sp, 2, SCHED_CONTINUOUS, 4, KV_RESERVE_FINAL, 0);
    CHECK_INT(R->rc, 0);
    CHECK_INT(R->reqs[0].t_first_token_ns, 94773728);
    CHECK_INT(R->reqs[1].t_first_sched_ns, 94773728);
    /* joint iteration: 26.22 + 30.4e-3 * 2049 + 3e-6 * (2049 + 2,098,176) */
    CHECK_NEAR(simtest_ms(R->reqs[1].t_first_token_ns), 94.773728 + 26.22 + 30.4e-3 * 2049 + 3e-6 * 2100225, 1e-6);
    free(R);

    SimSpec late[2] = {{0, 2048, 3}, {94.773729, 2048, 1}};
    R = run(late, 2, SCHED_CONTINUOUS, 4, KV_RESERVE_FINAL, 0);
    CHECK_INT(R->rc, 0);
    CHECK(R->reqs[1].t_first_sched_ns > 94773729);
    CHECK_INT(R->reqs[1].t_first_sched_ns, R->times[0][1]);
    free(R);
}

static void test_idle_then_arrival(void)
{
    SimSpec sp[2] = {{0, 2048, 1}, {1000, 2048, 1}};
    SimRun *R = run(sp, 2, SCHED_CONTINUOUS, 4, KV_RESERVE_FINAL, 0);
    CHECK_INT(R->rc, 0);
    CHECK_NEAR(simtest_ms(R->reqs[0].t_finish_ns), 94.773728, 1e-6);
    CHECK_NEAR(simtest_ms(R->reqs[1].t_first_token_ns), 1000 + 94.773728, 1e-6);
    CHECK_INT(R->st.iterations, 2);
    CHECK_INT(R->st.busy_ns, 2 * 94773728);
    free(R);
}

static void test_never_fits_is_rejected(void)
{
    /* 10 blocks = 160 tokens: a 1000-token prompt can never be admitted; it
     * is rejected and the requests behind it are served. */
    SimSpec sp[3] = {{0, 100, 2}, {1, 1000, 2}, {2, 100, 2}};
    for (int k = 0; k < SCHED_KIND_COUNT; k++) {
        SimRun *R = run(sp, 3, (SchedKind)k, 4, KV_RESERVE_FINAL, 10);
        CHECK_INT(R->rc, 0);
        CHECK_INT(R->reqs[0].state, REQ_FINISHED);
        CHECK_INT(R->reqs[1].state, REQ_REJECTED);
        CHECK_INT(R->reqs[1].reject_reason, REJECT_KV_TOO_SMALL);
        CHECK_INT(R->reqs[2].state, REQ_FINISHED);
        CHECK_INT(R->st.rejected, 1);
        free(R);
    }
    /* On-demand: the prompt's first chunk would fit, but the final length
     * (1000 + 1 tokens) never can -- rejected at arrival instead of
     * thrashing through preemptions forever. */
    SimRun *R = run(sp, 3, SCHED_CHUNKED, 4, KV_RESERVE_ON_DEMAND, 10);
    CHECK_INT(R->rc, 0);
    CHECK_INT(R->reqs[1].state, REQ_REJECTED);
    CHECK_INT(R->reqs[1].t_finish_ns, 1000000);
    CHECK_INT(R->reqs[2].state, REQ_FINISHED);
    free(R);
}

static void test_kv_blocks_admission(void)
{
    /* 20 blocks hold one 300-token reservation (19 blocks) at a time: the
     * second request waits for the first to finish and free its KV even
     * though max_running allows both. */
    SimSpec sp[2] = {{0, 290, 11}, {0, 290, 11}};
    SimRun *R = run(sp, 2, SCHED_CONTINUOUS, 4, KV_RESERVE_FINAL, 20);
    CHECK_INT(R->rc, 0);
    CHECK_INT(R->st.peak_running, 1);
    CHECK_INT(R->st.kv_peak_used_blocks, 19);
    CHECK_INT(R->reqs[1].t_first_sched_ns, R->reqs[0].t_finish_ns);
    free(R);
}

static void test_deterministic(void)
{
    SimSpec sp[6] = {{0, 700, 30}, {3, 1500, 20}, {3, 90, 50}, {40, 400, 5}, {41, 64, 64}, {41, 800, 1}};
    SimRun *a = run(sp, 6, SCHED_CHUNKED, 3, KV_RESERVE_ON_DEMAND, 120);
    SimRun *b = run(sp, 6, SCHED_CHUNKED, 3, KV_RESERVE_ON_DEMAND, 120);
    CHECK_INT(a->rc, 0);
    CHECK(memcmp(a->times, b->times, sizeof a->times) == 0);
    CHECK_INT(a->st.iterations, b->st.iterations);
    CHECK_INT(a->st.preemptions, b->st.preemptions);
    for (int i = 0; i < 6; i++) CHECK_INT(a->reqs[i].state, REQ_FINISHED);
    free(a);
    free(b);
}

static void test_kv_over_time_and_sink(void)
{
    /* Static schedule of the four-request example with final reservations:
     * r0 holds 2048 + 7 -> 129 blocks, r1 2048 + 1 -> 129; after r1 leaves
     * only r0's 129; then r2 (8192 + 1 -> 513) and r3 (2048 + 3 -> 129). */
    SimSpec sp[4] = {{0, 2048, 8}, {0, 2048, 2}, {20, 8192, 2}, {30, 2048, 4}};
    SimRun *R = run(sp, 4, SCHED_STATIC, 2, KV_RESERVE_FINAL, 0);
    CHECK_INT(R->rc, 0);
    CHECK_INT(R->n_iters, 12);
    const uint64_t want[12] = {258, 258, 129, 129, 129, 129, 129, 129, 642, 642, 129, 129};
    for (int k = 0; k < 12; k++) CHECK_INT(R->kv_used[k], want[k]);
    CHECK_INT(R->iter_start[8], 347159895);
    CHECK_INT(R->st.kv_peak_used_blocks, 642);
    /* mean over busy time, weighted by each iteration's duration */
    double num = 0, den = 0;
    for (int k = 0; k < 12; k++) {
        double d = (k + 1 < 12 ? R->iter_start[k + 1] : R->reqs[3].t_finish_ns) - R->iter_start[k];
        num += want[k] * d;
        den += d;
    }
    CHECK_NEAR(R->st.kv_block_ns / (double)R->st.busy_ns, num / den, 1e-6);
    /* the sink saw every token, in time order, and every completion */
    CHECK_INT(R->sink_tokens, 8 + 2 + 2 + 4);
    CHECK(R->sink_ordered);
    CHECK_INT(R->sink_done, 4);
    free(R);
}

static void test_triggered_arrivals(void)
{
    /* A closed-loop client: r1 arrives 10 ms after r0 finishes, r2 5 ms
     * after r1; r3 is an independent arrival at 50 ms. */
    SimRun *R = calloc(1, sizeof *R);
    SimSpec sp[4] = {{0, 2048, 2}, {0, 2048, 1}, {0, 2048, 1}, {50, 2048, 1}};
    /* simtest_run builds the records; mark the chain through a second run */
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = 4};
    EngineConfig cfg = {0};
    Err e;
    for (uint32_t i = 0; i < 4; i++) {
        request_init(&R->reqs[i]);
        snprintf(R->names[i], sizeof R->names[i], "r%u", i);
        R->reqs[i].id = R->names[i];
        R->reqs[i].t_arrive_ns = (int64_t)(sp[i].arrival_ms * 1e6);
        R->reqs[i].prompt_tokens = sp[i].prompt;
        R->reqs[i].output_tokens = sp[i].output;
    }
    R->reqs[0].next_req = 1;
    R->reqs[1].triggered = 1;
    R->reqs[1].think_ns = 10000000;
    R->reqs[1].next_req = 2;
    R->reqs[2].triggered = 1;
    R->reqs[2].think_ns = 5000000;
    KvConfig kc = {.capacity_bytes = 1e12, .block_tokens = 16, .bytes_per_token = 147456, .reserve = KV_RESERVE_FINAL};
    CHECK(sched_new(&sc, &cfg.sched, &e) == 0);
    CHECK(kv_pool_new(&kc, &cfg.kv, &e) == 0);
    CHECK(cost_linear_new(&simtest_chapter_cost, &cfg.cost, &e) == 0);
    Engine *eng = engine_new(R->reqs, 4, &cfg, &e);
    CHECK(eng != NULL);
    CHECK(engine_run(eng, &e) == 0);
    for (int i = 0; i < 4; i++) CHECK_INT(R->reqs[i].state, REQ_FINISHED);
    CHECK_INT(R->reqs[1].t_arrive_ns, R->reqs[0].t_finish_ns + 10000000);
    CHECK_INT(R->reqs[2].t_arrive_ns, R->reqs[1].t_finish_ns + 5000000);
    /* r0: prefill 94.773728, decode 26.2565 (r3 arrives at 50 ms, joins the decode iteration) */
    CHECK(R->reqs[3].t_first_token_ns < R->reqs[1].t_arrive_ns);
    engine_free(eng);
    free(R);
}

/* engine_new is the one engine path fed from the caller's array
 * (reqarray.h, issue 36): 3000 requests, one a second, each done long
 * before the next, take a pool of two slots (the one running and the next,
 * pulled one arrival ahead), and every record is written
 * back into its place (its id and token times included); an array out of
 * arrival order is an error naming the pair. */
static void test_array_through_the_pool(void)
{
    enum { N = 3000 };
    Request *reqs = xcalloc(N, sizeof *reqs);
    char (*names)[16] = xcalloc(N, sizeof *names);
    for (uint32_t i = 0; i < N; i++) {
        request_init(&reqs[i]);
        snprintf(names[i], sizeof names[i], "q%u", i);
        reqs[i].id = names[i];
        reqs[i].t_arrive_ns = (int64_t)i * 1000000000;
        reqs[i].prompt_tokens = 100 + i % 50;
        reqs[i].output_tokens = 1 + i % 7;
    }
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = 4};
    KvConfig kc = {.capacity_bytes = 1e12, .block_tokens = 16, .bytes_per_token = 147456, .reserve = KV_RESERVE_FINAL};
    EngineConfig cfg = {.keep_token_times = 1};
    Err e = {0};
    CHECK(sched_new(&sc, &cfg.sched, &e) == 0);
    CHECK(kv_pool_new(&kc, &cfg.kv, &e) == 0);
    CHECK(cost_linear_new(&simtest_chapter_cost, &cfg.cost, &e) == 0);
    Engine *eng = engine_new(reqs, N, &cfg, &e);
    CHECK(eng != NULL && engine_run(eng, &e) == 0);
    if (!eng) return;
    CHECK_INT(engine_stream_pulled(eng), N);
    CHECK(engine_live_peak(eng) <= 2);
    CHECK_INT(engine_slots(eng), 1024); /* the pool's first size */
    CHECK_INT(engine_stats(eng)->finished, N);
    const int64_t *tt = engine_token_times(eng);
    uint64_t off = 0;
    int ok = tt != NULL;
    for (uint32_t i = 0; ok && i < N; i++) {
        const Request *r = &reqs[i];
        ok = r->state == REQ_FINISHED && r->idx == i && r->seq == i && r->id == names[i] && r->token_off == off &&
             r->generated == r->output_tokens && tt[off] == r->t_first_token_ns &&
             tt[off + r->generated - 1] == r->t_finish_ns && r->t_first_sched_ns == r->t_arrive_ns;
        off += r->output_tokens;
    }
    CHECK(ok);
    engine_free(eng);
    /* out of order */
    reqs[7].t_arrive_ns = 1;
    EngineConfig c2 = {0};
    CHECK(sched_new(&sc, &c2.sched, &e) == 0);
    CHECK(kv_pool_new(&kc, &c2.kv, &e) == 0);
    CHECK(cost_linear_new(&simtest_chapter_cost, &c2.cost, &e) == 0);
    CHECK(engine_new(reqs, N, &c2, &e) == NULL);
    CHECK_CONTAINS(e.msg, "engine: requests not sorted by arrival (q6 before q7)");
    free(reqs);
    free(names);
}

void suite_engine(void);
void suite_engine(void)
{
    RUN(test_array_through_the_pool);
    RUN(test_arrival_at_boundary_is_visible);
    RUN(test_idle_then_arrival);
    RUN(test_never_fits_is_rejected);
    RUN(test_kv_blocks_admission);
    RUN(test_deterministic);
    RUN(test_kv_over_time_and_sink);
    RUN(test_triggered_arrivals);
}
