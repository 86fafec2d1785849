/*
 * metrics.c -- per-request metrics and GSL summary statistics (see
 * metrics.h).
 */
#include "metrics.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double metrics_tpot_s(const Request *r)
{
    if (r->state != REQ_FINISHED || r->output_tokens < 2) return NAN;
    return (double)(r->t_last_token_ns - r->t_first_token_ns) / 1e9 / (r->output_tokens - 1);
}

int metrics_good(const Request *r, const Slo *slo)
{
    if (r->state != REQ_FINISHED) return 0;
    double ttft = (double)(r->t_first_token_ns - r->t_arrive_ns) / 1e9;
    double e2e = (double)(r->t_finish_ns - r->t_arrive_ns) / 1e9;
    double tpot = metrics_tpot_s(r);
    if (slo->ttft_s > 0 && ttft > slo->ttft_s) return 0;
    if (slo->tpot_s > 0 && !isnan(tpot) && tpot > slo->tpot_s) return 0;
    if (slo->e2e_s > 0 && e2e > slo->e2e_s) return 0;
    return 1;
}

void metrics_dist(double *v, uint32_t n, Dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0) {
        d->mean = d->std = d->p50 = d->p90 = d->p95 = d->p99 = d->max = NAN;
        return;
    }
    gsl_sort(v, 1, n);
    d->mean = gsl_stats_mean(v, 1, n);
    d->std = n > 1 ? gsl_stats_sd_m(v, 1, n, d->mean) : 0;
    d->p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
    d->p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90);
    d->p95 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.95);
    d->p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
    d->max = v[n - 1];
}

void metrics_summarize(const Scenario *s, const Engine *eng, Summary *out)
{
    memset(out, 0, sizeof *out);
    const Request *reqs = s->wl.reqs;
    uint32_t n = s->wl.n;
    const EngineStats *st = engine_stats(eng);
    double *buf[5];
    for (int k = 0; k < 5; k++) buf[k] = xmalloc((n ? n : 1) * sizeof(double));
    uint32_t nt = 0, np = 0, ne = 0, nq = 0, ni = 0;
    uint32_t ok_ttft = 0, ok_tpot = 0, ok_e2e = 0;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    const Slo *slo = &s->slo;
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &reqs[i];
        out->requests++;
        if (r->t_arrive_ns < t0) t0 = r->t_arrive_ns;
        if (r->state == REQ_REJECTED) {
            out->rejected++;
            continue;
        }
        if (r->state != REQ_FINISHED) continue;
        out->finished++;
        if (r->t_finish_ns > t1) t1 = r->t_finish_ns;
        out->output_tokens += r->output_tokens;
        out->prompt_tokens += r->prompt_tokens;
        double ttft = (double)(r->t_first_token_ns - r->t_arrive_ns) / 1e9;
        double e2e = (double)(r->t_finish_ns - r->t_arrive_ns) / 1e9;
        double tpot = metrics_tpot_s(r);
        buf[0][nt++] = ttft;
        buf[2][ne++] = e2e;
        if (!isnan(tpot)) buf[1][np++] = tpot;
        buf[3][nq++] = (double)(r->t_first_sched_ns - r->t_arrive_ns) / 1e9;
        if (r->output_tokens > 1) buf[4][ni++] = (double)r->itl_max_ns / 1e9;
        ok_ttft += !(slo->ttft_s > 0 && ttft > slo->ttft_s);
        ok_tpot += !(slo->tpot_s > 0 && !isnan(tpot) && tpot > slo->tpot_s);
        ok_e2e += !(slo->e2e_s > 0 && e2e > slo->e2e_s);
        if (metrics_good(r, slo)) {
            out->good++;
            out->goodput_output_tokens_per_s += r->output_tokens; /* divided below */
        }
    }
    metrics_dist(buf[0], nt, &out->ttft_s);
    metrics_dist(buf[1], np, &out->tpot_s);
    metrics_dist(buf[2], ne, &out->e2e_s);
    metrics_dist(buf[3], nq, &out->queue_s);
    metrics_dist(buf[4], ni, &out->itl_max_s);
    for (int k = 0; k < 5; k++) free(buf[k]);

    if (out->finished == 0 || t1 <= t0) {
        out->t0_s = t0 == INT64_MAX ? 0 : (double)t0 / 1e9;
        out->t1_s = out->t0_s;
        out->window_s = 0;
    } else {
        out->t0_s = (double)t0 / 1e9;
        out->t1_s = (double)t1 / 1e9;
        out->window_s = out->t1_s - out->t0_s;
    }
    double w = out->window_s;
    if (w > 0) {
        out->output_tokens_per_s = (double)out->output_tokens / w;
        out->total_tokens_per_s = (double)(out->output_tokens + out->prompt_tokens) / w;
        out->requests_per_s = out->finished / w;
        out->goodput_requests_per_s = out->good / w;
        out->goodput_output_tokens_per_s /= w;
    } else {
        out->goodput_output_tokens_per_s = 0;
    }
    double denom = out->requests ? out->requests : 1;
    out->slo_attainment = out->good / denom;
    out->ttft_attainment = ok_ttft / denom;
    out->tpot_attainment = ok_tpot / denom;
    out->e2e_attainment = ok_e2e / denom;
    out->peak_running = st->peak_running;
    out->kv_total_blocks = st->kv_total_blocks;
    out->kv_peak_used_blocks = st->kv_peak_used_blocks;
    out->kv_mean_used_blocks = st->busy_ns > 0 ? st->kv_block_ns / (double)st->busy_ns : 0;
    out->iterations = st->iterations;
    out->preemptions = st->preemptions;
    out->busy_s = (double)st->busy_ns / 1e9;
    out->gpus = s->tp;
    out->cost_usd = s->usd_per_gpu_hour * out->gpus * w / 3600.0;
    out->usd_per_1k_output_tokens = out->output_tokens ? out->cost_usd / out->output_tokens * 1000.0 : NAN;
    out->usd_per_good_request = out->good ? out->cost_usd / out->good : NAN;
}
