/*
 * ordw.c -- records written in sequence order (see ordw.h).
 *
 * A run on disk is a sequence of records, each an 8-byte sequence number,
 * an 8-byte length and the text, in increasing sequence order.
 */
#include "ordw.h"

#include <stdlib.h>
#include <string.h>

void ordw_init(Ordw *w, FILE *out, const char *sep, size_t mem_limit)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->sep = sep ? sep : "";
    w->mem_limit = mem_limit ? mem_limit : ORDW_MEM_DEFAULT;
}

void ordw_free(Ordw *w)
{
    for (uint32_t i = 0; i < w->n_runs; i++) fclose(w->runs[i]);
    free(w->heap);
    free(w->arena);
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------ the heap */

static void heap_push(Ordw *w, OrdwRec r)
{
    if (w->n_heap == w->cap_heap) {
        w->cap_heap = w->cap_heap ? 2 * w->cap_heap : 1024;
        w->heap = xrealloc(w->heap, w->cap_heap * sizeof *w->heap);
    }
    size_t i = w->n_heap++;
    while (i > 0 && w->heap[(i - 1) / 2].seq > r.seq) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = r;
}

static OrdwRec heap_pop(Ordw *w)
{
    OrdwRec top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && w->heap[c + 1].seq < w->heap[c].seq) c++;
        if (w->heap[c].seq >= last.seq) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* ------------------------------------------------------------ output */

/* One record to the output, in order: the next sequence number or a gap. */
static int put_out(Ordw *w, uint64_t seq, const char *text, size_t len, Err *e)
{
    if (seq != w->next)
        return err_set(e, "internal: ordered output: record %llu where %llu was due", (unsigned long long)seq,
                       (unsigned long long)w->next);
    /* an empty record writes nothing, not even a separator */
    if (len && w->written && w->sep[0]) fputs(w->sep, w->out);
    if (len && fwrite(text, 1, len, w->out) != len) return err_set(e, "ordered output: write error");
    w->written += len > 0;
    w->next++;
    return 0;
}

static int put_run(FILE *f, uint64_t seq, const char *text, size_t len, Err *e)
{
    uint64_t h[2] = {seq, (uint64_t)len};
    if (fwrite(h, sizeof h, 1, f) != 1 || (len && fwrite(text, 1, len, f) != len))
        return err_set(e, "ordered output: cannot write a temporary run (disk full?)");
    return 0;
}

/* A run being read back: its current record. */
typedef struct RunCur {
    FILE *f;
    int live;
    uint64_t seq;
    char *buf;
    size_t len, cap;
} RunCur;

static int cur_next(RunCur *c, Err *e)
{
    uint64_t h[2];
    if (fread(h, sizeof h, 1, c->f) != 1) {
        c->live = 0;
        return ferror(c->f) ? err_set(e, "ordered output: cannot read a temporary run") : 0;
    }
    if (h[1] > ((uint64_t)1 << 40)) return err_set(e, "internal: ordered output: a run record of %llu bytes",
                                                  (unsigned long long)h[1]);
    if (h[1] + 1 > c->cap) {
        c->cap = (size_t)h[1] + 1;
        c->buf = xrealloc(c->buf, c->cap);
    }
    if (h[1] && fread(c->buf, 1, (size_t)h[1], c->f) != h[1])
        return err_set(e, "ordered output: a temporary run ends early");
    c->seq = h[0];
    c->len = (size_t)h[1];
    c->live = 1;
    return 0;
}

/* Merges every run and (with_heap) the heap into dst: the output (to_out)
 * or a new run.  The runs are closed; the heap and arena are emptied. */
static int merge(Ordw *w, FILE *dst, int to_out, int with_heap, Err *e)
{
    RunCur cur[ORDW_MAX_RUNS];
    uint32_t n = w->n_runs;
    int rc = 0;
    memset(cur, 0, sizeof cur);
    for (uint32_t i = 0; i < n; i++) {
        cur[i].f = w->runs[i];
        rewind(cur[i].f);
        if (rc == 0) rc = cur_next(&cur[i], e);
    }
    while (rc == 0) {
        int best = -1; /* a run, or n: the heap */
        uint64_t bs = UINT64_MAX;
        for (uint32_t i = 0; i < n; i++)
            if (cur[i].live && cur[i].seq < bs) {
                bs = cur[i].seq;
                best = (int)i;
            }
        if (with_heap && w->n_heap && w->heap[0].seq < bs) best = (int)n;
        if (best < 0) break;
        if (best == (int)n) {
            OrdwRec r = heap_pop(w);
            const char *t = w->arena + r.off;
            rc = to_out ? put_out(w, r.seq, t, r.len, e) : put_run(dst, r.seq, t, r.len, e);
        } else {
            RunCur *c = &cur[best];
            rc = to_out ? put_out(w, c->seq, c->buf, c->len, e) : put_run(dst, c->seq, c->buf, c->len, e);
            if (rc == 0) rc = cur_next(c, e);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        fclose(cur[i].f);
        free(cur[i].buf);
    }
    w->n_runs = 0;
    if (with_heap) {
        w->n_heap = 0;
        w->arena_len = 0;
    }
    return rc;
}

/* The heap, in order, to a new run. */
static int spill(Ordw *w, Err *e)
{
    if (w->n_runs == ORDW_MAX_RUNS) {
        FILE *one = tmpfile();
        if (!one) return err_set(e, "ordered output: cannot create a temporary file");
        if (merge(w, one, 0, 0, e) < 0) {
            fclose(one);
            return -1;
        }
        w->runs[w->n_runs++] = one;
    }
    FILE *f = tmpfile();
    if (!f) return err_set(e, "ordered output: cannot create a temporary file");
    w->spilled += w->n_heap;
    while (w->n_heap) {
        OrdwRec r = heap_pop(w);
        if (put_run(f, r.seq, w->arena + r.off, r.len, e) < 0) {
            fclose(f);
            return -1;
        }
    }
    w->arena_len = 0;
    w->runs[w->n_runs++] = f;
    return 0;
}

int ordw_add(Ordw *w, uint64_t seq, const char *text, size_t len, Err *e)
{
    if (w->failed) return -1;
    if (seq == w->next && w->n_runs == 0) {
        if (put_out(w, seq, text, len, e) < 0) return w->failed = -1;
        while (w->n_heap && w->heap[0].seq == w->next) {
            OrdwRec r = heap_pop(w);
            if (put_out(w, r.seq, w->arena + r.off, r.len, e) < 0) return w->failed = -1;
        }
        if (!w->n_heap) w->arena_len = 0;
        return 0;
    }
    if (seq < w->next)
        return w->failed = err_set(e, "internal: ordered output: record %llu twice", (unsigned long long)seq);
    if (w->arena_len + len > w->arena_cap) {
        size_t c = w->arena_cap ? w->arena_cap : 65536;
        while (c < w->arena_len + len) c *= 2;
        w->arena = xrealloc(w->arena, c);
        w->arena_cap = c;
    }
    if (len) memcpy(w->arena + w->arena_len, text, len); /* an empty record may come before any text */
    heap_push(w, (OrdwRec){seq, w->arena_len, len});
    w->arena_len += len;
    /* the heap's records count too: empty ones (a request an output
     * shows nothing of) take no text */
    if (w->arena_len + w->n_heap * sizeof *w->heap > w->mem_limit && spill(w, e) < 0) return w->failed = -1;
    return 0;
}

int ordw_finish(Ordw *w, uint64_t n, Err *e)
{
    if (w->failed) return -1;
    if (merge(w, w->out, 1, 1, e) < 0) return w->failed = -1;
    if (w->next != n)
        return w->failed = err_set(e, "internal: ordered output: %llu records of %llu written",
                                   (unsigned long long)w->next, (unsigned long long)n);
    return 0;
}
