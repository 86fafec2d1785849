/*
 * plot_kind.h -- what plot.c (the driver) and plot_kinds.c (the readers that
 * turn inputs into gnuplot data files) share.  Internal to plots/.
 *
 * A kind's writer adds data files to the data directory with plotbuf_*
 * and gnuplot variable definitions to `params` (a stream whose text ends up
 * in params.gp after the terminal and output lines).
 */
#ifndef SERVESIM_PLOT_KIND_H
#define SERVESIM_PLOT_KIND_H

#include <stdio.h>

#include "common.h"
#include "outfile.h"

struct PlotJob; /* plot.h (not included: plot.c includes this file) */

/* A file being built in memory; plotbuf_commit writes it atomically as
 * DIR/name.  Or, for a data file that may be large (a row per request or
 * iteration), written as it is built into a temporary file beside DIR/name
 * (plotbuf_open_file) and renamed on commit. */
typedef struct PlotBuf {
    FILE *f;
    char *text;
    size_t len;
    int on_disk;       /* plotbuf_open_file: out holds it */
    OutFile out;
} PlotBuf;

typedef struct PlotCtx {
    const struct PlotJob *job;
    const char *dir;   /* the data directory */
    FILE *params;      /* gnuplot lines for params.gp */
} PlotCtx;

void plotbuf_open(PlotBuf *b);
/* name: the file it becomes in ctx->dir (plotbuf_commit's name is the same). */
int plotbuf_open_file(const struct PlotCtx *ctx, PlotBuf *b, const char *name, Err *e);
/* Closes b and writes it as ctx->dir/name; frees b's text in any case. */
int plotbuf_commit(const PlotCtx *ctx, PlotBuf *b, const char *name, Err *e);
void plotbuf_discard(PlotBuf *b);

/* Writes s as a gnuplot single-quoted string: gnuplot substitutes
 * `backquoted` text (runs it as a shell command) and expands escapes only
 * inside double quotes, so user text goes only here; a ' is doubled and
 * a newline joined as '."\n".' (the one double-quoted piece, no user text). */
void plot_gp_str(FILE *f, const char *s);
/* Writes `name = 's'` (plot_gp_str). */
void plot_param_str(FILE *f, const char *name, const char *s);
/* Writes `name = v` with enough digits to round-trip. */
void plot_param_num(FILE *f, const char *name, double v);
/* A short label for an input path: its base name. */
const char *plot_label(const char *path);

typedef int (*PlotKindFn)(PlotCtx *ctx, Err *e);

typedef struct PlotKind {
    const char *name;
    const char *script;   /* plots/<script>.gp */
    int min_inputs, max_inputs;
    PlotKindFn write;
    const char *help;
} PlotKind;

extern const PlotKind plot_kind_table[];
extern const int plot_kind_count;

#endif
