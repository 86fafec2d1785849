/*
 * membw.cu -- device-memory bandwidth (a streaming read that sums a buffer,
 * a copy) and the launch overhead of an empty kernel.
 *
 * Build and run (check against the CPU, then a benchmark printing GB/s and
 * the launch time):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DKERNELS_MAIN -DCALIB_KERN_NO_CBLAS membw.cu ../calib/calib_kern.c \
 *        -o build/membw && ./build/membw
 *
 * Read: a grid-stride loop of float4 loads into per-thread sums, reduced
 * per block and added atomically, so no load can be optimised away.  Copy:
 * float4 stores of float4 loads; bytes = read + written.  Launch: many
 * back-to-back launches of an empty kernel, timed together, divided.
 */
#include "common.cuh"

__global__ void kmem_read_kernel(const float4 *__restrict__ x, size_t n4, float *out)
{
    __shared__ float part[32];
    float s = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += part[w];
        atomicAdd(out, t);
    }
}

__global__ void kmem_copy_kernel(float4 *__restrict__ dst, const float4 *__restrict__ src, size_t n4)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

__global__ void kempty_kernel(void) {}

static unsigned kmem_blocks(const KDevice *d)
{
    return (unsigned)(d->sms > 0 ? 8 * d->sms : 1024);
}

static int kmem_launch(const KDevice *d, int copy, float4 *dst, const float4 *src, size_t n4, float *sum, char *err,
                       int errn)
{
    if (copy) kmem_copy_kernel<<<kmem_blocks(d), 256>>>(dst, src, n4);
    else kmem_read_kernel<<<kmem_blocks(d), 256>>>(src, n4, sum);
    KLAUNCH();
    return 0;
}

static int klaunch_many(int n, char *err, int errn)
{
    for (int i = 0; i < n; i++) kempty_kernel<<<1, 1>>>();
    KLAUNCH();
    return 0;
}

/* copy = 0: read `bytes`; 1: copy bytes / 2 (read + written = bytes). */
static int kmem_time(KDevice *d, int copy, double bytes, int reps, double *ms, char *err, int errn)
{
    const size_t n4 = (size_t)(bytes / (copy ? 2 : 1)) / sizeof(float4);
    if (n4 == 0) {
        snprintf(err, (size_t)errn, "%.0f bytes: below one float4", bytes);
        return CALIB_ABI_UNSUPPORTED;
    }
    float4 *a = nullptr, *b = nullptr;
    float *sum = nullptr;
    int rc = 0;
    if (cudaMalloc(&a, n4 * sizeof(float4)) != cudaSuccess || cudaMemset(a, 0, n4 * sizeof(float4)) != cudaSuccess ||
        cudaMalloc(&sum, sizeof(float)) != cudaSuccess ||
        (copy && cudaMalloc(&b, n4 * sizeof(float4)) != cudaSuccess)) {
        snprintf(err, (size_t)errn, "cudaMalloc of %.3g GB failed", bytes / 1e9);
        rc = -1;
    } else {
        rc = ktime(d, reps, [&](char *e2, int n2) { return kmem_launch(d, copy, b, a, n4, sum, e2, n2); }, ms, err,
                   errn);
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(sum);
    return rc;
}

/* Launch overhead: 1000 back-to-back empty launches per timed sample. */
static int klaunch_time(KDevice *d, int reps, double *ms, char *err, int errn)
{
    double t = 0;
    int rc = ktime(d, reps, [&](char *e2, int n2) { return klaunch_many(1000, e2, n2); }, &t, err, errn);
    *ms = t / 1000;
    return rc;
}

/* The read's sum and the copy's bytes against the CPU. */
static int kmem_check(KDevice *d, char *log, int logn)
{
    char err[512] = "";
    const int errn = (int)sizeof err;
    const size_t n = 1 << 20;
    std::vector<float> h(n), back(n);
    calib_kern_fill(h.data(), n, 71);
    float *a = nullptr, *b = nullptr, *sum = nullptr, got = 0;
    int bad = 0;
    double rel = -1, cdiff = -1;
    if (kupload(&a, h.data(), n, err, errn) || cudaMalloc(&b, n * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&sum, sizeof(float)) != cudaSuccess || cudaMemset(sum, 0, sizeof(float)) != cudaSuccess)
        bad = 1;
    if (!bad) {
        kmem_read_kernel<<<kmem_blocks(d), 256>>>((const float4 *)a, n / 4, sum);
        kmem_copy_kernel<<<kmem_blocks(d), 256>>>((float4 *)b, (const float4 *)a, n / 4);
        if (cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(back.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
            snprintf(err, (size_t)errn, "%s", cudaGetErrorString(cudaGetLastError()));
            bad = 1;
        } else {
            double want = 0, mag = 0;
            for (size_t i = 0; i < n; i++) {
                want += h[i];
                mag += std::fabs(h[i]);
            }
            rel = std::fabs(got - want) / mag; /* relative to the sum of magnitudes */
            cdiff = calib_kern_maxdiff(back.data(), h.data(), n);
        }
    }
    bad |= !(rel >= 0 && rel <= 1e-5) || cdiff != 0;
    size_t len = strlen(log);
    snprintf(log + len, (size_t)logn - len, "  mem read sum: rel diff %.3g (tol 1e-5); copy: max diff %.3g (exact) %s%s\n",
             rel, cdiff, bad ? "FAIL " : "ok", err);
    cudaFree(a);
    cudaFree(b);
    cudaFree(sum);
    return bad;
}

#ifdef KERNELS_MAIN
int main(void)
{
    char err[512] = "", log[4096] = "";
    const int errn = (int)sizeof err;
    KDevice d;
    if (kdevice_init(&d, err, errn)) {
        fprintf(stderr, "membw: %s\n", err);
        return 1;
    }
    printf("membw on %s\n", d.name);
    int bad = kmem_check(&d, log, (int)sizeof log);
    fputs(log, stdout);
    if (bad) return 1;
    for (double mb = 1; mb <= 4096; mb *= 4)
        for (int copy = 0; copy < 2; copy++) {
            double ms = 0, bytes = mb * 1048576;
            if (kmem_time(&d, copy, bytes, 10, &ms, err, errn)) {
                fprintf(stderr, "membw: %s\n", err);
                return 1;
            }
            printf("  %-4s %7.0f MiB  %9.4f ms  %7.1f GB/s\n", copy ? "copy" : "read", mb, ms, bytes / ms / 1e6);
        }
    double ms = 0;
    if (klaunch_time(&d, 10, &ms, err, errn)) {
        fprintf(stderr, "membw: %s\n", err);
        return 1;
    }
    printf("  empty kernel launch  %.2f us\n", ms * 1e3);
    kdevice_free(&d);
    return 0;
}
#endif
