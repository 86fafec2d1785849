/*
 * test_workload.c -- request lists and the Poisson generator: validation,
 * sorting, seeded streams, length distributions.  The traces, the other
 * generators, closed loops and sessions are in test_trace.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "jsonio.h"
#include "workload.h"
#include "testhelp.h"

static int load(const char *text, uint64_t seed, Workload *w, Err *e)
{
    cJSON *j = jsonio_parse(text, "w.json", e);
    if (!j) return -1;
    int rc = workload_from_json(j, "w.json: workload", seed, w, e);
    cJSON_Delete(j);
    return rc;
}

static void test_list_sorted_stable(void)
{
    Workload w;
    Err e = {0};
    CHECK(load("{\"requests\": [{\"id\": \"late\", \"arrival_ms\": 5, \"prompt_tokens\": 1, \"output_tokens\": 1},"
               "{\"id\": \"a\", \"arrival_ms\": 1.5, \"prompt_tokens\": 2, \"output_tokens\": 3},"
               "{\"id\": \"b\", \"arrival_ms\": 1.5, \"prompt_tokens\": 4, \"output_tokens\": 5}]}", 1, &w, &e) == 0);
    CHECK_INT(w.n, 3);
    CHECK(!strcmp(w.reqs[0].id, "a"));
    CHECK(!strcmp(w.reqs[1].id, "b"));
    CHECK(!strcmp(w.reqs[2].id, "late"));
    CHECK_INT(w.reqs[0].t_arrive_ns, 1500000);
    CHECK_INT(w.reqs[1].prompt_tokens, 4);
    workload_free(&w);
}

static void test_list_errors(void)
{
    Workload w;
    Err e = {0};
    CHECK(load("{\"requests\": [{\"id\": \"x\", \"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1},"
               "{\"id\": \"x\", \"arrival_ms\": 1, \"prompt_tokens\": 1, \"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "duplicate request id \"x\"");
    CHECK(load("{\"requests\": [{\"arrival_ms\": -1, \"prompt_tokens\": 1, \"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "w.json: workload.requests[0].arrival_ms");
    CHECK(load("{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1.5, \"output_tokens\": 1}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "prompt_tokens");
    CHECK(load("{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 0}]}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "output_tokens");
    CHECK(load("{\"requests\": []}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "empty");
    CHECK(load("{\"kind\": \"poisson\", \"rate_per_s\": 0, \"count\": 3, \"prompt_tokens\": 1, \"output_tokens\": 1}",
               1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "rate_per_s");
    CHECK(load("{\"kind\": \"poisson\", \"rate_per_s\": 1, \"count\": 3, \"prompt_tokens\": {\"dist\": \"zipf\"},"
               " \"output_tokens\": 1}", 1, &w, &e) < 0);
    CHECK_CONTAINS(e.msg, "zipf");
}

static const char *poisson =
    "{\"kind\": \"poisson\", \"rate_per_s\": 4, \"count\": 20000,"
    " \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 1000, \"sigma\": 0.5, \"min\": 10, \"max\": 4000},"
    " \"output_tokens\": {\"dist\": \"uniform\", \"min\": 10, \"max\": 20}}";

static void test_poisson_stats(void)
{
    Workload w;
    Err e = {0};
    CHECK(load(poisson, 42, &w, &e) == 0);
    if (th_failures) return;
    double *gap = malloc(w.n * sizeof *gap), *lp = malloc(w.n * sizeof *lp);
    int in_range = 1, uniform_ends = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        gap[i] = (i ? w.reqs[i].t_arrive_ns - w.reqs[i - 1].t_arrive_ns : w.reqs[0].t_arrive_ns) / 1e9;
        lp[i] = log(w.reqs[i].prompt_tokens);
        if (w.reqs[i].prompt_tokens < 10 || w.reqs[i].prompt_tokens > 4000) in_range = 0;
        if (w.reqs[i].output_tokens < 10 || w.reqs[i].output_tokens > 20) in_range = 0;
        uniform_ends += w.reqs[i].output_tokens == 10 || w.reqs[i].output_tokens == 20;
    }
    CHECK(in_range);
    /* exponential gaps: mean 1/rate, coefficient of variation 1 */
    double m = gsl_stats_mean(gap, 1, w.n), sd = gsl_stats_sd(gap, 1, w.n);
    CHECK_NEAR(m, 0.25, 0.25 * 0.03);
    CHECK_NEAR(sd / m, 1.0, 0.03);
    /* lognormal: mean of log = log(median), sd of log = sigma (clipping is rare here) */
    CHECK_NEAR(gsl_stats_mean(lp, 1, w.n), log(1000), 0.02);
    CHECK_NEAR(gsl_stats_sd(lp, 1, w.n), 0.5, 0.02);
    /* both ends of the uniform range occur, about 2/11 of the time */
    CHECK_NEAR(uniform_ends / (double)w.n, 2.0 / 11, 0.015);
    free(gap);
    free(lp);
    workload_free(&w);
}

static void test_seeded_streams(void)
{
    Workload a, b, c;
    Err e = {0};
    CHECK(load(poisson, 7, &a, &e) == 0);
    CHECK(load(poisson, 7, &b, &e) == 0);
    /* same seed, different output distribution: identical arrivals and prompts */
    const char *other =
        "{\"kind\": \"poisson\", \"rate_per_s\": 4, \"count\": 20000,"
        " \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 1000, \"sigma\": 0.5, \"min\": 10, \"max\": 4000},"
        " \"output_tokens\": 64}";
    CHECK(load(other, 7, &c, &e) == 0);
    if (th_failures) return;
    int same = 1, same_c = 1;
    for (uint32_t i = 0; i < a.n; i++) {
        same &= a.reqs[i].t_arrive_ns == b.reqs[i].t_arrive_ns && a.reqs[i].prompt_tokens == b.reqs[i].prompt_tokens &&
                a.reqs[i].output_tokens == b.reqs[i].output_tokens;
        same_c &= a.reqs[i].t_arrive_ns == c.reqs[i].t_arrive_ns && a.reqs[i].prompt_tokens == c.reqs[i].prompt_tokens;
    }
    CHECK(same);
    CHECK(same_c);
    CHECK_INT(c.reqs[5].output_tokens, 64);
    workload_free(&a);
    workload_free(&b);
    workload_free(&c);
    Workload d;
    CHECK(load(poisson, 8, &d, &e) == 0);
    CHECK(d.reqs[0].t_arrive_ns != 0);
    workload_free(&d);
}

void suite_workload_traces(void); /* test_trace.c */
void suite_workload(void);
void suite_workload(void)
{
    RUN(test_list_sorted_stable);
    RUN(test_list_errors);
    RUN(test_poisson_stats);
    RUN(test_seeded_streams);
    suite_workload_traces();
}
