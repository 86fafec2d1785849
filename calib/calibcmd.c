/*
 * calibcmd.c -- `servesim calib`: the calibration command line.
 *
 *   run      time the model's operators on a backend, write measurements.csv
 *   check    run a backend's kernels against the CPU references
 *   import   convert published tables to the measurement schema
 *   fit      fit a profile to measurements (GSL least squares)
 *   report   a profile's fit statistics, and measured vs fitted
 *   quality  the acceptance checks on NVIDIA's and Vidur's tables
 *
 * Owns argument parsing and printing only; the work is in calib_run.c,
 * calib_meas.c, calib_fit.c and calib_report.c.  Exit status: 0 done,
 * 1 error (message on stderr), 2 bad usage.
 */
#include "calibcmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calib_fit.h"
#include "calib_report.h"
#include "calib_run.h"
#include "jsonio.h"

static const char calibcmd_usage[] =
    "usage: servesim calib <subcommand> [options]\n"
    "\n"
    "  run --model NAME --out DIR [--backend cpu|cuda] [--kernels LIB.so] [--grid small|full]\n"
    "      [--tp N] [--reps N] [--max-m M] [--quiet]\n"
    "        derive the operator shapes from the model (its GEMMs per GPU, prefill and decode\n"
    "        attention, memory streams, an empty launch), time them over the grid, and write\n"
    "        DIR/measurements.csv (op, dtype, shape, flops, bytes, latency_ms).  cpu: C kernels\n"
    "        and CBLAS, FP32; cuda: kernels/build/libservesim_kernels.so ('make kernels')\n"
    "  check [--backend cpu|cuda] [--kernels LIB.so]\n"
    "        run each kernel of the backend on random inputs against the CPU references\n"
    "  import SOURCE... --out FILE.csv\n"
    "        convert aiconfigurator folders or tables and Vidur mlp.csv / attention.csv /\n"
    "        all_reduce.csv to the measurement schema\n"
    "  fit MEASUREMENTS... --out FILE.json [--name NAME] [--hardware NAME] [--source TEXT]\n"
    "      [--holdout F] [--iter-overhead-us X]\n"
    "        fit, per operator class, t0 + per-unit cost + max(compute, memory) with\n"
    "        shape-dependent efficiencies; --hardware gives the reference peaks (default: the\n"
    "        best rates measured); one fifth of the shapes is held out to validate the fit\n"
    "  report PROFILE [MEASUREMENTS...]\n"
    "        the profile's fit statistics; with measurements, measured vs fitted per class\n"
    "  quality [--data DIR]\n"
    "        held-out fit errors on NVIDIA's H100/H200 tables and the Vidur cross-check,\n"
    "        against the acceptance targets (DIR default ../shared/data); then each class's\n"
    "        fit errors in the per-engine profiles (<hw>-trtllm, -vllm, -sglang)\n"
    "\n"
    "MEASUREMENTS and SOURCE: a servesim measurements CSV, an aiconfigurator GPU folder\n"
    "(../shared/data/kernels/aiconfigurator/h100_sxm) or per-engine folder\n"
    "(../shared/data/kernels/aiconfigurator_backends/h200_sxm/trtllm-1.3.0rc20) or one of their\n"
    "CSVs (GEMM, context/generation attention, custom all-reduce, NCCL), or a Vidur CSV.\n";

static int calibcmd_bad(const char *msg, const char *arg)
{
    fprintf(stderr, "servesim calib: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", calibcmd_usage);
    return 2;
}

static int calibcmd_fail(const Err *e)
{
    fprintf(stderr, "servesim calib: %s\n", e->msg);
    return 1;
}

static int calibcmd_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Positional arguments and --key value options in one pass. */
#define CALIBCMD_MAX_POS 64
typedef struct CalibArgs {
    const char *pos[CALIBCMD_MAX_POS];
    int npos;
    const char *model, *out, *backend, *kernels, *grid, *name, *hardware, *source, *data;
    const char *tp, *reps, *max_m, *holdout, *overhead;
    int quiet;
    unsigned given; /* bit i: calibcmd_keys[i] was given */
} CalibArgs;

static const char *const calibcmd_keys[] = {"--model", "--out", "--backend", "--kernels", "--grid", "--name",
                                            "--hardware", "--source", "--data", "--tp", "--reps", "--max-m",
                                            "--holdout", "--iter-overhead-us", "--quiet", NULL};

/* Refuses options the subcommand does not take (a typo should not be
 * silently ignored).  allowed: space-separated option names. */
static int calibcmd_only(const CalibArgs *a, const char *sub, const char *allowed)
{
    for (int i = 0; calibcmd_keys[i]; i++) {
        if (!(a->given & (1u << i))) continue;
        const char *p = strstr(allowed, calibcmd_keys[i]);
        size_t n = strlen(calibcmd_keys[i]);
        if (!p || (p[n] != ' ' && p[n] != '\0')) {
            char msg[128];
            snprintf(msg, sizeof msg, "option not taken by '%s' (it takes: %s)", sub, allowed);
            return calibcmd_bad(msg, calibcmd_keys[i]);
        }
    }
    return 0;
}

static int calibcmd_parse(int argc, char **argv, CalibArgs *a, int *help)
{
    const char *const *keys = calibcmd_keys;
    memset(a, 0, sizeof *a);
    *help = 0;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            *help = 1;
            return 0;
        }
        if (!strcmp(o, "--quiet")) {
            a->quiet = 1;
            a->given |= 1u << 14;
            continue;
        }
        if (o[0] == '-' && o[1] == '-') {
            int k = 0;
            while (keys[k] && strcmp(keys[k], o) != 0) k++;
            if (!keys[k] || k == 14) return calibcmd_bad("unknown option", o);
            a->given |= 1u << k;
            if (i + 1 >= argc) return calibcmd_bad("missing value after", o);
            const char **dst[] = {&a->model, &a->out,  &a->backend, &a->kernels, &a->grid,  &a->name,    &a->hardware,
                                  &a->source, &a->data, &a->tp,      &a->reps,    &a->max_m, &a->holdout, &a->overhead};
            *dst[k] = argv[++i];
            continue;
        }
        if (a->npos == CALIBCMD_MAX_POS) return calibcmd_bad("too many arguments", o);
        a->pos[a->npos++] = o;
    }
    return 0;
}

static int calibcmd_backend(const CalibArgs *a, ServesimKernels *k, void **handle, Err *e)
{
    *handle = NULL;
    if (!a->backend || !strcmp(a->backend, "cpu")) {
        if (a->kernels) return err_set(e, "--kernels: only with --backend cuda");
        calib_run_cpu_backend(k);
        return 0;
    }
    if (strcmp(a->backend, "cuda") != 0)
        return err_set(e, "--backend: got \"%s\", expected cpu or cuda", a->backend);
    return calib_run_load_backend(a->kernels, k, handle, e);
}

static int calibcmd_run(const CalibArgs *a)
{
    if (!a->model || !a->out) return calibcmd_bad("run needs --model and --out", NULL);
    if (a->npos) return calibcmd_bad("unexpected argument", a->pos[0]);
    CalibRunOpts o;
    calib_run_opts_default(&o);
    long v;
    if (a->grid) {
        if (!strcmp(a->grid, "full")) o.grid = CALIB_GRID_FULL;
        else if (strcmp(a->grid, "small") != 0) return calibcmd_bad("--grid needs small or full", a->grid);
    }
    if (a->tp) {
        if (calibcmd_int(a->tp, 1, 64, &v) < 0) return calibcmd_bad("--tp needs an integer in [1, 64]", a->tp);
        o.tp = (int)v;
    }
    if (a->reps) {
        if (calibcmd_int(a->reps, 1, 64, &v) < 0) return calibcmd_bad("--reps needs an integer in [1, 64]", a->reps);
        o.reps = (int)v;
    }
    if (a->max_m) {
        if (calibcmd_int(a->max_m, 1, 1 << 20, &v) < 0)
            return calibcmd_bad("--max-m needs an integer in [1, 1048576]", a->max_m);
        o.max_m = (double)v;
    }
    o.log = a->quiet ? NULL : stdout;
    Err e = {0};
    ModelDesc m;
    if (model_load(a->model, &m, &e) < 0) return calibcmd_fail(&e);
    if (mkdir(a->out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "servesim calib: %s: cannot create the output folder\n", a->out);
        return 1;
    }
    ServesimKernels k;
    void *handle;
    if (calibcmd_backend(a, &k, &handle, &e) < 0) return calibcmd_fail(&e);
    MeasSet ms;
    calib_meas_init(&ms);
    int rc = calib_run(&m, &k, &o, &ms, &e);
    char path[4096];
    snprintf(path, sizeof path, "%s/measurements.csv", a->out);
    if (rc == 0) rc = calib_meas_write_file(&ms, path, &e);
    if (rc == 0)
        printf("calib run: %zu measurements of %s on %s -> %s\n", ms.n, m.name, k.device, path);
    calib_run_unload(&k, handle);
    calib_meas_free(&ms);
    return rc < 0 ? calibcmd_fail(&e) : 0;
}

static int calibcmd_check(const CalibArgs *a)
{
    if (a->npos) return calibcmd_bad("unexpected argument", a->pos[0]);
    Err e = {0};
    ServesimKernels k;
    void *handle;
    if (calibcmd_backend(a, &k, &handle, &e) < 0) return calibcmd_fail(&e);
    char log[8192] = "";
    int rc = k.check(k.ctx, log, (int)sizeof log);
    printf("calib check: %s backend on %s\n%s", k.name, k.device, log);
    printf("calib check: %s\n", rc == 0 ? "every kernel agrees with its CPU reference" : "FAILED");
    calib_run_unload(&k, handle);
    return rc == 0 ? 0 : 1;
}

static int calibcmd_load_all(const CalibArgs *a, int first, MeasSet *ms, Err *e)
{
    for (int i = first; i < a->npos; i++)
        if (calib_meas_import(ms, a->pos[i], e) < 0) return -1;
    return 0;
}

static int calibcmd_import(const CalibArgs *a)
{
    if (!a->out || a->npos < 1) return calibcmd_bad("import needs SOURCE... and --out FILE.csv", NULL);
    MeasSet ms;
    calib_meas_init(&ms);
    Err e = {0};
    int rc = calibcmd_load_all(a, 0, &ms, &e);
    if (rc == 0) rc = calib_meas_write_file(&ms, a->out, &e);
    if (rc == 0) printf("calib import: %zu rows (%zu not modelled, skipped) -> %s\n", ms.n, ms.skipped, a->out);
    calib_meas_free(&ms);
    return rc < 0 ? calibcmd_fail(&e) : 0;
}

static int calibcmd_fit(const CalibArgs *a)
{
    if (!a->out || a->npos < 1) return calibcmd_bad("fit needs MEASUREMENTS... and --out FILE.json", NULL);
    CalibFitOpts o;
    calib_fit_opts_default(&o);
    Err e = {0};
    if (a->holdout) {
        char *end;
        o.holdout = strtod(a->holdout, &end);
        /* The folds are fifths: hold one out, or none. */
        if (*end || (o.holdout != 0 && o.holdout != 0.2))
            return calibcmd_bad("--holdout needs 0 or 0.2 (one fifth of the shapes)", a->holdout);
    }
    double overhead_us = -1;
    if (a->overhead) {
        char *end;
        overhead_us = strtod(a->overhead, &end);
        if (*end || !(overhead_us >= 0 && overhead_us <= 1e6))
            return calibcmd_bad("--iter-overhead-us needs a number in [0, 1e6]", a->overhead);
    }
    HwDesc *h = NULL;
    if (a->hardware) {
        h = xmalloc(sizeof *h);
        if (hw_load(a->hardware, h, &e) < 0) {
            free(h);
            return calibcmd_fail(&e);
        }
        calib_opts_from_hw(&o, h);
        o.hardware = a->hardware;
    }
    MeasSet ms;
    calib_meas_init(&ms);
    Profile *p = xmalloc(sizeof *p);
    char source[2600];
    int rc = calibcmd_load_all(a, 0, &ms, &e);
    if (rc == 0) {
        snprintf(source, sizeof source, "servesim calib fit%s%s of %s", a->hardware ? " --hardware " : "",
                 a->hardware ? a->hardware : "", ms.sources);
        o.source = a->source ? a->source : source;
        const char *base = strrchr(a->out, '/');
        char nm[64];
        snprintf(nm, sizeof nm, "%s", base ? base + 1 : a->out);
        char *dot = strstr(nm, ".json");
        if (dot) *dot = '\0';
        o.name = a->name ? a->name : nm;
        o.log = stdout;
        rc = calib_fit_profile(&ms, &o, p, &e);
    }
    if (rc == 0 && overhead_us >= 0) p->iter_overhead_s = overhead_us * 1e-6;
    if (rc == 0) {
        cJSON *j = profile_to_json(p);
        rc = j ? jsonio_write_file(j, a->out, 1, &e) : err_set(&e, "out of memory");
        cJSON_Delete(j);
    }
    if (rc == 0) {
        printf("calib fit: profile %s from %zu measurements -> %s\n", p->name, ms.n, a->out);
        calib_fit_print(stdout, p);
    }
    free(p);
    free(h);
    calib_meas_free(&ms);
    return rc < 0 ? calibcmd_fail(&e) : 0;
}

static int calibcmd_report(const CalibArgs *a)
{
    if (a->npos < 1) return calibcmd_bad("report needs PROFILE", NULL);
    Err e = {0};
    Profile *p = xmalloc(sizeof *p);
    MeasSet ms;
    calib_meas_init(&ms);
    int rc = profile_load(a->pos[0], p, &e);
    if (rc == 0) {
        printf("profile %s%s%s\n  %s\n", p->name, p->hardware[0] ? " for " : "", p->hardware, p->source);
        calib_fit_print(stdout, p);
        rc = calibcmd_load_all(a, 1, &ms, &e);
    }
    if (rc == 0 && ms.n) calib_report_measured(stdout, p, &ms);
    free(p);
    calib_meas_free(&ms);
    return rc < 0 ? calibcmd_fail(&e) : 0;
}

static int calibcmd_quality(const CalibArgs *a)
{
    if (a->npos) return calibcmd_bad("unexpected argument", a->pos[0]);
    char dir[4096];
    const char *data = a->data ? a->data : calib_data_dir(dir, sizeof dir);
    Err e = {0};
    CalibQuality q;
    if (calib_quality(data, &q, &e) < 0) return calibcmd_fail(&e);
    calib_quality_print(stdout, &q);
    calib_quality_profiles_print(stdout);
    printf("calib quality: %s\n", calib_quality_ok(&q) ? "every target met" : "a target was MISSED");
    return 0;
}

int calibcmd_main(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        fputs(calibcmd_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    CalibArgs a;
    int help;
    int r = calibcmd_parse(argc - 1, argv + 1, &a, &help);
    if (r) return r;
    if (help) {
        fputs(calibcmd_usage, stdout);
        return 0;
    }
    const char *sub = argv[0];
    if (!strcmp(sub, "run"))
        return (r = calibcmd_only(&a, sub, "--model --out --backend --kernels --grid --tp --reps --max-m --quiet"))
                   ? r : calibcmd_run(&a);
    if (!strcmp(sub, "check")) return (r = calibcmd_only(&a, sub, "--backend --kernels")) ? r : calibcmd_check(&a);
    if (!strcmp(sub, "import")) return (r = calibcmd_only(&a, sub, "--out")) ? r : calibcmd_import(&a);
    if (!strcmp(sub, "fit"))
        return (r = calibcmd_only(&a, sub, "--out --name --hardware --source --holdout --iter-overhead-us"))
                   ? r : calibcmd_fit(&a);
    if (!strcmp(sub, "report")) return (r = calibcmd_only(&a, sub, "")) ? r : calibcmd_report(&a);
    if (!strcmp(sub, "quality")) return (r = calibcmd_only(&a, sub, "--data")) ? r : calibcmd_quality(&a);
    return calibcmd_bad("unknown subcommand (run, check, import, fit, report, quality)", sub);
}
