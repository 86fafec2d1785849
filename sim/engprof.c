/*
 * engprof.c -- serving-engine profiles (see engprof.h).
 */
#include "engprof.h"

#include <stdio.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"

void engprof_init(EngineProfile *p)
{
    memset(p, 0, sizeof *p);
    p->fp8_checkpoint_kv = -1;
    p->online_fp8 = -1;
    p->prefix_cache = -1;
    p->kv_rule = ENGKV_HW;
}

void engprof_free(EngineProfile *p)
{
    cJSON_Delete(p->scheduler);
    p->scheduler = NULL;
    cJSON_Delete(p->launch);
    p->launch = NULL;
}

static int parse_sizes(const cJSON *g, const char *where, EngineProfile *p, Err *e)
{
    if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) > ENGPROF_SIZES_MAX)
        return err_set(e, "%s: expected an array of at most %d ascending batch sizes", where, ENGPROF_SIZES_MAX);
    p->n_sizes = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, g) {
        if (!cJSON_IsNumber(x) || x->valuedouble < 1 || x->valuedouble > 1e6 ||
            x->valuedouble != (double)(uint32_t)x->valuedouble ||
            (p->n_sizes && x->valuedouble <= p->graph_sizes[p->n_sizes - 1]))
            return err_set(e, "%s[%u]: expected an integer batch size larger than the previous one", where,
                           p->n_sizes);
        p->graph_sizes[p->n_sizes++] = (uint32_t)x->valuedouble;
    }
    return 0;
}

static int parse_us(const cJSON *obj, const char *key, const char *where, double *out_s, Err *e)
{
    double us = *out_s * 1e6;
    int r = jsonio_num(obj, key, where, 0, 0, 1e7, &us, e);
    if (r > 0) *out_s = us * 1e-6;
    return r;
}

int engprof_from_json(const cJSON *obj, const char *where, EngineProfile *p, Err *e)
{
    static const char *const keys[] = {"name", "version", "source", "sources", "kernel_tables", "scheduler",
                                       "cuda_graph_sizes", "mixed_batch_graphs", "iter_overhead",
                                       "overlap_scheduler", "request_overhead", "front_end", "large_allreduce", "kv", "base",
                                       "launch", "online_fp8", NULL};
    char k[300];
    engprof_free(p);
    engprof_init(p);
    if (jsonio_expect_object(obj, where, e) < 0 || jsonio_check_keys(obj, where, keys, e) < 0) return -1;
    p->present = 1;
    /* how the engine is started (planner/launch.c reads it; checked there) */
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(obj, "launch");
    if (la) {
        if (!cJSON_IsObject(la))
            return err_set(e, "%s: expected an object (command, flags, source)", jsonio_path(k, sizeof k, where, "launch"));
        p->launch = cJSON_Duplicate(la, 1);
    }
    const char *s = NULL;
    if (jsonio_str(obj, "name", where, 0, &s, e) < 0) return -1;
    snprintf(p->name, sizeof p->name, "%s", s ? s : "custom");
    s = NULL;
    if (jsonio_str(obj, "version", where, 0, &s, e) < 0) return -1;
    if (s) snprintf(p->version, sizeof p->version, "%s", s);
    s = NULL;
    if (jsonio_str(obj, "kernel_tables", where, 0, &s, e) < 0) return -1;
    if (s) {
        size_t n = strlen(s);
        if (n == 0 || n >= sizeof p->kernel_tables || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != n)
            return err_set(e, "%s: got \"%s\", expected an engine name such as \"vllm\" (letters, digits, - _ .)",
                           jsonio_path(k, sizeof k, where, "kernel_tables"), s);
        memcpy(p->kernel_tables, s, n + 1);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "scheduler");
    if (v) {
        if (jsonio_expect_object(v, jsonio_path(k, sizeof k, where, "scheduler"), e) < 0) return -1;
        p->scheduler = cJSON_Duplicate(v, 1);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "cuda_graph_sizes")) &&
        parse_sizes(v, jsonio_path(k, sizeof k, where, "cuda_graph_sizes"), p, e) < 0)
        return -1;
    if (jsonio_bool(obj, "mixed_batch_graphs", where, 0, &p->mixed_batch_graphs, e) < 0) return -1;
    if (jsonio_bool(obj, "overlap_scheduler", where, 0, &p->overlap, e) < 0) return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "iter_overhead"))) {
        static const char *const ik[] = {"base_us", "per_seq_us", "per_gpu_us", "per_layer", NULL};
        jsonio_path(k, sizeof k, where, "iter_overhead");
        if (jsonio_expect_object(v, k, e) < 0 || jsonio_check_keys(v, k, ik, e) < 0) return -1;
        if (parse_us(v, "base_us", k, &p->iter_base_s, e) < 0 || parse_us(v, "per_seq_us", k, &p->iter_per_seq_s, e) < 0 ||
            parse_us(v, "per_gpu_us", k, &p->iter_per_gpu_s, e) < 0 ||
            jsonio_bool(v, "per_layer", k, 0, &p->iter_per_layer, e) < 0)
            return -1;
        p->has_iter_overhead = 1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "request_overhead"))) {
        static const char *const rk[] = {"before_us",           "after_us",          "jitter_us",
                                         "jitter_per_token_us", "end_spread_tokens", NULL};
        jsonio_path(k, sizeof k, where, "request_overhead");
        if (jsonio_expect_object(v, k, e) < 0 || jsonio_check_keys(v, k, rk, e) < 0) return -1;
        if (parse_us(v, "before_us", k, &p->req_before_s, e) < 0 || parse_us(v, "after_us", k, &p->req_after_s, e) < 0 ||
            parse_us(v, "jitter_us", k, &p->req_jitter_s, e) < 0 ||
            parse_us(v, "jitter_per_token_us", k, &p->req_jitter_per_token_s, e) < 0)
            return -1;
        int64_t sp = 0;
        if (jsonio_int(v, "end_spread_tokens", k, 0, 0, ENGPROF_END_SPREAD_MAX, &sp, e) < 0) return -1;
        p->req_end_spread = (uint32_t)sp;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "front_end")) && cJSON_IsFalse(v)) {
        /* none (over a base engine's) */
        p->front_end = 0;
        p->fe_per_request_s = p->fe_per_token_s = p->fe_per_prompt_token_s = 0;
    } else if (v) {
        static const char *const fk[] = {"per_request_us", "per_token_us", "per_prompt_token_us", NULL};
        jsonio_path(k, sizeof k, where, "front_end");
        if (!cJSON_IsObject(v))
            return err_set(e, "%s: expected an object {\"per_request_us\", \"per_token_us\", \"per_prompt_token_us\"} "
                              "or false", k);
        if (jsonio_check_keys(v, k, fk, e) < 0 ||
            parse_us(v, "per_request_us", k, &p->fe_per_request_s, e) < 0 ||
            parse_us(v, "per_token_us", k, &p->fe_per_token_s, e) < 0 ||
            parse_us(v, "per_prompt_token_us", k, &p->fe_per_prompt_token_s, e) < 0)
            return -1;
        p->front_end = 1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "large_allreduce"))) {
        static const char *const ak[] = {"above_tokens", "link_fraction", NULL};
        jsonio_path(k, sizeof k, where, "large_allreduce");
        if (jsonio_expect_object(v, k, e) < 0 || jsonio_check_keys(v, k, ak, e) < 0 ||
            jsonio_num(v, "above_tokens", k, 1, 0, 1e7, &p->ar_above_tokens, e) < 0 ||
            jsonio_num(v, "link_fraction", k, 1, 0, 1, &p->ar_link_fraction, e) < 0)
            return -1;
    }
    {
        static const char *const q8[] = {"fp8", "fp8_block", NULL};
        int d = -1;
        if (jsonio_enum(obj, "online_fp8", where, 0, q8, &d, e) < 0) return -1;
        p->online_fp8 = d < 0 ? -1 : d == 0 ? DTYPE_FP8 : DTYPE_FP8_BLOCK;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "kv"))) {
        static const char *const kk[] = {"fp8_checkpoint", "memory", "fraction", "prefix_cache", NULL};
        static const char *const dts[] = {"fp8", "bf16", NULL};
        static const char *const rules[] = {"hardware", "total_fraction", "free_fraction", NULL};
        jsonio_path(k, sizeof k, where, "kv");
        if (jsonio_expect_object(v, k, e) < 0 || jsonio_check_keys(v, k, kk, e) < 0) return -1;
        int d = -1, rule = 0;
        if (jsonio_enum(v, "fp8_checkpoint", k, 0, dts, &d, e) < 0) return -1;
        if (d >= 0) p->fp8_checkpoint_kv = d == 0 ? DTYPE_FP8 : DTYPE_BF16;
        if (jsonio_enum(v, "memory", k, 0, rules, &rule, e) < 0) return -1;
        p->kv_rule = (EngKvRule)rule;
        p->kv_fraction = 0.9;
        if (jsonio_num(v, "fraction", k, rule != ENGKV_HW, 0.05, 1, &p->kv_fraction, e) < 0) return -1;
        if (cJSON_GetObjectItemCaseSensitive(v, "prefix_cache") &&
            jsonio_bool(v, "prefix_cache", k, 1, &p->prefix_cache, e) < 0)
            return -1;
    }
    return 0;
}

int engprof_load(const char *name_or_path, EngineProfile *p, Err *e)
{
    char path[4096];
    if (!paths_resolve(path, sizeof path, "engine", "engines/", name_or_path, e)) return -1;
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int r = engprof_from_json(root, path, p, e);
    cJSON_Delete(root);
    return r;
}

double engprof_iter_overhead_s(const EngineProfile *p, uint32_t n_seqs, int tp)
{
    return p->iter_base_s + p->iter_per_seq_s * n_seqs + p->iter_per_gpu_s * (tp > 1 ? tp - 1 : 0);
}
