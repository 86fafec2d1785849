/*
 * plot.h -- `servesim plot KIND INPUT... -o FILE`: pictures drawn by gnuplot.
 *
 * Each kind reads its inputs (run reports, iteration CSVs, trace events,
 * sweep and plan reports, calibration measurements), writes plain-text data
 * files and a params.gp into a data directory, and runs gnuplot on
 *
 *     gnuplot DATA/params.gp plots/KIND.gp
 *
 * params.gp sets the terminal (pngcairo or svg by the output's extension,
 * 1200x800), the output file, the title and every number the script needs
 * besides the data (SLO targets, the knee, lane names); the scripts read the
 * data files from the directory `datadir`.  The data directory is kept, so a
 * user can edit a script and rerun the same line by hand (DATA/plot.sh).
 *
 * Every file is written atomically (a temporary file in the same directory,
 * then rename): the picture appears whole or not at all.  Outputs are
 * deterministic: the same inputs give the same data files and pictures.
 */
#ifndef SERVESIM_PLOT_H
#define SERVESIM_PLOT_H

#include <stdio.h>

#include "common.h"

#define PLOT_MAX_INPUTS 8
#define PLOT_MAX_LANES 64   /* timeline: requests drawn per panel */

typedef struct PlotJob {
    const char *kind;                      /* cdf, timeline, kv, batch, roofline, rate, pareto, scatter */
    const char *inputs[PLOT_MAX_INPUTS];
    int n_inputs;
    const char *out;                       /* FILE.png or FILE.svg */
    const char *title;                     /* NULL: a default naming the inputs */
    const char *data_dir;                  /* NULL: FILE without its extension + ".data" */
} PlotJob;

/* The kinds, one per line with a description (for usage texts). */
extern const char plot_kinds_help[];

/* Writes the data files and renders job->out.  Fails naming the input, the
 * key and the bad value, or saying that gnuplot is missing or failed. */
int plot_render(const PlotJob *job, Err *e);

/* The directory holding the gnuplot scripts (plots/ of the source tree, or
 * $SERVESIM_DATA/plots). */
const char *plot_scripts_dir(char *buf, size_t n);

/* Writes len bytes to path atomically (temporary file in the same
 * directory, then rename). */
int plot_write_atomic(const char *path, const char *data, size_t len, Err *e);

/* `servesim plot ...`; returns the exit status. */
int plot_main(int argc, char **argv);

#endif
