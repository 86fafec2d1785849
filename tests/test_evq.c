/*
 * test_evq.c -- the heap pops in (time, sequence) order: ties are FIFO,
 * whatever order the events were pushed in (ROSS's tie test).
 */
#include "evq.h"
#include "testhelp.h"

static void test_ties_fifo(void)
{
    EventQueue q;
    evq_init(&q);
    /* times pushed out of order, with ties at 5 and 9 */
    const int64_t t[] = {9, 5, 7, 5, 9, 1, 5, 9, 3};
    for (uint32_t i = 0; i < 9; i++) evq_push(&q, t[i], 0, i);
    const uint32_t want[] = {5, 8, 1, 3, 6, 2, 0, 4, 7};
    Event ev;
    for (int i = 0; i < 9; i++) {
        CHECK(evq_pop(&q, &ev));
        CHECK_INT(ev.arg, want[i]);
    }
    CHECK(!evq_pop(&q, &ev));
    CHECK(evq_peek_time(&q) == INT64_MAX);
    evq_free(&q);
}

static void test_many(void)
{
    EventQueue q;
    evq_init(&q);
    uint64_t x = 12345;
    for (uint32_t i = 0; i < 100000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        evq_push(&q, (int64_t)(x >> 54), 0, i); /* 1024 distinct times: many ties */
    }
    Event prev = {0}, ev;
    uint32_t n = 0;
    int ordered = 1;
    while (evq_pop(&q, &ev)) {
        if (n && (ev.t_ns < prev.t_ns || (ev.t_ns == prev.t_ns && ev.seq < prev.seq))) ordered = 0;
        prev = ev;
        n++;
    }
    CHECK(ordered);
    CHECK_INT(n, 100000);
    evq_free(&q);
}

void suite_evq(void);
void suite_evq(void)
{
    RUN(test_ties_fifo);
    RUN(test_many);
}
