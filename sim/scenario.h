/*
 * scenario.h -- a scenario file: model, hardware, parallelism, cost model,
 * scheduler, KV pool, workload, SLOs, price and seed.
 *
 * Parsing checks every key (unknown keys are errors naming the key path)
 * and derives what the file leaves out: the KV capacity from the hardware
 * memory minus weights and the runtime reserve, the price from the
 * hardware file.  scenario_engine() assembles the plug-ins and the engine.
 */
#ifndef SERVESIM_SCENARIO_H
#define SERVESIM_SCENARIO_H

#include "cost.h"
#include "engine.h"
#include "hw.h"
#include "kv.h"
#include "model.h"
#include "sched.h"
#include "workload.h"

typedef enum { COST_LINEAR = 0, COST_ROOFLINE } CostKind;

typedef struct Slo {
    double ttft_s;  /* 0 = no target */
    double tpot_s;
    double e2e_s;
} Slo;

typedef struct Scenario {
    char name[128];
    char source[512];      /* file path or "(embedded default)" */
    ModelDesc model;
    HwDesc hw;
    int tp;
    CostKind cost_kind;
    LinearCostCfg linear;
    Dtype compute_dtype;
    SchedConfig sched;
    KvConfig kv;
    Dtype kv_dtype;
    int kv_capacity_derived; /* 1 when capacity came from the hardware memory */
    Slo slo;
    double usd_per_gpu_hour;
    uint64_t seed;
    Workload wl;
    int keep_token_times;
} Scenario;

/* The embedded default: Qwen3-8B on one H100, Poisson arrivals. */
extern const char scenario_default_json[];

/* has_seed: the CLI's --seed overrides the file's. */
int scenario_load_text(const char *text, const char *name, int has_seed, uint64_t seed, Scenario *s, Err *e);
int scenario_load_file(const char *path, int has_seed, uint64_t seed, Scenario *s, Err *e);
void scenario_free(Scenario *s);

/* Builds the engine over s->wl (the scenario must outlive it). */
Engine *scenario_engine(Scenario *s, Err *e);

#endif
