/*
 * testrun.c -- see testrun.h.
 */
#include "testrun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "jsonio.h"

TestRun *testrun_new(const char *text, const char *name)
{
    TestRun *R = calloc(1, sizeof *R);
    if (!R) return NULL;
    if (scenario_load_text(text, name, 0, 0, &R->s, &R->e) < 0) {
        fprintf(stderr, "  %s\n", R->e.msg);
        free(R);
        return NULL;
    }
    R->c = cluster_new(&R->s, NULL, &R->e);
    if (!R->c || cluster_run(R->c, &R->e) < 0) {
        fprintf(stderr, "  %s\n", R->e.msg);
        cluster_free(R->c);
        scenario_free(&R->s);
        free(R);
        return NULL;
    }
    scenario_metrics_cfg(&R->s, &R->mc, R->slo, METRICS_CLS_MAX);
    cluster_rundata(R->c, &R->rd);
    metrics_summarize(&R->mc, &R->rd, &R->m);
    return R;
}

void testrun_free(TestRun *R)
{
    if (!R) return;
    cluster_free(R->c);
    scenario_free(&R->s);
    free(R);
}

const Request *testrun_req(const TestRun *R, const char *id)
{
    for (uint32_t i = 0; i < R->s.wl.n; i++)
        if (!strcmp(R->s.wl.reqs[i].id, id)) return &R->s.wl.reqs[i];
    return NULL;
}

const char *testrun_bin(void)
{
    const char *b = getenv("SERVESIM_BIN");
    return b ? b : "./servesim";
}

int testrun_popen(const char *cmd, char *out, size_t n)
{
    size_t len = strlen(cmd) + 8;
    char *c = malloc(len);
    if (!c) return -1;
    snprintf(c, len, "%s 2>&1", cmd);
    FILE *p = popen(c, "r");
    free(c);
    if (!p) return -1;
    size_t got = fread(out, 1, n - 1, p);
    out[got] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int testrun_cli(const char *args, char *out, size_t n)
{
    size_t len = strlen(testrun_bin()) + strlen(args) + 2;
    char *c = malloc(len);
    if (!c) return -1;
    snprintf(c, len, "%s %s", testrun_bin(), args);
    int rc = testrun_popen(c, out, n);
    free(c);
    return rc;
}

int testrun_band_figure(const char *engine, const char *metric, double *mape, double *bias)
{
    Err e = {0};
    cJSON *root = jsonio_parse_file(SERVESIM_DATA_DIR "/models/engines/error_bands.json", &e);
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "engines"), engine);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(eng, metric);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "mape"), *b = cJSON_GetObjectItemCaseSensitive(m, "bias");
    int ok = cJSON_IsNumber(a) && cJSON_IsNumber(b);
    *mape = ok ? a->valuedouble : NAN;
    *bias = ok ? b->valuedouble : NAN;
    cJSON_Delete(root);
    return ok ? 0 : -1;
}
