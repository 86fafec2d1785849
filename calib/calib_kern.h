/*
 * calib_kern.h -- CPU kernels: the references every CUDA kernel in
 * kernels/ is checked against, and the CPU backend of the calibration
 * driver.
 *
 * Plain C (also compiled by nvcc into the kernel programs, hence the
 * extern "C" guard and no project headers).  FP32 throughout.
 *
 * Attention layout (ragged batches: sequence i has c[i] new tokens over
 * h[i] cached ones, its keys are the h[i] + c[i] tokens of its context):
 *   q, o    [sum c][q_heads][d]            the new tokens' queries / outputs
 *   k, v    [sum (h + c)][kv_heads][d]     every key and value of each sequence
 * Query j of sequence i sits at position h[i] + j and attends keys
 * 0 .. h[i] + j (causal); query head x uses KV head x / (q_heads / kv_heads)
 * (grouped-query attention); scores are scaled by 1 / sqrt(d).
 *
 * Paged KV: blocks of CALIB_KERN_BLOCK tokens, k_cache and v_cache
 * [n_blocks][CALIB_KERN_BLOCK][kv_heads][d]; block_table[i * max_blocks + b]
 * is the physical block holding tokens 16 b .. 16 b + 15 of sequence i.
 */
#ifndef SERVESIM_CALIB_KERN_H
#define SERVESIM_CALIB_KERN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CALIB_KERN_BLOCK 16

/* The running state of an online softmax over some keys for one query:
 * max score m, l = sum exp(s - m), acc = sum exp(s - m) v (d values). */
void calib_kern_softmax_block(const float *s, const float *v, int n, int d, float *m, float *l, float *acc);
/* Merges state 2 into state 1 (rescaling both to the larger max): the
 * operation that lets blocks of keys be processed independently
 * (example 31.2). */
void calib_kern_softmax_merge(float *m1, float *l1, float *acc1, float m2, float l2, const float *acc2, int d);

/* Naive attention: full score row, softmax, weighted sum.  The reference. */
void calib_kern_attn_naive(const float *q, const float *k, const float *v, float *o, const int *c, const int *h,
                           int nseq, int q_heads, int kv_heads, int d);
/* Tiled attention with online softmax (FlashAttention-2 order): tiles of
 * tile_q queries x tile_k keys, one running (m, l, acc) per query row,
 * causal tiles beyond the diagonal skipped. */
void calib_kern_attn_tiled(const float *q, const float *k, const float *v, float *o, const int *c, const int *h,
                           int nseq, int q_heads, int kv_heads, int d, int tile_q, int tile_k);
/* Decode attention over a paged KV cache: one new query per sequence
 * (q, o [nseq][q_heads][d]) attending ctx_len[i] keys (the new token's
 * included), read block by block through the block table with an online
 * softmax. */
void calib_kern_attn_paged(const float *q, const float *k_cache, const float *v_cache, const int *block_table,
                           int max_blocks, const int *ctx_len, int nseq, int q_heads, int kv_heads, int d, float *o);

/* C[m][n] = A[m][k] W[n][k]^T (a linear layer: rows of tokens times the
 * weight matrix), through CBLAS; and the triple-loop reference. */
void calib_kern_gemm(int m, int n, int k, const float *a, const float *w, float *c);
void calib_kern_gemm_ref(int m, int n, int k, const float *a, const float *w, float *c);

/* Memory streams: a sum over n floats (read) and a copy. */
float calib_kern_read(const float *x, size_t n);
void calib_kern_copy(float *dst, const float *src, size_t n);

/* Deterministic pseudo-random floats in [-1, 1) (xorshift). */
void calib_kern_fill(float *x, size_t n, unsigned long long seed);
/* Largest |a - b| over n values. */
double calib_kern_maxdiff(const float *a, const float *b, size_t n);

#ifdef __cplusplus
}
#endif

#endif
