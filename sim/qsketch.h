/*
 * qsketch.h -- a mergeable streaming quantile sketch over non-negative
 * integer nanoseconds, with a stated relative-error bound (issue 16).
 *
 * Buckets are logarithmic with QSKETCH_SUB_BITS bits of mantissa (the
 * layout of an HDR histogram): a value below 2^(SUB_BITS+1) ns (2,048 ns)
 * has a bucket of its own (exact); a larger one with highest bit m falls in
 * a bucket of width 2^(m - SUB_BITS), whose midpoint stands for it.  So
 *
 *   every order statistic the sketch returns is within a relative error of
 *   2^-(SUB_BITS+1) = 2^-11 = 0.0488% of the true one,
 *
 * and a quantile interpolated between two order statistics (GSL's rule,
 * metrics.h) is within the same relative error of the exact interpolated
 * quantile (a convex combination of errors each <= 2^-11 of positive
 * values).  The count, minimum, maximum, mean and standard deviation are
 * exact (one pass over shifted sums).  Adding a value is a few integer operations;
 * memory is at most 2,048 + 53 x 1,024 counters (450 KB), grown to the
 * largest value seen.  Two sketches merge by adding counts: merging is
 * exact (the merged sketch equals one fed both streams), which is what a
 * cluster's replicas or a sweep's shards need.  Negative inputs count as 0
 * (a latency is never negative: the engine checks clocks are monotonic).
 */
#ifndef SERVESIM_QSKETCH_H
#define SERVESIM_QSKETCH_H

#include <stdint.h>

#define QSKETCH_SUB_BITS 10
/* The stated bound on the relative error of an order statistic. */
#define QSKETCH_REL_ERR (1.0 / (double)(1u << (QSKETCH_SUB_BITS + 1)))

typedef struct QSketch {
    uint64_t *counts;
    uint32_t n_buckets;       /* allocated counters */
    uint64_t n;
    int64_t min, max;
    int64_t shift;            /* the first value: sums are of d = v - shift, in ns (the shifted-data
                                 variance, stable while shift is near the mean) */
    /* sum d and sum d^2, exact in 128-bit integers while they fit; past
     * that (2^127: some 10^14 gaps of an hour) in doubles from then on */
    __extension__ __int128 isum;
    __extension__ unsigned __int128 isumsq;
    int inexact;              /* the doubles below hold the sums */
    double sum, sumsq;
} QSketch;

void qsketch_init(QSketch *s);
void qsketch_free(QSketch *s);
void qsketch_add(QSketch *s, int64_t v);
/* count copies of v: the state count qsketch_add calls leave, bit for bit
 * (one bucket update; the integer sums grow by count d and count d^2). */
void qsketch_add_n(QSketch *s, int64_t v, uint64_t count);
/* dst += src (the counts add; exact). */
void qsketch_merge(QSketch *dst, const QSketch *src);
/* The k-th smallest value (0-based, k < n), within QSKETCH_REL_ERR. */
double qsketch_rank(const QSketch *s, uint64_t k);
/* The q-quantile (0 <= q <= 1) interpolated like
 * gsl_stats_quantile_from_sorted_data: NaN when empty. */
double qsketch_quantile(const QSketch *s, double q);
double qsketch_mean(const QSketch *s);
double qsketch_sd(const QSketch *s);  /* sample standard deviation (n - 1), 0 when n < 2 */

/* A latency accumulator of seconds: exact values kept while there are at
 * most `exact_max` of them, then folded into a sketch of their nanoseconds
 * (rounded to 1 ns; bounded memory).  exact_max = UINT64_MAX keeps every
 * value (--exact-stats).  A value of QSKETCH_NEVER_S or more ("never", an
 * unfinished request in an SLO percentile) is kept as INT64_MAX ns. */
#define QSKETCH_NEVER_S 9.2e9
typedef struct StatAcc {
    double *buf;
    uint64_t n, cap, exact_max;
    int sketched;
    QSketch sk;
} StatAcc;

void statacc_init(StatAcc *a, uint64_t exact_max);
void statacc_free(StatAcc *a);
void statacc_add(StatAcc *a, double v_s);
/* The same for a whole number of nanoseconds (an engine's clock): once
 * sketched, no conversion at all. */
void statacc_add_ns(StatAcc *a, int64_t v_ns);
/* count copies of v_ns, as count statacc_add_ns calls leave them: the
 * engine's decode fast path adds one iteration's gaps at once. */
void statacc_add_ns_n(StatAcc *a, int64_t v_ns, uint64_t count);
/* Folds src into dst (src unchanged); the result is exact while the
 * total fits dst's exact_max. */
void statacc_merge(StatAcc *dst, const StatAcc *src);

#endif
