/*
 * backend.cu -- libservesim_kernels.so: the CUDA backend of the
 * calibration driver (calib/calib_abi.h), loaded by `servesim calib run
 * --backend cuda` with dlopen so that servesim itself never links CUDA.
 *
 * Build (make kernels does this, for sm_80, 89, 90, 100 and 120):
 *   nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -DCALIB_KERN_NO_CBLAS backend.cu ../calib/calib_kern.c \
 *        -lcublasLt -lcublas -o build/libservesim_kernels.so
 * Use:
 *   ./servesim calib check --backend cuda
 *   ./servesim calib run --backend cuda --model qwen3-8b --grid full --out DIR
 *
 * This file includes the kernel files themselves (one translation unit, the
 * standalone mains compiled out), so every kernel the driver times is the
 * one the standalone programs check and benchmark.
 */
#include "attn_decode.cu"
#include "attn_prefill.cu"
#include "gemm.cu"
#include "membw.cu"

struct KBackend {
    KDevice dev;
    KGemm gemm;
};

static int kb_gemm(void *ctx, int dtype, int m, int n, int k, int reps, double *ms, char *err, int errn)
{
    KBackend *b = (KBackend *)ctx;
    return kgemm_time(&b->gemm, &b->dev, dtype, m, n, k, reps, ms, err, errn);
}

static int kb_prefill(void *ctx, int batch, int chunk, int cached, int q_heads, int kv_heads, int head_dim, int reps,
                      double *ms, char *err, int errn)
{
    KBackend *b = (KBackend *)ctx;
    return kprefill_time(&b->dev, batch, chunk, cached, q_heads, kv_heads, head_dim, reps, ms, err, errn);
}

static int kb_decode(void *ctx, int batch, int cached, int q_heads, int kv_heads, int head_dim, int reps, double *ms,
                     char *err, int errn)
{
    KBackend *b = (KBackend *)ctx;
    return kdecode_time(&b->dev, batch, cached, q_heads, kv_heads, head_dim, reps, ms, err, errn);
}

static int kb_mem(void *ctx, int copy, double bytes, int reps, double *ms, char *err, int errn)
{
    KBackend *b = (KBackend *)ctx;
    return kmem_time(&b->dev, copy, bytes, reps, ms, err, errn);
}

static int kb_launch(void *ctx, int reps, double *ms, char *err, int errn)
{
    KBackend *b = (KBackend *)ctx;
    return klaunch_time(&b->dev, reps, ms, err, errn);
}

static int kb_check(void *ctx, char *log, int logn)
{
    KBackend *b = (KBackend *)ctx;
    if (logn > 0) log[0] = '\0';
    int bad = kgemm_check(&b->gemm, &b->dev, log, logn);
    bad |= kprefill_check(log, logn);
    bad |= kdecode_check(log, logn);
    bad |= kmem_check(&b->dev, log, logn);
    return bad;
}

static void kb_destroy(void *ctx)
{
    KBackend *b = (KBackend *)ctx;
    if (!b) return;
    kgemm_free(&b->gemm);
    kdevice_free(&b->dev);
    delete b;
}

extern "C" int servesim_kernels_init(ServesimKernels *out, char *err, int errn)
{
    KBackend *b = new KBackend();
    if (kdevice_init(&b->dev, err, errn) || kgemm_init(&b->gemm, err, errn)) {
        kb_destroy(b);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->abi = SERVESIM_KERNELS_ABI;
    snprintf(out->name, sizeof out->name, "cuda");
    snprintf(out->device, sizeof out->device, "%s", b->dev.name);
    int nd = 0;
    out->gemm_dtypes[nd++] = CALIB_ABI_BF16;
    if (b->dev.sm >= 89) out->gemm_dtypes[nd++] = CALIB_ABI_FP8;
    out->gemm_dtypes[nd] = -1;
    out->attn_dtype = CALIB_ABI_BF16;
    out->ctx = b;
    out->gemm = kb_gemm;
    out->attn_prefill = kb_prefill;
    out->attn_decode = kb_decode;
    out->mem = kb_mem;
    out->launch = kb_launch;
    out->check = kb_check;
    out->destroy = kb_destroy;
    return 0;
}
