/* fuzz_plot.c -- the one place user text reaches gnuplot (issue 35, class
 * 1): plot_param_str writes a string into params.gp.  Whatever the bytes,
 * the line must read back, as gnuplot parses it, to exactly those bytes and
 * nothing else: single-quoted pieces (a ' doubled inside), joined only by
 * ."\n". or ."\r". -- no double-quoted text of the input's (where gnuplot
 * runs `backquotes`), no text outside the quotes, one line.  A violation
 * aborts, which libFuzzer reports. */
#include "fuzz_common.h"

#include "plot_kind.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_limits();
    return 0;
}

/* Decodes the value of `x = VALUE\n` as gnuplot would; -1 when the value
 * holds anything but the quoted pieces and the two joins. */
static int decode(const char *v, size_t n, char *out, size_t *len)
{
    size_t i = 0, k = 0;
    for (;;) {
        if (i >= n || v[i] != '\'') return -1;
        for (i++;; i++) {
            if (i >= n) return -1;
            if (v[i] == '\'') {
                if (i + 1 < n && v[i + 1] == '\'') {
                    out[k++] = '\'';
                    i++;
                    continue;
                }
                i++;
                break;
            }
            if (v[i] == '\n') return -1; /* a line break inside: the command would end there */
            out[k++] = v[i];
        }
        if (i == n) break;
        if (n - i >= 6 && !memcmp(v + i, ".\"\\n\".", 6)) out[k++] = '\n';
        else if (n - i >= 6 && !memcmp(v + i, ".\"\\r\".", 6)) out[k++] = '\r';
        else return -1;
        i += 6;
    }
    *len = k;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT) return -1;
    char *s = fuzz_strdup(data, size); /* NUL-terminated: the text ends at the first NUL */
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (!f) abort();
    plot_param_str(f, "x", s);
    fclose(f);
    /* one line: "x = " VALUE "\n" */
    if (blen < 6 || memcmp(buf, "x = ", 4) || buf[blen - 1] != '\n') abort();
    if (memchr(buf, '\n', blen - 1)) abort();
    char *dec = malloc(blen + 1);
    size_t dlen = 0;
    if (!dec || decode(buf + 4, blen - 5, dec, &dlen) < 0) abort();
    if (dlen != strlen(s) || memcmp(dec, s, dlen)) abort();
    free(dec);
    free(buf);
    free(s);
    return 0;
}
