/*
 * metrics.h -- per-request metrics and the run's summary (SPEC section 8).
 *
 * Definitions (seconds unless a name says otherwise):
 *   TTFT   first token - arrival
 *   TPOT   (last token - first token) / (n_out - 1); undefined (NaN here,
 *          null in JSON, empty in CSV, never 0) when n_out = 1
 *   ITL    every gap between consecutive tokens of a request
 *   E2E    last token - arrival;  queueing = first admission - arrival
 * Statistics are GSL's (mean, sd, quantiles interpolated between order
 * statistics); each says how many values it covers.
 *
 * Which requests count: all but the first warmup_requests / last
 * cooldown_requests by arrival order and those arriving in the first
 * warmup_s / last cooldown_s of the arrival span.
 *
 * Window: the drain window (first included arrival -> last included
 * completion) unless a fixed [t0, t1] is given; then throughputs count the
 * output tokens emitted inside it, the requests completed inside it and the
 * prompt tokens of requests whose first token came inside it.
 *
 * Goodput: a request is good when it finished, met every SLO that applies
 * to its class (TTFT, TPOT, max ITL, E2E), its own deadline, and was not
 * marked incorrect -- R_good = sum Q_i D_i / T_obs.  A missed TTFT cap is a
 * gate: nothing else makes up for it.  Rejected requests count as misses,
 * and so do cancelled ones (never good); the SLO verdict's latency checks
 * leave cancelled requests out (the client withdrew: no latency to judge).
 *
 * Cost: price x GPUs x billed time; billed time is the window (exact),
 * rounded up to a whole increment, or whole reserved periods.  Energy:
 * GPUs x (busy_w x busy time + idle_w x idle time) inside the window.
 */
#ifndef SERVESIM_METRICS_H
#define SERVESIM_METRICS_H

#include "engine.h"
#include "qsketch.h"
#include "tasks.h"

typedef struct Slo {
    double ttft_s;    /* 0 = no target */
    double tpot_s;
    double itl_max_s;
    double e2e_s;
    /* The verdict (below): each latency target above is judged at this
     * percentile of its metric (0 = not given: METRICS_DEFAULT_PERCENTILE),
     * and the share of good requests against `attainment` (0 = no target). */
    double percentile;
    double attainment;
} Slo;

/* The percentile a verdict uses when the SLO names none: p99, the usual
 * form of a serving latency SLO (README "SLO verdict"). */
#define METRICS_DEFAULT_PERCENTILE 99.0

typedef enum { BILL_EXACT = 0, BILL_INCREMENT, BILL_RESERVED } Billing;
extern const char *const metrics_billing_names[];

typedef struct Price {
    double usd_per_gpu_hour;
    double gpus;
    Billing billing;
    double increment_s; /* BILL_INCREMENT: billed time rounds up to a multiple */
    double reserved_s;  /* BILL_RESERVED: billed in whole periods */
} Price;

typedef struct MetricsCfg {
    Slo slo;                  /* for requests of a class without its own */
    const Slo *slo_by_cls;    /* optional, indexed by Request.cls (n_cls entries) */
    const char *const *cls_names; /* optional names for the per-class report */
    uint32_t n_cls;
    int has_window;
    int64_t window_t0_ns, window_t1_ns;
    double warmup_s, cooldown_s;
    uint32_t warmup_requests, cooldown_requests;
    /* A streamed run's exclusion (metrics_acc_add): the stream's first and
     * last arrivals and its length, from a first pass over a copy of the
     * stream (scenario.c), which every request arrives from in order, so a
     * request's rank by arrival is its Request.seq.  0: not known (no
     * warm-up or cool-down). */
    int stream_known;
    /* Chains (sessions, closed loops): a request's rank is not its seq but
     * its place among the arrivals (metrics_acc_arrive), ties by seq; the
     * first arrival and the window's start come from them too, and
     * stream_n from a first pass that counts every request. */
    int stream_chains;
    /* Chains with a cool-down by time (cooldown_s): the last arrival is the
     * run's, so a first run of the same scenario finds it (streamrun.c) and
     * sets stream_hi_ns; 1 until then. */
    int stream_need_hi;
    uint64_t stream_n;
    int64_t stream_lo_ns, stream_hi_ns;
    int64_t stream_t0_ns;     /* the first included request's arrival: the window's start */
    Price price;
    double idle_w, busy_w;    /* per GPU; busy_w == 0: energy unknown */
    double peak_flops_per_gpu;/* for MFU (0 = unknown) */
    double mem_bw_per_gpu;    /* for MBU (0 = unknown) */
    uint32_t kv_block_tokens; /* for the report */
    int kv_unbounded;
    /* Time outside the engine loop that a client sees on every request
     * (the engine profile's request_overhead: HTTP, tokenisation,
     * detokenisation, streaming): added to TTFT and E2E. */
    int64_t client_ns;
    /* 1: every statistic exact (--exact-stats); 0: a latency sample of more
     * than METRICS_EXACT_MAX values (ITL) goes through a QSketch, whose
     * quantiles are within QSKETCH_REL_ERR (0.049%); means, standard
     * deviations, maxima and counts stay exact either way. */
    int exact_stats;
} MetricsCfg;

/* Samples up to this size are summarised exactly by sorting, as always
 * (the chapters' numbers and every small run are bit-for-bit unchanged);
 * larger exact ones by O(n) selection (metrics_dist); by default, ITL
 * samples larger than this go through the sketch. */
#define METRICS_EXACT_MAX 100000u

/* A finished request's TTFT and E2E as its client sees them. */
static inline int64_t metrics_ttft_ns(const MetricsCfg *cfg, const Request *r)
{
    return r->t_first_token_ns - r->t_arrive_ns + cfg->client_ns;
}
static inline int64_t metrics_e2e_ns(const MetricsCfg *cfg, const Request *r)
{
    return r->t_finish_ns - r->t_arrive_ns + cfg->client_ns;
}

/* A cluster run's replicas, borrowed from the Cluster (valid while it
 * lives): each one's engine statistics and how many requests it served
 * (a disaggregated prefill replica counts the prompts it prefilled, a
 * decode replica the requests handed to it).  n = 0 outside a cluster. */
typedef struct RunReplicas {
    uint32_t n;
    uint32_t n_prefill;              /* disagg: replicas [0, n_prefill) are the prefill pool */
    const EngineStats *const *st;
    const uint32_t *requests;
    double kv_bytes_per_gpu[2];      /* KV capacity per GPU of each pool ([1]: disagg decode) */
    double kv_total_bytes;           /* over every replica (0: unknown, a replay) */
} RunReplicas;

/* One replica's row of the report, or the cluster's total (the sum over
 * replicas at each instant: its peak is the largest sum, its mean the
 * time-weighted mean of the sum, which is the sum of the replicas' means).
 * Means are over the report's window. */
typedef struct ReplicaRow {
    uint32_t requests;
    uint32_t peak_running, peak_waiting;
    double mean_running, mean_waiting;
    uint64_t kv_total_blocks, kv_peak_used_blocks;
    double kv_mean_used_blocks;
    double busy_share;               /* busy time / window (the total: averaged over replicas) */
} ReplicaRow;

/* What a run (or a replayed schedule) produced. */
typedef struct RunData {
    const Request *reqs;
    uint32_t n;
    const int64_t *token_times; /* NULL: no per-token record (no ITLs, no fixed window) */
    const EngineStats *st;      /* NULL for a replay */
    const IterRecord *iters;    /* optional */
    uint64_t n_iters;
    RunReplicas replicas;       /* a cluster's replicas (cluster_rundata) */
    /* Without token_times: every inter-token gap as the engine emitted it
     * (streamed, exact up to its exact_max, then sketched); used for ITL
     * when every arrived request is included (no warm-up or cool-down). */
    const StatAcc *itl;
    /* Without iters: the iterations' overlap with the window, summed as
     * utilisation() sums iters (a streamed run that leaves requests out:
     * metrics_acc_iteration); NULL: the engine's totals. */
    const struct WinSums *win;
} RunData;

/* Sums over iterations of their overlap with a window (ns) times the
 * running and waiting counts and the KV blocks in use, and the overlap. */
typedef struct WinSums {
    double run, wait, kv, busy;
} WinSums;

typedef struct Dist {
    uint64_t n;       /* values the statistic covers */
    double mean, std, p50, p90, p95, p99, max;
} Dist;

/* Why a request is not good (bits). */
enum {
    MISS_NOT_FINISHED = 1, MISS_TTFT = 2, MISS_TPOT = 4, MISS_ITL = 8, MISS_E2E = 16, MISS_DEADLINE = 32,
    MISS_INCORRECT = 64
};

#define METRICS_CLS_MAX 64

/* The SLO verdict: one check per target of each class's SLO.  A latency
 * check takes the percentile of the metric over the class's included
 * requests, a request that did not finish (rejected, unfinished) counting
 * as infinitely late, and passes when it is <= the target; TPOT and max
 * ITL leave out one-token outputs (undefined for them).  The attainment
 * check passes when the share of good requests is >= the target.  The
 * run passes when every check passes. */
enum { SLO_TTFT = 0, SLO_TPOT, SLO_ITL_MAX, SLO_E2E, SLO_ATTAINMENT, SLO_N_METRICS };
extern const char *const metrics_slo_metric_names[]; /* "ttft", "tpot", "itl_max", "e2e", "attainment" */
#define METRICS_CHECKS_MAX (SLO_N_METRICS * METRICS_CLS_MAX)

typedef struct SloCheck {
    uint32_t cls;        /* the class it judges (per_class), else 0 */
    int metric;          /* SLO_* */
    int pass;
    double percentile;   /* latency checks */
    double target;       /* seconds, or a share for SLO_ATTAINMENT */
    double achieved;     /* seconds (INFINITY: the percentile falls on unfinished requests), or a share */
    uint32_t n;          /* requests it covers */
} SloCheck;

typedef struct Summary {
    uint32_t requests, included, finished, rejected, unfinished;
    uint32_t cancelled;                        /* by the client (not in unfinished; never good) */
    Dist ttft_s, tpot_s, itl_s, itl_max_s, e2e_s, queue_s;
    int fixed_window;
    double t0_s, t1_s, window_s;
    uint64_t output_tokens, prompt_tokens;     /* counted in the window */
    uint32_t completed;                        /* requests completed in the window */
    double output_tokens_per_s, total_tokens_per_s, requests_per_s;
    uint32_t good;
    uint64_t good_output_tokens;
    double goodput_requests_per_s, goodput_output_tokens_per_s;
    double slo_attainment;                      /* good / included */
    double att_ttft, att_tpot, att_itl, att_e2e, att_deadline, att_correct;
    uint32_t n_cls;
    uint32_t cls_requests[METRICS_CLS_MAX], cls_good[METRICS_CLS_MAX];
    /* utilisation (engine runs only); a cluster's are of the sum over its
     * replicas: the peak of the sum and the time-weighted mean of the sum */
    uint32_t peak_running, peak_waiting;
    double mean_running, mean_waiting;          /* time-weighted over the window */
    uint64_t kv_total_blocks, kv_peak_used_blocks;
    double kv_mean_used_blocks;                 /* time-weighted over the window */
    uint64_t iterations, preemptions, recomputed_tokens;
    double busy_s;               /* per replica on average */
    uint32_t replicas;
    uint64_t cost_queries, cost_outside;        /* profile extrapolation */
    double cost_worst_ratio;
    const char *cost_worst;
    uint64_t spec_rounds, spec_drafted, spec_accepted, spec_emitted;
    double spec_draft_s, spec_verify_s;
    HookStats hooks;                            /* adapters and weight offload (policy.h) */
    int has_prefix;                             /* prefix-cache statistics below are valid */
    KvStats prefix;
    Dist mfu, mbu;                              /* over iterations */
    double mfu_mean, mbu_mean;                  /* total FLOPs (bytes) / (peak x busy time) */
    /* cost and energy */
    double billed_s, cost_usd, usd_per_1k_output_tokens, usd_per_good_request, usd_per_1m_good_tokens;
    double energy_j, j_per_good_request;        /* NaN when power is unknown */
    /* the SLO verdict: 1 pass, 0 fail, -1 no target given */
    int verdict;
    int verdict_per_class;                      /* checks are per SLO class (more than one class) */
    uint32_t n_checks;
    SloCheck checks[METRICS_CHECKS_MAX];
    RunReplicas per_replica;                    /* borrowed from the RunData */
    TaskSummary tasks;                          /* chains of requests (tasks.h), over all requests */
} Summary;

double metrics_tpot_s(const Request *r);       /* NaN when undefined */
/* 0 if r is good, else the MISS_* bits. */
unsigned metrics_misses(const MetricsCfg *cfg, const Request *r);
/* Whether request i counts (warm-up and cool-down exclusion). */
void metrics_included(const MetricsCfg *cfg, const RunData *rd, unsigned char *keep);
/* Exact: sorts v in place when n <= METRICS_EXACT_MAX (the historical
 * path), else O(n): one pass for mean, sd and max, and quantiles by
 * selection (gsl_stats_select), which reorders v. */
void metrics_dist(double *v, uint64_t n, Dist *d);
/* From an accumulator of nanoseconds: exact (metrics_dist) while it holds
 * its values, else the sketch's quantiles (within QSKETCH_REL_ERR). */
void metrics_dist_acc(const StatAcc *a, Dist *d);
void metrics_summarize(const MetricsCfg *cfg, const RunData *rd, Summary *out);
const Slo *metrics_slo_for(const MetricsCfg *cfg, const Request *r);
/* ---- streaming (issue 16): the summary of requests folded one at a time
 * as they leave, for a run that does not keep them (engine_new_stream).
 * Each value goes to a StatAcc: exact up to METRICS_EXACT_MAX values (or
 * always, with exact_stats) and then sketched, so memory stays bounded.
 * Fed the requests of a run, it gives the Summary metrics_summarize gives
 * for the same run (bit for bit while the samples are exact), over the
 * drain window, a fixed window, or the window a warm-up and cool-down
 * leave (MetricsCfg stream_known, from a first pass). ---- */
typedef struct MetricsAcc {
    const MetricsCfg *cfg;
    Summary *out;                              /* counts kept in place */
    StatAcc ttft, tpot, e2e, queue, itl_max;
    StatAcc *verdict;                          /* [group x 4 latency metrics] */
    uint32_t n_groups;
    uint32_t *members, *good;                  /* attainment per group */
    uint32_t ok[6], good_all;
    int64_t t0, t1;
    int excluded;                              /* a request was left out (warm-up, cool-down) */
    /* Utilisation over the window when requests are left out
     * (metrics_acc_iteration): the sums from the window's start, those at
     * the latest included finish (t1), and the iterations begun since,
     * each with the sums before it (their number: the run's tail). */
    int windowed;
    WinSums sums, at_t1;
    int64_t t1_marked;
    struct WinMark *marks;
    size_t m_head, m_len, m_cap;
    int last_in;                               /* the last request added was included */
    /* Chains (MetricsCfg.stream_chains): the arrivals so far, the first
     * one's time, the group of arrivals at the latest time (its time, the
     * arrivals before it, its seqs; open until time passes it) and the
     * groups that straddle a count threshold (their ranks go by seq); the
     * window's start once known (the iterations begun before it wait in
     * pend); the requests that left while their rank could still move
     * (rejected as they arrived: at the open group's time), folded once
     * time passes it; unsettled: a rank that cannot be had (an internal
     * error). */
    uint64_t n_arr;
    int64_t lo_ns, g_t;
    int64_t hi_ns;             /* the latest arrival so far */
    uint64_t g_base;
    int g_open;
    uint64_t *g_seq;
    size_t g_n, g_cap;
    struct AccGroup { int64_t t; uint64_t base; uint64_t *seq; size_t n; } crit[2];
    uint32_t n_crit;
    int t0_known;
    int64_t t0_ns;
    struct AccIter { int64_t t, dur; uint32_t running, waiting; uint64_t kv; } pend[8];
    uint32_t n_pend;
    Request *defer;
    uint32_t n_defer, cap_defer;
    int unsettled;
} MetricsAcc;

int metrics_acc_init(MetricsAcc *a, const MetricsCfg *cfg, Summary *out, Err *e);
/* A request that left (finished or rejected): folded, not kept; tt its
 * token times (NULL when none are kept).  One that the warm-up or
 * cool-down leaves out is only counted. */
void metrics_acc_add(MetricsAcc *a, const Request *r, const int64_t *tt);
/* 1 when the warm-up and cool-down leave r in (metrics_acc_add's test
 * for a stream without chains). */
int metrics_acc_included(const MetricsCfg *cfg, const Request *r);
/* A streamed chain's request r arrives (in simulated-time order): its
 * rank's base (r->arrive_rank) is stamped, and the window's start found. */
void metrics_acc_arrive(MetricsAcc *a, Request *r);
/* At the end of a run: the requests whose rank waited for time to pass
 * their arrival are folded; -1 (an internal error) when a chain's ranks
 * could not be settled or its arrivals are not the count the first pass
 * gave; else 0. */
int metrics_acc_check(MetricsAcc *a, Err *e);
/* One iteration of a single engine whose run keeps iteration records
 * (report.iterations), begun at t_ns for dur_ns with running and waiting
 * requests and kv_used blocks: when the warm-up or cool-down leaves
 * requests out, the summary's means over the window come from these, as a
 * materialised run's from its records.  Else ignored. */
void metrics_acc_iteration(MetricsAcc *a, int64_t t_ns, int64_t dur_ns, uint32_t running, uint32_t waiting,
                           uint64_t kv_used);
/* The summary into a->out; st: the run's engine statistics; itl: the
 * engine's ITL accumulator (engine_set_itl_acc), or NULL. */
void metrics_acc_finish(MetricsAcc *a, const EngineStats *st, const StatAcc *itl);
void metrics_acc_free(MetricsAcc *a);

/* Replica i's row (i < sum->replicas.n), or the cluster's total with
 * i = UINT32_MAX (its peaks are the cluster's, in sum). */
void metrics_replica_row(const Summary *sum, uint32_t i, ReplicaRow *row);

#endif
