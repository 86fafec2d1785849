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

#include <stdint.h>

#include "common.h"

/* The command a page reports on: "servesim COMMAND ARGV...". */
typedef struct HtmlCmd {
    const char *command;   /* run, sweep, plan, validate */
    int argc;
    char **argv;           /* the arguments after the command */
} HtmlCmd;

/* run: summary, SLO verdict, TTFT/TPOT/E2E CDFs, KV and batch over time
 * (when iterations_ok: the run kept per-iteration records of one
 * replica), and the timeline for runs of at most 64 requests.  A run is
 * streamed (issue 36): it makes DIR (html_run_dir) and writes into it, as
 * it goes, DIR/report.json (`run --json`'s bytes, its requests included)
 * and, when iterations_ok, DIR/iterations.csv (`run --iterations-csv`'s);
 * the plots read them back.  root is that report without its requests
 * (its summary, error band and "scenario", which is shown), n_requests
 * how many it lists and token_times whether they carry their token times. */
int html_run_dir(const char *dir, Err *e);
int html_run(const char *dir, const HtmlCmd *cmd, const cJSON *root, uint64_t n_requests, int token_times,
             int iterations_ok, Err *e);
/* sweep: the rate plot and the points table (sweep --json's object). */
int html_sweep(const char *dir, const HtmlCmd *cmd, const cJSON *sweep, Err *e);
/* plan: the Pareto plot and the candidates table (plan --json's object). */
int html_plan(const char *dir, const HtmlCmd *cmd, const cJSON *plan, Err *e);
/* validate: overall and per-slice errors and the measured-vs-predicted
 * scatter (validate --json's object). */
int html_validate(const char *dir, const HtmlCmd *cmd, const cJSON *validate, Err *e);

#endif
