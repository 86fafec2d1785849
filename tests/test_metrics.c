/*
 * test_metrics.c -- metric definitions against the chapters (000 section
 * 31.2 and 31.7, 003 section 8.6): table 31.1 replayed gives table 31.2,
 * example 31.4's windows and costs, the goodput count 155 of 336, SLO
 * classes, billing rules, warm-up exclusion, the trace-event file, the
 * vLLM-style summary and the comparison with measured results.
 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "compare.h"
#include "qsketch.h"
#include "jsonio.h"
#include "replay.h"
#include "report.h"
#include "scenario.h"
#include "testhelp.h"
#include "streamrun.h"
#include "testrun.h"
#include "timeline.h"

static int load(const char *rel, Replay *rp)
{
    char path[1024];
    Err e = {0};
    snprintf(path, sizeof path, "%s/%s", SERVESIM_DATA_DIR, rel);
    if (replay_load(path, rp, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    return 0;
}

static void summarize(Replay *rp, Summary *m)
{
    RunData rd;
    replay_rundata(rp, &rd);
    metrics_summarize(&rp->mcfg, &rd, m);
}

static const Request *req(const Replay *rp, const char *id)
{
    for (uint32_t i = 0; i < rp->n; i++)
        if (!strcmp(rp->reqs[i].id, id)) return &rp->reqs[i];
    return NULL;
}

static double ttft_ms(const Request *r) { return (double)(r->t_first_token_ns - r->t_arrive_ns) / 1e6; }
static double e2e_ms(const Request *r) { return (double)(r->t_finish_ns - r->t_arrive_ns) / 1e6; }

static void test_table_31_2(void)
{
    Replay s, c;
    CHECK(load("workloads/chapters/ch31_table_31_1_serial.json", &s) == 0);
    CHECK(load("workloads/chapters/ch31_table_31_1_continuous.json", &c) == 0);
    if (th_failures) return;
    /* TTFT serial 100/240/320 ms, continuous 100/130/140 ms */
    CHECK_NEAR(ttft_ms(req(&s, "A")), 100, 1e-9);
    CHECK_NEAR(ttft_ms(req(&s, "B")), 240, 1e-9);
    CHECK_NEAR(ttft_ms(req(&s, "C")), 320, 1e-9);
    CHECK_NEAR(ttft_ms(req(&c, "A")), 100, 1e-9);
    CHECK_NEAR(ttft_ms(req(&c, "B")), 130, 1e-9);
    CHECK_NEAR(ttft_ms(req(&c, "C")), 140, 1e-9);
    /* TPOT A 40 vs 50, B 40 vs 50, C undefined in both */
    CHECK_NEAR(metrics_tpot_s(req(&s, "A")) * 1e3, 40, 1e-9);
    CHECK_NEAR(metrics_tpot_s(req(&c, "A")) * 1e3, 50, 1e-9);
    CHECK_NEAR(metrics_tpot_s(req(&s, "B")) * 1e3, 40, 1e-9);
    CHECK_NEAR(metrics_tpot_s(req(&c, "B")) * 1e3, 50, 1e-9);
    CHECK(isnan(metrics_tpot_s(req(&s, "C"))));
    CHECK(isnan(metrics_tpot_s(req(&c, "C"))));
    /* request latency A 180 vs 200, B 280 vs 180 */
    CHECK_NEAR(e2e_ms(req(&s, "A")), 180, 1e-9);
    CHECK_NEAR(e2e_ms(req(&c, "A")), 200, 1e-9);
    CHECK_NEAR(e2e_ms(req(&s, "B")), 280, 1e-9);
    CHECK_NEAR(e2e_ms(req(&c, "B")), 180, 1e-9);
    /* the summary: TPOT covers 2 requests, TTFT 3; C's missing TPOT does not
     * pull the mean towards 0 */
    Summary m;
    summarize(&s, &m);
    CHECK_INT(m.ttft_s.n, 3);
    CHECK_INT(m.tpot_s.n, 2);
    CHECK_NEAR(m.tpot_s.mean, 0.040, 1e-12);
    /* JSON: C's tpot_s is null, CSV: empty */
    RunData rd;
    replay_rundata(&s, &rd);
    cJSON *root = report_json(&s.mcfg, &rd, &m, 1);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "requests");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 2), "tpot_s")));
    cJSON_Delete(root);
    Err e;
    char path[] = "/tmp/servesim-metrics-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(report_requests_csv(path, &s.mcfg, &rd, &e) == 0);
    char *csv = read_file(path, NULL, &e);
    CHECK_CONTAINS(csv, "\"C\",0.04,2,1,\"default\",finished,0.32,,,0.32,,0,1");
    free(csv);
    remove(path);
    replay_free(&s);
    replay_free(&c);
}

static void test_example_31_4(void)
{
    Replay s, c;
    CHECK(load("workloads/chapters/ch31_table_31_1_serial.json", &s) == 0);
    CHECK(load("workloads/chapters/ch31_table_31_1_continuous.json", &c) == 0);
    if (th_failures) return;
    Summary ms, mc;
    summarize(&s, &ms);
    summarize(&c, &mc);
    /* own drain windows: 6 / 0.360 and 6 / 0.200 */
    CHECK_NEAR(ms.window_s, 0.360, 1e-12);
    CHECK_NEAR(mc.window_s, 0.200, 1e-12);
    CHECK_NEAR(ms.output_tokens_per_s, 16.667, 0.0005);
    CHECK_NEAR(mc.output_tokens_per_s, 30, 1e-9);
    /* $2/h billed for exactly the drain window */
    CHECK_NEAR(ms.cost_usd, 0.0002, 1e-12);
    CHECK_NEAR(mc.cost_usd, 0.000111111, 1e-9);
    CHECK_NEAR(ms.usd_per_1k_output_tokens, 0.033333, 5e-7);
    CHECK_NEAR(mc.usd_per_1k_output_tokens, 0.018519, 5e-7);
    /* fixed 0-400 ms: 15 and 15; 0-500 ms: 12 and 12 */
    Err e;
    CHECK(mcfg_parse_window_arg("0,400", &s.mcfg, &e) == 0 && mcfg_parse_window_arg("0,400", &c.mcfg, &e) == 0);
    summarize(&s, &ms);
    summarize(&c, &mc);
    CHECK_NEAR(ms.output_tokens_per_s, 15, 1e-9);
    CHECK_NEAR(mc.output_tokens_per_s, 15, 1e-9);
    CHECK(ms.fixed_window && fabs(ms.window_s - 0.4) < 1e-12);
    CHECK(mcfg_parse_window_arg("0,500", &s.mcfg, &e) == 0 && mcfg_parse_window_arg("0,500", &c.mcfg, &e) == 0);
    summarize(&s, &ms);
    summarize(&c, &mc);
    CHECK_NEAR(ms.output_tokens_per_s, 12, 1e-9);
    CHECK_NEAR(mc.output_tokens_per_s, 12, 1e-9);
    /* a window that cuts the serial schedule at 300 ms: A's 3 tokens, B's 2 */
    CHECK(mcfg_parse_window_arg("0,300", &s.mcfg, &e) == 0);
    summarize(&s, &ms);
    CHECK_INT(ms.output_tokens, 5);
    CHECK_INT(ms.completed, 2);
    /* reserved for one hour: the same $2 whichever finishes first */
    s.mcfg.has_window = c.mcfg.has_window = 0;
    s.mcfg.price.billing = c.mcfg.price.billing = BILL_RESERVED;
    s.mcfg.price.reserved_s = c.mcfg.price.reserved_s = 3600;
    summarize(&s, &ms);
    summarize(&c, &mc);
    CHECK_NEAR(ms.cost_usd, 2.0, 1e-12);
    CHECK_NEAR(mc.cost_usd, 2.0, 1e-12);
    /* a one-minute billing increment */
    s.mcfg.price.billing = BILL_INCREMENT;
    s.mcfg.price.increment_s = 60;
    summarize(&s, &ms);
    CHECK_NEAR(ms.billed_s, 60, 1e-12);
    CHECK_NEAR(ms.cost_usd, 2.0 / 60, 1e-12);
    replay_free(&s);
    replay_free(&c);
}

/* 336 answers with a 3 s limit: 294 correct, of which 155 on time; 139
 * correct answers came late; the 42 wrong ones are on time. */
static void test_goodput_155(void)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "requests");
    for (int i = 0; i < 336; i++) {
        cJSON *r = cJSON_CreateObject();
        int correct = i < 294, late = i >= 155 && i < 294;
        cJSON_AddNumberToObject(r, "arrival_ms", i * 10.0);
        cJSON_AddNumberToObject(r, "prompt_tokens", 100);
        cJSON_AddNumberToObject(r, "output_tokens", 2);
        cJSON *tt = cJSON_AddArrayToObject(r, "token_times_ms");
        double done = i * 10.0 + (late ? 3500 : 2000);
        cJSON_AddItemToArray(tt, cJSON_CreateNumber(done - 100));
        cJSON_AddItemToArray(tt, cJSON_CreateNumber(done));
        cJSON_AddBoolToObject(r, "correct", correct);
        cJSON_AddItemToArray(arr, r);
    }
    cJSON *slo = cJSON_AddObjectToObject(root, "slo");
    cJSON_AddNumberToObject(slo, "e2e_ms", 3000);
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    Replay rp;
    Err e;
    CHECK(replay_load_text(txt, "goodput.json", &rp, &e) == 0);
    free(txt);
    if (th_failures) return;
    Summary m;
    summarize(&rp, &m);
    CHECK_INT(m.finished, 336);
    CHECK_INT(m.good, 155);
    CHECK_NEAR(m.att_correct, 294.0 / 336, 1e-12);
    CHECK_NEAR(m.att_e2e, (336.0 - 139) / 336, 1e-12);
    CHECK_NEAR(m.slo_attainment, 155.0 / 336, 1e-12);
    /* R_good = sum Q_i D_i / T_obs over the drain window */
    CHECK_NEAR(m.goodput_requests_per_s, 155 / m.window_s, 1e-9);
    CHECK_NEAR(m.window_s, (155 + 138) * 0.010 + 3.5, 1e-9);
    replay_free(&rp);
}

static const char *classes_json =
    "{\"requests\": ["
    " {\"id\": \"i1\", \"class\": \"interactive\", \"arrival_ms\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3,"
    "  \"token_times_ms\": [150, 170, 190]},"
    " {\"id\": \"b1\", \"class\": \"batch\", \"arrival_ms\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3,"
    "  \"token_times_ms\": [150, 170, 190]},"
    " {\"id\": \"d1\", \"arrival_ms\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3,"
    "  \"token_times_ms\": [150, 170, 400]},"
    " {\"id\": \"x1\", \"arrival_ms\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3,"
    "  \"token_times_ms\": [50, 60, 70], \"deadline_ms\": 60},"
    " {\"id\": \"r1\", \"arrival_ms\": 5, \"prompt_tokens\": 10, \"output_tokens\": 3, \"status\": \"rejected\"}],"
    " \"slo\": {\"ttft_ms\": 200, \"itl_max_ms\": 100,"
    "          \"classes\": {\"interactive\": {\"ttft_ms\": 100}, \"batch\": {\"ttft_ms\": 5000}}}}";

static void test_slo_classes_and_gates(void)
{
    Replay rp;
    Err e;
    CHECK(replay_load_text(classes_json, "classes.json", &rp, &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    /* interactive's 100 ms TTFT cap is missed (150 ms) however good its
     * TPOT; batch meets its 5 s; d1 (default class) meets TTFT 200 ms but a
     * 230 ms gap breaks the 100 ms max-ITL target (the class inherits it);
     * x1 misses its own deadline; r1 was rejected. */
    CHECK_INT(metrics_misses(&rp.mcfg, req(&rp, "i1")), MISS_TTFT);
    CHECK_INT(metrics_misses(&rp.mcfg, req(&rp, "b1")), 0);
    CHECK_INT(metrics_misses(&rp.mcfg, req(&rp, "d1")), MISS_ITL);
    CHECK_INT(metrics_misses(&rp.mcfg, req(&rp, "x1")), MISS_DEADLINE);
    CHECK_INT(metrics_misses(&rp.mcfg, req(&rp, "r1")), MISS_NOT_FINISHED);
    Summary m;
    summarize(&rp, &m);
    CHECK_INT(m.good, 1);
    CHECK_INT(m.rejected, 1);
    CHECK_NEAR(m.slo_attainment, 0.2, 1e-12);
    CHECK_INT(m.n_cls, 3);
    CHECK_INT(m.cls_requests[1] + m.cls_requests[2], 2);
    /* warm-up: dropping the first 2 requests by arrival (ties keep file order) */
    rp.mcfg.warmup_requests = 2;
    summarize(&rp, &m);
    CHECK_INT(m.included, 3);
    CHECK_INT(m.good, 0);
    rp.mcfg.warmup_requests = 0;
    rp.mcfg.cooldown_s = 0.001; /* arrivals after 4 ms of the 0-5 ms span */
    summarize(&rp, &m);
    CHECK_INT(m.included, 4);
    CHECK_INT(m.rejected, 0);
    replay_free(&rp);
}

static void test_replay_errors(void)
{
    Replay rp;
    Err e = {0};
    CHECK(replay_load_text("{\"requests\": [{\"arrival_ms\": 10, \"prompt_tokens\": 1, \"output_tokens\": 2,"
                           " \"token_times_ms\": [5, 20]}]}", "bad.json", &rp, &e) < 0);
    CHECK_CONTAINS(e.msg, "bad.json: requests[0].token_times_ms[0]");
    CHECK_CONTAINS(e.msg, "earlier than the arrival");
    CHECK(replay_load_text("{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 3,"
                           " \"token_times_ms\": [5, 20]}]}", "bad.json", &rp, &e) < 0);
    CHECK_CONTAINS(e.msg, "got 2 times, expected one per output token (3)");
    CHECK(replay_load_text("{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 2,"
                           " \"token_times_ms\": [5, 4]}]}", "bad.json", &rp, &e) < 0);
    CHECK_CONTAINS(e.msg, "earlier than the previous token");
    CHECK(replay_load_text("{\"requests\": [], \"price\": {}}", "bad.json", &rp, &e) < 0);
    CHECK_CONTAINS(e.msg, "empty");
    CHECK(replay_load_text("{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1,"
                           " \"token_times_ms\": [5]}], \"price\": {\"billing\": \"reserved\"}}", "bad.json", &rp,
                           &e) < 0);
    CHECK_CONTAINS(e.msg, "reserved_s");
}


/* Issue 13: percentile SLOs and the verdict.  Ten requests arrive at 0 ms
 * with their first token at 100, 200, ..., 1000 ms and the second 20 ms
 * later (TPOT 20 ms); an eleventh is rejected and counts as infinitely
 * late.  GSL's quantile of the 11 sorted values at 0.9 is the order
 * statistic (11 - 1) x 0.9 = 9 exactly: 1000 ms; at 0.95 it interpolates
 * between 1000 ms and the rejected request: unfinished, a miss. */
static const char verdict_json_text[] =
    "{\"requests\": ["
    " {\"id\": \"q1\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [100, 120]},"
    " {\"id\": \"q2\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [200, 220]},"
    " {\"id\": \"q3\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [300, 320]},"
    " {\"id\": \"q4\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [400, 420]},"
    " {\"id\": \"q5\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [500, 520]},"
    " {\"id\": \"q6\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [600, 620]},"
    " {\"id\": \"q7\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [700, 720]},"
    " {\"id\": \"q8\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [800, 820]},"
    " {\"id\": \"q9\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [900, 920]},"
    " {\"id\": \"q10\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"token_times_ms\": [1000, 1020]},"
    " {\"id\": \"x\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"status\": \"rejected\"}],"
    " \"slo\": %s}";

static int verdict_replay(const char *slo, Replay *rp, Summary *m, Err *e)
{
    static char text[4096];
    snprintf(text, sizeof text, verdict_json_text, slo);
    if (replay_load_text(text, "v.json", rp, e) < 0) return -1;
    summarize(rp, m);
    return 0;
}

static void test_slo_verdict(void)
{
    Replay rp;
    Summary m;
    Err e = {0};
    /* p90: TTFT 1000 ms meets 1000 ms, TPOT 20 ms meets 50 ms; 10 of 11
     * requests are good (0.909 >= 0.9) */
    CHECK(verdict_replay("{\"ttft_ms\": 1000, \"tpot_ms\": 50, \"percentile\": 90, \"attainment\": 0.9}", &rp, &m,
                         &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    CHECK_INT(m.verdict, 1);
    CHECK_INT(m.n_checks, 3);
    CHECK_INT(m.checks[0].metric, SLO_TTFT);
    CHECK_NEAR(m.checks[0].percentile, 90, 0);
    CHECK_NEAR(m.checks[0].achieved, 1.0, 1e-12);
    CHECK_INT(m.checks[0].n, 11);
    CHECK_INT(m.checks[0].pass, 1);
    CHECK_INT(m.checks[1].metric, SLO_TPOT);
    CHECK_NEAR(m.checks[1].achieved, 0.020, 1e-12);
    CHECK_INT(m.checks[2].metric, SLO_ATTAINMENT);
    CHECK_NEAR(m.checks[2].achieved, 10.0 / 11, 1e-12);
    CHECK_INT(m.checks[2].pass, 1);
    /* the JSON: summary.slo_verdict */
    RunData rd;
    replay_rundata(&rp, &rd);
    cJSON *root = report_json(&rp.mcfg, &rd, &m, 0);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "summary"), "slo_verdict");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "pass")));
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "checks"), 0);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(c0, "achieved_s")->valuedouble, 1.0, 1e-12);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(c0, "target_s")->valuedouble, 1.0, 1e-12);
    cJSON_Delete(root);
    replay_free(&rp);

    /* 950 ms at p90 fails; at p95 the percentile lands on the rejected
     * request: unfinished (INFINITY, null in JSON), a miss */
    CHECK(verdict_replay("{\"ttft_ms\": 950, \"percentile\": 90}", &rp, &m, &e) == 0);
    CHECK_INT(m.verdict, 0);
    CHECK_INT(m.checks[0].pass, 0);
    replay_free(&rp);
    CHECK(verdict_replay("{\"ttft_ms\": 5000, \"percentile\": 95}", &rp, &m, &e) == 0);
    CHECK(isinf(m.checks[0].achieved));
    CHECK_INT(m.verdict, 0);
    replay_free(&rp);
    /* no percentile: p99; attainment 0.95 fails (10/11) */
    CHECK(verdict_replay("{\"e2e_ms\": 2000, \"attainment\": 0.95}", &rp, &m, &e) == 0);
    CHECK_NEAR(m.checks[0].percentile, METRICS_DEFAULT_PERCENTILE, 0);
    CHECK_INT(m.checks[0].metric, SLO_E2E);
    CHECK_INT(m.checks[1].pass, 0);
    CHECK_INT(m.verdict, 0);
    replay_free(&rp);
    /* no SLO: no verdict */
    CHECK(verdict_replay("{}", &rp, &m, &e) == 0);
    CHECK_INT(m.verdict, -1);
    CHECK_INT(m.n_checks, 0);
    replay_free(&rp);

    /* the other spellings are rejected with the one form in the message */
    static const char *const wrong[] = {"{\"ttft_p90_ms\": 500}", "{\"ttft\": {\"p90_ms\": 500}}",
                                        "{\"p99_tpot_ms\": 100}", NULL};
    for (int k = 0; wrong[k]; k++) {
        CHECK(verdict_replay(wrong[k], &rp, &m, &e) < 0);
        CHECK_CONTAINS(e.msg, "v.json: slo.");
        CHECK_CONTAINS(e.msg, "\"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50, \"percentile\": 90, \"attainment\": 0.99}");
    }
    CHECK(verdict_replay("{\"ttft_p90_ms\": 500}", &rp, &m, &e) < 0);
    CHECK_CONTAINS(e.msg, "v.json: slo.ttft_p90_ms: SLOs are written");
    CHECK_CONTAINS(e.msg, "(p90 in \"percentile\", the share of good requests in \"attainment\")");
    CHECK(verdict_replay("{\"ttft_ms\": 500, \"percentile\": 100}", &rp, &m, &e) < 0);
    CHECK_CONTAINS(e.msg, "v.json: slo.percentile: got 100");

    /* per class: each class judged against its own targets over its own
     * requests, inheriting the percentile */
    static char text[4096];
    snprintf(text, sizeof text,
             "{\"requests\": ["
             " {\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 1, \"token_times_ms\": [100],"
             "  \"class\": \"chat\"},"
             " {\"id\": \"b\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 1, \"token_times_ms\": [300],"
             "  \"class\": \"chat\"},"
             " {\"id\": \"c\", \"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 1, \"token_times_ms\": [900],"
             "  \"class\": \"batch\"}],"
             " \"slo\": {\"ttft_ms\": 1000, \"percentile\": 50, \"classes\": {\"chat\": {\"ttft_ms\": 150}}}}");
    CHECK(replay_load_text(text, "c.json", &rp, &e) == 0);
    summarize(&rp, &m);
    CHECK_INT(m.verdict_per_class, 1);
    CHECK_INT(m.n_checks, 2);
    /* chat: p50 of 100 and 300 ms = 200 ms > 150 ms; batch: 900 <= 1000 */
    CHECK_NEAR(m.checks[0].achieved, 0.2, 1e-12);
    CHECK_INT(m.checks[0].pass, 0);
    CHECK_NEAR(m.checks[1].achieved, 0.9, 1e-12);
    CHECK_INT(m.checks[1].pass, 1);
    CHECK_INT(m.verdict, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report_print(f, NULL, &rp.mcfg, &m);
    fclose(f);
    CHECK_CONTAINS(buf, "  SLO verdict: FAIL");
    CHECK_CONTAINS(buf, "    chat: p50 TTFT            200.00 ms   target <= 150 ms    FAIL  (n=2)\n");
    CHECK_CONTAINS(buf, "    batch: p50 TTFT           900.00 ms   target <= 1000 ms   pass  (n=1)\n");
    free(buf);
    replay_free(&rp);
}

/* ---------------------------------------------------------- a real run */

static Scenario sc;
static Engine *eng;
static Slo slo_table[METRICS_CLS_MAX];
static MetricsCfg mc;
static RunData rd;
static Summary sum;

static int run_chapter(const char *rel)
{
    char path[1024];
    Err e = {0};
    snprintf(path, sizeof path, "%s/%s", SERVESIM_DATA_DIR, rel);
    if (scenario_load_file(path, 0, 0, &sc, &e) < 0) goto bad;
    eng = scenario_engine(&sc, NULL, &e);
    if (!eng || engine_run(eng, &e) < 0) goto bad;
    scenario_metrics_cfg(&sc, &mc, slo_table, METRICS_CLS_MAX);
    scenario_rundata(&sc, eng, &rd);
    metrics_summarize(&mc, &rd, &sum);
    return 0;
bad:
    fprintf(stderr, "  %s\n", e.msg);
    return -1;
}

static void done_chapter(void)
{
    engine_free(eng);
    scenario_free(&sc);
}

static int cmp_lane(const void *a, const void *b)
{
    const double *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The trace of a run, written as it goes (streamrun with a trace output),
 * against the run's own iteration records. */
static void test_trace_events(void)
{
    CHECK(run_chapter("workloads/chapters/ch8_four_requests_chunked.json") == 0);
    if (th_failures) return;
    char path[] = "/tmp/servesim-trace-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    Err e = {0};
    StreamOutputs so = {.trace = path};
    StreamRun *r = xmalloc(sizeof *r);
    CHECK(streamrun(r, SERVESIM_DATA_DIR "/workloads/chapters/ch8_four_requests_chunked.json", NULL, NULL, 0, 0, 0,
                    &so, &e) == 0);
    CHECK_INT(r->requests, 4);
    streamrun_free(r);
    free(r);
    cJSON *root = jsonio_parse_file(path, &e);
    remove(path);
    CHECK(root != NULL);
    if (!root) return;
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    CHECK(cJSON_IsArray(ev));
    /* (pid * 1000 + tid, ts, dur) of every complete event */
    int n = cJSON_GetArraySize(ev), nx = 0, engine_events = 0, prefill = 0, decode = 0, queued = 0;
    double *lanes = malloc((size_t)n * 3 * sizeof *lanes);
    const cJSON *x;
    cJSON_ArrayForEach(x, ev) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(x, "ph");
        CHECK(cJSON_IsString(ph) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "name")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "ts")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "pid")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "tid")));
        if (strcmp(ph->valuestring, "X")) continue;
        const cJSON *dur = cJSON_GetObjectItemCaseSensitive(x, "dur");
        CHECK(cJSON_IsNumber(dur) && dur->valuedouble > 0);
        const char *name = cJSON_GetObjectItemCaseSensitive(x, "name")->valuestring;
        int pid = cJSON_GetObjectItemCaseSensitive(x, "pid")->valueint;
        engine_events += pid == 1;
        prefill += !strcmp(name, "prefill");
        decode += !strcmp(name, "decode");
        queued += !strcmp(name, "queued");
        lanes[nx * 3] = pid * 1000.0 + cJSON_GetObjectItemCaseSensitive(x, "tid")->valuedouble;
        lanes[nx * 3 + 1] = cJSON_GetObjectItemCaseSensitive(x, "ts")->valuedouble;
        lanes[nx * 3 + 2] = dur->valuedouble;
        nx++;
    }
    /* 34 iterations; every prefill chunk the engine ran has its event, and
     * each output token after the first is one decode event */
    CHECK_INT(engine_events, 34);
    int chunks = 0;
    for (uint64_t k = 0; k < rd.n_iters; k++) chunks += (int)rd.iters[k].n_prefill;
    CHECK_INT(prefill, chunks);
    CHECK(chunks >= 4 + 4 + 16 + 4); /* prompts of 2048, 2048, 8192, 2048 tokens in chunks of <= 512 */
    CHECK_INT(decode, 7 + 1 + 1 + 3);
    CHECK_INT(queued, 3); /* r0 starts at once; r1, r2, r3 wait */
    qsort(lanes, (size_t)nx, 3 * sizeof *lanes, cmp_lane);
    int overlaps = 0;
    for (int i = 1; i < nx; i++)
        if (lanes[i * 3] == lanes[(i - 1) * 3] && lanes[(i - 1) * 3 + 1] + lanes[(i - 1) * 3 + 2] > lanes[i * 3 + 1] + 1e-6)
            overlaps++;
    CHECK_INT(overlaps, 0);
    free(lanes);
    cJSON_Delete(root);
    done_chapter();
}

static void test_vllm_summary_and_compare(void)
{
    CHECK(run_chapter("workloads/chapters/ch8_four_requests_continuous.json") == 0);
    if (th_failures) return;
    cJSON *v = report_vllm_json(&mc, &rd, &sum);
    static const char *const keys[] = {"duration", "completed", "total_input_tokens", "total_output_tokens",
                                       "request_throughput", "request_goodput", "output_throughput",
                                       "total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
                                       "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms",
                                       "mean_e2el_ms", "ttfts", "itls", "input_lens", "output_lens"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) CHECK(cJSON_GetObjectItemCaseSensitive(v, keys[k]));
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(v, "mean_ttft_ms")->valuedouble, sum.ttft_s.mean * 1e3, 1e-6);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(v, "output_throughput")->valuedouble, 16 / 0.765590636, 1e-6);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(v, "completed")->valueint, 4);
    /* the vLLM file recomputed from its arrays equals our own report */
    cJSON *ours = report_json(&mc, &rd, &sum, 0);
    CmpSide a, b;
    Err e;
    CHECK(compare_from_json(ours, "ours", &a, &e) == 0);
    CHECK(compare_from_json(v, "vllm", &b, &e) == 0);
    CHECK(!strcmp(a.format, "servesim") && !strcmp(b.format, "vllm"));
    for (int m = 0; m < CMP_METRICS; m++)
        for (int s = 0; s < CMP_STATS; s++) CHECK_NEAR(a.lat[m][s], b.lat[m][s], 1e-9);
    cJSON *cmp = compare_json(&a, &b);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cmp, "mean_abs_rel_error")->valuedouble, 0, 1e-9);
    cJSON_Delete(cmp);
    /* a measured file 10% slower in TTFT gives +/- 1/11 relative error */
    cJSON *meas = cJSON_CreateObject();
    cJSON_AddNumberToObject(meas, "mean_ttft_ms", sum.ttft_s.mean * 1e3 * 1.1);
    cJSON_AddNumberToObject(meas, "output_throughput", 16 / 0.765590636);
    CHECK(compare_from_json(meas, "meas", &b, &e) == 0);
    cmp = compare_json(&a, &b);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(cmp, "compared")->valueint, 2);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cmp, "mean_abs_rel_error")->valuedouble, (1 - 1 / 1.1) / 2, 1e-9);
    cJSON_Delete(cmp);
    cJSON_Delete(meas);
    CHECK(compare_from_json(ours, "x", &a, &e) == 0);
    cJSON *junk = cJSON_CreateObject();
    CHECK(compare_from_json(junk, "junk.json", &a, &e) < 0);
    CHECK_CONTAINS(e.msg, "junk.json: neither");
    cJSON_Delete(junk);
    cJSON_Delete(ours);
    cJSON_Delete(v);
    done_chapter();
}

/* Loads text (seed), runs it and summarises into sc, eng, rd, sum; -1
 * when it did not load (the caller stops; done_chapter frees the rest). */
static int run_summarize(const char *text, const char *name, uint64_t seed)
{
    Err e = {0};
    CHECK(scenario_load_text(text, name, 1, seed, &sc, &e) == 0);
    if (th_failures) return -1;
    eng = scenario_engine(&sc, NULL, &e);
    CHECK(eng && engine_run(eng, &e) == 0);
    scenario_metrics_cfg(&sc, &mc, slo_table, METRICS_CLS_MAX);
    scenario_rundata(&sc, eng, &rd);
    metrics_summarize(&mc, &rd, &sum);
    return 0;
}

static void test_utilisation_and_energy(void)
{
    /* the default scenario's H100: 700 W busy, idle unknown (0) */
    if (run_summarize(scenario_default_json, "default", 3) < 0) return;
    CHECK_NEAR(sum.energy_j, 700 * sum.busy_s, 1e-6 * sum.energy_j);
    CHECK_NEAR(sum.j_per_good_request, sum.energy_j / sum.good, 1e-9);
    /* time-weighted means over the window from the iteration records */
    double run = 0;
    for (uint64_t k = 0; k < rd.n_iters; k++) run += (double)rd.iters[k].running * rd.iters[k].dur_ns;
    CHECK_NEAR(sum.mean_running, run / (sum.window_s * 1e9), 1e-9);
    /* MFU over busy time = FLOPs / (peak x busy); each iteration's in (0, 1] */
    CHECK_NEAR(sum.mfu_mean, engine_stats(eng)->flops / (sc.hw.peak_flops[DTYPE_BF16] * sum.busy_s), 1e-9);
    CHECK(sum.mfu.n == sum.iterations && sum.mfu.max <= 1.0 && sum.mfu.p50 > 0);
    CHECK(sum.mbu.max <= 1.0 && sum.mbu.p50 > 0.3);
    CHECK_NEAR(sum.usd_per_1m_good_tokens, sum.cost_usd / (double)sum.good_output_tokens * 1e6, 1e-12);
    done_chapter();
}

/* Issue 35, class 6: a MoE model's step reads the experts its tokens
 * touch, as its time prices them, so MBU stays within 100% (it counted
 * every expert: 132% for Qwen3-30B-A3B decoding 4 sequences on an H200). */
static void test_moe_mbu_within_one(void)
{
    static const char text[] =
        "{\"model\": \"qwen3-30b-a3b\", \"hardware\": \"h200-sxm\", \"engine\": \"trtllm\", \"workload\": "
        "{\"kind\": \"closed_loop\", \"clients\": 4, \"count\": 16, \"prompt_tokens\": 128, \"output_tokens\": 64}}";
    if (run_summarize(text, "moe_mbu.json", 1) < 0) return;
    CHECK(sum.mbu.n > 0 && sum.mbu.max <= 1.0);
    CHECK(sum.mbu_mean > 0.05 && sum.mbu_mean < 1.0);
    done_chapter();
}

/* ---- issue 16: statistics without a full sort ---- */

/* The sketch's stated bound (qsketch.h): every quantile within 2^-11 of
 * the exact one, on 300,000 lognormal latencies (1 us .. seconds); exact
 * below 2,048 ns; merging is exact; and the bound is tight (a value at a
 * bucket's lower edge is off by almost the whole bound), so the check
 * would catch a looser sketch. */
static void test_qsketch_error_bound(void)
{
    enum { N = 300000 };
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 16);
    int64_t *v = malloc(N * sizeof *v);
    double *x = malloc(N * sizeof *x);
    QSketch all, a, b;
    qsketch_init(&all);
    qsketch_init(&a);
    qsketch_init(&b);
    for (int i = 0; i < N; i++) {
        v[i] = (int64_t)llround(gsl_ran_lognormal(g, log(8e6), 1.5)) + (i % 97 == 0 ? 0 : 1000);
        x[i] = (double)v[i];
        qsketch_add(&all, v[i]);
        qsketch_add(i % 3 ? &a : &b, v[i]);
    }
    gsl_sort(x, 1, N);
    static const double qs[] = {0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1};
    double worst = 0;
    for (size_t k = 0; k < sizeof qs / sizeof *qs; k++) {
        double exact = gsl_stats_quantile_from_sorted_data(x, 1, N, qs[k]);
        double got = qsketch_quantile(&all, qs[k]);
        CHECK(fabs(got - exact) <= QSKETCH_REL_ERR * exact);
        worst = fmax(worst, fabs(got - exact) / exact);
    }
    for (uint64_t r = 0; r < N; r += 997) CHECK(fabs(qsketch_rank(&all, r) - x[r]) <= QSKETCH_REL_ERR * x[r]);
    CHECK(worst > 0); /* the data is large enough to be approximated at all */
    CHECK_REL(qsketch_mean(&all), gsl_stats_mean(x, 1, N), 1e-12);
    CHECK_REL(qsketch_sd(&all), gsl_stats_sd(x, 1, N), 1e-9);
    CHECK_INT(all.min, (int64_t)x[0]);
    CHECK_INT(all.max, (int64_t)x[N - 1]);
    /* merged halves: the same counts, so bit-for-bit the same quantiles */
    qsketch_merge(&a, &b);
    CHECK_INT(a.n, N);
    for (size_t k = 0; k < sizeof qs / sizeof *qs; k++) CHECK(qsketch_quantile(&a, qs[k]) == qsketch_quantile(&all, qs[k]));
    /* integer sums: a merge is exact (n Q - S^2 does not depend on the shift) */
    CHECK_REL(qsketch_mean(&a), qsketch_mean(&all), 1e-15);
    CHECK(qsketch_sd(&a) == qsketch_sd(&all));
    /* sums exact where doubles round: 10^6 copies of 2^52 + 1 ns */
    QSketch big;
    qsketch_init(&big);
    qsketch_add(&big, 0);
    qsketch_add_n(&big, ((int64_t)1 << 52) + 1, 1000000);
    CHECK(!big.inexact);
    CHECK(big.isum % 1000000 == 0 && big.isum / 1000000 == ((int64_t)1 << 52) + 1);
    CHECK_REL(qsketch_sd(&big), (((double)((int64_t)1 << 52) + 1) * sqrt(1.0 / 1000001)), 1e-12);
    /* past 2^127 the sums go on in doubles: the mean stays right */
    qsketch_add_n(&big, (int64_t)1 << 62, (uint64_t)1 << 62);
    CHECK(big.inexact);
    CHECK_REL(qsketch_mean(&big), (double)((int64_t)1 << 62), 1e-6);
    qsketch_free(&big);
    /* small values are exact; a bucket's lower edge is the worst case */
    QSketch t;
    qsketch_init(&t);
    for (int64_t y = 0; y < 2048; y++) qsketch_add(&t, y);
    for (uint64_t r = 0; r < 2048; r += 7) CHECK(qsketch_rank(&t, r) == (double)r);
    qsketch_free(&t);
    qsketch_init(&t);
    for (int i = 0; i < 3; i++) qsketch_add(&t, 1 << 20);
    qsketch_add(&t, 1);
    qsketch_add(&t, 1 << 30);
    double edge = qsketch_rank(&t, 2), rel = (edge - (1 << 20)) / (double)(1 << 20);
    CHECK(rel <= QSKETCH_REL_ERR && rel > 0.99 * QSKETCH_REL_ERR);
    qsketch_free(&t);
    /* the exact-then-sketched accumulator switches at its limit */
    StatAcc acc;
    statacc_init(&acc, 1000);
    for (int i = 0; i < 1000; i++) statacc_add(&acc, (double)v[i] / 1e9);
    CHECK(!acc.sketched);
    statacc_add(&acc, (double)v[1000] / 1e9);
    CHECK(acc.sketched);
    CHECK_INT(acc.n, 1001);
    CHECK_INT(acc.sk.n, 1001);
    statacc_free(&acc);
    /* merging accumulators: exact while the total fits, else sketched, and
     * then the same quantiles as one accumulator fed everything */
    StatAcc m1, m2, one;
    statacc_init(&m1, 1000);
    statacc_init(&m2, 1000);
    statacc_init(&one, 1000);
    for (int i = 0; i < 1200; i++) {
        statacc_add(i < 400 ? &m1 : &m2, (double)v[i] / 1e9);
        statacc_add(&one, (double)v[i] / 1e9);
    }
    StatAcc small;
    statacc_init(&small, 1000);
    statacc_merge(&small, &m1);
    CHECK(!small.sketched && small.n == 400);
    statacc_merge(&m1, &m2);
    CHECK(m1.sketched && one.sketched);
    CHECK_INT(m1.n, 1200);
    for (double q = 0; q <= 1; q += 0.125) CHECK(qsketch_quantile(&m1.sk, q) == qsketch_quantile(&one.sk, q));
    statacc_free(&m1);
    statacc_free(&m2);
    statacc_free(&one);
    statacc_free(&small);
    qsketch_free(&all);
    qsketch_free(&a);
    qsketch_free(&b);
    free(v);
    free(x);
    gsl_rng_free(g);
}

/* Above METRICS_EXACT_MAX values metrics_dist selects instead of sorting:
 * the percentiles and the maximum are the sorted path's exactly, the mean
 * and sd agree to rounding. */
static void test_dist_by_selection(void)
{
    enum { N = METRICS_EXACT_MAX * 2 + 13 };
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 7);
    double *v = malloc(N * sizeof *v), *w = malloc(N * sizeof *w);
    for (int i = 0; i < N; i++) v[i] = w[i] = (double)(gsl_rng_uniform_int(g, 5000)) * 1e-3; /* many ties */
    Dist d;
    metrics_dist(v, N, &d);
    gsl_sort(w, 1, N);
    CHECK_INT(d.n, N);
    CHECK(d.p50 == gsl_stats_quantile_from_sorted_data(w, 1, N, 0.50));
    CHECK(d.p90 == gsl_stats_quantile_from_sorted_data(w, 1, N, 0.90));
    CHECK(d.p95 == gsl_stats_quantile_from_sorted_data(w, 1, N, 0.95));
    CHECK(d.p99 == gsl_stats_quantile_from_sorted_data(w, 1, N, 0.99));
    CHECK(d.max == w[N - 1]);
    CHECK_REL(d.mean, gsl_stats_mean(w, 1, N), 1e-12);
    CHECK_REL(d.std, gsl_stats_sd(w, 1, N), 1e-9);
    /* continuous values: interpolation between distinct order statistics */
    for (int i = 0; i < N; i++) v[i] = w[i] = gsl_ran_exponential(g, 0.01);
    metrics_dist(v, N, &d);
    gsl_sort(w, 1, N);
    CHECK(d.p90 == gsl_stats_quantile_from_sorted_data(w, 1, N, 0.90));
    CHECK(d.p99 == gsl_stats_quantile_from_sorted_data(w, 1, N, 0.99));
    free(v);
    free(w);
    gsl_rng_free(g);
}

/* Up to METRICS_EXACT_MAX values metrics_dist sorts (by radix where every
 * value is >= +0 and not NaN): every field is gsl_sort's path's, bit for
 * bit -- ties, zeros, infinity, sizes around the radix threshold, and the
 * values that go to gsl_sort (a negative one, -0, a NaN). */
static void check_dist_sorted(const double *x, size_t n)
{
    double *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
    memcpy(v, x, n * sizeof *v);
    memcpy(w, x, n * sizeof *w);
    Dist d, ref;
    metrics_dist(v, n, &d);
    gsl_sort(w, 1, n);
    memset(&ref, 0, sizeof ref);
    ref.n = n;
    ref.mean = gsl_stats_mean(w, 1, n);
    ref.std = n > 1 ? gsl_stats_sd_m(w, 1, n, ref.mean) : 0;
    ref.p50 = gsl_stats_quantile_from_sorted_data(w, 1, n, 0.50);
    ref.p90 = gsl_stats_quantile_from_sorted_data(w, 1, n, 0.90);
    ref.p95 = gsl_stats_quantile_from_sorted_data(w, 1, n, 0.95);
    ref.p99 = gsl_stats_quantile_from_sorted_data(w, 1, n, 0.99);
    ref.max = w[n - 1];
    if (memcmp(&d, &ref, sizeof d) != 0) {
        fprintf(stderr, "  n %zu: mean %.17g/%.17g p99 %.17g/%.17g\n", n, d.mean, ref.mean, d.p99, ref.p99);
        CHECK(0);
    }
    CHECK(memcmp(v, w, n * sizeof *v) == 0); /* the sorted array itself */
    free(v);
    free(w);
}

static void test_dist_sorted_exact(void)
{
    enum { N = 20000 };
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 11);
    double *x = malloc(N * sizeof *x);
    static const size_t sizes[] = {1, 2, 255, 256, 257, 1000, N};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        for (size_t i = 0; i < n; i++) x[i] = gsl_ran_exponential(g, 0.05); /* latencies */
        check_dist_sorted(x, n);
        for (size_t i = 0; i < n; i++) x[i] = (double)gsl_rng_uniform_int(g, 50) * 1e-3; /* ties, zeros */
        check_dist_sorted(x, n);
    }
    for (size_t i = 0; i < N; i++) x[i] = gsl_ran_exponential(g, 3.0) * (i % 7 == 0 ? 1e-9 : 1e3);
    x[17] = HUGE_VAL;
    x[18] = 0;
    check_dist_sorted(x, N);
    /* gsl_sort's own cases */
    x[19] = -1.5;
    check_dist_sorted(x, N);
    x[19] = -0.0;
    check_dist_sorted(x, N);
    free(x);
    gsl_rng_free(g);
}

static int summary_of_text(const char *text, int exact, Summary *out, Err *e)
{
    Scenario s;
    if (scenario_load_text(text, "itl-stream", 0, 0, &s, e) < 0) return -1;
    s.metrics.exact_stats = exact;
    Cluster *c = cluster_new(&s, NULL, e);
    int rc = (!c || cluster_run(c, e) < 0) ? -1 : 0;
    if (rc == 0) {
        Slo slos[METRICS_CLS_MAX];
        MetricsCfg mcfg;
        RunData rdata;
        cluster_summarize(c, &s, slos, &mcfg, &rdata, out);
    }
    cluster_free(c);
    scenario_free(&s);
    return rc;
}

/* ITL streamed from the engine (report.token_times false) is the ITL of
 * the per-token record: the same Dist, bit for bit, while exact; with more
 * than METRICS_EXACT_MAX gaps the default is the sketch (within its bound
 * of the exact figures) and --exact-stats gives the exact ones. */
static void test_itl_streamed(void)
{
    const char *fmt =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"cost_model\": {\"kind\": \"roofline\"},"
        " \"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, \"token_budget\": 2048},"
        " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 20, \"count\": %d,"
        "  \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 512, \"sigma\": 0.8, \"min\": 16, \"max\": 8192},"
        "  \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 128, \"sigma\": 0.7, \"min\": 1, \"max\": 1024}},"
        " \"seed\": 3, \"report\": {\"token_times\": %s, \"iterations\": false}}";
    char text[2048];
    Err e = {0};
    Summary *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
    snprintf(text, sizeof text, fmt, 300, "true");
    CHECK(summary_of_text(text, 0, a, &e) == 0);
    snprintf(text, sizeof text, fmt, 300, "false");
    CHECK(summary_of_text(text, 0, b, &e) == 0);
    CHECK(a->itl_s.n > 1000 && a->itl_s.n < METRICS_EXACT_MAX);
    CHECK(memcmp(&a->itl_s, &b->itl_s, sizeof a->itl_s) == 0);
    CHECK(memcmp(&a->ttft_s, &b->ttft_s, sizeof a->ttft_s) == 0);
    /* past the exact limit: sketch by default, exact on demand */
    snprintf(text, sizeof text, fmt, 1200, "true");
    CHECK(summary_of_text(text, 1, a, &e) == 0);
    snprintf(text, sizeof text, fmt, 1200, "false");
    CHECK(summary_of_text(text, 0, b, &e) == 0);
    CHECK(summary_of_text(text, 1, c, &e) == 0);
    CHECK(a->itl_s.n > METRICS_EXACT_MAX);
    CHECK_INT(b->itl_s.n, a->itl_s.n);
    CHECK(a->itl_s.p50 == c->itl_s.p50 && a->itl_s.p99 == c->itl_s.p99 && a->itl_s.max == c->itl_s.max);
    CHECK(b->itl_s.p50 != c->itl_s.p50 || b->itl_s.p90 != c->itl_s.p90 || b->itl_s.p99 != c->itl_s.p99);
    CHECK(fabs(b->itl_s.p50 - c->itl_s.p50) <= QSKETCH_REL_ERR * c->itl_s.p50);
    CHECK(fabs(b->itl_s.p90 - c->itl_s.p90) <= QSKETCH_REL_ERR * c->itl_s.p90);
    CHECK(fabs(b->itl_s.p95 - c->itl_s.p95) <= QSKETCH_REL_ERR * c->itl_s.p95);
    CHECK(fabs(b->itl_s.p99 - c->itl_s.p99) <= QSKETCH_REL_ERR * c->itl_s.p99);
    CHECK(b->itl_s.max == c->itl_s.max);
    CHECK_REL(b->itl_s.mean, c->itl_s.mean, 1e-9);
    if (e.msg[0]) fprintf(stderr, "  %s\n", e.msg);
    free(a);
    free(b);
    free(c);
}

static void fold(void *ctx, const Request *r, const int64_t *tt)
{
    metrics_acc_add(ctx, r, tt);
}

/* The summary b of a streamed run of engine_new_stream + MetricsAcc
 * (scen its scenario, cfg its metrics configuration) prints as fixture fx
 * does but for ITL's mean and std -- past the exact limit both runs
 * sketch ITL, and the one-pass sums differ in rounding (request order
 * against emission order), so those two are compared within it -- and the
 * KV capacities (a cluster's replica rows give them; a bare engine has
 * none). */
static void summary_vs_fixture_itl(const Scenario *scen, const MetricsCfg *cfg, const Summary *b, const char *fx,
                                   const char *tmpdir)
{
    static const char *const except[] = {"itl_s.mean", "itl_s.std", "kv.capacity_gib_per_gpu",
                                         "kv.capacity_gib_total", NULL};
    CHECK(testrun_fixture_summary(NULL, scen, cfg, b, except, fx, tmpdir) == 0);
    cJSON *got = testrun_summary_tree(scen, cfg, b);
    char *ft = testrun_fixture_read(fx, NULL);
    cJSON *want = ft ? cJSON_Parse(ft) : NULL;
    free(ft);
    const cJSON *wi = cJSON_GetObjectItemCaseSensitive(want, "itl_s");
    const cJSON *gi = cJSON_GetObjectItemCaseSensitive(got, "itl_s");
    static const char *const key[2] = {"mean", "std"};
    /* both printed to 12 significant digits: a unit of the last apart */
    static const double rel[2] = {2e-11, 1e-9};
    for (int k = 0; k < 2; k++) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(wi, key[k]);
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(gi, key[k]);
        CHECK(cJSON_IsNumber(w) && cJSON_IsNumber(g));
        if (cJSON_IsNumber(w) && cJSON_IsNumber(g)) CHECK_REL(g->valuedouble, w->valuedouble, rel[k]);
    }
    cJSON_Delete(got);
    cJSON_Delete(want);
}

/* A streamed run (engine_new_stream + MetricsAcc, per-token times not
 * kept) gives the summary of the previous release's materialised run of
 * the same scenario with them kept (cluster + metrics_summarize; fixture
 * metrics/stream_matches_batch.summary.json): two SLO classes, a
 * per-class verdict with attainment, deadlines, a rejection (a prompt past
 * the context), every field as `run --json` prints it.  And it holds only
 * the requests in flight: live records never exceed running + waiting +
 * those finishing in one iteration + the next arrival, far below the 6,000
 * requests. */
static void test_stream_matches_batch(void)
{
    const char *fmt =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"cost_model\": {\"kind\": \"roofline\"},"
        " \"scheduler\": {\"kind\": \"chunked\", \"max_running\": 48, \"token_budget\": 1024},"
        " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 12, \"count\": 6000,"
        "  \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 700, \"sigma\": 1.2, \"min\": 16, \"max\": 60000},"
        "  \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 90, \"sigma\": 0.8, \"min\": 1, \"max\": 800},"
        "  \"mix\": [{\"weight\": 3, \"class\": \"chat\", \"deadline_ms\": 4000},"
        "           {\"weight\": 1, \"class\": \"batch\", \"priority\": 1}]},"
        " \"slo\": {\"ttft_ms\": 300, \"tpot_ms\": 40, \"percentile\": 90, \"attainment\": 0.8,"
        "          \"classes\": {\"batch\": {\"e2e_ms\": 20000}}},"
        " \"seed\": 5, \"report\": {\"token_times\": %s, \"iterations\": false}}";
    const char *fx = "metrics/stream_matches_batch.summary.json";
    char text[2048], dir[] = "/tmp/servesim-metrics-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "  cannot create a temporary directory like %s\n", dir);
        CHECK(0);
        return;
    }
    if (testrun_regen()) {
        /* the materialised run kept every token's time */
        snprintf(text, sizeof text, fmt, "true");
        CHECK(testrun_fixture_summary(text, NULL, NULL, NULL, NULL, fx, dir) == 0);
    }
    Err e = {0};
    Summary *b = malloc(sizeof *b);
    Scenario s;
    snprintf(text, sizeof text, fmt, "false");
    int rc = scenario_load_text_stream(text, "stream", 0, 0, &s, &e);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", e.msg);
        free(b);
        th_rm_tree(dir);
        return;
    }
    CHECK_INT(s.wl.n, 0); /* nothing materialised */
    Slo slos[METRICS_CLS_MAX];
    MetricsCfg mcfg;
    scenario_metrics_cfg(&s, &mcfg, slos, METRICS_CLS_MAX);
    MetricsAcc acc;
    StatAcc itl;
    statacc_init(&itl, METRICS_EXACT_MAX);
    CHECK(metrics_acc_init(&acc, &mcfg, b, &e) == 0);
    s.stream_retire = fold;
    s.stream_retire_ctx = &acc;
    Engine *en = scenario_engine(&s, NULL, &e);
    CHECK(en != NULL);
    if (en) {
        engine_set_itl_acc(en, &itl);
        CHECK(engine_run(en, &e) == 0);
        metrics_acc_finish(&acc, engine_stats(en), &itl);
        const EngineStats *st = engine_stats(en);
        CHECK_INT(engine_stream_pulled(en), 6000);
        CHECK_INT(engine_live(en), 0);
        uint32_t peak = engine_live_peak(en);
        CHECK(peak >= st->peak_running);
        CHECK(peak <= 2 * st->peak_running + st->peak_waiting + 1);
        CHECK(engine_slots(en) <= 2 * peak + 1024);
        CHECK(engine_slots(en) < 6000 / 2);
        fprintf(stderr, "     6000 requests streamed: peak %u live records (running peak %u, waiting peak %u), "
                        "%u slots\n", peak, st->peak_running, st->peak_waiting, engine_slots(en));
    }
    CHECK(b->rejected > 0 && b->finished > 5000);
    CHECK(b->verdict_per_class && b->n_checks >= 5);
    /* ITL: 730,000 gaps, past the exact limit: sketched */
    CHECK(b->itl_s.n > METRICS_EXACT_MAX);
    if (!testrun_regen()) summary_vs_fixture_itl(&s, &mcfg, b, fx, dir);
    metrics_acc_free(&acc);
    statacc_free(&itl);
    engine_free(en);
    scenario_free(&s);
    /* parallel sampling streams: the list's branches, made as the engine
     * forks them */
    Err e2 = {0};
    CHECK(scenario_load_text_stream("{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                                    "{\"kind\": \"continuous\"}, \"workload\": {\"requests\": [{\"id\": \"a\", "
                                    "\"arrival_ms\": 0, \"prompt_tokens\": 10, \"output_tokens\": 5, \"n\": 2}]}}",
                                    "n2.json", 0, 0, &s, &e2) == 0);
    CHECK(s.wl_stream && workload_stream_branched(s.wl_stream));
    scenario_free(&s);
    /* bad input is an error: run reports it as it is */
    Err e3 = {0};
    CHECK(scenario_load_text_stream("{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                                    "\"continuous\"}, \"workload\": {\"kind\": "
                                    "\"poisson\", \"rate_per_s\": 1, \"count\": 5, \"bogus\": 1}}",
                                    "bad.json", 0, 0, &s, &e3) < 0);
    CHECK_CONTAINS(e3.msg, "bogus");
    free(b);
    th_rm_tree(dir);
}

void suite_metrics(void);
void suite_metrics(void)
{
    RUN(test_table_31_2);
    RUN(test_example_31_4);
    RUN(test_goodput_155);
    RUN(test_slo_classes_and_gates);
    RUN(test_replay_errors);
    RUN(test_slo_verdict);
    RUN(test_trace_events);
    RUN(test_vllm_summary_and_compare);
    RUN(test_utilisation_and_energy);
    RUN(test_moe_mbu_within_one);
    RUN(test_qsketch_error_bound);
    RUN(test_dist_by_selection);
    RUN(test_dist_sorted_exact);
    RUN(test_itl_streamed);
    RUN(test_stream_matches_batch);
}
