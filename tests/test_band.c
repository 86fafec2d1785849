/*
 * test_band.c -- the engines' measured error bands (issue 34): the band
 * file's reader, the lookup by engine file and family, the interval, and
 * `servesim run` printing and writing the band of its mean TTFT and TPOT.
 *
 * The figures come from models/engines/error_bands.json, which `validate
 * --bands` regenerates: the tests read that file themselves (with cJSON,
 * not through the reader under test) and never pin its numbers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "errband.h"
#include "jsonio.h"
#include "testhelp.h"
#include "testrun.h"

#define BAND_FILE SERVESIM_DATA_DIR "/models/engines/error_bands.json"

static char bdir[256];

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}


/* A per-test folder under bdir; 0 on success. */
static int test_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", bdir, name);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", out);
    return system(cmd);
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* ------------------------------------------------------------- the file */

static const char good_file[] =
    "{\"source\": \"t\", \"date\": \"2026-12-03\", \"basis\": \"leave-one-slice-out\", \"engines\": {"
    " \"vllm\": {\"rows\": 114, \"ttft\": {\"mape\": 0.21, \"bias\": -0.04}, \"tpot\": {\"mape\": 0.08, \"bias\": 0.01},"
    "  \"in_sample\": {\"ttft\": {\"mape\": 0.18, \"bias\": -0.02}, \"tpot\": {\"mape\": 0.06, \"bias\": 0.0}},"
    "  \"leave_one_engine_out\": {\"ttft\": {\"mape\": 0.5, \"bias\": -0.3}, \"tpot\": {\"mape\": 0.2, \"bias\": -0.1}}},"
    " \"trtllm-1.0\": {\"rows\": 3, \"ttft\": {\"mape\": 0.27, \"bias\": -0.14}, \"tpot\": {\"mape\": 0.095, \"bias\": -0.02}},"
    " \"trtllm\": {\"ttft\": {\"mape\": 0.245, \"bias\": -0.18}, \"tpot\": {\"mape\": 0.085, \"bias\": 0.03}}}}";

static void test_band_file_good(void)
{
    Err e = {0};
    cJSON *root = jsonio_parse(good_file, "b.json", &e);
    ErrBandFile *f = malloc(sizeof *f);
    CHECK(root && f && errband_file_parse(root, "b.json", f, &e) == 0);
    if (th_failures) {
        fprintf(stderr, "  %s\n", e.msg);
        cJSON_Delete(root);
        free(f);
        return;
    }
    CHECK_INT(f->n, 3);
    const ErrBand *v = errband_file_find(f, "vllm");
    CHECK(v && v->present && !strcmp(v->engine, "vllm") && !strcmp(v->basis, "leave-one-slice-out"));
    CHECK_INT(v->rows, 114);
    CHECK_NEAR(v->fig.ttft.mape, 0.21, 0);
    CHECK_NEAR(v->fig.ttft.bias, -0.04, 0);
    CHECK_NEAR(v->fig.tpot.mape, 0.08, 0);
    CHECK_NEAR(v->fig.tpot.bias, 0.01, 0);
    CHECK(v->has_in_sample && v->has_loeo);
    CHECK_NEAR(v->in_sample.ttft.mape, 0.18, 0);
    CHECK_NEAR(v->loeo.tpot.bias, -0.1, 0);
    CHECK_CONTAINS(v->source, "b.json of 2026-12-03");
    /* rows are optional: -1 */
    CHECK_INT(errband_file_find(f, "trtllm")->rows, -1);
    /* by file name first, then by family (the name before the first '-') */
    CHECK(errband_file_find(f, "trtllm-1.0") && !strcmp(errband_file_find(f, "trtllm-1.0")->engine, "trtllm-1.0"));
    CHECK(errband_file_find(f, "trtllm-1.2") && !strcmp(errband_file_find(f, "trtllm-1.2")->engine, "trtllm"));
    CHECK(errband_file_find(f, "vllm-0.9") && !strcmp(errband_file_find(f, "vllm-0.9")->engine, "vllm"));
    CHECK(errband_file_find(f, "sglang") == NULL);
    CHECK(errband_file_find(f, "vll") == NULL);
    cJSON_Delete(root);
    /* the bundled file reads, and every engine profile it names exists */
    CHECK(errband_file_load(BAND_FILE, f, &e) == 0);
    if (th_failures) fprintf(stderr, "  %s\n", e.msg);
    CHECK(f->n >= 1);
    for (uint32_t i = 0; i < f->n; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/models/engines/%s.json", SERVESIM_DATA_DIR, f->bands[i].engine);
        CHECK(access(p, R_OK) == 0);
        CHECK(f->bands[i].fig.ttft.mape >= 0 && f->bands[i].fig.tpot.mape >= 0);
    }
    free(f);
}

/* Each mistake names the file, the key path, the value and what was
 * expected. */
static void test_band_file_errors(void)
{
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"engines\": {}}", "b.json: missing key \"basis\""},
        {"{\"basis\": \"x\"}", "b.json: missing key \"engines\""},
        {"{\"basis\": \"x\", \"engines\": [1]}", "b.json: engines: expected an object of engine names"},
        {"{\"basis\": \"x\", \"engines\": {}, \"note\": 1}", "b.json: unknown key \"note\""},
        {"{\"basis\": 3, \"engines\": {}}", "b.json: basis: got 3, expected a string"},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm: missing key \"ttft\""},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"bias\": 0}, \"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm.ttft: missing key \"mape\""},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"mape\": \"21%\", \"bias\": 0}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm.ttft.mape: got \"21%\", expected a number"},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"mape\": -0.1, \"bias\": 0}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm.ttft.mape: got -0.1, expected a fraction in [0, 100]"},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": -1}}}}",
         "b.json: engines.vllm.tpot.bias: got -1, expected a fraction > -1"},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0, \"p90\": 1}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm.ttft: unknown key \"p90\""},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"rows\": 2.5, \"ttft\": {\"mape\": 0.1, \"bias\": 0}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm.rows: got 2.5, expected an integer"},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": 0.2, \"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines.vllm.ttft: expected an object {\"mape\": M, \"bias\": B}"},
        {"{\"basis\": \"x\", \"engines\": {\"VLLM\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": 0}}}}",
         "b.json: engines: engine \"VLLM\": expected an engine file's name"},
        {"{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0}, "
         "\"tpot\": {\"mape\": 0.1, \"bias\": 0}, \"in_sample\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0}}}}}",
         "b.json: engines.vllm.in_sample: missing key \"tpot\""},
        {NULL, NULL}};
    ErrBandFile *f = malloc(sizeof *f);
    for (int i = 0; bad[i].text; i++) {
        Err e = {0};
        cJSON *root = jsonio_parse(bad[i].text, "b.json", &e);
        CHECK(root != NULL);
        CHECK(errband_file_parse(root, "b.json", f, &e) < 0);
        CHECK_CONTAINS(e.msg, bad[i].needle);
        cJSON_Delete(root);
    }
    /* a file that is not JSON names itself */
    char d[300], path[400];
    CHECK(test_dir(d, sizeof d, "file_errors") == 0);
    snprintf(path, sizeof path, "%s/bands.json", d);
    CHECK(write_text(path, "{\"basis\": \"x\",\n \"engines\": {,}}") == 0);
    Err e = {0};
    CHECK(errband_file_load(path, f, &e) < 0);
    CHECK_CONTAINS(e.msg, path);
    CHECK_CONTAINS(e.msg, "line 2");
    free(f);
    th_rm_tree(d);
}

static void test_band_interval(void)
{
    /* e = (pred - meas) / meas, so meas = pred / (1 + e) */
    ErrBandMetric m = {.mape = 0.2, .bias = -0.1};
    CHECK_NEAR(errband_low(&m, 100), 100 / 1.1, 1e-12);
    CHECK_NEAR(errband_high(&m, 100), 100 / 0.7, 1e-12);
    CHECK_NEAR(errband_central(&m, 100), 100 / 0.9, 1e-12);
    /* a band that reaches -100%: the high end is floored at 20 x */
    ErrBandMetric w = {.mape = 0.957, .bias = -0.957};
    CHECK_NEAR(errband_high(&w, 3), 3 / ERRBAND_FLOOR, 1e-12);
    CHECK_NEAR(errband_low(&w, 3), 3, 1e-12);
    CHECK(isnan(errband_low(&m, NAN)) && isnan(errband_high(&m, NAN)));
}

/* The lookup: the scenario's own band first, then the file by name and
 * family; every way of having none says why, and only a malformed file is
 * an error. */
static void test_band_resolve(void)
{
    char d[300], path[400];
    CHECK(test_dir(d, sizeof d, "resolve") == 0);
    ErrBand b;
    Err e = {0};
    ErrBandRef none = {.has_engine = 0};
    CHECK(errband_resolve(&none, &b, &e) == 0);
    CHECK(!b.present);
    CHECK_CONTAINS(b.why, "no measured error band: the scenario names no engine");
    ErrBandRef inl = {.has_engine = 1, .label = "mine", .unbanded = "given inline without a \"base\""};
    CHECK(errband_resolve(&inl, &b, &e) == 0);
    CHECK(!b.present);
    CHECK_CONTAINS(b.why, "no measured error band for engine mine (given inline without a \"base\"");
    ErrBand own = {.present = 1, .own = 1, .engine = "mine", .basis = "ours", .rows = 3,
                   .fig = {{0.1, 0.02}, {0.05, 0}}};
    inl.own = &own;
    CHECK(errband_resolve(&inl, &b, &e) == 0);
    CHECK(b.present && b.own && b.fig.ttft.mape == 0.1);

    snprintf(path, sizeof path, "%s/bands.json", d);
    CHECK(write_text(path, good_file) == 0);
    setenv("SERVESIM_ERROR_BANDS", path, 1);
    ErrBandRef r = {.has_engine = 1, .file = "trtllm-1.3", .label = "trtllm-1.3"};
    CHECK(errband_resolve(&r, &b, &e) == 0);
    CHECK(b.present && !strcmp(b.engine, "trtllm"));
    ErrBandRef s = {.has_engine = 1, .file = "sglang-0.5", .label = "sglang-0.5"};
    CHECK(errband_resolve(&s, &b, &e) == 0);
    CHECK(!b.present);
    CHECK_CONTAINS(b.why, "no measured error band for engine sglang-0.5 (bands.json has none for it or its family "
                          "sglang)");
    /* a band file that is not there: no band, not an error */
    snprintf(path, sizeof path, "%s/missing.json", d);
    setenv("SERVESIM_ERROR_BANDS", path, 1);
    CHECK(errband_resolve(&r, &b, &e) == 0);
    CHECK(!b.present);
    CHECK_CONTAINS(b.why, "(no band file ");
    /* a malformed one is */
    snprintf(path, sizeof path, "%s/bad.json", d);
    CHECK(write_text(path, "{\"basis\": \"x\", \"engines\": {\"trtllm\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0}}}}") == 0);
    setenv("SERVESIM_ERROR_BANDS", path, 1);
    CHECK(errband_resolve(&r, &b, &e) < 0);
    CHECK_CONTAINS(e.msg, "bad.json: engines.trtllm: missing key \"tpot\"");
    unsetenv("SERVESIM_ERROR_BANDS");
    th_rm_tree(d);
}

/* ------------------------------------------------------ servesim run */

static const char run_fmt[] =
    "{\"name\": \"band run\", \"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": %s,"
    " \"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 4, \"count\": 30, \"prompt_tokens\": 512,"
    "  \"output_tokens\": 32}, \"slo\": {\"ttft_ms\": 500, \"tpot_ms\": 50}, \"seed\": 1}";

/* Runs `servesim run SCENARIO --json OUT` on the scenario with this engine
 * value (env: an environment assignment or ""); the report, or NULL. */
static cJSON *band_run(const char *dir, const char *engine, const char *env, char *out, size_t n, int *rc)
{
    char sc[400], js[400], text[2048], cmd[1400];
    snprintf(sc, sizeof sc, "%s/scenario.json", dir);
    snprintf(js, sizeof js, "%s/report.json", dir);
    snprintf(text, sizeof text, run_fmt, engine);
    if (write_text(sc, text) < 0) return NULL;
    remove(js);
    snprintf(cmd, sizeof cmd, "%s %s run %s --summary-only --json %s", env, testrun_bin(), sc, js);
    *rc = testrun_popen(cmd, out, n);
    Err e = {0};
    return *rc == 0 ? jsonio_parse_file(js, &e) : NULL;
}

/* engine "vllm": the text shows the band after the metric table, and the
 * JSON's numbers are the run's means through the band file's figures. */
static void test_band_cli_run_vllm(void)
{
    static char out[16384];
    char d[300];
    CHECK(test_dir(d, sizeof d, "run_vllm") == 0);
    int rc;
    cJSON *root = band_run(d, "\"vllm\"", "", out, sizeof out, &rc);
    CHECK_INT(rc, 0);
    CHECK(root != NULL);
    if (!root) {
        fprintf(stderr, "  %s\n", out);
        return;
    }
    CHECK_CONTAINS(out, "  model error on mean TTFT and TPOT: vllm's measured error (");
    CHECK_CONTAINS(out, "\n    mean TTFT ");
    CHECK_CONTAINS(out, " ms -> measured likely ");
    /* after the metric table, before the throughput */
    const char *band = strstr(out, "model error on mean"), *itl = strstr(out, "  max ITL"),
               *thr = strstr(out, "throughput over");
    CHECK(band && itl && thr && itl < band && band < thr);
    const cJSON *su = get(root, "summary"), *eb = get(su, "error_band");
    CHECK(cJSON_IsObject(eb));
    CHECK(eb && !strcmp(get(eb, "engine")->valuestring, "vllm"));
    CHECK(eb && cJSON_IsString(get(eb, "basis")));
    static const char *const metric[2] = {"ttft", "tpot"};
    for (int k = 0; k < 2 && eb; k++) {
        double mape = NAN, bias = NAN;
        CHECK(testrun_band_figure("vllm", metric[k], &mape, &bias) == 0);
        char key[16];
        snprintf(key, sizeof key, "%s_s", metric[k]);
        double pred_ms = num(get(su, key), "mean") * 1e3;
        const cJSON *m = get(eb, metric[k]);
        CHECK(pred_ms > 0);
        CHECK_NEAR(num(m, "mape"), mape, 1e-12);
        CHECK_NEAR(num(m, "bias"), bias, 1e-12);
        CHECK_REL(num(m, "mean_ms"), pred_ms, 1e-9);
        CHECK_REL(num(m, "low_ms"), pred_ms / (1 + bias + mape), 1e-9);
        CHECK_REL(num(m, "high_ms"), pred_ms / fmax(1 + bias - mape, 0.05), 1e-9);
        CHECK_REL(num(m, "bias_corrected_ms"), pred_ms / (1 + bias), 1e-9);
        /* the text quotes the same interval */
        char line[200];
        snprintf(line, sizeof line, "    mean %s %.2f ms -> measured likely %.2f .. %.2f ms", k ? "TPOT" : "TTFT",
                 pred_ms, num(m, "low_ms"), num(m, "high_ms"));
        CHECK_CONTAINS(out, line);
    }
    cJSON_Delete(root);
    /* {"base": "vllm"} builds on vllm's file and gets its band */
    root = band_run(d, "{\"base\": \"vllm\", \"kv\": {\"fraction\": 0.8}}", "", out, sizeof out, &rc);
    CHECK_INT(rc, 0);
    eb = get(get(root, "summary"), "error_band");
    CHECK(cJSON_IsObject(eb) && !strcmp(get(eb, "engine")->valuestring, "vllm"));
    cJSON_Delete(root);
    th_rm_tree(d);
}

/* No band: an inline engine without "base", and a scenario with none;
 * the report says so once and runs to the end. */
static void test_band_cli_run_no_band(void)
{
    static char out[16384];
    char d[300];
    CHECK(test_dir(d, sizeof d, "run_none") == 0);
    int rc;
    cJSON *root = band_run(d, "{\"name\": \"mine\", \"scheduler\": {\"kind\": \"chunked\", \"token_budget\": 2048}}", "",
                           out, sizeof out, &rc);
    CHECK_INT(rc, 0);
    CHECK_CONTAINS(out, "  model error: no measured error band for engine mine (given inline without a \"base\"");
    const char *first = strstr(out, "no measured error band");
    CHECK(first && !strstr(first + 1, "no measured error band"));
    const cJSON *su = get(root, "summary");
    CHECK(cJSON_IsNull(get(su, "error_band")));
    CHECK(cJSON_IsString(get(su, "error_band_note")));
    CHECK_CONTAINS(get(su, "error_band_note")->valuestring, "no measured error band for engine mine");
    cJSON_Delete(root);
    /* the embedded default names no engine */
    CHECK_INT(testrun_cli("run", out, sizeof out), 0);
    CHECK_CONTAINS(out, "  model error: no measured error band: the scenario names no engine");
    th_rm_tree(d);
}

/* A scenario's own "error_band" wins over the file's; a malformed band
 * file stops the run before it starts, naming the key. */
static void test_band_cli_run_own_and_malformed(void)
{
    static char out[16384];
    char d[300], env[600], bad[400];
    CHECK(test_dir(d, sizeof d, "run_own") == 0);
    int rc;
    cJSON *root = band_run(d,
                           "{\"base\": \"vllm\", \"error_band\": {\"ttft\": {\"mape\": 0.1, \"bias\": 0.05},"
                           " \"tpot\": {\"mape\": 0.02, \"bias\": 0}, \"rows\": 12, \"basis\": \"our 12 runs\"}}",
                           "", out, sizeof out, &rc);
    CHECK_INT(rc, 0);
    CHECK_CONTAINS(out, "the scenario's own measured error of engine vllm (our 12 runs, 12 measured runs)");
    const cJSON *su = get(root, "summary"), *t = get(get(su, "error_band"), "ttft");
    double pred_ms = num(get(su, "ttft_s"), "mean") * 1e3;
    CHECK_REL(num(t, "low_ms"), pred_ms / 1.15, 1e-9);
    CHECK_REL(num(t, "high_ms"), pred_ms / 0.95, 1e-9);
    cJSON_Delete(root);
    root = band_run(d, "{\"base\": \"vllm\", \"error_band\": {\"ttft\": {\"mape\": -1, \"bias\": 0}}}", "", out,
                    sizeof out, &rc);
    CHECK_INT(rc, 1);
    CHECK_CONTAINS(out, "scenario.json: engine.error_band.ttft.mape: got -1, expected a fraction in [0, 100]");
    cJSON_Delete(root);
    snprintf(bad, sizeof bad, "%s/bands.json", d);
    CHECK(write_text(bad, "{\"basis\": \"x\", \"engines\": {\"vllm\": {\"ttft\": {\"mape\": \"a\", \"bias\": 0},"
                          " \"tpot\": {\"mape\": 0, \"bias\": 0}}}}") == 0);
    snprintf(env, sizeof env, "SERVESIM_ERROR_BANDS='%s'", bad);
    root = band_run(d, "\"vllm\"", env, out, sizeof out, &rc);
    CHECK_INT(rc, 1);
    CHECK_CONTAINS(out, "bands.json: engines.vllm.ttft.mape: got \"a\", expected a number");
    CHECK(!strstr(out, "metric "));
    cJSON_Delete(root);
    th_rm_tree(d);
}

/* README.md's example ("Every answer carries its engine's measured
 * error"): the band lines are what `validate --scenario ID` then `run`
 * print for that measured vLLM row, with the shipped band file. */
static void test_band_readme_example(void)
{
    static char out[16384];
    char d[300], row[400], cmd[1400];
    FILE *f = fopen("../shared/data/e2e/silicon_visible_vllm_sglang.csv", "r");
    if (!f) {
        printf("     (skipped: needs ../shared/data/e2e/silicon_visible_vllm_sglang.csv)\n");
        return;
    }
    fclose(f);
    CHECK(test_dir(d, sizeof d, "readme") == 0);
    snprintf(row, sizeof row, "%s/row.json", d);
    snprintf(cmd, sizeof cmd,
             "%s validate ../shared/data/e2e/silicon_visible_vllm_sglang.csv --scenario "
             "qwen_qwen3_32b_qwen_qwen3_32b_h100_sxm_vllm_agg_1024x128_c8_tp2_epnone_1 > %s && %s run %s",
             testrun_bin(), row, testrun_bin(), row);
    CHECK_INT(testrun_popen(cmd, out, sizeof out), 0);
    Err e = {0};
    char *readme = read_file(SERVESIM_DATA_DIR "/cli/README.md", NULL, &e);
    CHECK(readme != NULL);
    /* the three lines, in the output and in the README */
    const char *p = strstr(out, "  model error on mean TTFT and TPOT: vllm");
    CHECK(p != NULL);
    for (int i = 0; p && i < 3; i++) {
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        char line[600];
        snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
        if (readme) CHECK_CONTAINS(readme, line);
        p = nl + 1;
    }
    free(readme);
    th_rm_tree(d);
}

static void band_no_tmpdir(void)
{
    fprintf(stderr, "  cannot create a temporary directory like %s\n", bdir);
    CHECK(0);
}

void suite_band(void);
void suite_band(void)
{
    snprintf(bdir, sizeof bdir, "/tmp/servesim-band-XXXXXX");
    if (!mkdtemp(bdir)) {
        RUN(band_no_tmpdir);
        return;
    }
    RUN(test_band_file_good);
    RUN(test_band_file_errors);
    RUN(test_band_interval);
    RUN(test_band_resolve);
    RUN(test_band_cli_run_vllm);
    RUN(test_band_cli_run_no_band);
    RUN(test_band_cli_run_own_and_malformed);
    RUN(test_band_readme_example);
    th_rm_tree(bdir);
}
