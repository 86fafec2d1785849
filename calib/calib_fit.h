/*
 * calib_fit.h -- fit a profile (profile.h) to kernel measurements
 * (calib_meas.h) with GSL nonlinear least squares.
 *
 * Per operator class, the parameters of
 *     t = t0 + per_unit * units + max(flops / (peak e_compute), bytes / (bw e_mem))
 * -- ln t0, ln per_unit and ln(eff) at each knot of each efficiency curve --
 * minimise the squared log error sum (ln t_pred - ln t_meas)^2 (every
 * shape counts by its relative error, whatever its size), plus a small
 * penalty on each curve's second differences that keeps knots without
 * data on the trend of their neighbours.
 *
 * Validation: the shapes are split by a hash of the shape into five
 * folds; a fit on four fifths predicts the fifth it never saw (held-out
 * errors).  The shipped parameters are then fitted on every shape; their
 * in-sample errors are reported too.  Errors are |pred - meas| / meas;
 * statistics are GSL quantiles.
 */
#ifndef SERVESIM_CALIB_FIT_H
#define SERVESIM_CALIB_FIT_H

#include <stdio.h>

#include "calib_meas.h"
#include "profile.h"

typedef struct CalibFitOpts {
    /* Reference peaks the efficiencies are fractions of; 0 = the best
     * achieved rate in the measurements themselves (a CPU, or a GPU without
     * a hardware description). */
    double peak_flops_bf16, peak_flops_fp8, mem_bw_bytes_per_s, link_bw_bytes_per_s;
    double peak_flops_fp8_block; /* 0: the FP8 peak */
    double peak_flops_nvfp4;     /* 0: the NVFP4 GEMMs' best measured rate */
    double holdout;       /* fraction of shapes held out for validation, default 0.2 */
    int validate_only;    /* 1: only the held-out fit (fast check; shipped params = validation fit) */
    unsigned op_mask;     /* bit k set: fit ProfOpKind k; 0 = every op with data */
    const char *name, *hardware, *source;
    FILE *log;            /* NULL, or where to say which classes were fitted but not shipped */
    double ship_max;      /* a class whose in-sample median error passes this is not shipped (default 0.25);
                           * a test of the pipeline on live, noisy timings raises it to keep every class */
} CalibFitOpts;

void calib_fit_opts_default(CalibFitOpts *o);

/* Fits every operator with data (at least 4 distinct shapes; the launch
 * probe needs one).  p->op[k].fit holds each op's statistics.  A class whose
 * shipped fit misses its own shapes by a median above 25% is left out (and
 * named on o->log): the solver found nothing the data support, and the
 * roofline's fallback for it is the better price.  The result
 * has been round-tripped through JSON (profile_normalize), so a file
 * written from it predicts exactly what the statistics describe. */
int calib_fit_profile(const MeasSet *ms, const CalibFitOpts *o, Profile *p, Err *e);

/* Relative errors of profile predictions on the rows of `op` in ms:
 * median and p90 of |pred - meas| / meas, and the count.  Rows are
 * de-duplicated by shape first (fastest measurement kept), as in fitting. */
int calib_fit_errors(const Profile *p, const MeasSet *ms, int op, double *median, double *p90, size_t *n);

/* Rows of ms that calibrate `op` (same selection as the fitter: the GEMM
 * class of the row's dtype; attention with a 16/32-bit KV cache and Q of
 * the same type, or with an FP8 KV cache for the *_fp8kv classes). */
int calib_fit_selects(const Meas *r, int op);

/* Predicted latency (s) of one measured row under the profile, or a
 * negative number when the profile lacks its op. */
double calib_fit_predict(const Profile *p, const Meas *r);

/* A table of each op's fit (rows, held-out and in-sample errors). */
void calib_fit_print(FILE *f, const Profile *p);

#endif
