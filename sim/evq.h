/*
 * evq.h -- the event queue: a binary min-heap ordered by (time, sequence).
 *
 * Invariant: for every node, (t, seq) <= its children's.  seq is assigned
 * at push time from a counter, so events at the same nanosecond pop in the
 * order they were pushed (FIFO) and runs are deterministic.  Events live in
 * one array that grows by doubling: no allocation per event.
 */
#ifndef SERVESIM_EVQ_H
#define SERVESIM_EVQ_H

#include <stdint.h>

typedef struct Event {
    int64_t t_ns;
    uint64_t seq;
    uint32_t kind;  /* owner-defined */
    uint32_t arg;   /* owner-defined (a request or replica index) */
} Event;

typedef struct EventQueue {
    Event *heap;
    uint32_t n, cap;
    uint64_t next_seq;
} EventQueue;

void evq_init(EventQueue *q);
void evq_free(EventQueue *q);
void evq_push(EventQueue *q, int64_t t_ns, uint32_t kind, uint32_t arg);
/* Returns 0 when empty. */
int evq_pop(EventQueue *q, Event *out);
/* Time of the earliest event; INT64_MAX when empty. */
int64_t evq_peek_time(const EventQueue *q);

#endif
