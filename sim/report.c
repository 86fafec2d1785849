/*
 * report.c -- JSON report, table, CSVs and the vLLM-style summary (see
 * report.h).  Every number that is undefined (TPOT of a one-token output,
 * a statistic over no values) is null in JSON and empty in CSV, never 0.
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "jsonio.h"
#include "outfile.h"

const char *report_status_name(const Request *r)
{
    switch (r->state) {
    case REQ_FINISHED: return "finished";
    case REQ_REJECTED: return "rejected";
    case REQ_CANCELLED: return "cancelled";
    case REQ_PENDING: return "not_arrived";
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

static void num_or_null(cJSON *o, const char *k, double v)
{
    if (isnan(v) || isinf(v)) cJSON_AddNullToObject(o, k);
    else jsonio_add_num(o, k, v);
}

static cJSON *dist_json(const Dist *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", d->n);
    num_or_null(o, "mean", d->mean);
    num_or_null(o, "std", d->std);
    num_or_null(o, "p50", d->p50);
    num_or_null(o, "p90", d->p90);
    num_or_null(o, "p95", d->p95);
    num_or_null(o, "p99", d->p99);
    num_or_null(o, "max", d->max);
    return o;
}

static double ns_s(int64_t ns) { return (double)ns / 1e9; }

static cJSON *request_json(const MetricsCfg *cfg, const Request *r, const int64_t *tt)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    if (r->state != REQ_PENDING) jsonio_add_num(o, "arrival_s", ns_s(r->t_arrive_ns));
    else cJSON_AddNullToObject(o, "arrival_s");
    cJSON_AddNumberToObject(o, "prompt_tokens", r->prompt_tokens);
    cJSON_AddNumberToObject(o, "output_tokens", r->output_tokens);
    if (cfg->cls_names && r->cls < cfg->n_cls) cJSON_AddStringToObject(o, "class", cfg->cls_names[r->cls]);
    if (tt) {
        cJSON *a = cJSON_AddArrayToObject(o, "token_times_s");
        for (uint32_t k = 0; k < r->generated; k++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber(ns_s(tt[r->token_off + k])));
    }
    int done = r->state == REQ_FINISHED;
    num_or_null(o, "ttft_s", done ? ns_s(metrics_ttft_ns(cfg, r)) : NAN);
    num_or_null(o, "tpot_s", metrics_tpot_s(r));
    num_or_null(o, "itl_max_s", done && r->output_tokens > 1 ? ns_s(r->itl_max_ns) : NAN);
    num_or_null(o, "e2e_s", done ? ns_s(metrics_e2e_ns(cfg, r)) : NAN);
    num_or_null(o, "queue_s", r->t_first_sched_ns >= 0 ? ns_s(r->t_first_sched_ns - r->t_arrive_ns) : NAN);
    cJSON_AddStringToObject(o, "status", report_status_name(r));
    const char *why = reject_name(r->reject_reason);
    if (why) cJSON_AddStringToObject(o, "reject_reason", why);
    cJSON_AddNumberToObject(o, "preemptions", r->preemptions);
    cJSON_AddBoolToObject(o, "good", metrics_misses(cfg, r) == 0);
    if (r->cancel_after_ns > 0) jsonio_add_num(o, "cancel_after_s", ns_s(r->cancel_after_ns));
    if (r->state == REQ_CANCELLED) {
        /* the client's cancel returned at cancel_return_s; its blocks went
         * back to the pool at kv_released_s */
        jsonio_add_num(o, "cancel_return_s", ns_s(r->t_cancel_ns));
        jsonio_add_num(o, "kv_released_s", ns_s(r->t_finish_ns));
        cJSON_AddNumberToObject(o, "cancel_blocks", r->cancel_blocks);
    }
    return o;
}

/* summary.lora and summary.offload (issue 18), present only when used. */
static void report_hooks_json(cJSON *su, const HookStats *h)
{
    if (h->has_lora) {
        cJSON *o = cJSON_AddObjectToObject(su, "lora");
        cJSON_AddNumberToObject(o, "lookups", (double)h->adapter_lookups);
        cJSON_AddNumberToObject(o, "hits", (double)h->adapter_hits);
        num_or_null(o, "hit_rate", h->adapter_lookups ? (double)h->adapter_hits / (double)h->adapter_lookups : NAN);
        cJSON_AddNumberToObject(o, "loads", (double)h->adapter_loads);
        jsonio_add_num(o, "load_s", h->adapter_load_s);
        jsonio_add_num(o, "gemm_s", h->adapter_gemm_s);
        cJSON_AddNumberToObject(o, "deferred_admissions", (double)h->adapter_deferred);
    }
    if (h->has_offload) {
        cJSON *o = cJSON_AddObjectToObject(su, "offload");
        cJSON_AddNumberToObject(o, "iterations", (double)h->offload_iters);
        cJSON_AddNumberToObject(o, "link_bound_iterations", (double)h->offload_link_bound);
        jsonio_add_num(o, "wait_s", h->offload_wait_s);
        jsonio_add_num(o, "bytes", h->offload_bytes);
    }
}

static void report_hooks_table(FILE *f, const HookStats *h)
{
    if (h->has_lora)
        fprintf(f, "  adapters: %llu of %llu requests found theirs on the GPU (%.1f%%), %llu loads taking %.3f s, "
                   "low-rank GEMMs %.3f s\n", (unsigned long long)h->adapter_hits,
                (unsigned long long)h->adapter_lookups,
                h->adapter_lookups ? 100.0 * (double)h->adapter_hits / (double)h->adapter_lookups : 0.0,
                (unsigned long long)h->adapter_loads, h->adapter_load_s, h->adapter_gemm_s);
    if (h->has_offload)
        fprintf(f, "  weight offload: %llu of %llu iterations link-bound, waiting %.3f s for %.2f GB streamed\n",
                (unsigned long long)h->offload_link_bound, (unsigned long long)h->offload_iters, h->offload_wait_s,
                h->offload_bytes / 1e9);
}

static void replica_row_json(cJSON *o, const ReplicaRow *r)
{
    cJSON_AddNumberToObject(o, "requests", r->requests);
    cJSON_AddNumberToObject(o, "peak_running", r->peak_running);
    jsonio_add_num(o, "mean_running", r->mean_running);
    cJSON_AddNumberToObject(o, "peak_waiting", r->peak_waiting);
    jsonio_add_num(o, "mean_waiting", r->mean_waiting);
    cJSON_AddNumberToObject(o, "kv_total_blocks", (double)r->kv_total_blocks);
    cJSON_AddNumberToObject(o, "kv_peak_used_blocks", (double)r->kv_peak_used_blocks);
    jsonio_add_num(o, "kv_mean_used_blocks", r->kv_mean_used_blocks);
    jsonio_add_num(o, "busy_share", r->busy_share);
}

static const char *check_class(const MetricsCfg *cfg, const SloCheck *c)
{
    if (!cfg->cls_names || c->cls >= cfg->n_cls) return "default";
    return cfg->cls_names[c->cls];
}

/* summary.slo_verdict: {"pass": true|false|null, "checks": [...]} */
static cJSON *verdict_json(const MetricsCfg *cfg, const Summary *m)
{
    cJSON *v = cJSON_CreateObject();
    if (m->verdict < 0) cJSON_AddNullToObject(v, "pass");
    else cJSON_AddBoolToObject(v, "pass", m->verdict == 1);
    cJSON *arr = cJSON_AddArrayToObject(v, "checks");
    for (uint32_t k = 0; k < m->n_checks; k++) {
        const SloCheck *c = &m->checks[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "class", check_class(cfg, c));
        cJSON_AddStringToObject(o, "metric", metrics_slo_metric_names[c->metric]);
        if (c->metric == SLO_ATTAINMENT) {
            jsonio_add_num(o, "target", c->target);
            jsonio_add_num(o, "achieved", c->achieved);
        } else {
            jsonio_add_num(o, "percentile", c->percentile);
            jsonio_add_num(o, "target_s", c->target);
            num_or_null(o, "achieved_s", c->achieved); /* null: the percentile falls on unfinished requests */
        }
        cJSON_AddNumberToObject(o, "requests", c->n);
        cJSON_AddBoolToObject(o, "pass", c->pass);
        cJSON_AddItemToArray(arr, o);
    }
    return v;
}

/* summary.tasks: the mean split of the complete tasks and what halving
 * each part alone would make of the mean task (tasks.h). */
static cJSON *tasks_summary_json(const TaskSummary *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "tasks", t->tasks);
    cJSON_AddNumberToObject(o, "complete", t->complete);
    cJSON_AddNumberToObject(o, "turns", t->turns);
    jsonio_add_num(o, "mean_total_s", t->mean_total_s);
    cJSON *parts = cJSON_AddObjectToObject(o, "mean_s");
    cJSON *half = cJSON_AddObjectToObject(o, "halved_total_s");
    for (int p = 0; p < TASK_N_PARTS; p++) {
        jsonio_add_num(parts, tasks_part_names[p], t->mean_part_s[p]);
        jsonio_add_num(half, tasks_part_names[p], t->mean_total_s - t->mean_part_s[p] / 2);
    }
    return o;
}

/* tasks[]: one row per task (a chain of requests), incomplete ones with
 * null times. */
static cJSON *task_row_json(const TaskRow *t, const char *first_id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "first", first_id ? first_id : "?");
    cJSON_AddNumberToObject(o, "turns", t->turns);
    cJSON_AddBoolToObject(o, "complete", t->complete);
    num_or_null(o, "total_s", t->complete ? t->total_s : NAN);
    for (int p = 0; p < TASK_N_PARTS; p++) {
        char k[32];
        snprintf(k, sizeof k, "%s_s", tasks_part_names[p]);
        num_or_null(o, k, t->complete ? t->part_s[p] : NAN);
    }
    return o;
}

static cJSON *tasks_json(const RunData *rd)
{
    uint32_t n;
    TaskRow *rows = tasks_rows(rd->reqs, rd->n, &n);
    cJSON *arr = cJSON_CreateArray();
    for (uint32_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, task_row_json(&rows[i], rd->reqs[rows[i].first].id));
    free(rows);
    return arr;
}

static cJSON *summary_json(const MetricsCfg *cfg, const Summary *m)
{
    cJSON *su = cJSON_CreateObject();
    cJSON_AddNumberToObject(su, "requests", m->requests);
    cJSON_AddNumberToObject(su, "included", m->included);
    cJSON_AddNumberToObject(su, "finished", m->finished);
    cJSON_AddNumberToObject(su, "rejected", m->rejected);
    cJSON_AddNumberToObject(su, "unfinished", m->unfinished);
    if (m->cancelled) cJSON_AddNumberToObject(su, "cancelled", m->cancelled);
    if (m->tasks.has_tasks) cJSON_AddItemToObject(su, "tasks", tasks_summary_json(&m->tasks));
    if (cfg->warmup_s > 0 || cfg->cooldown_s > 0 || cfg->warmup_requests || cfg->cooldown_requests) {
        cJSON *x = cJSON_AddObjectToObject(su, "excluded");
        jsonio_add_num(x, "warmup_s", cfg->warmup_s);
        jsonio_add_num(x, "cooldown_s", cfg->cooldown_s);
        cJSON_AddNumberToObject(x, "warmup_requests", cfg->warmup_requests);
        cJSON_AddNumberToObject(x, "cooldown_requests", cfg->cooldown_requests);
        cJSON_AddNumberToObject(x, "requests", m->requests - m->included);
    }
    cJSON_AddItemToObject(su, "ttft_s", dist_json(&m->ttft_s));
    cJSON_AddItemToObject(su, "tpot_s", dist_json(&m->tpot_s));
    cJSON_AddItemToObject(su, "itl_s", dist_json(&m->itl_s));
    cJSON_AddItemToObject(su, "itl_max_s", dist_json(&m->itl_max_s));
    cJSON_AddItemToObject(su, "e2e_s", dist_json(&m->e2e_s));
    cJSON_AddItemToObject(su, "queue_s", dist_json(&m->queue_s));

    cJSON *th = cJSON_AddObjectToObject(su, "throughput");
    cJSON_AddStringToObject(th, "window", m->fixed_window ? "fixed" : "drain (first arrival to last completion)");
    jsonio_add_num(th, "window_s", m->window_s);
    jsonio_add_num(th, "window_start_s", m->t0_s);
    jsonio_add_num(th, "window_end_s", m->t1_s);
    cJSON_AddNumberToObject(th, "output_tokens", (double)m->output_tokens);
    cJSON_AddNumberToObject(th, "completed", m->completed);
    jsonio_add_num(th, "output_tokens_per_s", m->output_tokens_per_s);
    jsonio_add_num(th, "total_tokens_per_s", m->total_tokens_per_s);
    jsonio_add_num(th, "requests_per_s", m->requests_per_s);

    cJSON *g = cJSON_AddObjectToObject(su, "goodput");
    jsonio_add_num(g, "requests_per_s", m->goodput_requests_per_s);
    jsonio_add_num(g, "output_tokens_per_s", m->goodput_output_tokens_per_s);
    cJSON_AddNumberToObject(g, "good_requests", m->good);
    jsonio_add_num(g, "slo_attainment", m->slo_attainment);
    cJSON *slo = cJSON_AddObjectToObject(g, "slo");
    const Slo *d = &cfg->slo;
    if (d->ttft_s > 0) jsonio_add_num(slo, "ttft_s", d->ttft_s);
    if (d->tpot_s > 0) jsonio_add_num(slo, "tpot_s", d->tpot_s);
    if (d->itl_max_s > 0) jsonio_add_num(slo, "itl_max_s", d->itl_max_s);
    if (d->e2e_s > 0) jsonio_add_num(slo, "e2e_s", d->e2e_s);
    cJSON *att = cJSON_AddObjectToObject(g, "attainment");
    jsonio_add_num(att, "ttft", m->att_ttft);
    jsonio_add_num(att, "tpot", m->att_tpot);
    jsonio_add_num(att, "itl_max", m->att_itl);
    jsonio_add_num(att, "e2e", m->att_e2e);
    jsonio_add_num(att, "deadline", m->att_deadline);
    jsonio_add_num(att, "correct", m->att_correct);
    if (m->n_cls > 1 || (cfg->cls_names && m->n_cls == 1 && strcmp(cfg->cls_names[0], "default"))) {
        cJSON *cl = cJSON_AddObjectToObject(g, "classes");
        for (uint32_t k = 0; k < m->n_cls; k++) {
            cJSON *c = cJSON_AddObjectToObject(cl, cfg->cls_names ? cfg->cls_names[k] : "?");
            cJSON_AddNumberToObject(c, "requests", m->cls_requests[k]);
            cJSON_AddNumberToObject(c, "good", m->cls_good[k]);
            num_or_null(c, "slo_attainment", m->cls_requests[k] ? (double)m->cls_good[k] / m->cls_requests[k] : NAN);
        }
    }

    cJSON_AddItemToObject(su, "slo_verdict", verdict_json(cfg, m));

    /* with several replicas these are the cluster's: the sum over replicas
     * at each instant (peak and time-weighted mean of the same sum) */
    cJSON_AddNumberToObject(su, "peak_running", m->peak_running);
    cJSON_AddNumberToObject(su, "peak_waiting", m->peak_waiting);
    jsonio_add_num(su, "mean_running", m->mean_running);
    jsonio_add_num(su, "mean_waiting", m->mean_waiting);
    cJSON *kv = cJSON_AddObjectToObject(su, "kv");
    cJSON_AddNumberToObject(kv, "total_blocks", (double)m->kv_total_blocks);
    cJSON_AddNumberToObject(kv, "peak_used_blocks", (double)m->kv_peak_used_blocks);
    jsonio_add_num(kv, "mean_used_blocks", m->kv_mean_used_blocks);
    cJSON_AddNumberToObject(kv, "block_tokens", cfg->kv_block_tokens);
    if (m->per_replica.kv_total_bytes > 0) {
        /* capacities with their units: per GPU of each pool, and in all */
        jsonio_add_num(kv, "capacity_gib_per_gpu", m->per_replica.kv_bytes_per_gpu[0] / GIB);
        if (m->per_replica.n_prefill)
            jsonio_add_num(kv, "capacity_gib_per_gpu_decode", m->per_replica.kv_bytes_per_gpu[1] / GIB);
        jsonio_add_num(kv, "capacity_gib_total", m->per_replica.kv_total_bytes / GIB);
    }
    if (m->per_replica.n > 1) {
        cJSON *reps = cJSON_AddArrayToObject(su, "replicas");
        for (uint32_t i = 0; i < m->per_replica.n; i++) {
            ReplicaRow r;
            metrics_replica_row(m, i, &r);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "replica", i);
            if (m->per_replica.n_prefill)
                cJSON_AddStringToObject(o, "pool", i < m->per_replica.n_prefill ? "prefill" : "decode");
            replica_row_json(o, &r);
            cJSON_AddItemToArray(reps, o);
        }
    }
    if (cfg->kv_unbounded) cJSON_AddStringToObject(kv, "note", "unbounded what-if pool: capacity never binds");
    if (m->has_prefix) {
        cJSON *pc = cJSON_AddObjectToObject(su, "prefix_cache");
        cJSON_AddNumberToObject(pc, "lookup_tokens", (double)m->prefix.lookup_tokens);
        cJSON_AddNumberToObject(pc, "hit_tokens", (double)m->prefix.hit_tokens);
        num_or_null(pc, "hit_rate", m->prefix.lookup_tokens ? (double)m->prefix.hit_tokens / m->prefix.lookup_tokens : NAN);
        cJSON_AddNumberToObject(pc, "evictions", (double)m->prefix.evictions);
        cJSON_AddNumberToObject(pc, "cow_copies", (double)m->prefix.cow_copies);
        cJSON_AddNumberToObject(pc, "cached_blocks_at_end", (double)m->prefix.cached_blocks);
    }
    if (m->cost_queries) {
        cJSON *x = cJSON_AddObjectToObject(su, "cost_model_extrapolation");
        cJSON_AddNumberToObject(x, "queries", (double)m->cost_queries);
        cJSON_AddNumberToObject(x, "outside_grid", (double)m->cost_outside);
        jsonio_add_num(x, "worst_ratio", m->cost_worst_ratio);
        if (m->cost_worst && *m->cost_worst) cJSON_AddStringToObject(x, "worst", m->cost_worst);
    }
    if (m->spec_rounds) {
        /* the busy time of every GPU group, summed over replicas */
        double busy = m->busy_s;
        cJSON *sp = cJSON_AddObjectToObject(su, "speculation");
        cJSON_AddNumberToObject(sp, "rounds", (double)m->spec_rounds);
        jsonio_add_num(sp, "mean_tokens_per_round", (double)m->spec_emitted / (double)m->spec_rounds);
        num_or_null(sp, "acceptance_rate", m->spec_drafted ? (double)m->spec_accepted / (double)m->spec_drafted : NAN);
        cJSON_AddNumberToObject(sp, "drafted_tokens", (double)m->spec_drafted);
        cJSON_AddNumberToObject(sp, "accepted_tokens", (double)m->spec_accepted);
        jsonio_add_num(sp, "draft_s", m->spec_draft_s);
        jsonio_add_num(sp, "verify_s", m->spec_verify_s);
        num_or_null(sp, "draft_time_share", busy > 0 ? m->spec_draft_s / (m->busy_s * m->replicas) : NAN);
        num_or_null(sp, "verify_time_share", busy > 0 ? m->spec_verify_s / (m->busy_s * m->replicas) : NAN);
    }
    report_hooks_json(su, &m->hooks);
    cJSON_AddNumberToObject(su, "iterations", (double)m->iterations);
    cJSON_AddNumberToObject(su, "preemptions", (double)m->preemptions);
    cJSON_AddNumberToObject(su, "recomputed_tokens", (double)m->recomputed_tokens);
    jsonio_add_num(su, "busy_s", m->busy_s);
    cJSON *u = cJSON_AddObjectToObject(su, "utilisation");
    num_or_null(u, "mfu", m->mfu_mean);
    num_or_null(u, "mbu", m->mbu_mean);
    cJSON_AddItemToObject(u, "mfu_per_iteration", dist_json(&m->mfu));
    cJSON_AddItemToObject(u, "mbu_per_iteration", dist_json(&m->mbu));

    cJSON *c = cJSON_AddObjectToObject(su, "cost");
    jsonio_add_num(c, "usd_per_gpu_hour", cfg->price.usd_per_gpu_hour);
    jsonio_add_num(c, "gpus", cfg->price.gpus > 0 ? cfg->price.gpus : 1);
    cJSON_AddStringToObject(c, "billing", metrics_billing_names[cfg->price.billing]);
    if (cfg->price.billing == BILL_INCREMENT) jsonio_add_num(c, "increment_s", cfg->price.increment_s);
    if (cfg->price.billing == BILL_RESERVED) jsonio_add_num(c, "reserved_s", cfg->price.reserved_s);
    jsonio_add_num(c, "billed_s", m->billed_s);
    jsonio_add_num(c, "usd", m->cost_usd);
    num_or_null(c, "usd_per_1k_output_tokens", m->usd_per_1k_output_tokens);
    num_or_null(c, "usd_per_good_request", m->usd_per_good_request);
    num_or_null(c, "usd_per_1m_good_tokens", m->usd_per_1m_good_tokens);
    cJSON *en = cJSON_AddObjectToObject(su, "energy");
    num_or_null(en, "joules", m->energy_j);
    num_or_null(en, "joules_per_good_request", m->j_per_good_request);
    if (cfg->busy_w > 0) {
        jsonio_add_num(en, "busy_w", cfg->busy_w);
        jsonio_add_num(en, "idle_w", cfg->idle_w);
    }
    return su;
}

cJSON *report_json(const MetricsCfg *cfg, const RunData *rd, const Summary *sum, int with_requests)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "summary", summary_json(cfg, sum));
    if (with_requests) {
        cJSON *arr = cJSON_AddArrayToObject(root, "requests");
        for (uint32_t i = 0; i < rd->n; i++) cJSON_AddItemToArray(arr, request_json(cfg, &rd->reqs[i], rd->token_times));
        if (sum->tasks.has_tasks) cJSON_AddItemToObject(root, "tasks", tasks_json(rd));
    }
    return root;
}

/* One element printed inside a root object's array under key, so that
 * cJSON's indentation is the report's own; the element is cut out of it. */
static size_t element_text(const char *key, cJSON *elem, char **text)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, key);
    cJSON_AddItemToArray(arr, elem);
    char *p = cJSON_Print(root);
    cJSON_Delete(root);
    if (!p) common_oom(0);
    char *a = strchr(p, '['), *b = strrchr(p, ']');
    size_t n = a && b > a ? (size_t)(b - a - 1) : 0;
    *text = xmalloc(n + 1);
    memcpy(*text, a ? a + 1 : p, n);
    (*text)[n] = 0;
    cJSON_free(p);
    return n;
}

size_t report_request_json_text(const MetricsCfg *cfg, const Request *r, const int64_t *tt, char **text)
{
    return element_text("requests", request_json(cfg, r, tt), text);
}

size_t report_task_json_text(const TaskRow *t, const char *first_id, char **text)
{
    return element_text("tasks", task_row_json(t, first_id), text);
}

/* ------------------------------------------------------------------ table */

static void row(FILE *f, const char *name, const Dist *d, double scale, const char *unit)
{
    if (d->n == 0) {
        fprintf(f, "  %-10s %9s\n", name, "n/a");
        return;
    }
    fprintf(f, "  %-10s %9.2f %9.2f %9.2f %9.2f %9.2f %s  (n=%llu)\n", name, d->mean * scale, d->p50 * scale,
            d->p90 * scale, d->p99 * scale, d->max * scale, unit, (unsigned long long)d->n);
}

/* Several GPUs: the capacity per GPU, per replica and in all, each with
 * its unit (a pool's capacity is per replica: per GPU x tp). */
static void print_kv_pools(FILE *f, const Scenario *s, const Summary *m)
{
    double total = 0;
    for (uint32_t p = 0; p < s->n_pools; p++) total += s->pools[p].replicas * s->pools[p].kv.capacity_bytes;
    for (uint32_t p = 0; p < s->n_pools; p++) {
        const Pool *pl = &s->pools[p];
        uint32_t first = p == 0 ? 0 : s->pools[0].replicas;
        fprintf(f, "  KV%s: %.2f GiB per GPU%s = %.2f GiB per replica (tp %d)", s->disagg ? (p ? " decode" : " prefill") : "",
                pl->kv.capacity_bytes / pl->tp / GIB, s->kv_capacity_derived ? " (derived from memory)" : "",
                pl->kv.capacity_bytes / GIB, pl->tp);
        if (m->per_replica.n > first)
            fprintf(f, " = %llu blocks of %u tokens", (unsigned long long)m->per_replica.st[first]->kv_total_blocks,
                    s->kv.block_tokens);
        fputc('\n', f);
    }
    fprintf(f, "      in all: %.2f GiB = %llu blocks over %u replicas (%g GPUs), reserve %s\n", total / GIB,
            (unsigned long long)m->kv_total_blocks, s->n_pools > 1 ? s->pools[0].replicas + s->pools[1].replicas
                                                                    : s->pools[0].replicas,
            scenario_gpus(s), kv_reserve_name(s->kv.reserve));
}

static void print_replica_row(FILE *f, const char *name, const ReplicaRow *r)
{
    fprintf(f, "  %-10s %8u %6u %8.1f %6u %8.1f %9llu %11.1f %9llu %6.1f%%\n", name, r->requests, r->peak_running,
            r->mean_running, r->peak_waiting, r->mean_waiting, (unsigned long long)r->kv_peak_used_blocks,
            r->kv_mean_used_blocks, (unsigned long long)r->kv_total_blocks, r->busy_share * 100);
}

/* Per-replica rows and the cluster's total, whose peaks and means are of
 * the same quantity: the sum over replicas. */
static void print_replicas(FILE *f, const Summary *m)
{
    fprintf(f, "\n  %-10s %8s %6s %8s %6s %8s %9s %11s %9s %7s\n", "replica", "requests", "run", "run", "wait",
            "wait", "KV used", "KV used", "KV total", "busy");
    fprintf(f, "  %-10s %8s %6s %8s %6s %8s %9s %11s %9s %7s\n", "", "", "peak", "mean", "peak", "mean",
            "peak", "mean", "blocks", "");
    char name[32];
    ReplicaRow r;
    for (uint32_t i = 0; i < m->per_replica.n; i++) {
        if (m->per_replica.n_prefill)
            snprintf(name, sizeof name, "%s %u", i < m->per_replica.n_prefill ? "prefill" : "decode",
                     i < m->per_replica.n_prefill ? i : i - m->per_replica.n_prefill);
        else
            snprintf(name, sizeof name, "%u", i);
        metrics_replica_row(m, i, &r);
        print_replica_row(f, name, &r);
    }
    metrics_replica_row(m, UINT32_MAX, &r);
    print_replica_row(f, "cluster", &r);
    fprintf(f, "  (cluster: peaks and means of the sum over replicas; busy: the replicas' mean share of the window)\n");
}

static void print_verdict(FILE *f, const MetricsCfg *cfg, const Summary *m)
{
    if (m->verdict < 0) {
        fprintf(f, "  SLO verdict: no targets (give \"slo\", e.g. {\"ttft_ms\": 500, \"percentile\": 90})\n");
        return;
    }
    fprintf(f, "  SLO verdict: %s (each target at its percentile over the included requests; unfinished ones "
               "count as misses)\n", m->verdict ? "PASS" : "FAIL");
    static const char *const label[] = {"TTFT", "TPOT", "max ITL", "E2E", "attainment"};
    for (uint32_t k = 0; k < m->n_checks; k++) {
        const SloCheck *c = &m->checks[k];
        char what[96], got[48];
        if (m->verdict_per_class) snprintf(what, sizeof what, "%s: ", check_class(cfg, c));
        else what[0] = '\0';
        size_t used = strlen(what);
        if (c->metric == SLO_ATTAINMENT) {
            snprintf(what + used, sizeof what - used, "attainment");
            snprintf(got, sizeof got, ">= %g%%", c->target * 100);
            fprintf(f, "    %-22s %9.1f %%   target %-12s %s  (n=%u)\n", what, c->achieved * 100, got,
                    c->pass ? "pass" : "FAIL", c->n);
            continue;
        }
        snprintf(what + used, sizeof what - used, "p%g %s", c->percentile, label[c->metric]);
        char tgt[48];
        snprintf(tgt, sizeof tgt, "<= %g ms", c->target * 1e3);
        if (isinf(c->achieved)) snprintf(got, sizeof got, "%9s   ", "unfinished");
        else snprintf(got, sizeof got, "%9.2f ms", c->achieved * 1e3);
        fprintf(f, "    %-22s %s   target %-12s %s  (n=%u)\n", what, got, tgt, c->pass ? "pass" : "FAIL", c->n);
    }
}

/* The mean task's split and what halving each part alone buys (Amdahl). */
static void print_tasks(FILE *f, const TaskSummary *t)
{
    fprintf(f, "  tasks: %u (%u complete, %u turns)", t->tasks, t->complete, t->turns);
    if (!t->complete || !(t->mean_total_s > 0)) {
        fputs("\n", f);
        return;
    }
    fprintf(f, ": mean %.3f s =", t->mean_total_s);
    for (int p = 0; p < TASK_N_PARTS; p++)
        fprintf(f, "%s %s %.3f (%.1f%%)", p ? " +" : "", tasks_part_names[p], t->mean_part_s[p],
                100 * t->mean_part_s[p] / t->mean_total_s);
    fputs("\n    halving one part alone:", f);
    for (int p = 0; p < TASK_N_PARTS; p++)
        fprintf(f, "%s %s -> %.3f s (%.2fx)", p ? "," : "", tasks_part_names[p],
                t->mean_total_s - t->mean_part_s[p] / 2,
                tasks_amdahl(t->mean_part_s[p] / t->mean_total_s, 2));
    fputs("\n", f);
}

void report_print(FILE *f, const Scenario *s, const MetricsCfg *cfg, const Summary *m)
{
    report_print_band(f, s, cfg, m, NULL);
}

void report_band_json(cJSON *root, const ErrBand *band, const Summary *m)
{
    cJSON *su = cJSON_GetObjectItemCaseSensitive(root, "summary");
    if (su) errband_add_run_json(su, band, m->ttft_s.mean, m->tpot_s.mean);
}

void report_print_band(FILE *f, const Scenario *s, const MetricsCfg *cfg, const Summary *m, const ErrBand *band)
{
    if (s) {
        fprintf(f, "servesim: %s\n", s->name);
        if (s->disagg)
            fprintf(f, "  %s disaggregated: %u prefill x %s (tp %d) + %u decode x %s (tp %d), link %.0f GB/s, "
                       "first token on the %s side\n", s->model.name, s->pools[0].replicas, s->pools[0].hw.name,
                    s->pools[0].tp, s->pools[1].replicas, s->pools[1].hw.name, s->pools[1].tp,
                    s->link_bw_bytes_per_s / 1e9, s->first_token_on_decode ? "decode" : "prefill");
        else if (s->pools[0].replicas > 1)
            fprintf(f, "  %u replicas behind a %s router\n", s->pools[0].replicas, scenario_router_names[s->router]);
        fprintf(f, "  %s on %g GPU(s) of %s (tp %d), %s cost model, %s scheduler", s->model.name, scenario_gpus(s),
                s->hw.name, s->tp, scenario_cost_kind_name(s->cost_kind), sched_kind_name(s->sched.kind));
        if (s->sched.kind == SCHED_CHUNKED)
            fprintf(f, " (budget %u%s)", s->sched.token_budget, s->sched.prefill_apart ? ", mixed false" : "");
        fprintf(f, ", max_running %u\n", s->sched.max_running);
        if (s->kv.unbounded)
            fprintf(f, "  KV: unbounded (what-if), %u-token blocks, reserve %s\n", s->kv.block_tokens,
                    kv_reserve_name(s->kv.reserve));
        else if (scenario_gpus(s) <= 1)
            fprintf(f, "  KV: %.2f GiB%s = %llu blocks of %u tokens, reserve %s\n", s->kv.capacity_bytes / GIB,
                    s->kv_capacity_derived ? " (derived from memory)" : "", (unsigned long long)m->kv_total_blocks,
                    s->kv.block_tokens, kv_reserve_name(s->kv.reserve));
        else
            print_kv_pools(f, s, m);
        fprintf(f, "  requests: %u (%u finished, %u rejected", m->requests, m->finished, m->rejected);
        if (m->cancelled) fprintf(f, ", %u cancelled", m->cancelled);
        fprintf(f, "), %llu iterations, %llu preemptions\n", (unsigned long long)m->iterations,
                (unsigned long long)m->preemptions);
    } else {
        fprintf(f, "servesim replay: %u requests (%u finished, %u rejected", m->requests, m->finished, m->rejected);
        if (m->cancelled) fprintf(f, ", %u cancelled", m->cancelled);
        fputs(")\n", f);
    }
    if (m->included != m->requests)
        fprintf(f, "  statistics over %u requests (%u excluded as warm-up/cool-down)\n", m->included,
                m->requests - m->included);
    fprintf(f, "\n  %-10s %9s %9s %9s %9s %9s\n", "metric", "mean", "p50", "p90", "p99", "max");
    row(f, "TTFT", &m->ttft_s, 1e3, "ms");
    row(f, "TPOT", &m->tpot_s, 1e3, "ms");
    row(f, "ITL", &m->itl_s, 1e3, "ms");
    row(f, "E2E", &m->e2e_s, 1, "s");
    row(f, "queueing", &m->queue_s, 1e3, "ms");
    row(f, "max ITL", &m->itl_max_s, 1e3, "ms");
    if (band) errband_print(f, band, m->ttft_s.mean, m->tpot_s.mean);
    fprintf(f, "\n  throughput over the %s window %.3f s (%.3f -> %.3f s):\n", m->fixed_window ? "fixed" : "drain",
            m->window_s, m->t0_s, m->t1_s);
    fprintf(f, "    %.2f req/s, %.1f output tok/s, %.1f total tok/s\n", m->requests_per_s, m->output_tokens_per_s,
            m->total_tokens_per_s);
    const Slo *d = &cfg->slo;
    fprintf(f, "  goodput over the same window (SLO:");
    if (d->ttft_s > 0) fprintf(f, " TTFT <= %g ms", d->ttft_s * 1e3);
    if (d->tpot_s > 0) fprintf(f, " TPOT <= %g ms", d->tpot_s * 1e3);
    if (d->itl_max_s > 0) fprintf(f, " max ITL <= %g ms", d->itl_max_s * 1e3);
    if (d->e2e_s > 0) fprintf(f, " E2E <= %g ms", d->e2e_s * 1e3);
    if (d->ttft_s <= 0 && d->tpot_s <= 0 && d->itl_max_s <= 0 && d->e2e_s <= 0) fprintf(f, " none");
    fprintf(f, "): %.2f req/s, %.1f output tok/s, attainment %.1f%%\n", m->goodput_requests_per_s,
            m->goodput_output_tokens_per_s, m->slo_attainment * 100);
    print_verdict(f, cfg, m);
    if (m->iterations && m->per_replica.n > 1)
        print_replicas(f, m);
    else if (m->iterations)
        fprintf(f, "  running peak %u (mean %.1f), waiting peak %u (mean %.1f), KV peak %llu / %llu blocks (mean %.0f)\n",
                m->peak_running, m->mean_running, m->peak_waiting, m->mean_waiting,
                (unsigned long long)m->kv_peak_used_blocks, (unsigned long long)m->kv_total_blocks,
                m->kv_mean_used_blocks);
    if (m->has_prefix && m->prefix.lookup_tokens)
        fprintf(f, "  prefix cache: %llu of %llu prompt tokens hit (%.1f%%), %llu evictions\n",
                (unsigned long long)m->prefix.hit_tokens, (unsigned long long)m->prefix.lookup_tokens,
                100.0 * (double)m->prefix.hit_tokens / (double)m->prefix.lookup_tokens,
                (unsigned long long)m->prefix.evictions);
    if (m->tasks.has_tasks) print_tasks(f, &m->tasks);
    if (m->cost_outside)
        fprintf(f, "  cost model: %llu of %llu iterations priced outside the profile's measured grid (worst: %s)\n",
                (unsigned long long)m->cost_outside, (unsigned long long)m->cost_queries,
                m->cost_worst && *m->cost_worst ? m->cost_worst : "?");
    if (m->spec_rounds)
        fprintf(f, "  speculation: %llu rounds, %.2f tokens per round, %.1f%% of drafts accepted, drafting %.1f%% "
                   "of busy time\n", (unsigned long long)m->spec_rounds,
                (double)m->spec_emitted / (double)m->spec_rounds,
                m->spec_drafted ? 100.0 * (double)m->spec_accepted / (double)m->spec_drafted : 0.0,
                m->busy_s > 0 ? 100.0 * m->spec_draft_s / (m->busy_s * m->replicas) : 0.0);
    report_hooks_table(f, &m->hooks);
    if (!isnan(m->mfu_mean)) fprintf(f, "  MFU %.1f%%, MBU %.1f%% (over busy time)\n", m->mfu_mean * 100, m->mbu_mean * 100);
    fprintf(f, "  cost: $%.2f/GPU-h x %g GPU x %.3f s billed (%s) = $%.6f; ", cfg->price.usd_per_gpu_hour,
            cfg->price.gpus > 0 ? cfg->price.gpus : 1, m->billed_s, metrics_billing_names[cfg->price.billing],
            m->cost_usd);
    /* a run whose requests were all rejected has no tokens to divide by */
    if (isfinite(m->usd_per_1k_output_tokens)) fprintf(f, "$%.6f per 1k output tokens\n", m->usd_per_1k_output_tokens);
    else fputs("no output tokens to price\n", f);
    if (!isnan(m->energy_j)) {
        if (isfinite(m->j_per_good_request))
            fprintf(f, "  energy: %.1f J (%.2f J per good request)\n", m->energy_j, m->j_per_good_request);
        else
            fprintf(f, "  energy: %.1f J (no good request)\n", m->energy_j);
    }
}

/* -------------------------------------------------------------------- CSV */

static void csv_num(FILE *f, double v)
{
    if (!isnan(v) && !isinf(v)) fprintf(f, "%.9g", v);
}

static FILE *csv_open(OutFile *o, const char *path, Err *e)
{
    return outfile_open(o, path, e);
}

static int csv_close(OutFile *o, Err *e)
{
    return outfile_commit(o, e);
}

/* Ids are written quoted with doubled quotes, as RFC 4180 asks. */
static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void report_csv_header(FILE *f)
{
    fprintf(f, "id,arrival_s,prompt_tokens,output_tokens,class,status,ttft_s,tpot_s,itl_max_s,e2e_s,queue_s,"
               "preemptions,good,reject_reason\n");
}

int report_requests_csv(const char *path, const MetricsCfg *cfg, const RunData *rd, Err *e)
{
    OutFile o;
    FILE *f = csv_open(&o, path, e);
    if (!f) return -1;
    report_csv_header(f);
    for (uint32_t i = 0; i < rd->n; i++) report_csv_row(f, cfg, &rd->reqs[i]);
    return csv_close(&o, e);
}

int report_tokens_csv(const char *path, const RunData *rd, Err *e)
{
    if (!rd->token_times)
        return err_set(e, "%s: no per-token times (the scenario sets report.token_times to false)", path);
    OutFile o;
    FILE *f = csv_open(&o, path, e);
    if (!f) return -1;
    fputs("id,token,time_s\n", f);
    for (uint32_t i = 0; i < rd->n; i++) report_tokens_rows(f, &rd->reqs[i], rd->token_times + rd->reqs[i].token_off);
    return csv_close(&o, e);
}

void report_tokens_rows(FILE *f, const Request *r, const int64_t *tt)
{
    for (uint32_t k = 0; k < r->generated; k++) {
        csv_str(f, r->id);
        fprintf(f, ",%u,%.9f\n", k, ns_s(tt[k]));
    }
}

void report_csv_row(FILE *f, const MetricsCfg *cfg, const Request *r)
{
    {
        int done = r->state == REQ_FINISHED;
        csv_str(f, r->id);
        fputc(',', f);
        csv_num(f, r->state != REQ_PENDING ? ns_s(r->t_arrive_ns) : NAN);
        fprintf(f, ",%u,%u,", r->prompt_tokens, r->output_tokens);
        if (cfg->cls_names && r->cls < cfg->n_cls) csv_str(f, cfg->cls_names[r->cls]);
        fprintf(f, ",%s,", report_status_name(r));
        csv_num(f, done ? ns_s(metrics_ttft_ns(cfg, r)) : NAN);
        fputc(',', f);
        csv_num(f, metrics_tpot_s(r));
        fputc(',', f);
        csv_num(f, done && r->output_tokens > 1 ? ns_s(r->itl_max_ns) : NAN);
        fputc(',', f);
        csv_num(f, done ? ns_s(metrics_e2e_ns(cfg, r)) : NAN);
        fputc(',', f);
        csv_num(f, r->t_first_sched_ns >= 0 ? ns_s(r->t_first_sched_ns - r->t_arrive_ns) : NAN);
        const char *why = r->state == REQ_REJECTED ? reject_name(r->reject_reason) : NULL;
        fprintf(f, ",%u,%d,%s\n", r->preemptions, metrics_misses(cfg, r) == 0, why ? why : "");
    }
}

void report_iterations_header(FILE *f)
{
    fprintf(f, "iteration,start_s,duration_s,prefill_requests,decode_requests,new_tokens,prefill_tokens,"
               "decode_tokens,flops,bytes,mfu,mbu,kv_used_blocks,running,waiting\n");
}

void report_iteration_row(FILE *f, const MetricsCfg *cfg, uint64_t k, const IterRecord *it)
{
    double gpus = cfg->price.gpus > 0 ? cfg->price.gpus : 1;
    double d = (double)it->dur_ns / 1e9;
    fprintf(f, "%llu,%.9f,%.9f,%u,%u,%llu,%llu,%llu,%.6g,%.6g,", (unsigned long long)k, ns_s(it->t_start_ns), d,
            it->n_prefill, it->n_decode, (unsigned long long)it->new_tokens, (unsigned long long)it->prefill_tokens,
            (unsigned long long)(it->new_tokens - it->prefill_tokens), it->flops, it->bytes);
    csv_num(f, cfg->peak_flops_per_gpu > 0 && it->flops > 0 ? it->flops / (cfg->peak_flops_per_gpu * gpus * d) : NAN);
    fputc(',', f);
    csv_num(f, cfg->mem_bw_per_gpu > 0 && it->bytes > 0 ? it->bytes / (cfg->mem_bw_per_gpu * gpus * d) : NAN);
    fprintf(f, ",%llu,%u,%u\n", (unsigned long long)it->kv_used_blocks, it->running, it->waiting);
}

int report_iterations_csv(const char *path, const MetricsCfg *cfg, const RunData *rd, Err *e)
{
    if (!rd->iters && rd->st && rd->st->iterations)
        return err_set(e, "%s: no per-iteration records (the scenario sets report.iterations to false)", path);
    OutFile o;
    FILE *f = csv_open(&o, path, e);
    if (!f) return -1;
    report_iterations_header(f);
    for (uint64_t k = 0; k < rd->n_iters; k++) report_iteration_row(f, cfg, k, &rd->iters[k]);
    return csv_close(&o, e);
}

/* -------------------------------------------------------------- vLLM-style */

static void vllm_stats(cJSON *o, const char *name, const Dist *d)
{
    char k[64];
    const char *pre[] = {"mean", "median", "std", "p90", "p95", "p99"};
    const double v[] = {d->mean, d->p50, d->std, d->p90, d->p95, d->p99};
    for (int i = 0; i < 6; i++) {
        snprintf(k, sizeof k, "%s_%s_ms", pre[i], name);
        num_or_null(o, k, v[i] * 1e3);
    }
}

cJSON *report_vllm_head(const MetricsCfg *cfg, const Summary *m)
{
    cJSON *o = cJSON_CreateObject();
    jsonio_add_num(o, "duration", m->window_s);
    cJSON_AddNumberToObject(o, "completed", m->completed);
    cJSON_AddNumberToObject(o, "total_input_tokens", (double)m->prompt_tokens);
    cJSON_AddNumberToObject(o, "total_output_tokens", (double)m->output_tokens);
    jsonio_add_num(o, "request_throughput", m->requests_per_s);
    const Slo *d = &cfg->slo;
    if (d->ttft_s > 0 || d->tpot_s > 0 || d->e2e_s > 0 || d->itl_max_s > 0)
        jsonio_add_num(o, "request_goodput", m->goodput_requests_per_s);
    else
        cJSON_AddNullToObject(o, "request_goodput");
    jsonio_add_num(o, "output_throughput", m->output_tokens_per_s);
    jsonio_add_num(o, "total_token_throughput", m->total_tokens_per_s);
    vllm_stats(o, "ttft", &m->ttft_s);
    vllm_stats(o, "tpot", &m->tpot_s);
    vllm_stats(o, "itl", &m->itl_s);
    vllm_stats(o, "e2el", &m->e2e_s);
    return o;
}

const char *const report_vllm_arrays[REPORT_VLLM_ARRAYS] = {"input_lens", "output_lens", "ttfts", "itls"};

/* A finished request's element of each array; tt: its token times, or NULL */
static void vllm_items(const MetricsCfg *cfg, const Request *r, const int64_t *tt, cJSON *it[REPORT_VLLM_ARRAYS])
{
    it[0] = cJSON_CreateNumber(r->prompt_tokens);
    it[1] = cJSON_CreateNumber(r->output_tokens);
    it[2] = cJSON_CreateNumber(ns_s(metrics_ttft_ns(cfg, r)));
    it[3] = cJSON_CreateArray();
    if (tt)
        for (uint32_t k = 1; k < r->generated; k++) cJSON_AddItemToArray(it[3], cJSON_CreateNumber(ns_s(tt[k] - tt[k - 1])));
}

void report_vllm_texts(const MetricsCfg *cfg, const Request *r, const int64_t *tt, char *text[REPORT_VLLM_ARRAYS],
                       size_t n[REPORT_VLLM_ARRAYS])
{
    cJSON *it[REPORT_VLLM_ARRAYS];
    vllm_items(cfg, r, tt, it);
    for (int a = 0; a < REPORT_VLLM_ARRAYS; a++) n[a] = element_text(report_vllm_arrays[a], it[a], &text[a]);
}

cJSON *report_vllm_json(const MetricsCfg *cfg, const RunData *rd, const Summary *m)
{
    cJSON *o = report_vllm_head(cfg, m), *arr[REPORT_VLLM_ARRAYS];
    for (int a = 0; a < REPORT_VLLM_ARRAYS; a++) arr[a] = cJSON_AddArrayToObject(o, report_vllm_arrays[a]);
    for (uint32_t i = 0; i < rd->n; i++) {
        const Request *r = &rd->reqs[i];
        if (r->state != REQ_FINISHED) continue;
        cJSON *it[REPORT_VLLM_ARRAYS];
        vllm_items(cfg, r, rd->token_times ? rd->token_times + r->token_off : NULL, it);
        for (int a = 0; a < REPORT_VLLM_ARRAYS; a++) cJSON_AddItemToArray(arr[a], it[a]);
    }
    return o;
}
