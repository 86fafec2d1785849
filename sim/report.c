/*
 * report.c -- JSON report and stdout table (see report.h).
 */
#include "report.h"

#include <math.h>
#include <string.h>

#include "jsonio.h"

const char *report_status_name(const Request *r)
{
    switch (r->state) {
    case REQ_FINISHED: return "finished";
    case REQ_REJECTED: return "rejected";
    case REQ_PENDING: return "pending";
    default: return "unfinished";
    }
}

static const char *reject_name(uint8_t why)
{
    switch (why) {
    case REJECT_KV_TOO_SMALL: return "kv_too_small";
    case REJECT_CONTEXT: return "context_too_long";
    case REJECT_ADMISSION: return "admission";
    default: return NULL;
    }
}

static void add_num_or_null(cJSON *o, const char *k, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(o, k);
    else jsonio_add_num(o, k, v);
}

static cJSON *dist_json(const Dist *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", d->n);
    add_num_or_null(o, "mean", d->mean);
    add_num_or_null(o, "std", d->std);
    add_num_or_null(o, "p50", d->p50);
    add_num_or_null(o, "p90", d->p90);
    add_num_or_null(o, "p95", d->p95);
    add_num_or_null(o, "p99", d->p99);
    add_num_or_null(o, "max", d->max);
    return o;
}

static cJSON *request_json(const Request *r, const int64_t *tt)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    jsonio_add_num(o, "arrival_s", (double)r->t_arrive_ns / 1e9);
    cJSON_AddNumberToObject(o, "prompt_tokens", r->prompt_tokens);
    cJSON_AddNumberToObject(o, "output_tokens", r->output_tokens);
    if (tt) {
        cJSON *a = cJSON_AddArrayToObject(o, "token_times_s");
        for (uint32_t k = 0; k < r->generated; k++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)tt[r->token_off + k] / 1e9));
    }
    int done = r->state == REQ_FINISHED;
    add_num_or_null(o, "ttft_s", done ? (double)(r->t_first_token_ns - r->t_arrive_ns) / 1e9 : NAN);
    add_num_or_null(o, "tpot_s", metrics_tpot_s(r));
    add_num_or_null(o, "e2e_s", done ? (double)(r->t_finish_ns - r->t_arrive_ns) / 1e9 : NAN);
    add_num_or_null(o, "queue_s", r->t_first_sched_ns >= 0 ? (double)(r->t_first_sched_ns - r->t_arrive_ns) / 1e9 : NAN);
    cJSON_AddStringToObject(o, "status", report_status_name(r));
    const char *why = reject_name(r->reject_reason);
    if (why) cJSON_AddStringToObject(o, "reject_reason", why);
    cJSON_AddNumberToObject(o, "preemptions", r->preemptions);
    return o;
}

cJSON *report_json(const Scenario *s, const Engine *eng, const Summary *m, int with_requests)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *sc = cJSON_AddObjectToObject(root, "scenario");
    cJSON_AddStringToObject(sc, "name", s->name);
    cJSON_AddStringToObject(sc, "model", s->model.name);
    cJSON_AddStringToObject(sc, "hardware", s->hw.name);
    cJSON_AddNumberToObject(sc, "tp", s->tp);
    cJSON_AddStringToObject(sc, "scheduler", sched_kind_name(s->sched.kind));
    cJSON_AddStringToObject(sc, "cost_model", s->cost_kind == COST_LINEAR ? "linear" : "roofline");
    cJSON_AddStringToObject(sc, "kv_reserve", kv_reserve_name(s->kv.reserve));
    jsonio_add_num(sc, "kv_capacity_gib", s->kv.capacity_bytes / GIB);
    cJSON_AddBoolToObject(sc, "kv_capacity_derived", s->kv_capacity_derived);
    cJSON_AddBoolToObject(sc, "kv_unbounded", s->kv.unbounded);
    cJSON_AddNumberToObject(sc, "seed", (double)s->seed);

    cJSON *su = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(su, "requests", m->requests);
    cJSON_AddNumberToObject(su, "finished", m->finished);
    cJSON_AddNumberToObject(su, "rejected", m->rejected);
    cJSON_AddItemToObject(su, "ttft_s", dist_json(&m->ttft_s));
    cJSON_AddItemToObject(su, "tpot_s", dist_json(&m->tpot_s));
    cJSON_AddItemToObject(su, "e2e_s", dist_json(&m->e2e_s));
    cJSON_AddItemToObject(su, "queue_s", dist_json(&m->queue_s));
    cJSON_AddItemToObject(su, "itl_max_s", dist_json(&m->itl_max_s));
    cJSON *th = cJSON_AddObjectToObject(su, "throughput");
    jsonio_add_num(th, "window_s", m->window_s);
    jsonio_add_num(th, "window_start_s", m->t0_s);
    jsonio_add_num(th, "window_end_s", m->t1_s);
    jsonio_add_num(th, "output_tokens_per_s", m->output_tokens_per_s);
    jsonio_add_num(th, "total_tokens_per_s", m->total_tokens_per_s);
    jsonio_add_num(th, "requests_per_s", m->requests_per_s);
    cJSON *g = cJSON_AddObjectToObject(su, "goodput");
    jsonio_add_num(g, "requests_per_s", m->goodput_requests_per_s);
    jsonio_add_num(g, "output_tokens_per_s", m->goodput_output_tokens_per_s);
    jsonio_add_num(g, "slo_attainment", m->slo_attainment);
    cJSON_AddNumberToObject(g, "good_requests", m->good);
    cJSON *per = cJSON_AddObjectToObject(g, "attainment");
    if (s->slo.ttft_s > 0) jsonio_add_num(per, "ttft", m->ttft_attainment);
    if (s->slo.tpot_s > 0) jsonio_add_num(per, "tpot", m->tpot_attainment);
    if (s->slo.e2e_s > 0) jsonio_add_num(per, "e2e", m->e2e_attainment);
    cJSON_AddNumberToObject(su, "peak_running", m->peak_running);
    cJSON *kv = cJSON_AddObjectToObject(su, "kv");
    cJSON_AddNumberToObject(kv, "total_blocks", s->kv.unbounded ? -1 : (double)m->kv_total_blocks);
    cJSON_AddNumberToObject(kv, "peak_used_blocks", (double)m->kv_peak_used_blocks);
    jsonio_add_num(kv, "mean_used_blocks", m->kv_mean_used_blocks);
    cJSON_AddNumberToObject(kv, "block_tokens", s->kv.block_tokens);
    cJSON_AddNumberToObject(su, "iterations", (double)m->iterations);
    cJSON_AddNumberToObject(su, "preemptions", (double)m->preemptions);
    jsonio_add_num(su, "busy_s", m->busy_s);
    const EngineStats *st = engine_stats(eng);
    cJSON *br = cJSON_AddObjectToObject(su, "time_breakdown_s");
    jsonio_add_num(br, "gemm", st->t_gemm_s);
    jsonio_add_num(br, "attention", st->t_attn_s);
    jsonio_add_num(br, "lm_head", st->t_lm_head_s);
    jsonio_add_num(br, "communication", st->t_comm_s);
    jsonio_add_num(br, "overhead", st->t_overhead_s);
    cJSON *c = cJSON_AddObjectToObject(su, "cost");
    jsonio_add_num(c, "usd_per_gpu_hour", s->usd_per_gpu_hour);
    cJSON_AddNumberToObject(c, "gpus", m->gpus);
    cJSON_AddStringToObject(c, "billing", "exact (drain window)");
    jsonio_add_num(c, "usd", m->cost_usd);
    add_num_or_null(c, "usd_per_1k_output_tokens", m->usd_per_1k_output_tokens);
    add_num_or_null(c, "usd_per_good_request", m->usd_per_good_request);

    if (with_requests) {
        cJSON *arr = cJSON_AddArrayToObject(root, "requests");
        const int64_t *tt = engine_token_times(eng);
        for (uint32_t i = 0; i < s->wl.n; i++) cJSON_AddItemToArray(arr, request_json(&s->wl.reqs[i], tt));
    }
    return root;
}

static void row(FILE *f, const char *name, const Dist *d, double scale, const char *unit)
{
    if (d->n == 0) {
        fprintf(f, "  %-10s %8s\n", name, "n/a");
        return;
    }
    fprintf(f, "  %-10s %9.2f %9.2f %9.2f %9.2f %9.2f %s  (n=%u)\n", name, d->mean * scale, d->p50 * scale,
            d->p90 * scale, d->p99 * scale, d->max * scale, unit, d->n);
}

void report_print(FILE *f, const Scenario *s, const Engine *eng, const Summary *m)
{
    (void)eng;
    fprintf(f, "servesim: %s\n", s->name);
    fprintf(f, "  %s on %d x %s (tp %d), %s cost model, %s scheduler", s->model.name, s->tp, s->hw.name, s->tp,
            s->cost_kind == COST_LINEAR ? "linear" : "roofline", sched_kind_name(s->sched.kind));
    if (s->sched.kind == SCHED_CHUNKED) fprintf(f, " (budget %u)", s->sched.token_budget);
    fprintf(f, ", max_running %u\n", s->sched.max_running);
    if (s->kv.unbounded)
        fprintf(f, "  KV: unbounded (what-if), %u-token blocks, reserve %s\n", s->kv.block_tokens,
                kv_reserve_name(s->kv.reserve));
    else
        fprintf(f, "  KV: %.2f GiB%s = %llu blocks of %u tokens, reserve %s\n", s->kv.capacity_bytes / GIB,
                s->kv_capacity_derived ? " (derived from memory)" : "", (unsigned long long)m->kv_total_blocks,
                s->kv.block_tokens, kv_reserve_name(s->kv.reserve));
    fprintf(f, "  requests: %u (%u finished, %u rejected), %llu iterations, %llu preemptions\n\n", m->requests,
            m->finished, m->rejected, (unsigned long long)m->iterations, (unsigned long long)m->preemptions);
    fprintf(f, "  %-10s %9s %9s %9s %9s %9s\n", "metric", "mean", "p50", "p90", "p99", "max");
    row(f, "TTFT", &m->ttft_s, 1e3, "ms");
    row(f, "TPOT", &m->tpot_s, 1e3, "ms");
    row(f, "E2E", &m->e2e_s, 1, "s");
    row(f, "queueing", &m->queue_s, 1e3, "ms");
    row(f, "max ITL", &m->itl_max_s, 1e3, "ms");
    fprintf(f, "\n  throughput over the drain window %.3f s (%.3f -> %.3f s):\n", m->window_s, m->t0_s, m->t1_s);
    fprintf(f, "    %.2f req/s, %.1f output tok/s, %.1f total tok/s\n", m->requests_per_s, m->output_tokens_per_s,
            m->total_tokens_per_s);
    fprintf(f, "  goodput (SLO:");
    if (s->slo.ttft_s > 0) fprintf(f, " TTFT <= %g ms", s->slo.ttft_s * 1e3);
    if (s->slo.tpot_s > 0) fprintf(f, " TPOT <= %g ms", s->slo.tpot_s * 1e3);
    if (s->slo.e2e_s > 0) fprintf(f, " E2E <= %g ms", s->slo.e2e_s * 1e3);
    if (s->slo.ttft_s <= 0 && s->slo.tpot_s <= 0 && s->slo.e2e_s <= 0) fprintf(f, " none");
    fprintf(f, "): %.2f req/s, %.1f output tok/s, attainment %.1f%%\n", m->goodput_requests_per_s,
            m->goodput_output_tokens_per_s, m->slo_attainment * 100);
    fprintf(f, "  peak running %u, KV peak %llu / %llu blocks (mean %.0f)\n", m->peak_running,
            (unsigned long long)m->kv_peak_used_blocks, (unsigned long long)m->kv_total_blocks,
            m->kv_mean_used_blocks);
    fprintf(f, "  cost: $%.2f/GPU-h x %.0f GPU x %.3f s = $%.6f; $%.6f per 1k output tokens\n",
            s->usd_per_gpu_hour, m->gpus, m->window_s, m->cost_usd, m->usd_per_1k_output_tokens);
}
