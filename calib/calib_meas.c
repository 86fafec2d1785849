/*
 * calib_meas.c -- the measurement schema (see calib_meas.h): counts, CSV
 * writing and reading, and importers of published kernel tables.
 *
 * Owns: turning a shape into FLOPs and bytes through profile.c's shape
 * functions (so that a measured row and a simulated launch are counted the
 * same way), and every CSV this project reads for calibration.
 *
 * Invariants: every row in a MeasSet has passed calib_meas_counts (positive
 * shape fields where its op needs them, latency > 0 and finite).  Importers
 * skip, and count in MeasSet.skipped, rows that describe something the
 * profile does not model (INT8/INT4 weight-only and SmoothQuant GEMMs,
 * sliding windows, beam search, other collectives, eagerly launched custom
 * all-reduces); they refuse malformed rows with the file, line and column.
 * Columns are found by name, so the per-engine tables' orders (a leading
 * kernel_source, window_size before or after step) read alike.
 *
 * Units: latency in ms (as every source table), sizes in bytes.
 */
#include "calib_meas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static const char *const calib_meas_op_names[MEAS_OP_COUNT + 1] = {
    "gemm", "attn_prefill", "attn_decode", "allreduce", "mem_read", "mem_copy", "launch", "moe", "alltoall", "mla_prefill", "mla_decode", NULL,
};

const char *calib_meas_op_name(int op)
{
    return op >= 0 && op < MEAS_OP_COUNT ? calib_meas_op_names[op] : "?";
}

const char *calib_meas_shape_str(const Meas *r, char *buf, size_t n)
{
    switch (r->op) {
    case MEAS_GEMM: snprintf(buf, n, "%s m=%.0f n=%.0f k=%.0f", dtype_name((Dtype)r->dtype), r->m, r->n, r->k); break;
    case MEAS_ATTN_PREFILL:
    case MEAS_ATTN_DECODE:
    case MEAS_MLA_PREFILL:
    case MEAS_MLA_DECODE:
        snprintf(buf, n, "b=%.0f c=%.0f h=%.0f heads %.0f/%.0f", r->batch, r->chunk, r->ctx, r->q_heads, r->kv_heads);
        break;
    case MEAS_ALLREDUCE:
    case MEAS_ALLTOALL: snprintf(buf, n, "%.0f GPUs, %.0f B", r->batch, r->size_bytes); break;
    case MEAS_MOE:
        snprintf(buf, n, "%s moe tokens=%.0f inter=%.0f hidden=%.0f experts %.0f/%.0f top-%.0f",
                 dtype_name((Dtype)r->dtype), r->m, r->n, r->k, r->batch, r->ctx, r->chunk);
        break;
    case MEAS_MEM_READ:
    case MEAS_MEM_COPY: snprintf(buf, n, "%.0f B", r->size_bytes); break;
    default: snprintf(buf, n, "empty kernel"); break;
    }
    return buf;
}

void calib_meas_init(MeasSet *s)
{
    memset(s, 0, sizeof *s);
}

void calib_meas_free(MeasSet *s)
{
    free(s->rows);
    memset(s, 0, sizeof *s);
}

double calib_meas_elem_bytes(int dtype)
{
    switch (dtype) {
    case DTYPE_FP32: return 4;
    case DTYPE_FP8: return 1;
    case DTYPE_FP8_BLOCK:
    case DTYPE_NVFP4: return dtype_act_bytes((Dtype)dtype);
    default: return 2;
    }
}

/* A KV cache of one byte per element (FP8) runs other attention kernels
 * (calib/README.md), so its rows calibrate their own classes. */
static int calib_meas_fp8_kv(const Meas *r)
{
    return calib_meas_elem_bytes(r->kv_dtype) == 1;
}

int calib_meas_prof_op(const Meas *r)
{
    switch (r->op) {
    /* fp32 is the CPU backend's GEMM: it stands in for the 16-bit slot,
     * since a CPU has no BF16 tensor cores (calib/README.md). */
    case MEAS_GEMM: return profile_gemm_op((Dtype)r->dtype);
    case MEAS_ATTN_PREFILL: return calib_meas_fp8_kv(r) ? PROF_ATTN_PREFILL_FP8KV : PROF_ATTN_PREFILL;
    case MEAS_ATTN_DECODE: return calib_meas_fp8_kv(r) ? PROF_ATTN_DECODE_FP8KV : PROF_ATTN_DECODE;
    case MEAS_ALLREDUCE: return PROF_ALLREDUCE;
    case MEAS_MEM_READ: return PROF_MEM_READ;
    case MEAS_MEM_COPY: return PROF_MEM_COPY;
    case MEAS_LAUNCH: return PROF_LAUNCH;
    case MEAS_MOE: return profile_moe_op((Dtype)r->dtype);
    case MEAS_MLA_PREFILL: return calib_meas_fp8_kv(r) ? PROF_MLA_PREFILL_FP8KV : PROF_MLA_PREFILL;
    case MEAS_MLA_DECODE: return calib_meas_fp8_kv(r) ? PROF_MLA_DECODE_FP8KV : PROF_MLA_DECODE;
    case MEAS_ALLTOALL: return PROF_ALLTOALL;
    default: return -1;
    }
}

static int calib_meas_pos(double v, const char *what, Err *e)
{
    if (!(v >= 1) || !isfinite(v) || v != floor(v) || v > 1e12)
        return err_set(e, "%s: got %.12g, expected a whole number >= 1", what, v);
    return 0;
}

void calib_meas_features(const Meas *r, double *feat, double *flops, double *bytes)
{
    switch (r->op) {
    case MEAS_GEMM: {
        /* The class's bytes (profile_gemm_bytes: what the roofline counts);
         * the CPU's FP32 GEMM reads and writes 4 B per element. */
        double in = 4, w = 4, out = 4;
        if (r->dtype != DTYPE_FP32) profile_gemm_bytes(profile_gemm_op((Dtype)r->dtype), &in, &w, &out);
        profile_gemm_shape(r->m, r->n, r->k, in, w, out, feat, flops, bytes);
        return;
    }
    case MEAS_ATTN_PREFILL:
    case MEAS_ATTN_DECODE:
        profile_attn_shape(r->batch, r->chunk, r->ctx, r->q_heads, r->kv_heads, r->head_dim,
                           calib_meas_elem_bytes(r->dtype), calib_meas_elem_bytes(r->kv_dtype), feat, flops, bytes);
        return;
    case MEAS_ALLREDUCE: profile_comm_shape(r->size_bytes, r->batch, feat, flops, bytes); return;
    case MEAS_ALLTOALL: profile_a2a_shape(r->size_bytes, r->batch, feat, flops, bytes); return;
    case MEAS_MLA_PREFILL:
    case MEAS_MLA_DECODE: {
        double qh, kvh, hd, kvb;
        profile_mla_dims(r->op == MEAS_MLA_DECODE, r->q_heads, MEAS_MLA_KV_LORA, MEAS_MLA_ROPE, MEAS_MLA_NOPE,
                         calib_meas_elem_bytes(r->kv_dtype), &qh, &kvh, &hd, &kvb);
        profile_attn_shape(r->batch, r->chunk, r->ctx, qh, kvh, hd, calib_meas_elem_bytes(r->dtype), kvb, feat,
                           flops, bytes);
        return;
    }
    case MEAS_MOE: {
        double in, w;
        profile_moe_bytes((Dtype)r->dtype, &in, &w);
        profile_moe_shape(r->m, r->ctx, r->chunk, r->batch, r->n, r->k, in, w, feat, flops, bytes);
        return;
    }
    case MEAS_MEM_READ:
    case MEAS_MEM_COPY: profile_mem_shape(r->size_bytes, feat, flops, bytes); return;
    default: profile_mem_shape(0, feat, flops, bytes); return;
    }
}

int calib_meas_counts(Meas *r, Err *e)
{
    if (!(r->latency_ms > 0) || !isfinite(r->latency_ms))
        return err_set(e, "latency_ms: got %.12g, expected a time > 0", r->latency_ms);
    int block = r->dtype == DTYPE_FP8_BLOCK || r->dtype == DTYPE_NVFP4;
    if (r->dtype != DTYPE_BF16 && r->dtype != DTYPE_FP16 && r->dtype != DTYPE_FP8 && r->dtype != DTYPE_FP32 &&
        !(block && (r->op == MEAS_GEMM || r->op == MEAS_MOE)) && !(r->dtype == DTYPE_MXFP4 && r->op == MEAS_MOE))
        return err_set(e, "dtype: got \"%s\", expected bf16, fp16, fp8 or fp32 (fp8_block and nvfp4: GEMMs and moe only; mxfp4: moe)",
                       dtype_name((Dtype)r->dtype));
    switch (r->op) {
    case MEAS_GEMM:
        if (calib_meas_pos(r->m, "m", e) || calib_meas_pos(r->n, "n", e) || calib_meas_pos(r->k, "k", e)) return -1;
        break;
    case MEAS_ATTN_PREFILL:
    case MEAS_ATTN_DECODE:
        if (calib_meas_pos(r->batch, "batch", e) || calib_meas_pos(r->chunk, "chunk", e) ||
            calib_meas_pos(r->q_heads, "q_heads", e) || calib_meas_pos(r->kv_heads, "kv_heads", e) ||
            calib_meas_pos(r->head_dim, "head_dim", e))
            return -1;
        if (!(r->ctx >= 0) || r->ctx != floor(r->ctx) || r->ctx > 1e9)
            return err_set(e, "ctx: got %.12g, expected a whole number >= 0", r->ctx);
        if (fmod(r->q_heads, r->kv_heads) != 0)
            return err_set(e, "kv_heads: got %.12g, expected a divisor of q_heads %.12g", r->kv_heads, r->q_heads);
        if (r->kv_dtype != DTYPE_BF16 && r->kv_dtype != DTYPE_FP16 && r->kv_dtype != DTYPE_FP8 &&
            r->kv_dtype != DTYPE_FP32)
            return err_set(e, "kv_dtype: got \"%s\", expected bf16, fp16, fp8 or fp32",
                           dtype_name((Dtype)r->kv_dtype));
        if (r->op == MEAS_ATTN_DECODE && r->chunk != 1)
            return err_set(e, "chunk: got %.12g, expected 1 for attn_decode (one new token per sequence)",
                           r->chunk);
        break;
    case MEAS_ALLREDUCE:
        if (calib_meas_pos(r->batch, "batch (GPUs)", e) || calib_meas_pos(r->size_bytes, "size_bytes", e))
            return -1;
        if (r->batch < 2) return err_set(e, "batch (GPUs): got %.12g, expected >= 2 for an all-reduce", r->batch);
        break;
    case MEAS_MEM_READ:
    case MEAS_MEM_COPY:
        if (calib_meas_pos(r->size_bytes, "size_bytes", e)) return -1;
        break;
    case MEAS_MLA_PREFILL:
    case MEAS_MLA_DECODE:
        if (calib_meas_pos(r->batch, "batch", e) || calib_meas_pos(r->chunk, "chunk", e) ||
            calib_meas_pos(r->q_heads, "q_heads", e))
            return -1;
        if (!(r->ctx >= 0) || r->ctx != floor(r->ctx) || r->ctx > 1e9)
            return err_set(e, "ctx: got %.12g, expected a whole number >= 0", r->ctx);
        if (r->kv_dtype != DTYPE_BF16 && r->kv_dtype != DTYPE_FP16 && r->kv_dtype != DTYPE_FP8)
            return err_set(e, "kv_dtype: got \"%s\", expected bf16, fp16 or fp8", dtype_name((Dtype)r->kv_dtype));
        if (r->op == MEAS_MLA_DECODE && r->chunk != 1)
            return err_set(e, "chunk: got %.12g, expected 1 for mla_decode", r->chunk);
        break;
    case MEAS_ALLTOALL:
        if (calib_meas_pos(r->batch, "batch (GPUs)", e) || calib_meas_pos(r->size_bytes, "size_bytes", e))
            return -1;
        if (r->batch < 2) return err_set(e, "batch (GPUs): got %.12g, expected >= 2 for an all-to-all", r->batch);
        break;
    case MEAS_MOE:
        if (calib_meas_pos(r->m, "m (tokens)", e) || calib_meas_pos(r->n, "n (expert FFN per GPU)", e) ||
            calib_meas_pos(r->k, "k (hidden)", e) || calib_meas_pos(r->batch, "batch (local experts)", e) ||
            calib_meas_pos(r->chunk, "chunk (top-k)", e) || calib_meas_pos(r->ctx, "ctx (experts)", e))
            return -1;
        if (r->batch > r->ctx || r->chunk > r->ctx)
            return err_set(e, "moe: local experts %.12g and top-k %.12g must not exceed the experts %.12g", r->batch,
                           r->chunk, r->ctx);
        if (r->dtype == DTYPE_NVFP4) return err_set(e, "dtype: nvfp4 has no fused-MoE class (bf16, fp8, fp8_block)");
        break;
    case MEAS_LAUNCH: break;
    default: return err_set(e, "op: unknown operator %d", r->op);
    }
    double feat[PF_COUNT];
    calib_meas_features(r, feat, &r->flops, &r->bytes);
    return 0;
}

int calib_meas_add(MeasSet *s, const Meas *r, Err *e)
{
    Meas x = *r;
    if (calib_meas_counts(&x, e) < 0) return -1;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->rows = xrealloc(s->rows, s->cap * sizeof *s->rows);
    }
    s->rows[s->n++] = x;
    return 0;
}

static void calib_meas_note(MeasSet *s, const char *fmt, const char *a)
{
    size_t len = strlen(s->sources);
    if (len + 4 >= sizeof s->sources) return;
    snprintf(s->sources + len, sizeof s->sources - len, "%s", len ? "; " : "");
    len = strlen(s->sources);
    snprintf(s->sources + len, sizeof s->sources - len, fmt, a);
}

/* ------------------------------------------------------------------ CSV */

static const char *const calib_meas_cols[] = {
    "op", "dtype", "kv_dtype", "m", "n", "k", "batch", "chunk", "ctx", "q_heads", "kv_heads", "head_dim",
    "size_bytes", "flops", "bytes", "latency_ms", "tag", NULL,
};

int calib_meas_write_csv(const MeasSet *s, FILE *f)
{
    for (int i = 0; calib_meas_cols[i]; i++) fprintf(f, "%s%s", i ? "," : "", calib_meas_cols[i]);
    fputc('\n', f);
    for (size_t i = 0; i < s->n; i++) {
        const Meas *r = &s->rows[i];
        fprintf(f, "%s,%s,%s,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.17g,%.17g,%.9g,%s\n",
                calib_meas_op_name(r->op), dtype_name((Dtype)r->dtype), dtype_name((Dtype)r->kv_dtype), r->m, r->n,
                r->k, r->batch, r->chunk, r->ctx, r->q_heads, r->kv_heads, r->head_dim, r->size_bytes, r->flops,
                r->bytes, r->latency_ms, r->tag);
    }
    return ferror(f) ? -1 : 0;
}

int calib_meas_write_file(const MeasSet *s, const char *path, Err *e)
{
    FILE *f = fopen(path, "w");
    if (!f) return err_set(e, "%s: cannot open for writing", path);
    int r = calib_meas_write_csv(s, f);
    if (fclose(f) != 0 || r < 0) return err_set(e, "%s: write failed", path);
    return 0;
}

/* A CSV file split in place: fields of the current line. */
#define CSV_MAX_COLS 128
typedef struct Csv {
    const char *path;
    char *text, *next;
    int line;
    int ncols;
    char *head[CSV_MAX_COLS];
    int nf;
    char *f[CSV_MAX_COLS];
} Csv;

static int calib_meas_csv_split(char *line, char **out, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) return max + 1;
        out[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

/* Next non-empty line into c->f; 0 at the end. */
static int calib_meas_csv_next(Csv *c)
{
    while (c->next && *c->next) {
        char *line = c->next;
        char *nl = strchr(line, '\n');
        if (nl) {
            *nl = '\0';
            c->next = nl + 1;
        } else {
            c->next = NULL;
        }
        c->line++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        if (!len) continue;
        c->nf = calib_meas_csv_split(line, c->f, CSV_MAX_COLS);
        return 1;
    }
    return 0;
}

static int calib_meas_csv_open(Csv *c, const char *path, Err *e)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->text = read_file(path, NULL, e);
    if (!c->text) return -1;
    c->next = c->text;
    if (!calib_meas_csv_next(c)) {
        free(c->text);
        return err_set(e, "%s: empty file, expected a CSV header line", path);
    }
    if (c->nf > CSV_MAX_COLS) {
        free(c->text);
        return err_set(e, "%s: line 1: more than %d columns", path, CSV_MAX_COLS);
    }
    c->ncols = c->nf;
    memcpy(c->head, c->f, sizeof c->head);
    return 0;
}

static int calib_meas_csv_col(const Csv *c, const char *name)
{
    for (int i = 0; i < c->ncols; i++)
        if (!strcmp(c->head[i], name)) return i;
    return -1;
}

static int calib_meas_csv_need(const Csv *c, const char *name, Err *e)
{
    int i = calib_meas_csv_col(c, name);
    if (i < 0) err_set(e, "%s: header: missing column \"%s\"", c->path, name);
    return i;
}

static int calib_meas_csv_row_ok(const Csv *c, Err *e)
{
    if (c->nf != c->ncols)
        return err_set(e, "%s: line %d: got %d fields, expected %d (as in the header)", c->path, c->line, c->nf,
                       c->ncols);
    return 0;
}

static int calib_meas_csv_num(const Csv *c, int col, double *out, Err *e)
{
    const char *s = c->f[col];
    double v = 0;
    if (common_parse_decimal(s, &v) < 0)
        return err_set(e, "%s: line %d: column \"%s\": got \"%s\", expected a number", c->path, c->line,
                       c->head[col], s);
    *out = v;
    return 0;
}

/* Wraps a row error with the file and line. */
static int calib_meas_csv_add(MeasSet *s, const Csv *c, const Meas *r, Err *e)
{
    if (calib_meas_add(s, r, e) < 0) return err_prefix(e, "%s: line %d", c->path, c->line);
    return 0;
}

/* AIC and Vidur spell dtypes their own way. */
static int calib_meas_dtype_word(const char *w)
{
    if (!strcmp(w, "bfloat16") || !strcmp(w, "bf16")) return DTYPE_BF16;
    if (!strcmp(w, "float16") || !strcmp(w, "fp16") || !strcmp(w, "half")) return DTYPE_FP16;
    if (!strcmp(w, "fp8") || !strcmp(w, "float8_e4m3fn")) return DTYPE_FP8;
    if (!strcmp(w, "float32") || !strcmp(w, "fp32")) return DTYPE_FP32;
    if (!strcmp(w, "fp8_block")) return DTYPE_FP8_BLOCK;
    if (!strcmp(w, "nvfp4")) return DTYPE_NVFP4;
    return -1;
}

static int calib_meas_read_own(MeasSet *s, Csv *c, Err *e)
{
    int idx[17];
    for (int i = 0; calib_meas_cols[i]; i++)
        if ((idx[i] = calib_meas_csv_need(c, calib_meas_cols[i], e)) < 0) return -1;
    size_t n0 = s->n;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        Meas r = {0};
        const char *op = c->f[idx[0]];
        r.op = -1;
        for (int i = 0; i < MEAS_OP_COUNT; i++)
            if (!strcmp(op, calib_meas_op_names[i])) r.op = i;
        if (r.op < 0)
            return err_set(e, "%s: line %d: column \"op\": got \"%s\", expected gemm, attn_prefill, attn_decode, "
                              "allreduce, mem_read, mem_copy, launch, moe, alltoall, mla_prefill or mla_decode",
                           c->path, c->line, op);
        r.dtype = dtype_parse(c->f[idx[1]]);
        r.kv_dtype = dtype_parse(c->f[idx[2]]);
        if (r.dtype < 0 || r.kv_dtype < 0)
            return err_set(e, "%s: line %d: column \"%s\": got \"%s\", expected bf16, fp16, fp8 or fp32", c->path,
                           c->line, r.dtype < 0 ? "dtype" : "kv_dtype", c->f[idx[r.dtype < 0 ? 1 : 2]]);
        double *dst[] = {&r.m, &r.n, &r.k, &r.batch, &r.chunk, &r.ctx, &r.q_heads, &r.kv_heads, &r.head_dim,
                         &r.size_bytes};
        for (int i = 0; i < 10; i++)
            if (calib_meas_csv_num(c, idx[3 + i], dst[i], e) < 0) return -1;
        double flops, bytes;
        if (calib_meas_csv_num(c, idx[13], &flops, e) < 0 || calib_meas_csv_num(c, idx[14], &bytes, e) < 0 ||
            calib_meas_csv_num(c, idx[15], &r.latency_ms, e) < 0)
            return -1;
        snprintf(r.tag, sizeof r.tag, "%s", c->f[idx[16]]);
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
        const Meas *got = &s->rows[s->n - 1];
        if (fabs(got->flops - flops) > 1e-9 * fabs(got->flops) + 0.5)
            return err_set(e, "%s: line %d: column \"flops\": got %.17g, expected %.17g from the shape", c->path,
                           c->line, flops, got->flops);
        if (fabs(got->bytes - bytes) > 1e-9 * fabs(got->bytes) + 0.5)
            return err_set(e, "%s: line %d: column \"bytes\": got %.17g, expected %.17g from the shape", c->path,
                           c->line, bytes, got->bytes);
    }
    char note[600];
    snprintf(note, sizeof note, "%s (%zu rows)", c->path, s->n - n0);
    calib_meas_note(s, "%s", note);
    return 0;
}

/* ------------------------------------------------------- aiconfigurator */

static int calib_meas_aic_gemm(MeasSet *s, Csv *c, Err *e)
{
    int cd = calib_meas_csv_need(c, "gemm_dtype", e), cm = calib_meas_csv_need(c, "m", e),
        cn = calib_meas_csv_need(c, "n", e), ck = calib_meas_csv_need(c, "k", e),
        cl = calib_meas_csv_need(c, "latency", e), cs = calib_meas_csv_col(c, "kernel_source");
    if (cd < 0 || cm < 0 || cn < 0 || ck < 0 || cl < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        int dt = calib_meas_dtype_word(c->f[cd]);
        /* Weight-only and SmoothQuant INT8/INT4 GEMMs (A100 TensorRT-LLM)
         * are not modelled. */
        if (dt < 0 || dt == DTYPE_FP32) {
            s->skipped++;
            continue;
        }
        Meas r = {.op = MEAS_GEMM, .dtype = dt, .kv_dtype = dt};
        if (calib_meas_csv_num(c, cm, &r.m, e) || calib_meas_csv_num(c, cn, &r.n, e) ||
            calib_meas_csv_num(c, ck, &r.k, e) || calib_meas_csv_num(c, cl, &r.latency_ms, e))
            return -1;
        snprintf(r.tag, sizeof r.tag, "aic:%s", cs >= 0 ? c->f[cs] : "gemm");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* context_attention_perf.csv (prefill of isl tokens, no cache) and
 * generation_attention_perf.csv (one decode step at context isl + step). */
static int calib_meas_aic_attn(MeasSet *s, Csv *c, int decode, Err *e)
{
    int cb = calib_meas_csv_need(c, "batch_size", e), ci = calib_meas_csv_need(c, "isl", e),
        cq = calib_meas_csv_need(c, "num_heads", e), ckv = calib_meas_csv_need(c, "num_key_value_heads", e),
        ch = calib_meas_csv_need(c, "head_dim", e), ca = calib_meas_csv_need(c, "attn_dtype", e),
        ckd = calib_meas_csv_need(c, "kv_cache_dtype", e), cst = calib_meas_csv_need(c, "step", e),
        cl = calib_meas_csv_need(c, "latency", e), cw = calib_meas_csv_col(c, "window_size"),
        cbw = calib_meas_csv_col(c, "beam_width"), cs = calib_meas_csv_col(c, "kernel_source");
    if (cb < 0 || ci < 0 || cq < 0 || ckv < 0 || ch < 0 || ca < 0 || ckd < 0 || cst < 0 || cl < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        int dt = calib_meas_dtype_word(c->f[ca]), kdt = calib_meas_dtype_word(c->f[ckd]);
        if (dt < 0 || kdt < 0 || dt == DTYPE_FP8_BLOCK || dt == DTYPE_NVFP4 || kdt == DTYPE_FP8_BLOCK ||
            kdt == DTYPE_NVFP4 || (cw >= 0 && strcmp(c->f[cw], "0") != 0 && c->f[cw][0]) ||
            (cbw >= 0 && strcmp(c->f[cbw], "1") != 0)) {
            s->skipped++;
            continue;
        }
        double isl, step;
        Meas r = {.op = decode ? MEAS_ATTN_DECODE : MEAS_ATTN_PREFILL, .dtype = dt, .kv_dtype = kdt};
        if (calib_meas_csv_num(c, cb, &r.batch, e) || calib_meas_csv_num(c, ci, &isl, e) ||
            calib_meas_csv_num(c, cq, &r.q_heads, e) || calib_meas_csv_num(c, ckv, &r.kv_heads, e) ||
            calib_meas_csv_num(c, ch, &r.head_dim, e) || calib_meas_csv_num(c, cst, &step, e) ||
            calib_meas_csv_num(c, cl, &r.latency_ms, e))
            return -1;
        if (decode) {
            /* The step's token attends isl + step keys, itself included. */
            r.chunk = 1;
            r.ctx = isl + step - 1;
        } else {
            r.chunk = isl;
            r.ctx = step;
        }
        snprintf(r.tag, sizeof r.tag, "aic:%s", cs >= 0 ? c->f[cs] : "attention");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* nccl_perf.csv: message_size counts elements of nccl_dtype (a 2-GPU H100
 * all-reduce of 2^25 half elements takes 0.25 ms, as Vidur's of 64 MiB). */
static int calib_meas_aic_nccl(MeasSet *s, Csv *c, Err *e)
{
    int co = calib_meas_csv_need(c, "op_name", e), cd = calib_meas_csv_need(c, "nccl_dtype", e),
        cg = calib_meas_csv_need(c, "num_gpus", e), cm = calib_meas_csv_need(c, "message_size", e),
        cl = calib_meas_csv_need(c, "latency", e);
    if (co < 0 || cd < 0 || cg < 0 || cm < 0 || cl < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        int dt = calib_meas_dtype_word(c->f[cd]);
        int a2a = !strcmp(c->f[co], "alltoall");
        if ((strcmp(c->f[co], "all_reduce") != 0 && !a2a) || dt < 0) {
            s->skipped++;
            continue;
        }
        double elems;
        Meas r = {.op = a2a ? MEAS_ALLTOALL : MEAS_ALLREDUCE, .dtype = dt, .kv_dtype = dt};
        if (calib_meas_csv_num(c, cg, &r.batch, e) || calib_meas_csv_num(c, cm, &elems, e) ||
            calib_meas_csv_num(c, cl, &r.latency_ms, e))
            return -1;
        r.size_bytes = elems * calib_meas_elem_bytes(dt);
        snprintf(r.tag, sizeof r.tag, a2a ? "aic:nccl_alltoall" : "aic:nccl");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* custom_allreduce_perf.csv: an engine's own all-reduce (TensorRT-LLM's,
 * vLLM's and SGLang's custom kernels); message_size counts elements of
 * allreduce_dtype.  vLLM and SGLang time each size twice, inside a captured
 * CUDA graph and eagerly (backend vllm_graph / vllm_eager); serving runs the
 * captured one, so eager rows are skipped. */
static int calib_meas_aic_custom_ar(MeasSet *s, Csv *c, Err *e)
{
    int co = calib_meas_csv_need(c, "op_name", e), cd = calib_meas_csv_need(c, "allreduce_dtype", e),
        cg = calib_meas_csv_need(c, "num_gpus", e), cm = calib_meas_csv_need(c, "message_size", e),
        cl = calib_meas_csv_need(c, "latency", e), cs = calib_meas_csv_col(c, "kernel_source"),
        cb = calib_meas_csv_col(c, "backend"), ci = calib_meas_csv_col(c, "implementation");
    if (co < 0 || cd < 0 || cg < 0 || cm < 0 || cl < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        int dt = calib_meas_dtype_word(c->f[cd]);
        int eager = (cb >= 0 && strstr(c->f[cb], "eager")) || (ci >= 0 && strstr(c->f[ci], "eager")) ||
                    (cs >= 0 && strstr(c->f[cs], "eager"));
        if (strcmp(c->f[co], "all_reduce") != 0 || dt < 0 || dt == DTYPE_FP8_BLOCK || dt == DTYPE_NVFP4 || eager) {
            s->skipped++;
            continue;
        }
        double elems;
        Meas r = {.op = MEAS_ALLREDUCE, .dtype = dt, .kv_dtype = dt};
        if (calib_meas_csv_num(c, cg, &r.batch, e) || calib_meas_csv_num(c, cm, &elems, e) ||
            calib_meas_csv_num(c, cl, &r.latency_ms, e))
            return -1;
        r.size_bytes = elems * calib_meas_elem_bytes(dt);
        snprintf(r.tag, sizeof r.tag, "aic:%s", cs >= 0 ? c->f[cs] : "custom_allreduce");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* moe_perf.csv: one GPU's fused MoE forward (routing, permute, expert GEMMs,
 * finalize; no communication).  Rows of the routing distribution
 * MEAS_MOE_DISTRIBUTION only (calib/README.md says why); gated experts only
 * (the non-gated ReLU^2 kernels and INT4 weight-only rows are skipped;
 * w4a16_mxfp4 rows form class moe_w4a16). */
static int calib_meas_aic_moe(MeasSet *s, Csv *c, Err *e)
{
    int cd = calib_meas_csv_need(c, "moe_dtype", e), ct = calib_meas_csv_need(c, "num_tokens", e),
        ch = calib_meas_csv_need(c, "hidden_size", e), ci = calib_meas_csv_need(c, "inter_size", e),
        ck = calib_meas_csv_need(c, "topk", e), cx = calib_meas_csv_need(c, "num_experts", e),
        cmt = calib_meas_csv_need(c, "moe_tp_size", e), cme = calib_meas_csv_need(c, "moe_ep_size", e),
        cdi = calib_meas_csv_need(c, "distribution", e), cl = calib_meas_csv_need(c, "latency", e),
        cs = calib_meas_csv_col(c, "kernel_source");
    if (cd < 0 || ct < 0 || ch < 0 || ci < 0 || ck < 0 || cx < 0 || cmt < 0 || cme < 0 || cdi < 0 || cl < 0)
        return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        /* w4a16_mxfp4: MXFP4 weights, BF16 activations (class moe_w4a16) */
        int dt = !strcmp(c->f[cd], "w4a16_mxfp4") ? DTYPE_MXFP4 : calib_meas_dtype_word(c->f[cd]);
        if (dt < 0 || dt == DTYPE_NVFP4 || dt == DTYPE_FP32 || strcmp(c->f[cdi], MEAS_MOE_DISTRIBUTION) != 0 ||
            (cs >= 0 && strstr(c->f[cs], "nongated"))) {
            s->skipped++;
            continue;
        }
        double inter, experts, mtp, mep;
        Meas r = {.op = MEAS_MOE, .dtype = dt, .kv_dtype = dt};
        if (calib_meas_csv_num(c, ct, &r.m, e) || calib_meas_csv_num(c, ch, &r.k, e) ||
            calib_meas_csv_num(c, ci, &inter, e) || calib_meas_csv_num(c, ck, &r.chunk, e) ||
            calib_meas_csv_num(c, cx, &experts, e) || calib_meas_csv_num(c, cmt, &mtp, e) ||
            calib_meas_csv_num(c, cme, &mep, e) || calib_meas_csv_num(c, cl, &r.latency_ms, e))
            return -1;
        if (!(mtp >= 1) || !(mep >= 1) || fmod(inter, mtp) != 0 || fmod(experts, mep) != 0) {
            s->skipped++; /* a slice that does not divide evenly: not a layout an engine runs */
            continue;
        }
        r.n = inter / mtp;
        r.batch = experts / mep;
        r.ctx = experts;
        snprintf(r.tag, sizeof r.tag, "aic:%s", cs >= 0 ? c->f[cs] : "moe");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* context_mla_perf.csv / generation_mla_perf.csv: the MLA attention kernel
 * alone (projections and BMMs are GEMMs), DeepSeek-V3's shape; num_heads are
 * the GPU's heads.  Context rows: batch_size prompts of isl tokens; generation
 * rows: one token over isl + step keys. */
static int calib_meas_aic_mla(MeasSet *s, Csv *c, Err *e)
{
    int co = calib_meas_csv_need(c, "op_name", e), cd = calib_meas_csv_need(c, "mla_dtype", e),
        ckd = calib_meas_csv_need(c, "kv_cache_dtype", e), cq = calib_meas_csv_need(c, "num_heads", e),
        cb = calib_meas_csv_need(c, "batch_size", e), ci = calib_meas_csv_need(c, "isl", e),
        cst = calib_meas_csv_need(c, "step", e), cl = calib_meas_csv_need(c, "latency", e),
        cs = calib_meas_csv_col(c, "kernel_source");
    if (co < 0 || cd < 0 || ckd < 0 || cq < 0 || cb < 0 || ci < 0 || cst < 0 || cl < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        int decode = !strcmp(c->f[co], "mla_generation");
        int dt = calib_meas_dtype_word(c->f[cd]), kdt = calib_meas_dtype_word(c->f[ckd]);
        if ((!decode && strcmp(c->f[co], "mla_context") != 0) || dt < 0 || kdt < 0 ||
            (dt != DTYPE_BF16 && dt != DTYPE_FP16) || (kdt != DTYPE_BF16 && kdt != DTYPE_FP8)) {
            s->skipped++;
            continue;
        }
        double isl, step;
        Meas r = {.op = decode ? MEAS_MLA_DECODE : MEAS_MLA_PREFILL, .dtype = dt, .kv_dtype = kdt, .kv_heads = 1};
        if (calib_meas_csv_num(c, cb, &r.batch, e) || calib_meas_csv_num(c, ci, &isl, e) ||
            calib_meas_csv_num(c, cq, &r.q_heads, e) || calib_meas_csv_num(c, cst, &step, e) ||
            calib_meas_csv_num(c, cl, &r.latency_ms, e))
            return -1;
        r.head_dim = decode ? MEAS_MLA_KV_LORA + MEAS_MLA_ROPE : MEAS_MLA_NOPE + MEAS_MLA_ROPE;
        if (decode) {
            r.chunk = 1;
            r.ctx = isl + step - 1;
        } else {
            r.chunk = isl;
            r.ctx = step;
        }
        snprintf(r.tag, sizeof r.tag, "aic:%s_mla", cs >= 0 ? c->f[cs] : "default");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* ----------------------------------------------------------------- Vidur */

static int calib_meas_median_col(const Csv *c, const char *op, Err *e)
{
    char name[128];
    snprintf(name, sizeof name, "time_stats.%s.median", op);
    return calib_meas_csv_need(c, name, e);
}

/* mlp.csv: one layer's QKV, O, gate/up and down GEMMs (FP16) per token
 * count and TP degree; n and k are the per-GPU shapes; the tag says which
 * projection and TP degree ("vidur:qkv@tp1"). */
static int calib_meas_vidur_mlp(MeasSet *s, Csv *c, Err *e)
{
    static const char *const ops[4] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"};
    static const char *const tags[4] = {"vidur:qkv", "vidur:o", "vidur:gate_up", "vidur:down"};
    int ct[4];
    for (int i = 0; i < 4; i++)
        if ((ct[i] = calib_meas_median_col(c, ops[i], e)) < 0) return -1;
    int ch = calib_meas_csv_need(c, "n_head", e), ckv = calib_meas_csv_need(c, "n_kv_head", e),
        cd = calib_meas_csv_need(c, "n_embd", e), cf = calib_meas_csv_need(c, "n_expanded_embd", e),
        cg = calib_meas_csv_need(c, "use_gated_mlp", e), cm = calib_meas_csv_need(c, "num_tokens", e),
        ctp = calib_meas_csv_need(c, "num_tensor_parallel_workers", e);
    if (ch < 0 || ckv < 0 || cd < 0 || cf < 0 || cg < 0 || cm < 0 || ctp < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        double h, kvh, d, ffn, m, tp;
        if (calib_meas_csv_num(c, ch, &h, e) || calib_meas_csv_num(c, ckv, &kvh, e) ||
            calib_meas_csv_num(c, cd, &d, e) || calib_meas_csv_num(c, cf, &ffn, e) ||
            calib_meas_csv_num(c, cm, &m, e) || calib_meas_csv_num(c, ctp, &tp, e))
            return -1;
        if (!(h >= 1 && tp >= 1 && d >= h))
            return err_set(e, "%s: line %d: n_head %.12g, n_embd %.12g, TP %.12g: expected n_head >= 1, TP >= 1",
                           c->path, c->line, h, d, tp);
        double hd = d / h, up = (strcmp(c->f[cg], "True") == 0 ? 2.0 : 1.0) * ffn;
        double kv_tp = kvh >= tp ? kvh / tp : 1; /* KV heads are replicated below one per GPU */
        const double nk[4][2] = {{(h / tp + 2 * kv_tp) * hd, d}, {d, h / tp * hd}, {up / tp, d}, {d, ffn / tp}};
        for (int i = 0; i < 4; i++) {
            Meas r = {.op = MEAS_GEMM, .dtype = DTYPE_FP16, .kv_dtype = DTYPE_FP16, .m = m, .n = nk[i][0],
                      .k = nk[i][1]};
            if (calib_meas_csv_num(c, ct[i], &r.latency_ms, e)) return -1;
            snprintf(r.tag, sizeof r.tag, "%s@tp%.0f", tags[i], tp);
            if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
        }
    }
    return 0;
}

/* legacy_a100/attention.csv: FlashAttention prefill (chunk over cached
 * context) and paged decode, per GPU after tensor parallelism. */
static int calib_meas_vidur_attn(MeasSet *s, Csv *c, Err *e)
{
    int cp = calib_meas_median_col(c, "attn_prefill", e), cdc = calib_meas_median_col(c, "attn_decode", e);
    int cd = calib_meas_csv_need(c, "n_embd", e), cq = calib_meas_csv_need(c, "n_q_head", e),
        ckv = calib_meas_csv_need(c, "n_kv_head", e), ctp = calib_meas_csv_need(c, "num_tensor_parallel_workers", e),
        cb = calib_meas_csv_need(c, "batch_size", e), cc = calib_meas_csv_need(c, "prefill_chunk_size", e),
        ch = calib_meas_csv_need(c, "kv_cache_size", e), ci = calib_meas_csv_need(c, "is_prefill", e);
    if (cp < 0 || cdc < 0 || cd < 0 || cq < 0 || ckv < 0 || ctp < 0 || cb < 0 || cc < 0 || ch < 0 || ci < 0)
        return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        double d, qh, kvh, tp;
        int pre = strcmp(c->f[ci], "True") == 0;
        Meas r = {.op = pre ? MEAS_ATTN_PREFILL : MEAS_ATTN_DECODE, .dtype = DTYPE_FP16, .kv_dtype = DTYPE_FP16};
        if (calib_meas_csv_num(c, cd, &d, e) || calib_meas_csv_num(c, cq, &qh, e) ||
            calib_meas_csv_num(c, ckv, &kvh, e) || calib_meas_csv_num(c, ctp, &tp, e) ||
            calib_meas_csv_num(c, cb, &r.batch, e) || calib_meas_csv_num(c, ch, &r.ctx, e))
            return -1;
        if (pre) {
            if (calib_meas_csv_num(c, cc, &r.chunk, e)) return -1;
        } else {
            /* kv_cache_size keys are read; the new token is one of them. */
            r.chunk = 1;
            r.ctx = r.ctx > 0 ? r.ctx - 1 : 0;
        }
        if (!(qh >= 1 && tp >= 1))
            return err_set(e, "%s: line %d: n_q_head %.12g, TP %.12g: expected >= 1", c->path, c->line, qh, tp);
        r.head_dim = d / qh;
        r.q_heads = qh / tp;
        r.kv_heads = kvh >= tp ? kvh / tp : 1;
        const char *t = c->f[pre ? cp : cdc];
        if (!*t) {
            s->skipped++;
            continue;
        }
        if (calib_meas_csv_num(c, pre ? cp : cdc, &r.latency_ms, e)) return -1;
        snprintf(r.tag, sizeof r.tag, "vidur:%s", pre ? "prefill" : "decode");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* network/<system>/all_reduce.csv: size in bytes (a 2-GPU H100 64 MiB
 * all-reduce at 0.245 ms is 274 GB/s; read as FP16 elements it would
 * exceed the 450 GB/s NVLink), one row per rank: rank 0 kept.  Only
 * single-node groups (devices_per_node = num_workers): the roofline models
 * a TP group inside one node. */
static int calib_meas_vidur_allreduce(MeasSet *s, Csv *c, Err *e)
{
    int ct = calib_meas_median_col(c, "all_reduce", e), cr = calib_meas_csv_need(c, "rank", e),
        cw = calib_meas_csv_need(c, "num_workers", e), cz = calib_meas_csv_need(c, "size", e),
        cn = calib_meas_csv_need(c, "devices_per_node", e);
    if (ct < 0 || cr < 0 || cw < 0 || cz < 0 || cn < 0) return -1;
    while (calib_meas_csv_next(c)) {
        if (calib_meas_csv_row_ok(c, e) < 0) return -1;
        if (strcmp(c->f[cr], "0") != 0 || strcmp(c->f[cw], c->f[cn]) != 0) {
            s->skipped++;
            continue;
        }
        Meas r = {.op = MEAS_ALLREDUCE, .dtype = DTYPE_FP16, .kv_dtype = DTYPE_FP16};
        if (calib_meas_csv_num(c, cw, &r.batch, e) || calib_meas_csv_num(c, cz, &r.size_bytes, e) ||
            calib_meas_csv_num(c, ct, &r.latency_ms, e))
            return -1;
        snprintf(r.tag, sizeof r.tag, "vidur:nccl");
        if (calib_meas_csv_add(s, c, &r, e) < 0) return -1;
    }
    return 0;
}

/* --------------------------------------------------------------- import */

static int calib_meas_import_file(MeasSet *s, const char *path, Err *e)
{
    Csv c;
    if (calib_meas_csv_open(&c, path, e) < 0) return -1;
    size_t n0 = s->n;
    int r;
    const char *kind;
    if (calib_meas_csv_col(&c, "latency_ms") >= 0 && calib_meas_csv_col(&c, "op") >= 0) {
        r = calib_meas_read_own(s, &c, e);
        free(c.text);
        return r;
    } else if (calib_meas_csv_col(&c, "gemm_dtype") >= 0) {
        kind = "aiconfigurator GEMM";
        r = calib_meas_aic_gemm(s, &c, e);
    } else if (calib_meas_csv_col(&c, "num_key_value_heads") >= 0 && calib_meas_csv_col(&c, "op_name") < 0) {
        /* The per-engine tables drop the constant op_name: the file's name
         * says which table it is. */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        int decode = strstr(base, "generation_attention") != NULL;
        if (!decode && !strstr(base, "context_attention")) {
            free(c.text);
            return err_set(e, "%s: an attention table without op_name; its file name must say context_attention or "
                              "generation_attention", path);
        }
        kind = decode ? "aiconfigurator decode attention" : "aiconfigurator prefill attention";
        r = calib_meas_aic_attn(s, &c, decode, e);
    } else if (calib_meas_csv_col(&c, "num_key_value_heads") >= 0 && calib_meas_csv_col(&c, "op_name") >= 0) {
        /* op_name says which of the two attention tables this is. */
        if (!calib_meas_csv_next(&c)) {
            free(c.text);
            return err_set(e, "%s: no rows after the header", path);
        }
        int co = calib_meas_csv_col(&c, "op_name");
        int decode = strcmp(c.f[co], "generation_attention") == 0;
        if (!decode && strcmp(c.f[co], "context_attention") != 0) {
            err_set(e, "%s: line %d: op_name \"%s\", expected context_attention or generation_attention", path, c.line,
                    c.f[co]);
            free(c.text);
            return -1;
        }
        /* re-read from the first row */
        free(c.text);
        if (calib_meas_csv_open(&c, path, e) < 0) return -1;
        kind = decode ? "aiconfigurator decode attention" : "aiconfigurator prefill attention";
        r = calib_meas_aic_attn(s, &c, decode, e);
    } else if (calib_meas_csv_col(&c, "mla_dtype") >= 0 && calib_meas_csv_col(&c, "model") < 0) {
        kind = "aiconfigurator MLA attention";
        r = calib_meas_aic_mla(s, &c, e);
    } else if (calib_meas_csv_col(&c, "moe_dtype") >= 0 && calib_meas_csv_col(&c, "moe_ep_size") >= 0 &&
               calib_meas_csv_col(&c, "dp_num_tokens") < 0) {
        kind = "aiconfigurator fused MoE";
        r = calib_meas_aic_moe(s, &c, e);
    } else if (calib_meas_csv_col(&c, "allreduce_dtype") >= 0) {
        kind = "aiconfigurator custom all-reduce";
        r = calib_meas_aic_custom_ar(s, &c, e);
    } else if (calib_meas_csv_col(&c, "nccl_dtype") >= 0) {
        kind = "aiconfigurator NCCL all-reduce";
        r = calib_meas_aic_nccl(s, &c, e);
    } else if (calib_meas_csv_col(&c, "time_stats.mlp_up_proj.median") >= 0) {
        kind = "Vidur mlp.csv GEMMs";
        r = calib_meas_vidur_mlp(s, &c, e);
    } else if (calib_meas_csv_col(&c, "time_stats.attn_prefill.median") >= 0) {
        kind = "Vidur attention";
        r = calib_meas_vidur_attn(s, &c, e);
    } else if (calib_meas_csv_col(&c, "time_stats.all_reduce.median") >= 0) {
        kind = "Vidur all-reduce";
        r = calib_meas_vidur_allreduce(s, &c, e);
    } else {
        free(c.text);
        return err_set(e, "%s: unrecognised CSV header (expected the servesim measurement columns op,...,latency_ms, "
                          "an aiconfigurator table, or a Vidur mlp.csv / attention.csv / all_reduce.csv)", path);
    }
    free(c.text);
    if (r < 0) return -1;
    char note[800];
    snprintf(note, sizeof note, "%s (%s, %zu rows)", path, kind, s->n - n0);
    calib_meas_note(s, "%s", note);
    return 0;
}

int calib_meas_import(MeasSet *s, const char *path, Err *e)
{
    if (!path || !*path) return err_set(e, "measurements: empty path");
    size_t len = strlen(path);
    if (len > 4 && !strcmp(path + len - 4, ".csv")) return calib_meas_import_file(s, path, e);
    /* A directory: aiconfigurator's per-GPU folder, or a per-engine one
     * (<gpu>/<backend>-<version>/); other tables there (MoE, MLA) are not
     * modelled. */
    static const char *const files[] = {"gemm_perf.csv", "context_attention_perf.csv",
                                        "generation_attention_perf.csv", "custom_allreduce_perf.csv",
                                        "nccl_perf.csv", NULL};
    int found = 0;
    for (int i = 0; files[i]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, files[i]);
        FILE *f = fopen(p, "rb");
        if (!f) continue;
        fclose(f);
        found++;
        if (calib_meas_import_file(s, p, e) < 0) return -1;
    }
    if (!found)
        return err_set(e, "%s: not a .csv file and no aiconfigurator tables (gemm_perf.csv, ...) in it", path);
    return 0;
}
