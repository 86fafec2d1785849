/*
 * calib_kern.c -- CPU reference kernels and the CPU backend's compute (see
 * calib_kern.h for layouts).
 *
 * Owns the arithmetic the CUDA kernels must reproduce: naive attention
 * (the definition), tiled online-softmax attention and paged decode
 * attention (the algorithms the GPU kernels implement, in the same order),
 * the blockwise softmax merge, the GEMM (CBLAS) and the memory streams.
 *
 * Invariants: sums of exponentials are always taken relative to a running
 * maximum, so no exp() overflows for any finite score; a query with no
 * keys (impossible under the causal layout, NEVER reached) outputs zeros.
 * No allocation except one scratch row per call.  Units: none (numbers).
 */
#include "calib_kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The kernel programs (kernels/) compile this file with
 * -DCALIB_KERN_NO_CBLAS so that they need no GSL: their GEMM reference is
 * the triple loop. */
#ifndef CALIB_KERN_NO_CBLAS
#include <gsl/gsl_cblas.h>
#endif

void calib_kern_softmax_block(const float *s, const float *v, int n, int d, float *m, float *l, float *acc)
{
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = s[i] > mx ? s[i] : mx;
    *m = mx;
    *l = 0;
    for (int x = 0; x < d; x++) acc[x] = 0;
    for (int i = 0; i < n; i++) {
        float p = expf(s[i] - mx);
        *l += p;
        for (int x = 0; x < d; x++) acc[x] += p * v[(size_t)i * d + x];
    }
}

void calib_kern_softmax_merge(float *m1, float *l1, float *acc1, float m2, float l2, const float *acc2, int d)
{
    float m = *m1 > m2 ? *m1 : m2;
    /* exp(-inf - m) = 0: an empty state contributes nothing. */
    float a = isinf(*m1) ? 0.0f : expf(*m1 - m), b = isinf(m2) ? 0.0f : expf(m2 - m);
    *l1 = *l1 * a + l2 * b;
    for (int x = 0; x < d; x++) acc1[x] = acc1[x] * a + acc2[x] * b;
    *m1 = m;
}

static float calib_kern_dot(const float *a, const float *b, int d)
{
    float s = 0;
    for (int x = 0; x < d; x++) s += a[x] * b[x];
    return s;
}

void calib_kern_attn_naive(const float *q, const float *k, const float *v, float *o, const int *c, const int *h,
                           int nseq, int q_heads, int kv_heads, int d)
{
    const int group = q_heads / kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    size_t qoff = 0, koff = 0;
    int maxlen = 1;
    for (int i = 0; i < nseq; i++) maxlen = h[i] + c[i] > maxlen ? h[i] + c[i] : maxlen;
    double *p = malloc((size_t)maxlen * sizeof *p);
    if (!p) return; /* NEVER: a reference run on tiny inputs */
    for (int i = 0; i < nseq; i++) {
        for (int j = 0; j < c[i]; j++) {
            int nk = h[i] + j + 1;
            for (int x = 0; x < q_heads; x++) {
                const float *qr = q + ((qoff + (size_t)j) * q_heads + x) * d;
                int kh = x / group;
                double mx = -HUGE_VAL, sum = 0;
                for (int t = 0; t < nk; t++) {
                    p[t] = scale * calib_kern_dot(qr, k + ((koff + (size_t)t) * kv_heads + kh) * d, d);
                    mx = p[t] > mx ? p[t] : mx;
                }
                for (int t = 0; t < nk; t++) {
                    p[t] = exp(p[t] - mx);
                    sum += p[t];
                }
                float *out = o + ((qoff + (size_t)j) * q_heads + x) * d;
                for (int y = 0; y < d; y++) {
                    double acc = 0;
                    for (int t = 0; t < nk; t++) acc += p[t] * v[((koff + (size_t)t) * kv_heads + kh) * d + y];
                    out[y] = (float)(acc / sum);
                }
            }
        }
        qoff += (size_t)c[i];
        koff += (size_t)h[i] + (size_t)c[i];
    }
    free(p);
}

void calib_kern_attn_tiled(const float *q, const float *k, const float *v, float *o, const int *c, const int *h,
                           int nseq, int q_heads, int kv_heads, int d, int tile_q, int tile_k)
{
    const int group = q_heads / kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    if (tile_q < 1) tile_q = 1;
    if (tile_k < 1) tile_k = 1;
    /* Per query row of a tile: m, l, acc[d]; plus one tile of scores. */
    float *m = malloc((size_t)tile_q * sizeof *m), *l = malloc((size_t)tile_q * sizeof *l);
    float *acc = malloc((size_t)tile_q * d * sizeof *acc), *s = malloc((size_t)tile_k * sizeof *s);
    if (!m || !l || !acc || !s) goto out; /* NEVER */
    size_t qoff = 0, koff = 0;
    for (int i = 0; i < nseq; i++) {
        for (int x = 0; x < q_heads; x++) {
            const int kh = x / group;
            for (int j0 = 0; j0 < c[i]; j0 += tile_q) {
                int nq = c[i] - j0 < tile_q ? c[i] - j0 : tile_q;
                for (int r = 0; r < nq; r++) {
                    m[r] = -INFINITY;
                    l[r] = 0;
                    for (int y = 0; y < d; y++) acc[(size_t)r * d + y] = 0;
                }
                /* Keys up to the tile's last query position. */
                int kend = h[i] + j0 + nq;
                for (int t0 = 0; t0 < kend; t0 += tile_k) {
                    int nk = kend - t0 < tile_k ? kend - t0 : tile_k;
                    for (int r = 0; r < nq; r++) {
                        int pos = h[i] + j0 + r; /* attends keys 0 .. pos */
                        if (t0 > pos) continue;  /* a tile wholly in this row's future */
                        int nv = pos - t0 + 1 < nk ? pos - t0 + 1 : nk;
                        const float *qr = q + ((qoff + (size_t)(j0 + r)) * q_heads + x) * d;
                        float bm = -INFINITY;
                        for (int t = 0; t < nv; t++) {
                            s[t] = scale * calib_kern_dot(qr, k + ((koff + (size_t)(t0 + t)) * kv_heads + kh) * d, d);
                            bm = s[t] > bm ? s[t] : bm;
                        }
                        /* Online update: rescale the running sums to the new max. */
                        float mn = m[r] > bm ? m[r] : bm;
                        float a = isinf(m[r]) ? 0.0f : expf(m[r] - mn);
                        float *ar = acc + (size_t)r * d;
                        l[r] *= a;
                        for (int y = 0; y < d; y++) ar[y] *= a;
                        for (int t = 0; t < nv; t++) {
                            float p = expf(s[t] - mn);
                            const float *vr = v + ((koff + (size_t)(t0 + t)) * kv_heads + kh) * d;
                            l[r] += p;
                            for (int y = 0; y < d; y++) ar[y] += p * vr[y];
                        }
                        m[r] = mn;
                    }
                }
                for (int r = 0; r < nq; r++) {
                    float *out = o + ((qoff + (size_t)(j0 + r)) * q_heads + x) * d;
                    for (int y = 0; y < d; y++) out[y] = l[r] > 0 ? acc[(size_t)r * d + y] / l[r] : 0.0f;
                }
            }
        }
        qoff += (size_t)c[i];
        koff += (size_t)h[i] + (size_t)c[i];
    }
out:
    free(m);
    free(l);
    free(acc);
    free(s);
}

void calib_kern_attn_paged(const float *q, const float *k_cache, const float *v_cache, const int *block_table,
                           int max_blocks, const int *ctx_len, int nseq, int q_heads, int kv_heads, int d, float *o)
{
    const int group = q_heads / kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    float *acc = malloc((size_t)d * sizeof *acc), s[CALIB_KERN_BLOCK];
    if (!acc) return; /* NEVER */
    for (int i = 0; i < nseq; i++) {
        int nb = (ctx_len[i] + CALIB_KERN_BLOCK - 1) / CALIB_KERN_BLOCK;
        for (int x = 0; x < q_heads; x++) {
            const int kh = x / group;
            const float *qr = q + ((size_t)i * q_heads + x) * d;
            float m = -INFINITY, l = 0;
            for (int y = 0; y < d; y++) acc[y] = 0;
            for (int b = 0; b < nb && b < max_blocks; b++) {
                size_t blk = (size_t)block_table[(size_t)i * max_blocks + b];
                int n = ctx_len[i] - b * CALIB_KERN_BLOCK;
                if (n > CALIB_KERN_BLOCK) n = CALIB_KERN_BLOCK;
                float bm = -INFINITY;
                for (int t = 0; t < n; t++) {
                    s[t] = scale * calib_kern_dot(qr, k_cache + ((blk * CALIB_KERN_BLOCK + t) * kv_heads + kh) * d, d);
                    bm = s[t] > bm ? s[t] : bm;
                }
                float mn = m > bm ? m : bm, a = isinf(m) ? 0.0f : expf(m - mn);
                l *= a;
                for (int y = 0; y < d; y++) acc[y] *= a;
                for (int t = 0; t < n; t++) {
                    float p = expf(s[t] - mn);
                    const float *vr = v_cache + ((blk * CALIB_KERN_BLOCK + t) * kv_heads + kh) * d;
                    l += p;
                    for (int y = 0; y < d; y++) acc[y] += p * vr[y];
                }
                m = mn;
            }
            float *out = o + ((size_t)i * q_heads + x) * d;
            for (int y = 0; y < d; y++) out[y] = l > 0 ? acc[y] / l : 0.0f;
        }
    }
    free(acc);
}

void calib_kern_gemm(int m, int n, int k, const float *a, const float *w, float *c)
{
#ifndef CALIB_KERN_NO_CBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, w, k, 0.0f, c, n);
#else
    calib_kern_gemm_ref(m, n, k, a, w, c);
#endif
}

void calib_kern_gemm_ref(int m, int n, int k, const float *a, const float *w, float *c)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int x = 0; x < k; x++) s += (double)a[(size_t)i * k + x] * w[(size_t)j * k + x];
            c[(size_t)i * n + j] = (float)s;
        }
}

float calib_kern_read(const float *x, size_t n)
{
    /* Four independent sums: the loop is bound by memory, not by the
     * latency of one chain of additions. */
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < n; i++) s0 += x[i];
    return s0 + s1 + s2 + s3;
}

void calib_kern_copy(float *dst, const float *src, size_t n)
{
    memcpy(dst, src, n * sizeof *dst);
}

void calib_kern_fill(float *x, size_t n, unsigned long long seed)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

double calib_kern_maxdiff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* a NaN counts as the largest difference */
    }
    return m;
}
