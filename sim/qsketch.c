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

void qsketch_add(QSketch *s, int64_t v)
{
    if (v < 0) v = 0;
    uint32_t b = bucket_of((uint64_t)v);
    if (b >= s->n_buckets) grow(s, b);
    s->counts[b]++;
    if (s->n++ == 0) s->shift = (double)v;
    if (v < s->min) s->min = v;
    if (v > s->max) s->max = v;
    double d = (double)v - s->shift;
    s->sum += d;
    s->sumsq += d * d;
}

/* s + x + x + ... (count additions, each rounded to nearest even), with
 * s >= 0 and x > 0.  Inside one binade [2^(e-1), 2^e) every sum is a
 * multiple of its ulp u, and an addition that stays in it adds x rounded to
 * a multiple of u: q = x - (x mod u), plus u when x mod u > u / 2 -- the
 * same increment each time.  A tie (x mod u = u / 2) rounds to the even
 * multiple: once s / u is even, the increment is q, plus u when q / u is
 * odd, each time.  So a stretch of additions is one exact multiplication;
 * s = 0, an odd s at a tie, or a sum about to leave the binade takes a
 * single addition. */
static double add_n_pos(double s, double x, uint64_t count)
{
    while (count > 0) {
        if (!(s > 0) || !isfinite(s) || !isfinite(x)) {
            s += x;
            count--;
            continue;
        }
        int e;
        frexp(s, &e);
        /* u is a power of two: x / u, its floor and the products are exact */
        const double top = ldexp(1.0, e), u = ldexp(1.0, e - 53), q = floor(x / u) * u, r = x - q;
        double inc;
        if (r == u / 2) {
            const double su = s / u;
            if (su != 2 * floor(su / 2)) {
                s += x;
                count--;
                continue;
            }
            const double qu = q / u;
            inc = q + (qu != 2 * floor(qu / 2) ? u : 0);
        } else {
            inc = q + (r > u / 2 ? u : 0);
        }
        if (inc == 0) return s; /* absorbed every time */
        /* step j (0-based) stays in the binade when s + j inc + x + u < top,
         * i.e. x < (top - u) - (s + j inc): both sides exact */
        const double lim = top - u;
        if (!(x < lim - s)) {
            s += x;
            count--;
            continue;
        }
        double kd = floor((lim - s - x) / inc) + 1;
        uint64_t k = kd >= (double)count ? count : (uint64_t)kd;
        while (k > 1 && !(x < lim - (s + (double)(k - 1) * inc))) k--;
        s += (double)k * inc; /* a multiple of u below top: exact */
        count -= k;
    }
    return s;
}

/* count additions of x to s, as a loop of s += x would leave s. */
static double add_n(double s, double x, uint64_t count)
{
    /* whole numbers whose every partial sum stays below 2^52: all exact */
    if (fabs(x) < 4503599627370496.0 && fabs(s) < 4503599627370496.0 && x == (double)(int64_t)x &&
        s == (double)(int64_t)s && fabs(s) + (double)count * fabs(x) < 4503599627370496.0)
        return s + (double)count * x;
    while (count > 0 && x != 0) {
        if (s >= 0 && x > 0) return add_n_pos(s, x, count);
        if (s <= 0 && x < 0) return -add_n_pos(-s, -x, count); /* rounding is symmetric */
        s += x;
        count--;
    }
    return s;
}

void qsketch_add_n(QSketch *s, int64_t v, uint64_t count)
{
    if (count == 0) return;
    if (v < 0) v = 0;
    uint32_t b = bucket_of((uint64_t)v);
    if (b >= s->n_buckets) grow(s, b);
    s->counts[b] += count;
    if (s->n == 0) s->shift = (double)v;
    s->n += count;
    if (v < s->min) s->min = v;
    if (v > s->max) s->max = v;
    double d = (double)v - s->shift;
    s->sum = add_n(s->sum, d, count);
    s->sumsq = add_n(s->sumsq, d * d, count);
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
    double k = src->shift - dst->shift, nb = (double)src->n;
    dst->sumsq += src->sumsq + 2 * k * src->sum + nb * k * k;
    dst->sum += src->sum + nb * k;
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
    return s->n ? s->shift + s->sum / (double)s->n : NAN;
}

double qsketch_sd(const QSketch *s)
{
    if (s->n < 2) return 0;
    double n = (double)s->n, var = (s->sumsq - s->sum * s->sum / n) / (n - 1);
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
    for (uint64_t i = 0; i < a->n; i++) qsketch_add(&a->sk, to_ns(a->buf[i]));
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
