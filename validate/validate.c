/*
 * validate.c -- `servesim validate` (see validate.h and validate/README.md).
 *
 * Rows are simulated in worker processes (fork, one pipe each): every row
 * is an independent simulation, so the result does not depend on the
 * number of workers, and no simulator state is shared between threads.
 *
 * The fit (--fit, --loso) of the engine constants VTheta:
 *   1. every row is simulated with no host time and no request overhead
 *      (run A): TPOT0, TTFT0 and the mean running batch B;
 *   2. host time: measured TPOT - TPOT0 = L x (base + per_seq x B +
 *      per_gpu x (tp - 1)), L the model's layers for an engine whose
 *      constants are per layer (engprof.h per_layer) and 1 otherwise,
 *      least absolute relative error by iteratively reweighted least
 *      squares (GSL gsl_multifit_wlinear), terms that come out negative
 *      dropped;
 *   3. the request overhead: the training rows simulated with that host
 *      time and each overhead of a grid (vfit_request), the one with the
 *      least TTFT MAPE kept; for closed loops with the end spread beside
 *      it, then the serial front end's time per token at that pair;
 *   3b. for an engine whose rows are all static batches (splitwise), the
 *      exposed large all-reduce on a grid (vfit_allreduce), then 3 again;
 *   4. the host time again as in 2, from the rows simulated with that
 *      request overhead and no host time (the overhead moves how prompts
 *      bunch, and so the prefill stalls each TPOT holds).
 * Constants are fitted per engine from that engine's rows when it has at
 * least VFIT_MIN_ROWS of them, and otherwise from all engines' rows
 * together (an engine with no visible rows borrows what the others show,
 * in the form -- per step or per layer -- of the rows it is fitted on).
 * The versions of one engine ("trtllm", "trtllm-1.0": one family, the name
 * before the '-') share the host time, fitted on all their rows in 2 and
 * 4; each version keeps its own request overhead (3), as the host loop is
 * the same code and the serving front end the part that changed.
 * Leave-one-slice-out: for each slice, the fit runs without the slice's
 * rows and the slice is predicted with the result.  Leave-one-engine-out:
 * the same for each engine family, its versions together; its engines
 * then have no training rows, so they get the fit over all the other
 * engines' rows (in that fit's form), as an engine never measured would.
 *
 * Several files are one set of rows (each read with its own header, all
 * of one format); a row's file is kept beside it (VView.file_of) for the
 * messages and the JSON.  No output may name an input.
 */
#include "validate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "engprof.h"
#include "html.h"
#include "jsonio.h"
#include "outfile.h"
#include "paths.h"
#include "vbands.h"
#include "vrows.h"

#define VFIT_MIN_ROWS 10
#define VFIT_IRLS_STEPS 40 /* vfit_host_on: reweightings toward least absolute error */
#define VALIDATE_MAX_FILTERS 16
#define VALIDATE_MAX_EXTRA_CLIENTS 1024
#define VALIDATE_MAX_JOBS 256
#define VALIDATE_MAX_FILES 64
#define VALIDATE_MAX_ENGINES 16 /* engines fitted (--fit, --loso) */

const char validate_usage[] =
    "usage: servesim validate FILE [FILE ...] [--format silicon|splitwise] [--filter KEY=VALUE ...]\n"
    "                         [--json OUT] [--html DIR] [--jobs N] [--fit] [--loso [--bands OUT]]\n"
    "                         [--rows | --no-rows] [--scenario ID]\n"
    "                         [--set K=V[,K=V...]] [--extra-clients N]\n"
    "\n"
    "Simulates every row of one or more files of measured serving runs (their rows\n"
    "together; every file of one format) and compares mean TTFT and TPOT\n"
    "(splitwise: prompt_time and token_time) with the measurement:\n"
    "per row, per slice (model, GPU, engine, precision) and overall -- MAPE,\n"
    "median absolute error, signed bias, share of rows within +-10%.  Rows that\n"
    "cannot be modelled are listed with the reason.  MoE rows run their layout\n"
    "(tp_size, attention_dp_size, moe_tp_size, moe_ep_size; validate/README.md).\n"
    "\n"
    "  --format F        silicon (aiconfigurator) or splitwise; default: from the header\n"
    "  --filter K=V      keep rows whose column K equals V (repeatable; all must match)\n"
    "  --json OUT        {\"rows\": [...], \"slices\": [...], \"overall\": {...}, \"engines\": [...]}\n"
    "  --html DIR        DIR/index.html: the per-slice table and the measured-vs-predicted scatter\n"
    "  --jobs N          worker processes (default: the online CPUs)\n"
    "  --fit             fit the engine constants (host time per iteration and per\n"
    "                    sequence, shared by an engine's versions; per-request overhead;\n"
    "                    for static batches the exposed large all-reduce) to these rows\n"
    "                    and print them\n"
    "  --loso            held out: fit without each slice and predict it (leave-one-slice-out),\n"
    "                    and without each engine family, its versions together (\"trtllm\",\n"
    "                    \"trtllm-1.0\"), and predict it (leave-one-engine-out); per engine\n"
    "                    family the in-sample and both held-out figures side by side\n"
    "  --bands OUT       with --loso: per engine the leave-one-slice-out (and in-sample,\n"
    "                    leave-one-engine-out) MAPE and bias to OUT, the error band run, sweep\n"
    "                    and plan print (models/engines/error_bands.json); an existing band\n"
    "                    file's other engines are kept; $SERVESIM_DATE sets its date\n"
    "  --rows/--no-rows  print (default) or omit the per-row table\n"
    "  --scenario ID     print the scenario the row with that id runs as (for `servesim run`)\n"
    "  --set K=V,...     what-if: these engine constants for every row instead of the\n"
    "                    engine files' (base_us, per_seq_us, per_gpu_us, before_us, jitter_us,\n"
    "                    jitter_per_token_us, end_spread_tokens, front_end_per_token_us,\n"
    "                    ar_above_tokens, ar_link_fraction; unset = 0)\n"
    "  --extra-clients N what-if for closed-loop rows: N clients more than the concurrency the\n"
    "                    server's max_batch_size and max_num_tokens were set to (default 0)\n";

/* ------------------------------------------------------------ running */

typedef struct VResult {
    uint32_t i;
    double ttft, tpot, running, host_scale;
    int per_layer;
    char err[200];
} VResult;

/* Simulates rows idx[0..m) with theta th[row] (th NULL: the engine files'
 * constants) on `jobs` worker processes. */
static int vrun(VRow *rows, const uint32_t *idx, uint32_t m, const VTheta *th, int jobs, Err *e)
{
    if (m == 0) return 0;
    if (jobs > (int)m) jobs = (int)m;
    if (jobs <= 1) {
        for (uint32_t k = 0; k < m; k++) vrows_simulate(&rows[idx[k]], th ? &th[idx[k]] : NULL);
        return 0;
    }
    fflush(NULL);
    int fds[VALIDATE_MAX_JOBS];
    pid_t pids[VALIDATE_MAX_JOBS];
    int started = 0, rc = 0;
    for (int w = 0; w < jobs; w++) {
        int p[2];
        if (pipe(p) < 0) {
            rc = err_set(e, "validate: pipe: %s", strerror(errno));
            break;
        }
        pid_t pid = fork();
        if (pid < 0) {
            close(p[0]);
            close(p[1]);
            rc = err_set(e, "validate: fork: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            close(p[0]);
            for (int o = 0; o < started; o++) close(fds[o]);
            for (uint32_t k = (uint32_t)w; k < m; k += (uint32_t)jobs) {
                VRow *r = &rows[idx[k]];
                vrows_simulate(r, th ? &th[idx[k]] : NULL);
                VResult res = {.i = idx[k], .ttft = r->pred_ttft_ms, .tpot = r->pred_tpot_ms, .running = r->mean_running,
                               .host_scale = r->host_scale, .per_layer = r->per_layer};
                memcpy(res.err, r->err, sizeof res.err);
                const char *b = (const char *)&res;
                size_t left = sizeof res;
                while (left) {
                    ssize_t wr = write(p[1], b, left);
                    if (wr < 0 && errno == EINTR) continue;
                    if (wr <= 0) _exit(3);
                    b += wr;
                    left -= (size_t)wr;
                }
            }
            _exit(0);
        }
        close(p[1]);
        fds[started] = p[0];
        pids[started++] = pid;
    }
    uint32_t got = 0;
    for (int w = 0; w < started; w++) {
        VResult res;
        for (;;) {
            char *b = (char *)&res;
            size_t have = 0;
            while (have < sizeof res) {
                ssize_t rd = read(fds[w], b + have, sizeof res - have);
                if (rd < 0 && errno == EINTR) continue;
                if (rd <= 0) break;
                have += (size_t)rd;
            }
            if (have < sizeof res) break;
            if (res.i >= UINT32_MAX) continue; /* NEVER */
            VRow *r = &rows[res.i];
            r->pred_ttft_ms = res.ttft;
            r->pred_tpot_ms = res.tpot;
            r->mean_running = res.running;
            r->host_scale = res.host_scale;
            r->per_layer = res.per_layer;
            memcpy(r->err, res.err, sizeof r->err);
            r->err[sizeof r->err - 1] = 0;
            got++;
        }
        close(fds[w]);
    }
    for (int w = 0; w < started; w++) {
        int st;
        while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR) {}
        if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            rc = err_set(e, "validate: a worker process failed (%s %d)", WIFEXITED(st) ? "exit status" : "signal",
                         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    if (rc == 0 && got != m) rc = err_set(e, "validate: %u of %u rows came back from the workers", got, m);
    return rc;
}

/* ------------------------------------------------------------ statistics */

typedef struct VStats {
    uint32_t n;
    double mape, median_abs, bias, within10;
} VStats;

typedef struct VAcc {
    double *rel;
    uint32_t n;
} VAcc;

static void vacc_add(VAcc *a, double pred, double meas)
{
    if (!(pred == pred) || !(meas > 0)) return;
    a->rel[a->n++] = (pred - meas) / meas;
}

static VStats vacc_stats(VAcc *a)
{
    VStats s = {.n = a->n};
    if (!a->n) return s;
    double *ab = xmalloc(a->n * sizeof *ab);
    uint32_t w = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        ab[i] = fabs(a->rel[i]);
        w += ab[i] <= 0.10;
    }
    s.mape = gsl_stats_mean(ab, 1, a->n);
    s.bias = gsl_stats_mean(a->rel, 1, a->n);
    gsl_sort(ab, 1, a->n);
    s.median_abs = gsl_stats_median_from_sorted_data(ab, 1, a->n);
    s.within10 = (double)w / a->n;
    free(ab);
    return s;
}

/* Rows grouped by slice, by engine (its file's name: "trtllm-1.0") or by
 * engine family (the name before the first '-': "trtllm"), the groups in
 * order of first appearance; rows that are not modelled in none. */
typedef enum { VGROUP_SLICE, VGROUP_ENGINE, VGROUP_FAMILY } VGroupKind;

typedef struct VGroups {
    char (*name)[160];
    uint32_t n;
    uint32_t *of_row;   /* group index per row, UINT32_MAX for rows not modelled */
} VGroups;

static void vgroups_build(const VRow *rows, uint32_t n, VGroupKind kind, VGroups *g)
{
    g->name = xcalloc(n ? n : 1, sizeof *g->name);
    g->of_row = xmalloc((n ? n : 1) * sizeof *g->of_row);
    g->n = 0;
    for (uint32_t i = 0; i < n; i++) {
        g->of_row[i] = UINT32_MAX;
        if (rows[i].skip[0]) continue;
        char name[160];
        if (kind == VGROUP_SLICE) snprintf(name, sizeof name, "%s", rows[i].slice);
        else if (kind == VGROUP_ENGINE) snprintf(name, sizeof name, "%s", rows[i].engine);
        else snprintf(name, sizeof name, "%.*s", (int)strcspn(rows[i].engine, "-"), rows[i].engine);
        uint32_t k = 0;
        while (k < g->n && strcmp(g->name[k], name)) k++;
        if (k == g->n) memcpy(g->name[g->n++], name, sizeof g->name[0]);
        g->of_row[i] = k;
    }
}

static void vgroups_free(VGroups *g)
{
    free(g->name);
    free(g->of_row);
}

/* Stats of pred arrays over the rows of group k of of_row (UINT32_MAX:
 * every modelled row). */
static void vstats_of(const VRow *rows, uint32_t n, const uint32_t *of_row, uint32_t k, const double *pt,
                      const double *pp, VStats *ttft, VStats *tpot)
{
    VAcc a = {xmalloc((n ? n : 1) * sizeof(double)), 0}, b = {xmalloc((n ? n : 1) * sizeof(double)), 0};
    for (uint32_t i = 0; i < n; i++) {
        if (of_row[i] == UINT32_MAX || (k != UINT32_MAX && of_row[i] != k)) continue;
        vacc_add(&a, pt[i], rows[i].meas_ttft_ms);
        vacc_add(&b, pp[i], rows[i].meas_tpot_ms);
    }
    *ttft = vacc_stats(&a);
    *tpot = vacc_stats(&b);
    free(a.rel);
    free(b.rel);
}

/* ------------------------------------------------------------ fitting */

typedef struct VFitCtx {
    VRow *rows;
    uint32_t n;
    double *tpot0, *ttft0, *run0;   /* run A */
    double *scale0;                 /* run A's host_scale: the engine files' forms */
    int *layered0;                  /* run A's per_layer */
    int jobs;
} VFitCtx;

/* Host time from run A over the rows in `use`: (meas - TPOT0) = base +
 * per_seq x B + per_gpu x (tp - 1) fitted for the least absolute relative
 * error (the MAPE validate reports: a few rows far off pull squares, not
 * absolute values), by least squares reweighted VFIT_IRLS_STEPS times.
 * Every subset of the three terms is fitted and the one with the least
 * error whose coefficients are all >= 0 kept (a negative host time means
 * the term is not in the data). */
static void vfit_host_on(const VFitCtx *c, const double *tpot0, const double *run0, const double *scale,
                         const uint32_t *use, uint32_t m,
                         VTheta *th)
{
    th->base_us = th->per_seq_us = th->per_gpu_us = 0;
    uint32_t k = 0;
    for (uint32_t j = 0; j < m; j++) k += tpot0[use[j]] == tpot0[use[j]] && run0[use[j]] == run0[use[j]];
    if (k < 4) return;
    double best = INFINITY;
    for (int mask = 1; mask < 8; mask++) {
        size_t p = (size_t)((mask & 1) + ((mask >> 1) & 1) + ((mask >> 2) & 1));
        gsl_matrix *X = gsl_matrix_alloc(k, p), *cov = gsl_matrix_alloc(p, p);
        gsl_vector *y = gsl_vector_alloc(k), *w = gsl_vector_alloc(k), *b = gsl_vector_alloc(p);
        double *w0 = xmalloc(k * sizeof *w0);
        size_t r = 0;
        for (uint32_t j = 0; j < m; j++) {
            uint32_t i = use[j];
            if (!(tpot0[i] == tpot0[i] && run0[i] == run0[i])) continue;
            /* host_scale: the model's layers when the engine's constants
             * are per layer (engprof.h "per_layer"), else 1 */
            const double hs = scale[i];
            double meas = c->rows[i].meas_tpot_ms, x[3] = {hs, hs * run0[i], hs * (c->rows[i].tp - 1.0)};
            size_t col = 0;
            for (int t = 0; t < 3; t++)
                if (mask >> t & 1) gsl_matrix_set(X, r, col++, x[t]);
            gsl_vector_set(y, r, (meas - tpot0[i]) * 1e3); /* us */
            gsl_vector_set(w, r, 1.0 / (meas * meas));
            w0[r] = 1.0 / (meas * meas);
            r++;
        }
        double chisq;
        gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(k, p);
        int st = gsl_multifit_wlinear(X, w, y, b, cov, &chisq, ws);
        /* least absolute relative error (the MAPE validate reports, which a
         * few rows far off cannot pull as they pull squares): iteratively
         * reweighted least squares from the least-squares start, each row's
         * weight 1 / (meas^2 |e|), |e| floored at 1e-4 */
        double l1 = INFINITY;
        for (int it = 0; it < VFIT_IRLS_STEPS && st == 0; it++) {
            l1 = 0;
            for (size_t q = 0; q < k; q++) {
                double fit = 0;
                for (size_t t = 0; t < p; t++) fit += gsl_matrix_get(X, q, t) * gsl_vector_get(b, t);
                double sw = sqrt(w0[q]), z = fabs(gsl_vector_get(y, q) - fit) * sw / 1e3;
                l1 += z;
                gsl_vector_set(w, q, w0[q] / fmax(z, 1e-4));
            }
            if (it + 1 < VFIT_IRLS_STEPS) st = gsl_multifit_wlinear(X, w, y, b, cov, &chisq, ws);
        }
        double coef[3] = {0, 0, 0};
        int ok = st == 0;
        size_t col = 0;
        for (int t = 0; t < 3; t++)
            if (mask >> t & 1) {
                coef[t] = gsl_vector_get(b, col++);
                ok = ok && coef[t] >= 0;
            }
        gsl_multifit_linear_free(ws);
        gsl_matrix_free(X);
        gsl_matrix_free(cov);
        gsl_vector_free(y);
        gsl_vector_free(w);
        gsl_vector_free(b);
        free(w0);
        if (ok && l1 < best) {
            best = l1;
            th->base_us = coef[0];
            th->per_seq_us = coef[1];
            th->per_gpu_us = coef[2];
        }
    }
}

static void vfit_host(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th)
{
    vfit_host_on(c, c->tpot0, c->run0, c->scale0, use, m, th);
}

/* The host time again, from the rows simulated with no host time but the
 * request overhead in place (which moves how prompts bunch, and so the
 * prefill stalls in TPOT): per[row]'s (per NULL: th's) for each row;
 * sets th's host terms.  The serial front end stays out of this run: with
 * no host time the GPU alone emits tokens faster than a fitted front end
 * streams them, so it would hold clients at its door, lower the running
 * batch and the TPOT, and the regression would read that as host time
 * per GPU (SGLang: 1,219 us a GPU with it, 462 without; validate/README.md). */
static int vfit_host_again(const VFitCtx *c, const uint32_t *use, uint32_t m, const VTheta *per, VTheta *th, Err *e)
{
    VTheta *ths = xmalloc((c->n ? c->n : 1) * sizeof *ths);
    double *tp = xmalloc((c->n ? c->n : 1) * sizeof *tp), *ru = xmalloc((c->n ? c->n : 1) * sizeof *ru);
    double *sc = xmalloc((c->n ? c->n : 1) * sizeof *sc);
    for (uint32_t j = 0; j < m; j++) {
        const VTheta *q = per ? &per[use[j]] : th;
        ths[use[j]] = (VTheta){.before_us = q->before_us, .end_spread_tokens = q->end_spread_tokens,
                               .form = q->form,
                               .ar_above_tokens = q->ar_above_tokens,
                               .ar_link_fraction = q->ar_link_fraction};
    }
    int rc = vrun(c->rows, use, m, ths, c->jobs, e);
    if (rc == 0) {
        for (uint32_t j = 0; j < m; j++) {
            tp[use[j]] = c->rows[use[j]].pred_tpot_ms;
            ru[use[j]] = c->rows[use[j]].mean_running;
            sc[use[j]] = c->rows[use[j]].host_scale; /* the form these thetas run in */
        }
        vfit_host_on(c, tp, ru, sc, use, m, th); /* sets the host terms only */
    }
    free(ths);
    free(tp);
    free(ru);
    free(sc);
    return rc < 0 ? -1 : 0;
}

/* The request overhead: the rows of `use` simulated with host time th and
 * each before_us of a grid -- 0 and 2 .. 128 ms in doublings, then the
 * geometric midpoints beside the best of those -- and the one whose TTFT
 * MAPE is least kept (the first of equals).  A search, not a formula: the
 * overhead also delays a closed-loop client's next request, which moves
 * how the clients' prompts bunch, so TTFT does not grow by the overhead
 * alone (validate/README.md); and MAPE, the figure validate reports, not a
 * least-squares fit that follows whichever slice is furthest off. */
#define VFIT_BEFORE_STEPS 8 /* 0, 2, 4, ..., 128 ms */
#define VFIT_SQRT2 1.4142135623730951
/* The TTFT MAPE of the rows of `use` simulated with t (ths: scratch, one
 * per row): NAN when none came back; -1 on a failed run. */
static int vfit_ttft_mape(const VFitCtx *c, const uint32_t *use, uint32_t m, const VTheta *t, VTheta *ths,
                          double *mape, Err *e)
{
    for (uint32_t j = 0; j < m; j++) ths[use[j]] = *t;
    if (vrun(c->rows, use, m, ths, c->jobs, e) < 0) return -1;
    VAcc a = {xmalloc((m ? m : 1) * sizeof(double)), 0};
    for (uint32_t j = 0; j < m; j++) vacc_add(&a, c->rows[use[j]].pred_ttft_ms, c->rows[use[j]].meas_ttft_ms);
    VStats st = vacc_stats(&a);
    free(a.rel);
    *mape = st.n > 0 ? st.mape : NAN;
    return 0;
}

/* The best point of a search so far: its TTFT MAPE and constants. */
typedef struct VBest {
    double mape, before_us, spread, fe;
} VBest;

/* Simulates the rows of `use` with th at (before_us b, end spread sp,
 * front end fe us a token) and keeps the point in *best when its TTFT MAPE
 * is less (the first of equals). */
static int vfit_try(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th, VTheta *ths, double b, double sp,
                    double fe, VBest *best, Err *e)
{
    double mape;
    th->before_us = b;
    th->end_spread_tokens = sp;
    th->fe_per_token_us = fe;
    if (vfit_ttft_mape(c, use, m, th, ths, &mape, e) < 0) return -1;
    if (mape < best->mape) /* false for NAN */
        *best = (VBest){mape, b, sp, fe};
    return 0;
}

/* The before_us grid alone (static batches: nothing bunches, so no end
 * spread): the coarse grid, then the geometric midpoints beside its best. */
static int vfit_before(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th, VTheta *ths, Err *e)
{
    VBest best = {INFINITY, 0, 0, 0};
    int rc = 0;
    for (int g = 0; g < VFIT_BEFORE_STEPS && rc == 0; g++)
        rc = vfit_try(c, use, m, th, ths, g ? 1000.0 * (1 << g) : 0, 0, 0, &best, e);
    double coarse = best.before_us;
    if (rc == 0 && coarse > 0) {
        rc = vfit_try(c, use, m, th, ths, coarse / VFIT_SQRT2, 0, 0, &best, e);
        if (rc == 0 && coarse < 1000.0 * (1 << (VFIT_BEFORE_STEPS - 1)))
            rc = vfit_try(c, use, m, th, ths, coarse * VFIT_SQRT2, 0, 0, &best, e);
    }
    th->before_us = best.before_us;
    th->fe_per_token_us = 0;
    return rc;
}

/* Closed-loop rows: before_us and the end spread (engprof.h
 * request_overhead.end_spread_tokens) together, as the spread moves how
 * the prompts bunch and so what the overhead has to stand for (one, then
 * the other, stops short: rows made with a spread of 2 and 16 ms find 5.7
 * ms and no spread that way).  Every pair of the before_us grid and a
 * spread of 0 .. VFIT_SPREAD_MAX tokens (decode steps) is simulated over
 * every VFIT_SUB_EVERY-th row of `use` when it has VFIT_SUB_MIN rows (all
 * of them below), then the best pair and its neighbours -- before_us
 * / sqrt 2 and x sqrt 2 (from 0: 1 ms), the spread -+1 -- over all of
 * them, and the best of those kept (the first of equals).  Then the serial
 * front end's time per streamed token (engprof.h "front_end"; none while
 * the pair is searched): each of VFIT_FE_GRID at the pair over the
 * sub-sample, and, when one of them beats none there, it and its
 * neighbours (/ and x sqrt 2) over all the rows, then before_us / and x
 * sqrt 2 at the time found; the best of everything tried over all the
 * rows kept.  A front end that saturates holds a closed loop's clients
 * at its door (a request rate the GPUs do not set: validate/README.md). */
#define VFIT_SPREAD_MAX 4
#define VFIT_SUB_EVERY 4
#define VFIT_SUB_MIN 64
static const double VFIT_FE_GRID[] = {25, 50, 100, 200}; /* us a token; 0 (none) is the pair's own point */
static int vfit_request_closed(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th, VTheta *ths, Err *e)
{
    uint32_t *sub = xmalloc((m ? m : 1) * sizeof *sub), ms = 0;
    for (uint32_t j = 0; j < m; j++)
        if (m < VFIT_SUB_MIN || j % VFIT_SUB_EVERY == 0) sub[ms++] = use[j];
    VBest grid = {INFINITY, 0, 0, 0};
    int rc = 0;
    for (int sp = 0; sp <= VFIT_SPREAD_MAX && rc == 0; sp++)
        for (int g = 0; g < VFIT_BEFORE_STEPS && rc == 0; g++)
            rc = vfit_try(c, sub, ms, th, ths, g ? 1000.0 * (1 << g) : 0, sp, 0, &grid, e);
    /* over all the rows: the pair found and its neighbours */
    VBest best = {INFINITY, 0, 0, 0};
    double b0 = grid.before_us, sp0 = grid.spread;
    if (rc == 0) rc = vfit_try(c, use, m, th, ths, b0 > 0 ? b0 / VFIT_SQRT2 : 0, sp0, 0, &best, e);
    if (rc == 0) rc = vfit_try(c, use, m, th, ths, b0 > 0 ? b0 : 1000, sp0, 0, &best, e);
    if (rc == 0 && b0 > 0) rc = vfit_try(c, use, m, th, ths, b0 * VFIT_SQRT2, sp0, 0, &best, e);
    if (rc == 0 && sp0 > 0) rc = vfit_try(c, use, m, th, ths, b0, sp0 - 1, 0, &best, e);
    if (rc == 0 && sp0 < VFIT_SPREAD_MAX) rc = vfit_try(c, use, m, th, ths, b0, sp0 + 1, 0, &best, e);
    /* the front end at that pair: the grid over the sub-sample (its own
     * point without one again, as grid's may be another pair) */
    VBest fe = {INFINITY, 0, 0, 0};
    double b1 = best.before_us, sp1 = best.spread;
    if (rc == 0) rc = vfit_try(c, sub, ms, th, ths, b1, sp1, 0, &fe, e);
    for (size_t g = 0; g < sizeof VFIT_FE_GRID / sizeof *VFIT_FE_GRID && rc == 0; g++)
        rc = vfit_try(c, sub, ms, th, ths, b1, sp1, VFIT_FE_GRID[g], &fe, e);
    free(sub);
    if (rc == 0 && fe.fe > 0) {
        double f0 = fe.fe;
        rc = vfit_try(c, use, m, th, ths, b1, sp1, f0 / VFIT_SQRT2, &best, e);
        if (rc == 0) rc = vfit_try(c, use, m, th, ths, b1, sp1, f0, &best, e);
        if (rc == 0) rc = vfit_try(c, use, m, th, ths, b1, sp1, f0 * VFIT_SQRT2, &best, e);
        double f1 = best.fe;
        if (rc == 0 && f1 > 0) rc = vfit_try(c, use, m, th, ths, b1 > 0 ? b1 / VFIT_SQRT2 : 0, sp1, f1, &best, e);
        if (rc == 0 && f1 > 0) rc = vfit_try(c, use, m, th, ths, b1 > 0 ? b1 * VFIT_SQRT2 : 1000, sp1, f1, &best, e);
    }
    th->before_us = best.before_us;
    th->end_spread_tokens = best.spread;
    th->fe_per_token_us = best.fe;
    return rc;
}

static int vfit_request(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th, Err *e)
{
    VTheta *ths = xmalloc((c->n ? c->n : 1) * sizeof *ths);
    int closed = 0;
    for (uint32_t j = 0; j < m; j++) closed = closed || c->rows[use[j]].fmt == VFMT_SILICON;
    th->end_spread_tokens = 0;
    int rc = closed ? vfit_request_closed(c, use, m, th, ths, e) : vfit_before(c, use, m, th, ths, e);
    free(ths);
    return rc < 0 ? -1 : 0;
}

/* The exposed all-reduce of large iterations (engprof.h
 * "large_allreduce"), for an engine whose rows are all static batches
 * (splitwise format: prompt_time is the batch's prefill, nothing queues):
 * the rows of `use` simulated with th and each (above_tokens,
 * link_fraction) of a grid -- above 0, 1,024, 2,048 or 4,096 tokens, at
 * 1/32 .. 1 of the link in steps of sqrt 2, and none -- and the pair
 * whose TTFT (prompt_time) MAPE is least kept (the first of equals: none
 * first).  Closed-loop rows are not searched: their TTFT is mostly
 * queueing, which the all-reduce would stand in for. */
static const double vfit_ar_above[] = {0, 1024, 2048, 4096};
#define VFIT_AR_STEPS 11 /* 1/32, 1/(16 sqrt 2), ..., 1 */
static int vfit_allreduce(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th, Err *e)
{
    for (uint32_t j = 0; j < m; j++)
        if (c->rows[use[j]].fmt != VFMT_SPLITWISE) return 0;
    VTheta *ths = xmalloc((c->n ? c->n : 1) * sizeof *ths), t = *th;
    double best = INFINITY, best_a = 0, best_f = 0;
    int rc = 0;
    for (int g = -1; g < (int)(sizeof vfit_ar_above / sizeof vfit_ar_above[0]) * VFIT_AR_STEPS && rc == 0; g++) {
        int nsteps = VFIT_AR_STEPS;
        t.ar_above_tokens = g < 0 ? 0 : vfit_ar_above[g / nsteps];
        t.ar_link_fraction = g < 0 ? 0 : pow(VFIT_SQRT2, (double)(g % nsteps) - (nsteps - 1));
        double mape;
        if ((rc = vfit_ttft_mape(c, use, m, &t, ths, &mape, e)) < 0) break;
        if (mape < best) { /* false for NAN */
            best = mape;
            best_a = t.ar_above_tokens;
            best_f = t.ar_link_fraction;
        }
    }
    free(ths);
    th->ar_above_tokens = best_a;
    th->ar_link_fraction = best_f;
    return rc < 0 ? -1 : 0;
}

/* Fits one theta per engine over the training rows (train[i] != 0): an
 * engine's own rows when it has VFIT_MIN_ROWS, else all rows. */
typedef struct VEngFit {
    char engine[32];
    VTheta th;
    uint32_t rows;
    int own;         /* fitted on its own rows (else the shared fit) */
} VEngFit;

/* An engine's family: its name before a version suffix ("trtllm-1.0" ->
 * "trtllm"). */
static int vfit_same_family(const char *a, const char *b)
{
    size_t la = strcspn(a, "-"), lb = strcspn(b, "-");
    return la == lb && !strncmp(a, b, la);
}

/* The request overhead and (static batches) the exposed all-reduce of one
 * engine's rows under th's host time. */
static int vfit_engine_rest(const VFitCtx *c, const uint32_t *use, uint32_t m, VTheta *th, Err *e)
{
    int rc = vfit_request(c, use, m, th, e);
    if (rc == 0) rc = vfit_allreduce(c, use, m, th, e);
    if (rc == 0 && th->ar_link_fraction > 0) rc = vfit_request(c, use, m, th, e);
    return rc;
}

/* The training rows of one engine into use; their count. */
static uint32_t vfit_rows_of(const VFitCtx *c, const unsigned char *train, const char *engine, uint32_t *use)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < c->n; i++)
        if (train[i] && !c->rows[i].skip[0] && !strcmp(c->rows[i].engine, engine)) use[m++] = i;
    return m;
}

/* keep (may be NULL): the fit over every row, whose own-row fits are kept
 * for the engine families none of whose rows the training set leaves out
 * (the same rows give the same fit; leave-one-slice-out refits only the
 * family of the slice). */
static int vfit(const VFitCtx *c, const unsigned char *train, VEngFit *fits, uint32_t n_fits, const VEngFit *keep,
                Err *e)
{
    uint32_t *use = xmalloc((c->n ? c->n : 1) * sizeof *use), *fam = xmalloc((c->n ? c->n : 1) * sizeof *fam), m;
    uint32_t all_rows[16] = {0};
    unsigned char done[16] = {0}, member[16];
    VTheta *per = xcalloc(c->n ? c->n : 1, sizeof *per);
    int shared_done = 0, rc = 0;
    VTheta shared = {0};
    for (uint32_t f = 0; f < n_fits; f++) {
        fits[f].rows = 0;
        for (uint32_t i = 0; i < c->n; i++)
            if (!strcmp(c->rows[i].engine, fits[f].engine) && !c->rows[i].skip[0]) {
                all_rows[f]++;
                fits[f].rows += train[i] != 0;
            }
        fits[f].own = fits[f].rows >= VFIT_MIN_ROWS;
    }
    for (uint32_t f = 0; f < n_fits && rc == 0; f++) {
        if (done[f] || !fits[f].own) continue;
        /* the family's versions with rows of their own, and all their rows */
        int whole = keep != NULL;
        uint32_t mf = 0;
        for (uint32_t g = 0; g < n_fits; g++) {
            member[g] = g >= f && fits[g].own && vfit_same_family(fits[f].engine, fits[g].engine);
            if (!member[g]) continue;
            done[g] = 1;
            whole = whole && fits[g].rows == all_rows[g] && keep[g].own;
            mf += vfit_rows_of(c, train, fits[g].engine, fam + mf);
        }
        if (whole) {
            for (uint32_t g = f; g < n_fits; g++)
                if (member[g]) fits[g] = keep[g];
            continue;
        }
        VTheta host = {0};
        vfit_host(c, fam, mf, &host);
        for (uint32_t g = f; g < n_fits && rc == 0; g++) {
            if (!member[g]) continue;
            m = vfit_rows_of(c, train, fits[g].engine, use);
            fits[g].th = host;
            rc = vfit_engine_rest(c, use, m, &fits[g].th, e);
            for (uint32_t j = 0; j < m; j++) per[use[j]] = fits[g].th;
        }
        if (rc == 0) rc = vfit_host_again(c, fam, mf, per, &host, e);
        for (uint32_t g = f; g < n_fits && rc == 0; g++)
            if (member[g]) {
                fits[g].th.base_us = host.base_us;
                fits[g].th.per_seq_us = host.per_seq_us;
                fits[g].th.per_gpu_us = host.per_gpu_us;
            }
    }
    for (uint32_t f = 0; f < n_fits && rc == 0; f++) {
        if (fits[f].own) continue;
        if (!shared_done) {
            m = 0;
            uint32_t layered = 0;
            for (uint32_t i = 0; i < c->n; i++)
                if (train[i]) {
                    use[m++] = i;
                    layered += c->layered0[i] != 0;
                }
            vfit_host(c, use, m, &shared);
            /* the form of the rows it is fitted on: an engine without rows
             * of its own gets the others' time per layer (or per step) in
             * that form, times its own model's layers; rows of both forms
             * keep each its engine's */
            shared.form = layered == m ? 2 : layered == 0 ? 1 : 0;
            rc = vfit_engine_rest(c, use, m, &shared, e);
            if (rc == 0) rc = vfit_host_again(c, use, m, NULL, &shared, e);
            shared_done = 1;
        }
        fits[f].th = shared;
    }
    free(use);
    free(fam);
    free(per);
    return rc;
}

/* Whether fit f's host terms are per layer: its own form when it has
 * one, else its engine file's (a row of it ran per layer in run A). */
static int vfit_layered(const VEngFit *f, const VFitCtx *c)
{
    if (f->th.form) return f->th.form == 2;
    for (uint32_t i = 0; i < c->n; i++)
        if (!strcmp(c->rows[i].engine, f->engine) && c->layered0[i]) return 1;
    return 0;
}

static const VTheta *vfit_for(const VEngFit *fits, uint32_t n_fits, const char *engine)
{
    for (uint32_t f = 0; f < n_fits; f++)
        if (!strcmp(fits[f].engine, engine)) return &fits[f].th;
    return NULL;
}

/* Held out: for each group g of of_row (the slices for leave-one-slice-
 * out, the engine families for leave-one-engine-out), the fit over every
 * modelled row outside g, and g's rows simulated with the constants it
 * gives their engines, into ht/hp (NAN for rows of no group).  A held-out
 * family's engines have no training rows, so vfit gives them the fit over
 * all the other engines' rows (in its form, VTheta.form); the families g
 * does not touch keep full's fits (vfit's keep: the same rows give the
 * same fit).  done[g] = 0 where no row outside g is left to fit on: g is
 * not predicted. */
static int vholdout(const VFitCtx *fc, const uint32_t *of_row, uint32_t n_groups, const VEngFit *fits, uint32_t n_fits,
                    const VEngFit *full, double *ht, double *hp, unsigned char *done, Err *e)
{
    uint32_t n = fc->n;
    unsigned char *train = xmalloc(n ? n : 1);
    uint32_t *use = xmalloc((n ? n : 1) * sizeof *use);
    VTheta *ths = xcalloc(n ? n : 1, sizeof *ths);
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) ht[i] = hp[i] = NAN;
    for (uint32_t g = 0; g < n_groups && rc == 0; g++) {
        uint32_t m = 0, k = 0;
        for (uint32_t i = 0; i < n; i++) m += (train[i] = of_row[i] != UINT32_MAX && of_row[i] != g);
        done[g] = m > 0;
        if (!m) continue;
        VEngFit ff[VALIDATE_MAX_ENGINES];
        memcpy(ff, fits, n_fits * sizeof *ff);
        if ((rc = vfit(fc, train, ff, n_fits, full, e)) < 0) break;
        for (uint32_t i = 0; i < n; i++)
            if (of_row[i] == g) {
                use[k++] = i;
                ths[i] = *vfit_for(ff, n_fits, fc->rows[i].engine);
            }
        if ((rc = vrun(fc->rows, use, k, ths, fc->jobs, e)) < 0) break;
        for (uint32_t j = 0; j < k; j++) {
            ht[use[j]] = fc->rows[use[j]].pred_ttft_ms;
            hp[use[j]] = fc->rows[use[j]].pred_tpot_ms;
        }
    }
    free(train);
    free(use);
    free(ths);
    return rc;
}

/* ------------------------------------------------------------ output */

/* Rows that repeat an earlier row's measurement: the same isl, osl,
 * clients (or batch), TP and measured TTFT and TPOT to the last digit --
 * one run listed twice, under two model names or two writings of its
 * layout, as the MoE file does (validate/README.md).  The figures count
 * such a measurement once per row, so the count is reported beside them.
 * first[i]: the index of the earliest row with row i's measurement when it
 * is another row, else UINT32_MAX.  Returns how many rows repeat one. */
typedef struct VMeasKey {
    double ttft, tpot;
    int isl, osl, conc, tp;
    uint32_t i;
} VMeasKey;

/* The measurement alone (0: the same run), then qsort's order: by it and
 * within it by row index. */
static int vmeas_key_cmp(const VMeasKey *x, const VMeasKey *y)
{
    if (x->ttft != y->ttft) return x->ttft < y->ttft ? -1 : 1;
    if (x->tpot != y->tpot) return x->tpot < y->tpot ? -1 : 1;
    if (x->isl != y->isl) return x->isl < y->isl ? -1 : 1;
    if (x->osl != y->osl) return x->osl < y->osl ? -1 : 1;
    if (x->conc != y->conc) return x->conc < y->conc ? -1 : 1;
    return (x->tp > y->tp) - (x->tp < y->tp);
}

static int vmeas_cmp(const void *a, const void *b)
{
    const VMeasKey *x = a, *y = b;
    int c = vmeas_key_cmp(x, y);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

static uint32_t vrepeats(const VRow *rows, uint32_t n, uint32_t *first)
{
    VMeasKey *k = xmalloc((n ? n : 1) * sizeof *k);
    for (uint32_t i = 0; i < n; i++) {
        /* no NAN in a key (qsort needs a consistent order); -1: no measurement */
        double t = rows[i].meas_ttft_ms, p = rows[i].meas_tpot_ms;
        k[i] = (VMeasKey){t > 0 ? t : -1, p > 0 ? p : -1, rows[i].isl, rows[i].osl, rows[i].conc, rows[i].tp, i};
        first[i] = UINT32_MAX;
    }
    qsort(k, n, sizeof *k, vmeas_cmp);
    uint32_t reps = 0;
    for (uint32_t j = 1; j < n; j++) {
        if (vmeas_key_cmp(&k[j - 1], &k[j]) != 0 || !(k[j].ttft > 0) || !(k[j].tpot > 0)) continue;
        /* a group is in row order: its first row is the earliest */
        first[k[j].i] = first[k[j - 1].i] != UINT32_MAX ? first[k[j - 1].i] : k[j - 1].i;
        reps++;
    }
    free(k);
    return reps;
}

static void print_stats_line(const char *label, const VStats *t, const VStats *p)
{
    if (!t->n && !p->n) { /* no row to take a figure of: not 0% */
        printf("  %-58s %4u  %s\n", label, 0u, "no row simulated: no figures");
        return;
    }
    printf("  %-58s %4u  %6.1f%% %6.1f%% %+6.1f%% %4.0f%%   %6.1f%% %6.1f%% %+6.1f%% %4.0f%%\n", label, t->n,
           100 * t->mape, 100 * t->median_abs, 100 * t->bias, 100 * t->within10, 100 * p->mape, 100 * p->median_abs,
           100 * p->bias, 100 * p->within10);
}

static cJSON *stats_json(const VStats *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rows", s->n);
    /* no rows: no figures (null), not 0 */
    static const char *const k[4] = {"mape", "median_abs_error", "bias", "within_10pct"};
    const double v[4] = {s->mape, s->median_abs, s->bias, s->within10};
    for (int i = 0; i < 4; i++)
        if (s->n) jsonio_add_num(o, k[i], v[i]);
        else cJSON_AddNullToObject(o, k[i]);
    return o;
}

static void num_or_null(cJSON *o, const char *k, double v)
{
    if (v == v) jsonio_add_num(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

/* ------------------------------------------------------------ command */

/* What the output functions read: the rows with their files, their
 * groups, and the predictions -- in-sample, and with --loso held out by
 * slice and by engine family (NULL without it; NAN for a row its group's
 * fit could not be made for: no other group's rows to fit on). */
typedef struct VView {
    const VRow *rows;
    uint32_t n;
    const char *const *files;
    const uint32_t *file_of;    /* index into files, per row */
    int n_files;
    VFormat fmt;
    VGroups slices, engines, families;
    double *pt, *pp;            /* in-sample */
    double *lt, *lp;            /* leave-one-slice-out */
    double *et, *ep;            /* leave-one-engine-out */
    unsigned char *slice_done;  /* per slice: held out and predicted */
    unsigned char *family_done; /* per family */
} VView;

/* Where row i is, for messages: "line N", or "FILE line N" when the rows
 * come from several files. */
static const char *vview_where(const VView *v, uint32_t i, char *buf, size_t n)
{
    if (v->n_files > 1) snprintf(buf, n, "%s line %u", v->files[v->file_of[i]], v->rows[i].line);
    else snprintf(buf, n, "line %u", v->rows[i].line);
    return buf;
}

/* The family (index in v->families) of the rows of group k of g. */
static uint32_t vview_family_of(const VView *v, const VGroups *g, uint32_t k)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (g->of_row[i] == k) return v->families.of_row[i];
    return UINT32_MAX;
}

/* --scenario ID: the scenario the row of that id runs as (a silicon row's
 * "id"; a Splitwise row's "model/gpu/tpN/pP/bB/oO:LINE"; the first row of
 * the files with it), to stdout, for `servesim run`; th NULL: the engine
 * files' constants. */
static int validate_print_scenario(const VView *v, const char *files, const char *id, const VTheta *th)
{
    int rc = 1;
    uint32_t i = 0;
    char where[600];
    while (i < v->n && strcmp(v->rows[i].id, id)) i++;
    if (i == v->n) {
        fprintf(stderr, "servesim: validate: --scenario: no row of %s has the id \"%s\"%s\n", files, id,
                v->n ? "" : " (no rows)");
        return 1;
    }
    snprintf(where, sizeof where, "%s line %u", v->files[v->file_of[i]], v->rows[i].line);
    if (v->rows[i].skip[0]) {
        fprintf(stderr, "servesim: validate: --scenario: %s (\"%s\") is not modelled: %s\n", where, id,
                v->rows[i].skip);
    } else {
        char *text = vrows_scenario(&v->rows[i], th);
        if (text) {
            fputs(text, stdout);
            free(text);
            rc = 0;
        } else {
            fprintf(stderr, "servesim: validate: --scenario: %s: scenario text too long\n", where);
        }
    }
    return rc;
}

static const char *vformat_name(VFormat f)
{
    return f == VFMT_SILICON ? "silicon" : "splitwise";
}

/* The rows of every file, one after another (each file read with its own
 * header), into *rows; file_of[i]: the file of row i.  Every file must
 * hold one format: the first file's, or --format's. */
static int validate_read(const char *const *files, int n_files, VFormat fmt, const VFilter *flt, int n_flt,
                         VRow **rows, uint32_t *n, uint32_t **file_of, VFormat *fmt_out, Err *e)
{
    *rows = NULL;
    *file_of = NULL;
    *n = 0;
    VFormat first = fmt;
    for (int k = 0; k < n_files; k++) {
        VRow *r;
        uint32_t m;
        VFormat got;
        if (vrows_read(files[k], fmt, flt, n_flt, &r, &m, &got, e) < 0) goto fail;
        if (k == 0) {
            first = got;
        } else if (got != first) {
            free(r);
            err_set(e, "validate: %s is in the %s format and %s in the %s format; expected files of one format", files[0],
                    vformat_name(first), files[k], vformat_name(got));
            goto fail;
        }
        if (m > UINT32_MAX / 2 - *n) {
            free(r);
            err_set(e, "validate: %s: too many rows in all", files[k]);
            goto fail;
        }
        *rows = xrealloc(*rows, ((size_t)*n + m + 1) * sizeof **rows);
        *file_of = xrealloc(*file_of, ((size_t)*n + m + 1) * sizeof **file_of);
        memcpy(*rows + *n, r, m * sizeof *r);
        for (uint32_t i = 0; i < m; i++) (*file_of)[*n + i] = (uint32_t)k;
        *n += m;
        free(r);
    }
    *fmt_out = first;
    return 0;
fail:
    free(*rows);
    free(*file_of);
    *rows = NULL;
    *file_of = NULL;
    *n = 0;
    return -1;
}

/* Whether writing out would write over in: the same existing file
 * (outfile_same: device and inode), or, for an output not there yet, the
 * same name in the same directory (paths_absolute: its realpath). */
static int validate_clash(const char *out, const char *in)
{
    char a[4096], b[4096];
    if (outfile_same(out, in)) return 1;
    return paths_absolute(out, a, sizeof a, NULL) == 0 && paths_absolute(in, b, sizeof b, NULL) == 0 && !strcmp(a, b);
}

/* Before any work: every output's directory is there, and no output
 * names an input -- --json, --bands, and the files --html DIR writes
 * (plots/html.c html_validate: index.html, validate.json, scatter.svg and
 * the scatter's data folder). */
static int validate_outputs_check(const char *const *files, int n_files, const char *json, const char *html,
                                  const char *bands, Err *e)
{
    if (json && outfile_check(json, "--json", e) < 0) return -1;
    if (bands && !strcmp(bands, "-")) return err_set(e, "--bands: expected a file name (the file is read back to merge)");
    if (bands && outfile_check(bands, "--bands", e) < 0) return -1;
    if (json && bands && (!strcmp(json, bands) || validate_clash(json, bands)))
        return err_set(e, "--json and --bands both name %s", bands);
    static const char *const html_files[] = {"index.html", "validate.json", "scatter.svg"};
    char path[4096], data_dir[4096] = "", in[4096];
    if (html && snprintf(path, sizeof path, "%s/scatter.data/x", html) < (int)sizeof path &&
        paths_absolute(path, data_dir, sizeof data_dir, NULL) == 0)
        data_dir[strlen(data_dir) - 1] = 0; /* ".../scatter.data/" */
    for (int k = 0; k < n_files; k++) {
        if (json && strcmp(json, "-") && validate_clash(json, files[k]))
            return err_set(e, "--json %s: is the input file %s; choose another output name", json, files[k]);
        if (bands && validate_clash(bands, files[k]))
            return err_set(e, "--bands %s: is the input file %s; choose another output name", bands, files[k]);
        for (size_t h = 0; html && h < sizeof html_files / sizeof *html_files; h++) {
            snprintf(path, sizeof path, "%s/%s", html, html_files[h]);
            if (validate_clash(path, files[k]))
                return err_set(e, "--html %s: would write %s over the input file %s; choose another directory", html,
                               path, files[k]);
        }
        if (data_dir[0] && paths_absolute(files[k], in, sizeof in, NULL) == 0 &&
            !strncmp(in, data_dir, strlen(data_dir)) && !strchr(in + strlen(data_dir), '/'))
            return err_set(e, "--html %s: writes the scatter's data in the folder of the input file %s; choose another "
                              "directory", html, files[k]);
    }
    return 0;
}

/* s appended to buf (of size cap, used so far *used), single-quoted for
 * a shell when it holds anything but the characters of plain paths and
 * options. */
static void validate_shell_word(char *buf, size_t cap, size_t *used, const char *s)
{
    int plain = *s != 0;
    for (const char *c = s; *c; c++)
        plain = plain && (strchr("_-./=,:+@%", *c) || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
                          (*c >= 'A' && *c <= 'Z'));
    int w;
    if (plain) {
        w = snprintf(buf + *used, cap - *used, " %s", s);
    } else {
        w = snprintf(buf + *used, cap - *used, " '");
        for (const char *c = s; *c && w >= 0 && *used + (size_t)w < cap; c++)
            w += snprintf(buf + *used + w, cap - *used - (size_t)w, *c == '\'' ? "'\\''" : "%c", *c);
        if (w >= 0 && *used + (size_t)w < cap) w += snprintf(buf + *used + w, cap - *used - (size_t)w, "'");
    }
    if (w > 0) *used = *used + (size_t)w < cap ? *used + (size_t)w : cap - 1;
}

/* One table cell of the per-engine block: MAPE and bias. */
static void print_pair(const VStats *s)
{
    if (s->n) printf("  %6.1f%% %+6.1f%%", 100 * s->mape, 100 * s->bias);
    else printf("  %7s %7s", "-", "-");
}

/* One line of the per-engine block: the rows of group k of g, in-sample,
 * and with --loso held out by slice and by engine family. */
static void print_engine_line(const VView *v, const VGroups *g, uint32_t k, const char *label)
{
    VStats t, p;
    vstats_of(v->rows, v->n, g->of_row, k, v->pt, v->pp, &t, &p);
    printf("  %-22s %5u", label, t.n);
    print_pair(&t);
    print_pair(&p);
    if (v->lt) {
        vstats_of(v->rows, v->n, g->of_row, k, v->lt, v->lp, &t, &p);
        print_pair(&t);
        print_pair(&p);
        uint32_t f = vview_family_of(v, g, k);
        if (f != UINT32_MAX && v->family_done[f]) {
            vstats_of(v->rows, v->n, g->of_row, k, v->et, v->ep, &t, &p);
            print_pair(&t);
            print_pair(&p);
        } else {
            printf("  no other engine's rows");
        }
    }
    printf("\n");
}

/* Per engine family (and within a family of several versions, per
 * version): in-sample, leave-one-slice-out and leave-one-engine-out MAPE
 * and bias side by side. */
static void print_engines(const VView *v)
{
    const char *tn = v->fmt == VFMT_SILICON ? "TTFT" : "prompt", *pn = v->fmt == VFMT_SILICON ? "TPOT" : "token";
    int sets = v->lt ? 3 : 1;
    static const char *const set_name[3] = {"in-sample", "leave-one-slice-out", "leave-one-engine-out"};
    printf("\n%-30s", "per engine family");
    for (int k = 0; k < sets; k++) printf("  %-32s", set_name[k]);
    printf("\n%-30s", "");
    for (int k = 0; k < sets; k++) printf("  %-15s  %-15s", tn, pn);
    printf("\n  %-22s %5s", "engine", "rows");
    for (int k = 0; k < 2 * sets; k++) printf("  %7s %7s", "MAPE", "bias");
    printf("\n");
    for (uint32_t f = 0; f < v->families.n; f++) {
        print_engine_line(v, &v->families, f, v->families.name[f]);
        uint32_t versions = 0;
        for (uint32_t g = 0; g < v->engines.n; g++) versions += vview_family_of(v, &v->engines, g) == f;
        for (uint32_t g = 0; versions > 1 && g < v->engines.n; g++) {
            if (vview_family_of(v, &v->engines, g) != f) continue;
            char label[64];
            snprintf(label, sizeof label, "  %s", v->engines.name[g]);
            print_engine_line(v, &v->engines, g, label);
        }
    }
}

/* Stats of group k's rows as {"ttft": ..., "tpot": ...}. */
static cJSON *stats_pair_json(const VView *v, const VGroups *g, uint32_t k, const double *t, const double *p)
{
    VStats st, sp;
    vstats_of(v->rows, v->n, g->of_row, k, t, p, &st, &sp);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "ttft", stats_json(&st));
    cJSON_AddItemToObject(o, "tpot", stats_json(&sp));
    return o;
}

/* The JSON's "engines": per engine family its versions, rows and the
 * three figure sets (held-out ones with --loso; leave_one_engine_out null
 * where no other engine's rows were there to fit on). */
static cJSON *engines_json(const VView *v)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t f = 0; f < v->families.n; f++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "engine", v->families.name[f]);
        cJSON *ver = cJSON_AddArrayToObject(o, "versions");
        uint32_t rows = 0;
        for (uint32_t i = 0; i < v->n; i++) rows += v->families.of_row[i] == f;
        for (uint32_t g = 0; g < v->engines.n; g++)
            if (vview_family_of(v, &v->engines, g) == f) cJSON_AddItemToArray(ver, cJSON_CreateString(v->engines.name[g]));
        cJSON_AddNumberToObject(o, "rows", rows);
        cJSON_AddItemToObject(o, "in_sample", stats_pair_json(v, &v->families, f, v->pt, v->pp));
        if (v->lt) {
            cJSON_AddItemToObject(o, "leave_one_slice_out", stats_pair_json(v, &v->families, f, v->lt, v->lp));
            if (v->family_done[f])
                cJSON_AddItemToObject(o, "leave_one_engine_out", stats_pair_json(v, &v->families, f, v->et, v->ep));
            else
                cJSON_AddNullToObject(o, "leave_one_engine_out");
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* --bands OUT: per engine file (not family) the leave-one-slice-out,
 * in-sample and leave-one-engine-out MAPE and bias of its rows
 * simulated (vbands.h). */
static int validate_bands(const VView *v, const char *out, int argc, char **argv, Err *e)
{
    char date[16], *src;
    if (vbands_date(date, e) < 0) return -1;
    size_t cap = 32, used;
    for (int i = 0; i < argc; i++) cap += 4 * strlen(argv[i]) + 4;
    src = xmalloc(cap);
    used = (size_t)snprintf(src, cap, "servesim validate");
    for (int i = 0; i < argc; i++) validate_shell_word(src, cap, &used, argv[i]);
    VBand *b = xcalloc(v->engines.n ? v->engines.n : 1, sizeof *b);
    uint32_t nb = 0;
    for (uint32_t g = 0; g < v->engines.n; g++) {
        VStats t, p;
        VBand *x = &b[nb];
        vstats_of(v->rows, v->n, v->engines.of_row, g, v->lt, v->lp, &t, &p);
        if (!t.n || !p.n) { /* none of its rows simulated: no figures to stand for it */
            printf("\nno error band for %s: none of its rows simulated\n", v->engines.name[g]);
            continue;
        }
        snprintf(x->engine, sizeof x->engine, "%s", v->engines.name[g]);
        for (uint32_t i = 0; i < v->n; i++) x->rows += v->engines.of_row[i] == g && !v->rows[i].err[0];
        x->ttft = (VBandFig){t.mape, t.bias};
        x->tpot = (VBandFig){p.mape, p.bias};
        vstats_of(v->rows, v->n, v->engines.of_row, g, v->pt, v->pp, &t, &p);
        x->in_ttft = (VBandFig){t.mape, t.bias};
        x->in_tpot = (VBandFig){p.mape, p.bias};
        uint32_t f = vview_family_of(v, &v->engines, g);
        if (f != UINT32_MAX && v->family_done[f]) {
            vstats_of(v->rows, v->n, v->engines.of_row, g, v->et, v->ep, &t, &p);
            x->has_loeo = t.n && p.n;
            x->loeo_ttft = (VBandFig){t.mape, t.bias};
            x->loeo_tpot = (VBandFig){p.mape, p.bias};
        }
        nb++;
    }
    int rc = vbands_write(out, src, date, b, nb, e);
    if (rc == 0) printf("\nerror bands of %u engine%s: %s\n", nb, nb == 1 ? "" : "s", out);
    free(b);
    free(src);
    return rc;
}

static int bad(const char *msg, const char *arg)
{
    fprintf(stderr, "servesim validate: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", validate_usage);
    return 2;
}

static int fail(const Err *e)
{
    fprintf(stderr, "servesim: %s\n", e->msg);
    return 1;
}

/* The figures of one slice (and the overall line) with --loso's held-out
 * lines below them: leave-one-slice-out, leave-one-engine-out. */
static void print_slice(const VView *v, uint32_t sl, const char *label)
{
    VStats t, p;
    const uint32_t *of = v->slices.of_row;
    vstats_of(v->rows, v->n, of, sl, v->pt, v->pp, &t, &p);
    print_stats_line(label, &t, &p);
    if (!v->lt) return;
    int all = sl == UINT32_MAX, any = 0, any_slice = 0;
    for (uint32_t f = 0; f < v->families.n; f++) any = any || v->family_done[f];
    for (uint32_t k = 0; k < v->slices.n; k++) any_slice = any_slice || v->slice_done[k];
    if (all ? any_slice : v->slice_done[sl]) {
        vstats_of(v->rows, v->n, of, sl, v->lt, v->lp, &t, &p);
        print_stats_line(all ? "overall, leave-one-slice-out" : "    leave-one-slice-out", &t, &p);
    } else {
        printf("%sleave-one-slice-out: no other slice's rows\n", all ? "  overall, " : "      ");
    }
    uint32_t f = all ? UINT32_MAX : vview_family_of(v, &v->slices, sl);
    if (all ? any : f != UINT32_MAX && v->family_done[f]) {
        vstats_of(v->rows, v->n, of, sl, v->et, v->ep, &t, &p);
        print_stats_line(all ? "overall, leave-one-engine-out" : "    leave-one-engine-out", &t, &p);
    } else {
        printf("%sleave-one-engine-out: no other engine's rows\n", all ? "  overall, " : "      ");
    }
}

int validate_main(int argc, char **argv)
{
    const char *files[VALIDATE_MAX_FILES], *json = NULL, *html = NULL, *scen_id = NULL, *bands = NULL;
    int n_files = 0;
    VFormat fmt = VFMT_AUTO;
    VFilter flt[VALIDATE_MAX_FILTERS];
    int n_flt = 0, do_fit = 0, do_loso = 0, show_rows = 1, has_set = 0, extra_clients = 0;
    VTheta set = {0};
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1) jobs = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(validate_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--format")) {
            if (++i >= argc) return bad("--format needs silicon or splitwise", NULL);
            if (!strcmp(argv[i], "silicon")) fmt = VFMT_SILICON;
            else if (!strcmp(argv[i], "splitwise")) fmt = VFMT_SPLITWISE;
            else return bad("--format: expected silicon or splitwise, got", argv[i]);
        } else if (!strcmp(a, "--filter")) {
            if (++i >= argc) return bad("--filter needs KEY=VALUE", NULL);
            const char *eq = strchr(argv[i], '=');
            if (!eq || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof flt[0].key ||
                strlen(eq + 1) >= sizeof flt[0].value)
                return bad("--filter: expected KEY=VALUE (key < 64, value < 128 characters), got", argv[i]);
            if (n_flt == VALIDATE_MAX_FILTERS) return bad("at most 16 --filter options", NULL);
            memcpy(flt[n_flt].key, argv[i], (size_t)(eq - argv[i]));
            flt[n_flt].key[eq - argv[i]] = 0;
            snprintf(flt[n_flt].value, sizeof flt[0].value, "%s", eq + 1);
            n_flt++;
        } else if (!strcmp(a, "--html")) {
            if (++i >= argc) return bad("--html needs a directory", NULL);
            html = argv[i];
        } else if (!strcmp(a, "--json")) {
            if (++i >= argc) return bad("--json needs a file", NULL);
            json = argv[i];
        } else if (!strcmp(a, "--bands")) {
            if (++i >= argc) return bad("--bands needs a file", NULL);
            bands = argv[i];
        } else if (!strcmp(a, "--scenario")) {
            if (++i >= argc) return bad("--scenario needs a row id", NULL);
            scen_id = argv[i];
        } else if (!strcmp(a, "--jobs")) {
            char *end;
            if (++i >= argc) return bad("--jobs needs a number", NULL);
            jobs = strtol(argv[i], &end, 10);
            if (*end || jobs < 1 || jobs > VALIDATE_MAX_JOBS) return bad("--jobs: expected 1 to 256, got", argv[i]);
        } else if (!strcmp(a, "--extra-clients")) {
            char *end;
            if (++i >= argc) return bad("--extra-clients needs a number", NULL);
            long x = strtol(argv[i], &end, 10);
            if (*end || end == argv[i] || x < 0 || x > VALIDATE_MAX_EXTRA_CLIENTS)
                return bad("--extra-clients: expected a whole number 0 to 1024, got", argv[i]);
            extra_clients = (int)x;
        } else if (!strcmp(a, "--set")) {
            if (++i >= argc) return bad("--set needs K=V[,K=V...]", NULL);
            char buf[512];
            snprintf(buf, sizeof buf, "%s", argv[i]);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                char *eq = strchr(tok, '=');
                if (!eq) return bad("--set: expected K=V, got", tok);
                *eq = 0;
                double v;
                if (common_parse_decimal(eq + 1, &v) < 0 || !(v >= 0) || v > 1e7)
                    return bad("--set: expected a decimal value in [0, 1e7], got", eq[1] ? eq + 1 : "nothing");
                if (!strcmp(tok, "base_us")) set.base_us = v;
                else if (!strcmp(tok, "per_seq_us")) set.per_seq_us = v;
                else if (!strcmp(tok, "per_gpu_us")) set.per_gpu_us = v;
                else if (!strcmp(tok, "before_us")) set.before_us = v;
                else if (!strcmp(tok, "jitter_us")) set.jitter_us = v;
                else if (!strcmp(tok, "jitter_per_token_us")) set.jitter_per_token_us = v;
                else if (!strcmp(tok, "end_spread_tokens") && v == floor(v) && v <= ENGPROF_END_SPREAD_MAX)
                    set.end_spread_tokens = v;
                else if (!strcmp(tok, "end_spread_tokens"))
                    return bad("--set: end_spread_tokens: expected a whole number 0 to 4096, got", eq + 1);
                else if (!strcmp(tok, "front_end_per_token_us")) set.fe_per_token_us = v;
                else if (!strcmp(tok, "ar_above_tokens")) set.ar_above_tokens = v;
                else if (!strcmp(tok, "ar_link_fraction") && v <= 1) set.ar_link_fraction = v;
                else if (!strcmp(tok, "ar_link_fraction")) return bad("--set: ar_link_fraction: expected 0 to 1, got", eq + 1);
                else return bad("--set: unknown constant (base_us, per_seq_us, per_gpu_us, before_us, jitter_us, "
                                "jitter_per_token_us, end_spread_tokens, front_end_per_token_us, ar_above_tokens, "
                                "ar_link_fraction)", tok);
            }
            has_set = 1;
        } else if (!strcmp(a, "--fit")) {
            do_fit = 1;
        } else if (!strcmp(a, "--loso")) {
            do_loso = 1;
        } else if (!strcmp(a, "--rows")) {
            show_rows = 1;
        } else if (!strcmp(a, "--no-rows")) {
            show_rows = 0;
        } else if (a[0] == '-' && a[1]) {
            return bad("unknown option", a);
        } else if (n_files == VALIDATE_MAX_FILES) {
            return bad("at most 64 files", a);
        } else {
            files[n_files++] = a;
        }
    }
    if (!n_files) return bad("no file given", NULL);
    if (bands && !do_loso) return bad("--bands needs --loso (the band is the leave-one-slice-out error)", NULL);
    Err e = {0};
    if (!scen_id && validate_outputs_check(files, n_files, json, html, bands, &e) < 0) return fail(&e);
    VRow *rows;
    uint32_t n, *file_of;
    if (validate_read(files, n_files, fmt, flt, n_flt, &rows, &n, &file_of, &fmt, &e) < 0) return fail(&e);
    for (uint32_t i = 0; i < n; i++)
        if (rows[i].fmt == VFMT_SILICON) rows[i].extra_clients = extra_clients;
    /* the files as one name, for messages and the JSON's "file" */
    size_t fl = 1;
    for (int k = 0; k < n_files; k++) fl += strlen(files[k]) + 2;
    char *file = xmalloc(fl);
    file[0] = 0;
    for (int k = 0; k < n_files; k++) {
        if (k) strcat(file, ", ");
        strcat(file, files[k]);
    }
    VView v = {.rows = rows, .n = n, .files = files, .file_of = file_of, .n_files = n_files, .fmt = fmt};
    vgroups_build(rows, n, VGROUP_SLICE, &v.slices);
    vgroups_build(rows, n, VGROUP_ENGINE, &v.engines);
    vgroups_build(rows, n, VGROUP_FAMILY, &v.families);
    uint32_t *all = xmalloc((n ? n : 1) * sizeof *all), m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!rows[i].skip[0]) all[m++] = i;
    double *pt = xmalloc((n ? n : 1) * sizeof *pt), *pp = xmalloc((n ? n : 1) * sizeof *pp);
    uint32_t *first = xmalloc((n ? n : 1) * sizeof *first), n_rep = vrepeats(rows, n, first);
    VEngFit fits[VALIDATE_MAX_ENGINES];
    uint32_t n_fits = 0;
    int rc = 0;
    VFitCtx fc = {.rows = rows, .n = n, .jobs = (int)jobs};
    v.pt = pt;
    v.pp = pp;
    if (scen_id) {
        rc = validate_print_scenario(&v, file, scen_id, has_set ? &set : NULL) ? -1 : 0;
        goto done;
    }

    /* engines present, for fits */
    if ((do_fit || do_loso) && v.engines.n > VALIDATE_MAX_ENGINES) {
        rc = err_set(&e, "validate: --fit and --loso: the rows name %u engines, at most %d are fitted", v.engines.n,
                     VALIDATE_MAX_ENGINES);
        goto failed;
    }
    if (bands && v.slices.n < 2) {
        rc = err_set(&e, "--bands: the rows hold one slice; leave-one-slice-out needs two or more");
        goto failed;
    }
    for (uint32_t g = 0; g < v.engines.n && g < VALIDATE_MAX_ENGINES; g++) {
        memset(&fits[n_fits], 0, sizeof fits[0]);
        snprintf(fits[n_fits++].engine, sizeof fits[0].engine, "%s", v.engines.name[g]);
    }
    if (do_fit || do_loso) {
        /* run A: no host time, no request overhead */
        VTheta *zero = xcalloc(n ? n : 1, sizeof *zero);
        rc = vrun(rows, all, m, zero, (int)jobs, &e);
        free(zero);
        fc.tpot0 = xmalloc((n ? n : 1) * sizeof(double));
        fc.ttft0 = xmalloc((n ? n : 1) * sizeof(double));
        fc.run0 = xmalloc((n ? n : 1) * sizeof(double));
        fc.scale0 = xmalloc((n ? n : 1) * sizeof(double));
        fc.layered0 = xmalloc((n ? n : 1) * sizeof(int));
        for (uint32_t i = 0; i < n; i++) {
            fc.scale0[i] = rows[i].host_scale;
            fc.layered0[i] = rows[i].per_layer;
            fc.tpot0[i] = rows[i].pred_tpot_ms;
            fc.ttft0[i] = rows[i].pred_ttft_ms;
            fc.run0[i] = rows[i].mean_running;
        }
    }
    /* the fit over every row (--fit prints and uses it; --loso keeps its
     * fits of the engine families a held-out group does not touch) */
    VEngFit full[VALIDATE_MAX_ENGINES];
    if (rc == 0 && (do_fit || do_loso)) {
        unsigned char *train = xmalloc(n ? n : 1);
        for (uint32_t i = 0; i < n; i++) train[i] = !rows[i].skip[0];
        memcpy(full, fits, n_fits * sizeof *full);
        rc = vfit(&fc, train, full, n_fits, NULL, &e);
        free(train);
    }
    /* held out: each slice, then each engine family (its versions
     * together), fitted on the other rows and predicted */
    if (rc == 0 && do_loso) {
        v.lt = xmalloc((n ? n : 1) * sizeof *v.lt);
        v.lp = xmalloc((n ? n : 1) * sizeof *v.lp);
        v.et = xmalloc((n ? n : 1) * sizeof *v.et);
        v.ep = xmalloc((n ? n : 1) * sizeof *v.ep);
        v.slice_done = xcalloc(v.slices.n ? v.slices.n : 1, 1);
        v.family_done = xcalloc(v.families.n ? v.families.n : 1, 1);
        rc = vholdout(&fc, v.slices.of_row, v.slices.n, fits, n_fits, full, v.lt, v.lp, v.slice_done, &e);
        if (rc == 0)
            rc = vholdout(&fc, v.families.of_row, v.families.n, fits, n_fits, full, v.et, v.ep, v.family_done, &e);
    }
    if (rc == 0 && do_fit) {
        memcpy(fits, full, n_fits * sizeof *fits);
        printf("fitted engine constants (%u rows of %s):\n", m, file);
        for (uint32_t f = 0; f < n_fits; f++) {
            printf("  %-9s \"iter_overhead\": {\"base_us\": %.5g, \"per_seq_us\": %.5g, \"per_gpu_us\": %.5g%s}, "
                   "\"request_overhead\": {\"before_us\": %.0f, \"end_spread_tokens\": %.0f}",
                   fits[f].engine, fits[f].th.base_us, fits[f].th.per_seq_us, fits[f].th.per_gpu_us,
                   vfit_layered(&fits[f], &fc) ? ", \"per_layer\": true" : "", fits[f].th.before_us,
                   fits[f].th.end_spread_tokens);
            if (fits[f].th.fe_per_token_us > 0)
                printf(", \"front_end\": {\"per_token_us\": %.4g}", fits[f].th.fe_per_token_us);
            if (fits[f].th.ar_link_fraction > 0)
                printf(", \"large_allreduce\": {\"above_tokens\": %.0f, \"link_fraction\": %.4f}",
                       fits[f].th.ar_above_tokens, fits[f].th.ar_link_fraction);
            printf("   (%s, %u rows)\n", fits[f].own ? "own rows" : "all engines' rows", fits[f].rows);
        }
        printf("\n");
    }
    /* the predictions: with --fit the fitted constants, else the engine files' */
    if (rc == 0) {
        VTheta *ths = NULL;
        if (has_set && !do_fit) {
            ths = xcalloc(n ? n : 1, sizeof *ths);
            for (uint32_t j = 0; j < m; j++) ths[all[j]] = set;
        }
        if (do_fit) {
            ths = xcalloc(n ? n : 1, sizeof *ths);
            for (uint32_t j = 0; j < m; j++) ths[all[j]] = *vfit_for(fits, n_fits, rows[all[j]].engine);
        }
        rc = vrun(rows, all, m, ths, (int)jobs, &e);
        free(ths);
    }
    if (rc < 0) goto failed;
    for (uint32_t i = 0; i < n; i++) {
        pt[i] = rows[i].pred_ttft_ms;
        pp[i] = rows[i].pred_tpot_ms;
    }
    const char *tn = fmt == VFMT_SILICON ? "TTFT" : "prompt", *pn = fmt == VFMT_SILICON ? "TPOT" : "token";
    uint32_t n_skip = 0, n_fail = 0;
    char where[600], where2[600];
    if (show_rows) {
        printf("%-64s %5s  %9s %9s %7s  %8s %8s %7s\n", "row", fmt == VFMT_SILICON ? "c" : "batch", tn, "sim", "err",
               pn, "sim", "err");
        for (uint32_t i = 0; i < n; i++) {
            const VRow *r = &rows[i];
            if (r->skip[0]) continue;
            if (r->err[0]) {
                printf("%-64s  simulation failed: %s\n", r->id, r->err);
                continue;
            }
            printf("%-64s %5d  %9.2f %9.2f %+6.1f%%  %8.3f %8.3f %+6.1f%%\n", r->id, r->conc, r->meas_ttft_ms, pt[i],
                   100 * (pt[i] - r->meas_ttft_ms) / r->meas_ttft_ms, r->meas_tpot_ms, pp[i],
                   100 * (pp[i] - r->meas_tpot_ms) / r->meas_tpot_ms);
        }
        printf("\n");
    }
    for (uint32_t i = 0; i < n; i++) {
        n_skip += rows[i].skip[0] != 0;
        n_fail += !rows[i].skip[0] && rows[i].err[0];
    }
    printf("%-60s %4s  %-29s   %-29s\n", "slice", "rows", fmt == VFMT_SILICON ? "mean TTFT" : "prompt_time",
           fmt == VFMT_SILICON ? "mean TPOT" : "token_time");
    printf("%-60s %4s  %7s %7s %7s %5s   %7s %7s %7s %5s\n", "", "", "MAPE", "median", "bias", "<10%", "MAPE", "median",
           "bias", "<10%");
    for (uint32_t sl = 0; sl < v.slices.n; sl++) print_slice(&v, sl, v.slices.name[sl]);
    print_slice(&v, UINT32_MAX, "overall");
    if (do_loso) print_engines(&v);
    printf("\n%u rows: %u simulated, %u not modelled, %u failed\n", n, m - n_fail, n_skip, n_fail);
    for (uint32_t i = 0; i < n; i++)
        if (rows[i].skip[0])
            printf("  not modelled: %s %s: %s\n", vview_where(&v, i, where, sizeof where), rows[i].id, rows[i].skip);
    if (n_rep)
        printf("%u rows repeat an earlier row's measurement (the same isl, osl, clients, TP, TTFT and TPOT): the "
               "figures count each such measurement once per row%s\n",
               n_rep, show_rows ? "" : " (--rows lists them)");
    for (uint32_t i = 0; show_rows && i < n; i++)
        if (first[i] != UINT32_MAX)
            printf("  repeats %s: %s %s\n", vview_where(&v, first[i], where, sizeof where),
                   vview_where(&v, i, where2, sizeof where2), rows[i].id);
    if (json || html) {
        VStats t, p;
        cJSON *root = cJSON_CreateObject(), *ra = cJSON_AddArrayToObject(root, "rows");
        cJSON_AddStringToObject(root, "file", file);
        cJSON *fa = cJSON_AddArrayToObject(root, "files");
        for (int k = 0; k < n_files; k++) cJSON_AddItemToArray(fa, cJSON_CreateString(files[k]));
        cJSON_AddStringToObject(root, "format", vformat_name(fmt));
        for (uint32_t i = 0; i < n; i++) {
            const VRow *r = &rows[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "id", r->id);
            cJSON_AddStringToObject(o, "file", files[file_of[i]]);
            cJSON_AddNumberToObject(o, "line", r->line);
            cJSON_AddStringToObject(o, "slice", r->slice);
            jsonio_add_num(o, "measured_ttft_ms", r->meas_ttft_ms);
            jsonio_add_num(o, "measured_tpot_ms", r->meas_tpot_ms);
            if (first[i] != UINT32_MAX) cJSON_AddStringToObject(o, "repeats", rows[first[i]].id);
            if (r->skip[0]) {
                cJSON_AddStringToObject(o, "not_modelled", r->skip);
            } else {
                num_or_null(o, "predicted_ttft_ms", pt[i]);
                num_or_null(o, "predicted_tpot_ms", pp[i]);
                num_or_null(o, "ttft_error", (pt[i] - r->meas_ttft_ms) / r->meas_ttft_ms);
                num_or_null(o, "tpot_error", (pp[i] - r->meas_tpot_ms) / r->meas_tpot_ms);
                if (v.lt) {
                    num_or_null(o, "loso_predicted_ttft_ms", v.lt[i]);
                    num_or_null(o, "loso_predicted_tpot_ms", v.lp[i]);
                    num_or_null(o, "loeo_predicted_ttft_ms", v.et[i]);
                    num_or_null(o, "loeo_predicted_tpot_ms", v.ep[i]);
                }
                if (r->err[0]) cJSON_AddStringToObject(o, "error", r->err);
            }
            cJSON_AddItemToArray(ra, o);
        }
        cJSON *sa = cJSON_AddArrayToObject(root, "slices");
        for (uint32_t sl = 0; sl < v.slices.n; sl++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "slice", v.slices.name[sl]);
            vstats_of(rows, n, v.slices.of_row, sl, pt, pp, &t, &p);
            cJSON_AddItemToObject(o, "ttft", stats_json(&t));
            cJSON_AddItemToObject(o, "tpot", stats_json(&p));
            if (v.lt) {
                uint32_t f = vview_family_of(&v, &v.slices, sl);
                static const char *const k[2][2] = {{"loso_ttft", "loso_tpot"}, {"loeo_ttft", "loeo_tpot"}};
                for (int h = 0; h < 2; h++) {
                    if (!(h ? f != UINT32_MAX && v.family_done[f] : v.slice_done[sl])) {
                        cJSON_AddNullToObject(o, k[h][0]);
                        cJSON_AddNullToObject(o, k[h][1]);
                        continue;
                    }
                    vstats_of(rows, n, v.slices.of_row, sl, h ? v.et : v.lt, h ? v.ep : v.lp, &t, &p);
                    cJSON_AddItemToObject(o, k[h][0], stats_json(&t));
                    cJSON_AddItemToObject(o, k[h][1], stats_json(&p));
                }
            }
            cJSON_AddItemToArray(sa, o);
        }
        cJSON *ov = cJSON_AddObjectToObject(root, "overall");
        vstats_of(rows, n, v.slices.of_row, UINT32_MAX, pt, pp, &t, &p);
        cJSON_AddItemToObject(ov, "ttft", stats_json(&t));
        cJSON_AddItemToObject(ov, "tpot", stats_json(&p));
        if (v.lt) {
            /* over the rows held out and predicted; null where none was */
            static const char *const k[2][2] = {{"loso_ttft", "loso_tpot"}, {"loeo_ttft", "loeo_tpot"}};
            for (int h = 0; h < 2; h++) {
                vstats_of(rows, n, v.slices.of_row, UINT32_MAX, h ? v.et : v.lt, h ? v.ep : v.lp, &t, &p);
                cJSON_AddItemToObject(ov, k[h][0], t.n ? stats_json(&t) : cJSON_CreateNull());
                cJSON_AddItemToObject(ov, k[h][1], p.n ? stats_json(&p) : cJSON_CreateNull());
            }
        }
        cJSON_AddNumberToObject(ov, "rows", n);
        cJSON_AddNumberToObject(ov, "simulated", m - n_fail);
        cJSON_AddNumberToObject(ov, "not_modelled", n_skip);
        cJSON_AddNumberToObject(ov, "failed", n_fail);
        cJSON_AddNumberToObject(ov, "repeated_measurements", n_rep);
        cJSON_AddItemToObject(root, "engines", engines_json(&v));
        if (do_fit) {
            cJSON *fj = cJSON_AddArrayToObject(root, "fit");
            for (uint32_t f = 0; f < n_fits; f++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "engine", fits[f].engine);
                jsonio_add_num(o, "base_us", fits[f].th.base_us);
                jsonio_add_num(o, "per_seq_us", fits[f].th.per_seq_us);
                jsonio_add_num(o, "per_gpu_us", fits[f].th.per_gpu_us);
                cJSON_AddBoolToObject(o, "per_layer", vfit_layered(&fits[f], &fc));
                jsonio_add_num(o, "before_us", fits[f].th.before_us);
                jsonio_add_num(o, "end_spread_tokens", fits[f].th.end_spread_tokens);
                jsonio_add_num(o, "front_end_per_token_us", fits[f].th.fe_per_token_us);
                jsonio_add_num(o, "ar_above_tokens", fits[f].th.ar_above_tokens);
                jsonio_add_num(o, "ar_link_fraction", fits[f].th.ar_link_fraction);
                cJSON_AddBoolToObject(o, "own_rows", fits[f].own);
                cJSON_AddItemToArray(fj, o);
            }
        }
        rc = json ? jsonio_write_file(root, json, 1, &e) : 0;
        HtmlCmd hc = {"validate", argc, argv};
        if (rc == 0 && html) rc = html_validate(html, &hc, root, &e);
        cJSON_Delete(root);
        if (rc < 0) goto failed;
    }
    if (bands && (rc = validate_bands(&v, bands, argc, argv, &e)) < 0) goto failed;
    goto done;
failed:
    fprintf(stderr, "servesim: %s\n", e.msg);
done:
    free(fc.tpot0);
    free(fc.ttft0);
    free(fc.run0);
    free(fc.scale0);
    free(fc.layered0);
    vgroups_free(&v.slices);
    vgroups_free(&v.engines);
    vgroups_free(&v.families);
    free(v.lt);
    free(v.lp);
    free(v.et);
    free(v.ep);
    free(v.slice_done);
    free(v.family_done);
    free(all);
    free(pt);
    free(pp);
    free(first);
    free(rows);
    free(file_of);
    free(file);
    return rc < 0 ? 1 : 0;
}
