/*
 * streamrun.c -- a streamed run (see streamrun.h).
 */
#include "streamrun.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"

static void retire(void *ctx, const Request *q)
{
    StreamRun *r = ctx;
    metrics_acc_add(&r->acc, q);
    if (r->csv) report_csv_row(r->csv, &r->mc, q);
}

/* Each iteration's MFU and MBU, as utilisation() in metrics.c computes
 * them from the iteration records a streamed run does not keep. */
static void on_iteration(void *ctx, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                         const CostBreakdown *cb, uint64_t kv_used)
{
    (void)replica;
    (void)t_ns;
    (void)plan;
    (void)kv_used;
    StreamRun *r = ctx;
    double gpus = r->mc.price.gpus > 0 ? r->mc.price.gpus : 1, dur_s = (double)dur_ns / 1e9;
    if (r->mc.peak_flops_per_gpu > 0) statacc_add(&r->mfu, cb->flops / (r->mc.peak_flops_per_gpu * gpus * dur_s));
    if (r->mc.mem_bw_per_gpu > 0) statacc_add(&r->mbu, cb->bytes / (r->mc.mem_bw_per_gpu * gpus * dur_s));
}

int streamrun(StreamRun *r, const char *path, const char *text, const char *name, int has_seed, uint64_t seed,
              int exact_stats, const char *csv_path, Err *e)
{
    memset(r, 0, sizeof *r);
    int rc = path ? scenario_load_file_stream(path, has_seed, seed, &r->s, e)
                  : scenario_load_text_stream(text, name, has_seed, seed, &r->s, e);
    if (rc < 0) {
        memset(&r->s, 0, sizeof r->s); /* the loader freed it */
        return -1;
    }
    r->s.metrics.exact_stats = exact_stats;
    scenario_metrics_cfg(&r->s, &r->mc, r->slo_table, METRICS_CLS_MAX);
    statacc_init(&r->itl, exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    statacc_init(&r->mfu, exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    statacc_init(&r->mbu, exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    if (metrics_acc_init(&r->acc, &r->mc, &r->sum, e) < 0) return -1;
    if (csv_path) {
        if (!(r->csv = outfile_open(&r->csv_o, csv_path, e))) return -1;
        report_csv_header(r->csv);
    }
    r->s.stream_retire = retire;
    r->s.stream_retire_ctx = r;
    MetricsSink sink = {.ctx = r, .on_iteration = on_iteration, .plan_counts_only = 1};
    if (!(r->eng = scenario_engine(&r->s, &sink, e))) return -1;
    engine_set_itl_acc(r->eng, &r->itl);
    if (engine_run(r->eng, e) < 0) return -1;
    r->requests = engine_stream_pulled(r->eng);
    r->peak_live = engine_live_peak(r->eng);
    r->rst[0] = engine_stats(r->eng);
    r->served = (uint32_t)r->requests;
    metrics_acc_finish(&r->acc, engine_stats(r->eng), &r->itl);
    RunData rd;
    streamrun_rundata(r, &rd);
    r->sum.per_replica = rd.replicas;
    /* a cost model that gives no FLOPs (linear) has no MFU or MBU */
    if (engine_stats(r->eng)->flops > 0 && r->s.keep_iterations) {
        metrics_dist_acc(&r->mfu, &r->sum.mfu);
        metrics_dist_acc(&r->mbu, &r->sum.mbu);
    }
    if (r->csv) {
        r->csv = NULL;
        if (outfile_commit(&r->csv_o, e) < 0) return -1;
    }
    return 0;
}

void streamrun_free(StreamRun *r)
{
    if (r->csv) outfile_abort(&r->csv_o);
    r->csv = NULL;
    engine_free(r->eng);
    r->eng = NULL;
    metrics_acc_free(&r->acc);
    statacc_free(&r->itl);
    statacc_free(&r->mfu);
    statacc_free(&r->mbu);
    scenario_free(&r->s);
}

void streamrun_rundata(const StreamRun *r, RunData *rd)
{
    const Scenario *s = &r->s;
    *rd = (RunData){.st = engine_stats(r->eng), .itl = &r->itl};
    rd->replicas.n = 1;
    rd->replicas.st = r->rst;
    rd->replicas.requests = &r->served;
    rd->replicas.kv_bytes_per_gpu[0] = s->pools[0].kv.capacity_bytes / s->pools[0].tp;
    rd->replicas.kv_total_bytes = s->kv.unbounded ? 0 : s->pools[0].replicas * s->pools[0].kv.capacity_bytes;
}
