/*
 * workload.c -- a scenario's "workload" object to a finished Workload: the
 * table of workload sources and the dispatch over it, parallel-sampling
 * branches, and the JSON request-list writer (see workload.h).
 *
 * Every source registers one WlSource (wl_source.h): the key or the "kind"
 * values that select it and its build function, which appends requests
 * through the builder (wl_build.c).  Adding a source is one entry in
 * `sources` below; no source calls back into this file.
 */
#include "workload.h"
#include "outfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "wl_source.h"

/* In selection order: a key-selected source wins over "kind", the first
 * key present wins over later ones. */
static const WlSource *const sources[] = {&wl_source_list, &wl_source_trace, &wl_source_open, &wl_source_closed,
                                          &wl_source_sessions};
#define N_SOURCES (sizeof sources / sizeof *sources)
#define MAX_KINDS 32

/* Every "kind" value of the table, NULL-terminated, with the source each
 * selects. */
static size_t all_kinds(const char **kinds, const WlSource **of)
{
    size_t n = 0;
    for (size_t s = 0; s < N_SOURCES; s++)
        for (const char *const *k = sources[s]->kinds; k && *k && n + 1 < MAX_KINDS; k++) {
            of[n] = sources[s];
            kinds[n++] = *k;
        }
    kinds[n] = NULL;
    return n;
}

/* "expected "requests": [...], "trace": PATH or "kind": one of poisson, ..." */
static int no_source(const char *where, const char *const *kinds, Err *e)
{
    char what[600];
    size_t used = 0;
    for (size_t s = 0; s < N_SOURCES && used < sizeof what; s++)
        if (sources[s]->key)
            used += (size_t)snprintf(what + used, sizeof what - used, "%s\"%s\": %s", used ? ", " : "",
                                     sources[s]->key, sources[s]->key_hint);
    for (size_t k = 0; kinds[k] && used < sizeof what; k++)
        used += (size_t)snprintf(what + used, sizeof what - used, "%s%s", k ? ", " : " or \"kind\": one of ",
                                 kinds[k]);
    return err_set(e, "%s: expected %s", where, what);
}

/* Parallel sampling: a request with n > 1 samples gets n - 1 branch
 * records after the sorted list ("ID#k"), triggered by its prefill: the
 * engine forks them off it, sharing the prompt's KV. */
static void expand_samples(Workload *w)
{
    uint32_t n0 = w->n;
    for (uint32_t i = 0; i < n0; i++) {
        uint32_t ns = w->reqs[i].n_samples;
        uint32_t *link = &w->reqs[i].next_branch;
        for (uint32_t k = 1; k < ns; k++) {
            Request *b = workload_push(w);
            uint32_t bi = w->n - 1;
            const Request *pa = &w->reqs[i];
            b->prompt_tokens = pa->prompt_tokens;
            b->output_tokens = pa->output_tokens;
            b->max_output_tokens = pa->max_output_tokens;
            b->cls = pa->cls;
            b->tenant = pa->tenant;
            b->priority = pa->priority;
            b->adapter = pa->adapter;
            b->correct = pa->correct;
            b->token_ids = pa->token_ids;
            b->n_token_ids = pa->n_token_ids;
            b->hash_ids = pa->hash_ids;
            b->n_hash_ids = pa->n_hash_ids;
            b->hash_block_tokens = pa->hash_block_tokens;
            b->deadline_after_ns = pa->deadline_after_ns;
            b->t_arrive_ns = pa->t_arrive_ns;
            b->deadline_ns = pa->deadline_ns;
            b->triggered = 1;
            b->branch_of = i;
            b->n_samples = 1;
            workload_set_id(w, bi, "%s#%u", w->reqs[i].id, k);
            link = &w->reqs[i].next_branch;
            while (*link != REQ_NONE) link = &w->reqs[*link].next_branch;
            *link = bi;
        }
    }
}

int workload_from_json_dir(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *out,
                           Err *e)
{
    memset(out, 0, sizeof *out);
    if (jsonio_expect_object(wj, where, e) < 0) return -1;
    const WlSource *src = NULL;
    const char *kind = NULL;
    for (size_t s = 0; s < N_SOURCES && !src; s++)
        if (sources[s]->key && cJSON_GetObjectItemCaseSensitive(wj, sources[s]->key)) {
            src = sources[s];
            kind = src->key;
        }
    if (!src) {
        const char *kinds[MAX_KINDS];
        const WlSource *of[MAX_KINDS];
        all_kinds(kinds, of);
        if (!cJSON_GetObjectItemCaseSensitive(wj, "kind")) return no_source(where, kinds, e);
        int k;
        if (jsonio_enum(wj, "kind", where, 1, kinds, &k, e) < 0) return -1;
        src = of[k];
        kind = kinds[k];
    }
    workload_init(out, kind);
    int rc = src->build(wj, where, base_dir, seed, out, e);
    if (rc == 0) rc = workload_finish(out, where, e);
    if (rc == 0) expand_samples(out);
    if (rc < 0) workload_free(out);
    return rc;
}

int workload_from_json(const cJSON *wj, const char *where, uint64_t seed, Workload *out, Err *e)
{
    char dir[1024];
    workload_base_dir(where, dir, sizeof dir);
    return workload_from_json_dir(wj, where, dir, seed, out, e);
}

/* ------------------------------------------------------------ writer */

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* Nanoseconds as exact milliseconds: "12.5", "0", "1234.000001". */
static void put_ms(FILE *f, int64_t ns)
{
    if (ns < 0) {
        fputc('-', f);
        ns = -ns;
    }
    long long whole = ns / 1000000, frac = ns % 1000000;
    if (!frac) {
        fprintf(f, "%lld", whole);
        return;
    }
    char buf[8];
    snprintf(buf, sizeof buf, "%06lld", frac);
    for (int k = 5; k > 0 && buf[k] == '0'; k--) buf[k] = '\0';
    fprintf(f, "%lld.%s", whole, buf);
}

static void write_request(const Workload *w, const Request *r, uint32_t i, const uint32_t *pred, FILE *f)
{
    fputs("{\"id\": ", f);
    put_str(f, r->id);
    if (r->triggered) {
        fputs(", \"after\": ", f);
        put_str(f, w->reqs[pred[i]].id);
        fputs(", \"think_ms\": ", f);
        put_ms(f, r->think_ns);
    } else {
        fputs(", \"arrival_ms\": ", f);
        put_ms(f, r->t_arrive_ns);
    }
    fprintf(f, ", \"prompt_tokens\": %u, \"output_tokens\": %u", r->prompt_tokens, r->output_tokens);
    if (r->max_output_tokens) fprintf(f, ", \"max_output_tokens\": %u", r->max_output_tokens);
    if (r->tenant) {
        fputs(", \"tenant\": ", f);
        put_str(f, w->tenant_names[r->tenant]);
    }
    if (r->cls) {
        fputs(", \"class\": ", f);
        put_str(f, w->class_names[r->cls]);
    }
    uint32_t s = w->session_of ? w->session_of[i] : WL_NO_SESSION;
    if (s != WL_NO_SESSION) {
        fputs(", \"session\": ", f);
        put_str(f, w->sessions[s].name);
        if (w->sessions[s].shared_prefix_tokens)
            fprintf(f, ", \"shared_prefix_tokens\": %u", w->sessions[s].shared_prefix_tokens);
    }
    if (r->priority) fprintf(f, ", \"priority\": %d", r->priority);
    if (r->adapter) fprintf(f, ", \"adapter\": %u", r->adapter);
    if (w->deadline_rel_ns && w->deadline_rel_ns[i] >= 0) {
        fputs(", \"deadline_ms\": ", f);
        put_ms(f, w->deadline_rel_ns[i]);
    }
    if (r->correct >= 0) fprintf(f, ", \"correct\": %s", r->correct ? "true" : "false");
    if (r->cancel_after_ns > 0) {
        fputs(", \"cancel_after_ms\": ", f);
        put_ms(f, r->cancel_after_ns);
    }
    /* Session ids are derived from the session's name again on reading. */
    if (r->token_ids) { /* synthetic ones (synth_key) are not stored */
        fputs(", \"token_ids\": [", f);
        for (uint32_t k = 0; k < r->n_token_ids; k++) fprintf(f, k ? ", %u" : "%u", r->token_ids[k]);
        fputc(']', f);
    }
    if (r->hash_ids) {
        fputs(", \"hash_ids\": [", f);
        for (uint32_t k = 0; k < r->n_hash_ids; k++)
            fprintf(f, k ? ", %llu" : "%llu", (unsigned long long)r->hash_ids[k]);
        fputc(']', f);
        if (r->hash_block_tokens != WL_HASH_BLOCK_TOKENS)
            fprintf(f, ", \"hash_block_tokens\": %u", r->hash_block_tokens);
    }
    fputc('}', f);
}

int workload_write_json(const Workload *w, const char *path, Err *e)
{
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    uint32_t *pred = xmalloc((w->n ? w->n : 1) * sizeof *pred);
    for (uint32_t i = 0; i < w->n; i++)
        if (w->reqs[i].next_req != REQ_NONE) pred[w->reqs[i].next_req] = i;
    fputs("{\"requests\": [\n", f);
    for (uint32_t i = 0; i < w->n; i++) {
        write_request(w, &w->reqs[i], i, pred, f);
        fputs(i + 1 < w->n ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
    free(pred);
    return outfile_commit(&o, e);
}
