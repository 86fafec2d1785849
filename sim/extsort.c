/*
 * extsort.c -- records sorted by key in bounded memory (see extsort.h).
 *
 * Every run goes to one temporary file, one after the other; a run is
 * read back through pread at its own offset, a few records at a time, so
 * that any number of runs share one file descriptor.
 */
#include "extsort.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdio.h>

#define EXTSORT_READ_BYTES 8192 /* per run while merging */

typedef struct ExtRun {
    uint64_t off, end;  /* bytes of the file still to read: [off, end) */
    unsigned char *buf; /* records read ahead */
    size_t n, pos;      /* records in buf, the next one */
} ExtRun;

struct ExtSort {
    size_t rec, cap;    /* record size; records the buffer holds */
    unsigned char *buf;
    size_t n;           /* records in the buffer */
    uint64_t count;
    FILE *f;            /* the runs, NULL before the first spill */
    uint64_t f_len;
    ExtRun *runs;
    uint32_t n_runs, cap_runs;
    /* reading: a heap of run indices by their current record (the
     * buffer, sorted, is run n_runs when there are runs on disk) */
    uint32_t *heap, n_heap;
    size_t mem_pos;     /* the buffer read directly when nothing spilled */
    int reading;
};

/* qsort takes no context: the record size of the buffer being sorted
 * (one sort at a time; the simulator is single-threaded) */
static size_t rec_size_g;

static int rec_cmp(const void *a, const void *b)
{
    int64_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    if (x != y) return x < y ? -1 : 1;
    return memcmp(a, b, rec_size_g);
}

static int cmp_bytes(const ExtSort *x, const void *a, const void *b)
{
    int64_t p, q;
    memcpy(&p, a, sizeof p);
    memcpy(&q, b, sizeof q);
    if (p != q) return p < q ? -1 : 1;
    return memcmp(a, b, x->rec);
}

ExtSort *extsort_new(size_t rec_size, size_t mem_bytes)
{
    ExtSort *x = xcalloc(1, sizeof *x);
    x->rec = rec_size < sizeof(int64_t) ? sizeof(int64_t) : rec_size;
    size_t mem = mem_bytes ? mem_bytes : EXTSORT_MEM_DEFAULT;
    x->cap = mem / x->rec ? mem / x->rec : 1;
    return x;
}

void extsort_free(ExtSort *x)
{
    if (!x) return;
    if (x->f) fclose(x->f);
    for (uint32_t i = 0; i < x->n_runs; i++) free(x->runs[i].buf);
    free(x->runs);
    free(x->buf);
    free(x->heap);
    free(x);
}

uint64_t extsort_count(const ExtSort *x) { return x->count; }
uint32_t extsort_runs(const ExtSort *x) { return x->n_runs; }

static void sort_buffer(ExtSort *x)
{
    rec_size_g = x->rec;
    qsort(x->buf, x->n, x->rec, rec_cmp);
}

/* The buffer, sorted, to the file as a new run. */
static int spill(ExtSort *x, Err *e)
{
    if (!x->f && !(x->f = tmpfile())) return err_set(e, "sorted output: cannot create a temporary file");
    sort_buffer(x);
    if (fseek(x->f, 0, SEEK_END) != 0 || fwrite(x->buf, x->rec, x->n, x->f) != x->n)
        return err_set(e, "sorted output: cannot write a temporary run (disk full?)");
    if (x->n_runs == x->cap_runs) {
        x->cap_runs = x->cap_runs ? 2 * x->cap_runs : 8;
        x->runs = xrealloc(x->runs, x->cap_runs * sizeof *x->runs);
    }
    x->runs[x->n_runs++] = (ExtRun){.off = x->f_len, .end = x->f_len + (uint64_t)x->n * x->rec};
    x->f_len += (uint64_t)x->n * x->rec;
    x->n = 0;
    return 0;
}

int extsort_add(ExtSort *x, const void *rec, Err *e)
{
    if (!x->buf) x->buf = xmalloc(x->cap * x->rec);
    if (x->n == x->cap && spill(x, e) < 0) return -1;
    memcpy(x->buf + x->n * x->rec, rec, x->rec);
    x->n++;
    x->count++;
    return 0;
}

/* Run i's current record, reading ahead when its buffer is spent; NULL
 * at its end (or on a read error: *bad). */
static const unsigned char *run_cur(ExtSort *x, uint32_t i, int *bad)
{
    ExtRun *r = &x->runs[i];
    if (r->pos < r->n) return r->buf + r->pos * x->rec;
    if (r->off >= r->end) return NULL;
    size_t want = EXTSORT_READ_BYTES / x->rec ? EXTSORT_READ_BYTES / x->rec : 1;
    if ((uint64_t)want * x->rec > r->end - r->off) want = (size_t)((r->end - r->off) / x->rec);
    if (!r->buf) r->buf = xmalloc((EXTSORT_READ_BYTES / x->rec ? EXTSORT_READ_BYTES / x->rec : 1) * x->rec);
    ssize_t got = pread(fileno(x->f), r->buf, want * x->rec, (off_t)r->off);
    if (got != (ssize_t)(want * x->rec)) {
        *bad = 1;
        return NULL;
    }
    r->off += (uint64_t)want * x->rec;
    r->n = want;
    r->pos = 0;
    return r->buf;
}

static int heap_less(ExtSort *x, uint32_t a, uint32_t b, int *bad)
{
    const unsigned char *p = run_cur(x, a, bad), *q = run_cur(x, b, bad);
    return p && q && cmp_bytes(x, p, q) < 0;
}

static void heap_down(ExtSort *x, uint32_t i, int *bad)
{
    for (;;) {
        uint32_t c = 2 * i + 1, m = i;
        if (c < x->n_heap && heap_less(x, x->heap[c], x->heap[m], bad)) m = c;
        if (c + 1 < x->n_heap && heap_less(x, x->heap[c + 1], x->heap[m], bad)) m = c + 1;
        if (m == i) return;
        uint32_t t = x->heap[i];
        x->heap[i] = x->heap[m];
        x->heap[m] = t;
        i = m;
    }
}

int extsort_rewind(ExtSort *x, Err *e)
{
    x->reading = 1;
    x->mem_pos = 0;
    if (!x->n_runs) {
        sort_buffer(x);
        return 0;
    }
    if (x->n && spill(x, e) < 0) return -1;
    if (fflush(x->f) != 0) return err_set(e, "sorted output: cannot write a temporary run (disk full?)");
    int bad = 0;
    x->heap = xmalloc(x->n_runs * sizeof *x->heap);
    x->n_heap = 0;
    for (uint32_t i = 0; i < x->n_runs; i++)
        if (run_cur(x, i, &bad)) x->heap[x->n_heap++] = i;
    for (uint32_t i = x->n_heap / 2; i-- > 0;) heap_down(x, i, &bad);
    return bad ? err_set(e, "sorted output: cannot read a temporary run") : 0;
}

int extsort_next(ExtSort *x, void *rec, Err *e)
{
    if (NEVER(!x->reading)) return err_set(e, "internal: sorted output read before its rewind");
    if (!x->n_runs) {
        if (x->mem_pos >= x->n) return 0;
        memcpy(rec, x->buf + x->mem_pos++ * x->rec, x->rec);
        return 1;
    }
    if (!x->n_heap) return 0;
    int bad = 0;
    uint32_t top = x->heap[0];
    const unsigned char *p = run_cur(x, top, &bad);
    if (!p) return err_set(e, "sorted output: cannot read a temporary run");
    memcpy(rec, p, x->rec);
    x->runs[top].pos++;
    if (!run_cur(x, top, &bad)) x->heap[0] = x->heap[--x->n_heap];
    heap_down(x, 0, &bad);
    return bad ? err_set(e, "sorted output: cannot read a temporary run") : 1;
}
