/*
 * replay.h -- metrics for a schedule someone else produced.
 *
 * Input (keys may be added):
 *   {"requests": [{"id": "A", "arrival_ms": 0, "prompt_tokens": 4, "output_tokens": 3,
 *                  "token_times_ms": [100, 140, 180],
 *                  "status": "finished"|"rejected"|"cancelled", "class": "chat",
 *                  "deadline_ms": 3000, "correct": true}, ...],
 *    "price": {"usd_per_gpu_hour": 2.0, "gpus": 1, "billing": "exact"},
 *    "slo": {...}, "metrics": {...}}
 * A finished request lists one emission time per output token, non-
 * decreasing and not before its arrival.  A cancelled one gives
 * "cancelled_ms" (when its client's cancel returned) and the times of the
 * tokens it got before (fewer than output_tokens; none may be left out).  The result feeds the same
 * metrics_summarize and report code as a simulated run.
 */
#ifndef SERVESIM_REPLAY_H
#define SERVESIM_REPLAY_H

#include "mcfg.h"
#include "metrics.h"

typedef struct Replay {
    Request *reqs;
    uint32_t n;
    int64_t *token_times;
    char *names;          /* arena of request ids */
    char **cls_names;     /* class k's name; class 0 = "default" */
    uint32_t n_cls;
    Slo slo;
    SloClasses slo_classes;
    Slo *slo_table;       /* per class */
    MetricsCfg mcfg;
} Replay;

int replay_load(const char *path, Replay *out, Err *e);
int replay_load_text(const char *text, const char *name, Replay *out, Err *e);
void replay_free(Replay *r);
void replay_rundata(const Replay *r, RunData *rd);

#endif
