/*
 * test_trace.c -- the workload sources of issue 5 against real numbers:
 * the public traces in ../shared/data/traces (counts, mean lengths,
 * duration, Mooncake block reuse), malformed lines with file and line in
 * stop and skip modes (tests/fixtures/), transforms, open-loop generators'
 * statistics, a closed loop and sessions run through the engine (Little's
 * law, at most N in the system, turn k after turn k-1), and byte-identical
 * materialisation.  Called from suite_workload.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_statistics_double.h>

#include "cost.h"
#include "engine.h"
#include "jsonio.h"
#include "kv.h"
#include "sched.h"
#include "trace_reader.h"
#include "trace_text.h"
#include "wlcmd.h"
#include "workload.h"
#include "testhelp.h"

#define TRACES SERVESIM_DATA_DIR "/../shared/data/traces/"
#define FIX SERVESIM_DATA_DIR "/tests/fixtures/"

/* Loads a workload object given as JSON text; relative paths resolve in
 * tests/fixtures.  Prints the message when it fails unexpectedly. */
static int load(const char *text, uint64_t seed, Workload *w, Err *e)
{
    cJSON *j = jsonio_parse(text, "w.json", e);
    if (!j) return -1;
    int rc = workload_from_json_dir(j, "w.json: workload", FIX, seed, w, e);
    cJSON_Delete(j);
    return rc;
}

#define LOAD_OK(text, seed, w) do { Err _e = {0}; int _rc = load(text, seed, w, &_e); CHECK(_rc == 0); \
    if (_rc) { fprintf(stderr, "    %s\n", _e.msg); return; } } while (0)

/* ---------------------------------------------------------- real traces */

static void test_azure_conv(void)
{
    Workload w;
    LOAD_OK("{\"trace\": \"" TRACES "azure_llm_2023/AzureLLMInferenceTrace_conv.csv\"}", 1, &w);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    CHECK_INT(w.n, 19366);
    CHECK_INT(lround(st.prompt.mean), 1155);
    CHECK_INT(lround(st.output.mean), 211);
    CHECK_NEAR(st.duration_s, 3502, 0.5);
    CHECK_NEAR(st.duration_s, 3501.721937, 1e-6);      /* 18:15:46.6805900 -> 19:14:08.4025270 */
    CHECK_INT(w.reqs[0].t_arrive_ns, 0);
    CHECK_INT(w.reqs[1].t_arrive_ns, 4314579000LL);    /* 18:15:50.9951690 - 18:15:46.6805900 */
    CHECK(!strcmp(w.reqs[0].id, "0") && !strcmp(w.reqs[w.n - 1].id, "19365"));
    CHECK_INT(w.reqs[w.n - 1].prompt_tokens, 197);     /* the last line, which has no newline */
    CHECK_INT(w.reqs[w.n - 1].output_tokens, 183);
    CHECK_INT(w.counts.skipped, 0);
    CHECK_INT(w.counts.zero_output, 0);
    CHECK_INT(st.triggered, 0);
    CHECK(!strcmp(w.kind, "trace"));
    workload_free(&w);
}

/* bootstrap_block_s (issue 37): each seed another trace of the same
 * blocks -- same seed, same bytes; another seed, other arrivals -- with
 * ids saying which slot a copy fills, and no chain cut. */
static void test_trace_bootstrap(void)
{
    static const char *const text = "{\"trace\": \"" TRACES "azure_llm_2023/AzureLLMInferenceTrace_conv.csv\", "
                                    "\"limit\": 600, \"bootstrap_block_s\": 10}";
    Workload a, b, c, plain;
    LOAD_OK("{\"trace\": \"" TRACES "azure_llm_2023/AzureLLMInferenceTrace_conv.csv\", \"limit\": 600}", 1, &plain);
    LOAD_OK(text, 1, &a);
    LOAD_OK(text, 1, &b);
    LOAD_OK(text, 2, &c);
    int same = a.n == b.n, differ = a.n != c.n;
    for (uint32_t i = 0; same && i < a.n; i++)
        same = a.reqs[i].t_arrive_ns == b.reqs[i].t_arrive_ns && !strcmp(a.reqs[i].id, b.reqs[i].id) &&
               a.reqs[i].prompt_tokens == b.reqs[i].prompt_tokens;
    for (uint32_t i = 0; !differ && i < a.n && i < c.n; i++) differ = a.reqs[i].t_arrive_ns != c.reqs[i].t_arrive_ns;
    CHECK(same);
    CHECK(differ);
    /* arrivals within the original span; every id "ORIGINAL@SLOT", sorted */
    int64_t span = plain.reqs[plain.n - 1].t_arrive_ns;
    int ok = 1;
    for (uint32_t i = 0; i < a.n; i++) {
        ok &= a.reqs[i].t_arrive_ns >= 0 && a.reqs[i].t_arrive_ns <= span + 1;
        ok &= strchr(a.reqs[i].id, '@') != NULL;
        if (i) ok &= a.reqs[i].t_arrive_ns >= a.reqs[i - 1].t_arrive_ns;
    }
    CHECK(ok);
    CHECK(a.n > 300 && a.n < 1200);
    CHECK_CONTAINS(a.source, "block bootstrap of 10 s blocks");
    workload_free(&a);
    workload_free(&b);
    workload_free(&c);
    workload_free(&plain);
    /* links would be cut: refused */
    Err e = {0};
    Workload l;
    CHECK(load("{\"requests\": [{\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 4, \"output_tokens\": 2}, "
               "{\"id\": \"b\", \"after\": \"a\", \"prompt_tokens\": 4, \"output_tokens\": 2}, "
               "{\"id\": \"c\", \"arrival_ms\": 5000, \"prompt_tokens\": 4, \"output_tokens\": 2}], "
               "\"bootstrap_block_s\": 1}", 1, &l, &e) < 0);
    CHECK_CONTAINS(e.msg, "workload.bootstrap_block_s: request b is linked (\"after\" or parallel samples)");
}

static void test_azure_code(void)
{
    Workload w;
    LOAD_OK("{\"trace\": \"" TRACES "azure_llm_2023/AzureLLMInferenceTrace_code.csv\", \"format\": \"azure\"}", 1, &w);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    CHECK_INT(w.n, 8819);
    CHECK_INT(lround(st.prompt.mean), 2048);
    CHECK_INT(lround(st.output.mean), 28);
    CHECK_NEAR(st.duration_s, 3435.948, 0.001);
    workload_free(&w);
}

static void test_mooncake_conversation(void)
{
    Workload w;
    LOAD_OK("{\"trace\": \"" TRACES "mooncake_fast25/conversation_trace.jsonl\"}", 1, &w);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    CHECK_INT(w.n, 12031);
    CHECK_INT(st.block_tokens, 512);
    CHECK_INT(st.blocks_total, 288500);
    CHECK_INT(st.blocks_distinct, 182790);
    CHECK_NEAR(1 - (double)st.blocks_distinct / st.blocks_total, 0.366, 0.0005);
    /* first line: 6758 tokens in 14 blocks [0..13], 500 out */
    CHECK_INT(w.reqs[0].prompt_tokens, 6758);
    CHECK_INT(w.reqs[0].n_hash_ids, 14);
    CHECK_INT(w.reqs[0].hash_ids[13], 13);
    CHECK_INT(w.reqs[0].hash_block_tokens, 512);
    CHECK_INT(w.reqs[w.n - 1].t_arrive_ns, 3536999LL * 1000000);
    workload_free(&w);
}

/* ------------------------------------------------------ malformed lines */

static void expect_stop(const char *file, const char *fmt, const char *const *needles)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"trace\": \"%s\"%s%s%s}", file, fmt ? ", \"format\": \"" : "", fmt ? fmt : "",
             fmt ? "\"" : "");
    Workload w;
    Err e = {0};
    CHECK(load(text, 1, &w, &e) < 0);
    for (int i = 0; needles[i]; i++) CHECK_CONTAINS(e.msg, needles[i]);
}

/* A line with too many columns is quoted from its start as it was read,
 * though azure_parse splits it in place (it keeps the head the excerpt
 * needs): multi-byte and invalid bytes where the 96-byte excerpt ends. */
static void test_azure_excerpt(void)
{
    static const char *const pieces[] = {"x", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\x01"};
    char path[] = "/tmp/servesim-azure-excerpt-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++)
        for (int at = 84; at <= 100; at++) {
            char line[256];
            int n = snprintf(line, sizeof line, "2023-11-16 18:15:46.6805900,1,2,");
            while (n < at) line[n++] = 'a';
            n += snprintf(line + n, sizeof line - (size_t)n, "%s,b,c%s", pieces[k], at % 2 ? "" : ",d,e,f,g,h,i,j");
            FILE *f = fopen(path, "w");
            CHECK(f != NULL);
            if (!f) return;
            fprintf(f, "TIMESTAMP,ContextTokens,GeneratedTokens\n%s\n", line);
            fclose(f);
            char ex[96], want[200], text[256];
            snprintf(want, sizeof want, "got more than 3 columns in \"%s\"", trace_text_excerpt(line, ex, sizeof ex));
            snprintf(text, sizeof text, "{\"trace\": \"%s\", \"format\": \"azure\"}", path);
            Workload w;
            Err e = {0};
            CHECK(load(text, 1, &w, &e) < 0);
            CHECK_CONTAINS(e.msg, want);
        }
    unlink(path);
}

static void test_malformed_stop(void)
{
    expect_stop("azure_missing_column.csv", NULL, (const char *const[]){
        "tests/fixtures/azure_missing_column.csv:3: ", "got 2 columns", "expected 3", NULL});
    expect_stop("azure_negative.csv", NULL, (const char *const[]){
        "azure_negative.csv:4: ", "ContextTokens: got \"-5\"", "expected an integer in [0, ", NULL});
    expect_stop("azure_backwards.csv", NULL, (const char *const[]){
        "azure_backwards.csv:5: ", "timestamp goes backwards", "before line 4's", NULL});
    expect_stop("azure_nonnumeric.csv", NULL, (const char *const[]){
        "azure_nonnumeric.csv:3: ", "ContextTokens: got \"abc\"", NULL});
    expect_stop("mooncake_truncated.jsonl", NULL, (const char *const[]){
        "mooncake_truncated.jsonl:3: ", "malformed JSON at column", "truncated line", NULL});
    expect_stop("requests_bad.csv", "csv", (const char *const[]){
        "requests_bad.csv:3: ", "got 3 columns", "expected 4 (arrival_s,prompt_tokens,output_tokens,class)", NULL});
    expect_stop("requests_badheader.csv", NULL, (const char *const[]){
        "requests_badheader.csv:1: header: unknown column \"colour\"", "arrival_ms", NULL});
    expect_stop("list_truncated.json", NULL, (const char *const[]){
        "list_truncated.json:3: malformed JSON", NULL});
    expect_stop("nonexistent.csv", NULL, (const char *const[]){
        "w.json: workload.trace: cannot read \"nonexistent.csv\"", "tests/fixtures/nonexistent.csv", NULL});
}

static void test_malformed_skip(void)
{
    Workload w;
    /* lines 3 (column), 4 (negative), 7 (backwards), 8 (non-numeric), 9 (time) */
    LOAD_OK("{\"trace\": \"azure_mixed.csv\", \"on_error\": \"skip\"}", 1, &w);
    CHECK_INT(w.n, 3);
    CHECK_INT(w.counts.skipped, 5);
    CHECK_INT(w.counts.records, 3);
    CHECK_CONTAINS(w.counts.first_skip, "azure_mixed.csv:3: got 2 columns");
    CHECK_INT(w.reqs[2].prompt_tokens, 30);
    CHECK_INT(w.reqs[2].t_arrive_ns, 7319410000LL);     /* 18:15:54.0 - 18:15:46.68059 */
    workload_free(&w);
    /* lines 3 (truncated), 4 (backwards), 5 (missing key), 6 (negative) */
    LOAD_OK("{\"trace\": \"mooncake_mixed.jsonl\", \"on_error\": \"skip\"}", 1, &w);
    CHECK_INT(w.n, 3);
    CHECK_INT(w.counts.skipped, 4);
    CHECK_CONTAINS(w.counts.first_skip, "mooncake_mixed.jsonl:3: malformed JSON");
    workload_free(&w);
    LOAD_OK("{\"trace\": \"requests_bad.csv\", \"on_error\": \"skip\"}", 1, &w);
    CHECK_INT(w.n, 2);
    CHECK_INT(w.counts.skipped, 4);
    workload_free(&w);
    LOAD_OK("{\"trace\": \"list_truncated.json\", \"on_error\": \"skip\"}", 1, &w);
    CHECK_INT(w.n, 2);
    CHECK_INT(w.counts.skipped, 2);
    CHECK(!strcmp(w.reqs[1].id, "r3"));
    workload_free(&w);
    /* a bad header stops even in skip mode: nothing after it can be read */
    Err e = {0};
    CHECK(load("{\"trace\": \"requests_badheader.csv\", \"on_error\": \"skip\"}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "header");
    CHECK(load("{\"trace\": \"azure_mixed.csv\", \"on_error\": \"maybe\"}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "on_error");
}

/* ---------------------------------------------------- formats, transforms */

static void test_small_traces(void)
{
    Workload w;
    /* zeros raised to 1 and counted; no trailing newline */
    LOAD_OK("{\"trace\": \"azure_small.csv\"}", 1, &w);
    CHECK_INT(w.n, 4);
    CHECK_INT(w.reqs[1].output_tokens, 1);
    CHECK_INT(w.reqs[2].prompt_tokens, 1);
    CHECK_INT(w.counts.zero_output, 1);
    CHECK_INT(w.counts.zero_prompt, 1);
    CHECK_INT(w.reqs[3].prompt_tokens, 9000);
    workload_free(&w);
    /* max_context: output kept when it fits, prompt cut */
    LOAD_OK("{\"trace\": \"azure_small.csv\", \"max_context\": 4096}", 1, &w);
    CHECK_INT(w.counts.clipped, 1);
    CHECK_INT(w.reqs[3].prompt_tokens, 4096 - 3000);
    CHECK_INT(w.reqs[3].output_tokens, 3000);
    CHECK_INT(w.reqs[0].prompt_tokens, 374);
    workload_free(&w);
    LOAD_OK("{\"trace\": \"azure_small.csv\", \"max_context\": 2048}", 1, &w);
    CHECK_INT(w.reqs[3].prompt_tokens, 1);
    CHECK_INT(w.reqs[3].output_tokens, 2047);
    workload_free(&w);
    /* Mooncake: hash ids cut with the prompt */
    LOAD_OK("{\"trace\": \"mooncake_small.jsonl\", \"max_context\": 600}", 1, &w);
    CHECK_INT(w.counts.clipped, 3);
    CHECK_INT(w.reqs[1].prompt_tokens, 580);
    CHECK_INT(w.reqs[1].n_hash_ids, 2);
    CHECK_INT(w.reqs[1].t_arrive_ns, 500000000);
    workload_free(&w);
    /* plain CSV with every optional column */
    LOAD_OK("{\"trace\": \"requests.csv\"}", 1, &w);
    CHECK_INT(w.n, 3);
    CHECK_INT(w.n_tenants, 3);
    CHECK(!strcmp(w.tenant_names[w.reqs[0].tenant], "acme"));
    CHECK(!strcmp(w.class_names[w.reqs[2].cls], "batch"));
    CHECK_INT(w.reqs[0].priority, 1);
    CHECK_INT(w.reqs[2].priority, -1);
    CHECK_INT(w.reqs[0].deadline_ns, 2000000000LL);
    CHECK_INT(w.reqs[2].deadline_ns, 20000000LL + 60000000000LL); /* after the arrival */
    CHECK_INT(w.reqs[1].deadline_ns, -1);
    CHECK_INT(w.reqs[0].correct, 1);
    CHECK_INT(w.reqs[1].correct, -1);
    CHECK_INT(w.reqs[2].correct, 0);
    CHECK_INT(w.reqs[1].t_arrive_ns, 10500000);
    /* one session: b's ids extend a's */
    CHECK(w.reqs[0].synth_key && w.reqs[0].synth_key == w.reqs[1].synth_key && !w.reqs[0].token_ids);
    CHECK_INT(w.reqs[1].n_token_ids, 120);
    CHECK(!request_has_ids(&w.reqs[2]));
    workload_free(&w);
    /* our JSON list from a file: after/think, token ids, sorting */
    LOAD_OK("{\"trace\": \"list.json\"}", 1, &w);
    CHECK_INT(w.n, 3);
    CHECK(!strcmp(w.reqs[0].id, "r2") && !strcmp(w.reqs[1].id, "r0") && !strcmp(w.reqs[2].id, "r1"));
    CHECK_INT(w.reqs[0].prompt_tokens, 4);
    CHECK_INT(w.reqs[0].token_ids[3], 4);
    CHECK_INT(w.reqs[0].deadline_ns, 51000000);
    CHECK(w.reqs[2].triggered);
    CHECK_INT(w.reqs[2].think_ns, 100000000);
    CHECK_INT(w.reqs[1].next_req, 2);
    CHECK_INT(w.n_triggered, 1);
    workload_free(&w);
}

static void test_format_guess_and_paths(void)
{
    Err e = {0};
    CHECK_INT(trace_reader_format_guess(FIX "azure_small.csv", &e), TRACE_AZURE);
    CHECK_INT(trace_reader_format_guess(FIX "requests.csv", &e), TRACE_CSV);
    CHECK_INT(trace_reader_format_guess(FIX "mooncake_small.jsonl", &e), TRACE_MOONCAKE);
    CHECK_INT(trace_reader_format_guess(FIX "list.json", &e), TRACE_JSON);
    CHECK(trace_reader_format_guess(FIX "x.parquet", &e) < 0);
    CHECK_CONTAINS(e.msg, "parquet");
    char dir[256];
    workload_base_dir("a/b/s.json: workload", dir, sizeof dir);
    CHECK(!strcmp(dir, "a/b/"));
    workload_base_dir("s.json: workload", dir, sizeof dir);
    CHECK(!strcmp(dir, ""));
    /* a scenario's relative trace path resolves against its directory */
    Workload w;
    CHECK(wlcmd_load(FIX "scenario_rel.json", -1, 0, 0, 0, &w, &e) == 0);
    CHECK_INT(w.n, 4);
    CHECK_INT(w.counts.clipped, 1);
    workload_free(&w);
}

static void test_transforms(void)
{
    Workload all, w;
    const char *conv = "\"trace\": \"" TRACES "azure_llm_2023/AzureLLMInferenceTrace_conv.csv\"";
    char text[512];
    snprintf(text, sizeof text, "{%s}", conv);
    LOAD_OK(text, 1, &all);
    /* window: [600, 1200) s, shifted to start at 0 */
    snprintf(text, sizeof text, "{%s, \"window_s\": [600, 1200]}", conv);
    LOAD_OK(text, 1, &w);
    uint32_t in = 0, first = UINT32_MAX;
    for (uint32_t i = 0; i < all.n; i++)
        if (all.reqs[i].t_arrive_ns >= 600 * NS_PER_S && all.reqs[i].t_arrive_ns < 1200 * NS_PER_S) {
            if (first == UINT32_MAX) first = i;
            in++;
        }
    CHECK_INT(w.n, in);
    CHECK_INT(w.reqs[0].t_arrive_ns, all.reqs[first].t_arrive_ns - 600 * NS_PER_S);
    CHECK(!strcmp(w.reqs[0].id, all.reqs[first].id));
    CHECK_INT(w.counts.out_of_window, first);
    workload_free(&w);
    /* limit */
    snprintf(text, sizeof text, "{%s, \"limit\": 100}", conv);
    LOAD_OK(text, 1, &w);
    CHECK_INT(w.n, 100);
    CHECK_INT(w.reqs[99].t_arrive_ns, all.reqs[99].t_arrive_ns);
    workload_free(&w);
    /* time_scale 0.5 halves every arrival; rate_per_s hits the target */
    snprintf(text, sizeof text, "{%s, \"time_scale\": 0.5}", conv);
    LOAD_OK(text, 1, &w);
    CHECK_NEAR(w.reqs[w.n - 1].t_arrive_ns, all.reqs[all.n - 1].t_arrive_ns / 2.0, 1);
    workload_free(&w);
    snprintf(text, sizeof text, "{%s, \"rate_per_s\": 20}", conv);
    LOAD_OK(text, 1, &w);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    CHECK_NEAR(st.rate_per_s, 20, 1e-6);
    CHECK_NEAR(st.interarrival_cv, 1.094, 0.001);        /* scaling keeps the burstiness */
    workload_free(&w);
    /* sample: deterministic for a seed, about the fraction, a subset in order */
    snprintf(text, sizeof text, "{%s, \"sample\": 0.25}", conv);
    Workload s1, s2, s3;
    LOAD_OK(text, 9, &s1);
    LOAD_OK(text, 9, &s2);
    LOAD_OK(text, 10, &s3);
    CHECK_NEAR(s1.n, 0.25 * all.n, 4 * sqrt(0.25 * 0.75 * all.n));
    CHECK_INT(s1.n + s1.counts.sampled_out, all.n);
    int same = s1.n == s2.n, diff = s1.n != s3.n;
    for (uint32_t i = 0; same && i < s1.n; i++) same = !strcmp(s1.reqs[i].id, s2.reqs[i].id);
    for (uint32_t i = 0; !diff && i < s1.n && i < s3.n; i++) diff = strcmp(s1.reqs[i].id, s3.reqs[i].id) != 0;
    CHECK(same);
    CHECK(diff);
    workload_free(&s1);
    workload_free(&s2);
    workload_free(&s3);
    workload_free(&all);
    Err e = {0};
    CHECK(load("{\"trace\": \"azure_small.csv\", \"time_scale\": 2, \"rate_per_s\": 3}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "exclude each other");
    CHECK(load("{\"trace\": \"azure_small.csv\", \"window_s\": [5, 1]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "w.json: workload.window_s: got [5, 1]");
    CHECK(load("{\"trace\": \"list.json\", \"limit\": 2}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "list.json:3: \"after\" links cannot be combined");
    CHECK(load("{\"trace\": \"azure_small.csv\", \"speed\": 2}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "unknown key \"speed\"");
    /* trace-wide tenant and class for records without their own */
    LOAD_OK("{\"trace\": \"requests.csv\", \"tenant\": \"other\", \"class\": \"bulk\", \"deadline_ms\": 1000}", 1, &w);
    CHECK(!strcmp(w.tenant_names[w.reqs[1].tenant], "acme"));
    CHECK(!strcmp(w.class_names[w.reqs[0].cls], "chat"));
    CHECK_INT(w.reqs[1].deadline_ns, 10500000 + 1000000000LL);
    workload_free(&w);
}

/* ---------------------------------------------------------- generators */

static void gaps(const Workload *w, double *g, size_t *n)
{
    *n = 0;
    for (uint32_t i = 1; i < w->n; i++) g[(*n)++] = (w->reqs[i].t_arrive_ns - w->reqs[i - 1].t_arrive_ns) / 1e9;
}

static void test_poisson_gamma(void)
{
    Workload w;
    LOAD_OK("{\"kind\": \"poisson\", \"rate_per_s\": 4, \"count\": 100000, \"prompt_tokens\": 100, "
            "\"output_tokens\": 10}", 1, &w);
    CHECK_INT(w.n, 100000);
    double *g = malloc(w.n * sizeof *g);
    size_t n;
    gaps(&w, g, &n);
    double m = gsl_stats_mean(g, 1, n), cv = gsl_stats_sd_m(g, 1, n, m) / m;
    CHECK_REL(m, 0.25, 0.01);
    CHECK_REL(cv, 1.0, 0.02);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    CHECK_NEAR(st.interarrival_cv, cv, 1e-9);
    CHECK_NEAR(st.rate_per_s, 1 / m, 1e-9);
    workload_free(&w);
    free(g);

    LOAD_OK("{\"kind\": \"gamma\", \"rate_per_s\": 4, \"cv\": 3, \"count\": 100000, \"prompt_tokens\": 100, "
            "\"output_tokens\": 10}", 1, &w);
    g = malloc(w.n * sizeof *g);
    gaps(&w, g, &n);
    m = gsl_stats_mean(g, 1, n);
    cv = gsl_stats_sd_m(g, 1, n, m) / m;
    CHECK_REL(cv, 3.0, 0.05);
    CHECK_REL(m, 0.25, 0.03);
    workload_free(&w);
    free(g);

    LOAD_OK("{\"kind\": \"gamma\", \"rate_per_s\": 4, \"cv\": 1, \"count\": 50000, \"prompt_tokens\": 100, "
            "\"output_tokens\": 10}", 1, &w);
    g = malloc(w.n * sizeof *g);
    gaps(&w, g, &n);
    m = gsl_stats_mean(g, 1, n);
    CHECK_REL(gsl_stats_sd_m(g, 1, n, m) / m, 1.0, 0.03);
    workload_free(&w);
    free(g);

    LOAD_OK("{\"kind\": \"constant\", \"rate_per_s\": 8, \"count\": 5, \"start_ms\": 100, \"prompt_tokens\": 100, "
            "\"output_tokens\": 10}", 1, &w);
    CHECK_INT(w.reqs[0].t_arrive_ns, 100000000);
    CHECK_INT(w.reqs[4].t_arrive_ns, 100000000 + 4 * 125000000LL);
    workload_free(&w);
}

static void test_time_varying(void)
{
    Workload w;
    /* 2 req/s for 1000 s, 10 req/s for 1000 s, then nothing: count per segment ~ rate x length */
    LOAD_OK("{\"kind\": \"piecewise\", \"rates\": [[0, 2], [1000, 10], [2000, 0]], \"count\": 1000000, "
            "\"prompt_tokens\": 10, \"output_tokens\": 1}", 3, &w);
    uint32_t a = 0, b = 0;
    for (uint32_t i = 0; i < w.n; i++) *(w.reqs[i].t_arrive_ns < 1000 * NS_PER_S ? &a : &b) += 1;
    CHECK_NEAR(a, 2000, 4 * sqrt(2000));
    CHECK_NEAR(b, 10000, 4 * sqrt(10000));
    CHECK(w.reqs[w.n - 1].t_arrive_ns < 2000 * NS_PER_S);
    workload_free(&w);
    /* diurnal: mean rate over whole periods, peak quarter busier than trough quarter */
    LOAD_OK("{\"kind\": \"diurnal\", \"rate_per_s\": 5, \"amplitude\": 0.8, \"period_s\": 1000, \"duration_s\": 10000, "
            "\"prompt_tokens\": 10, \"output_tokens\": 1}", 3, &w);
    CHECK_NEAR(w.n, 50000, 4 * sqrt(50000));
    uint32_t peak = 0, trough = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        double ph = fmod(w.reqs[i].t_arrive_ns / 1e9, 1000) / 1000;
        peak += ph >= 0.125 && ph < 0.375;
        trough += ph >= 0.625 && ph < 0.875;
    }
    /* the integral of 1 + 0.8 sin over each quarter: ratio (1 + 0.8 * 0.9003) / (1 - 0.8 * 0.9003) */
    CHECK_REL((double)peak / trough, (1 + 0.8 * 0.900316) / (1 - 0.8 * 0.900316), 0.05);
    workload_free(&w);
    /* ON/OFF: nothing in OFF periods; the ON rate holds */
    LOAD_OK("{\"kind\": \"onoff\", \"rate_per_s\": 20, \"on_s\": 2, \"off_s\": 8, \"duration_s\": 1000, "
            "\"prompt_tokens\": 10, \"output_tokens\": 1}", 3, &w);
    int off_hits = 0;
    for (uint32_t i = 0; i < w.n; i++) off_hits += fmod(w.reqs[i].t_arrive_ns / 1e9, 10) >= 2;
    CHECK_INT(off_hits, 0);
    CHECK_NEAR(w.n, 20 * 2 * 100, 4 * sqrt(4000)); /* 100 cycles of 2 s ON at 20 req/s */
    workload_free(&w);
    Err e = {0};
    CHECK(load("{\"kind\": \"piecewise\", \"rates\": [[5, 2]], \"count\": 3, \"prompt_tokens\": 1, "
               "\"output_tokens\": 1}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "w.json: workload.rates[0]: got t_s 5, expected the first breakpoint at 0");
    CHECK(load("{\"kind\": \"poisson\", \"rate_per_s\": 2, \"prompt_tokens\": 1, \"output_tokens\": 1}", 1, &w,
               &e) < 0);
    CHECK_CONTAINS(e.msg, "\"count\"");
}

static void test_lengths_and_mix(void)
{
    Workload w;
    LOAD_OK("{\"kind\": \"poisson\", \"rate_per_s\": 10, \"count\": 20000,"
            " \"prompt_tokens\": {\"dist\": \"empirical\", \"trace\": \"" TRACES
            "azure_llm_2023/AzureLLMInferenceTrace_conv.csv\", \"field\": \"prompt\"},"
            " \"output_tokens\": {\"dist\": \"empirical\", \"trace\": \"" TRACES
            "azure_llm_2023/AzureLLMInferenceTrace_conv.csv\", \"format\": \"azure\", \"field\": \"output\","
            " \"max\": 500},"
            " \"mix\": [{\"weight\": 3, \"class\": \"chat\"}, {\"weight\": 1, \"class\": \"batch\", \"tenant\": \"b\","
            " \"priority\": -1, \"deadline_ms\": 60000}]}", 5, &w);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    CHECK_REL(st.prompt.mean, 1154.7, 0.03);
    CHECK(st.output.max <= 500);
    uint32_t batch = workload_class(&w, "batch"), n_batch = 0, ok = 1;
    for (uint32_t i = 0; i < w.n; i++) {
        const Request *r = &w.reqs[i];
        if (r->cls == batch) {
            n_batch++;
            ok &= r->priority == -1 && r->deadline_ns == r->t_arrive_ns + 60 * NS_PER_S &&
                  !strcmp(w.tenant_names[r->tenant], "b");
        } else {
            ok &= r->priority == 0 && r->deadline_ns == -1 && r->tenant == 0;
        }
    }
    CHECK(ok);
    CHECK_NEAR(n_batch, 5000, 4 * sqrt(20000 * 0.25 * 0.75));
    CHECK_INT(w.n_classes, 3);
    workload_free(&w);
    /* a mix never moves arrivals or lengths */
    Workload a, b;
    LOAD_OK("{\"kind\": \"poisson\", \"rate_per_s\": 4, \"count\": 100, \"prompt_tokens\": {\"dist\": \"uniform\","
            " \"min\": 1, \"max\": 99}, \"output_tokens\": 5}", 2, &a);
    LOAD_OK("{\"kind\": \"poisson\", \"rate_per_s\": 4, \"count\": 100, \"prompt_tokens\": {\"dist\": \"uniform\","
            " \"min\": 1, \"max\": 99}, \"output_tokens\": 5, \"mix\": [{\"weight\": 1, \"class\": \"x\"},"
            " {\"weight\": 1, \"class\": \"y\"}]}", 2, &b);
    int same = 1;
    for (uint32_t i = 0; i < a.n; i++)
        same &= a.reqs[i].t_arrive_ns == b.reqs[i].t_arrive_ns && a.reqs[i].prompt_tokens == b.reqs[i].prompt_tokens;
    CHECK(same);
    workload_free(&a);
    workload_free(&b);
}

/* ----------------------------------------------------- through the engine */

static int run_engine(Workload *w, Err *e)
{
    EngineConfig cfg = {0};
    SchedConfig sc = {.kind = SCHED_CONTINUOUS, .max_running = 256, .token_budget = 2048};
    KvConfig kc = {.capacity_bytes = 1099511627776.0, .block_tokens = 16, .bytes_per_token = 147456,
                   .reserve = KV_RESERVE_FINAL};
    LinearCostCfg lc = {26.22e-3, 30.4e-6, 3e-9};
    if (sched_new(&sc, &cfg.sched, e) < 0 || kv_pool_new(&kc, &cfg.kv, e) < 0 || cost_linear_new(&lc, &cfg.cost, e) < 0)
        return -1;
    Engine *eng = engine_new(w->reqs, w->n, &cfg, e);
    if (!eng) return -1;
    int rc = engine_run(eng, e);
    engine_free(eng);
    return rc;
}

typedef struct Edge {
    int64_t t;
    int d;
} Edge;

static int cmp_edge(const void *a, const void *b)
{
    const Edge *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->d - y->d; /* departures (-1) before arrivals at one instant */
}

/* The most requests in the system (arrived, not yet finished) at once. */
static int max_in_system(const Workload *w)
{
    Edge *ed = malloc(2 * w->n * sizeof *ed);
    for (uint32_t i = 0; i < w->n; i++) {
        ed[2 * i] = (Edge){w->reqs[i].t_arrive_ns, 1};
        ed[2 * i + 1] = (Edge){w->reqs[i].t_finish_ns, -1};
    }
    qsort(ed, 2 * w->n, sizeof *ed, cmp_edge);
    int cur = 0, mx = 0;
    for (uint32_t k = 0; k < 2 * w->n; k++) {
        cur += ed[k].d;
        if (cur > mx) mx = cur;
    }
    free(ed);
    return mx;
}

static void closed_loop_case(const char *think, uint64_t seed)
{
    char text[512];
    snprintf(text, sizeof text, "{\"kind\": \"closed_loop\", \"clients\": 8, \"count\": 4000, \"think_ms\": %s, "
             "\"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 64, \"max\": 1024}, "
             "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 8, \"max\": 128}}", think);
    Workload w;
    LOAD_OK(text, seed, &w);
    CHECK_INT(w.n, 4000);
    CHECK_INT(w.n_triggered, 4000 - 8);
    Err e = {0};
    CHECK(run_engine(&w, &e) == 0);
    if (e.msg[0]) fprintf(stderr, "    %s\n", e.msg);
    uint32_t finished = 0, order_ok = 1;
    for (uint32_t i = 0; i < w.n; i++) {
        const Request *r = &w.reqs[i];
        finished += r->state == REQ_FINISHED;
        if (r->next_req != REQ_NONE)
            order_ok &= w.reqs[r->next_req].t_arrive_ns == r->t_finish_ns + w.reqs[r->next_req].think_ns;
    }
    CHECK_INT(finished, 4000);
    CHECK(order_ok);
    int mx = max_in_system(&w);
    CHECK(mx <= 8);
    CHECK_INT(mx, 8);
    /* Little's law, N = X (R + Z), over the window in which every client is
     * still active: from 0 to the earliest of the clients' last completions
     * (random lengths make clients end up to a few percent apart). */
    int64_t t_w = INT64_MAX;
    for (uint32_t i = 0; i < w.n; i++) {
        if (w.reqs[i].triggered) continue;
        uint32_t k = i;
        while (w.reqs[k].next_req != REQ_NONE) k = w.reqs[k].next_req;
        if (w.reqs[k].t_finish_ns < t_w) t_w = w.reqs[k].t_finish_ns;
    }
    double r_sum = 0, z_sum = 0;
    uint32_t done = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        const Request *r = &w.reqs[i];
        if (r->t_finish_ns > t_w) continue;
        done++;
        r_sum += (double)(r->t_finish_ns - r->t_arrive_ns) / 1e9;
        z_sum += r->triggered ? (double)r->think_ns / 1e9 : 0;
    }
    double x = done / (t_w / 1e9), rr = r_sum / done, z = z_sum / done;
    CHECK(done > 3500);
    CHECK_REL(x * (rr + z), 8.0, 0.01);
    workload_free(&w);
}

static void test_closed_loop_engine(void)
{
    closed_loop_case("0", 1);
    closed_loop_case("{\"dist\": \"exponential\", \"mean\": 200}", 2);
    Workload w;
    Err e = {0};
    CHECK(load("{\"kind\": \"closed_loop\", \"clients\": 0, \"count\": 4, \"prompt_tokens\": 1, \"output_tokens\": 1}",
               1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "w.json: workload.clients");
}

static void test_sessions(void)
{
    Workload w;
    LOAD_OK("{\"kind\": \"sessions\", \"sessions\": 50, \"turns\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 6},"
            " \"rate_per_s\": 2, \"first_prompt_tokens\": {\"dist\": \"uniform\", \"min\": 50, \"max\": 500},"
            " \"new_tokens_per_turn\": {\"dist\": \"uniform\", \"min\": 10, \"max\": 100},"
            " \"output_tokens\": {\"dist\": \"uniform\", \"min\": 5, \"max\": 50}, \"think_ms\": 1500,"
            " \"system_prompt_tokens\": 32, \"tenant\": \"t\"}", 4, &w);
    CHECK_INT(w.n_sessions, 50);
    int chain_ok = 1, share_ok = 1, sys_ok = 1, sep_ok = 1, synth_ok = 1;
    const Request *first = NULL;
    for (uint32_t i = 0; i < w.n; i++) {
        const Request *r = &w.reqs[i];
        /* ids are derived from (session, position), never stored (issue 36) */
        synth_ok &= !r->token_ids && r->synth_key && r->synth_shared == 32 && request_has_ids(r);
        if (!r->triggered) {
            if (first) {
                for (uint32_t p = 0; p < 32; p++) sys_ok &= request_token_id(first, p) == request_token_id(r, p);
                int same = 1;
                for (uint32_t p = 32; p < 40; p++) same &= request_token_id(first, p) == request_token_id(r, p);
                sep_ok &= !same;
            }
            first = r;
        }
        if (r->next_req == REQ_NONE) continue;
        const Request *nx = &w.reqs[r->next_req];
        /* turn k = turn k-1's prompt + its answer + new tokens, its ids extending them */
        chain_ok &= nx->prompt_tokens >= r->prompt_tokens + r->output_tokens + 10 &&
                    nx->prompt_tokens <= r->prompt_tokens + r->output_tokens + 100 && nx->triggered &&
                    nx->think_ns == 1500 * NS_PER_MS && w.session_of[i] == w.session_of[r->next_req];
        share_ok &= nx->synth_key == r->synth_key && nx->n_token_ids == nx->prompt_tokens;
        /* the next prompt repeats this turn's prompt and answer */
        for (uint32_t p = 0; p < r->prompt_tokens + r->output_tokens; p++)
            share_ok &= request_token_id(nx, p) == request_token_id(r, p);
    }
    CHECK(synth_ok);
    CHECK(chain_ok);
    CHECK(share_ok);
    CHECK(sys_ok);
    CHECK(sep_ok);
    CHECK(!strcmp(w.tenant_names[w.reqs[0].tenant], "t"));
    WlStats st;
    wlcmd_stats(&w, 16, &st);
    CHECK(st.blocks_distinct < st.blocks_total);
    Err e = {0};
    CHECK(run_engine(&w, &e) == 0);
    int arrive_ok = 1;
    for (uint32_t i = 0; i < w.n; i++)
        if (w.reqs[i].next_req != REQ_NONE)
            arrive_ok &= w.reqs[w.reqs[i].next_req].t_arrive_ns == w.reqs[i].t_finish_ns + 1500 * NS_PER_MS;
    CHECK(arrive_ok);
    workload_free(&w);
    /* max_prompt_tokens ends a conversation before it outgrows the context */
    LOAD_OK("{\"kind\": \"sessions\", \"sessions\": 5, \"turns\": 50, \"rate_per_s\": 1, \"first_prompt_tokens\": 100,"
            " \"new_tokens_per_turn\": 100, \"output_tokens\": 100, \"max_prompt_tokens\": 1000}", 1, &w);
    CHECK_INT(w.n, 5 * 5); /* 100, 300, 500, 700, 900 */
    workload_free(&w);
}

static void test_list_links(void)
{
    Workload w;
    Err e = {0};
    CHECK(load("{\"requests\": [{\"id\": \"a\", \"after\": \"b\", \"prompt_tokens\": 1, \"output_tokens\": 1},"
               "{\"id\": \"b\", \"after\": \"a\", \"prompt_tokens\": 1, \"output_tokens\": 1},"
               "{\"id\": \"c\", \"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "cycle");
    CHECK(load("{\"requests\": [{\"id\": \"a\", \"after\": \"zz\", \"prompt_tokens\": 1, \"output_tokens\": 1}]}",
               1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "no request has id \"zz\"");
    CHECK(load("{\"requests\": [{\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1},"
               "{\"id\": \"b\", \"after\": \"a\", \"prompt_tokens\": 1, \"output_tokens\": 1},"
               "{\"id\": \"c\", \"after\": \"a\", \"prompt_tokens\": 1, \"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "\"a\" already triggers \"b\"");
    CHECK(load("{\"requests\": [{\"id\": \"a\", \"arrival_ms\": 0, \"after\": \"b\", \"prompt_tokens\": 1, "
               "\"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "w.json: workload.requests[0]: \"arrival_ms\" and \"after\" exclude each other");
    CHECK(load("{\"requests\": [{\"arrival_ms\": 0, \"hash_ids\": [1, 2], \"prompt_tokens\": 2000, "
               "\"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "hash_ids: got 2 block hashes, expected ceil(2000 prompt tokens / 512) = 4");
}

/* ------------------------------------------------------- materialising */

static char *slurp(const char *path)
{
    Err e;
    return read_file(path, NULL, &e);
}

static void test_materialise_identical(void)
{
    const char *gens[] = {
        "{\"kind\": \"poisson\", \"rate_per_s\": 3, \"count\": 300, \"prompt_tokens\": {\"dist\": \"lognormal\","
        " \"median\": 500, \"sigma\": 0.7}, \"output_tokens\": {\"dist\": \"normal\", \"mean\": 100, \"std\": 30},"
        " \"mix\": [{\"weight\": 2, \"class\": \"a\"}, {\"weight\": 1, \"class\": \"b\", \"deadline_ms\": 2500.5}]}",
        "{\"kind\": \"sessions\", \"sessions\": 20, \"turns\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 5},"
        " \"rate_per_s\": 1, \"first_prompt_tokens\": 200, \"new_tokens_per_turn\": 50, \"output_tokens\": 40,"
        " \"think_ms\": {\"dist\": \"lognormal\", \"median\": 800, \"sigma\": 1}, \"system_prompt_tokens\": 64,"
        " \"mix\": [{\"weight\": 1, \"tenant\": \"x\"}, {\"weight\": 1, \"tenant\": \"y\", \"priority\": 3}]}",
        "{\"kind\": \"closed_loop\", \"clients\": 4, \"count\": 40, \"think_ms\": {\"dist\": \"uniform\", \"min\": 0,"
        " \"max\": 10}, \"prompt_tokens\": 100, \"output_tokens\": 10, \"class\": \"bench\"}",
        "{\"trace\": \"mooncake_small.jsonl\"}",
        "{\"trace\": \"requests.csv\"}",
        "{\"trace\": \"list.json\"}",
    };
    char dir[] = "/tmp/servesim_wlXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char p1[256], p2[256], p3[256];
    snprintf(p1, sizeof p1, "%s/a.json", dir);
    snprintf(p2, sizeof p2, "%s/b.json", dir);
    snprintf(p3, sizeof p3, "%s/c.json", dir);
    for (size_t g = 0; g < sizeof gens / sizeof *gens; g++) {
        Workload a, b, c;
        Err e = {0};
        LOAD_OK(gens[g], 77, &a);
        LOAD_OK(gens[g], 77, &b);
        CHECK(workload_write_json(&a, p1, &e) == 0);
        CHECK(workload_write_json(&b, p2, &e) == 0);
        char *s1 = slurp(p1), *s2 = slurp(p2);
        CHECK(s1 && s2 && !strcmp(s1, s2));
        /* read back as a trace: the same requests, the same bytes */
        char text[512];
        snprintf(text, sizeof text, "{\"trace\": \"%s\"}", p1);
        LOAD_OK(text, 1, &c);
        CHECK_INT(c.n, a.n);
        CHECK(workload_write_json(&c, p3, &e) == 0);
        char *s3 = slurp(p3);
        CHECK(s3 && s1 && !strcmp(s1, s3));
        int same = 1;
        for (uint32_t i = 0; i < a.n && i < c.n; i++) {
            const Request *x = &a.reqs[i], *y = &c.reqs[i];
            same &= x->t_arrive_ns == y->t_arrive_ns && x->prompt_tokens == y->prompt_tokens &&
                    x->output_tokens == y->output_tokens && x->deadline_ns == y->deadline_ns &&
                    x->next_req == y->next_req && x->think_ns == y->think_ns && x->n_token_ids == y->n_token_ids &&
                    x->n_hash_ids == y->n_hash_ids && x->priority == y->priority && !strcmp(x->id, y->id) &&
                    request_has_ids(x) == request_has_ids(y);
            for (uint32_t p = 0; same && request_has_ids(x) && p < x->n_token_ids; p++)
                same &= request_token_id(x, p) == request_token_id(y, p);
        }
        CHECK(same);
        if (!same || !s1 || !s3 || strcmp(s1, s3)) fprintf(stderr, "    generator %zu\n", g);
        free(s1);
        free(s2);
        free(s3);
        workload_free(&a);
        workload_free(&b);
        workload_free(&c);
    }
    /* another seed, other bytes */
    Workload a;
    LOAD_OK(gens[0], 78, &a);
    Err e = {0};
    CHECK(workload_write_json(&a, p2, &e) == 0);
    Workload b;
    LOAD_OK(gens[0], 77, &b);
    CHECK(workload_write_json(&b, p1, &e) == 0);
    char *s1 = slurp(p1), *s2 = slurp(p2);
    CHECK(s1 && s2 && strcmp(s1, s2));
    free(s1);
    free(s2);
    workload_free(&a);
    workload_free(&b);
    unlink(p1);
    unlink(p2);
    unlink(p3);
    rmdir(dir);
}

static void test_stats_json_keys(void)
{
    Workload w;
    LOAD_OK("{\"trace\": \"mooncake_small.jsonl\"}", 1, &w);
    WlStats st;
    wlcmd_stats(&w, 0, &st);
    cJSON *o = wlcmd_stats_json(&w, &st);
    const char *keys[] = {"count", "duration_s", "rate_per_s", "interarrival_cv", "prompt_tokens", "output_tokens"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) CHECK(cJSON_GetObjectItemCaseSensitive(o, keys[k]) != NULL);
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(o, "prompt_tokens");
    const char *sub[] = {"mean", "p50", "p90", "p99", "max"};
    for (size_t k = 0; k < 5; k++) CHECK(cJSON_GetObjectItemCaseSensitive(pt, sub[k]) != NULL);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(pt, "mean")->valuedouble, 900, 1e-9);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(o, "duration_s")->valuedouble, 1.5, 1e-9);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(o, "rate_per_s")->valuedouble, 2 / 1.5, 1e-9);
    const cJSON *px = cJSON_GetObjectItemCaseSensitive(o, "prefix");
    CHECK(px && cJSON_GetObjectItemCaseSensitive(px, "distinct_blocks")->valuedouble == 5);
    CHECK(px && cJSON_GetObjectItemCaseSensitive(px, "total_blocks")->valuedouble == 7);
    cJSON_Delete(o);
    workload_free(&w);
}

void suite_workload_traces(void);
void suite_workload_traces(void)
{
    RUN(test_azure_conv);
    RUN(test_azure_code);
    RUN(test_trace_bootstrap);
    RUN(test_mooncake_conversation);
    RUN(test_malformed_stop);
    RUN(test_azure_excerpt);
    RUN(test_malformed_skip);
    RUN(test_small_traces);
    RUN(test_format_guess_and_paths);
    RUN(test_transforms);
    RUN(test_poisson_gamma);
    RUN(test_time_varying);
    RUN(test_lengths_and_mix);
    RUN(test_closed_loop_engine);
    RUN(test_sessions);
    RUN(test_list_links);
    RUN(test_materialise_identical);
    RUN(test_stats_json_keys);
}
