/*
 * gemm.cu -- the model's linear layers: C[m][n] = X[m][k] W[n][k]^T (m token
 * rows, n output features, k input features, as in NVIDIA's tables), BF16
 * through cuBLAS (cublasGemmEx, FP32 accumulation) and FP8 E4M3 with BF16
 * output through cuBLASLt (sm_89 and newer; per-tensor scales of 1).
 *
 * Build and run (standalone: check against the CPU reference, then a
 * benchmark printing TFLOP/s and GB/s):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DKERNELS_MAIN -DCALIB_KERN_NO_CBLAS gemm.cu ../calib/calib_kern.c \
 *        -lcublasLt -lcublas -o build/gemm && ./build/gemm
 * (make kernels builds it for sm_80, 89, 90, 100 and 120.)
 *
 * Layout: row-major X and W are column-major X^T (k x m) and W^T (k x n), so
 * C^T (n x m, column-major = C row-major) = op(W^T)^T X^T: cuBLAS "TN", the
 * layout cuBLASLt requires for FP8.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp8.h>

#include "common.cuh"

#define KCUBLAS(call)                                                                        \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            snprintf(err, (size_t)errn, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #call, (int)s_); \
            return -1;                                                                       \
        }                                                                                    \
    } while (0)

struct KGemm {
    cublasHandle_t blas = nullptr;
    cublasLtHandle_t lt = nullptr;
    void *ws = nullptr; /* cuBLASLt workspace */
    size_t ws_bytes = 32u << 20;
    float *one = nullptr; /* device scale 1.0 for FP8 */
};

static int kgemm_init(KGemm *g, char *err, int errn)
{
    KCUBLAS(cublasCreate(&g->blas));
    KCUBLAS(cublasLtCreate(&g->lt));
    KCUDA(cudaMalloc(&g->ws, g->ws_bytes));
    KCUDA(cudaMalloc(&g->one, sizeof(float)));
    float one = 1.0f;
    KCUDA(cudaMemcpy(g->one, &one, sizeof one, cudaMemcpyHostToDevice));
    return 0;
}

static void kgemm_free(KGemm *g)
{
    if (g->blas) cublasDestroy(g->blas);
    if (g->lt) cublasLtDestroy(g->lt);
    if (g->ws) cudaFree(g->ws);
    if (g->one) cudaFree(g->one);
    *g = KGemm();
}

/* BF16: C = X W^T with FP32 accumulation. */
static int kgemm_bf16(KGemm *g, int m, int n, int k, const __nv_bfloat16 *x, const __nv_bfloat16 *w,
                      __nv_bfloat16 *c, char *err, int errn)
{
    const float alpha = 1.0f, beta = 0.0f;
    KCUBLAS(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k,
                         &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}

/* One FP8 problem: descriptors and the algorithm cuBLASLt picked. */
struct KGemmFp8 {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, cd = nullptr;
    cublasLtMatmulHeuristicResult_t heur;
};

static void kgemm_fp8_free(KGemmFp8 *p)
{
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->cd) cublasLtMatrixLayoutDestroy(p->cd);
    *p = KGemmFp8();
}

/* Returns CALIB_ABI_UNSUPPORTED when FP8 cannot run this shape here. */
static int kgemm_fp8_plan(KGemm *g, KDevice *d, int m, int n, int k, KGemmFp8 *p, char *err, int errn)
{
    if (d->sm < 89) {
        snprintf(err, (size_t)errn, "FP8 GEMM needs sm_89 or newer (this GPU is sm_%d)", d->sm);
        return CALIB_ABI_UNSUPPORTED;
    }
    if (k % 16 || n % 16) {
        snprintf(err, (size_t)errn, "FP8 GEMM needs n and k multiples of 16 (n %d, k %d)", n, k);
        return CALIB_ABI_UNSUPPORTED;
    }
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    KCUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    KCUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KCUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    KCUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &g->one, sizeof g->one));
    KCUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &g->one, sizeof g->one));
    KCUBLAS(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8F_E4M3, k, n, k)); /* W^T stored k x n */
    KCUBLAS(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8F_E4M3, k, m, k)); /* X^T stored k x m */
    KCUBLAS(cublasLtMatrixLayoutCreate(&p->cd, CUDA_R_16BF, n, m, n));  /* C^T n x m */
    cublasLtMatmulPreference_t pref;
    KCUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &g->ws_bytes, sizeof g->ws_bytes);
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->a, p->b, p->cd, p->cd, pref, 1, &p->heur, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
        snprintf(err, (size_t)errn, "cuBLASLt has no FP8 algorithm for m %d n %d k %d (status %d)", m, n, k, (int)s);
        return CALIB_ABI_UNSUPPORTED;
    }
    return 0;
}

static int kgemm_fp8(KGemm *g, KGemmFp8 *p, const void *x, const void *w, __nv_bfloat16 *c, char *err, int errn)
{
    const float alpha = 1.0f, beta = 0.0f;
    KCUBLAS(cublasLtMatmul(g->lt, p->op, &alpha, w, p->a, x, p->b, &beta, c, p->cd, c, p->cd, &p->heur.algo, g->ws,
                           g->ws_bytes, 0));
    return 0;
}

/* Timing for the driver: median ms of `reps` launches at (m, n, k). */
static int kgemm_time(KGemm *g, KDevice *d, int dtype, int m, int n, int k, int reps, double *ms, char *err,
                      int errn)
{
    if (dtype != CALIB_ABI_BF16 && dtype != CALIB_ABI_FP8) {
        snprintf(err, (size_t)errn, "GEMM dtype %d: the CUDA backend runs bf16 and fp8", dtype);
        return CALIB_ABI_UNSUPPORTED;
    }
    int rc = 0;
    if (dtype == CALIB_ABI_BF16) {
        __nv_bfloat16 *x = nullptr, *w = nullptr, *c = nullptr;
        if (krandom(&x, (size_t)m * k, 1, err, errn) || krandom(&w, (size_t)n * k, 2, err, errn))
            rc = -1;
        else if (cudaMalloc(&c, (size_t)m * n * sizeof *c) != cudaSuccess) {
            snprintf(err, (size_t)errn, "cudaMalloc of the %d x %d output failed", m, n);
            rc = -1;
        } else {
            rc = ktime(d, reps, [&](char *e2, int n2) { return kgemm_bf16(g, m, n, k, x, w, c, e2, n2); }, ms, err,
                       errn);
        }
        cudaFree(x);
        cudaFree(w);
        cudaFree(c);
        return rc;
    }
    KGemmFp8 p;
    rc = kgemm_fp8_plan(g, d, m, n, k, &p, err, errn);
    if (rc != 0) {
        kgemm_fp8_free(&p);
        return rc;
    }
    void *x = nullptr, *w = nullptr;
    __nv_bfloat16 *c = nullptr;
    /* Operand values do not change the time; zero bytes are valid E4M3. */
    if (cudaMalloc(&x, (size_t)m * k) != cudaSuccess || cudaMalloc(&w, (size_t)n * k) != cudaSuccess ||
        cudaMalloc(&c, (size_t)m * n * sizeof *c) != cudaSuccess || cudaMemset(x, 0x38, (size_t)m * k) != cudaSuccess ||
        cudaMemset(w, 0x38, (size_t)n * k) != cudaSuccess) {
        snprintf(err, (size_t)errn, "device buffers for the FP8 GEMM %d x %d x %d failed", m, n, k);
        rc = -1;
    } else {
        rc = ktime(d, reps, [&](char *e2, int n2) { return kgemm_fp8(g, &p, x, w, c, e2, n2); }, ms, err, errn);
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(c);
    kgemm_fp8_free(&p);
    return rc;
}

/* BF16 (and FP8 where supported) against the CPU reference on the same
 * rounded inputs.  Tolerance: largest error / largest |C| <= 1e-2 for BF16
 * (the output's own rounding is 4e-3), 8e-2 for FP8 E4M3 inputs. */
static int kgemm_check(KGemm *g, KDevice *d, char *log, int logn)
{
    char err[512] = "";
    const int errn = (int)sizeof err;
    const int m = 37, n = 96, k = 160;
    std::vector<float> x((size_t)m * k), w((size_t)n * k), ref((size_t)m * n), got((size_t)m * n);
    calib_kern_fill(x.data(), x.size(), 41);
    calib_kern_fill(w.data(), w.size(), 42);
    kround_bf16(x.data(), x.size());
    kround_bf16(w.data(), w.size());
    calib_kern_gemm_ref(m, n, k, x.data(), w.data(), ref.data());
    __nv_bfloat16 *dx = nullptr, *dw = nullptr, *dc = nullptr;
    int bad = 0;
    double diff = -1;
    if (kupload(&dx, x.data(), x.size(), err, errn) || kupload(&dw, w.data(), w.size(), err, errn) ||
        cudaMalloc(&dc, (size_t)m * n * sizeof *dc) != cudaSuccess || kgemm_bf16(g, m, n, k, dx, dw, dc, err, errn) ||
        kdownload(got.data(), dc, got.size(), err, errn))
        bad = 1;
    else
        diff = krel_diff(got.data(), ref.data(), got.size());
    bad |= !(diff >= 0 && diff <= 1e-2);
    size_t len = strlen(log);
    snprintf(log + len, (size_t)logn - len, "  gemm bf16 %dx%dx%d: max rel diff %.3g (tol 1e-2) %s%s\n", m, n, k, diff,
             bad ? "FAIL " : "ok", err);
    cudaFree(dx);
    cudaFree(dw);
    if (d->sm >= 89) {
        /* FP8: inputs rounded to E4M3 on the host the same way. */
        const int n8 = 96, k8 = 160;
        std::vector<__nv_fp8_e4m3> hx((size_t)m * k8), hw((size_t)n8 * k8);
        for (size_t i = 0; i < hx.size(); i++) {
            hx[i] = __nv_fp8_e4m3(x[i]);
            x[i] = (float)hx[i];
        }
        for (size_t i = 0; i < hw.size(); i++) {
            hw[i] = __nv_fp8_e4m3(w[i]);
            w[i] = (float)hw[i];
        }
        calib_kern_gemm_ref(m, n8, k8, x.data(), w.data(), ref.data());
        KGemmFp8 p;
        void *fx = nullptr, *fw = nullptr;
        int bad8 = 0;
        double d8 = -1;
        err[0] = '\0';
        if (kgemm_fp8_plan(g, d, m, n8, k8, &p, err, errn) != 0 || cudaMalloc(&fx, hx.size()) != cudaSuccess ||
            cudaMalloc(&fw, hw.size()) != cudaSuccess ||
            cudaMemcpy(fx, hx.data(), hx.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy(fw, hw.data(), hw.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
            kgemm_fp8(g, &p, fx, fw, dc, err, errn) || kdownload(got.data(), dc, (size_t)m * n8, err, errn))
            bad8 = 1;
        else
            d8 = krel_diff(got.data(), ref.data(), (size_t)m * n8);
        bad8 |= !(d8 >= 0 && d8 <= 8e-2);
        len = strlen(log);
        snprintf(log + len, (size_t)logn - len, "  gemm fp8 %dx%dx%d: max rel diff %.3g (tol 8e-2) %s%s\n", m, n8, k8,
                 d8, bad8 ? "FAIL " : "ok", err);
        cudaFree(fx);
        cudaFree(fw);
        kgemm_fp8_free(&p);
        bad |= bad8;
    }
    cudaFree(dc);
    return bad;
}

#ifdef KERNELS_MAIN
int main(void)
{
    char err[512] = "", log[4096] = "";
    const int errn = (int)sizeof err;
    KDevice d;
    KGemm g;
    if (kdevice_init(&d, err, errn) || kgemm_init(&g, err, errn)) {
        fprintf(stderr, "gemm: %s\n", err);
        return 1;
    }
    printf("gemm on %s\n", d.name);
    int bad = kgemm_check(&g, &d, log, (int)sizeof log);
    fputs(log, stdout);
    if (bad) return 1;
    const int shapes[][3] = {{1, 4096, 4096}, {16, 6144, 4096}, {256, 4096, 4096},
                             {2048, 24576, 4096}, {8192, 4096, 12288}, {16384, 4096, 4096}};
    for (const int dt : {CALIB_ABI_BF16, CALIB_ABI_FP8}) {
        for (const auto &s : shapes) {
            double ms = 0;
            int rc = kgemm_time(&g, &d, dt, s[0], s[1], s[2], 20, &ms, err, errn);
            if (rc == CALIB_ABI_UNSUPPORTED) {
                printf("  %s: %s\n", dt == CALIB_ABI_FP8 ? "fp8" : "bf16", err);
                break;
            }
            if (rc) {
                fprintf(stderr, "gemm: %s\n", err);
                return 1;
            }
            double flops = 2.0 * s[0] * s[1] * s[2], eb = dt == CALIB_ABI_FP8 ? 1 : 2;
            double bytes = eb * ((double)s[1] * s[2] + (double)s[0] * s[2]) + 2.0 * s[0] * s[1];
            printf("  %-4s m=%5d n=%5d k=%5d  %8.4f ms  %7.1f TFLOP/s  %7.1f GB/s\n", dt == CALIB_ABI_FP8 ? "fp8" : "bf16",
                   s[0], s[1], s[2], ms, flops / ms / 1e9, bytes / ms / 1e6);
        }
    }
    kgemm_free(&g);
    kdevice_free(&d);
    return 0;
}
#endif
