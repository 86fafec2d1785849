/* fuzz_page.c -- random plan / sweep / validate / report text through the
 * report pages and the plots (issue 35, class 1): html_plan, html_sweep,
 * html_validate (`--html`) and plot_render (`servesim plot`) on the bytes
 * after the first, which picks the path (% 8: plan page, sweep page,
 * validate page, and plot pareto, rate, cdf, ccdf, scatter).  gnuplot is a stub
 * (SERVESIM_GNUPLOT): a shell script that keeps each params.gp and draws an
 * empty SVG, so no command of the input's can run whatever params.gp says,
 * and the harness then checks what would have reached gnuplot and the
 * browser:
 *   - params.gp: every line is a comment, one of the fixed commands, or
 *     `name = VALUE` with VALUE a number or single-quoted pieces joined by
 *     ."\n". / ."\r". (fuzz_plot.c's rule) -- no text of the input's
 *     outside single quotes, where gnuplot would run `backquotes`;
 *   - index.html: every tag and attribute is one the page writer uses
 *     (no <script>, no on*= handler, no attribute an input could open), each
 *     attribute value double-quoted without a raw '<', and every '&' starts
 *     an entity.
 * A violation aborts, which libFuzzer reports (FUZZ_PAGE_DEBUG=1 prints
 * each input's outcome). */
#include "fuzz_common.h"

#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "html.h"
#include "plot.h"

static char stub_dir[96], keep_dir[128];

static void stub_remove(void)
{
    fuzz_rm_tree(stub_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_limits();
    snprintf(stub_dir, sizeof stub_dir, "/tmp/servesim-fuzz-page-%d", (int)getpid());
    snprintf(keep_dir, sizeof keep_dir, "%s/keep", stub_dir);
    mkdir(stub_dir, 0700);
    mkdir(keep_dir, 0700);
    char stub[160];
    snprintf(stub, sizeof stub, "%s/gnuplot", stub_dir);
    FILE *f = fopen(stub, "w");
    if (!f) abort();
    /* called as: gnuplot -e "servesim_out = '...'" params.gp script.gp */
    fprintf(f, "#!/bin/sh\n"
               "out=$(printf '%%s\\n' \"$2\" | sed -e \"s/^servesim_out = '//\" -e \"s/'\\$//\" -e \"s/''/'/g\")\n"
               "n=$(ls '%s' | wc -l)\n"
               "cp \"$3\" '%s'/params.$n.gp\n"
               "printf '<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>\\n' > \"$out\"\n",
            keep_dir, keep_dir);
    fclose(f);
    chmod(stub, 0700);
    setenv("SERVESIM_GNUPLOT", stub, 1);
    atexit(stub_remove); /* best effort: libFuzzer leaves some ways with _Exit */
    return 0;
}

/* ------------------------------------------------------------ params.gp */

/* fuzz_plot.c's decoder: the quoted pieces and the two joins, nothing else. */
static int gp_string(const char *v, size_t n)
{
    size_t i = 0;
    for (;;) {
        if (i >= n || v[i] != '\'') return -1;
        for (i++;; i++) {
            if (i >= n || v[i] == '\n') return -1;
            if (v[i] == '\'') {
                if (i + 1 < n && v[i + 1] == '\'') {
                    i++;
                    continue;
                }
                i++;
                break;
            }
        }
        if (i == n) return 0;
        if (n - i >= 6 && (!memcmp(v + i, ".\"\\n\".", 6) || !memcmp(v + i, ".\"\\r\".", 6))) i += 6;
        else return -1;
    }
}

static int gp_number(const char *v, size_t n)
{
    if (!n) return -1;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789.eE+-", v[i])) return -1;
    return 0;
}

static void check_params(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) abort();
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n') line[--len] = '\0';
        if (line[0] == '#' || !strncmp(line, "set terminal ", 13) ||
            !strcmp(line, "set output (exists(\"servesim_out\") ? servesim_out : out_file)"))
            continue;
        /* name = VALUE */
        size_t k = 0;
        while ((line[k] >= 'a' && line[k] <= 'z') || (line[k] >= '0' && line[k] <= '9') || line[k] == '_') k++;
        if (k == 0 || strncmp(line + k, " = ", 3)) {
            fprintf(stderr, "params.gp: a line that is not name = value: %s\n", line);
            abort();
        }
        const char *v = line + k + 3;
        size_t vn = (size_t)len - k - 3;
        if (gp_string(v, vn) < 0 && gp_number(v, vn) < 0) {
            fprintf(stderr, "params.gp: a value neither a number nor a quoted string: %s\n", line);
            abort();
        }
    }
    free(line);
    fclose(f);
}

static int check_kept(void)
{
    int n = 0;
    DIR *d = opendir(keep_dir);
    if (!d) abort();
    struct dirent *de;
    char path[400];
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", keep_dir, de->d_name);
            check_params(path);
            unlink(path);
            n++;
        }
    closedir(d);
    return n;
}

/* ------------------------------------------------------------ the page */

static const char *const page_tags[] = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "code", "pre", "small", "table",
    "thead", "tbody", "tr", "td", "th", "div", "span", "figure", "figcaption", "img", "a", "ul", "ol", "li", "b",
    "i", "em", "strong", "br", "details", "summary", "section", "caption", "svg", "sup", "sub", NULL};
static const char *const page_attrs[] = {"class", "id", "href", "src", "alt", "lang", "charset", "colspan",
                                         "rowspan", "title", "width", "height", "xmlns", "open", "name",
                                         "content", "style", "role", "aria-label", NULL};

static int in_list(const char *const *list, const char *s, size_t n)
{
    for (int i = 0; list[i]; i++)
        if (strlen(list[i]) == n && !memcmp(list[i], s, n)) return 1;
    return 0;
}

static void page_fail(const char *why, const char *at)
{
    fprintf(stderr, "index.html: %s at: %.80s\n", why, at);
    abort();
}

static void check_page(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return; /* no page: the input was refused */
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)size + 1);
    if (!s || fread(s, 1, (size_t)size, f) != (size_t)size) abort();
    s[size] = '\0';
    fclose(f);
    for (const char *p = s; *p;) {
        if (*p == '&') {
            const char *q = p + 1;
            if (*q == '#') q++;
            while ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || (*q >= 'A' && *q <= 'F') || *q == 'x') q++;
            if (*q != ';' || q == p + 1) page_fail("a bare '&'", p);
            p = q + 1;
            continue;
        }
        if (*p != '<') {
            p++;
            continue;
        }
        if (!strncmp(p, "<!--", 4)) {
            const char *q = strstr(p, "-->");
            if (!q) page_fail("an unclosed comment", p);
            p = q + 3;
            continue;
        }
        if (!strncmp(p, "<!DOCTYPE html>", 15)) {
            p += 15;
            continue;
        }
        const char *q = p + 1;
        if (*q == '/') q++;
        const char *name = q;
        while ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9')) q++;
        if (!in_list(page_tags, name, (size_t)(q - name))) page_fail("a tag the page writer does not use", p);
        int style = q - name == 5 && !memcmp(name, "style", 5) && p[1] != '/';
        for (;;) {
            while (*q == ' ' || *q == '\n') q++;
            if (*q == '>') break;
            if (*q == '/' && q[1] == '>') {
                q++;
                break;
            }
            const char *an = q;
            while ((*q >= 'a' && *q <= 'z') || *q == '-') q++;
            if (!in_list(page_attrs, an, (size_t)(q - an))) page_fail("an attribute the page writer does not use", an);
            if (*q != '=') {
                if (*q == ' ' || *q == '>') continue; /* a bare attribute (open) */
                page_fail("an attribute without a value", an);
            }
            if (*++q != '"') page_fail("an unquoted attribute value", an);
            for (q++; *q && *q != '"'; q++)
                if (*q == '<') page_fail("a '<' inside an attribute value", an);
            if (!*q) page_fail("an unclosed attribute value", an);
            q++;
        }
        p = q + 1;
        if (style) {
            /* the page's own stylesheet: no input text in it */
            const char *end = strstr(p, "</style>");
            if (!end) page_fail("an unclosed <style>", p);
            p = end;
        }
    }
    free(s);
}

/* ------------------------------------------------------------ driver */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > FUZZ_MAX_INPUT) return -1;
    int path = data[0] % 8;
    char *text = fuzz_strdup(data + 1, size - 1);
    if (!text) return 0;
    const char *tmp = fuzz_tmpdir();
    char dir[200], page[240];
    snprintf(dir, sizeof dir, "%s/h", tmp);
    snprintf(page, sizeof page, "%s/index.html", dir);
    Err e = {0};
    if (path < 3) {
        cJSON *j = cJSON_Parse(text);
        if (j) {
            char in_name[] = "in.json", *argv[] = {in_name, NULL};
            HtmlCmd cmd = {.command = path == 0 ? "plan" : path == 1 ? "sweep" : "validate", .argc = 1, .argv = argv};
            if (path == 0) (void)html_plan(dir, &cmd, j, &e);
            else if (path == 1) (void)html_sweep(dir, &cmd, j, &e);
            else (void)html_validate(dir, &cmd, j, &e);
            cJSON_Delete(j);
            check_page(page);
        }
    } else {
        static const char *const kinds[] = {"pareto", "rate", "cdf", "ccdf", "scatter"};
        const char *in = fuzz_write_file("in.json", (const uint8_t *)text, strlen(text));
        char out[220];
        snprintf(out, sizeof out, "%s/p.svg", tmp);
        PlotJob job = {.kind = kinds[path - 3], .inputs = {in}, .n_inputs = in ? 1 : 0, .out = out};
        if (in) (void)plot_render(&job, &e);
    }
    int kept = check_kept();
    if (getenv("FUZZ_PAGE_DEBUG")) /* prints the outcome */
        fprintf(stderr, "path %d: %s; %d params.gp checked\n", path, e.msg[0] ? e.msg : "ok", kept);
    fuzz_tmpdir_remove(); /* the page's and the plot's directories with it */
    free(text);
    return 0;
}
