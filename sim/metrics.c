/*
 * metrics.c -- per-request metrics, goodput, cost and utilisation (see
 * metrics.h for every definition).
 */
#include "metrics.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const metrics_billing_names[] = {"exact", "increment", "reserved", NULL};
const char *const metrics_slo_metric_names[] = {"ttft", "tpot", "itl_max", "e2e", "attainment", NULL};

double metrics_tpot_s(const Request *r)
{
    if (r->state != REQ_FINISHED || r->output_tokens < 2) return NAN;
    return (double)(r->t_last_token_ns - r->t_first_token_ns) / 1e9 / (r->output_tokens - 1);
}

const Slo *metrics_slo_for(const MetricsCfg *cfg, const Request *r)
{
    if (cfg->slo_by_cls && r->cls < cfg->n_cls) return &cfg->slo_by_cls[r->cls];
    return &cfg->slo;
}

unsigned metrics_misses(const MetricsCfg *cfg, const Request *r)
{
    if (r->state != REQ_FINISHED) return MISS_NOT_FINISHED;
    const Slo *slo = metrics_slo_for(cfg, r);
    unsigned m = 0;
    double ttft = (double)metrics_ttft_ns(cfg, r) / 1e9;
    double e2e = (double)metrics_e2e_ns(cfg, r) / 1e9;
    double tpot = metrics_tpot_s(r);
    if (slo->ttft_s > 0 && ttft > slo->ttft_s) m |= MISS_TTFT;
    if (slo->tpot_s > 0 && !isnan(tpot) && tpot > slo->tpot_s) m |= MISS_TPOT;
    if (slo->itl_max_s > 0 && (double)r->itl_max_ns / 1e9 > slo->itl_max_s) m |= MISS_ITL;
    if (slo->e2e_s > 0 && e2e > slo->e2e_s) m |= MISS_E2E;
    if (r->deadline_ns >= 0 && r->t_finish_ns > r->deadline_ns) m |= MISS_DEADLINE;
    if (r->correct == 0) m |= MISS_INCORRECT;
    return m;
}

/* The q-quantile of v[0..n) (n > 0) by selection, interpolated exactly as
 * gsl_stats_quantile_from_sorted_data does, for ranks at or above *base
 * (every value below it already at most those above: selection leaves v
 * partitioned around the rank it returns); *base moves past that rank. */
static double select_quantile(double *v, size_t n, size_t *base, double q)
{
    double index = q * (double)(n - 1);
    size_t lhs = (size_t)index;
    double delta = index - (double)lhs, x;
    if (lhs < *base) lhs = *base; /* NEVER: the ranks increase */
    double a = gsl_stats_select(v + *base, 1, n - *base, lhs - *base);
    if (lhs == n - 1 || delta == 0) {
        x = a;
    } else {
        /* the next order statistic: the least value above rank lhs */
        double b = v[lhs + 1];
        for (size_t i = lhs + 2; i < n; i++)
            if (v[i] < b) b = v[i];
        x = (1 - delta) * a + delta * b;
    }
    *base = lhs + 1 < n ? lhs + 1 : n - 1;
    return x;
}

/* Quantiles of an unsorted sample in O(n): order statistics by selection,
 * in increasing rank, each on the part above the previous one (selection
 * leaves v partitioned around the rank it returns), interpolated exactly
 * as gsl_stats_quantile_from_sorted_data does. */
static void dist_select(double *v, size_t n, Dist *d)
{
    static const double qs[4] = {0.50, 0.90, 0.95, 0.99};
    double *out[4] = {&d->p50, &d->p90, &d->p95, &d->p99};
    /* one pass: mean and sd (Welford), max */
    double mean = 0, m2 = 0, mx = v[0];
    for (size_t i = 0; i < n; i++) {
        double x = v[i], dx = x - mean;
        mean += dx / (double)(i + 1);
        m2 += dx * (x - mean);
        if (x > mx) mx = x;
    }
    d->mean = mean;
    d->std = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0;
    d->max = mx;
    size_t base = 0;
    for (int j = 0; j < 4; j++) *out[j] = select_quantile(v, n, &base, qs[j]);
}

/* gsl_sort(v, 1, n), in O(n) when it can be: values that are all >= +0
 * and not NaN (sign bit clear; latencies, fractions) order as their bit
 * patterns do as unsigned integers, and two such values that compare
 * equal have the same bits, so a least-significant-digit radix sort of
 * the patterns gives gsl_sort's array bit for bit.  Anything else (a
 * negative value, -0, a NaN, or few values) goes to gsl_sort.  The summary
 * sorts one array per statistic, and gsl_sort's heapsort of 19,366
 * latencies took more instructions than reading the trace. */
#define METRICS_RADIX_BITS 11
#define METRICS_RADIX_PASSES 6 /* 6 x 11 >= 64 */
static void metrics_sort(double *v, size_t n)
{
    if (n < 256) {
        gsl_sort(v, 1, n);
        return;
    }
    enum { B = 1 << METRICS_RADIX_BITS };
    uint64_t *a = xmalloc(2 * n * sizeof *a), *b = a + n;
    uint32_t *cnt = xcalloc((size_t)METRICS_RADIX_PASSES * B, sizeof *cnt);
    memcpy(a, v, n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = a[i];
        if (x > 0x7ff0000000000000ull) { /* sign bit set, or a NaN */
            free(cnt);
            free(a);
            gsl_sort(v, 1, n);
            return;
        }
        for (int p = 0; p < METRICS_RADIX_PASSES; p++) cnt[p * B + ((x >> (p * METRICS_RADIX_BITS)) & (B - 1))]++;
    }
    for (int p = 0; p < METRICS_RADIX_PASSES; p++) {
        uint32_t *c = cnt + p * B;
        const int shift = p * METRICS_RADIX_BITS;
        if (c[(a[0] >> shift) & (B - 1)] == n) continue; /* one digit for all: the order stands */
        uint32_t sum = 0;
        for (int d = 0; d < B; d++) {
            uint32_t t = c[d];
            c[d] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++) b[c[(a[i] >> shift) & (B - 1)]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    memcpy(v, a, n * sizeof *v);
    free(cnt);
    free(a < b ? a : b);
}

void metrics_dist(double *v, uint64_t n, Dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0) {
        d->mean = d->std = d->p50 = d->p90 = d->p95 = d->p99 = d->max = NAN;
        return;
    }
    if (n > METRICS_EXACT_MAX) {
        dist_select(v, n, d);
        return;
    }
    metrics_sort(v, n);
    d->mean = gsl_stats_mean(v, 1, n);
    d->std = n > 1 ? gsl_stats_sd_m(v, 1, n, d->mean) : 0;
    d->p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
    d->p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90);
    d->p95 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.95);
    d->p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
    d->max = v[n - 1];
}

void metrics_dist_acc(const StatAcc *a, Dist *d)
{
    if (!a->sketched) {
        double *v = xmalloc((a->n ? a->n : 1) * sizeof *v);
        if (a->n) memcpy(v, a->buf, a->n * sizeof *v);
        metrics_dist(v, a->n, d);
        free(v);
        return;
    }
    const QSketch *s = &a->sk;
    memset(d, 0, sizeof *d);
    d->n = s->n;
    d->mean = qsketch_mean(s) / 1e9;
    d->std = qsketch_sd(s) / 1e9;
    d->p50 = qsketch_quantile(s, 0.50) / 1e9;
    d->p90 = qsketch_quantile(s, 0.90) / 1e9;
    d->p95 = qsketch_quantile(s, 0.95) / 1e9;
    d->p99 = qsketch_quantile(s, 0.99) / 1e9;
    d->max = (double)s->max / 1e9;
}

static int arrived(const Request *r)
{
    return r->state != REQ_PENDING;
}

static const Request *sort_base;
static int cmp_by_arrival(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int64_t x = sort_base[i].t_arrive_ns, y = sort_base[j].t_arrive_ns;
    if (x != y) return x < y ? -1 : 1;
    return i < j ? -1 : i > j;
}

void metrics_included(const MetricsCfg *cfg, const RunData *rd, unsigned char *keep)
{
    uint32_t n = rd->n;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        keep[i] = 1;
        if (!arrived(&rd->reqs[i])) continue;
        if (rd->reqs[i].t_arrive_ns < lo) lo = rd->reqs[i].t_arrive_ns;
        if (rd->reqs[i].t_arrive_ns > hi) hi = rd->reqs[i].t_arrive_ns;
    }
    if (cfg->warmup_s > 0 || cfg->cooldown_s > 0) {
        int64_t a = lo + (int64_t)llround(cfg->warmup_s * 1e9), b = hi - (int64_t)llround(cfg->cooldown_s * 1e9);
        for (uint32_t i = 0; i < n; i++)
            if (arrived(&rd->reqs[i]) && (rd->reqs[i].t_arrive_ns < a || rd->reqs[i].t_arrive_ns > b)) keep[i] = 0;
    }
    if (cfg->warmup_requests || cfg->cooldown_requests) {
        uint32_t *ord = xmalloc((n ? n : 1) * sizeof *ord), m = 0;
        for (uint32_t i = 0; i < n; i++)
            if (arrived(&rd->reqs[i])) ord[m++] = i;
        sort_base = rd->reqs;
        qsort(ord, m, sizeof *ord, cmp_by_arrival);
        for (uint32_t k = 0; k < m; k++)
            if (k < cfg->warmup_requests || k + cfg->cooldown_requests >= m) keep[ord[k]] = 0;
        free(ord);
    }
}

static double overlap_ns(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? (double)(hi - lo) : 0;
}

/* Iteration-based utilisation inside [t0, t1]. */
static void utilisation(const MetricsCfg *cfg, const RunData *rd, int64_t t0, int64_t t1, Summary *out)
{
    const EngineStats *st = rd->st;
    double win_ns = (double)(t1 - t0);
    out->peak_running = st->peak_running;
    out->peak_waiting = st->peak_waiting;
    out->kv_total_blocks = st->kv_total_blocks;
    out->kv_peak_used_blocks = st->kv_peak_used_blocks;
    out->iterations = st->iterations;
    out->preemptions = st->preemptions;
    out->recomputed_tokens = st->recomputed_tokens;
    out->busy_s = (double)st->busy_ns / 1e9;
    out->replicas = st->replicas ? st->replicas : 1;
    out->has_prefix = st->has_kv_stats;
    out->cost_queries = st->cost_queries;
    out->cost_outside = st->cost_outside;
    out->cost_worst_ratio = st->cost_worst_ratio;
    out->cost_worst = st->cost_worst;
    out->spec_rounds = st->spec_rounds;
    out->spec_drafted = st->spec_drafted;
    out->spec_accepted = st->spec_accepted;
    out->spec_emitted = st->spec_emitted;
    out->spec_draft_s = st->spec_draft_s;
    out->spec_verify_s = st->spec_verify_s;
    out->prefix = st->kv;
    out->hooks = st->hooks;
    double gpus = cfg->price.gpus > 0 ? cfg->price.gpus : 1;
    /* a cost model that gives no FLOPs (linear) has no MFU or MBU */
    int counted = st->flops > 0;
    out->mfu_mean = counted && cfg->peak_flops_per_gpu > 0 && st->busy_ns > 0
                        ? st->flops / (cfg->peak_flops_per_gpu * gpus * out->busy_s) : NAN;
    out->mbu_mean = counted && cfg->mem_bw_per_gpu > 0 && st->busy_ns > 0
                        ? st->bytes / (cfg->mem_bw_per_gpu * gpus * out->busy_s) : NAN;
    if (!rd->iters || rd->n_iters == 0 || win_ns <= 0) {
        const WinSums tot = {st->running_ns, st->waiting_ns, st->kv_block_ns, 0}, *ws = rd->win ? rd->win : &tot;
        out->mean_running = win_ns > 0 ? ws->run / win_ns : 0;
        out->mean_waiting = win_ns > 0 ? ws->wait / win_ns : 0;
        out->kv_mean_used_blocks = win_ns > 0 ? ws->kv / win_ns : 0;
        metrics_dist(NULL, 0, &out->mfu);
        metrics_dist(NULL, 0, &out->mbu);
        return;
    }
    double run = 0, wait = 0, kv = 0;
    uint64_t n = rd->n_iters;
    double *mfu = xmalloc(n * sizeof *mfu), *mbu = xmalloc(n * sizeof *mbu);
    uint32_t nf = 0, nb = 0;
    for (uint64_t k = 0; k < n; k++) {
        const IterRecord *it = &rd->iters[k];
        double ov = overlap_ns(it->t_start_ns, it->t_start_ns + it->dur_ns, t0, t1);
        run += ov * it->running;
        wait += ov * it->waiting;
        kv += ov * (double)it->kv_used_blocks;
        double dur_s = (double)it->dur_ns / 1e9;
        if (counted && cfg->peak_flops_per_gpu > 0) mfu[nf++] = it->flops / (cfg->peak_flops_per_gpu * gpus * dur_s);
        if (counted && cfg->mem_bw_per_gpu > 0) mbu[nb++] = it->bytes / (cfg->mem_bw_per_gpu * gpus * dur_s);
    }
    out->mean_running = run / win_ns;
    out->mean_waiting = wait / win_ns;
    out->kv_mean_used_blocks = kv / win_ns;
    metrics_dist(mfu, nf, &out->mfu);
    metrics_dist(mbu, nb, &out->mbu);
    free(mfu);
    free(mbu);
}

static double busy_in_window(const RunData *rd, int64_t t0, int64_t t1)
{
    if (!rd->iters || rd->n_iters == 0) return rd->win ? rd->win->busy : (double)rd->st->busy_ns;
    double b = 0;
    for (uint64_t k = 0; k < rd->n_iters; k++)
        b += overlap_ns(rd->iters[k].t_start_ns, rd->iters[k].t_start_ns + rd->iters[k].dur_ns, t0, t1);
    return b;
}


/* ---------------------------------------------------------------- verdict */

/* A value above every real latency: stands for "never finished" inside the
 * GSL quantile, which interpolates and so cannot take infinities (0 x inf
 * is NaN); an interpolated result this large means the percentile touches
 * an unfinished request. */
#define VERDICT_NEVER 1e300

/* Request r's value of a latency metric (seconds); NAN when it is
 * undefined for r (TPOT and max ITL of a one-token output), VERDICT_NEVER
 * when r did not finish. */
static double verdict_value(const MetricsCfg *cfg, const Request *r, int metric)
{
    int done = r->state == REQ_FINISHED;
    if ((metric == SLO_TPOT || metric == SLO_ITL_MAX) && r->output_tokens < 2) return NAN;
    if (r->state == REQ_CANCELLED) return NAN;
    if (!done) return VERDICT_NEVER;
    switch (metric) {
    case SLO_TTFT: return (double)metrics_ttft_ns(cfg, r) / 1e9;
    case SLO_TPOT: return metrics_tpot_s(r);
    case SLO_ITL_MAX: return (double)r->itl_max_ns / 1e9;
    default: return (double)metrics_e2e_ns(cfg, r) / 1e9;
    }
}

static void verdict_add(Summary *out, uint32_t cls, int metric, double pct, double target, double achieved,
                        uint32_t n)
{
    if (out->n_checks >= METRICS_CHECKS_MAX) return; /* NEVER: 5 checks x METRICS_CLS_MAX classes */
    int pass = metric == SLO_ATTAINMENT ? achieved >= target : achieved <= target;
    out->checks[out->n_checks++] = (SloCheck){.cls = cls, .metric = metric, .pass = pass, .percentile = pct,
                                              .target = target, .achieved = achieved, .n = n};
}

/* One check per target of each class's SLO (see metrics.h). */
static void verdict(const MetricsCfg *cfg, const RunData *rd, const unsigned char *keep, Summary *out)
{
    uint32_t n_groups = cfg->n_cls > 1 ? out->n_cls : 1;
    out->verdict_per_class = cfg->n_cls > 1;
    double *v = xmalloc((rd->n ? rd->n : 1) * sizeof *v);
    for (uint32_t g = 0; g < n_groups; g++) {
        const Slo *slo = cfg->slo_by_cls && g < cfg->n_cls ? &cfg->slo_by_cls[g] : &cfg->slo;
        double pct = slo->percentile > 0 ? slo->percentile : METRICS_DEFAULT_PERCENTILE;
        const double target[4] = {slo->ttft_s, slo->tpot_s, slo->itl_max_s, slo->e2e_s};
        uint32_t members = 0, good = 0;
        for (int m = 0; m < 4; m++) {
            if (!(target[m] > 0)) continue;
            uint32_t k = 0;
            for (uint32_t i = 0; i < rd->n; i++) {
                const Request *r = &rd->reqs[i];
                if (!keep[i] || (out->verdict_per_class && r->cls != g)) continue;
                double x = verdict_value(cfg, r, m);
                if (!isnan(x)) v[k++] = x;
            }
            if (k == 0) continue; /* no request of this class has the metric */
            size_t base = 0; /* the one order statistic it needs: selection, not a sort */
            double q = select_quantile(v, k, &base, pct / 100.0);
            verdict_add(out, g, m, pct, target[m], q >= VERDICT_NEVER / 10 ? INFINITY : q, k);
        }
        if (slo->attainment > 0) {
            for (uint32_t i = 0; i < rd->n; i++) {
                const Request *r = &rd->reqs[i];
                if (!keep[i] || (out->verdict_per_class && r->cls != g)) continue;
                members++;
                good += metrics_misses(cfg, r) == 0;
            }
            if (members) verdict_add(out, g, SLO_ATTAINMENT, 0, slo->attainment, (double)good / members, members);
        }
    }
    free(v);
    out->verdict = out->n_checks ? 1 : -1;
    for (uint32_t c = 0; c < out->n_checks; c++)
        if (!out->checks[c].pass) out->verdict = 0;
}

/* What follows from the counts: rates over the window, attainment,
 * utilisation, cost and energy (shared by metrics_summarize and the
 * streaming accumulator). */
static void summary_tail(const MetricsCfg *cfg, const RunData *rd, int64_t t0, int64_t t1, uint32_t good_all,
                         const uint32_t ok[6], Summary *out)
{
    double w = out->window_s;
    if (w > 0) {
        out->output_tokens_per_s = (double)out->output_tokens / w;
        out->total_tokens_per_s = (double)(out->output_tokens + out->prompt_tokens) / w;
        out->requests_per_s = out->completed / w;
        out->goodput_requests_per_s = out->good / w;
        out->goodput_output_tokens_per_s = (double)out->good_output_tokens / w;
    }
    double denom = out->included ? out->included : 1;
    /* attainment is over every included request, wherever it completed;
     * goodput counts only completions inside the window */
    out->slo_attainment = good_all / denom;
    out->att_ttft = ok[0] / denom;
    out->att_tpot = ok[1] / denom;
    out->att_itl = ok[2] / denom;
    out->att_e2e = ok[3] / denom;
    out->att_deadline = ok[4] / denom;
    out->att_correct = ok[5] / denom;

    /* utilisation */
    if (rd->st) utilisation(cfg, rd, t0, t1, out);
    else {
        metrics_dist(NULL, 0, &out->mfu);
        metrics_dist(NULL, 0, &out->mbu);
        out->mfu_mean = out->mbu_mean = NAN;
    }

    /* cost and energy */
    const Price *pr = &cfg->price;
    double gpus = pr->gpus > 0 ? pr->gpus : 1;
    switch (pr->billing) {
    case BILL_INCREMENT:
        out->billed_s = pr->increment_s > 0 ? ceil(w / pr->increment_s - 1e-9) * pr->increment_s : w;
        break;
    case BILL_RESERVED:
        out->billed_s = pr->reserved_s > 0 ? fmax(1.0, ceil(w / pr->reserved_s - 1e-9)) * pr->reserved_s : w;
        break;
    default: out->billed_s = w; break;
    }
    out->cost_usd = pr->usd_per_gpu_hour * gpus * out->billed_s / 3600.0;
    out->usd_per_1k_output_tokens = out->output_tokens ? out->cost_usd / (double)out->output_tokens * 1e3 : NAN;
    out->usd_per_good_request = out->good ? out->cost_usd / out->good : NAN;
    out->usd_per_1m_good_tokens = out->good_output_tokens ? out->cost_usd / (double)out->good_output_tokens * 1e6 : NAN;
    out->energy_j = out->j_per_good_request = NAN;
    if (cfg->busy_w > 0 && rd->st) {
        double busy = busy_in_window(rd, t0, t1) / 1e9;
        if (busy > w) busy = w;
        out->energy_j = gpus * (cfg->busy_w * busy + cfg->idle_w * (w - busy));
        out->j_per_good_request = out->good ? out->energy_j / out->good : NAN;
    }
}

/* The summary's window from the first included arrival *t0 and the last
 * included completion *t1 (INT64_MAX / INT64_MIN: none): a fixed window
 * replaces both; with nothing finished it is empty. */
static void window_bounds(const MetricsCfg *cfg, int64_t *t0, int64_t *t1, Summary *out)
{
    if (cfg->has_window) {
        out->fixed_window = 1;
        *t0 = cfg->window_t0_ns;
        *t1 = cfg->window_t1_ns;
    } else if (out->finished == 0 || *t1 <= *t0) {
        *t0 = *t1 = *t0 == INT64_MAX ? 0 : *t0;
    }
    out->t0_s = (double)*t0 / 1e9;
    out->t1_s = (double)*t1 / 1e9;
    out->window_s = (double)(*t1 - *t0) / 1e9;
}

void metrics_summarize(const MetricsCfg *cfg, const RunData *rd, Summary *out)
{
    memset(out, 0, sizeof *out);
    const uint32_t n = rd->n;
    unsigned char *keep = xmalloc(n ? n : 1);
    metrics_included(cfg, rd, keep);
    /* ITL: every gap of the included finished requests, exact up to
     * METRICS_EXACT_MAX values unless --exact-stats, then sketched */
    StatAcc itl_acc;
    statacc_init(&itl_acc, cfg->exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    int itl = rd->token_times != NULL;
    double *buf[5];
    for (int k = 0; k < 5; k++) buf[k] = xmalloc((n ? n : 1) * sizeof(double));
    uint32_t nt = 0, np = 0, ne = 0, nq = 0, nm = 0;
    int all_in = 1;
    uint32_t ok[6] = {0}, good_all = 0;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    out->n_cls = cfg->n_cls < METRICS_CLS_MAX ? cfg->n_cls : METRICS_CLS_MAX;

    /* pass 1: latency metrics, attainment, drain window */
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &rd->reqs[i];
        out->requests++;
        if (!keep[i]) continue;
        out->included++;
        if (arrived(r) && r->t_arrive_ns < t0) t0 = r->t_arrive_ns;
        unsigned miss = metrics_misses(cfg, r);
        if (r->cls < out->n_cls) {
            out->cls_requests[r->cls]++;
            out->cls_good[r->cls] += miss == 0;
        }
        if (r->state == REQ_REJECTED) out->rejected++;
        if (r->state == REQ_CANCELLED) out->cancelled++;
        if (r->state != REQ_FINISHED) {
            if (r->state != REQ_REJECTED && r->state != REQ_CANCELLED) out->unfinished++;
            continue;
        }
        out->finished++;
        if (r->t_finish_ns > t1) t1 = r->t_finish_ns;
        ok[0] += !(miss & MISS_TTFT);
        ok[1] += !(miss & MISS_TPOT);
        ok[2] += !(miss & MISS_ITL);
        ok[3] += !(miss & MISS_E2E);
        ok[4] += !(miss & MISS_DEADLINE);
        ok[5] += !(miss & MISS_INCORRECT);
        good_all += miss == 0;
        buf[0][nt++] = (double)metrics_ttft_ns(cfg, r) / 1e9;
        buf[2][ne++] = (double)metrics_e2e_ns(cfg, r) / 1e9;
        double tpot = metrics_tpot_s(r);
        if (!isnan(tpot)) buf[1][np++] = tpot;
        if (r->t_first_sched_ns >= 0) buf[3][nq++] = (double)(r->t_first_sched_ns - r->t_arrive_ns) / 1e9;
        if (r->output_tokens > 1) buf[4][nm++] = (double)r->itl_max_ns / 1e9;
        if (itl)
            for (uint32_t k = 1; k < r->generated; k++)
                statacc_add(&itl_acc, (double)(rd->token_times[r->token_off + k] - rd->token_times[r->token_off + k - 1]) / 1e9);
    }
    for (uint32_t i = 0; i < n && all_in; i++) all_in = keep[i] || !arrived(&rd->reqs[i]);
    metrics_dist(buf[0], nt, &out->ttft_s);
    metrics_dist(buf[1], np, &out->tpot_s);
    metrics_dist(buf[2], ne, &out->e2e_s);
    metrics_dist(buf[3], nq, &out->queue_s);
    metrics_dist(buf[4], nm, &out->itl_max_s);
    if (itl) metrics_dist_acc(&itl_acc, &out->itl_s);
    else if (rd->itl && all_in && out->unfinished == 0 && out->cancelled == 0) metrics_dist_acc(rd->itl, &out->itl_s);
    else metrics_dist(NULL, 0, &out->itl_s);
    for (int k = 0; k < 5; k++) free(buf[k]);
    statacc_free(&itl_acc);
    verdict(cfg, rd, keep, out);
    out->per_replica = rd->replicas;
    tasks_summarize(rd->reqs, rd->n, &out->tasks);

    /* the window */
    window_bounds(cfg, &t0, &t1, out);

    /* pass 2: what happened inside the window */
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &rd->reqs[i];
        if (!keep[i] || !arrived(r)) continue;
        int done_in = r->state == REQ_FINISHED && r->t_finish_ns >= t0 && r->t_finish_ns <= t1;
        if (out->fixed_window && rd->token_times) {
            for (uint32_t k = 0; k < r->generated; k++) {
                int64_t t = rd->token_times[r->token_off + k];
                out->output_tokens += t >= t0 && t <= t1;
            }
            if (r->generated > 0 && r->t_first_token_ns >= t0 && r->t_first_token_ns <= t1)
                out->prompt_tokens += r->prompt_tokens;
        } else if (done_in) {
            out->output_tokens += r->output_tokens;
            out->prompt_tokens += r->prompt_tokens;
        }
        if (!done_in) continue;
        out->completed++;
        if (metrics_misses(cfg, r) == 0) {
            out->good++;
            out->good_output_tokens += r->output_tokens;
        }
    }
    free(keep);
    summary_tail(cfg, rd, t0, t1, good_all, ok, out);
}

void metrics_replica_row(const Summary *sum, uint32_t i, ReplicaRow *row)
{
    memset(row, 0, sizeof *row);
    double win_ns = sum->window_s * 1e9;
    if (i == UINT32_MAX) {
        /* the cluster: peaks of the sum (cluster.c samples it), means of the
         * sum, busy share averaged over replicas */
        row->requests = 0;
        for (uint32_t k = 0; k < sum->per_replica.n; k++) row->requests += sum->per_replica.requests[k];
        row->peak_running = sum->peak_running;
        row->peak_waiting = sum->peak_waiting;
        row->mean_running = sum->mean_running;
        row->mean_waiting = sum->mean_waiting;
        row->kv_total_blocks = sum->kv_total_blocks;
        row->kv_peak_used_blocks = sum->kv_peak_used_blocks;
        row->kv_mean_used_blocks = sum->kv_mean_used_blocks;
        row->busy_share = sum->window_s > 0 ? sum->busy_s / sum->window_s : 0;
        return;
    }
    const EngineStats *st = sum->per_replica.st[i];
    row->requests = sum->per_replica.requests[i];
    row->peak_running = st->peak_running;
    row->peak_waiting = st->peak_waiting;
    row->kv_total_blocks = st->kv_total_blocks;
    row->kv_peak_used_blocks = st->kv_peak_used_blocks;
    if (win_ns > 0) {
        row->mean_running = st->running_ns / win_ns;
        row->mean_waiting = st->waiting_ns / win_ns;
        row->kv_mean_used_blocks = st->kv_block_ns / win_ns;
        row->busy_share = (double)st->busy_ns / win_ns;
    }
}

/* ------------------------------------------------------------- streaming */

int metrics_acc_init(MetricsAcc *a, const MetricsCfg *cfg, Summary *out, Err *e)
{
    memset(a, 0, sizeof *a);
    if ((cfg->warmup_s > 0 || cfg->cooldown_s > 0 || cfg->warmup_requests || cfg->cooldown_requests) &&
        !cfg->stream_known)
        /* NEVER: the streamed loader reads them ahead (scenario.c stream_arrivals) */
        return err_set(e, "internal: a streamed run without its arrivals ahead: metrics warm-up and cool-down "
                          "need them (warmup_s %g, cooldown_s %g, warmup_requests %u, cooldown_requests %u)",
                       cfg->warmup_s, cfg->cooldown_s, cfg->warmup_requests, cfg->cooldown_requests);
    uint64_t lim = cfg->exact_stats ? UINT64_MAX : METRICS_EXACT_MAX;
    a->cfg = cfg;
    a->out = out;
    memset(out, 0, sizeof *out);
    out->n_cls = cfg->n_cls < METRICS_CLS_MAX ? cfg->n_cls : METRICS_CLS_MAX;
    statacc_init(&a->ttft, lim);
    statacc_init(&a->tpot, lim);
    statacc_init(&a->e2e, lim);
    statacc_init(&a->queue, lim);
    statacc_init(&a->itl_max, lim);
    a->n_groups = cfg->n_cls > 1 ? out->n_cls : 1;
    out->verdict_per_class = cfg->n_cls > 1;
    a->verdict = xmalloc(a->n_groups * 4 * sizeof *a->verdict);
    for (uint32_t k = 0; k < a->n_groups * 4; k++) statacc_init(&a->verdict[k], lim);
    a->members = xcalloc(a->n_groups, sizeof *a->members);
    a->good = xcalloc(a->n_groups, sizeof *a->good);
    a->t0 = INT64_MAX;
    a->t1 = INT64_MIN;
    a->t1_marked = INT64_MIN;
    return 0;
}

static const Slo *group_slo(const MetricsCfg *cfg, uint32_t g)
{
    return cfg->slo_by_cls && g < cfg->n_cls ? &cfg->slo_by_cls[g] : &cfg->slo;
}

/* metrics_summarize's pass 1, verdict and drain-window pass 2 for one
 * request (every request is included; the drain window holds every
 * completion). */
/* metrics_included for one streamed request: its arrival against the
 * stream's first and last, its rank (seq) against the stream's length. */
int metrics_acc_included(const MetricsCfg *cfg, const Request *r)
{
    if (!cfg->stream_known || !arrived(r)) return 1;
    if (cfg->warmup_s > 0 || cfg->cooldown_s > 0) {
        int64_t lo = cfg->stream_lo_ns + (int64_t)llround(cfg->warmup_s * 1e9);
        int64_t hi = cfg->stream_hi_ns - (int64_t)llround(cfg->cooldown_s * 1e9);
        if (r->t_arrive_ns < lo || r->t_arrive_ns > hi) return 0;
    }
    return !(r->seq < cfg->warmup_requests || r->seq + cfg->cooldown_requests >= cfg->stream_n);
}


/* ------------------------------------------- chains: ranks by arrival */

/* A chain's requests arrive as the run says, so a request's rank by
 * arrival (metrics_included: by time, ties by workload index = seq) is
 * counted: when it arrives, the arrivals at earlier times are all known
 * (r->arrive_rank); those at its own time form its group, closed once
 * time passes it.  Only a group that straddles a count threshold (the
 * warm-up's W, the cool-down's n - C) needs its members ordered by seq:
 * it is kept, sorted (at most two).  Any other member's rank may be taken
 * as the group's base: the decision is the same for all of them. */

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The count thresholds a rank is tested against (0, 1 or 2 of them). */
static uint32_t acc_thresholds(const MetricsCfg *cfg, int64_t thr[2])
{
    uint32_t n = 0;
    if (cfg->warmup_requests) thr[n++] = cfg->warmup_requests;
    if (cfg->cooldown_requests) thr[n++] = (int64_t)cfg->stream_n - (int64_t)cfg->cooldown_requests;
    return n;
}

static void acc_group_close(MetricsAcc *a)
{
    if (!a->g_open) return;
    a->g_open = 0;
    int64_t thr[2];
    uint32_t n_thr = acc_thresholds(a->cfg, thr);
    int straddles = 0;
    for (uint32_t k = 0; k < n_thr; k++)
        straddles |= (int64_t)a->g_base < thr[k] && thr[k] < (int64_t)(a->g_base + a->g_n);
    if (!straddles || a->g_n < 2) return;
    if (a->n_crit == 2) { /* NEVER: two thresholds, one group each */
        a->unsettled = 1;
        return;
    }
    struct AccGroup *g = &a->crit[a->n_crit++];
    g->t = a->g_t;
    g->base = a->g_base;
    g->n = a->g_n;
    g->seq = xmalloc(a->g_n * sizeof *g->seq);
    memcpy(g->seq, a->g_seq, a->g_n * sizeof *g->seq);
    qsort(g->seq, g->n, sizeof *g->seq, cmp_u64);
}

static void acc_sum(MetricsAcc *a, double ov, uint32_t running, uint32_t waiting, uint64_t kv_used)
{
    a->sums.run += ov * running;
    a->sums.wait += ov * waiting;
    a->sums.kv += ov * (double)kv_used;
    a->sums.busy += ov;
}

/* One arrival at t (seq: its workload index) into the group of t. */
static void acc_arrive_one(MetricsAcc *a, int64_t t, uint64_t seq)
{
    const MetricsCfg *cfg = a->cfg;
    if (a->n_arr == 0) a->lo_ns = a->hi_ns = t;
    if (t > a->hi_ns) a->hi_ns = t;
    if (!a->g_open || t > a->g_t) {
        if (!a->g_open && a->n_arr && t == a->g_t) a->unsettled = 1; /* NEVER: time passed it */
        acc_group_close(a);
        a->g_open = 1;
        a->g_t = t;
        a->g_base = a->n_arr;
        a->g_n = 0;
    }
    if (a->g_n == a->g_cap) {
        a->g_cap = a->g_cap ? 2 * a->g_cap : 16;
        a->g_seq = xrealloc(a->g_seq, a->g_cap * sizeof *a->g_seq);
    }
    a->g_seq[a->g_n++] = seq;
    a->n_arr++;
    /* the window's start: the first arrival of rank >= W past the warm-up
     * time; the iterations begun before it are summed now */
    if (a->t0_known || a->n_arr <= cfg->warmup_requests || t < a->lo_ns + llround(cfg->warmup_s * 1e9)) return;
    a->t0_known = 1;
    a->t0_ns = t;
    for (uint32_t k = 0; k < a->n_pend; k++) {
        const struct AccIter *it = &a->pend[k];
        acc_sum(a, overlap_ns(it->t, it->t + it->dur, t, INT64_MAX), it->running, it->waiting, it->kv);
    }
    a->n_pend = 0;
}

void metrics_acc_arrive(MetricsAcc *a, Request *r)
{
    const MetricsCfg *cfg = a->cfg;
    if (!cfg || !cfg->stream_chains) return;
    acc_arrive_one(a, r->t_arrive_ns, r->seq);
    r->arrive_rank = a->g_base;
    /* parallel sampling: its branches arrive with it (the materialised
     * engine gives them its arrival), their seqs following next_branch's
     * (slots.h slots_branch; each takes r's arrive_rank when made) */
    if (r->n_samples > 1 && r->next_branch != REQ_NONE)
        for (uint32_t k = 0; k + 1 < r->n_samples; k++) acc_arrive_one(a, r->t_arrive_ns, (uint64_t)r->next_branch + k);
}

/* r's rank among the arrivals of its open group: those with a smaller seq
 * so far; unsettled when more arrivals could still move it across a
 * threshold. */
static uint64_t acc_open_rank(MetricsAcc *a, const Request *r, int *settled)
{
    uint64_t rank = r->arrive_rank;
    for (size_t k = 0; k < a->g_n; k++) rank += a->g_seq[k] < r->seq;
    const MetricsCfg *cfg = a->cfg;
    uint64_t more = cfg->cooldown_requests ? cfg->stream_n - a->n_arr : UINT64_MAX;
    int64_t thr[2];
    uint32_t n_thr = acc_thresholds(cfg, thr);
    for (uint32_t k = 0; k < n_thr; k++)
        if ((int64_t)rank < thr[k] && (more == UINT64_MAX || (int64_t)(rank + more) >= thr[k])) *settled = 0;
    return rank;
}

/* metrics_included for a chain's request r as it leaves; *settled 0 when
 * arrivals still to come at its time may move its rank across a
 * threshold (it is decided once time passes it). */
static int acc_chain_included(MetricsAcc *a, const Request *r, int *settled)
{
    *settled = 1;
    const MetricsCfg *cfg = a->cfg;
    if (!arrived(r)) return 1;
    /* it left at t_finish: time has passed every arrival before that */
    if (a->g_open && r->t_finish_ns > a->g_t) acc_group_close(a);
    if (cfg->warmup_s > 0 && r->t_arrive_ns < a->lo_ns + llround(cfg->warmup_s * 1e9)) return 0;
    /* the run's last arrival, from a first run (MetricsCfg.stream_need_hi) */
    if (cfg->cooldown_s > 0 && r->t_arrive_ns > cfg->stream_hi_ns - (int64_t)llround(cfg->cooldown_s * 1e9)) return 0;
    if (!cfg->warmup_requests && !cfg->cooldown_requests) return 1;
    uint64_t rank = r->arrive_rank;
    if (a->g_open && r->t_arrive_ns == a->g_t) rank = acc_open_rank(a, r, settled);
    for (uint32_t k = 0; k < a->n_crit; k++) {
        const struct AccGroup *g = &a->crit[k];
        if (g->t != r->t_arrive_ns) continue;
        size_t lo = 0, hi = g->n; /* members with a smaller seq */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (g->seq[mid] < r->seq) lo = mid + 1;
            else hi = mid;
        }
        rank = g->base + lo;
    }
    return !(rank < cfg->warmup_requests || rank + cfg->cooldown_requests >= cfg->stream_n);
}

static void acc_add_decided(MetricsAcc *a, const Request *r, const int64_t *tt, int in);

/* The requests deferred until time passed their arrival (their group
 * closed), folded now that their ranks are settled. */
static void acc_fold_deferred(MetricsAcc *a)
{
    if (!a->n_defer || (a->g_open && a->g_t == a->defer[0].t_arrive_ns)) return;
    for (uint32_t k = 0; k < a->n_defer; k++) {
        int settled;
        int in = acc_chain_included(a, &a->defer[k], &settled);
        if (NEVER(!settled)) a->unsettled = 1;
        acc_add_decided(a, &a->defer[k], NULL, in);
    }
    a->n_defer = 0;
}

int metrics_acc_check(MetricsAcc *a, Err *e)
{
    const MetricsCfg *cfg = a->cfg;
    if (!cfg || !cfg->stream_chains) return 0;
    /* time has passed every arrival */
    acc_group_close(a);
    acc_fold_deferred(a);
    if (NEVER(a->unsettled))
        return err_set(e, "internal: a streamed chain's request's rank by arrival was never settled (warm-up or "
                          "cool-down by count)");
    if (NEVER(cfg->cooldown_requests && a->n_arr != cfg->stream_n))
        return err_set(e, "internal: %llu requests arrived, the first pass counted %llu",
                       (unsigned long long)a->n_arr, (unsigned long long)cfg->stream_n);
    return 0;
}

/* An iteration begun after the latest included finish, and the sums
 * before it. */
typedef struct WinMark {
    int64_t start;
    WinSums before;
} WinMark;

void metrics_acc_iteration(MetricsAcc *a, int64_t t_ns, int64_t dur_ns, uint32_t running, uint32_t waiting,
                           uint64_t kv_used)
{
    if (!a->windowed) return;
    const MetricsCfg *cfg = a->cfg;
    if (!cfg->has_window) {
        /* the window ends at an included completion still to come: this
         * iteration and the sums before it are kept until one passes it */
        if (a->m_len == a->m_cap) {
            /* unrolled into a ring twice the size */
            size_t cap = a->m_cap ? 2 * a->m_cap : 64;
            WinMark *m = xmalloc(cap * sizeof *m);
            for (size_t i = 0; i < a->m_len; i++) m[i] = a->marks[(a->m_head + i) % a->m_cap];
            free(a->marks);
            a->marks = m;
            a->m_cap = cap;
            a->m_head = 0;
        }
        a->marks[(a->m_head + a->m_len++) % a->m_cap] = (WinMark){t_ns, a->sums};
    }
    if (!cfg->has_window && cfg->stream_chains && !a->t0_known) {
        /* a chain's window starts at an arrival still to come (at or after
         * now): this iteration waits for it, those already ended never
         * reach it */
        uint32_t k = 0;
        for (uint32_t i = 0; i < a->n_pend; i++)
            if (a->pend[i].t + a->pend[i].dur > t_ns) a->pend[k++] = a->pend[i];
        a->n_pend = k;
        if (k == sizeof a->pend / sizeof *a->pend) a->unsettled = 1; /* NEVER: iterations of one engine */
        else a->pend[a->n_pend++] = (struct AccIter){t_ns, dur_ns, running, waiting, kv_used};
        return;
    }
    /* utilisation()'s terms: the overlap with [t0, t1], every iteration
     * counted here ending by t1 (t1 is an iteration's end); a fixed
     * window's own bounds */
    int64_t t0 = cfg->stream_chains ? a->t0_ns : cfg->stream_t0_ns;
    double ov = cfg->has_window ? overlap_ns(t_ns, t_ns + dur_ns, cfg->window_t0_ns, cfg->window_t1_ns)
                                : overlap_ns(t_ns, t_ns + dur_ns, t0, INT64_MAX);
    acc_sum(a, ov, running, waiting, kv_used);
}

/* An included request finished at t: the sums over the iterations begun
 * before t become the window's, should t be its end. */
static void acc_mark_t1(MetricsAcc *a, int64_t t)
{
    if (!a->windowed || t < a->t1_marked) return;
    while (a->m_len && a->marks[a->m_head].start < t) {
        a->m_head = (a->m_head + 1) % a->m_cap;
        a->m_len--;
    }
    a->at_t1 = a->m_len ? a->marks[a->m_head].before : a->sums;
    a->t1_marked = t;
}

void metrics_acc_add(MetricsAcc *a, const Request *r, const int64_t *tt)
{
    const MetricsCfg *cfg = a->cfg;
    if (!cfg->stream_chains) {
        acc_add_decided(a, r, tt, metrics_acc_included(cfg, r));
        return;
    }
    int settled, in = acc_chain_included(a, r, &settled);
    acc_fold_deferred(a); /* its group may have closed just now */
    if (settled) {
        acc_add_decided(a, r, tt, in);
        return;
    }
    /* rejected as it arrived (it left at its arrival: no token times):
     * folded once time passes its arrival, which settles its rank */
    if (a->n_defer == a->cap_defer) {
        a->cap_defer = a->cap_defer ? 2 * a->cap_defer : 8;
        a->defer = xrealloc(a->defer, a->cap_defer * sizeof *a->defer);
    }
    Request *d = &a->defer[a->n_defer++];
    *d = *r;
    d->id = NULL; /* the record's buffers go with its slot */
    d->token_ids = NULL;
    d->hash_ids = NULL;
    a->last_in = 0;
}

/* metrics_acc_add with the warm-up and cool-down decided (in). */
static void acc_add_decided(MetricsAcc *a, const Request *r, const int64_t *tt, int in)
{
    const MetricsCfg *cfg = a->cfg;
    Summary *out = a->out;
    out->requests++;
    a->last_in = in;
    if (!a->last_in) {
        a->excluded = 1;
        return;
    }
    out->included++;
    if (arrived(r) && r->t_arrive_ns < a->t0) a->t0 = r->t_arrive_ns;
    unsigned miss = metrics_misses(cfg, r);
    if (r->cls < out->n_cls) {
        out->cls_requests[r->cls]++;
        out->cls_good[r->cls] += miss == 0;
    }
    uint32_t g = out->verdict_per_class ? r->cls : 0;
    if (g < a->n_groups) {
        const Slo *slo = group_slo(cfg, g);
        const double target[4] = {slo->ttft_s, slo->tpot_s, slo->itl_max_s, slo->e2e_s};
        for (int m = 0; m < 4; m++) {
            if (!(target[m] > 0)) continue;
            double x = verdict_value(cfg, r, m);
            if (!isnan(x)) statacc_add(&a->verdict[g * 4 + (uint32_t)m], x);
        }
        a->members[g]++;
        a->good[g] += miss == 0;
    }
    if (r->state == REQ_REJECTED) out->rejected++;
    if (r->state == REQ_CANCELLED) out->cancelled++;
    if (r->state != REQ_FINISHED) {
        if (r->state != REQ_REJECTED && r->state != REQ_CANCELLED) out->unfinished++;
        return;
    }
    out->finished++;
    if (r->t_finish_ns > a->t1) a->t1 = r->t_finish_ns;
    acc_mark_t1(a, r->t_finish_ns);
    a->ok[0] += !(miss & MISS_TTFT);
    a->ok[1] += !(miss & MISS_TPOT);
    a->ok[2] += !(miss & MISS_ITL);
    a->ok[3] += !(miss & MISS_E2E);
    a->ok[4] += !(miss & MISS_DEADLINE);
    a->ok[5] += !(miss & MISS_INCORRECT);
    a->good_all += miss == 0;
    statacc_add(&a->ttft, (double)metrics_ttft_ns(cfg, r) / 1e9);
    statacc_add(&a->e2e, (double)metrics_e2e_ns(cfg, r) / 1e9);
    double tpot = metrics_tpot_s(r);
    if (!isnan(tpot)) statacc_add(&a->tpot, tpot);
    if (r->t_first_sched_ns >= 0) statacc_add(&a->queue, (double)(r->t_first_sched_ns - r->t_arrive_ns) / 1e9);
    if (r->output_tokens > 1) statacc_add(&a->itl_max, (double)r->itl_max_ns / 1e9);
    int done_in = 1; /* the drain window holds every completion */
    if (cfg->has_window) {
        /* metrics_summarize's pass 2 over a fixed window */
        const int64_t w0 = cfg->window_t0_ns, w1 = cfg->window_t1_ns;
        done_in = r->t_finish_ns >= w0 && r->t_finish_ns <= w1;
        if (tt) {
            for (uint32_t k = 0; k < r->generated; k++) out->output_tokens += tt[k] >= w0 && tt[k] <= w1;
            if (r->generated > 0 && r->t_first_token_ns >= w0 && r->t_first_token_ns <= w1)
                out->prompt_tokens += r->prompt_tokens;
        } else if (done_in) {
            out->output_tokens += r->output_tokens;
            out->prompt_tokens += r->prompt_tokens;
        }
    } else {
        out->output_tokens += r->output_tokens;
        out->prompt_tokens += r->prompt_tokens;
    }
    if (!done_in) return;
    out->completed++;
    if (miss == 0) {
        out->good++;
        out->good_output_tokens += r->output_tokens;
    }
}

/* A verdict percentile from an accumulator, as verdict() takes it: exact
 * values sorted (VERDICT_NEVER for the unfinished), or the sketch, where a
 * rank that lands on "never" makes the percentile infinite. */
static double acc_percentile(const StatAcc *s, double pct)
{
    if (!s->sketched) {
        double *v = xmalloc(s->n * sizeof *v);
        for (uint64_t i = 0; i < s->n; i++) v[i] = s->buf[i] >= QSKETCH_NEVER_S ? VERDICT_NEVER : s->buf[i];
        /* one quantile: by selection, the sorted value to the bit */
        size_t base = 0;
        double q = s->n ? select_quantile(v, s->n, &base, pct / 100.0) : 0;
        free(v);
        return q >= VERDICT_NEVER / 10 ? INFINITY : q;
    }
    double index = pct / 100.0 * (double)(s->n - 1);
    uint64_t lhs = (uint64_t)index;
    double delta = index - (double)lhs;
    double lo = qsketch_rank(&s->sk, lhs), hi = lhs + 1 < s->n ? qsketch_rank(&s->sk, lhs + 1) : lo;
    if (lo >= (double)INT64_MAX / 2 || (delta > 0 && hi >= (double)INT64_MAX / 2)) return INFINITY;
    return (delta > 0 ? (1 - delta) * lo + delta * hi : lo) / 1e9;
}

void metrics_acc_finish(MetricsAcc *a, const EngineStats *st, const StatAcc *itl)
{
    const MetricsCfg *cfg = a->cfg;
    Summary *out = a->out;
    metrics_dist_acc(&a->ttft, &out->ttft_s);
    metrics_dist_acc(&a->tpot, &out->tpot_s);
    metrics_dist_acc(&a->e2e, &out->e2e_s);
    metrics_dist_acc(&a->queue, &out->queue_s);
    metrics_dist_acc(&a->itl_max, &out->itl_max_s);
    /* the engine's gaps are every request's: none when some are left out
     * (a caller with token times takes them in order: streamrun.c) */
    if (itl && !a->excluded && out->unfinished == 0 && out->cancelled == 0) metrics_dist_acc(itl, &out->itl_s);
    else metrics_dist(NULL, 0, &out->itl_s);
    /* the verdict, in verdict()'s order */
    for (uint32_t g = 0; g < a->n_groups; g++) {
        const Slo *slo = group_slo(cfg, g);
        double pct = slo->percentile > 0 ? slo->percentile : METRICS_DEFAULT_PERCENTILE;
        const double target[4] = {slo->ttft_s, slo->tpot_s, slo->itl_max_s, slo->e2e_s};
        for (int m = 0; m < 4; m++) {
            const StatAcc *s = &a->verdict[g * 4 + (uint32_t)m];
            if (!(target[m] > 0) || s->n == 0) continue;
            verdict_add(out, g, m, pct, target[m], acc_percentile(s, pct), (uint32_t)s->n);
        }
        if (slo->attainment > 0 && a->members[g])
            verdict_add(out, g, SLO_ATTAINMENT, 0, slo->attainment, (double)a->good[g] / a->members[g], a->members[g]);
    }
    out->verdict = out->n_checks ? 1 : -1;
    for (uint32_t c = 0; c < out->n_checks; c++)
        if (!out->checks[c].pass) out->verdict = 0;
    int64_t t0 = a->t0, t1 = a->t1;
    window_bounds(cfg, &t0, &t1, out);
    RunData rd = {.st = st,
                  .win = !a->windowed ? NULL : cfg->has_window ? &a->sums : &a->at_t1};
    summary_tail(cfg, &rd, t0, t1, a->good_all, a->ok, out);
}

void metrics_acc_free(MetricsAcc *a)
{
    statacc_free(&a->ttft);
    statacc_free(&a->tpot);
    statacc_free(&a->e2e);
    statacc_free(&a->queue);
    statacc_free(&a->itl_max);
    free(a->marks);
    free(a->defer);
    free(a->g_seq);
    for (uint32_t k = 0; k < a->n_crit; k++) free(a->crit[k].seq);
    for (uint32_t k = 0; a->verdict && k < a->n_groups * 4; k++) statacc_free(&a->verdict[k]);
    free(a->verdict);
    free(a->members);
    free(a->good);
    memset(a, 0, sizeof *a);
}
