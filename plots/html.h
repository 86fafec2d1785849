/*
 * html.h -- `--html DIR` on run, sweep, plan and validate: a self-contained
 * report page, DIR/index.html.
 *
 * DIR holds everything the page shows and nothing it fetches from
 * elsewhere: the command's JSON result (the input of every plot), the
 * plots as SVG files drawn by plot_render (each with its NAME.data/
 * directory, so a plot can be rerun by hand), and index.html, which names
 * the command line and its inputs, holds the summary tables as HTML and
 * refers to the pictures by relative name.  No scripts, no network
 * resources.  Every file is written atomically; the same inputs give the
 * same bytes.
 *
 * When a plot cannot be drawn (gnuplot missing), the page is still written
 * with the reason in the plot's place, and the call fails with that reason.
 */
#ifndef SERVESIM_HTML_H
#define SERVESIM_HTML_H

#include <cjson/cJSON.h>

#include "common.h"
#include "errband.h"
#include "metrics.h"

/* The command a page reports on: "servesim COMMAND ARGV...". */
typedef struct HtmlCmd {
    const char *command;   /* run, sweep, plan, validate */
    int argc;
    char **argv;           /* the arguments after the command */
} HtmlCmd;

/* run: summary, SLO verdict, TTFT/TPOT/E2E CDFs, KV and batch over time
 * (when iterations_ok: the run kept per-iteration records of one
 * replica), and the timeline for runs of at most 64 requests.  scenario
 * (a JSON object, may be NULL) is shown and saved with the report; band
 * (the engine's measured error, errband.h; NULL: none) goes into both. */
int html_run(const char *dir, const HtmlCmd *cmd, const cJSON *scenario, const MetricsCfg *mc, const RunData *rd,
             const Summary *sum, const ErrBand *band, int iterations_ok, Err *e);
/* sweep: the rate plot and the points table (sweep --json's object). */
int html_sweep(const char *dir, const HtmlCmd *cmd, const cJSON *sweep, Err *e);
/* plan: the Pareto plot and the candidates table (plan --json's object). */
int html_plan(const char *dir, const HtmlCmd *cmd, const cJSON *plan, Err *e);
/* validate: overall and per-slice errors and the measured-vs-predicted
 * scatter (validate --json's object). */
int html_validate(const char *dir, const HtmlCmd *cmd, const cJSON *validate, Err *e);

#endif
