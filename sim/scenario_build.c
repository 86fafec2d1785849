/*
 * scenario_build.c -- what a loaded scenario builds (see scenario.h): the
 * engine of each replica of a pool (scheduler, KV pool or prefix cache,
 * cost model, speculation, hooks; a streamed one when the workload is a
 * stream), the metrics configuration and run data, and the scenario as
 * the report's JSON.  Loading and checking the file is scenario.c.
 */
#include "scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"
#include "plugin.h"
#include "prefix.h"
#include "rng.h"

/* A streamed request's adapter checked as a materialised workload's are
 * (scenario_check_adapter); its id, when the source gives none, is its
 * position.  A chain's requests arrive out of workload order, so the bad
 * one found first need not be the one the materialised load names: that
 * one (the first in workload order) is found by a pass over a second
 * copy of the workload (the run stops either way). */
static int stream_check_adapter(Scenario *s, const Request *r, Err *e)
{
    if (!r->adapter) return 0;
    char id[32];
    if (!r->id) snprintf(id, sizeof id, "%llu", (unsigned long long)s->stream_pulled);
    if (scenario_check_adapter(s, s->source, r->id ? r->id : id, r->adapter, e) == 0) return 0;
    if (!workload_stream_chains(s->wl_stream)) return -1;
    Workload names;
    workload_init(&names, s->wl.kind);
    Err pe = {0};
    WlStream *pre = scenario_stream_reopen(s, &names, &pe);
    Request q;
    int got = pre ? 1 : -1;
    uint64_t first = UINT64_MAX;
    while (got > 0)
        if ((got = workload_stream_next(pre, &q, &pe)) > 0 && q.adapter && q.seq < first) {
            Err qe = {0};
            if (!q.id) snprintf(id, sizeof id, "%llu", (unsigned long long)q.seq);
            if (scenario_check_adapter(s, s->source, q.id ? q.id : id, q.adapter, &qe) == 0) continue;
            first = q.seq;
            *e = qe;
        }
    workload_stream_free(pre);
    workload_free(&names);
    return -1;
}

/* The next streamed request (ctx: the Scenario), its adapter checked. */
static int stream_pull(void *ctx, Request *r, Err *e)
{
    Scenario *s = ctx;
    int got = workload_stream_next(s->wl_stream, r, e);
    if (got > 0 && stream_check_adapter(s, r, e) < 0) return -1;
    s->stream_pulled += got > 0;
    return got;
}

static int stream_follow(void *ctx, const Request *pred, int64_t *think_ns)
{
    return workload_stream_follow(((Scenario *)ctx)->wl_stream, pred, think_ns);
}

static int stream_pull_follow(void *ctx, uint32_t chain, Request *r, Err *e)
{
    Scenario *s = ctx;
    int got = workload_stream_pull_follow(s->wl_stream, chain, r, e);
    if (got > 0 && stream_check_adapter(s, r, e) < 0) return -1;
    s->stream_pulled += got > 0;
    return got;
}

/* Parallel sampling's branch k of parent (its adapter is the parent's,
 * checked when it was pulled). */
static int stream_branch(void *ctx, const Request *parent, uint32_t k, Request *r, Err *e)
{
    return workload_stream_branch(((Scenario *)ctx)->wl_stream, parent, k, r, e);
}

/* A stream with chains (sessions): follow-ups come from the source, and
 * parallel sampling's branches; the arrivals to whoever asked for them. */
static void stream_chains(Scenario *s, Slots *p)
{
    if (workload_stream_chains(s->wl_stream)) slots_set_follow(p, stream_follow, stream_pull_follow);
    if (workload_stream_branched(s->wl_stream)) slots_set_branch(p, stream_branch);
    slots_set_arrive(p, s->stream_arrive, s->stream_arrive_ctx);
}

double scenario_gpus(const Scenario *s)
{
    double g = 0;
    for (uint32_t i = 0; i < s->n_pools; i++) g += (double)s->pools[i].replicas * s->pools[i].tp;
    return g;
}

Engine *scenario_engine(Scenario *s, const MetricsSink *sink, Err *e)
{
    return scenario_pool_engine(s, &s->pools[0], sink, NULL, e);
}

Slots *scenario_stream_slots(Scenario *s)
{
    Slots *p = slots_new(stream_pull, s, s->stream_retire, s->stream_retire_ctx, s->keep_token_times);
    stream_chains(s, p);
    return p;
}

Engine *scenario_pool_engine(Scenario *s, const Pool *pool, const MetricsSink *sink, Slots *slots, Err *e)
{
    EngineConfig cfg = {0};
    if (sink) cfg.sink = *sink;
    int src;
    if (pool->sched.plugin) {
        char where[700], dir[512];
        snprintf(where, sizeof where, "%s: scheduler", s->source);
        workload_base_dir(s->source, dir, sizeof dir);
        src = plugin_for(pool->sched.plugin)->new_sched(pool->sched.plugin, where, dir, &cfg.sched, e);
    } else {
        src = sched_new(&pool->sched, &cfg.sched, e);
    }
    if (src < 0) return NULL;
    int kv_rc;
    if (s->prefix_cache) {
        PrefixConfig pc = {.kv = pool->kv, .evict = (PrefixEvict)s->prefix_evict,
                           .namespace_seed = prefix_namespace(s->model.name, "", "rope"), .n_requests = s->wl.n};
        kv_rc = 0;
        if (s->plugin_evict) {
            char where[700], dir[512];
            snprintf(where, sizeof where, "%s: kv.eviction", s->source);
            workload_base_dir(s->source, dir, sizeof dir);
            kv_rc = plugin_for(s->plugin_evict)->new_evict(s->plugin_evict, where, dir, pool->kv.block_tokens,
                                                             &pc.custom, e);
            pc.evict = PREFIX_EVICT_CUSTOM;
        }
        if (kv_rc == 0) {
            kv_rc = prefix_new(&pc, &cfg.kv, e);
            /* the cache owns the rule only once it exists */
            if (kv_rc < 0 && s->plugin_evict) pc.custom.destroy(pc.custom.ctx);
        }
    } else {
        kv_rc = kv_pool_new(&pool->kv, &cfg.kv, e);
    }
    if (kv_rc < 0) {
        cfg.sched.destroy(cfg.sched.ctx);
        return NULL;
    }
    int rc;
    if (s->cost_kind == COST_LINEAR) {
        rc = cost_linear_new(&s->linear, &cfg.cost, e);
    } else if (s->cost_kind == COST_TABLE) {
        TableCostCfg *t = xmalloc(sizeof *t);
        *t = s->table;
        t->model = s->model;
        t->kv_bytes_per_token = s->kv.bytes_per_token;
        rc = cost_table_new(t, &cfg.cost, e);
        free(t);
    } else {
        RooflineCfg rc_cfg = {.model = s->model, .hw = pool->hw, .tp = pool->tp, .compute_dtype = s->compute_dtype,
                              .kv_bytes_per_token = s->kv.bytes_per_token,
                              .act_bytes = dtype_bytes(DTYPE_BF16, 1), .weights_separate = s->weights_separate,
                              .ep = s->ep, .moe_tp = s->moe_tp, .attn_dp = s->attn_dp,
                              .group_tokens = &s->adp_step_tokens,
                              .moe_shared_overlap = !strcmp(s->engine.kernel_tables, "trtllm")};
        rc = cost_roofline_new(&rc_cfg, &cfg.cost, e);
    }
    cfg.profile_cost = cfg.cost; /* non-owned: its extrapolation counters */
    /* the engine's exposed large all-reduce: two a layer of each token's
     * hidden state (BF16 activations), the ring's 2 (tp - 1) / tp of it
     * over link_fraction of the link */
    double ar_s = 0;
    if (s->engine.ar_link_fraction > 0 && pool->tp > 1 && pool->hw.link_bw_bytes_per_s > 0) {
        double tp = pool->tp, bytes = 2.0 * s->model.layers * s->model.hidden * dtype_bytes(DTYPE_BF16, 1);
        ar_s = bytes * 2.0 * (tp - 1) / tp / (s->engine.ar_link_fraction * pool->hw.link_bw_bytes_per_s);
    }
    if (rc == 0 && (s->wrap.n_sizes || s->wrap.conversion_s_per_token > 0 || s->wrap.has_host || ar_s > 0)) {
        CostModel inner = cfg.cost;
        CostWrapCfg wc = s->wrap;
        /* per_layer: the engine's constants are per transformer layer */
        const double layers = s->engine.iter_per_layer ? s->model.layers : 1;
        wc.host_base_s = layers * engprof_iter_overhead_s(&s->engine, 0, pool->tp);
        wc.host_per_seq_s = layers * s->wrap.host_per_seq_s;
        wc.ar_above_tokens = s->engine.ar_above_tokens;
        wc.ar_s_per_token = ar_s;
        rc = costwrap_new(&wc, inner, &cfg.cost, e);
        if (rc < 0) inner.destroy(inner.ctx);
    }
    if (rc < 0) {
        cfg.sched.destroy(cfg.sched.ctx);
        cfg.kv.destroy(cfg.kv.ctx);
        return NULL;
    }
    if (s->spec.enabled) {
        SpecEngineCfg sc = {.dflt = s->spec, .seed = s->seed};
        if (s->n_spec_cls) {
            uint32_t n = s->wl.n_classes ? s->wl.n_classes : 1;
            free(s->spec_by_cls);
            s->spec_by_cls = xcalloc(n, sizeof *s->spec_by_cls);
            for (uint32_t k = 0; k < n; k++) {
                s->spec_by_cls[k] = s->spec;
                const char *nm = s->wl.n_classes ? s->wl.class_names[k] : "default";
                for (uint32_t j = 0; j < s->n_spec_cls; j++)
                    if (!strcmp(nm, s->spec_cls_name[j])) s->spec_by_cls[k] = s->spec_cls[j];
            }
            sc.by_cls = s->spec_by_cls;
            sc.n_cls = n;
        }
        rc = 0;
        if (s->has_draft_model) {
            RooflineCfg dc = {.model = s->draft_model, .hw = pool->hw, .tp = pool->tp,
                              .compute_dtype = s->compute_dtype,
                              .kv_bytes_per_token = model_kv_bytes_per_token(&s->draft_model, s->kv_dtype),
                              .act_bytes = dtype_bytes(DTYPE_BF16, 1)};
            /* the draft forwards' launches are part of the target iteration */
            dc.hw.iter_overhead_s = 0;
            rc = cost_roofline_new(&dc, &sc.draft, e);
            sc.has_draft = rc == 0;
        }
        if (rc == 0) rc = spec_policy_new(&sc, &cfg.spec, e);
        if (rc < 0) {
            if (sc.has_draft) sc.draft.destroy(sc.draft.ctx);
            cfg.sched.destroy(cfg.sched.ctx);
            cfg.kv.destroy(cfg.kv.ctx);
            cfg.cost.destroy(cfg.cost.ctx);
            return NULL;
        }
        cfg.has_spec = 1;
    }
    if (s->has_lora || s->has_offload) {
        int hr = 0;
        if (s->has_lora)
            hr = lora_hook_new(&s->lora, &s->model, &pool->hw, pool->tp, s->compute_dtype, &cfg.hooks[cfg.n_hooks++], e);
        if (hr == 0 && s->has_offload) hr = offload_hook_new(&s->model, pool->tp, &s->offload, &cfg.hooks[cfg.n_hooks++], e);
        if (hr < 0) {
            for (uint32_t k = 0; k + 1 < cfg.n_hooks; k++) cfg.hooks[k].destroy(cfg.hooks[k].ctx);
            cfg.sched.destroy(cfg.sched.ctx);
            cfg.kv.destroy(cfg.kv.ctx);
            cfg.cost.destroy(cfg.cost.ctx);
            if (cfg.has_spec && cfg.spec.destroy) cfg.spec.destroy(cfg.spec.ctx);
            return NULL;
        }
    }
    cfg.kv_xfer_ratio = s->kv_xfer_ratio;
    cfg.kv_xfer_dec_bytes_per_s = s->kv_xfer_dec_bytes_per_s;
    cfg.max_context = (uint32_t)s->model.max_context;
    cfg.block_tokens = pool->kv.block_tokens;
    cfg.kv_bytes_per_token = s->kv.bytes_per_token;
    cfg.preempt_swap = s->preempt_swap;
    cfg.swap_bw_bytes_per_s = s->swap_bw_bytes_per_s > 0 ? s->swap_bw_bytes_per_s : 64e9;
    cfg.queue_order = s->queue_order;
    cfg.keep_token_times = s->keep_token_times;
    /* a stream's run writes its iterations as they end (MetricsSink
     * on_record): records kept would grow with the run */
    cfg.keep_iterations = s->keep_iterations && !s->wl_stream;
    cfg.barrier = s->barrier_members ? &s->barrier : NULL;
    /* a closed-loop client sees the last token after_us late and its next
     * request reaches the scheduler before_us after it is sent */
    cfg.trigger_delay_ns = llround((s->engine.req_before_s + s->engine.req_after_s) * 1e9);
    /* the serving process's front end, one request or token at a time
     * (engine.h fe_serial) */
    cfg.fe_serial = s->engine.front_end;
    cfg.fe_serial_ns = llround(s->engine.fe_per_request_s * 1e9);
    cfg.fe_token_ns = s->engine.fe_per_token_s * 1e9;
    cfg.fe_prompt_token_ns = s->engine.fe_per_prompt_token_s * 1e9;
    /* overlap scheduling: a cancelled request's blocks outlive the
     * iteration already launched with it (engine.h cancel_lag) */
    cfg.cancel_lag = s->engine.present && s->engine.overlap;
    if (slots) return engine_new_shared(&cfg, slots, e);
    if (s->wl_stream) {
        Engine *eng = engine_new_stream(&cfg, stream_pull, s, s->stream_retire, s->stream_retire_ctx, e);
        if (eng) stream_chains(s, engine_stream_slots(eng));
        return eng;
    }
    return engine_new(s->wl.reqs, s->wl.n, &cfg, e);
}

void scenario_metrics_cfg(const Scenario *s, MetricsCfg *m, Slo *slo_table, uint32_t n_table)
{
    *m = s->metrics;
    m->slo = s->slo;
    m->price = s->price;
    m->price.gpus = scenario_gpus(s);
    m->idle_w = s->hw.idle_w;
    m->busy_w = s->hw.busy_w;
    m->mem_bw_per_gpu = s->hw.mem_bw_bytes_per_s;
    m->peak_flops_per_gpu = s->hw.peak_flops[s->compute_dtype];
    m->kv_block_tokens = s->kv.block_tokens;
    m->kv_unbounded = s->kv.unbounded;
    m->client_ns = llround((s->engine.req_before_s + s->engine.req_after_s) * 1e9);
    /* The workload's classes (class 0 = "default"), each with its SLOs. */
    static const char *const dflt_names[] = {"default"};
    const char *const *names = s->wl.n_classes ? (const char *const *)s->wl.class_names : dflt_names;
    uint32_t n = s->wl.n_classes ? s->wl.n_classes : 1;
    if (n > n_table) n = n_table;
    mcfg_resolve_classes(&s->slo_classes, &s->slo, names, n, slo_table);
    m->slo_by_cls = slo_table;
    m->cls_names = names;
    m->n_cls = n;
}

void scenario_rundata(const Scenario *s, const Engine *eng, RunData *rd)
{
    *rd = (RunData){.reqs = s->wl.reqs, .n = s->wl.n, .token_times = engine_token_times(eng),
                    .st = engine_stats(eng)};
    rd->iters = engine_iterations(eng, &rd->n_iters);
}

/* The issue-18 resources of the "scenario" block, present only when used. */
static void scenario_resources_json(const Scenario *s, cJSON *sc)
{
    if (s->has_lora) {
        cJSON *o = cJSON_AddObjectToObject(sc, "lora");
        char t[64] = "";
        size_t off = 0;
        for (int k = 0; k < LORA_TARGETS && off < sizeof t; k++)
            if (s->lora.targets & (1u << k))
                off += (size_t)snprintf(t + off, sizeof t - off, "%s%s", off ? "," : "", lora_target_names[k]);
        cJSON_AddNumberToObject(o, "adapters", s->lora.adapters);
        cJSON_AddNumberToObject(o, "rank", s->lora.rank);
        cJSON_AddStringToObject(o, "targets", t);
        cJSON_AddStringToObject(o, "dtype", dtype_name(s->lora.dtype));
        jsonio_add_num(o, "mib_per_adapter", lora_adapter_bytes(&s->model, &s->lora) / MIB);
        cJSON_AddNumberToObject(o, "gpu_slots", s->lora.gpu_slots);
        cJSON_AddNumberToObject(o, "max_per_batch", s->lora.max_per_batch);
        jsonio_add_num(o, "gpu_gib", s->lora_bytes / GIB);
        jsonio_add_num(o, "link_gb_per_s", s->lora.link_bytes_per_s / 1e9);
    }
    if (s->has_offload) {
        cJSON *o = cJSON_AddObjectToObject(sc, "offload");
        cJSON_AddNumberToObject(o, "every", s->offload.every);
        cJSON_AddNumberToObject(o, "layers", s->offload_plan.layers);
        cJSON_AddNumberToObject(o, "buffers", s->offload.buffers);
        jsonio_add_num(o, "freed_mib", s->offload_plan.freed_bytes / MIB);
        jsonio_add_num(o, "net_mib", s->offload_plan.net_bytes / MIB);
        jsonio_add_num(o, "link_gb_per_s", s->offload.link_bytes_per_s / 1e9);
        jsonio_add_num(o, "copy_ms_per_step", s->offload_plan.copy_s * 1e3);
    }
    if (s->weights_separate) cJSON_AddBoolToObject(sc, "weights_separate_memory", 1);
    if (s->kv_xfer_ratio > 0) {
        cJSON *o = cJSON_AddObjectToObject(sc, "kv_transfer");
        jsonio_add_num(o, "compression_ratio", s->kv_xfer_ratio);
        jsonio_add_num(o, "decompress_gb_per_s", s->kv_xfer_dec_bytes_per_s / 1e9);
    }
}

void scenario_to_json(const Scenario *s, cJSON *sc)
{
    cJSON_AddStringToObject(sc, "name", s->name);
    cJSON_AddStringToObject(sc, "source", s->source);
    cJSON_AddStringToObject(sc, "model", s->model.name);
    cJSON_AddStringToObject(sc, "hardware", s->hw.name);
    cJSON_AddNumberToObject(sc, "tp", s->tp);
    cJSON_AddNumberToObject(sc, "gpus", scenario_gpus(s));
    if (s->ep || s->moe_tp || s->attn_dp) {
        cJSON *x = cJSON_AddObjectToObject(sc, "parallel");
        cJSON_AddNumberToObject(x, "ep", s->ep);
        cJSON_AddNumberToObject(x, "moe_tp", s->moe_tp);
        cJSON_AddNumberToObject(x, "attention_dp", s->attn_dp);
    }
    if (s->disagg) {
        cJSON *d = cJSON_AddObjectToObject(sc, "disagg");
        const char *side[2] = {"prefill", "decode"};
        for (int k = 0; k < 2; k++) {
            cJSON *x = cJSON_AddObjectToObject(d, side[k]);
            cJSON_AddNumberToObject(x, "replicas", s->pools[k].replicas);
            cJSON_AddStringToObject(x, "hardware", s->pools[k].hw.name);
            cJSON_AddNumberToObject(x, "tp", s->pools[k].tp);
            cJSON_AddStringToObject(x, "scheduler", sched_kind_name(s->pools[k].sched.kind));
            if (s->pools[k].sched.kind == SCHED_CHUNKED && s->pools[k].sched.prefill_apart)
                cJSON_AddBoolToObject(x, "mixed", 0);
        }
        jsonio_add_num(d, "link_gb_per_s", s->link_bw_bytes_per_s / 1e9);
        cJSON_AddStringToObject(d, "first_token", s->first_token_on_decode ? "decode (after the KV transfer)"
                                                                           : "prefill (before the KV transfer)");
    } else if (s->pools[0].replicas > 1) {
        cJSON_AddNumberToObject(sc, "replicas", s->pools[0].replicas);
    }
    if (s->n_pools > 1 || s->pools[0].replicas > 1) cJSON_AddStringToObject(sc, "router", scenario_router_names[s->router]);
    cJSON_AddStringToObject(sc, "scheduler", s->sched.plugin ? plugin_for(s->sched.plugin)->kind : sched_kind_name(s->sched.kind));
    const cJSON *script = s->sched.plugin ? cJSON_GetObjectItemCaseSensitive(s->sched.plugin, "script") : NULL;
    if (cJSON_IsString(script)) cJSON_AddStringToObject(sc, "scheduler_script", script->valuestring);
    cJSON_AddNumberToObject(sc, "max_running", s->sched.max_running);
    if (s->sched.kind == SCHED_CHUNKED) cJSON_AddNumberToObject(sc, "token_budget", s->sched.token_budget);
    /* only when set: the default's echo stays what it was */
    if (s->sched.kind == SCHED_CHUNKED && s->sched.prefill_apart) cJSON_AddBoolToObject(sc, "mixed", 0);
    if (s->sched.max_num_tokens) cJSON_AddNumberToObject(sc, "max_num_tokens", s->sched.max_num_tokens);
    cJSON_AddStringToObject(sc, "cost_model", scenario_cost_kind_name(s->cost_kind));
    cJSON_AddStringToObject(sc, "kv_reserve", kv_reserve_name(s->kv.reserve));
    cJSON_AddStringToObject(sc, "kv_dtype", dtype_name(s->kv_dtype));
    jsonio_add_num(sc, "kv_capacity_gib", s->kv.capacity_bytes / GIB);
    cJSON_AddBoolToObject(sc, "kv_capacity_derived", s->kv_capacity_derived);
    cJSON_AddBoolToObject(sc, "kv_unbounded", s->kv.unbounded);
    cJSON_AddBoolToObject(sc, "prefix_cache", s->prefix_cache);
    if (s->prefix_cache) {
        const cJSON *evs = s->plugin_evict ? cJSON_GetObjectItemCaseSensitive(s->plugin_evict, "script") : NULL;
        cJSON_AddStringToObject(sc, "kv_eviction", s->plugin_evict ? plugin_for(s->plugin_evict)->kind
                                                   : s->prefix_evict ? "value" : "lru");
        if (cJSON_IsString(evs)) cJSON_AddStringToObject(sc, "kv_eviction_script", evs->valuestring);
    }
    scenario_resources_json(s, sc);
    cJSON_AddStringToObject(sc, "workload", s->wl.kind);
    cJSON_AddNumberToObject(sc, "seed", (double)s->seed);
}
