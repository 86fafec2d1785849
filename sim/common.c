/*
 * common.c -- error messages, checked allocation, whole-file reads.
 */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int err_set(Err *e, const char *fmt, ...)
{
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int err_prefix(Err *e, const char *fmt, ...)
{
    if (!e) return -1;
    char head[ERR_MSG_MAX], old[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t n = strlen(head);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, head, n);
    e->msg[n] = ':';
    e->msg[n + 1] = ' ';
    size_t room = sizeof e->msg - n - 3;
    size_t m = strlen(old);
    if (m > room) m = room;
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = '\0';
    return -1;
}

static void oom(size_t n)
{
    fprintf(stderr, "servesim: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    if (!p) oom(count * n);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

char *read_file(const char *path, size_t *len_out, Err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(e, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        err_set(e, "%s: read error", path);
        return NULL;
    }
    buf[len] = '\0';
    if (len_out) *len_out = len;
    return buf;
}
