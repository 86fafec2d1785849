/*
 * calib_run.h -- the calibration driver: derive the operator shapes from a
 * model description, time them on a kernel backend (CPU, or CUDA through
 * kernels/build/libservesim_kernels.so), and collect measurements.
 */
#ifndef SERVESIM_CALIB_RUN_H
#define SERVESIM_CALIB_RUN_H

#include <stdio.h>

#include "calib_abi.h"
#include "calib_meas.h"
#include "model.h"

typedef enum { CALIB_GRID_SMALL = 0, CALIB_GRID_FULL } CalibGrid;

typedef struct CalibRunOpts {
    CalibGrid grid;   /* small: m <= 64, short contexts (CPU, CI); full: m up to 16384 */
    int tp;           /* shapes per GPU after this tensor parallelism */
    int reps;         /* timed launches per shape (median kept) */
    double max_m;     /* cap on GEMM rows (0: the grid's) */
    FILE *log;        /* progress lines, or NULL */
} CalibRunOpts;

void calib_run_opts_default(CalibRunOpts *o);

/* The CPU backend (calib_kern.c; GEMMs through CBLAS). */
void calib_run_cpu_backend(ServesimKernels *k);

/* Loads a CUDA (or other) backend from a shared library; `path` NULL means
 * kernels/build/libservesim_kernels.so in the source tree.  *handle keeps
 * the library open; calib_run_unload closes both. */
int calib_run_load_backend(const char *path, ServesimKernels *k, void **handle, Err *e);
void calib_run_unload(ServesimKernels *k, void *handle);

/* Times the model's GEMMs (QKV, O, gate/up, down, LM head; MoE experts and
 * router), prefill and decode attention, memory streams and an empty
 * launch over the grid; appends rows tagged with the backend's name. */
int calib_run(const ModelDesc *m, ServesimKernels *k, const CalibRunOpts *o, MeasSet *out, Err *e);

#endif
