/*
 * wlcmd.c -- `servesim workload SCENARIO_OR_TRACE [--format F] [--stats]
 * [--json] [--out FILE]` (see wlcmd.h).
 *
 * Statistics use GSL (mean, sd, quantiles of sorted copies); prefix reuse
 * counts distinct (tenant, block) keys by sorting them -- past
 * WLCMD_KEYS_MAX keys, those of a hash-value sample (the keys whose low
 * bits are 0; keys are splitmix64 outputs, so uniform), scaled back: memory
 * stays bounded whatever the prompts' lengths.  Arrival statistics
 * cover the requests whose arrival is known before the run: a triggered
 * request (closed loop, session turn) arrives when its predecessor leaves,
 * which only the simulation knows.
 */
#include "wlcmd.h"

#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "rng.h"
#include "trace_reader.h"

#define WLCMD_TOKEN_BLOCK 16
/* Keys sorted at most for the distinct-block count (128 MiB); past it, a
 * hash-value sample of them (prefix_stats). */
#define WLCMD_KEYS_MAX ((uint64_t)1 << 24)

static const char usage[] =
    "usage: servesim workload SCENARIO_OR_TRACE [--format azure|mooncake|csv|json] [--stats] [--json]\n"
    "                         [--out FILE] [--seed N] [--on-error stop|skip] [--block-tokens N]\n"
    "\n"
    "Materialises a workload without simulating it and describes it: requests, duration,\n"
    "mean rate, inter-arrival CV, prompt and output length percentiles, total tokens,\n"
    "prefix reuse (blocks and distinct blocks) where the requests carry hash or token ids.\n"
    "\n"
    "  SCENARIO_OR_TRACE  a scenario (its \"workload\"), a bare workload object, or a trace\n"
    "                     file: .csv (azure or csv by its header), .jsonl (mooncake or json\n"
    "                     lines), a .json request list\n"
    "  --format F         read the file as a trace of format F\n"
    "  --stats            print the statistics (the default unless --out is given)\n"
    "  --json             print the statistics as JSON: count, duration_s, rate_per_s, interarrival_cv,\n"
    "                     prompt_tokens and output_tokens ({mean, p50, p90, p99, max}), ...\n"
    "  --out FILE         write the materialised requests as a JSON request list ('-' = stdout);\n"
    "                     {\"trace\": FILE} or {\"trace\": FILE, \"format\": \"json\"} reads it back\n"
    "  --seed N           seed for generators (default: the scenario's, else 1)\n"
    "  --on-error M       a trace's malformed lines: stop (default) or skip and count\n"
    "  --block-tokens N   block size for prefix reuse of token ids (default 16)\n";

/* ------------------------------------------------------------ stats */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void len_stats(double *v, size_t n, WlLenStats *s)
{
    if (!n) {
        memset(s, 0, sizeof *s);
        return;
    }
    s->mean = gsl_stats_mean(v, 1, n);
    gsl_sort(v, 1, n);
    s->p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.5);
    s->p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.9);
    s->p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
    s->max = v[n - 1];
}

static void prefix_stats(const Workload *w, uint32_t token_block, WlStats *st)
{
    int any_hash = 0, any_tok = 0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        any_hash |= w->reqs[i].hash_ids != NULL;
        any_tok |= request_has_ids(&w->reqs[i]);
    }
    if (!any_hash && !any_tok) return;
    for (uint32_t i = 0; i < w->n; i++)
        total += any_hash ? w->reqs[i].n_hash_ids : w->reqs[i].n_token_ids / token_block;
    uint32_t shift = 0;
    while ((total >> shift) > WLCMD_KEYS_MAX) shift++;
    const uint64_t mask = ((uint64_t)1 << shift) - 1;
    uint64_t cap = (total >> shift) + (shift ? WLCMD_KEYS_MAX / 8 + 1 : 0), k = 0, seen = 0;
    uint64_t *keys = xmalloc((cap ? cap : 1) * sizeof *keys);
#define WLCMD_KEEP(key) do { uint64_t k_ = (key); seen++; \
        if (!(k_ & mask)) { if (k == cap) { cap *= 2; keys = xrealloc(keys, cap * sizeof *keys); } keys[k++] = k_; } } while (0)
    for (uint32_t i = 0; i < w->n; i++) {
        const Request *r = &w->reqs[i];
        if (any_hash) {
            if (!st->block_tokens && r->hash_ids) st->block_tokens = r->hash_block_tokens;
            /* rng_mix is a bijection in its first argument: distinct hashes
             * of one tenant stay distinct */
            for (uint32_t b = 0; b < r->n_hash_ids; b++) WLCMD_KEEP(rng_mix(r->hash_ids[b], r->tenant));
            continue;
        }
        /* a block's key chains every token before it (a prefix match) */
        uint64_t h = rng_mix(0x7e4a47ULL, r->tenant);
        for (uint32_t b = 0; b + 1 <= r->n_token_ids / token_block; b++) {
            for (uint32_t t = 0; t < token_block; t++) h = rng_mix(h, request_token_id(r, b * token_block + t));
            WLCMD_KEEP(h);
        }
    }
    if (!any_hash) st->block_tokens = token_block;
    qsort(keys, k, sizeof *keys, cmp_u64);
    uint64_t distinct = 0;
    for (uint64_t j = 0; j < k; j++) distinct += j == 0 || keys[j] != keys[j - 1];
#undef WLCMD_KEEP
    st->blocks_total = seen;
    st->blocks_distinct = distinct << shift;
    if (st->blocks_distinct > seen) st->blocks_distinct = seen;
    st->sample_shift = shift;
    free(keys);
}

void wlcmd_stats(const Workload *w, uint32_t token_block, WlStats *st)
{
    memset(st, 0, sizeof *st);
    st->count = w->n;
    st->triggered = w->n_triggered;
    size_t n = w->n ? w->n : 1;
    double *p = xmalloc(n * sizeof *p), *o = xmalloc(n * sizeof *o), *gap = xmalloc(n * sizeof *gap);
    size_t ng = 0;
    int64_t first = -1, prev = -1;
    for (uint32_t i = 0; i < w->n; i++) {
        const Request *r = &w->reqs[i];
        p[i] = r->prompt_tokens;
        o[i] = r->output_tokens;
        st->prompt_total += r->prompt_tokens;
        st->output_total += r->output_tokens;
        if (r->triggered) continue;
        if (first < 0) first = r->t_arrive_ns;
        else gap[ng++] = (double)(r->t_arrive_ns - prev) / 1e9;
        prev = r->t_arrive_ns;
    }
    if (ng) {
        st->duration_s = (double)(prev - first) / 1e9;
        st->interarrival_mean_s = gsl_stats_mean(gap, 1, ng);
        if (st->interarrival_mean_s > 0) st->rate_per_s = 1 / st->interarrival_mean_s;
        if (ng > 1 && st->interarrival_mean_s > 0)
            st->interarrival_cv = gsl_stats_sd_m(gap, 1, ng, st->interarrival_mean_s) / st->interarrival_mean_s;
    }
    len_stats(p, w->n, &st->prompt);
    len_stats(o, w->n, &st->output);
    free(p);
    free(o);
    free(gap);
    prefix_stats(w, token_block ? token_block : WLCMD_TOKEN_BLOCK, st);
}

static void add_len(cJSON *o, const char *key, const WlLenStats *s)
{
    cJSON *l = cJSON_AddObjectToObject(o, key);
    jsonio_add_num(l, "mean", s->mean);
    jsonio_add_num(l, "p50", s->p50);
    jsonio_add_num(l, "p90", s->p90);
    jsonio_add_num(l, "p99", s->p99);
    jsonio_add_num(l, "max", s->max);
}

/* {name: requests} over a name table, or nothing when only "default". */
static void add_names(cJSON *o, const char *key, const Workload *w, const char **names, uint32_t n, int tenant)
{
    if (n <= 1) return;
    uint64_t *cnt = xcalloc(n, sizeof *cnt);
    for (uint32_t i = 0; i < w->n; i++) cnt[tenant ? w->reqs[i].tenant : w->reqs[i].cls]++;
    cJSON *t = cJSON_AddObjectToObject(o, key);
    for (uint32_t k = 0; k < n; k++) cJSON_AddNumberToObject(t, names[k], (double)cnt[k]);
    free(cnt);
}

/* LoRA adapters: requests that name one, distinct adapters and the five
 * most requested (ties: the smaller id), by one scan per place; 0 when no
 * request names an adapter. */
typedef struct AdapterTop {
    uint64_t with, distinct;
    uint32_t id[5];
    uint64_t cnt[5];
    int n;
} AdapterTop;

static int adapter_top(const Workload *w, AdapterTop *t)
{
    memset(t, 0, sizeof *t);
    uint32_t max = 0;
    for (uint32_t i = 0; i < w->n; i++) max = w->reqs[i].adapter > max ? w->reqs[i].adapter : max;
    if (!max) return 0;
    uint64_t *cnt = xcalloc((size_t)max + 1, sizeof *cnt);
    for (uint32_t i = 0; i < w->n; i++) cnt[w->reqs[i].adapter]++;
    for (uint32_t a = 1; a <= max; a++) {
        t->with += cnt[a];
        t->distinct += cnt[a] > 0;
    }
    for (t->n = 0; t->n < 5; t->n++) {
        uint32_t best = 0;
        for (uint32_t a = 1; a <= max; a++)
            if (cnt[a] > (best ? cnt[best] : 0)) best = a;
        if (!best) break;
        t->id[t->n] = best;
        t->cnt[t->n] = cnt[best];
        cnt[best] = 0;
    }
    free(cnt);
    return 1;
}

/* Requests whose client cancels them (cancel_after_ns > 0) and the mean
 * delay, seconds. */
static uint32_t cancel_count(const Workload *w, double *mean_s)
{
    uint32_t n = 0;
    double sum = 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (w->reqs[i].cancel_after_ns > 0) {
            n++;
            sum += (double)w->reqs[i].cancel_after_ns / 1e9;
        }
    *mean_s = n ? sum / n : 0;
    return n;
}

cJSON *wlcmd_stats_json(const Workload *w, const WlStats *st)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", w->kind);
    cJSON_AddStringToObject(o, "source", w->source);
    cJSON_AddNumberToObject(o, "count", st->count);
    jsonio_add_num(o, "duration_s", st->duration_s);
    jsonio_add_num(o, "rate_per_s", st->rate_per_s);
    jsonio_add_num(o, "interarrival_mean_s", st->interarrival_mean_s);
    jsonio_add_num(o, "interarrival_cv", st->interarrival_cv);
    add_len(o, "prompt_tokens", &st->prompt);
    add_len(o, "output_tokens", &st->output);
    cJSON_AddNumberToObject(o, "total_prompt_tokens", (double)st->prompt_total);
    cJSON_AddNumberToObject(o, "total_output_tokens", (double)st->output_total);
    cJSON_AddNumberToObject(o, "total_tokens", (double)(st->prompt_total + st->output_total));
    cJSON_AddNumberToObject(o, "triggered", st->triggered);
    if (st->block_tokens) {
        cJSON *px = cJSON_AddObjectToObject(o, "prefix");
        cJSON_AddNumberToObject(px, "block_tokens", st->block_tokens);
        cJSON_AddNumberToObject(px, "total_blocks", (double)st->blocks_total);
        cJSON_AddNumberToObject(px, "distinct_blocks", (double)st->blocks_distinct);
        if (st->sample_shift) cJSON_AddNumberToObject(px, "distinct_sample_fraction", ldexp(1.0, -(int)st->sample_shift));
        jsonio_add_num(px, "reuse_fraction",
                       st->blocks_total ? 1 - (double)st->blocks_distinct / (double)st->blocks_total : 0);
    }
    if (w->n_sessions) cJSON_AddNumberToObject(o, "sessions", w->n_sessions);
    double cancel_mean_s;
    uint32_t n_cancel = cancel_count(w, &cancel_mean_s);
    if (n_cancel) {
        cJSON *cx = cJSON_AddObjectToObject(o, "cancel");
        cJSON_AddNumberToObject(cx, "requests", n_cancel);
        jsonio_add_num(cx, "mean_after_s", cancel_mean_s);
    }
    add_names(o, "tenants", w, w->tenant_names, w->n_tenants, 1);
    add_names(o, "classes", w, w->class_names, w->n_classes, 0);
    AdapterTop at;
    if (adapter_top(w, &at)) {
        cJSON *aj = cJSON_AddObjectToObject(o, "adapters");
        cJSON_AddNumberToObject(aj, "requests", (double)at.with);
        cJSON_AddNumberToObject(aj, "distinct", (double)at.distinct);
        cJSON *top = cJSON_AddArrayToObject(aj, "top");
        for (int k = 0; k < at.n; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "adapter", at.id[k]);
            cJSON_AddNumberToObject(x, "requests", (double)at.cnt[k]);
            cJSON_AddItemToArray(top, x);
        }
    }
    const WlCounts *c = &w->counts;
    cJSON *cj = cJSON_AddObjectToObject(o, "read");
    cJSON_AddNumberToObject(cj, "records", (double)c->records);
    cJSON_AddNumberToObject(cj, "skipped_lines", (double)c->skipped);
    if (c->skipped) cJSON_AddStringToObject(cj, "first_skipped", c->first_skip);
    cJSON_AddNumberToObject(cj, "out_of_window", (double)c->out_of_window);
    cJSON_AddNumberToObject(cj, "sampled_out", (double)c->sampled_out);
    cJSON_AddNumberToObject(cj, "clipped_to_context", (double)c->clipped);
    cJSON_AddNumberToObject(cj, "zero_prompt_raised", (double)c->zero_prompt);
    cJSON_AddNumberToObject(cj, "zero_output_raised", (double)c->zero_output);
    return o;
}

static void print_len(FILE *f, const char *name, const WlLenStats *s)
{
    fprintf(f, "  %-8s %10.1f %9.0f %9.0f %9.0f %9.0f\n", name, s->mean, s->p50, s->p90, s->p99, s->max);
}

static void print_names(FILE *f, const char *label, const Workload *w, const char **names, uint32_t n, int tenant)
{
    if (n <= 1) return;
    uint64_t *cnt = xcalloc(n, sizeof *cnt);
    for (uint32_t i = 0; i < w->n; i++) cnt[tenant ? w->reqs[i].tenant : w->reqs[i].cls]++;
    fprintf(f, "  %-12s", label);
    for (uint32_t k = 0; k < n; k++) fprintf(f, "%s %s %llu", k ? "," : "", names[k], (unsigned long long)cnt[k]);
    fputc('\n', f);
    free(cnt);
}

void wlcmd_stats_print(const Workload *w, const WlStats *st, FILE *f)
{
    const WlCounts *c = &w->counts;
    fprintf(f, "workload: %s\n", w->source);
    fprintf(f, "  requests    %u", st->count);
    if (c->records) fprintf(f, " (of %llu records read)", (unsigned long long)c->records);
    fputc('\n', f);
    fprintf(f, "  arrivals    %.3f s, mean rate %.3f req/s, inter-arrival mean %.4f s, CV %.3f\n", st->duration_s,
            st->rate_per_s, st->interarrival_mean_s, st->interarrival_cv);
    if (st->triggered)
        fprintf(f, "  triggered   %u requests arrive when a predecessor leaves (closed loop or later turns): not in "
                   "the arrival figures\n", st->triggered);
    fprintf(f, "  tokens      prompt %llu, output %llu, total %llu\n", (unsigned long long)st->prompt_total,
            (unsigned long long)st->output_total, (unsigned long long)(st->prompt_total + st->output_total));
    fprintf(f, "  tokens         mean       p50       p90       p99       max\n");
    print_len(f, "prompt", &st->prompt);
    print_len(f, "output", &st->output);
    if (st->block_tokens)
        fprintf(f, "  prefix      %llu blocks of %u tokens, %s%llu distinct (%.1f%% reused)%s\n",
                (unsigned long long)st->blocks_total, st->block_tokens, st->sample_shift ? "about " : "",
                (unsigned long long)st->blocks_distinct,
                st->blocks_total ? 100.0 * (1 - (double)st->blocks_distinct / (double)st->blocks_total) : 0.0,
                st->sample_shift ? " (estimated from a hash sample of the blocks)" : "");
    if (w->n_sessions) fprintf(f, "  sessions    %u\n", w->n_sessions);
    double cancel_mean_s;
    uint32_t n_cancel = cancel_count(w, &cancel_mean_s);
    if (n_cancel)
        fprintf(f, "  cancels     %u requests are cancelled by their client, on average %.3f s after arriving\n",
                n_cancel, cancel_mean_s);
    print_names(f, "tenants", w, w->tenant_names, w->n_tenants, 1);
    print_names(f, "classes", w, w->class_names, w->n_classes, 0);
    AdapterTop at;
    if (adapter_top(w, &at)) {
        fprintf(f, "  adapters    %llu requests on %llu distinct adapters; most requested:", (unsigned long long)at.with,
                (unsigned long long)at.distinct);
        for (int k = 0; k < at.n; k++) fprintf(f, "%s %u (%llu)", k ? "," : "", at.id[k], (unsigned long long)at.cnt[k]);
        fputc('\n', f);
    }
    if (c->skipped)
        fprintf(f, "  skipped     %llu malformed lines; first: %s\n", (unsigned long long)c->skipped, c->first_skip);
    if (c->out_of_window || c->sampled_out)
        fprintf(f, "  dropped     %llu outside the window, %llu by sampling\n", (unsigned long long)c->out_of_window,
                (unsigned long long)c->sampled_out);
    if (c->clipped) fprintf(f, "  clipped     %llu requests to max_context\n", (unsigned long long)c->clipped);
    if (c->zero_prompt || c->zero_output)
        fprintf(f, "  zeros       %llu prompts and %llu outputs of 0 tokens raised to 1\n",
                (unsigned long long)c->zero_prompt, (unsigned long long)c->zero_output);
}

/* ------------------------------------------------------------- load */

static int first_line_is_list(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    common_note_input(f, path);
    char buf[64];
    int c, n = 0;
    while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {}
    if (c != EOF) buf[n++] = (char)c;
    while (n < (int)sizeof buf - 1 && (c = fgetc(f)) != EOF && c != '\n') buf[n++] = (char)c;
    buf[n] = '\0';
    fclose(f);
    return !strncmp(buf, "{\"requests\"", 11);
}

int wlcmd_load(const char *path, int format, int on_error_skip, int has_seed, uint64_t seed, Workload *w, Err *e)
{
    const char *dot = strrchr(path, '.');
    int is_trace = format >= 0 || (dot && (!strcmp(dot, ".csv") || !strcmp(dot, ".jsonl"))) ||
                   first_line_is_list(path);
    if (is_trace) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "trace", path);
        if (format >= 0) cJSON_AddStringToObject(o, "format", trace_reader_format_name((TraceFormat)format));
        if (on_error_skip) cJSON_AddStringToObject(o, "on_error", "skip");
        int rc = workload_from_json_dir(o, path, "", has_seed ? seed : 1, w, e);
        cJSON_Delete(o);
        return rc;
    }
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int rc;
    const cJSON *wl = cJSON_GetObjectItemCaseSensitive(root, "workload");
    if (wl) {
        int64_t sd = 1;
        if (jsonio_int(root, "seed", path, 0, 0, INT64_MAX, &sd, e) < 0) {
            cJSON_Delete(root);
            return -1;
        }
        char where[1100];
        jsonio_path(where, sizeof where, path, "workload");
        rc = workload_from_json(wl, where, has_seed ? seed : (uint64_t)sd, w, e);
    } else if (cJSON_IsObject(root) && (cJSON_GetObjectItemCaseSensitive(root, "requests") ||
                                        cJSON_GetObjectItemCaseSensitive(root, "trace") ||
                                        cJSON_GetObjectItemCaseSensitive(root, "kind"))) {
        rc = workload_from_json(root, path, has_seed ? seed : 1, w, e);
    } else {
        rc = err_set(e, "%s: expected a scenario (with \"workload\"), a workload object (\"requests\", \"trace\" or "
                        "\"kind\") or a trace (.csv, .jsonl, or --format)", path);
    }
    cJSON_Delete(root);
    return rc;
}

/* -------------------------------------------------------------- CLI */

static int bad(const char *msg, const char *arg)
{
    fprintf(stderr, "servesim: workload: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", usage);
    return 2;
}

int wlcmd_main(int argc, char **argv)
{
    const char *path = NULL, *out = NULL;
    int format = -1, stats = 0, json = 0, skip = 0, has_seed = 0;
    uint64_t seed = 1;
    uint32_t block = WLCMD_TOKEN_BLOCK;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--json")) {
            json = stats = 1;
        } else if (!strcmp(a, "--format")) {
            if (!next || (format = trace_reader_format_parse(next)) < 0)
                return bad("--format needs azure, mooncake, csv or json", next);
            i++;
        } else if (!strcmp(a, "--out")) {
            if (!next) return bad("--out needs a file name", NULL);
            out = argv[++i];
        } else if (!strcmp(a, "--on-error")) {
            if (!next || (strcmp(next, "stop") && strcmp(next, "skip")))
                return bad("--on-error needs stop or skip", next);
            skip = !strcmp(next, "skip");
            i++;
        } else if (!strcmp(a, "--seed") || !strcmp(a, "--block-tokens")) {
            char *end;
            errno = 0;
            unsigned long long v = next && *next != '-' ? strtoull(next, &end, 10) : 0;
            if (!next || *next == '-' || !*next || *end || errno || (a[2] == 'b' && (v < 1 || v > 1 << 20)))
                return bad(a[2] == 's' ? "--seed needs a non-negative integer"
                                       : "--block-tokens needs an integer in [1, 1048576]", next);
            if (a[2] == 's') {
                seed = v;
                has_seed = 1;
            } else {
                block = (uint32_t)v;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            return bad("unknown option", a);
        } else if (path) {
            return bad("one scenario or trace at a time; extra argument", a);
        } else {
            path = a;
        }
    }
    if (!path) return bad("missing SCENARIO_OR_TRACE", NULL);
    Workload w;
    Err e = {0};
    if (wlcmd_load(path, format, skip, has_seed, seed, &w, &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 1;
    }
    int rc = 0;
    if (out && workload_write_json(&w, out, &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        rc = 1;
    }
    if (rc == 0 && (stats || !out)) {
        WlStats st;
        wlcmd_stats(&w, block, &st);
        if (json) {
            cJSON *o = wlcmd_stats_json(&w, &st);
            char *s = cJSON_Print(o);
            if (s) puts(s);
            cJSON_free(s);
            cJSON_Delete(o);
        } else {
            wlcmd_stats_print(&w, &st, stdout);
        }
    }
    workload_free(&w);
    return rc;
}
