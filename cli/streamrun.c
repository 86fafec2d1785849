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
    if (metrics_acc_init(&r->acc, &r->mc, &r->sum, e) < 0) return -1;
    if (csv_path) {
        if (!(r->csv = outfile_open(&r->csv_o, csv_path, e))) return -1;
        report_csv_header(r->csv);
    }
    r->s.stream_retire = retire;
    r->s.stream_retire_ctx = r;
    if (!(r->eng = scenario_engine(&r->s, NULL, e))) return -1;
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
