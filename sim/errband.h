/*
 * errband.h -- the measured error of an engine class, carried with every
 * prediction (issue 34): `run`, `sweep` and `plan` print TTFT and TPOT with
 * the band the engine's validation measured, and a plan's verdict says
 * whether the SLO still holds at the band's pessimistic end.
 *
 * The band file (models/engines/error_bands.json, written by `servesim
 * validate ... --fit --loso --bands OUT`; $SERVESIM_ERROR_BANDS names
 * another):
 *   {"source": "...", "date": "...",           provenance (optional strings)
 *    "basis": "leave-one-slice-out",            what the figures below are
 *    "engines": {NAME: {"rows": N,              measured runs behind them (optional)
 *                       "ttft": {"mape", "bias"}, "tpot": {"mape", "bias"},
 *                       "in_sample": {"ttft", "tpot"},            optional
 *                       "leave_one_engine_out": {"ttft", "tpot"}}}}  optional
 * mape and bias are fractions (0.21 = 21%): the mean of |e| and of e over
 * the rows, e = (predicted - measured) / measured.  A scenario's engine
 * object may carry its own "error_band": {"ttft", "tpot", "basis", "rows"}
 * (a user's measurement), which wins over the file.
 *
 * The interval.  measured = predicted / (1 + e); an engine whose error has
 * bias b and MAPE m gives, for a prediction p,
 *   low = p / (1 + b + m),  high = p / max(1 + b - m, ERRBAND_FLOOR),
 *   bias-corrected = p / (1 + b).
 * The figures are of mean TTFT and mean TPOT per measured run; applying
 * them to a percentile (sweep, plan) is an approximation and is said so.
 *
 * Nothing here runs inside a simulation: a command resolves the band once,
 * before or after its runs.
 */
#ifndef SERVESIM_ERRBAND_H
#define SERVESIM_ERRBAND_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common.h"

/* 1 + b - m is floored here: the high end is at most 20 x the prediction
 * (an engine predicted 2x too fast on average would otherwise make the
 * high end infinite or negative). */
#define ERRBAND_FLOOR 0.05
#define ERRBAND_ENGINES_MAX 64
#define ERRBAND_NAME_MAX 64

typedef struct ErrBandMetric {
    double mape;                 /* mean |e|, >= 0 */
    double bias;                 /* mean e, > -1 */
} ErrBandMetric;

typedef struct ErrBandFigures {
    ErrBandMetric ttft, tpot;
} ErrBandFigures;

typedef struct ErrBand {
    int present;                 /* 0: no band; why says so */
    int own;                     /* the scenario's own "error_band", not the file's */
    char engine[ERRBAND_NAME_MAX]; /* the band's engine class ("vllm"), or the scenario's engine name */
    char basis[96];              /* "leave-one-slice-out", or the scenario's own wording */
    char source[160];            /* where it came from: the band file, or "the scenario's error_band" */
    int64_t rows;                /* measured runs behind it; -1 = not given */
    ErrBandFigures fig;          /* the band's basis figures */
    int has_in_sample, has_loeo; /* the file's optional extra figures */
    ErrBandFigures in_sample, loeo;
    char why[400];               /* present = 0: "no measured error band for engine X (...)" */
} ErrBand;

typedef struct ErrBandFile {
    char basis[96];
    uint32_t n;
    ErrBand bands[ERRBAND_ENGINES_MAX]; /* in file order; engine = the key */
} ErrBandFile;

/* The band file: parse a tree / load a path.  Unknown keys, a missing
 * key, a non-number or a value out of range fail, naming the file, the key
 * path, the value and what was expected. */
int errband_file_parse(const cJSON *root, const char *where, ErrBandFile *f, Err *e);
int errband_file_load(const char *path, ErrBandFile *f, Err *e);
/* $SERVESIM_ERROR_BANDS, else <models>/engines/error_bands.json. */
const char *errband_file_path(char *buf, size_t n);
/* The entry of engine file name `engine` ("trtllm-1.0"), else of its
 * family (the name before the first '-': "trtllm"); NULL when neither. */
const ErrBand *errband_file_find(const ErrBandFile *f, const char *engine);

/* A scenario's own "error_band" object (where names it). */
int errband_from_json(const cJSON *o, const char *where, const char *engine, ErrBand *out, Err *e);

/* How a scenario named its engine, for the lookup. */
typedef struct ErrBandRef {
    int has_engine;              /* 0: the scenario names no engine */
    char file[ERRBAND_NAME_MAX]; /* the bundled engine file it names or builds on ("" = none) */
    char label[160];             /* the engine in messages (its name, or the path it was given as) */
    const char *unbanded;        /* has_engine and no file: why ("given inline without a \"base\"") */
    const ErrBand *own;          /* the engine object's "error_band" (NULL = none) */
} ErrBandRef;

/* The band of an engine: its own, else the band file's (by file name, then
 * family), else none with the reason in out->why.  -1 + e only for a band
 * file that exists and is malformed. */
int errband_resolve(const ErrBandRef *ref, ErrBand *out, Err *e);

/* The interval of a prediction (NaN in, NaN out). */
double errband_low(const ErrBandMetric *m, double pred);
double errband_high(const ErrBandMetric *m, double pred);
double errband_central(const ErrBandMetric *m, double pred);

/* The band as a run's summary shows it: the engine's figures, then the
 * mean TTFT and TPOT (seconds; NaN = no value) with their interval, three
 * lines; with no band, one line saying why. */
void errband_print(FILE *f, const ErrBand *b, double ttft_mean_s, double tpot_mean_s);
/* o.error_band = {"engine", "basis", "rows" (null: not given), "source",
 * "description" (errband_describe), "interval" (the formulas in words), "ttft": {"mape", "bias"}, "tpot":
 * {...}, "in_sample" and "leave_one_engine_out" when the file has them};
 * with no band, o.error_band = null and o.error_band_note = the reason. */
void errband_add_json(cJSON *o, const ErrBand *b);
/* The same with the run's means bounded: ttft and tpot also carry
 * "mean_ms", "low_ms", "high_ms", "bias_corrected_ms" (null: no value). */
void errband_add_run_json(cJSON *summary, const ErrBand *b, double ttft_mean_s, double tpot_mean_s);
/* "vllm's measured error (leave-one-slice-out, 21 runs): TTFT MAPE 63.4%,
 * bias -11.5%; TPOT MAPE 21.3%, bias -0.2%" */
void errband_describe(char *buf, size_t n, const ErrBand *b);

#endif
