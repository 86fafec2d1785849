/*
 * lora.c -- adapter sizes, the adapter cache and the grouped low-rank GEMM
 * cost (see lora.h).
 *
 * The hook's state is sized once from the adapter count and the workload
 * size: per adapter its last use (0 = not resident), a generation stamp and
 * a row count for the batch being priced (LORA_ADAPTERS_MAX bounds them).
 * A request's lookup is its first prefill chunk (no preemption yet, the
 * chunk starting at its prefix-cache hit), so no per-request state is kept.
 * Distinct adapters are counted by stamping, so no
 * iteration allocates or sorts.
 */
#include "lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "offload.h"

const char *const lora_target_names[LORA_TARGETS] = {"q", "k", "v", "o", "gate", "up", "down"};

int lora_targets_parse(const char *list, const char *where, unsigned *out, Err *e)
{
    *out = 0;
    const char *s = list;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        int k = 0;
        while (k < LORA_TARGETS && !(strlen(lora_target_names[k]) == n && !strncmp(s, lora_target_names[k], n))) k++;
        if (k == LORA_TARGETS)
            return err_set(e, "%s: unknown projection \"%.*s\"; expected q, k, v, o, gate, up or down", where,
                           (int)(n > 40 ? 40 : n), s);
        *out |= 1u << k;
        s += n + (end ? 1 : 0);
    }
    if (!*out) return err_set(e, "%s: no projection given; expected e.g. \"q,v\"", where);
    return 0;
}

void lora_target_shape(const ModelDesc *m, unsigned bit, double *d_in, double *d_out)
{
    double h = m->hidden, q = (double)m->q_heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    double f = m->experts > 0 ? m->expert_ffn : m->ffn;
    *d_in = *d_out = 0;
    switch (bit) {
    case LORA_Q: *d_in = h; *d_out = q; break;
    case LORA_K:
    case LORA_V: *d_in = h; *d_out = kv; break;
    case LORA_O: *d_in = q; *d_out = h; break;
    case LORA_GATE:
    case LORA_UP: *d_in = h; *d_out = f; break;
    case LORA_DOWN: *d_in = f; *d_out = h; break;
    default: break;
    }
}

double lora_adapter_params(const ModelDesc *m, uint32_t rank, unsigned targets)
{
    double per_layer = 0;
    for (int k = 0; k < LORA_TARGETS; k++) {
        if (!(targets & (1u << k))) continue;
        double din, dout;
        lora_target_shape(m, 1u << k, &din, &dout);
        per_layer += (double)rank * (din + dout);
    }
    return per_layer * m->layers;
}

double lora_adapter_bytes(const ModelDesc *m, const LoraCfg *c)
{
    return dtype_bytes(c->dtype, lora_adapter_params(m, c->rank, c->targets));
}

int lora_parse(const cJSON *v, const char *where, const ModelDesc *m, double dflt_link, LoraCfg *c, Err *e)
{
    static const char *const keys[] = {"rank", "targets", "dtype", "adapters", "gpu_slots", "max_per_batch",
                                       "link", "link_gb_per_s", "cap", NULL};
    char p[300];
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    memset(c, 0, sizeof *c);
    int64_t rank = 16, n = 0, slots = 0, cap = 0;
    if (jsonio_int(v, "rank", where, 0, 1, 65536, &rank, e) < 0) return -1;
    if (jsonio_int(v, "adapters", where, 1, 1, LORA_ADAPTERS_MAX, &n, e) < 0) return -1;
    if (jsonio_int(v, "gpu_slots", where, 0, 1, 1000000, &slots, e) < 0) return -1;
    if (jsonio_int(v, "max_per_batch", where, 0, 1, 1000000, &cap, e) < 0) return -1;
    c->rank = (uint32_t)rank;
    c->adapters = (uint32_t)n;
    c->gpu_slots = (uint32_t)(slots ? slots : MIN(n, 8));
    c->max_per_batch = (uint32_t)(cap ? cap : c->gpu_slots);
    if (c->max_per_batch > c->gpu_slots)
        return err_set(e, "%s: got %u, expected at most gpu_slots (%u): every adapter of a batch must be resident",
                       jsonio_path(p, sizeof p, where, "max_per_batch"), c->max_per_batch, c->gpu_slots);
    static const char *const caps[] = {"skip", "block", NULL};
    if (jsonio_enum(v, "cap", where, 0, caps, &c->block, e) < 0) return -1;
    c->targets = LORA_Q | LORA_V;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "targets");
    if (t) {
        jsonio_path(p, sizeof p, where, "targets");
        if (jsonio_expect_array(t, p, e) < 0) return -1;
        c->targets = 0;
        const cJSON *it;
        int i = 0;
        cJSON_ArrayForEach(it, t) {
            char ip[320];
            unsigned bit;
            jsonio_index(ip, sizeof ip, p, i++);
            if (!cJSON_IsString(it)) return err_set(e, "%s: expected a projection name (q, k, v, o, gate, up, down)", ip);
            if (lora_targets_parse(it->valuestring, ip, &bit, e) < 0) return -1;
            c->targets |= bit;
        }
        if (!c->targets) return err_set(e, "%s: empty; expected projections such as [\"q\", \"v\"]", p);
    }
    if (m->experts > 0 && (c->targets & (LORA_GATE | LORA_UP | LORA_DOWN)))
        return err_set(e, "%s.targets: MLP adapters on a mixture-of-experts model (%s) are not modelled; use "
                          "attention projections (q, k, v, o)", where, m->name);
    c->dtype = DTYPE_BF16;
    const char *dt = NULL;
    if (jsonio_str(v, "dtype", where, 0, &dt, e) < 0) return -1;
    if (dt) {
        int d = dtype_parse(dt);
        if (d < 0 || d == DTYPE_Q8_0 || d == DTYPE_Q4_0 || d == DTYPE_FP8_BLOCK || d == DTYPE_NVFP4)
            return err_set(e, "%s: got \"%s\", expected bf16, fp16, fp8 or fp32", jsonio_path(p, sizeof p, where, "dtype"),
                           dt);
        c->dtype = (Dtype)d;
    }
    return offload_link_json(v, where, dflt_link, &c->link_bytes_per_s, c->link_name, sizeof c->link_name, e);
}

static double roof(double flops, double peak, double bytes, double bw)
{
    return MAX(flops / peak, bytes / bw);
}

double lora_segment_s(const ModelDesc *m, const LoraCfg *c, const HwDesc *hw, int tp, Dtype compute,
                      double n, double *flops, double *bytes)
{
    double peak = hw->peak_flops[compute] > 0 ? hw->peak_flops[compute] : hw->peak_flops[DTYPE_BF16];
    double e_c = effcurve_at(&hw->gemm_compute_eff, n), e_m = hw->mem_eff > 0 ? hw->mem_eff : 1;
    double wb = dtype_bytes(c->dtype, 1), ab = 2.0; /* BF16 activations */
    double t = 0, f = 0, b = 0, r = c->rank, g = tp > 0 ? tp : 1;
    for (int k = 0; k < LORA_TARGETS; k++) {
        if (!(c->targets & (1u << k))) continue;
        double din, dout;
        lora_target_shape(m, 1u << k, &din, &dout);
        /* shrink: x (n x d_in) A (d_in x r); expand: (n x r) B (r x d_out);
         * the tp group splits the wide side */
        double fs = 2.0 * n * din * r / g, bs = (din * r * wb + n * din * ab) / g + n * r * ab;
        double fe = 2.0 * n * r * dout / g, be = (r * dout * wb + n * dout * ab) / g + n * r * ab;
        t += roof(fs, peak * e_c, bs, hw->mem_bw_bytes_per_s * e_m) + roof(fe, peak * e_c, be, hw->mem_bw_bytes_per_s * e_m);
        f += fs + fe;
        b += bs + be;
    }
    if (flops) *flops = f * m->layers * g;
    if (bytes) *bytes = b * m->layers * g;
    return t * m->layers;
}

/* ------------------------------------------------------------- the hook */

typedef struct LoraHook {
    LoraCfg c;
    ModelDesc m;
    HwDesc hw;
    int tp;
    Dtype compute;
    double adapter_bytes;  /* per GPU of the group */
    uint64_t clock;        /* iterations priced (LRU time) */
    uint64_t *last_use;    /* per adapter id: last iteration used; 0 = not resident */
    uint32_t resident;
    uint64_t *stamp;       /* per adapter id: generation of the batch or running set that saw it */
    uint64_t gen;
    double *rows;          /* per adapter id: rows in the batch being priced */
    uint32_t *ids;         /* distinct adapters of that batch */
    uint64_t deferred;     /* admissions refused since the last priced iteration */
} LoraHook;

/* Marks the running requests' adapters with a new stamp; their count. */
static uint32_t stamp_running(LoraHook *h, Engine *eng)
{
    uint32_t distinct = 0, n = eng_running_count(eng);
    h->gen++;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = eng_req(eng, eng_running_at(eng, i))->adapter;
        if (a == 0 || a > h->c.adapters || h->stamp[a] == h->gen) continue;
        h->stamp[a] = h->gen;
        distinct++;
    }
    return distinct;
}

/* "skip": the waiting requests that fit the cap, in order and each counted
 * as admitted, then the others, in order. */
static int lora_order(void *ctx, Engine *eng, uint32_t *out)
{
    LoraHook *h = ctx;
    uint32_t distinct = stamp_running(h, eng), n = eng_waiting_count(eng), front = 0, back = n, moved = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = eng_waiting_at(eng, i);
        uint32_t a = eng_req(eng, idx)->adapter;
        int fits = a == 0 || a > h->c.adapters || h->stamp[a] == h->gen;
        if (!fits && distinct < h->c.max_per_batch) {
            h->stamp[a] = h->gen;
            distinct++;
            fits = 1;
        }
        if (fits) {
            moved |= front != i;
            out[front++] = idx;
        } else {
            out[--back] = idx;
        }
    }
    if (!moved) return 0;
    /* the refused ones were written backwards from the end */
    for (uint32_t i = front, j = n - 1; i < j; i++, j--) {
        uint32_t x = out[i];
        out[i] = out[j];
        out[j] = x;
    }
    return 1;
}

static int lora_admit_ok(void *ctx, Engine *eng, const Request *r)
{
    LoraHook *h = ctx;
    if (r->adapter == 0 || r->adapter > h->c.adapters) return 1;
    uint32_t distinct = stamp_running(h, eng);
    if (h->stamp[r->adapter] == h->gen || distinct < h->c.max_per_batch) return 1;
    h->deferred++;
    return 0;
}

/* The least recently used resident adapter not in the current batch
 * (stamp == gen), or 0. */
static uint32_t lru_victim(LoraHook *h)
{
    uint32_t best = 0;
    for (uint32_t a = 1; a <= h->c.adapters; a++)
        if (h->last_use[a] && h->stamp[a] != h->gen && (!best || h->last_use[a] < h->last_use[best])) best = a;
    return best;
}

static void lora_adjust(void *ctx, const BatchPlan *plan, const Request *reqs, CostBreakdown *cb, HookStats *st)
{
    LoraHook *h = ctx;
    st->has_lora = 1;
    st->adapter_deferred += h->deferred;
    h->deferred = 0;
    h->clock++;
    h->gen++;
    uint32_t nd = 0;
    for (uint32_t i = 0; i < plan->n; i++) {
        const BatchItem *it = &plan->items[i];
        const Request *r = &reqs[it->req];
        uint32_t a = r->adapter;
        if (a == 0 || a > h->c.adapters) continue;
        if (it->kind == ITEM_PREFILL && r->preemptions == 0 && r->generated == 0 && it->h == r->prefix_hit_tokens) {
            /* a request's lookup, at the first chunk of its first admission:
             * was its adapter on the GPU? */
            st->adapter_lookups++;
            st->adapter_hits += h->last_use[a] != 0;
        }
        if (h->stamp[a] != h->gen) {
            h->stamp[a] = h->gen;
            h->rows[a] = 0;
            h->ids[nd++] = a;
        }
        h->rows[a] += it->c;
    }
    double load_s = 0, gemm_s = 0, fl = 0, by = 0;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t a = h->ids[k];
        if (!h->last_use[a]) {
            /* missing: make room (never evicting this batch's adapters), then copy it in */
            if (h->resident >= h->c.gpu_slots) {
                uint32_t v = lru_victim(h);
                if (v) {
                    h->last_use[v] = 0;
                    h->resident--;
                }
            }
            h->resident++;
            st->adapter_loads++;
            load_s += h->adapter_bytes / h->c.link_bytes_per_s;
            by += h->adapter_bytes * h->tp;
        }
        h->last_use[a] = h->clock;
        double f, b;
        gemm_s += lora_segment_s(&h->m, &h->c, &h->hw, h->tp, h->compute, h->rows[a], &f, &b);
        fl += f;
        by += b;
    }
    if (nd == 0) return;
    st->adapter_load_s += load_s;
    st->adapter_gemm_s += gemm_s;
    cb->gemm_s += gemm_s;
    cb->comm_s += load_s;
    cb->t_s += gemm_s + load_s;
    cb->flops += fl;
    cb->bytes += by;
}

static void lora_destroy(void *ctx)
{
    LoraHook *h = ctx;
    free(h->last_use);
    free(h->stamp);
    free(h->rows);
    free(h->ids);
    free(h);
}

int lora_hook_new(const LoraCfg *c, const ModelDesc *m, const HwDesc *hw, int tp, Dtype compute, BatchHook *out,
                  Err *e)
{
    if (c->adapters < 1 || c->gpu_slots < 1 || c->max_per_batch < 1 || c->max_per_batch > c->gpu_slots ||
        !(c->link_bytes_per_s > 0) || c->rank < 1 || !c->targets)
        return err_set(e, "lora: invalid configuration (adapters %u, gpu_slots %u, max_per_batch %u)", c->adapters,
                       c->gpu_slots, c->max_per_batch);
    LoraHook *h = xcalloc(1, sizeof *h);
    h->c = *c;
    h->m = *m;
    h->hw = *hw;
    h->tp = tp > 0 ? tp : 1;
    h->compute = compute;
    h->adapter_bytes = lora_adapter_bytes(m, c) / h->tp;
    size_t na = (size_t)c->adapters + 1;
    h->last_use = xcalloc(na, sizeof *h->last_use);
    h->stamp = xcalloc(na, sizeof *h->stamp);
    h->rows = xcalloc(na, sizeof *h->rows);
    h->ids = xcalloc(na, sizeof *h->ids);
    *out = (BatchHook){.name = "lora", .ctx = h, .admit_ok = lora_admit_ok, .adjust = lora_adjust,
                       .order = c->block ? NULL : lora_order, .destroy = lora_destroy};
    return 0;
}
