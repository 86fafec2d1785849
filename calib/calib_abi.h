/*
 * calib_abi.h -- the calibration driver's kernel backend: a table of
 * timing functions plus a context (the ggml backend pattern).  The CPU
 * backend (calib_run.c) fills it in C; the CUDA backend is the shared
 * library kernels/build/libservesim_kernels.so, which exports
 * SERVESIM_KERNELS_SYMBOL and is loaded with dlopen, so that servesim
 * itself never links CUDA.
 *
 * C and C++ compatible, no other includes: kernels/backend.cu includes it.
 *
 * Every timing function returns 0 and the median latency in ms of `reps`
 * launches (after a warm-up launch; on a GPU each timed with CUDA events,
 * the L2 cache flushed between launches); CALIB_ABI_UNSUPPORTED when the
 * backend cannot run that shape or dtype (err says why; the driver skips
 * it); any other value on failure, with a message in err.  Shapes follow calib_meas.h: GEMM m token rows, n output
 * features, k input features; attention per GPU, `batch` sequences each with `chunk` new tokens over `cached` ones
 * (decode: chunk 1).
 */
#ifndef SERVESIM_CALIB_ABI_H
#define SERVESIM_CALIB_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

#define SERVESIM_KERNELS_ABI 1
#define SERVESIM_KERNELS_SYMBOL "servesim_kernels_init"

/* dtype codes: the values of Dtype in model.h */
#define CALIB_ABI_BF16 0
#define CALIB_ABI_FP8 2
#define CALIB_ABI_FP32 3

#define CALIB_ABI_UNSUPPORTED 1

typedef struct ServesimKernels {
    int abi;              /* SERVESIM_KERNELS_ABI */
    char name[16];        /* "cpu", "cuda" */
    char device[160];     /* what runs the kernels, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" */
    int gemm_dtypes[4];   /* dtype codes the GEMM supports, ended by -1 */
    int attn_dtype;       /* element type of the attention kernels' Q, K, V */
    void *ctx;
    int (*gemm)(void *ctx, int dtype, int m, int n, int k, int reps, double *ms, char *err, int errn);
    int (*attn_prefill)(void *ctx, int batch, int chunk, int cached, int q_heads, int kv_heads, int head_dim,
                        int reps, double *ms, char *err, int errn);
    int (*attn_decode)(void *ctx, int batch, int cached, int q_heads, int kv_heads, int head_dim, int reps,
                       double *ms, char *err, int errn);
    /* copy = 0: read `bytes`; 1: copy bytes / 2 (read + written = bytes) */
    int (*mem)(void *ctx, int copy, double bytes, int reps, double *ms, char *err, int errn);
    int (*launch)(void *ctx, int reps, double *ms, char *err, int errn);
    /* Runs each kernel on small random inputs against the CPU references
     * (calib_kern.h); one line per kernel into log; 0 when all agree. */
    int (*check)(void *ctx, char *log, int logn);
    void (*destroy)(void *ctx);
} ServesimKernels;

typedef int (*ServesimKernelsInit)(ServesimKernels *out, char *err, int errn);

#ifdef __cplusplus
}
#endif

#endif
