/*
 * attn_prefill.cu -- prefill (context) attention: a tiled kernel with an
 * online softmax (chapter 31, example 31.2: per query row a running max,
 * and the sum and weighted values rescaled whenever the max grows), causal,
 * grouped-query, over a chunk of c new tokens per sequence after h cached
 * ones.  Layouts as in calib/calib_kern.h (q, o [sum c][q_heads][d]; k, v
 * [sum (h + c)][kv_heads][d]); FP32 accumulation, BF16 or FP32 storage.
 *
 * Build and run (check against the CPU reference, then a benchmark printing
 * TFLOP/s and GB/s):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DKERNELS_MAIN -DCALIB_KERN_NO_CBLAS attn_prefill.cu ../calib/calib_kern.c \
 *        -o build/attn_prefill && ./build/attn_prefill
 *
 * One thread block per (tile of KP_BQ query rows, query head, sequence);
 * one thread per query row keeps its (m, l, acc[D]) in registers; the block
 * stages KP_BK keys and values at a time in shared memory and skips key
 * tiles wholly in the future of its last row.  This is FlashAttention-2's
 * loop order on CUDA cores (no tensor cores): a calibration of this kernel
 * measures it, not FlashAttention; the bundled profiles come from NVIDIA's
 * FlashAttention tables.
 */
#include "common.cuh"

#define KP_BQ 64
#define KP_BK 32

/* Per-sequence offsets into q/o and k/v. */
struct KSeqs {
    const int *c, *h;            /* device [nseq] */
    const long long *qoff, *koff; /* device [nseq] */
};

template <int D, typename T>
__global__ void kprefill_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                                T *__restrict__ o, KSeqs s, int q_heads, int kv_heads, float scale)
{
    __shared__ float ks[KP_BK][D];
    __shared__ float vs[KP_BK][D];
    const int seq = blockIdx.z, x = blockIdx.y, j0 = blockIdx.x * KP_BQ;
    const int c = s.c[seq], h = s.h[seq];
    if (j0 >= c) return; /* whole block idle: same for every thread */
    const int kh = x / (q_heads / kv_heads);
    const int j = j0 + threadIdx.x;
    const bool active = j < c;
    const int pos = h + j; /* this row attends keys 0 .. pos */
    float qr[D], acc[D];
    float m = -INFINITY, l = 0.f;
    const long long qi = (s.qoff[seq] + j) * (long long)q_heads + x;
    for (int y = 0; y < D; y++) {
        qr[y] = active ? (float)q[qi * D + y] * scale : 0.f;
        acc[y] = 0.f;
    }
    const int last = min(c, j0 + KP_BQ) - 1;
    const int kend = h + last + 1; /* keys any row of the tile needs */
    for (int t0 = 0; t0 < kend; t0 += KP_BK) {
        const int nk = min(KP_BK, kend - t0);
        __syncthreads(); /* the previous tile is consumed */
        for (int i = threadIdx.x; i < nk * D; i += blockDim.x) {
            int t = i / D, y = i % D;
            long long ki = ((s.koff[seq] + t0 + t) * (long long)kv_heads + kh) * D + y;
            ks[t][y] = (float)k[ki];
            vs[t][y] = (float)v[ki];
        }
        __syncthreads();
        if (!active || t0 > pos) continue;
        const int nv = min(nk, pos - t0 + 1);
        float sc[KP_BK];
        float bm = -INFINITY;
        for (int t = 0; t < nv; t++) {
            float a = 0.f;
            for (int y = 0; y < D; y++) a += qr[y] * ks[t][y];
            sc[t] = a;
            bm = fmaxf(bm, a);
        }
        const float mn = fmaxf(m, bm);
        const float r = m == -INFINITY ? 0.f : expf(m - mn);
        l *= r;
        for (int y = 0; y < D; y++) acc[y] *= r;
        for (int t = 0; t < nv; t++) {
            const float p = expf(sc[t] - mn);
            l += p;
            for (int y = 0; y < D; y++) acc[y] += p * vs[t][y];
        }
        m = mn;
    }
    if (active)
        for (int y = 0; y < D; y++) o[qi * D + y] = (T)(l > 0.f ? acc[y] / l : 0.f);
}

/* A ragged batch on the device: per-sequence lengths and offsets. */
struct KPrefillBatch {
    int nseq = 0, maxc = 0;
    int *c = nullptr, *h = nullptr;
    long long *qoff = nullptr, *koff = nullptr;
    long long nq = 0, nk = 0; /* tokens of q/o and of k/v */
};

static int kprefill_batch(KPrefillBatch *b, const int *c, const int *h, int nseq, char *err, int errn)
{
    std::vector<long long> qo((size_t)nseq), ko((size_t)nseq);
    b->nseq = nseq;
    for (int i = 0; i < nseq; i++) {
        qo[(size_t)i] = b->nq;
        ko[(size_t)i] = b->nk;
        b->nq += c[i];
        b->nk += (long long)c[i] + h[i];
        b->maxc = std::max(b->maxc, c[i]);
    }
    KCUDA(cudaMalloc(&b->c, nseq * sizeof(int)));
    KCUDA(cudaMalloc(&b->h, nseq * sizeof(int)));
    KCUDA(cudaMalloc(&b->qoff, nseq * sizeof(long long)));
    KCUDA(cudaMalloc(&b->koff, nseq * sizeof(long long)));
    KCUDA(cudaMemcpy(b->c, c, nseq * sizeof(int), cudaMemcpyHostToDevice));
    KCUDA(cudaMemcpy(b->h, h, nseq * sizeof(int), cudaMemcpyHostToDevice));
    KCUDA(cudaMemcpy(b->qoff, qo.data(), nseq * sizeof(long long), cudaMemcpyHostToDevice));
    KCUDA(cudaMemcpy(b->koff, ko.data(), nseq * sizeof(long long), cudaMemcpyHostToDevice));
    return 0;
}

static void kprefill_batch_free(KPrefillBatch *b)
{
    cudaFree(b->c);
    cudaFree(b->h);
    cudaFree(b->qoff);
    cudaFree(b->koff);
    *b = KPrefillBatch();
}

template <typename T>
static int kprefill_launch(const KPrefillBatch *b, const T *q, const T *k, const T *v, T *o, int q_heads, int kv_heads,
                           int d, char *err, int errn)
{
    if (q_heads % kv_heads) {
        snprintf(err, (size_t)errn, "q_heads %d is not a multiple of kv_heads %d", q_heads, kv_heads);
        return CALIB_ABI_UNSUPPORTED;
    }
    dim3 grid((unsigned)((b->maxc + KP_BQ - 1) / KP_BQ), (unsigned)q_heads, (unsigned)b->nseq);
    KSeqs s = {b->c, b->h, b->qoff, b->koff};
    const float scale = 1.0f / sqrtf((float)d);
    switch (d) {
    case 32: kprefill_kernel<32, T><<<grid, KP_BQ>>>(q, k, v, o, s, q_heads, kv_heads, scale); break;
    case 64: kprefill_kernel<64, T><<<grid, KP_BQ>>>(q, k, v, o, s, q_heads, kv_heads, scale); break;
    case 128: kprefill_kernel<128, T><<<grid, KP_BQ>>>(q, k, v, o, s, q_heads, kv_heads, scale); break;
    default: snprintf(err, (size_t)errn, "head_dim %d: the prefill kernel is built for 32, 64 and 128", d);
        return CALIB_ABI_UNSUPPORTED;
    }
    KLAUNCH();
    return 0;
}

/* Timing for the driver: `batch` sequences of `chunk` new tokens after
 * `cached`, BF16. */
static int kprefill_time(KDevice *dev, int batch, int chunk, int cached, int q_heads, int kv_heads, int d, int reps,
                         double *ms, char *err, int errn)
{
    std::vector<int> c((size_t)batch, chunk), h((size_t)batch, cached);
    KPrefillBatch b;
    if (kprefill_batch(&b, c.data(), h.data(), batch, err, errn)) return -1;
    __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
    int rc = 0;
    if (krandom(&q, (size_t)b.nq * q_heads * d, 1, err, errn) || krandom(&k, (size_t)b.nk * kv_heads * d, 2, err, errn) ||
        krandom(&v, (size_t)b.nk * kv_heads * d, 3, err, errn) || krandom(&o, (size_t)b.nq * q_heads * d, 4, err, errn))
        rc = -1;
    else
        rc = ktime(dev, reps, [&](char *e2, int n2) { return kprefill_launch(&b, q, k, v, o, q_heads, kv_heads, d, e2, n2); },
                   ms, err, errn);
    cudaFree(q);
    cudaFree(k);
    cudaFree(v);
    cudaFree(o);
    kprefill_batch_free(&b);
    return rc;
}

/* FP32 kernel against calib_kern_attn_naive on a ragged GQA batch.  The
 * tolerance 1e-4 covers the GPU's different summation order and expf. */
static int kprefill_check(char *log, int logn)
{
    char err[512] = "";
    const int errn = (int)sizeof err;
    const int nseq = 4, qh = 8, kvh = 2, d = 64;
    const int c[nseq] = {1, 17, 100, 70}, h[nseq] = {0, 33, 0, 129};
    KPrefillBatch b;
    int bad = kprefill_batch(&b, c, h, nseq, err, errn) != 0;
    double diff = -1;
    if (!bad) {
        std::vector<float> q((size_t)b.nq * qh * d), k((size_t)b.nk * kvh * d), v(k.size()), ref(q.size()),
            got(q.size());
        calib_kern_fill(q.data(), q.size(), 51);
        calib_kern_fill(k.data(), k.size(), 52);
        calib_kern_fill(v.data(), v.size(), 53);
        calib_kern_attn_naive(q.data(), k.data(), v.data(), ref.data(), c, h, nseq, qh, kvh, d);
        float *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
        if (kupload(&dq, q.data(), q.size(), err, errn) || kupload(&dk, k.data(), k.size(), err, errn) ||
            kupload(&dv, v.data(), v.size(), err, errn) || cudaMalloc(&dout, q.size() * sizeof(float)) != cudaSuccess ||
            kprefill_launch(&b, dq, dk, dv, dout, qh, kvh, d, err, errn) ||
            cudaDeviceSynchronize() != cudaSuccess || kdownload(got.data(), dout, got.size(), err, errn))
            bad = 1;
        else
            diff = calib_kern_maxdiff(got.data(), ref.data(), got.size());
        cudaFree(dq);
        cudaFree(dk);
        cudaFree(dv);
        cudaFree(dout);
    }
    kprefill_batch_free(&b);
    bad |= !(diff >= 0 && diff <= 1e-4);
    size_t len = strlen(log);
    snprintf(log + len, (size_t)logn - len,
             "  attn_prefill fp32, 4 ragged sequences, GQA 8/2, d 64: max abs diff %.3g (tol 1e-4) %s%s\n", diff,
             bad ? "FAIL " : "ok", err);
    return bad;
}

#ifdef KERNELS_MAIN
int main(void)
{
    char err[512] = "", log[4096] = "";
    const int errn = (int)sizeof err;
    KDevice dev;
    if (kdevice_init(&dev, err, errn)) {
        fprintf(stderr, "attn_prefill: %s\n", err);
        return 1;
    }
    printf("attn_prefill on %s\n", dev.name);
    int bad = kprefill_check(log, (int)sizeof log);
    fputs(log, stdout);
    if (bad) return 1;
    const int cases[][3] = {{1, 512, 0}, {1, 2048, 0}, {4, 2048, 0}, {1, 512, 8192}, {16, 1024, 0}};
    for (const auto &cs : cases) {
        const int qh = 32, kvh = 8, d = 128;
        double ms = 0;
        if (kprefill_time(&dev, cs[0], cs[1], cs[2], qh, kvh, d, 10, &ms, err, errn)) {
            fprintf(stderr, "attn_prefill: %s\n", err);
            return 1;
        }
        double pairs = (double)cs[1] * cs[2] + (double)cs[1] * (cs[1] + 1) / 2;
        double flops = 4.0 * qh * d * pairs * cs[0];
        double bytes = cs[0] * (2.0 * cs[1] * qh * d + 2.0 * (cs[1] + cs[2]) * kvh * d) * 2;
        printf("  b=%2d c=%5d h=%5d heads 32/8 d 128  %8.4f ms  %7.2f TFLOP/s  %7.1f GB/s\n", cs[0], cs[1], cs[2], ms,
               flops / ms / 1e9, bytes / ms / 1e6);
    }
    kdevice_free(&dev);
    return 0;
}
#endif
