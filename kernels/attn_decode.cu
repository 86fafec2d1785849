/*
 * attn_decode.cu -- decode attention over a paged KV cache: one new query
 * per sequence attends its ctx_len keys (its own included), read through a
 * block table of 16-token blocks, grouped-query heads.  Layouts as in
 * calib/calib_kern.h (q, o [nseq][q_heads][d]; k_cache, v_cache
 * [blocks][16][kv_heads][d]); FP32 accumulation, BF16 or FP32 storage.
 *
 * Build and run (check against the CPU reference, then a benchmark printing
 * GB/s of KV streamed):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DKERNELS_MAIN -DCALIB_KERN_NO_CBLAS attn_decode.cu ../calib/calib_kern.c \
 *        -o build/attn_decode && ./build/attn_decode
 *
 * One thread block per (sequence, query head).  Each thread walks keys
 * tid, tid + blockDim, ... with its own online-softmax state (m, l, acc);
 * the states are then merged exactly as example 31.2 merges blocks: every
 * state rescaled to the largest max, sums and weighted values added.
 */
#include "common.cuh"

#define KD_THREADS 64

template <int D, typename T>
__global__ void kdecode_kernel(const T *__restrict__ q, const T *__restrict__ kc, const T *__restrict__ vc,
                               const int *__restrict__ table, int max_blocks, const int *__restrict__ ctx_len,
                               T *__restrict__ o, int q_heads, int kv_heads, float scale)
{
    __shared__ float st_m[KD_THREADS], st_l[KD_THREADS];
    __shared__ float st_acc[KD_THREADS][D];
    const int seq = blockIdx.x, x = blockIdx.y, tid = threadIdx.x;
    const int kh = x / (q_heads / kv_heads), len = ctx_len[seq];
    const long long qi = ((long long)seq * q_heads + x) * D;
    float qr[D], acc[D];
    for (int y = 0; y < D; y++) {
        qr[y] = (float)q[qi + y] * scale;
        acc[y] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int t = tid; t < len; t += KD_THREADS) {
        const long long blk = table[(long long)seq * max_blocks + t / CALIB_KERN_BLOCK];
        const long long ki = ((blk * CALIB_KERN_BLOCK + t % CALIB_KERN_BLOCK) * kv_heads + kh) * D;
        float s = 0.f;
        for (int y = 0; y < D; y++) s += qr[y] * (float)kc[ki + y];
        const float mn = fmaxf(m, s);
        const float r = m == -INFINITY ? 0.f : expf(m - mn), p = expf(s - mn);
        l = l * r + p;
        for (int y = 0; y < D; y++) acc[y] = acc[y] * r + p * (float)vc[ki + y];
        m = mn;
    }
    st_m[tid] = m;
    st_l[tid] = l;
    for (int y = 0; y < D; y++) st_acc[tid][y] = acc[y];
    __syncthreads();
    /* Merge: thread y owns output dimensions y, y + KD_THREADS, ... */
    float mx = -INFINITY;
    for (int i = 0; i < KD_THREADS; i++) mx = fmaxf(mx, st_m[i]);
    float sum = 0.f;
    for (int i = 0; i < KD_THREADS; i++)
        if (st_m[i] != -INFINITY) sum += st_l[i] * expf(st_m[i] - mx);
    for (int y = tid; y < D; y += KD_THREADS) {
        float a = 0.f;
        for (int i = 0; i < KD_THREADS; i++)
            if (st_m[i] != -INFINITY) a += st_acc[i][y] * expf(st_m[i] - mx);
        o[qi + y] = (T)(sum > 0.f ? a / sum : 0.f);
    }
}

template <typename T>
static int kdecode_launch(const T *q, const T *kc, const T *vc, const int *table, int max_blocks, const int *ctx_len,
                          int nseq, T *o, int q_heads, int kv_heads, int d, char *err, int errn)
{
    if (q_heads % kv_heads) {
        snprintf(err, (size_t)errn, "q_heads %d is not a multiple of kv_heads %d", q_heads, kv_heads);
        return CALIB_ABI_UNSUPPORTED;
    }
    dim3 grid((unsigned)nseq, (unsigned)q_heads);
    const float scale = 1.0f / sqrtf((float)d);
    switch (d) {
    case 32:
        kdecode_kernel<32, T><<<grid, KD_THREADS>>>(q, kc, vc, table, max_blocks, ctx_len, o, q_heads, kv_heads, scale);
        break;
    case 64:
        kdecode_kernel<64, T><<<grid, KD_THREADS>>>(q, kc, vc, table, max_blocks, ctx_len, o, q_heads, kv_heads, scale);
        break;
    case 128:
        kdecode_kernel<128, T><<<grid, KD_THREADS>>>(q, kc, vc, table, max_blocks, ctx_len, o, q_heads, kv_heads, scale);
        break;
    default: snprintf(err, (size_t)errn, "head_dim %d: the decode kernel is built for 32, 64 and 128", d);
        return CALIB_ABI_UNSUPPORTED;
    }
    KLAUNCH();
    return 0;
}

/* Block table with each sequence's blocks interleaved with the others', so
 * the reads are scattered as in a long-running server's cache. */
static void kdecode_table(std::vector<int> &table, int nseq, int max_blocks)
{
    table.resize((size_t)nseq * max_blocks);
    for (int i = 0; i < nseq; i++)
        for (int b = 0; b < max_blocks; b++) table[(size_t)i * max_blocks + b] = b * nseq + i;
}

/* Timing for the driver: `batch` sequences each attending cached + 1 keys, BF16. */
static int kdecode_time(KDevice *dev, int batch, int cached, int q_heads, int kv_heads, int d, int reps, double *ms,
                        char *err, int errn)
{
    const int len = cached + 1, max_blocks = (len + CALIB_KERN_BLOCK - 1) / CALIB_KERN_BLOCK;
    std::vector<int> table, lens((size_t)batch, len);
    kdecode_table(table, batch, max_blocks);
    const size_t kv = (size_t)batch * max_blocks * CALIB_KERN_BLOCK * kv_heads * d;
    __nv_bfloat16 *q = nullptr, *kc = nullptr, *vc = nullptr, *o = nullptr;
    int *dt = nullptr, *dl = nullptr;
    int rc = 0;
    if (krandom(&q, (size_t)batch * q_heads * d, 1, err, errn) || krandom(&o, (size_t)batch * q_heads * d, 2, err, errn) ||
        cudaMalloc(&kc, kv * sizeof *kc) != cudaSuccess || cudaMalloc(&vc, kv * sizeof *vc) != cudaSuccess ||
        cudaMemset(kc, 0, kv * sizeof *kc) != cudaSuccess || cudaMemset(vc, 0, kv * sizeof *vc) != cudaSuccess ||
        cudaMalloc(&dt, table.size() * sizeof(int)) != cudaSuccess || cudaMalloc(&dl, lens.size() * sizeof(int)) != cudaSuccess ||
        cudaMemcpy(dt, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dl, lens.data(), lens.size() * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess) {
        if (!err[0]) snprintf(err, (size_t)errn, "device buffers for %d sequences x %d keys failed", batch, len);
        rc = -1;
    } else {
        rc = ktime(dev, reps,
                   [&](char *e2, int n2) {
                       return kdecode_launch(q, kc, vc, dt, max_blocks, dl, batch, o, q_heads, kv_heads, d, e2, n2);
                   },
                   ms, err, errn);
    }
    cudaFree(q);
    cudaFree(kc);
    cudaFree(vc);
    cudaFree(o);
    cudaFree(dt);
    cudaFree(dl);
    return rc;
}

/* FP32 kernel against calib_kern_attn_naive (each sequence a one-token
 * chunk after len - 1 cached keys) with ragged lengths and GQA. */
static int kdecode_check(char *log, int logn)
{
    char err[512] = "";
    const int errn = (int)sizeof err;
    const int nseq = 5, qh = 8, kvh = 2, d = 64;
    const int len[nseq] = {1, 16, 17, 100, 257};
    int c[nseq], h[nseq], max_blocks = 0;
    size_t nk = 0;
    for (int i = 0; i < nseq; i++) {
        c[i] = 1;
        h[i] = len[i] - 1;
        nk += (size_t)len[i];
        max_blocks = std::max(max_blocks, (len[i] + CALIB_KERN_BLOCK - 1) / CALIB_KERN_BLOCK);
    }
    std::vector<float> q((size_t)nseq * qh * d), k(nk * kvh * d), v(k.size()), ref(q.size()), got(q.size());
    calib_kern_fill(q.data(), q.size(), 61);
    calib_kern_fill(k.data(), k.size(), 62);
    calib_kern_fill(v.data(), v.size(), 63);
    calib_kern_attn_naive(q.data(), k.data(), v.data(), ref.data(), c, h, nseq, qh, kvh, d);
    std::vector<int> table;
    kdecode_table(table, nseq, max_blocks);
    const size_t bsz = (size_t)CALIB_KERN_BLOCK * kvh * d;
    std::vector<float> kc((size_t)nseq * max_blocks * bsz, 0.f), vc(kc.size(), 0.f);
    size_t off = 0;
    for (int i = 0; i < nseq; i++) {
        for (int t = 0; t < len[i]; t++) {
            size_t blk = (size_t)table[(size_t)i * max_blocks + t / CALIB_KERN_BLOCK];
            size_t dst = (blk * CALIB_KERN_BLOCK + t % CALIB_KERN_BLOCK) * kvh * d, src = (off + (size_t)t) * kvh * d;
            std::copy(k.begin() + (long)src, k.begin() + (long)(src + (size_t)kvh * d), kc.begin() + (long)dst);
            std::copy(v.begin() + (long)src, v.begin() + (long)(src + (size_t)kvh * d), vc.begin() + (long)dst);
        }
        off += (size_t)len[i];
    }
    float *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
    int *dt = nullptr, *dl = nullptr;
    int bad = 0;
    double diff = -1;
    if (kupload(&dq, q.data(), q.size(), err, errn) || kupload(&dk, kc.data(), kc.size(), err, errn) ||
        kupload(&dv, vc.data(), vc.size(), err, errn) || cudaMalloc(&dout, q.size() * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&dt, table.size() * sizeof(int)) != cudaSuccess || cudaMalloc(&dl, nseq * sizeof(int)) != cudaSuccess ||
        cudaMemcpy(dt, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dl, len, nseq * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
        kdecode_launch(dq, dk, dv, dt, max_blocks, dl, nseq, dout, qh, kvh, d, err, errn) ||
        cudaDeviceSynchronize() != cudaSuccess || kdownload(got.data(), dout, got.size(), err, errn))
        bad = 1;
    else
        diff = calib_kern_maxdiff(got.data(), ref.data(), got.size());
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
    cudaFree(dt);
    cudaFree(dl);
    bad |= !(diff >= 0 && diff <= 1e-4);
    size_t n = strlen(log);
    snprintf(log + n, (size_t)logn - n,
             "  attn_decode fp32, paged, 5 ragged sequences, GQA 8/2, d 64: max abs diff %.3g (tol 1e-4) %s%s\n", diff,
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
        fprintf(stderr, "attn_decode: %s\n", err);
        return 1;
    }
    printf("attn_decode on %s\n", dev.name);
    int bad = kdecode_check(log, (int)sizeof log);
    fputs(log, stdout);
    if (bad) return 1;
    const int cases[][2] = {{1, 4095}, {8, 4095}, {32, 4095}, {128, 1023}, {16, 32767}};
    for (const auto &cs : cases) {
        const int qh = 32, kvh = 8, d = 128;
        double ms = 0;
        if (kdecode_time(&dev, cs[0], cs[1], qh, kvh, d, 20, &ms, err, errn)) {
            fprintf(stderr, "attn_decode: %s\n", err);
            return 1;
        }
        double keys = (double)cs[0] * (cs[1] + 1), bytes = keys * 2 * kvh * d * 2;
        printf("  b=%3d ctx=%6d heads 32/8 d 128  %8.4f ms  %7.2f TFLOP/s  %7.1f GB/s\n", cs[0], cs[1] + 1, ms,
               4.0 * qh * d * keys / ms / 1e9, bytes / ms / 1e6);
    }
    kdevice_free(&dev);
    return 0;
}
#endif
