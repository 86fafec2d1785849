/*
 * common.cuh -- shared pieces of the calibration kernels (llm.c dev/cuda
 * common.h in spirit): error checks that return a message instead of
 * exiting (the kernels also run inside servesim through
 * libservesim_kernels.so, where only main may exit), a timer that flushes
 * L2 between launches and keeps the median of CUDA-event times, device
 * buffers of random values, and BF16 helpers.
 *
 * Units: ms for times, bytes, elements.
 */
#ifndef SERVESIM_KERNELS_COMMON_CUH
#define SERVESIM_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "../calib/calib_abi.h"
#include "../calib/calib_kern.h"
}

/* Every call that can fail goes through these: on failure they write the
 * message into (err, errn) and return -1 from the enclosing function. */
#define KCUDA(call)                                                                                   \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            snprintf(err, (size_t)errn, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            return -1;                                                                                \
        }                                                                                             \
    } while (0)

#define KLAUNCH()                                                                                     \
    do {                                                                                              \
        cudaError_t e_ = cudaGetLastError();                                                          \
        if (e_ != cudaSuccess) {                                                                      \
            snprintf(err, (size_t)errn, "%s:%d: kernel launch: %s", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            return -1;                                                                                \
        }                                                                                             \
    } while (0)

/* The device every kernel of a process uses, with the buffers and events
 * the timer needs.  One per process (backend context or standalone main). */
struct KDevice {
    int id = 0;
    int sm = 0;           /* compute capability, e.g. 90 */
    int sms = 0;          /* streaming multiprocessors */
    size_t l2_bytes = 0;
    void *flush = nullptr; /* 2 x L2, written before every timed launch */
    cudaEvent_t start = nullptr, stop = nullptr;
    char name[160] = "";
};

static inline int kdevice_init(KDevice *d, char *err, int errn)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(err, (size_t)errn, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    KCUDA(cudaSetDevice(d->id));
    cudaDeviceProp p;
    KCUDA(cudaGetDeviceProperties(&p, d->id));
    d->sm = p.major * 10 + p.minor;
    d->sms = p.multiProcessorCount;
    d->l2_bytes = (size_t)p.l2CacheSize;
    snprintf(d->name, sizeof d->name, "%.100s (sm_%d, %d SMs, %.0f MiB L2)", p.name, d->sm, d->sms,
             d->l2_bytes / 1048576.0);
    KCUDA(cudaMalloc(&d->flush, 2 * d->l2_bytes + 1));
    KCUDA(cudaEventCreate(&d->start));
    KCUDA(cudaEventCreate(&d->stop));
    return 0;
}

static inline void kdevice_free(KDevice *d)
{
    if (d->flush) cudaFree(d->flush);
    if (d->start) cudaEventDestroy(d->start);
    if (d->stop) cudaEventDestroy(d->stop);
    d->flush = nullptr;
    d->start = d->stop = nullptr;
}

/* Times launch() reps times (after one warm-up), flushing L2 before each
 * so that every launch reads its operands from device memory, as a layer
 * of a real model does; *ms = the median. */
template <typename F>
static int ktime(KDevice *d, int reps, F launch, double *ms, char *err, int errn)
{
    if (reps < 1) reps = 1;
    if (launch(err, errn) != 0) return -1; /* warm-up */
    KCUDA(cudaDeviceSynchronize());
    std::vector<double> t((size_t)reps);
    for (int i = 0; i < reps; i++) {
        KCUDA(cudaMemsetAsync(d->flush, i & 0xff, 2 * d->l2_bytes + 1));
        KCUDA(cudaEventRecord(d->start));
        if (launch(err, errn) != 0) return -1;
        KCUDA(cudaEventRecord(d->stop));
        KCUDA(cudaEventSynchronize(d->stop));
        float x = 0;
        KCUDA(cudaEventElapsedTime(&x, d->start, d->stop));
        t[(size_t)i] = x;
    }
    std::sort(t.begin(), t.end());
    *ms = reps % 2 ? t[(size_t)reps / 2] : 0.5 * (t[(size_t)reps / 2 - 1] + t[(size_t)reps / 2]);
    return 0;
}

/* Host floats -> device buffer of T (float or __nv_bfloat16). */
template <typename T>
static int kupload(T **dst, const float *src, size_t n, char *err, int errn)
{
    std::vector<T> h(n);
    for (size_t i = 0; i < n; i++) h[i] = (T)src[i];
    KCUDA(cudaMalloc(dst, n * sizeof(T) + 1));
    KCUDA(cudaMemcpy(*dst, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    return 0;
}

template <typename T>
static int kdownload(float *dst, const T *src, size_t n, char *err, int errn)
{
    std::vector<T> h(n);
    KCUDA(cudaMemcpy(h.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) dst[i] = (float)h[i];
    return 0;
}

/* Pseudo-random values in [-1, 1) from a hash of the index, generated on
 * the device: timing buffers of gigabytes (an LM head's weights) cost no
 * host work.  Checks upload host values instead, so that the CPU reference
 * sees the same inputs. */
template <typename T>
__global__ void kfill_kernel(T *x, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = (i + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        x[i] = (T)((float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
    }
}

/* A device buffer of n random values of T in [-1, 1). */
template <typename T>
static int krandom(T **dst, size_t n, unsigned long long seed, char *err, int errn)
{
    KCUDA(cudaMalloc(dst, n * sizeof(T) + 1));
    kfill_kernel<T><<<1024, 256>>>(*dst, n, seed);
    KLAUNCH();
    return 0;
}

/* Rounds host floats through BF16, so a CPU reference sees the GPU's inputs. */
static inline void kround_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = __bfloat162float(__float2bfloat16(x[i]));
}

/* Largest |a - b| relative to the largest |b| (1 when b is all zero). */
static inline double krel_diff(const float *a, const float *b, size_t n)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++) scale = std::max(scale, (double)std::fabs(b[i]));
    return calib_kern_maxdiff(a, b, n) / (scale > 0 ? scale : 1);
}

#endif
