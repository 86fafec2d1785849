/*
 * html.c -- the report pages of `--html DIR` (see html.h).
 *
 * A page (HtmlDoc) is written as it is built into a temporary file beside
 * DIR/index.html, renamed over it once complete (after its inputs and
 * pictures are in DIR): a page of large pictures is never held in memory.  The pictures
 * go through plot_render exactly as `servesim plot` draws them, from the
 * JSON (and CSV) files saved beside the page, so every picture in a page
 * can be redrawn by hand from DIR alone; each SVG is also copied into the
 * page inline, so index.html shows everything on its own.
 *
 * Invariants: the page refers only to files inside DIR, by relative name,
 * and never to a URL; it has no scripts; every text that comes from an
 * input (names, paths, reasons) is escaped.  Numbers are printed with
 * fixed formats so the same inputs give the same bytes.  Units follow the
 * reports: latencies in the tables in ms (E2E and queueing in s), rates in
 * requests/s, costs in USD.
 */
#include "html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"
#include "outfile.h"
#include "plot.h"

#define HTML_PATH_MAX 4096
#define HTML_SCENARIO_MAX (256 * 1024) /* scenario text shown in the page; the rest is in report.json */

typedef struct HtmlDoc {
    FILE *f;            /* the page being built (out's temporary file), or NULL */
    OutFile out;
    const char *dir;
    int n_failed;       /* plots not drawn */
    Err first;          /* why the first of them was not */
} HtmlDoc;

/* ------------------------------------------------------------ helpers */

static const cJSON *jget(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* o.a.b... by a dotted path; NULL when any step is missing. */
static const cJSON *jpath(const cJSON *o, const char *path)
{
    char key[128];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key) return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = jget(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

static double jnum(const cJSON *o, const char *path)
{
    const cJSON *x = jpath(o, path);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static const char *jstr(const cJSON *o, const char *path)
{
    const cJSON *x = jpath(o, path);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A table cell with v * scale in printf format fmt, or a dash when v is
 * not a number. */
static void td_num(FILE *f, double v, double scale, const char *fmt)
{
    fputs("<td class=\"n\">", f);
    if (isfinite(v)) fprintf(f, fmt, v * scale);
    else fputs("&ndash;", f);
    fputs("</td>", f);
}

/* "a / b" in one cell, a dash for either that is not a number */
static void td_pair(FILE *f, double a, double b, double scale, const char *fmt)
{
    fputs("<td class=\"n\">", f);
    for (int k = 0; k < 2; k++) {
        double v = k ? b : a;
        if (k) fputs(" / ", f);
        if (isfinite(v)) fprintf(f, fmt, v * scale);
        else fputs("&ndash;", f);
    }
    fputs("</td>", f);
}

static void td_str(FILE *f, const char *s)
{
    fputs("<td>", f);
    if (s && *s) esc(f, s);
    else fputs("&ndash;", f);
    fputs("</td>", f);
}

/* mean ± ci95 of a sweep point's {mean, ci95} */
static void td_ci(FILE *f, const cJSON *o, double scale, const char *fmt)
{
    double m = jnum(o, "mean"), c = jnum(o, "ci95");
    fputs("<td class=\"n\">", f);
    if (isfinite(m)) {
        fprintf(f, fmt, m * scale);
        if (isfinite(c)) {
            fputs(" &plusmn; ", f);
            fprintf(f, fmt, c * scale);
        }
    } else {
        fputs("&ndash;", f);
    }
    fputs("</td>", f);
}

static void th_row(FILE *f, const char *const *heads, int n)
{
    fputs("<tr>", f);
    for (int i = 0; i < n; i++) fprintf(f, "<th>%s</th>", heads[i]);
    fputs("</tr>\n", f);
}

/* An argument as a shell would need it: bare when safe, else in single
 * quotes. */
static void shell_arg(FILE *f, const char *a)
{
    if (*a && !a[strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+@%")]) {
        esc(f, a);
        return;
    }
    fputc('\'', f);
    for (; *a; a++) {
        if (*a == '\'') fputs("'\\''", f);
        else {
            char c[2] = {*a, 0};
            esc(f, c);
        }
    }
    fputc('\'', f);
}

static int html_mkdir(const char *dir, Err *e)
{
    struct stat st;
    if (!*dir) return err_set(e, "--html: expected a directory name, got an empty one");
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        return err_set(e, "--html %s: exists and is not a directory", dir);
    }
    if (mkdir(dir, 0755) != 0) return err_set(e, "--html %s: cannot create the directory: %s", dir, strerror(errno));
    return 0;
}

/* Saves root as DIR/name (pretty-printed, atomically). */
static int html_save_json(const HtmlDoc *d, const char *name, const cJSON *root, Err *e)
{
    char path[HTML_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", d->dir, name) >= (int)sizeof path)
        return err_set(e, "--html %s: path too long", d->dir);
    char *txt = cJSON_Print(root);
    if (!txt) return err_set(e, "%s: cannot render JSON", path);
    size_t n = strlen(txt);
    char *buf = xmalloc(n + 2);
    memcpy(buf, txt, n);
    buf[n] = '\n';
    cJSON_free(txt);
    int rc = plot_write_atomic(path, buf, n + 1, e);
    free(buf);
    return rc;
}

/* --------------------------------------------------------------- page */

static const char html_style[] =
    "body{font-family:sans-serif;margin:24px auto;max-width:1240px;padding:0 16px;color:#222;background:#fff}\n"
    "h1{font-size:24px;margin:0 0 8px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}\n"
    "table{border-collapse:collapse;margin:8px 0;font-size:14px}\n"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f0f3f7}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "code,pre{font-family:monospace;font-size:13px}pre{background:#f6f6f6;padding:8px;overflow-x:auto;"
    "white-space:pre-wrap;word-break:break-all}\n"
    "figure{margin:12px 0}.plot svg{display:block;width:100%;max-width:1200px;height:auto;border:1px solid #ddd}\n"
    "figcaption{font-size:13px;color:#555}\n"
    ".pass{color:#1a7f37;font-weight:bold}.fail{color:#c0392b;font-weight:bold}"
    ".missing{color:#c0392b;border:1px dashed #c0392b;padding:8px}\n"
    "tr.best td{background:#eef8ee}\n";

static int html_open(HtmlDoc *d, const char *dir, const char *title, const HtmlCmd *cmd, Err *e)
{
    memset(d, 0, sizeof *d);
    d->dir = dir;
    if (html_mkdir(dir, e) < 0) return -1;
    char path[HTML_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/index.html", dir) >= (int)sizeof path)
        return err_set(e, "--html %s: path too long", dir);
    if (!(d->f = outfile_open(&d->out, path, e))) return -1;
    FILE *f = d->f;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
    esc(f, title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", html_style);
    esc(f, title);
    fputs("</h1>\n<p>Command: <code>servesim ", f);
    esc(f, cmd->command);
    for (int i = 0; i < cmd->argc; i++) {
        fputc(' ', f);
        shell_arg(f, cmd->argv[i]);
    }
    fputs("</code></p>\n", f);
    return 0;
}

/* Copies the SVG file `path` into the page as inline markup: without its
 * XML declaration, DOCTYPE and namespace declarations (the HTML parser
 * knows <svg>), with every id prefixed by `name-` and every reference to
 * one (href="#x", url(#x)) rewritten to match, since gnuplot gives every
 * picture the same ids; xlink:href becomes href.  The page then needs no
 * file beside it to show the picture.  Read a line at a time (no pattern
 * holds a newline; an xmlns attribute's value is skipped to its closing
 * quote whatever line that is on): a picture of millions of points is
 * never held in memory. */
static int html_inline_svg(FILE *f, const char *path, const char *name, const char *title, Err *e)
{
    FILE *in = fopen(path, "rb");
    if (!in) return err_set(e, "%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int started = 0;
    char skip_to = 0; /* inside an xmlns attribute's value: its quote */
    while ((len = getline(&line, &cap, in)) > 0) {
        const char *p = line;
        if (!started) {
            if (!(p = strstr(line, "<svg"))) continue;
            started = 1;
            fputs("<div class=\"plot\" role=\"img\" aria-label=\"", f);
            esc(f, title);
            fputs("\">", f);
        }
        while (*p) {
            if (skip_to) {
                const char *r = strchr(p, skip_to);
                if (!r) break; /* the value goes on past this line */
                p = r + 1;
                skip_to = 0;
                continue;
            }
            if (!strncmp(p, " xmlns", 6)) { /* drop the attribute: name="value" */
                const char *q = strchr(p, '=');
                char quote = q ? q[1] : 0;
                if (quote == '"' || quote == '\'') {
                    p = q + 2;
                    skip_to = quote;
                    continue;
                }
            }
            if (!strncmp(p, "xlink:href=", 11)) {
                p += 6; /* href= follows */
                continue;
            }
            if (!strncmp(p, " id='", 5) || !strncmp(p, " id=\"", 5)) {
                fwrite(p, 1, 5, f);
                fprintf(f, "%s-", name);
                p += 5;
                continue;
            }
            if (!strncmp(p, "href='#", 7) || !strncmp(p, "href=\"#", 7)) {
                fwrite(p, 1, 7, f);
                fprintf(f, "%s-", name);
                p += 7;
                continue;
            }
            if (!strncmp(p, "url(#", 5)) {
                fprintf(f, "url(#%s-", name);
                p += 5;
                continue;
            }
            fputc(*p++, f);
        }
    }
    int bad = ferror(in);
    fclose(in);
    free(line);
    if (bad || !started) return err_set(e, "%s: not an SVG picture", path);
    fputs("</div>", f);
    return 0;
}

/* Draws KIND from the files `inputs` (names in DIR) as DIR/name.svg and
 * puts it in the page; a plot that cannot be drawn leaves its reason in
 * its place and is counted. */
static void html_plot(HtmlDoc *d, const char *kind, const char *const *inputs, int n, const char *name,
                      const char *title, const char *caption)
{
    char in[PLOT_MAX_INPUTS][HTML_PATH_MAX], out[HTML_PATH_MAX], data[HTML_PATH_MAX];
    PlotJob job = {.kind = kind, .title = title, .out = out, .data_dir = data};
    for (int i = 0; i < n && i < PLOT_MAX_INPUTS; i++) {
        snprintf(in[i], sizeof in[i], "%s/%s", d->dir, inputs[i]);
        job.inputs[job.n_inputs++] = in[i];
    }
    snprintf(out, sizeof out, "%s/%s.svg", d->dir, name);
    snprintf(data, sizeof data, "%s/%s.data", d->dir, name);
    Err e = {0};
    FILE *f = d->f;
    if (plot_render(&job, &e) < 0) {
        if (!d->n_failed++) d->first = e;
        fputs("<p class=\"missing\">", f);
        esc(f, title);
        fputs(": not drawn: ", f);
        esc(f, e.msg);
        fputs("</p>\n", f);
        return;
    }
    fputs("<figure>", f);
    if (html_inline_svg(f, out, name, title, &e) < 0) {
        if (!d->n_failed++) d->first = e;
        fputs("<p class=\"missing\">", f);
        esc(f, title);
        fputs(": not drawn: ", f);
        esc(f, e.msg);
        fputs("</p>", f);
    }
    fputs("<figcaption>", f);
    esc(f, caption);
    fprintf(f, " Data and gnuplot script: <code>%s.data/</code> (<code>sh %s.data/plot.sh</code> redraws it).</figcaption>"
               "</figure>\n", name, name);
}

/* Finishes the page and writes DIR/index.html. */
static int html_close(HtmlDoc *d, Err *e)
{
    fputs("<p><small>Written by servesim. Everything this page shows is in its directory; it loads nothing from "
          "elsewhere.</small></p>\n</body>\n</html>\n", d->f);
    d->f = NULL;
    char path[HTML_PATH_MAX];
    snprintf(path, sizeof path, "%s/index.html", d->dir);
    int rc = outfile_commit(&d->out, e);
    if (rc == 0 && d->n_failed)
        rc = err_set(e, "%s written, but %d plot(s) not drawn: %s", path, d->n_failed, d->first.msg);
    return rc;
}

static void html_abort(HtmlDoc *d)
{
    if (d->f) outfile_abort(&d->out);
    d->f = NULL;
}

static void p_link(FILE *f, const char *what, const char *name)
{
    fprintf(f, "<p>%s: <a href=\"%s\">%s</a></p>\n", what, name, name);
}

/* ----------------------------------------------------------------- run */

static void run_verdict(FILE *f, const cJSON *sum)
{
    const cJSON *v = jget(sum, "slo_verdict");
    fputs("<h2>SLO verdict</h2>\n", f);
    const cJSON *pass = jget(v, "pass");
    const cJSON *checks = jget(v, "checks");
    if (!cJSON_IsBool(pass) || cJSON_GetArraySize(checks) == 0) {
        fputs("<p>No percentile SLO in the scenario: no verdict.</p>\n", f);
        return;
    }
    fprintf(f, "<p class=\"%s\">%s</p>\n<table>\n", cJSON_IsTrue(pass) ? "pass" : "fail",
            cJSON_IsTrue(pass) ? "PASS" : "FAIL");
    static const char *const h[] = {"class", "metric", "percentile", "target (ms)", "achieved (ms)", "requests",
                                    "verdict"};
    th_row(f, h, 7);
    const cJSON *c;
    cJSON_ArrayForEach(c, checks) {
        fputs("<tr>", f);
        td_str(f, jstr(c, "class"));
        td_str(f, jstr(c, "metric"));
        td_num(f, jnum(c, "percentile"), 1, "p%g");
        td_num(f, jnum(c, "target_s"), 1e3, "%.2f");
        td_num(f, jnum(c, "achieved_s"), 1e3, "%.2f");
        td_num(f, jnum(c, "requests"), 1, "%.0f");
        int ok = cJSON_IsTrue(jget(c, "pass"));
        fprintf(f, "<td class=\"%s\">%s</td></tr>\n", ok ? "pass" : "fail", ok ? "pass" : "fail");
    }
    fputs("</table>\n", f);
}

static void run_summary(FILE *f, const cJSON *sum)
{
    fputs("<h2>Summary</h2>\n<table>\n", f);
    static const struct {
        const char *label, *path, *fmt;
        double scale;
    } rows[] = {
        {"requests (finished / rejected / unfinished)", NULL, NULL, 0},
        {"throughput window (s)", "throughput.window_s", "%.3f", 1},
        {"completed requests/s", "throughput.requests_per_s", "%.3f", 1},
        {"output tokens/s", "throughput.output_tokens_per_s", "%.1f", 1},
        {"goodput requests/s", "goodput.requests_per_s", "%.3f", 1},
        {"goodput output tokens/s", "goodput.output_tokens_per_s", "%.1f", 1},
        {"SLO attainment (%)", "goodput.slo_attainment", "%.2f", 100},
        {"peak running / waiting requests", NULL, NULL, 0},
        {"KV blocks: peak used / total", NULL, NULL, 0},
        {"iterations", "iterations", "%.0f", 1},
        {"preemptions", "preemptions", "%.0f", 1},
        {"MFU / MBU (%)", NULL, NULL, 0},
        {"cost (USD)", "cost.usd", "%.4f", 1},
        {"USD per 1M good output tokens", "cost.usd_per_1m_good_tokens", "%.4f", 1},
        {"energy (J per good request)", "energy.joules_per_good_request", "%.2f", 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fprintf(f, "<tr><th>%s</th>", rows[i].label);
        if (rows[i].path) {
            td_num(f, jnum(sum, rows[i].path), rows[i].scale, rows[i].fmt);
        } else if (i == 0) {
            fprintf(f, "<td class=\"n\">%.0f (%.0f / %.0f / %.0f)</td>", jnum(sum, "requests"),
                    jnum(sum, "finished"), jnum(sum, "rejected"), jnum(sum, "unfinished"));
        } else if (i == 7) {
            td_pair(f, jnum(sum, "peak_running"), jnum(sum, "peak_waiting"), 1, "%.0f");
        } else if (i == 8) {
            td_pair(f, jnum(sum, "kv.peak_used_blocks"), jnum(sum, "kv.total_blocks"), 1, "%.0f");
        } else {
            td_pair(f, jnum(sum, "utilisation.mfu"), jnum(sum, "utilisation.mbu"), 100, "%.2f");
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n<table>\n", f);
    static const char *const h[] = {"latency", "count", "mean", "p50", "p90", "p99", "max"};
    th_row(f, h, 7);
    static const struct {
        const char *label, *key;
        double scale;
    } lat[] = {{"TTFT (ms)", "ttft_s", 1e3}, {"TPOT (ms)", "tpot_s", 1e3}, {"ITL (ms)", "itl_s", 1e3},
               {"E2E (s)", "e2e_s", 1},      {"queueing (s)", "queue_s", 1}};
    static const char *const cols[] = {"mean", "p50", "p90", "p99", "max"};
    for (size_t i = 0; i < sizeof lat / sizeof lat[0]; i++) {
        const cJSON *o = jget(sum, lat[i].key);
        fprintf(f, "<tr><th>%s</th>", lat[i].label);
        td_num(f, jnum(o, "count"), 1, "%.0f");
        for (int k = 0; k < 5; k++) td_num(f, jnum(o, cols[k]), lat[i].scale, lat[i].scale > 1 ? "%.2f" : "%.3f");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* The engine's measured error on the run's mean TTFT and TPOT
 * (summary.error_band), or why there is none. */
static void run_band(FILE *f, const cJSON *sum)
{
    const cJSON *b = jget(sum, "error_band");
    const char *note = jstr(sum, "error_band_note");
    if (!cJSON_IsObject(b)) {
        if (note) {
            fputs("<p>Model error: ", f);
            esc(f, note);
            fputs("</p>\n", f);
        }
        return;
    }
    const char *d = jstr(b, "description");
    fputs("<p>Model error on mean TTFT and TPOT: ", f);
    esc(f, d ? d : "?");
    static const char *const k[2] = {"ttft", "tpot"}, *const label[2] = {"TTFT", "TPOT"};
    for (int i = 0; i < 2; i++) {
        const cJSON *m = jget(b, k[i]);
        if (isfinite(jnum(m, "mean_ms")))
            fprintf(f, "%s mean %s %.2f ms &rarr; measured likely %.2f .. %.2f ms", i ? ";" : ".", label[i],
                    jnum(m, "mean_ms"), jnum(m, "low_ms"), jnum(m, "high_ms"));
    }
    fputs("</p>\n", f);
}

int html_run_dir(const char *dir, Err *e)
{
    return html_mkdir(dir, e);
}

int html_run(const char *dir, const HtmlCmd *cmd, const cJSON *root, uint64_t n_requests, int token_times,
             int iterations_ok, Err *e)
{
    const cJSON *scenario = jget(root, "scenario");
    const char *name = jstr(scenario, "name");
    char title[512];
    snprintf(title, sizeof title, "servesim run: %s", name ? name : "(replayed schedule)");
    HtmlDoc d;
    if (html_open(&d, dir, title, cmd, e) < 0) {
        html_abort(&d);
        return -1;
    }
    FILE *f = d.f;
    const cJSON *s = jget(root, "summary");
    const char *src = jstr(scenario, "source");
    fputs("<p>Scenario: ", f);
    if (src) {
        fputs("<code>", f);
        esc(f, src);
        fputs("</code>", f);
    } else {
        esc(f, name ? name : "(none)");
    }
    fputs("</p>\n", f);
    p_link(f, "Report (the plots' input; <code>run --json</code>)", "report.json");
    if (iterations_ok) p_link(f, "Iterations (<code>run --iterations-csv</code>)", "iterations.csv");
    run_verdict(f, s);
    run_summary(f, s);
    run_band(f, s);

    fputs("<h2>Latency distributions</h2>\n", f);
    const char *rep[] = {"report.json"}, *its[] = {"iterations.csv"};
    html_plot(&d, "cdf", rep, 1, "cdf", "TTFT, TPOT and E2E latency CDFs",
              "Empirical CDFs over every finished request; dashed lines: the SLO targets.");
    fputs("<h2>KV cache and batches over time</h2>\n", f);
    if (iterations_ok) {
        html_plot(&d, "kv", its, 1, "kv", "KV blocks used, running and waiting requests",
                  "Per iteration: KV blocks in use, requests running and waiting.");
        html_plot(&d, "batch", its, 1, "batch", "tokens per iteration and iteration time",
                  "Per iteration: prefill and decode tokens, and the iteration's duration.");
    } else {
        fputs("<p>Not drawn: per-iteration records are kept for one replica with report.iterations true.</p>\n", f);
    }
    const uint64_t n = n_requests;
    fputs("<h2>Per-request timeline</h2>\n", f);
    if (n > 0 && n <= PLOT_MAX_LANES && token_times) {
        html_plot(&d, "timeline", rep, 1, "timeline", "per-request timeline",
                  "One lane per request: queued, prefill, then each decode step.");
    } else if (n > PLOT_MAX_LANES) {
        fprintf(f, "<p>Not drawn: %llu requests (a timeline is drawn for at most %d; <code>servesim plot timeline</code> "
                   "draws the first %d of a narrowed <code>--trace-events</code> file).</p>\n", (unsigned long long)n,
                PLOT_MAX_LANES, PLOT_MAX_LANES);
    } else {
        fputs("<p>Not drawn: the report has no token times (report.token_times is false).</p>\n", f);
    }
    if (scenario) {
        char *txt = cJSON_Print(scenario);
        fputs("<h2>Scenario</h2>\n<pre>", f);
        if (txt && strlen(txt) > HTML_SCENARIO_MAX) {
            txt[HTML_SCENARIO_MAX] = '\0';
            esc(f, txt);
            fputs("\n... (cut here; the whole scenario is in report.json)", f);
        } else {
            esc(f, txt);
        }
        fputs("</pre>\n", f);
        cJSON_free(txt);
    }
    return html_close(&d, e);
}

/* --------------------------------------------------------------- sweep */

static int cmp_rate(const void *a, const void *b)
{
    double x = jnum(*(const cJSON *const *)a, "rate_per_s"), y = jnum(*(const cJSON *const *)b, "rate_per_s");
    return x < y ? -1 : x > y;
}

int html_sweep(const char *dir, const HtmlCmd *cmd, const cJSON *sw, Err *e)
{
    const cJSON *pts = jget(sw, "points");
    if (!cJSON_IsArray(pts)) return err_set(e, "--html: the sweep result has no points[]");
    const char *name = jstr(sw, "name");
    char title[512];
    snprintf(title, sizeof title, "servesim sweep: %s", name ? name : "(unnamed scenario)");
    HtmlDoc d;
    if (html_open(&d, dir, title, cmd, e) < 0 || html_save_json(&d, "sweep.json", sw, e) < 0) {
        html_abort(&d);
        return -1;
    }
    FILE *f = d.f;
    fputs("<p>Scenario: <code>", f);
    esc(f, jstr(sw, "scenario"));
    fprintf(f, "</code>; seeds per rate: %d; attainment target: %.0f%%.</p>\n", cJSON_GetArraySize(jget(sw, "seeds")),
            100 * jnum(sw, "attainment_target"));
    p_link(f, "Sweep result (the plot's input; <code>sweep --json</code>)", "sweep.json");
    const cJSON *knee = jget(sw, "knee");
    fputs("<h2>Knee</h2>\n<table>\n", f);
    fputs("<tr><th>rate of maximum goodput (req/s)</th>", f);
    td_num(f, jnum(knee, "max_goodput_rate_per_s"), 1, "%.3f");
    fputs("</tr>\n<tr><th>maximum goodput (req/s, mean &plusmn; 95% CI)</th>", f);
    td_ci(f, jget(knee, "max_goodput_rps"), 1, "%.3f");
    fprintf(f, "</tr>\n<tr><th>largest rate with mean attainment &ge; %.0f%% (req/s)</th>",
            100 * jnum(knee, "attainment_target"));
    td_num(f, jnum(knee, "max_rate_meeting_target_per_s"), 1, "%.3f");
    fputs("</tr>\n</table>\n", f);
    fputs("<h2>Goodput and throughput against arrival rate</h2>\n", f);
    const char *in[] = {"sweep.json"};
    html_plot(&d, "rate", in, 1, "rate", "goodput and completion throughput vs arrival rate",
              "Means over seeds with 95% confidence bands; vertical lines: the knee.");
    fputs("<h2>Points</h2>\n<p>The grid's rates (mean &plusmn; 95% confidence interval over seeds; the knee "
          "searches' rates are in sweep.json).</p>\n<table>\n", f);
    static const char *const h[] = {"rate (req/s)", "seeds", "completion (req/s)", "goodput (req/s)",
                                    "SLO attainment (%)", "TTFT p99 (ms)", "TPOT p99 (ms)", "E2E p99 (s)",
                                    "verdict passes"};
    th_row(f, h, 9);
    int n = cJSON_GetArraySize(pts), k = 0;
    const cJSON **v = xmalloc((size_t)(n ? n : 1) * sizeof *v);
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) v[k++] = p;
    qsort(v, (size_t)n, sizeof *v, cmp_rate);
    for (int i = 0; i < n; i++) {
        fputs("<tr>", f);
        td_num(f, jnum(v[i], "rate_per_s"), 1, "%.4g");
        td_num(f, jnum(v[i], "seeds"), 1, "%.0f");
        td_ci(f, jget(v[i], "completion_rps"), 1, "%.3f");
        td_ci(f, jget(v[i], "goodput_rps"), 1, "%.3f");
        td_ci(f, jget(v[i], "slo_attainment"), 100, "%.1f");
        td_ci(f, jget(v[i], "ttft_p99_s"), 1e3, "%.1f");
        td_ci(f, jget(v[i], "tpot_p99_s"), 1e3, "%.2f");
        td_ci(f, jget(v[i], "e2e_p99_s"), 1, "%.3f");
        td_num(f, jnum(v[i], "verdict_passes"), 1, "%.0f");
        fputs("</tr>\n", f);
    }
    free(v);
    fputs("</table>\n", f);
    return html_close(&d, e);
}

/* ---------------------------------------------------------------- plan */

int html_plan(const char *dir, const HtmlCmd *cmd, const cJSON *pl, Err *e)
{
    const cJSON *cands = jget(pl, "candidates");
    if (!cJSON_IsArray(cands)) return err_set(e, "--html: the plan result has no candidates[]");
    const char *name = jstr(pl, "name");
    char title[512];
    snprintf(title, sizeof title, "servesim plan: %s", name ? name : "(unnamed plan)");
    HtmlDoc d;
    if (html_open(&d, dir, title, cmd, e) < 0 || html_save_json(&d, "plan.json", pl, e) < 0) {
        html_abort(&d);
        return -1;
    }
    FILE *f = d.f;
    const char *rec = jstr(pl, "recommended");
    fputs("<p>Plan: <code>", f);
    esc(f, jstr(pl, "plan"));
    fputs("</code>; traffic: ", f);
    esc(f, jstr(pl, "traffic.source"));
    /* the SLO's targets that the plan gives (an absent one is not "nan") */
    fputs("; SLO:", f);
    static const char *const keys[] = {"slo.ttft_ms", "slo.tpot_ms", "slo.itl_max_ms", "slo.e2e_ms"};
    static const char *const names[] = {"TTFT", "TPOT", "max ITL", "E2E"};
    int any = 0;
    for (int k = 0; k < 4; k++)
        if (isfinite(jnum(pl, keys[k]))) {
            fprintf(f, "%s %s %g ms", any ? "," : "", names[k], jnum(pl, keys[k]));
            any = 1;
        }
    double pct = jnum(pl, "slo.percentile"), att = jnum(pl, "slo.attainment");
    if (any) fprintf(f, " at p%g", isfinite(pct) ? pct : METRICS_DEFAULT_PERCENTILE);
    if (isfinite(att)) fprintf(f, "%s attainment %g%%", any ? "," : "", 100 * att);
    fputs("; router: ", f);
    esc(f, jstr(pl, "router"));
    fputs(".</p>\n", f);
    p_link(f, "Plan result (the plot's input; <code>plan --json</code>)", "plan.json");
    fputs("<h2>Recommendation</h2>\n<p class=\"pass\">", f);
    esc(f, rec ? rec : "none: no candidate is feasible");
    if (rec && jstr(pl, "verdict")) {
        fputs(": ", f);
        esc(f, jstr(pl, "verdict"));
    }
    fputs("</p>\n<h2>Cost against latency</h2>\n", f);
    const char *in[] = {"plan.json"};
    if (rec)
        html_plot(&d, "pareto", in, 1, "pareto", "cost vs p99 latency",
                  "Feasible candidates; the line joins the Pareto frontier.");
    else
        fputs("<p>No feasible candidate: nothing to plot (each candidate's reason is in the table).</p>\n", f);
    fputs("<h2>Candidates</h2>\n<table>\n", f);
    static const char *const h[] = {"candidate", "hardware", "TP", "engine", "scheduler", "feasible", "max rate per "
                                    "replica (req/s)", "replicas", "GPUs", "USD/h", "USD per 1M good tokens",
                                    "fleet TTFT p99 (ms)", "fleet TPOT p99 (ms)", "fleet attainment (%)",
                                    "Pareto", "verdict (with the model's error)", "why"};
    th_row(f, h, 17);
    const cJSON *c;
    cJSON_ArrayForEach(c, cands) {
        const char *nm = jstr(c, "name");
        int front = 0;
        const cJSON *fn;
        cJSON_ArrayForEach(fn, jget(pl, "pareto")) front |= cJSON_IsString(fn) && nm && !strcmp(fn->valuestring, nm);
        int best = rec && nm && !strcmp(rec, nm);
        fprintf(f, "<tr%s>", best ? " class=\"best\"" : "");
        td_str(f, nm);
        td_str(f, jstr(c, "hardware"));
        td_num(f, jnum(c, "tp"), 1, "%.0f");
        td_str(f, jstr(c, "engine"));
        td_str(f, jstr(c, "scheduler"));
        int ok = cJSON_IsTrue(jget(c, "feasible"));
        fprintf(f, "<td class=\"%s\">%s</td>", ok ? "pass" : "fail", ok ? "yes" : "no");
        td_num(f, jnum(c, "max_rate_per_replica"), 1, "%.3f");
        td_num(f, jnum(c, "replicas"), 1, "%.0f");
        td_num(f, jnum(c, "gpus"), 1, "%.0f");
        td_num(f, jnum(c, "usd_per_hour"), 1, "%.2f");
        td_num(f, jnum(c, "usd_per_1m_good_tokens"), 1, "%.4f");
        td_num(f, jnum(c, "fleet.ttft_p99_s"), 1e3, "%.1f");
        td_num(f, jnum(c, "fleet.tpot_p99_s"), 1e3, "%.2f");
        td_num(f, jnum(c, "fleet.slo_attainment"), 100, "%.1f");
        td_str(f, front ? "yes" : "");
        /* passes / passes within the model's error / fails, and why */
        char verdict[1600];
        snprintf(verdict, sizeof verdict, "%s%s%s", jstr(c, "verdict") ? jstr(c, "verdict") : "",
                 ok && jstr(c, "verdict_why") ? ": " : "", ok && jstr(c, "verdict_why") ? jstr(c, "verdict_why") : "");
        td_str(f, verdict);
        const char *why = jstr(c, "reason");
        td_str(f, why ? why : best ? "recommended" : jstr(c, "why"));
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    return html_close(&d, e);
}

/* ------------------------------------------------------------ validate */

static void vstats_cells(FILE *f, const cJSON *s)
{
    td_num(f, jnum(s, "rows"), 1, "%.0f");
    td_num(f, jnum(s, "mape"), 100, "%.1f");
    td_num(f, jnum(s, "median_abs_error"), 100, "%.1f");
    td_num(f, jnum(s, "bias"), 100, "%+.1f");
    td_num(f, jnum(s, "within_10pct"), 100, "%.0f");
}

int html_validate(const char *dir, const HtmlCmd *cmd, const cJSON *v, Err *e)
{
    if (!cJSON_IsArray(jget(v, "rows"))) return err_set(e, "--html: the validate result has no rows[]");
    char title[512];
    const char *file = jstr(v, "file");
    snprintf(title, sizeof title, "servesim validate: %s", file ? file : "(measurements)");
    HtmlDoc d;
    if (html_open(&d, dir, title, cmd, e) < 0 || html_save_json(&d, "validate.json", v, e) < 0) {
        html_abort(&d);
        return -1;
    }
    FILE *f = d.f;
    fputs("<p>Measurements: <code>", f);
    esc(f, file);
    fputs("</code> (format ", f);
    esc(f, jstr(v, "format"));
    fprintf(f, "): %.0f rows, %.0f simulated, %.0f not modelled, %.0f failed.</p>\n", jnum(v, "overall.rows"),
            jnum(v, "overall.simulated"), jnum(v, "overall.not_modelled"), jnum(v, "overall.failed"));
    p_link(f, "Rows, slices and overall errors (the plot's input; <code>validate --json</code>)", "validate.json");
    fputs("<h2>Prediction error per slice</h2>\n<p>Relative error (predicted &minus; measured) / measured of mean "
          "TTFT and TPOT: MAPE, median absolute error, signed bias (%), share of rows within &plusmn;10%.</p>\n"
          "<table>\n<tr><th rowspan=\"2\">slice</th><th colspan=\"5\">TTFT</th><th colspan=\"5\">TPOT</th></tr>\n", f);
    static const char *const h[] = {"rows", "MAPE (%)", "median |err| (%)", "bias (%)", "within 10% (%)"};
    fputs("<tr>", f);
    for (int k = 0; k < 10; k++) fprintf(f, "<th>%s</th>", h[k % 5]);
    fputs("</tr>\n", f);
    const cJSON *s;
    cJSON_ArrayForEach(s, jget(v, "slices")) {
        fputs("<tr>", f);
        td_str(f, jstr(s, "slice"));
        vstats_cells(f, jget(s, "ttft"));
        vstats_cells(f, jget(s, "tpot"));
        fputs("</tr>\n", f);
    }
    fputs("<tr><th>overall</th>", f);
    vstats_cells(f, jpath(v, "overall.ttft"));
    vstats_cells(f, jpath(v, "overall.tpot"));
    fputs("</tr>\n</table>\n<h2>Measured against predicted</h2>\n", f);
    const char *in[] = {"validate.json"};
    html_plot(&d, "scatter", in, 1, "scatter", "measured vs predicted TTFT and TPOT",
              "One point per simulated row, one colour per slice; solid: y = x, dashed: ±20%.");
    return html_close(&d, e);
}
