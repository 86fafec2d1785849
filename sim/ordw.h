/*
 * ordw.h -- records written in sequence order though they arrive out of it
 * (issue 36): a streamed run's requests leave in completion order, but the
 * per-request CSV and the JSON "requests" array list them by their place
 * in the workload.  Each record is a sequence number and its text; the
 * writer sends a record straight to the output when every earlier one has
 * gone, and holds the others in a heap.  When what is held (text and
 * records) passes a memory limit, the heap is written out as one sorted
 * run in an anonymous temporary file (tmpfile: nothing named, removed at
 * exit); the end merges
 * the runs and what is held.  Memory is the limit, whatever the
 * run's length; disk is the text of the records held back.
 *
 * The sequence numbers must be 0, 1, 2, ... each exactly once (a stream's
 * pull order); ordw_finish fails on a gap.
 */
#ifndef SERVESIM_ORDW_H
#define SERVESIM_ORDW_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"

/* The text held in memory before a spill (and the test's knob). */
#define ORDW_MEM_DEFAULT (32u << 20)
/* Runs merged into one when there are this many (open files stay few). */
#define ORDW_MAX_RUNS 32

typedef struct OrdwRec {
    uint64_t seq;
    size_t off, len; /* in the arena */
} OrdwRec;

typedef struct Ordw {
    FILE *out;
    const char *sep;   /* written between two non-empty records ("" for none) */
    size_t mem_limit;
    uint64_t next;     /* the next sequence number the output takes */
    uint64_t written;  /* non-empty records written */
    OrdwRec *heap;
    size_t n_heap, cap_heap;
    char *arena;
    size_t arena_len, arena_cap;
    FILE *runs[ORDW_MAX_RUNS];
    uint32_t n_runs;
    uint64_t spilled;  /* records written to runs (statistics) */
    int failed;
} Ordw;

void ordw_init(Ordw *w, FILE *out, const char *sep, size_t mem_limit);
/* Takes a copy of text[0 .. len).  -1 + err on a write error. */
int ordw_add(Ordw *w, uint64_t seq, const char *text, size_t len, Err *e);
/* Writes what is held and every run, in order; n: the records expected
 * (0 .. n-1).  -1 + err on a write error or a gap. */
int ordw_finish(Ordw *w, uint64_t n, Err *e);
void ordw_free(Ordw *w);

#endif
