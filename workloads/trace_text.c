/*
 * trace_text.c -- text helpers of the trace readers (see trace_text.h).
 * Pure functions of their arguments; the only state is the FILE position
 * trace_text_peek_line restores.
 */
#include "trace_text.h"

#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int trace_text_trim(char *s, size_t len)
{
    while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = '\0';
    const char *p = s;
    while (*p == ' ' || *p == '\t') p++;
    return *p != '\0';
}

const char *trace_text_skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

int trace_text_peek_line(FILE *f, char **line, size_t *cap, int skip)
{
    long len;
    int found = 0;
    while ((len = common_read_line(f, line, cap, "", NULL)) >= 0)
        if (trace_text_trim(*line, (size_t)len) && skip-- == 0) {
            found = 1;
            break;
        }
    rewind(f);
    return found;
}

const char *trace_text_excerpt(const char *line, char *buf, size_t n)
{
    return text_excerpt(line, strlen(line), buf, n);
}

int trace_text_parse_i64(const char *s, int64_t *out)
{
    if (!*s) return -1;
    errno = 0;
    /* the usual field, up to 18 plain digits, without strtoll: the same
     * value (it cannot overflow), and a trace has two or three per line */
    int64_t d = 0;
    int k = 0;
    while (k < 18 && s[k] >= '0' && s[k] <= '9') d = d * 10 + (s[k++] - '0');
    if (!s[k]) {
        *out = d;
        return 0;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *out = v;
    return 0;
}

int trace_text_parse_f64(const char *s, double *out)
{
    return common_parse_decimal(s, out); /* "inf", "nan", "0x10" are not times */
}

int trace_text_csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (n == max) return max + 1;
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) p[--len] = '\0';
        if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
            p[len - 1] = '\0';
            p++;
        }
        fields[n++] = p;
        if (!comma) return n;
        p = comma + 1;
    }
}
