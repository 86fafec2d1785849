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
#include "costwrap.h"
#include "engine.h"
#include "engprof.h"
#include "errband.h"
#include "hw.h"
#include "kv.h"
#include "lora.h"
#include "mcfg.h"
#include "metrics.h"
#include "model.h"
#include "offload.h"
#include "sched.h"
#include "spec.h"
#include "workload.h"

typedef enum { COST_LINEAR = 0, COST_ROOFLINE, COST_TABLE } CostKind;
/* "linear", "roofline", "table" */
const char *scenario_cost_kind_name(CostKind k);

/* A group of identical replicas: the whole cluster, or one side of a
 * disaggregated deployment. */
typedef struct Pool {
    uint32_t replicas;
    HwDesc hw;
    int tp;
    SchedConfig sched;
    KvConfig kv;             /* capacity for this pool's hardware and tp */
} Pool;

typedef enum { ROUTER_ROUND_ROBIN = 0, ROUTER_LEAST_REQUESTS, ROUTER_LEAST_TOKENS, ROUTER_PREFIX_AFFINITY, ROUTER_PLUGIN,
               ROUTER_ADAPTER_AFFINITY } RouterKind;
extern const char *const scenario_router_names[];

typedef struct Scenario {
    char name[128];
    char source[512];      /* file path or "(embedded default)" */
    ModelDesc model;
    HwDesc hw;
    int tp;
    /* "parallel": {"ep", "moe_tp", "attention_dp"} (issue 17): experts over ep
     * GPUs, each expert's FFN over moe_tp, attention_dp attention replicas of
     * tp GPUs each (simulated as that many replicas of pools[0], run in
     * lock-step by cluster.c); 0 = not given.  ep x moe_tp = tp x
     * attention_dp. */
    int ep, moe_tp, attn_dp;
    double adp_step_tokens; /* cluster.c: the attention-DP group's step tokens while it reprices a step
                               (RooflineCfg.group_tokens; 0: none) */
    CostKind cost_kind;
    LinearCostCfg linear;
    TableCostCfg table;    /* cost_model kind "table": the points (model and KV filled at build) */
    Dtype compute_dtype;
    SchedConfig sched;
    int preempt_swap;      /* vllm "preemption": "swap" */
    double swap_bw_bytes_per_s;
    int queue_order;       /* EngineQueueOrder */
    CostWrapCfg wrap;      /* CUDA-graph padding, KV conversion cost */
    /* Deployment: pools[0] holds every replica, or with disagg the prefill
     * pool (pools[1] the decode pool). */
    Pool pools[2];
    uint32_t n_pools;
    int disagg;
    RouterKind router;
    cJSON *plugin_router;    /* ROUTER_PLUGIN: the cluster's router object (owned; plugin.h) */
    cJSON *plugin_sched[4];  /* scripted scheduler objects (owned); SchedConfig.plugin points at them */
    uint32_t n_plugin_sched;
    double link_bw_bytes_per_s;  /* disagg KV transfer */
    double link_latency_s;
    int first_token_on_decode;   /* disagg: the first token is emitted after the transfer */
    /* Speculative decoding: the default and per SLO-class settings (by
     * name, resolved against the workload's classes). */
    SpecCfg spec;
    uint32_t n_spec_cls;
    char spec_cls_name[MCFG_CLASSES_MAX][64];
    SpecCfg spec_cls[MCFG_CLASSES_MAX];
    SpecCfg *spec_by_cls;        /* per workload class (owned) */
    int has_draft_model;
    ModelDesc draft_model;
    KvConfig kv;
    Dtype kv_dtype;
    int kv_capacity_derived; /* 1 when capacity came from the hardware memory */
    int prefix_cache;        /* hash-chained block reuse (prefix.h) */
    int prefix_evict;        /* PrefixEvict */
    cJSON *plugin_evict;     /* PREFIX_EVICT_CUSTOM: the scripted eviction object (owned) */
    Slo slo;               /* default SLO targets */
    SloClasses slo_classes;
    Price price;           /* gpus = tp */
    MetricsCfg metrics;    /* window and warm-up/cool-down from "metrics" */
    uint64_t seed;
    Workload wl;
    int keep_token_times;
    int token_times_auto;  /* report.token_times not given: kept iff <= SCENARIO_TOKEN_TIMES_AUTO output tokens */
    int stream_cancels;    /* a streamed run's requests may be cancelled (the summary's ITL then needs token times) */
    int keep_iterations;   /* per-iteration records (iteration CSV, trace events, MFU distribution) */
    EngineProfile engine;  /* "engine": the serving engine's profile (engine.present = 0: none) */
    char kernel_profile[96]; /* the calibrated profile the engine's kernel tables selected ("" = none) */
    /* How "engine" was given, for its measured error band (errband.h):
     * the bundled file it names or builds on ("base"), or "" with the
     * reason; and the object's own "error_band", a user's measurement. */
    char engine_file[ERRBAND_NAME_MAX];
    char engine_label[160];
    const char *engine_unbanded;
    ErrBand engine_band;     /* present = 0: none of its own */
    /* The workload's warm-up barrier (a benchmark client): members and
     * waiters; cluster_new resets barrier.left before each run. */
    EngineBarrier barrier;
    uint32_t barrier_members;
    uint32_t *barrier_waiters;
    /* Serving resources (issue 18): LoRA adapters, weight offload, weights
     * outside HBM, compressed KV transfers (swap and disaggregation). */
    int has_lora;
    LoraCfg lora;
    double lora_bytes;       /* the adapter cache's GPU memory, taken from the KV pool */
    int has_offload;
    OffloadCfg offload;
    OffloadPlan offload_plan; /* its net memory went to the KV pool */
    int weights_separate;    /* "cost_model": {"weights_separate_memory": true} */
    double kv_xfer_ratio, kv_xfer_dec_bytes_per_s; /* "kv_transfer": compression (0 = off) */
    /* A streamed run (scenario_load_*_stream, issue 16): wl holds no
     * requests, only the class and tenant names; the engine pulls them
     * from wl_stream and hands each one that left to stream_retire (set
     * by the caller before scenario_engine or cluster_new). */
    WlStream *wl_stream;
    /* the "workload" object and its key path, for a second copy of the
     * stream (scenario_stream_reopen; NULL for a request list, which is
     * read whole and viewed again) */
    cJSON *wl_json;
    char wl_where[256];
    uint64_t stream_pulled;  /* requests the stream gave (their positions, for messages) */
    void (*stream_retire)(void *ctx, const Request *r, const int64_t *tt);
    void *stream_retire_ctx;
    /* optional: each streamed request as it arrives (slots.h slots_set_arrive) */
    void (*stream_arrive)(void *ctx, Request *r);
    void *stream_arrive_ctx;
} Scenario;

/* report.token_times when the scenario does not say: per-token times are
 * kept for workloads of at most this many output tokens (issue 16: the
 * Azure conversation trace's 4 M made a 70 MB report and a 4 M-value
 * sort); larger runs keep the summary's ITL (streamed from the engine)
 * but drop the per-request token_times_s of --json unless asked. */
#define SCENARIO_TOKEN_TIMES_AUTO 1000000u

/* The embedded default: Qwen3-8B on one H100, Poisson arrivals. */
extern const char scenario_default_json[];

/* has_seed: the CLI's --seed overrides the file's. */
int scenario_load_text(const char *text, const char *name, int has_seed, uint64_t seed, Scenario *s, Err *e);
int scenario_load_file(const char *path, int has_seed, uint64_t seed, Scenario *s, Err *e);
void scenario_free(Scenario *s);
/* The same, for a streamed run: the workload (a generator, sessions, a
 * closed loop, a trace file; a request list or an unsorted trace read
 * whole) is opened, not materialised, and scenario_engine builds a
 * streaming engine (engine_new_stream; a cluster's replicas share
 * scenario_stream_slots). */
int scenario_load_text_stream(const char *text, const char *name, int has_seed, uint64_t seed, Scenario *s,
                              Err *e);
int scenario_load_file_stream(const char *path, int has_seed, uint64_t seed, Scenario *s, Err *e);

/* Builds the engine over s->wl_stream, or s->wl (reqarray.h: each request
 * written back as it leaves); the scenario must outlive it.  sink may be
 * NULL. */
Engine *scenario_engine(Scenario *s, const MetricsSink *sink, Err *e);
/* A request's LoRA adapter against the scenario's "lora" (0: none, always
 * valid); w names the scenario and id the request in the message. */
int scenario_check_adapter(const Scenario *s, const char *w, const char *id, uint32_t adapter, Err *e);
/* One replica of a pool; slots: a cluster's shared request records
 * (NULL: the replica's own pool, from s->wl_stream or s->wl). */
Engine *scenario_pool_engine(Scenario *s, const Pool *pool, const MetricsSink *sink, Slots *slots, Err *e);
/* A second copy of a streamed scenario's workload, every request in
 * workload order (workload_stream_flat; names: a workload_init()ed
 * scratch that receives the class and tenant names), for a pass that
 * looks at the requests without running them; NULL + e. */
WlStream *scenario_stream_reopen(const Scenario *s, Workload *names, Err *e);
/* A streamed scenario's pool of request records, pulled from s->wl_stream
 * and retired to s->stream_retire: what a streamed cluster's replicas
 * share (slots_free frees it). */
Slots *scenario_stream_slots(Scenario *s);
/* Total GPUs of the deployment. */
double scenario_gpus(const Scenario *s);

/* The metrics configuration of a run: SLOs per class (slo_table must hold
 * one Slo per workload class, at least 1), price x tp GPUs, power and peaks
 * for energy and MFU/MBU. */
void scenario_metrics_cfg(const Scenario *s, MetricsCfg *m, Slo *slo_table, uint32_t n_table);
/* The run's data for metrics_summarize. */
void scenario_rundata(const Scenario *s, const Engine *eng, RunData *rd);
/* The "scenario" block of the JSON report. */
void scenario_to_json(const Scenario *s, cJSON *obj);

/* The measured error band of the scenario's engine (errband_resolve):
 * its own "error_band", else the band file's entry for the engine file it
 * names, else none with the reason.  -1 + e only for a malformed band
 * file.  Read once per command, never during a run. */
int scenario_error_band(const Scenario *s, ErrBand *out, Err *e);

/* Weight bytes resident on one GPU of a tp-GPU replica: weights / tp, or
 * under a MoE layout ("parallel") everything but the routed experts / tp and
 * the routed experts / (ep x moe_tp). */
double scenario_weights_per_gpu(const Scenario *s, int tp);

#endif
