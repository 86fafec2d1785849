/*
 * qsketch.c -- the log-bucket quantile sketch and the exact-then-sketched
 * latency accumulator (see qsketch.h for the error bound).
 */
#include "qsketch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define SUB (1u << QSKETCH_SUB_BITS)       /* 1,024 sub-buckets per octave */
#define EXACT_TOP (2u * SUB)               /* values below 2,048 are exact */

static uint32_t bucket_of(uint64_t v)
{
    if (v < EXACT_TOP) return (uint32_t)v;
    int msb = 63 - __builtin_clzll(v);     /* >= QSKETCH_SUB_BITS + 1 */
    int shift = msb - QSKETCH_SUB_BITS;
    return EXACT_TOP + (uint32_t)(msb - QSKETCH_SUB_BITS - 1) * SUB + (uint32_t)((v >> shift) & (SUB - 1));
}

/* The value standing for bucket b: its midpoint (exact below EXACT_TOP). */
static double bucket_value(uint32_t b)
{
    if (b < EXACT_TOP) return (double)b;
    uint32_t oct = (b - EXACT_TOP) / SUB, m = (b - EXACT_TOP) % SUB;
    int shift = (int)oct + 1;
    double lo = (double)((uint64_t)(SUB | m) << shift), width = (double)((uint64_t)1 << shift);
    return lo + (width - 1) / 2;
}

void qsketch_init(QSketch *s)
{
    memset(s, 0, sizeof *s);
    s->min = INT64_MAX;
    s->max = INT64_MIN;
}

void qsketch_free(QSketch *s)
{
    free(s->counts);
    qsketch_init(s);
}

static void grow(QSketch *s, uint32_t b)
{
    if (b < s->n_buckets) return;
    uint32_t nb = s->n_buckets ? s->n_buckets : EXACT_TOP;
    while (nb <= b) nb += 4 * SUB;
    s->counts = xrealloc(s->counts, nb * sizeof *s->counts);
    memset(s->counts + s->n_buckets, 0, (nb - s->n_buckets) * sizeof *s->counts);
    s->n_buckets = nb;
}

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* The sums in doubles from here on (the integers would overflow). */
static void go_inexact(QSketch *s)
{
    if (s->inexact) return;
    s->inexact = 1;
    s->sum = (double)s->isum;
    s->sumsq = (double)s->isumsq;
}

/* sum += count d, sumsq += count d^2: exact while the integers hold them.
 * |d| < 2^63 and count < 2^64, so count |d| < 2^127 and d^2 < 2^126. */
static void add_sums(QSketch *s, int64_t d, uint64_t count)
{
    if (!s->inexact) {
        const uint64_t ad = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
        if (ad <= UINT32_MAX && count <= UINT32_MAX) {
            /* the usual case (a gap of under 4.3 s, a batch's count): d^2
             * fits 64 bits and count d^2 96, count |d| 64, so only the
             * sums can overflow -- the same sums and checks as below
             * without the 128-bit multiplications' own checks */
            i128 sum;
            u128 tot;
            if (!__builtin_add_overflow(s->isum, (i128)d * (i128)count, &sum) &&
                !__builtin_add_overflow(s->isumsq, (u128)(ad * ad) * count, &tot)) {
                s->isum = sum;
                s->isumsq = tot;
                return;
            }
            go_inexact(s);
        }
    }
    if (!s->inexact) {
        i128 dd = d, lin = dd * (i128)count, sum;
        u128 sq = (u128)(dd < 0 ? -dd : dd), sq2, tot;
        sq *= sq;
        if (!__builtin_add_overflow(s->isum, lin, &sum) && !__builtin_mul_overflow(sq, (u128)count, &sq2) &&
            !__builtin_add_overflow(s->isumsq, sq2, &tot)) {
            s->isum = sum;
            s->isumsq = tot;
            return;
        }
        go_inexact(s);
    }
    double x = (double)d;
    s->sum += x * (double)count;
    s->sumsq += x * x * (double)count;
}

void qsketch_add(QSketch *s, int64_t v)
{
    qsketch_add_n(s, v, 1);
}

void qsketch_add_n(QSketch *s, int64_t v, uint64_t count)
{
    if (count == 0) return;
    if (v < 0) v = 0;
    uint32_t b = bucket_of((uint64_t)v);
    if (b >= s->n_buckets) grow(s, b);
    s->counts[b] += count;
    if (s->n == 0) s->shift = v;
    s->n += count;
    if (v < s->min) s->min = v;
    if (v > s->max) s->max = v;
    add_sums(s, v - s->shift, count);
}

/* dst's exact sums += src's shifted by k (src's shift - dst's): with
 * S, Q src's sums and n its count, sum (d + k) = S + n k and
 * sum (d + k)^2 = Q + k (S + (S + n k)).  0 (dst untouched) where an
 * integer would overflow. */
static int merge_exact(QSketch *dst, const QSketch *src, int64_t k)
{
    i128 kk = k, lin, t, q2;
    u128 q;
    if (__builtin_mul_overflow((i128)src->n, kk, &lin) || __builtin_add_overflow(src->isum, lin, &lin) ||
        __builtin_add_overflow(src->isum, lin, &t) || __builtin_mul_overflow(t, kk, &t) ||
        src->isumsq > (u128)(((u128)1 << 126) - 1) || __builtin_add_overflow((i128)src->isumsq, t, &q2) || q2 < 0 ||
        __builtin_add_overflow(dst->isumsq, (u128)q2, &q) || __builtin_add_overflow(dst->isum, lin, &lin))
        return 0;
    dst->isum = lin;
    dst->isumsq = q;
    return 1;
}

void qsketch_merge(QSketch *dst, const QSketch *src)
{
    if (src->n == 0) return;
    uint32_t top = 0;
    for (uint32_t b = 0; b < src->n_buckets; b++)
        if (src->counts[b]) top = b;
    grow(dst, top);
    for (uint32_t b = 0; b <= top && b < src->n_buckets; b++) dst->counts[b] += src->counts[b];
    /* re-express src's shifted sums against dst's shift */
    if (dst->n == 0) dst->shift = src->shift;
    int64_t k = src->shift - dst->shift;
    if (dst->inexact || src->inexact || !merge_exact(dst, src, k)) {
        go_inexact(dst);
        double kd = (double)k, nb = (double)src->n;
        double ss = src->inexact ? src->sum : (double)src->isum, sq = src->inexact ? src->sumsq : (double)src->isumsq;
        dst->sumsq += sq + 2 * kd * ss + nb * kd * kd;
        dst->sum += ss + nb * kd;
    }
    dst->n += src->n;
    if (src->min < dst->min) dst->min = src->min;
    if (src->max > dst->max) dst->max = src->max;
}

double qsketch_rank(const QSketch *s, uint64_t k)
{
    if (s->n == 0) return NAN;
    if (k == 0) return (double)s->min;
    if (k >= s->n - 1) return (double)s->max;
    uint64_t c = 0;
    for (uint32_t b = 0; b < s->n_buckets; b++) {
        c += s->counts[b];
        if (c > k) {
            double v = bucket_value(b);
            /* the extremes are exact: a bucket's midpoint never leaves them */
            if (v < (double)s->min) v = (double)s->min;
            if (v > (double)s->max) v = (double)s->max;
            return v;
        }
    }
    return (double)s->max; /* NEVER: the counts sum to n */
}

double qsketch_quantile(const QSketch *s, double q)
{
    if (s->n == 0) return NAN;
    double index = q * (double)(s->n - 1);
    uint64_t lhs = (uint64_t)index;
    double delta = index - (double)lhs;
    if (lhs >= s->n - 1) return qsketch_rank(s, s->n - 1);
    double a = qsketch_rank(s, lhs);
    if (delta == 0) return a;
    return (1 - delta) * a + delta * qsketch_rank(s, lhs + 1);
}

double qsketch_mean(const QSketch *s)
{
    return s->n ? (double)s->shift + (s->inexact ? s->sum : (double)s->isum) / (double)s->n : NAN;
}

double qsketch_sd(const QSketch *s)
{
    if (s->n < 2) return 0;
    double n = (double)s->n, var;
    if (s->inexact) {
        var = (s->sumsq - s->sum * s->sum / n) / (n - 1);
    } else {
        /* n Q - S^2 = n (n - 1) var, exact when it fits */
        i128 nq, s2, num;
        if (s->isumsq <= (u128)(((u128)1 << 126) - 1) && !__builtin_mul_overflow((i128)s->n, (i128)s->isumsq, &nq) &&
            !__builtin_mul_overflow(s->isum, s->isum, &s2) && !__builtin_sub_overflow(nq, s2, &num))
            var = (double)num / n / (n - 1);
        else /* long double: the difference cancels most of the digits */
            var = (double)(((long double)s->isumsq - (long double)s->isum * (long double)s->isum / (long double)n) /
                           (long double)(n - 1));
    }
    return var > 0 ? sqrt(var) : 0;
}

/* ------------------------------------------------------------ StatAcc */

void statacc_init(StatAcc *a, uint64_t exact_max)
{
    memset(a, 0, sizeof *a);
    a->exact_max = exact_max;
    qsketch_init(&a->sk);
}

void statacc_free(StatAcc *a)
{
    free(a->buf);
    qsketch_free(&a->sk);
    statacc_init(a, a->exact_max);
}

static int64_t to_ns(double v_s)
{
    return v_s >= QSKETCH_NEVER_S ? INT64_MAX : (int64_t)llround(v_s * 1e9);
}

static void to_sketch(StatAcc *a)
{
    /* Runs of one value (the decode fast path adds a batch's gap once per
     * sequence) go in as one qsketch_add_n where no sum can overflow:
     * every value in [0, 4 s), so |d| < 2^32, into the empty sketch, at
     * most 2^32 of them -- the integers are those of the single adds. */
    int runs = a->n <= UINT32_MAX;
    for (uint64_t i = 0; runs && i < a->n; i++) runs = a->buf[i] >= 0 && a->buf[i] < 4.0;
    for (uint64_t i = 0; i < a->n;) {
        uint64_t j = i + 1;
        if (runs)
            while (j < a->n && a->buf[j] == a->buf[i]) j++;
        qsketch_add_n(&a->sk, to_ns(a->buf[i]), j - i);
        i = j;
    }
    free(a->buf);
    a->buf = NULL;
    a->cap = 0;
    a->sketched = 1;
}

void statacc_add(StatAcc *a, double v)
{
    if (a->sketched) {
        qsketch_add(&a->sk, to_ns(v));
        a->n++;
        return;
    }
    if (a->n == a->exact_max) {
        to_sketch(a);
        qsketch_add(&a->sk, to_ns(v));
        a->n++;
        return;
    }
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 1024;
        if (a->cap > a->exact_max) a->cap = a->exact_max;
        a->buf = xrealloc(a->buf, a->cap * sizeof *a->buf);
    }
    a->buf[a->n++] = v;
}

void statacc_add_ns(StatAcc *a, int64_t v)
{
    if (a->sketched) {
        qsketch_add(&a->sk, v);
        a->n++;
        return;
    }
    statacc_add(a, (double)v / 1e9);
}

void statacc_add_ns_n(StatAcc *a, int64_t v, uint64_t count)
{
    if (!a->sketched) {
        /* kept exactly (or crossing into the sketch): one by one */
        for (uint64_t i = 0; i < count; i++) statacc_add_ns(a, v);
        return;
    }
    qsketch_add_n(&a->sk, v, count);
    a->n += count;
}

void statacc_merge(StatAcc *dst, const StatAcc *src)
{
    if (!src->sketched && !dst->sketched && dst->n + src->n <= dst->exact_max) {
        for (uint64_t i = 0; i < src->n; i++) statacc_add(dst, src->buf[i]);
        return;
    }
    if (!dst->sketched) to_sketch(dst);
    if (src->sketched) qsketch_merge(&dst->sk, &src->sk);
    else
        for (uint64_t i = 0; i < src->n; i++) qsketch_add(&dst->sk, to_ns(src->buf[i]));
    dst->n += src->n;
}
