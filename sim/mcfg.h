/*
 * mcfg.h -- reading the metrics configuration (SLOs, SLO classes, price
 * and billing, measurement window, warm-up/cool-down) from JSON, shared by
 * scenarios and replayed schedules.
 *
 *   "slo": {"ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms", "percentile", "attainment",
 *           "classes": {"NAME": {"ttft_ms", ...}, ...}}
 *   "price": {"usd_per_gpu_hour", "gpus", "billing": "exact"|"increment"|"reserved",
 *             "increment_s", "reserved_s"}
 *   "metrics": {"window_ms": [t0, t1], "warmup_s", "cooldown_s",
 *               "warmup_requests", "cooldown_requests"}
 * A class without a target inherits the top-level one (percentile and
 * attainment included).  Percentile SLOs have this one form; the others
 * ("ttft_p90_ms", {"ttft": {"p90_ms": ...}}) are rejected with a message
 * that shows it.
 */
#ifndef SERVESIM_MCFG_H
#define SERVESIM_MCFG_H

#include <cjson/cJSON.h>

#include "metrics.h"

#define MCFG_CLASSES_MAX 32

typedef struct SloClasses {
    uint32_t n;
    char name[MCFG_CLASSES_MAX][64];
    Slo slo[MCFG_CLASSES_MAX];
} SloClasses;

int mcfg_parse_slo(const cJSON *v, const char *where, Slo *dflt, SloClasses *cls, Err *e);
/* allow_gpus: replays give the GPU count; scenarios derive it from tp. */
int mcfg_parse_price(const cJSON *v, const char *where, int allow_gpus, Price *p, Err *e);
int mcfg_parse_metrics(const cJSON *v, const char *where, MetricsCfg *m, Err *e);
/* "T0,T1" in ms (the --window-ms option). */
int mcfg_parse_window_arg(const char *arg, MetricsCfg *m, Err *e);

/* Fills slo_table[k] for each of the workload's class names (class k): the
 * SLO class of that name, or the default.  SLO classes no request uses are
 * allowed (one file may serve several workloads). */
void mcfg_resolve_classes(const SloClasses *cls, const Slo *dflt, const char *const *names, uint32_t n_names,
                          Slo *slo_table);

#endif
