/*
 * repro_calc.h -- the computations behind `servesim reproduce`.
 *
 * Every case of the chapters' table reads one input file in
 * workloads/chapters/ and runs servesim's own code on it: a scenario through
 * the engine (`run`), a given schedule through the metrics (`replay`), or a
 * small parameter file through one of the calculators below (`calc`: the KV
 * pool and the prefix cache, the cost models, the speculation module...).
 * Each computation returns a JSON document (for `run` and `replay` the same
 * report `servesim run|replay --json` writes); a case picks one number out of
 * it with a path (repro_get).  Nothing here knows a book value.
 */
#ifndef SERVESIM_REPRO_CALC_H
#define SERVESIM_REPRO_CALC_H

#include <cJSON.h>

#include "common.h"

typedef enum { REPRO_RUN = 0, REPRO_REPLAY, REPRO_CALC, REPRO_SWEEP } ReproKind;

/* Computes the document of `path` (a file) for kind.  arg: run: "roofline"
 * prices the same scenario with the calibrated roofline of its GPU instead
 * of its own cost model; replay: a fixed window "T0,T1" in ms; calc: unused;
 * sweep: "RATES/SEEDS" ("1,4,16/3"): the scenario at each arrival rate
 * (sweep_set_rate, as `servesim sweep` rescales it) and seeds seed..seed +
 * SEEDS - 1, giving {"r<RATE>": {"completion_rps", "goodput_rps"}} means.
 * Returns a new tree or NULL with e set. */
cJSON *repro_compute(ReproKind kind, const char *path, const char *arg, Err *e);

/* The number at `expr` in doc: a path of keys and selectors,
 * "summary.ttft_s.p50", "requests[B].ttft_s" (the element whose "id" is B),
 * "requests[B].token_times_s[2]" (an index), optionally two paths joined by
 * " / " or " - ".  A JSON true/false reads as 1/0.  Returns 0, or -1 with e
 * set when a key is missing or not a number. */
int repro_get(const cJSON *doc, const char *expr, double *out, Err *e);

/* The "source" (else "name") of an input file; "" when it has neither. */
void repro_file_source(const char *path, char *buf, size_t n);

#endif
