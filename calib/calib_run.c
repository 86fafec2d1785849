/*
 * calib_run.c -- the calibration driver and its CPU backend (see
 * calib_run.h and calib_abi.h).
 *
 * Owns: which shapes a model needs measured (the same per-GPU GEMMs and
 * attention launches the roofline charges, cost.c), the grids, the CPU
 * timing loop, and loading a GPU backend from a shared library.
 *
 * Invariants: every measured row passes calib_meas_add (valid shape,
 * latency > 0); a failing kernel stops the run with its message (a
 * partial grid would fit silently worse).  The CPU backend times with
 * CLOCK_MONOTONIC, the median of `reps` runs after one warm-up; the
 * measurements are wall-clock by nature, the only place in servesim that
 * reads a clock for a result.  Units: ms in rows, bytes, elements.
 */
#include "calib_run.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib_kern.h"
#include "paths.h"

void calib_run_opts_default(CalibRunOpts *o)
{
    memset(o, 0, sizeof *o);
    o->grid = CALIB_GRID_SMALL;
    o->tp = 1;
    o->reps = 5;
}

/* ------------------------------------------------------------ CPU backend */

static double calib_run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int calib_run_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double calib_run_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, calib_run_dcmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CPU_REPS_MAX 64

/* One CPU workload: run() once per timed launch. */
typedef struct CpuWork {
    int kind;
    int m, n, k;                 /* gemm */
    float *a, *b, *c, *d, *o;    /* buffers */
    int *cs, *hs, *bt, nseq, qh, kvh, hd, max_blocks;
    size_t len;
} CpuWork;

static volatile float calib_run_sink;

static void calib_run_cpu_run(CpuWork *w)
{
    switch (w->kind) {
    case 0: calib_kern_gemm(w->m, w->n, w->k, w->a, w->b, w->c); break;
    case 1: calib_kern_attn_tiled(w->a, w->b, w->c, w->o, w->cs, w->hs, w->nseq, w->qh, w->kvh, w->hd, 64, 64); break;
    case 2:
        calib_kern_attn_paged(w->a, w->b, w->c, w->bt, w->max_blocks, w->hs, w->nseq, w->qh, w->kvh, w->hd, w->o);
        break;
    case 3: calib_run_sink = calib_kern_read(w->a, w->len); break;
    case 4: calib_kern_copy(w->b, w->a, w->len); break;
    default: break;
    }
}

static double calib_run_cpu_time(CpuWork *w, int reps)
{
    double t[CPU_REPS_MAX];
    if (reps > CPU_REPS_MAX) reps = CPU_REPS_MAX;
    if (reps < 1) reps = 1;
    calib_run_cpu_run(w); /* warm-up: page faults, caches */
    for (int i = 0; i < reps; i++) {
        double t0 = calib_run_now();
        calib_run_cpu_run(w);
        t[i] = (calib_run_now() - t0) * 1e3;
    }
    return calib_run_median(t, reps);
}

static float *calib_run_cpu_buf(size_t n, unsigned long long seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (x) calib_kern_fill(x, n, seed);
    return x;
}

static int calib_run_cpu_oom(char *err, int errn, double bytes)
{
    snprintf(err, (size_t)errn, "cpu backend: cannot allocate %.3g MB of buffers", bytes / 1e6);
    return -1;
}

static int calib_run_cpu_gemm(void *ctx, int dtype, int m, int n, int k, int reps, double *ms, char *err, int errn)
{
    (void)ctx;
    if (dtype != CALIB_ABI_FP32) {
        snprintf(err, (size_t)errn, "cpu backend: GEMM dtype %d unsupported (fp32 only)", dtype);
        return CALIB_ABI_UNSUPPORTED;
    }
    CpuWork w = {.kind = 0, .m = m, .n = n, .k = k};
    w.a = calib_run_cpu_buf((size_t)m * k, 1);
    w.b = calib_run_cpu_buf((size_t)n * k, 2);
    w.c = malloc((size_t)m * n * sizeof *w.c);
    int rc = 0;
    if (!w.a || !w.b || !w.c) rc = calib_run_cpu_oom(err, errn, 4.0 * ((double)m * k + (double)n * k + (double)m * n));
    else *ms = calib_run_cpu_time(&w, reps);
    free(w.a);
    free(w.b);
    free(w.c);
    return rc;
}

static int calib_run_cpu_attn(int decode, int batch, int chunk, int cached, int qh, int kvh, int hd, int reps,
                              double *ms, char *err, int errn)
{
    CpuWork w = {.kind = decode ? 2 : 1, .nseq = batch, .qh = qh, .kvh = kvh, .hd = hd};
    size_t len = (size_t)cached + (size_t)chunk;
    w.cs = malloc((size_t)batch * sizeof *w.cs);
    w.hs = malloc((size_t)batch * sizeof *w.hs);
    int rc = 0;
    if (!w.cs || !w.hs) {
        rc = calib_run_cpu_oom(err, errn, 8.0 * batch);
        goto out;
    }
    if (!decode) {
        for (int i = 0; i < batch; i++) {
            w.cs[i] = chunk;
            w.hs[i] = cached;
        }
        w.a = calib_run_cpu_buf((size_t)batch * chunk * qh * hd, 3);
        w.b = calib_run_cpu_buf((size_t)batch * len * kvh * hd, 4);
        w.c = calib_run_cpu_buf((size_t)batch * len * kvh * hd, 5);
        w.o = malloc((size_t)batch * chunk * qh * hd * sizeof *w.o);
    } else {
        /* Paged: blocks of 16 tokens, each sequence's blocks interleaved
         * with the others' so the reads are not one contiguous stream. */
        w.max_blocks = (int)((len + CALIB_KERN_BLOCK - 1) / CALIB_KERN_BLOCK);
        size_t blocks = (size_t)batch * w.max_blocks;
        w.bt = malloc(blocks * sizeof *w.bt);
        for (int i = 0; w.bt && i < batch; i++) {
            w.hs[i] = (int)len; /* keys read, the new token's included */
            for (int b = 0; b < w.max_blocks; b++) w.bt[(size_t)i * w.max_blocks + b] = b * batch + i;
        }
        w.a = calib_run_cpu_buf((size_t)batch * qh * hd, 6);
        w.b = calib_run_cpu_buf(blocks * CALIB_KERN_BLOCK * kvh * hd, 7);
        w.c = calib_run_cpu_buf(blocks * CALIB_KERN_BLOCK * kvh * hd, 8);
        w.o = malloc((size_t)batch * qh * hd * sizeof *w.o);
    }
    if ((decode && !w.bt) || !w.a || !w.b || !w.c || !w.o)
        rc = calib_run_cpu_oom(err, errn, 8.0 * batch * (double)len * kvh * hd);
    else *ms = calib_run_cpu_time(&w, reps);
out:
    free(w.a);
    free(w.b);
    free(w.c);
    free(w.o);
    free(w.cs);
    free(w.hs);
    free(w.bt);
    return rc;
}

static int calib_run_cpu_prefill(void *ctx, int batch, int chunk, int cached, int qh, int kvh, int hd, int reps,
                                 double *ms, char *err, int errn)
{
    (void)ctx;
    return calib_run_cpu_attn(0, batch, chunk, cached, qh, kvh, hd, reps, ms, err, errn);
}

static int calib_run_cpu_decode(void *ctx, int batch, int cached, int qh, int kvh, int hd, int reps, double *ms,
                                char *err, int errn)
{
    (void)ctx;
    return calib_run_cpu_attn(1, batch, 1, cached, qh, kvh, hd, reps, ms, err, errn);
}

static int calib_run_cpu_mem(void *ctx, int copy, double bytes, int reps, double *ms, char *err, int errn)
{
    (void)ctx;
    CpuWork w = {.kind = copy ? 4 : 3};
    w.len = (size_t)(bytes / (copy ? 8 : 4));
    w.a = calib_run_cpu_buf(w.len, 9);
    w.b = copy ? malloc((w.len ? w.len : 1) * sizeof *w.b) : NULL;
    int rc = 0;
    if (!w.a || (copy && !w.b)) rc = calib_run_cpu_oom(err, errn, bytes);
    else *ms = calib_run_cpu_time(&w, reps);
    free(w.a);
    free(w.b);
    return rc;
}

static void calib_run_cpu_empty(void) {}

static int calib_run_cpu_launch(void *ctx, int reps, double *ms, char *err, int errn)
{
    (void)ctx;
    (void)err;
    (void)errn;
    /* The CPU's "launch" is a call through a pointer: time a batch of
     * them, since one is below the clock's resolution. */
    void (*volatile fn)(void) = calib_run_cpu_empty;
    double t[CPU_REPS_MAX];
    if (reps > CPU_REPS_MAX) reps = CPU_REPS_MAX;
    if (reps < 1) reps = 1;
    for (int i = 0; i < reps; i++) {
        double t0 = calib_run_now();
        for (int j = 0; j < 10000; j++) fn();
        t[i] = (calib_run_now() - t0) * 1e3 / 10000;
    }
    *ms = calib_run_median(t, reps);
    if (!(*ms > 0)) *ms = 1e-9; /* a clock too coarse to see it: 1 ps */
    return 0;
}

static int calib_run_cpu_check(void *ctx, char *log, int logn)
{
    (void)ctx;
    snprintf(log, (size_t)logn, "cpu backend: its kernels are the references themselves (tests/test_calib.c checks "
                                "tiled and paged attention against naive attention)\n");
    return 0;
}

static void calib_run_cpu_destroy(void *ctx)
{
    (void)ctx;
}

void calib_run_cpu_backend(ServesimKernels *k)
{
    memset(k, 0, sizeof *k);
    k->abi = SERVESIM_KERNELS_ABI;
    snprintf(k->name, sizeof k->name, "cpu");
    snprintf(k->device, sizeof k->device, "CPU (C kernels, CBLAS SGEMM)");
    k->gemm_dtypes[0] = CALIB_ABI_FP32;
    k->gemm_dtypes[1] = -1;
    k->attn_dtype = CALIB_ABI_FP32;
    k->gemm = calib_run_cpu_gemm;
    k->attn_prefill = calib_run_cpu_prefill;
    k->attn_decode = calib_run_cpu_decode;
    k->mem = calib_run_cpu_mem;
    k->launch = calib_run_cpu_launch;
    k->check = calib_run_cpu_check;
    k->destroy = calib_run_cpu_destroy;
}

/* ------------------------------------------------------------ GPU library */

int calib_run_load_backend(const char *path, ServesimKernels *k, void **handle, Err *e)
{
    char def[4096];
    if (!path) {
        snprintf(def, sizeof def, "%s/../kernels/build/libservesim_kernels.so", paths_models_dir());
        path = def;
    }
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        const char *why = dlerror();
        return err_set(e, "%s: cannot load the kernel library (%s); build it with 'make kernels' on a machine with "
                          "nvcc", path, why ? why : "unknown error");
    }
    void *sym = dlsym(*handle, SERVESIM_KERNELS_SYMBOL);
    if (!sym) {
        dlclose(*handle);
        *handle = NULL;
        return err_set(e, "%s: no symbol %s: not a servesim kernel library", path, SERVESIM_KERNELS_SYMBOL);
    }
    ServesimKernelsInit init;
    memcpy(&init, &sym, sizeof init); /* object to function pointer, as POSIX allows */
    char msg[512] = "";
    memset(k, 0, sizeof *k);
    if (init(k, msg, (int)sizeof msg) != 0) {
        dlclose(*handle);
        *handle = NULL;
        return err_set(e, "%s: %s", path, msg[0] ? msg : "backend initialisation failed");
    }
    if (k->abi != SERVESIM_KERNELS_ABI) {
        if (k->destroy) k->destroy(k->ctx);
        dlclose(*handle);
        *handle = NULL;
        return err_set(e, "%s: kernel ABI %d, expected %d: rebuild with 'make kernels'", path, k->abi,
                       SERVESIM_KERNELS_ABI);
    }
    return 0;
}

void calib_run_unload(ServesimKernels *k, void *handle)
{
    if (k->destroy) k->destroy(k->ctx);
    k->destroy = NULL;
    if (handle) dlclose(handle);
}

/* ----------------------------------------------------------------- driver */

static const int calib_run_m_small[] = {1, 2, 4, 8, 16, 32, 48, 64, 0};
static const int calib_run_m_full[] = {1,   2,   4,    8,    16,   24,   32,   48,   64,    96,    128,   192, 256,
                                       384, 512, 768,  1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 0};

typedef struct RunGemm {
    const char *what;
    int n, k;
} RunGemm;

static int calib_run_gemms(const ModelDesc *m, int tp, RunGemm *g)
{
    int qh = m->q_heads / tp, kvh = m->kv_heads >= tp ? m->kv_heads / tp : 1, hd = m->head_dim, h = m->hidden;
    int up = m->gated_mlp ? 2 : 1, n = 0;
    if (qh < 1) qh = 1;
    g[n++] = (RunGemm){"qkv", (qh + 2 * kvh) * hd, h};
    g[n++] = (RunGemm){"o", h, qh * hd};
    if (m->experts > 0) {
        g[n++] = (RunGemm){"router", m->experts, h};
        g[n++] = (RunGemm){"expert_gate_up", up * m->expert_ffn / tp, h};
        g[n++] = (RunGemm){"expert_down", h, m->expert_ffn / tp};
    } else {
        g[n++] = (RunGemm){"gate_up", up * m->ffn / tp, h};
        g[n++] = (RunGemm){"down", h, m->ffn / tp};
    }
    g[n++] = (RunGemm){"lm_head", m->vocab / tp, h};
    return n;
}

static int calib_run_row(MeasSet *out, const Meas *r, const char *backend, const char *what, FILE *log, Err *e)
{
    Meas x = *r;
    snprintf(x.tag, sizeof x.tag, "%s:%s", backend, what);
    if (calib_meas_add(out, &x, e) < 0) return err_prefix(e, "%s %s", backend, what);
    if (log) {
        char shape[160];
        fprintf(log, "  %-16s %12.4f ms  %s\n", what, x.latency_ms, calib_meas_shape_str(&x, shape, sizeof shape));
        fflush(log);
    }
    return 0;
}

static int calib_run_fail(Err *e, const char *backend, const char *what, const char *msg)
{
    return err_set(e, "%s backend, %s: %s", backend, what, msg[0] ? msg : "kernel failed");
}

int calib_run(const ModelDesc *m, ServesimKernels *k, const CalibRunOpts *o, MeasSet *out, Err *e)
{
    const int full = o->grid == CALIB_GRID_FULL, tp = o->tp > 0 ? o->tp : 1;
    const int *ms_list = full ? calib_run_m_full : calib_run_m_small;
    const double max_m = o->max_m > 0 ? o->max_m : 1e9;
    RunGemm g[8];
    int ng = calib_run_gemms(m, tp, g);
    char msg[512];
    const char *be = k->name;
    if (o->log)
        fprintf(o->log, "calib run: %s on %s, tp %d, %s grid\n", m->name, k->device, tp, full ? "full" : "small");
    /* GEMMs: every per-GPU projection at every row count. */
    for (int d = 0; d < 4 && k->gemm_dtypes[d] >= 0; d++) {
        int dt = k->gemm_dtypes[d];
        for (int i = 0; i < ng; i++) {
            if (g[i].n < 1 || g[i].k < 1) continue;
            for (const int *mp = ms_list; *mp; mp++) {
                if (*mp > max_m) break;
                Meas r = {.op = MEAS_GEMM, .dtype = dt, .kv_dtype = dt, .m = *mp, .n = g[i].n, .k = g[i].k};
                msg[0] = '\0';
                int st = k->gemm(k->ctx, dt, *mp, g[i].n, g[i].k, o->reps, &r.latency_ms, msg, (int)sizeof msg);
                if (st == CALIB_ABI_UNSUPPORTED) {
                    if (o->log) fprintf(o->log, "  %-16s skipped: %s\n", g[i].what, msg);
                    continue;
                }
                if (st != 0) return calib_run_fail(e, be, g[i].what, msg);
                if (calib_run_row(out, &r, be, g[i].what, o->log, e) < 0) return -1;
            }
        }
    }
    const int qh = m->q_heads / tp > 0 ? m->q_heads / tp : 1, kvh = m->kv_heads >= tp ? m->kv_heads / tp : 1;
    const int hd = m->head_dim, adt = k->attn_dtype;
    const double kv_tok = 2.0 * kvh * hd * calib_meas_elem_bytes(adt);
    /* Prefill: chunks over empty and filled caches; at most 64 Ki tokens
     * of context per launch (16 Ki on the small grid). */
    static const int pb_s[] = {1, 2, 0}, pc_s[] = {16, 64, 128, 0}, ph_s[] = {0, 128, -1};
    static const int pb_f[] = {1, 4, 16, 0}, pc_f[] = {16, 128, 512, 2048, 8192, 0}, ph_f[] = {0, 2048, 8192, -1};
    const double ptok = full ? 65536 : 1024;
    for (const int *b = full ? pb_f : pb_s; *b; b++)
        for (const int *c = full ? pc_f : pc_s; *c; c++)
            for (const int *h = full ? ph_f : ph_s; *h >= 0; h++) {
                if ((double)*b * (*c + *h) > ptok) continue;
                Meas r = {.op = MEAS_ATTN_PREFILL, .dtype = adt, .kv_dtype = adt, .batch = *b, .chunk = *c,
                          .ctx = *h, .q_heads = qh, .kv_heads = kvh, .head_dim = hd};
                msg[0] = '\0';
                if (k->attn_prefill(k->ctx, *b, *c, *h, qh, kvh, hd, o->reps, &r.latency_ms, msg, (int)sizeof msg))
                    return calib_run_fail(e, be, "prefill attention", msg);
                if (calib_run_row(out, &r, be, "attn_prefill", o->log, e) < 0) return -1;
            }
    /* Decode: batches x contexts, at most 8 GiB of KV (32 MiB small). */
    static const int db_s[] = {1, 4, 16, 0}, dh_s[] = {15, 127, 511, 0};
    static const int db_f[] = {1, 8, 32, 128, 512, 0}, dh_f[] = {127, 1023, 4095, 16383, 65535, 0};
    const double kv_max = full ? 8.0 * 1024 * 1024 * 1024 : 32.0 * 1024 * 1024;
    for (const int *b = full ? db_f : db_s; *b; b++)
        for (const int *h = full ? dh_f : dh_s; *h; h++) {
            if ((double)*b * (*h + 1) * kv_tok > kv_max) continue;
            Meas r = {.op = MEAS_ATTN_DECODE, .dtype = adt, .kv_dtype = adt, .batch = *b, .chunk = 1, .ctx = *h,
                      .q_heads = qh, .kv_heads = kvh, .head_dim = hd};
            msg[0] = '\0';
            if (k->attn_decode(k->ctx, *b, *h, qh, kvh, hd, o->reps, &r.latency_ms, msg, (int)sizeof msg))
                return calib_run_fail(e, be, "decode attention", msg);
            if (calib_run_row(out, &r, be, "attn_decode", o->log, e) < 0) return -1;
        }
    /* Memory streams and the empty launch. */
    const double mib = 1024.0 * 1024.0;
    for (double sz = full ? mib : 256 * 1024.0; sz <= (full ? 1024 * mib : 64 * mib); sz *= 4)
        for (int copy = 0; copy < 2; copy++) {
            Meas r = {.op = copy ? MEAS_MEM_COPY : MEAS_MEM_READ, .dtype = DTYPE_FP32, .kv_dtype = DTYPE_FP32,
                      .size_bytes = sz};
            msg[0] = '\0';
            if (k->mem(k->ctx, copy, sz, o->reps, &r.latency_ms, msg, (int)sizeof msg))
                return calib_run_fail(e, be, copy ? "memory copy" : "memory read", msg);
            if (calib_run_row(out, &r, be, copy ? "mem_copy" : "mem_read", o->log, e) < 0) return -1;
        }
    Meas r = {.op = MEAS_LAUNCH, .dtype = DTYPE_FP32, .kv_dtype = DTYPE_FP32};
    msg[0] = '\0';
    if (k->launch(k->ctx, o->reps * 4, &r.latency_ms, msg, (int)sizeof msg))
        return calib_run_fail(e, be, "launch probe", msg);
    if (calib_run_row(out, &r, be, "launch", o->log, e) < 0) return -1;
    return 0;
}
