/*
 * common.c -- error messages, checked allocation, whole-file reads.
 */
/* realpath is XSI */
#define _XOPEN_SOURCE 700

#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* The length of the valid UTF-8 character at s (1..4), or 0 when the
 * bytes there are not one (overlong forms and surrogates included). */
static size_t utf8_char_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned min;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000, cp = c & 0x07;
    else return 0;
    if (n > avail) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* Appends s[0..len) to out (room n with the NUL) as valid UTF-8, escaping
 * control and invalid bytes; keep_nl keeps '\n' and '\t' as they are.
 * Returns the bytes written; stops before a piece that does not fit
 * (leaving room for "..." when more is cut). */
static size_t utf8_clean(const char *s, size_t len, char *out, size_t n, int keep_nl, int *cut)
{
    size_t o = 0;
    *cut = 0;
    if (!n) return 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        char piece[8];
        size_t pn, step;
        size_t cl = utf8_char_len(u + i, len - i);
        if (cl == 1 && (u[i] >= 0x20 || (keep_nl && (u[i] == '\n' || u[i] == '\t'))) && u[i] != 0x7f) {
            piece[0] = (char)u[i];
            pn = step = 1;
        } else if (cl > 1) {
            memcpy(piece, u + i, cl);
            pn = step = cl;
        } else {
            snprintf(piece, sizeof piece, "\\x%02x", u[i]);
            pn = 4;
            step = 1;
        }
        if (o + pn + 1 > n) {
            *cut = 1;
            break;
        }
        memcpy(out + o, piece, pn);
        o += pn;
        i += step;
    }
    out[o] = '\0';
    return o;
}

const char *text_excerpt(const char *s, size_t len, char *buf, size_t n)
{
    if (!n) return buf;
    int cut;
    size_t o = utf8_clean(s, len, buf, n, 0, &cut);
    if (cut && n >= 4) {
        /* make room for "..." at a character boundary */
        while (o > 0 && o + 4 > n) {
            o--;
            while (o > 0 && ((unsigned char)buf[o] & 0xc0) == 0x80) o--;
        }
        memcpy(buf + o, "...", 4);
    }
    return buf;
}

/* Messages are text: whatever input bytes a caller quoted, the stored
 * message is valid UTF-8 without control bytes (newlines kept). */
static void err_clean(Err *e)
{
    char tmp[ERR_MSG_MAX];
    int cut;
    utf8_clean(e->msg, strlen(e->msg), tmp, sizeof tmp, 1, &cut);
    memcpy(e->msg, tmp, sizeof tmp);
}

int err_set(Err *e, const char *fmt, ...)
{
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    err_clean(e);
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
    err_clean(e);
    return -1;
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x == 0) return dflt;
    return (size_t)x;
}

size_t common_max_file_bytes(void)
{
    return env_size("SERVESIM_MAX_FILE_BYTES", (size_t)1 << 30);
}

size_t common_max_line_bytes(void)
{
    return env_size("SERVESIM_MAX_LINE_BYTES", (size_t)16 << 20);
}

/* common_read_line and common_read_line_at: what names the file, or
 * (NULL) path and lineno do.  getc_unlocked: the FILE is this thread's
 * alone, and a lock per byte was most of the time reading a trace took. */
static long read_line(FILE *f, char **line, size_t *cap, size_t max, const char *what, const char *path,
                      unsigned long long lineno, Err *e)
{
    size_t len = 0;
    int c;
    char w[1100];
    if (!*line || *cap < 256) {
        *cap = 256;
        *line = xrealloc(*line, *cap);
    }
    while ((c = getc_unlocked(f)) != EOF) {
        if (c == '\n') break;
        if (c == '\0' || len >= max) {
            (*line)[len] = '\0';
            if (!what) {
                snprintf(w, sizeof w, "%s:%llu", path, lineno);
                what = w;
            }
            if (c == '\0') err_set(e, "%s: a NUL byte at column %zu; expected a text file", what, len + 1);
            else err_set(e, "%s: a line longer than %zu bytes (the line cap; %s)", what, max, COMMON_LINE_CAP_HINT);
            return -2;
        }
        if (len + 3 > *cap) { /* this byte, a '\n' and the NUL */
            *cap *= 2;
            *line = xrealloc(*line, *cap);
        }
        (*line)[len++] = (char)c;
    }
    if (c == EOF && len == 0) return -1;
    if (c == '\n') (*line)[len++] = '\n';
    (*line)[len] = '\0';
    return (long)len;
}

long common_read_line(FILE *f, char **line, size_t *cap, const char *what, Err *e)
{
    return read_line(f, line, cap, common_max_line_bytes(), what, NULL, 0, e);
}

long common_read_line_at(FILE *f, char **line, size_t *cap, size_t max, const char *path, unsigned long long lineno,
                         Err *e)
{
    return read_line(f, line, cap, max, NULL, path, lineno, e);
}

int common_parse_decimal(const char *s, double *out)
{
    /* [+-] digits [. digits] [e [+-] digits], at least one digit before
     * the exponent: strtod alone would take "inf", "nan", "0x10" and
     * leading blanks */
    const char *p = s;
    int digits = 0;
    if (*p == '+' || *p == '-') p++;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++;
    if (!digits) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return -1;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return -1;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* Temporary output files now open (outfile.c registers them): removed on
 * the way out when memory runs short, so a failed run leaves none. */
#define COMMON_TEMPS_MAX 64
static const char *temps[COMMON_TEMPS_MAX];

void common_temp_add(const char *path)
{
    for (int i = 0; i < COMMON_TEMPS_MAX; i++)
        if (!temps[i]) {
            temps[i] = path;
            return;
        }
}

void common_temp_drop(const char *path)
{
    for (int i = 0; i < COMMON_TEMPS_MAX; i++)
        if (temps[i] == path) temps[i] = NULL;
}

/* Out of memory: a message and exit status 1, never a signal (issue 35).
 * _exit, not exit: nothing more may be allocated, and no half-written
 * output is flushed. */
void common_oom(size_t n)
{
    for (int i = 0; i < COMMON_TEMPS_MAX; i++)
        if (temps[i]) unlink(temps[i]);
    fprintf(stderr, "servesim: out of memory: could not allocate %zu bytes (%.1f MiB); the process's memory "
                    "limit (ulimit -v) or the machine's memory is reached.  A run holds its requests in memory "
                    "(about 370 B each): fewer requests, a shorter duration, or more memory\n",
            n, (double)n / 1048576.0);
    fflush(stderr);
    _exit(1);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) common_oom(n);
    return p;
}

void *xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    if (!p) common_oom(count * n);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) common_oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* The noted inputs: identity and name, deduplicated by identity. */
typedef struct NotedInput {
    dev_t dev;
    ino_t ino;
    char *path;
} NotedInput;
static NotedInput *noted;
static size_t n_noted, cap_noted;
static int guard_on;

void common_guard_inputs(int on)
{
    guard_on = on;
}

void common_note_input(FILE *f, const char *path)
{
    struct stat st;
    if (!guard_on || !f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return; /* a pipe or device is not replaced */
    for (size_t i = 0; i < n_noted; i++)
        if (noted[i].dev == st.st_dev && noted[i].ino == st.st_ino) return;
    if (n_noted == cap_noted) noted = xrealloc(noted, (cap_noted = cap_noted ? 2 * cap_noted : 32) * sizeof *noted);
    noted[n_noted++] = (NotedInput){st.st_dev, st.st_ino, xstrdup(path)};
}

void common_forget_input(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return;
    for (size_t i = 0; i < n_noted; i++)
        if (noted[i].dev == st.st_dev && noted[i].ino == st.st_ino) {
            free(noted[i].path);
            noted[i] = noted[--n_noted];
            return;
        }
}

const char *common_input_same(const char *path)
{
    struct stat st;
    if (!n_noted || stat(path, &st) != 0) return NULL;
    for (size_t i = 0; i < n_noted; i++)
        if (noted[i].dev == st.st_dev && noted[i].ino == st.st_ino) return noted[i].path;
    return NULL;
}

static char **read_roots;
static int n_read_roots;

void common_read_roots(const char *const *roots, int n)
{
    for (int i = 0; i < n_read_roots; i++) free(read_roots[i]);
    free(read_roots);
    read_roots = NULL;
    n_read_roots = 0;
    if (n <= 0) return;
    read_roots = xmalloc((size_t)n * sizeof *read_roots);
    for (int i = 0; i < n; i++) read_roots[n_read_roots++] = xstrdup(roots[i]);
}

int paths_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (!strcmp(root, "/")) return 1;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

int common_read_check(const char *path, Err *e)
{
    if (!n_read_roots) return 0;
    char *real = realpath(path, NULL);
    if (!real) return 0; /* not there: the open says so */
    for (int i = 0; i < n_read_roots; i++)
        if (paths_under(real, read_roots[i])) {
            free(real);
            return 0;
        }
    err_set(e, "%s: outside what this script may read (its directory, the working directory and the bundled "
               "data); allow more with `servesim lua --allow-read PATH`", path);
    free(real);
    return -1;
}

FILE *common_open_input(const char *path, const char *mode, Err *e)
{
    if (common_read_check(path, e) < 0) return NULL;
    FILE *f = fopen(path, mode);
    if (!f) {
        err_set(e, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    common_note_input(f, path);
    return f;
}

static char *read_whole(const char *path, size_t *len_out, int text, Err *e)
{
    FILE *f = common_open_input(path, "rb", e);
    if (!f) return NULL;
    size_t max = common_max_file_bytes();
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        /* a NUL is not text: every reader would stop there (and /dev/zero
         * fails at once instead of filling memory) */
        const char *nul = text && got ? memchr(buf + len, '\0', got) : NULL;
        if (nul) {
            fclose(f);
            err_set(e, "%s: a NUL byte at offset %zu; expected a text file", path, (size_t)(nul - buf));
            free(buf);
            return NULL;
        }
        len += got;
        if (len > max) {
            fclose(f);
            free(buf);
            err_set(e, "%s: larger than %zu bytes (the file-size cap; %s)", path, max, COMMON_FILE_CAP_HINT);
            return NULL;
        }
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

char *read_file(const char *path, size_t *len_out, Err *e)
{
    return read_whole(path, len_out, 0, e);
}

char *read_text_file(const char *path, size_t *len_out, Err *e)
{
    return read_whole(path, len_out, 1, e);
}
