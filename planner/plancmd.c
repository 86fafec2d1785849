/*
 * plancmd.c -- `servesim sweep` and `servesim plan` (see plancmd.h).
 *
 * Progress goes to stderr only when it is a terminal (points done, ETA);
 * the wall clock it reads never reaches a result.  Under MPI every rank
 * computes and only rank 0 prints and writes.
 */
#include "plancmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "html.h"
#include "jsonio.h"
#include "outfile.h"
#include "par.h"
#include "plan.h"
#include "sweep.h"

const char plancmd_sweep_usage[] =
    "usage: servesim sweep SCENARIO.json (--rates R1,R2,... | --auto) [options]\n"
    "\n"
    "Runs the scenario at each arrival rate (its generator's rate_per_s, or its trace or request\n"
    "list rescaled to that mean rate) and seed, and reports completion throughput, goodput, SLO\n"
    "attainment and TTFT/TPOT/E2E p50/p90/p99: the mean and 95% confidence interval over seeds\n"
    "(t distribution).  The knee: the rate of maximum goodput (golden-section search around the\n"
    "best rate) and the largest rate whose mean attainment stays >= the target (bisection).\n"
    "\n"
    "  --rates LIST    rates in requests/s, e.g. 0.5,1,2,4,8,16,32,64\n"
    "  --auto          9 rates from 1/16 to 16 x the scenario's own rate, extended while the\n"
    "                  goodput peak is the top rate or the lowest rate misses the target\n"
    "  --seeds N       seeds per rate (default 1): the scenario's seed, seed + 1, ...\n"
    "  --target A      attainment target of the knee (default: slo.attainment, else 0.9)\n"
    "  --jobs N        local worker processes (default: every core; 1: this process only);\n"
    "                  under mpirun (make MPI=1) the ranks share the runs\n"
    "  --json FILE     points[] and knee ('-' = stdout)\n"
    "  --csv FILE      one row per rate evaluated (grid and searches)\n"
    "  --html DIR      DIR/index.html: the rate plot (SVG) and the points table, with sweep.json\n"
    "  --quiet         no table, no progress\n"
    "\n"
    "The same scenario, rates and seeds give byte-identical files however many processes run them.\n";

const char plancmd_plan_usage[] =
    "usage: servesim plan PLAN.json [--json FILE] [--html DIR] [--emit DIR] [--jobs N] [--margin F]\n"
    "                     [--allow-infeasible] [--quiet]\n"
    "\n"
    "For each candidate deployment (hardware, tp, engine, scheduler, KV, speculation,\n"
    "disaggregation): memory feasibility, the largest rate one replica sustains within the SLO\n"
    "verdict, the replicas the traffic needs (confirmed by simulating the whole fleet behind its\n"
    "router), $/h and $ per 1M good output tokens; the cheapest feasible one, why the others lost,\n"
    "and the Pareto frontier of cost against p99 latency.  PLAN.json: README \"servesim plan\";\n"
    "examples in workloads/plans/.\n"
    "\n"
    "  --json FILE     candidates[] and recommended ('-' = stdout)\n"
    "  --html DIR      DIR/index.html: the Pareto plot (SVG) and the candidates table, with plan.json\n"
    "  --jobs N        local worker processes (default: every core); under mpirun the ranks\n"
    "                  share the candidates\n"
    "  --emit DIR      each feasible candidate, cheapest first: DIR/NAME.json (its fleet's scenario:\n"
    "                  servesim run DIR/NAME.json reproduces its row) and DIR/NAME.sh (the engine's\n"
    "                  launch commands); DIR/ranking.txt lists them\n"
    "  --margin F      size every fleet for F x the traffic (1.2: 20% headroom; default 1)\n"
    "  --allow-infeasible  exit 0 when no candidate is feasible (default: exit 1, the reasons printed)\n"
    "  --quiet         no table, no progress\n";

/* ------------------------------------------------------------ progress */

typedef struct Progress {
    int on;
    char what[16];              /* "runs", "candidates" */
    char phase[200];
    double t0;                  /* when this batch of jobs started */
    int shown;
} Progress;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void prog_phase(void *ctx, const char *label)
{
    Progress *p = ctx;
    snprintf(p->phase, sizeof p->phase, "%s", label);
    p->t0 = mono_s();
    if (!p->on) return;
    fprintf(stderr, "\r  %s ...\033[K", p->phase);
    fflush(stderr);
    p->shown = 1;
}

static void prog_tick(void *ctx, uint32_t done, uint32_t total)
{
    Progress *p = ctx;
    if (!p->on) return;
    double el = mono_s() - p->t0;
    double eta = done ? el / done * (total - done) : 0;
    fprintf(stderr, "\r  %s: %u/%u %s done, ETA %d:%02d\033[K", p->phase, done, total, p->what, (int)(eta / 60),
            (int)fmod(eta, 60));
    fflush(stderr);
    p->shown = 1;
}

static void prog_end(Progress *p)
{
    if (p->on && p->shown) fprintf(stderr, "\r\033[K");
}

/* ------------------------------------------------------------- helpers */

static void print_help(const char *usage)
{
    if (par_rank() != 0) return;
    fputs(usage, stdout);
    printf("\nMPI: %s\n", par_has_mpi() ? "built with OpenMPI: mpirun -np N servesim ... spreads the runs over N ranks"
                                         : "not in this build (make MPI=1 adds it); the local cores are used");
}

static int usage_error(const char *msg, const char *arg, const char *usage)
{
    if (par_rank() == 0) fprintf(stderr, "servesim: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", usage);
    return 2;
}

static int fail(const Err *e)
{
    if (par_rank() == 0) fprintf(stderr, "servesim: %s\n", e->msg);
    return 1;
}

static int parse_uint(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* "0.5,1,2" -> rates (each > 0); -1 on a bad list. */
static int parse_rates(const char *s, double *r, uint32_t max, uint32_t *n)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v > 0) || !isfinite(v) || *n >= max) return -1;
        r[(*n)++] = v;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return *n ? 0 : -1;
}

static char *read_input(const char *path, Err *e)
{
    return read_file(path, NULL, e);
}

/* --------------------------------------------------------------- sweep */

int plancmd_sweep(int argc, char **argv)
{
    const char *path = NULL, *json = NULL, *csv = NULL, *html = NULL;
    double rates[SWEEP_RATES_MAX];
    uint32_t n_rates = 0;
    long seeds = 1, jobs = 0;
    double target = 0;
    int auto_rates = 0, quiet = 0;
    par_init();
    int rc = 0;
    for (int i = 0; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(plancmd_sweep_usage);
            par_finalize();
            return 0;
        } else if (!strcmp(a, "--rates")) {
            if (parse_rates(v, rates, SWEEP_RATES_MAX, &n_rates) < 0)
                rc = usage_error("--rates needs rates > 0 in requests/s, comma-separated (e.g. 0.5,1,2,4)", v,
                                 plancmd_sweep_usage);
            i++;
        } else if (!strcmp(a, "--auto")) {
            auto_rates = 1;
        } else if (!strcmp(a, "--seeds")) {
            if (parse_uint(v, 1, SWEEP_SEEDS_MAX, &seeds) < 0)
                rc = usage_error("--seeds needs an integer from 1 to 64", v, plancmd_sweep_usage);
            i++;
        } else if (!strcmp(a, "--target")) {
            char *end;
            target = v ? strtod(v, &end) : 0;
            if (!v || *end || !(target > 0 && target <= 1))
                rc = usage_error("--target needs an attainment in (0, 1], e.g. 0.9", v, plancmd_sweep_usage);
            i++;
        } else if (!strcmp(a, "--jobs")) {
            if (parse_uint(v, 1, 4096, &jobs) < 0) rc = usage_error("--jobs needs an integer >= 1", v, plancmd_sweep_usage);
            i++;
        } else if (!strcmp(a, "--json") || !strcmp(a, "--csv") || !strcmp(a, "--html")) {
            if (!v) rc = usage_error("option needs a file name", a, plancmd_sweep_usage);
            else if (a[2] == 'j') json = v;
            else if (a[2] == 'h') html = v;
            else csv = v;
            i++;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            rc = usage_error("unknown option", a, plancmd_sweep_usage);
        } else if (!path) {
            path = a;
        } else {
            rc = usage_error("more than one scenario given", a, plancmd_sweep_usage);
        }
    }
    if (rc == 0 && !path) rc = usage_error("a scenario file is required", NULL, plancmd_sweep_usage);
    if (rc == 0 && auto_rates == (n_rates > 0))
        rc = usage_error("give either --rates LIST or --auto", NULL, plancmd_sweep_usage);
    if (rc) {
        par_finalize();
        return rc;
    }
    Err e = {0};
    char *text = read_input(path, &e);
    if (!text) {
        rc = fail(&e);
        par_finalize();
        return rc;
    }
    /* before any work: no output over the scenario (or a file it names,
     * read so far; the write itself refuses the rest) */
    if ((json && outfile_check(json, "--json", &e) < 0) || (csv && outfile_check(csv, "--csv", &e) < 0)) {
        free(text);
        rc = fail(&e);
        par_finalize();
        return rc;
    }
    Progress pr = {.on = !quiet && par_rank() == 0 && isatty(2)};
    snprintf(pr.what, sizeof pr.what, "runs");
    SweepOpts o = {.rates = rates, .n_rates = n_rates, .auto_rates = auto_rates, .seeds = (uint32_t)seeds,
                   .target = target, .par = {.workers = (int)jobs, .progress = prog_tick, .progress_ctx = &pr},
                   .phase = prog_phase, .phase_ctx = &pr};
    cJSON *out = sweep_run(text, path, &o, &e);
    free(text);
    prog_end(&pr);
    if (!out) {
        rc = fail(&e);
    } else if (par_rank() == 0) {
        int to_stdout = json && !strcmp(json, "-");
        if (!quiet && !to_stdout) sweep_print(stdout, out);
        if (json && jsonio_write_file(out, json, 1, &e) < 0) rc = fail(&e);
        if (rc == 0 && csv && sweep_write_csv(out, csv, &e) < 0) rc = fail(&e);
        HtmlCmd hc = {"sweep", argc, argv};
        if (rc == 0 && html && html_sweep(html, &hc, out, &e) < 0) rc = fail(&e);
    }
    cJSON_Delete(out);
    par_finalize();
    return rc;
}

/* ---------------------------------------------------------------- plan */

int plancmd_plan(int argc, char **argv)
{
    const char *path = NULL, *json = NULL, *html = NULL, *emit = NULL;
    long jobs = 0;
    int quiet = 0, rc = 0, allow_infeasible = 0;
    double margin = 1;
    par_init();
    for (int i = 0; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(plancmd_plan_usage);
            par_finalize();
            return 0;
        } else if (!strcmp(a, "--json") || !strcmp(a, "--html")) {
            if (!v) rc = usage_error("option needs a file name", a, plancmd_plan_usage);
            if (a[2] == 'j') json = v;
            else html = v;
            i++;
        } else if (!strcmp(a, "--jobs")) {
            if (parse_uint(v, 1, 4096, &jobs) < 0) rc = usage_error("--jobs needs an integer >= 1", v, plancmd_plan_usage);
            i++;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--emit")) {
            if (!v) rc = usage_error("--emit needs a directory", a, plancmd_plan_usage);
            emit = v;
            i++;
        } else if (!strcmp(a, "--allow-infeasible")) {
            allow_infeasible = 1;
        } else if (!strcmp(a, "--margin")) {
            if (!v || common_parse_decimal(v, &margin) < 0 || !(margin >= 1) || margin > 100)
                rc = usage_error("--margin needs a factor in [1, 100] (1.2: size for 20% more traffic)", v,
                                 plancmd_plan_usage);
            i++;
        } else if (a[0] == '-' && a[1]) {
            rc = usage_error("unknown option", a, plancmd_plan_usage);
        } else if (!path) {
            path = a;
        } else {
            rc = usage_error("more than one plan given", a, plancmd_plan_usage);
        }
    }
    if (rc == 0 && !path) rc = usage_error("a plan file is required", NULL, plancmd_plan_usage);
    if (rc) {
        par_finalize();
        return rc;
    }
    Err e = {0};
    char *text = read_input(path, &e);
    if (!text) {
        rc = fail(&e);
        par_finalize();
        return rc;
    }
    if (json && outfile_check(json, "--json", &e) < 0) {
        free(text);
        rc = fail(&e);
        par_finalize();
        return rc;
    }
    Progress pr = {.on = !quiet && par_rank() == 0 && isatty(2)};
    snprintf(pr.what, sizeof pr.what, "candidates");
    PlanOpts o = {.par = {.workers = (int)jobs, .progress = prog_tick, .progress_ctx = &pr}, .phase = prog_phase,
                  .phase_ctx = &pr, .margin = margin,
                  .emit_dir = par_rank() == 0 ? emit : NULL};
    cJSON *out = plan_run(text, path, &o, &e);
    free(text);
    prog_end(&pr);
    if (!out) {
        rc = fail(&e);
    } else if (par_rank() == 0) {
        int to_stdout = json && !strcmp(json, "-");
        if (!quiet && !to_stdout) plan_print(stdout, out);
        if (json && jsonio_write_file(out, json, 1, &e) < 0) rc = fail(&e);
        HtmlCmd hc = {"plan", argc, argv};
        if (rc == 0 && html && html_plan(html, &hc, out, &e) < 0) rc = fail(&e);
        /* no feasible candidate is a failed plan (issue 37); the outputs
         * and each candidate's reason are written first */
        if (rc == 0 && !allow_infeasible && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(out, "recommended"))) {
            fprintf(stderr, "servesim: plan %s: no candidate is feasible (each candidate's reason is in the plan's output); "
                            "--allow-infeasible exits 0\n", path);
            rc = 1;
        }
    }
    cJSON_Delete(out);
    par_finalize();
    return rc;
}
