/*
 * extsort.h -- fixed-size records sorted by the int64 key they start with,
 * in bounded memory (issue 36): a streamed run produces some of its
 * outputs' records out of the order the format needs (a trace's counter
 * steps are known when a request leaves, but are written by time).
 * Records are held in a buffer; a full buffer is sorted and written to an
 * anonymous temporary file (tmpfile) as a run; reading merges the runs and
 * what is held, a heap of one record per run.  Memory is the buffer plus a
 * small read buffer per run; disk is the records.  Equal keys come out in
 * their bytes' order (deterministic, whatever the spills).
 */
#ifndef SERVESIM_EXTSORT_H
#define SERVESIM_EXTSORT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The records held in memory before a spill (and the test's knob). */
#define EXTSORT_MEM_DEFAULT (16u << 20)

typedef struct ExtSort ExtSort;

/* rec_size: bytes per record (at least 8: the key, an int64_t at its
 * start); mem_bytes: the buffer (0: EXTSORT_MEM_DEFAULT). */
ExtSort *extsort_new(size_t rec_size, size_t mem_bytes);
/* -1 + e when a spill cannot be written. */
int extsort_add(ExtSort *x, const void *rec, Err *e);
/* Ends the adding; extsort_next then reads every record in key order. */
int extsort_rewind(ExtSort *x, Err *e);
/* 1 and the next record in rec, 0 at the end, -1 + e on a read error. */
int extsort_next(ExtSort *x, void *rec, Err *e);
uint64_t extsort_count(const ExtSort *x);
uint32_t extsort_runs(const ExtSort *x); /* runs written to disk (statistics, tests) */
void extsort_free(ExtSort *x);

#endif
