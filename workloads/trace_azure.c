/*
 * trace_azure.c -- lines of the Azure LLM inference trace 2023
 * (Azure/AzurePublicDataset, Splitwise ISCA'24):
 *
 *   TIMESTAMP,ContextTokens,GeneratedTokens
 *   2023-11-16 18:15:46.6805900,374,44
 *
 * The timestamp is absolute wall-clock time with up to 9 fractional digits
 * (7 in the 2023 files); a trailing time-zone suffix ("+00:00", "Z") is
 * accepted and ignored.  It becomes integer nanoseconds since 1970 here; the
 * reader turns it into the offset from the first record (the entry's
 * rebase).  Token counts are integers >= 0 (zeros are the workload's
 * business, see trace_load.c).  The format keeps no state: the header only
 * has to be right.
 */
#include <stdio.h>
#include <string.h>

#include "trace_fmt.h"
#include "trace_text.h"

#define AZURE_COLS 3
#define AZURE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define AZURE_YEAR_MIN 1970
#define AZURE_YEAR_MAX 2200

static int azure_sniff(const char *first_line)
{
    return !strncmp(trace_text_skip_blanks(first_line), AZURE_HEADER, strlen(AZURE_HEADER));
}

static int azure_header(void *st, char *line, Err *e)
{
    (void)st;
    char copy[512], *f[AZURE_COLS + 1];
    snprintf(copy, sizeof copy, "%s", line);
    int n = trace_text_csv_split(copy, f, AZURE_COLS);
    if (n != AZURE_COLS || strcmp(f[0], "TIMESTAMP") || strcmp(f[1], "ContextTokens") ||
        strcmp(f[2], "GeneratedTokens")) {
        char ex[96];
        return err_set(e, "header: got \"%s\", expected TIMESTAMP,ContextTokens,GeneratedTokens (the Azure 2023 "
                          "trace; for other columns use the csv format)", trace_text_excerpt(line, ex, sizeof ex));
    }
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char **p, int n, int64_t *out)
{
    int64_t v = 0;
    for (int k = 0; k < n; k++, (*p)++) {
        if (**p < '0' || **p > '9') return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

/* "YYYY-MM-DD HH:MM:SS[.f...][Z|+hh:mm|-hh:mm]" -> ns since 1970. */
static int parse_timestamp(const char *s, int64_t *ns)
{
    int64_t y, mo, d, h, mi, sec;
    const char *p = s;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d)) return -1;
    if (*p != ' ' && *p != 'T') return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' || digits(&p, 2, &sec)) return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return -1;
    /* a day past the month's end (2023-02-30) is not a date; it was
     * silently carried into the next month */
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap)) return -1;
    /* int64 nanoseconds since 1970 reach 2262; the reader subtracts the
     * first record's time, so the span must fit too (issue 15: years far
     * from 1970 overflowed) */
    if (y < AZURE_YEAR_MIN || y > AZURE_YEAR_MAX) return -2;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        int64_t scale = 100000000;
        while (*p >= '0' && *p <= '9') {
            if (nd < 9) frac += (*p - '0') * scale;
            scale /= 10;
            nd++;
            p++;
        }
        if (!nd) return -1;
    }
    if (*p == 'Z') p++;
    else if (*p == '+' || *p == '-') {
        p++;
        int64_t th, tm;
        if (digits(&p, 2, &th) || *p++ != ':' || digits(&p, 2, &tm)) return -1;
    }
    if (*p) return -1;
    *ns = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1000000000LL) + frac;
    return 0;
}

static int azure_parse(void *st, char *line, TraceRecord *rec, Err *e)
{
    (void)st;
    /* The excerpt is for a message only, and the split below cuts the line
     * in place: keep its head, all that text_excerpt reads of it for 96
     * bytes out (each byte in gives at least one out, so it stops before
     * byte 95 and looks at most 3 past it). */
    char ex[96], head[128];
    size_t hn = strnlen(line, sizeof head);
    memcpy(head, line, hn);
    char *f[AZURE_COLS + 1];
    int n = trace_text_csv_split(line, f, AZURE_COLS);
    if (n != AZURE_COLS)
        return err_set(e, "got %s%d column%s in \"%s\", expected 3 (TIMESTAMP,ContextTokens,GeneratedTokens)",
                       n > AZURE_COLS ? "more than " : "", n > AZURE_COLS ? AZURE_COLS : n, n == 1 ? "" : "s",
                       text_excerpt(head, hn, ex, sizeof ex));
    int tr = parse_timestamp(f[0], &rec->t_ns);
    if (tr == -2)
        return err_set(e, "TIMESTAMP: got \"%s\", expected a year in %d..%d", f[0], AZURE_YEAR_MIN, AZURE_YEAR_MAX);
    if (tr < 0)
        return err_set(e, "TIMESTAMP: got \"%s\", expected a time like 2023-11-16 18:15:46.6805900", f[0]);
    if (trace_text_parse_i64(f[1], &rec->prompt_tokens) < 0 || rec->prompt_tokens < 0 ||
        rec->prompt_tokens > TRACE_LEN_MAX)
        return err_set(e, "ContextTokens: got \"%s\", expected an integer in [0, %d]", f[1], TRACE_LEN_MAX);
    if (trace_text_parse_i64(f[2], &rec->output_tokens) < 0 || rec->output_tokens < 0 ||
        rec->output_tokens > TRACE_LEN_MAX)
        return err_set(e, "GeneratedTokens: got \"%s\", expected an integer in [0, %d]", f[2], TRACE_LEN_MAX);
    return 1;
}

static const char *const azure_exts[] = {"csv", NULL};

const TraceFormatOps trace_fmt_azure = {
    .name = "azure",
    .exts = azure_exts,
    .sniff = azure_sniff,
    .sorted = 1,
    .rebase = 1,
    .header = azure_header,
    .header_hint = " " AZURE_HEADER,
    .parse = azure_parse,
};
