/*
 * testrun.h -- a scenario text run through the cluster and summarised, for
 * the suites that check a whole run's numbers (test_policies, test_agents);
 * and the command runner of the suites that run servesim itself.
 */
#ifndef SERVESIM_TESTRUN_H
#define SERVESIM_TESTRUN_H

#include "cluster.h"
#include "metrics.h"
#include "scenario.h"

typedef struct TestRun {
    Scenario s;
    Cluster *c;
    MetricsCfg mc;
    Slo slo[METRICS_CLS_MAX];
    RunData rd;
    Summary m;
    Err e;
} TestRun;

/* Loads text (named `name` in messages), runs it and summarises; NULL,
 * with the error printed, when it fails to load or run. */
TestRun *testrun_new(const char *text, const char *name);
void testrun_free(TestRun *R);
/* The request with this id, or NULL. */
const Request *testrun_req(const TestRun *R, const char *id);

/* The servesim binary the command-line tests run: $SERVESIM_BIN, else
 * ./servesim. */
const char *testrun_bin(void);
/* Runs the shell command cmd with stderr folded into the captured output
 * (at most n - 1 bytes, NUL-terminated); its exit status, or -1. */
int testrun_popen(const char *cmd, char *out, size_t n);
/* testrun_popen of "servesim ARGS". */
int testrun_cli(const char *args, char *out, size_t n);

/* The bundled band file's {mape, bias} of an engine's "ttft" or "tpot"
 * (models/engines/error_bands.json, read directly rather than through
 * errband.c, so the tests follow the file whenever `validate --bands`
 * rewrites it); -1 and NaNs when it has none. */
int testrun_band_figure(const char *engine, const char *metric, double *mape, double *bias);

#endif
