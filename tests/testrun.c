/*
 * testrun.c -- see testrun.h.
 */
#include "testrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
