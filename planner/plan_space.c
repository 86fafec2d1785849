/*
 * plan_space.c -- a plan's "space" of axes, every combination a candidate
 * (see plan_int.h).
 */
#include "plan_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"

/* ------------------------------------------------------------- the space */

/* "space": {AXIS: [values], ...} -- every combination a candidate (issue
 * 37): hardware, tp, engine, max_num_batched_tokens, max_num_seqs (into the
 * engine's scheduler: token_budget, or max_num_tokens for a continuous
 * one; without an engine, into the base's scheduler), kv_dtype,
 * speculation and disagg (null: off), parallel (MoE: ep / attention_dp),
 * and a split as axes of its own: pd_ratio ("agg" or "P:D" prefill:decode
 * workers a replica), prefill_tp and decode_tp (each pool's TP; taken only
 * by split combinations, so "agg" appears once). */
static const char *const space_axes[] = {"hardware", "tp", "engine", "max_num_batched_tokens", "max_num_seqs",
                                          "kv_dtype", "speculation", "disagg", "parallel", "pd_ratio", "prefill_tp",
                                          "decode_tp", NULL};
#define PLAN_SPACE_MAX 512

/* The engine file's scheduler kind is continuous (TensorRT-LLM): its
 * token limit is max_num_tokens. */
static int engine_continuous(const char *engine)
{
    char path[4096];
    Err e = {0};
    if (!paths_resolve(path, sizeof path, "engine", "engines/", engine, &e)) return 0;
    cJSON *root = jsonio_parse_file(path, &e);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "scheduler"), "kind");
    int cont = cJSON_IsString(k) && !strcmp(k->valuestring, "continuous");
    cJSON_Delete(root);
    return cont;
}

static void name_part(char *nm, size_t n, const char *axis, const cJSON *v)
{
    size_t len = strlen(nm);
    char part[96] = "";
    if (cJSON_IsNull(v)) {
        if (!strcmp(axis, "speculation")) snprintf(part, sizeof part, "nospec");
        else if (!strcmp(axis, "disagg")) snprintf(part, sizeof part, "agg");
        else snprintf(part, sizeof part, "no%s", axis);
    } else if (cJSON_IsString(v)) {
        snprintf(part, sizeof part, "%s", v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        const char *pre = !strcmp(axis, "tp") ? "tp" : !strcmp(axis, "max_num_batched_tokens") ? "b"
                        : !strcmp(axis, "max_num_seqs") ? "s" : "";
        snprintf(part, sizeof part, "%s%.0f", pre, v->valuedouble);
    } else if (!strcmp(axis, "speculation")) {
        snprintf(part, sizeof part, "spec");
    } else if (!strcmp(axis, "disagg")) {
        const cJSON *pf = cJSON_GetObjectItemCaseSensitive(v, "prefill"), *dc = cJSON_GetObjectItemCaseSensitive(v, "decode");
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(pf, "replicas"), *dr = cJSON_GetObjectItemCaseSensitive(dc, "replicas");
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(pf, "tp"), *dt = cJSON_GetObjectItemCaseSensitive(dc, "tp");
        snprintf(part, sizeof part, "pd%.0f:%.0f", cJSON_IsNumber(pr) ? pr->valuedouble : 1,
                 cJSON_IsNumber(dr) ? dr->valuedouble : 1);
        if (cJSON_IsNumber(pt) || cJSON_IsNumber(dt)) {
            size_t pl = strlen(part);
            snprintf(part + pl, sizeof part - pl, "-tp%.0f:%.0f", cJSON_IsNumber(pt) ? pt->valuedouble : 0,
                     cJSON_IsNumber(dt) ? dt->valuedouble : 0);
        }
    } else {
        snprintf(part, sizeof part, "%s", axis);
    }
    snprintf(nm + len, n - len, "%s%s", len ? "-" : "", part);
}

int plan_space_parse(Plan *p, const cJSON *space, Err *e)
{
    char where[600];
    jsonio_path(where, sizeof where, p->name, "space");
    if (jsonio_expect_object(space, where, e) < 0 || jsonio_check_keys(space, where, space_axes, e) < 0) return -1;
    const cJSON *ax[16];
    int na = 0, dims[16];
    uint64_t total = 1;
    for (int i = 0; space_axes[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(space, space_axes[i]);
        if (!v) continue;
        char aw[700];
        jsonio_path(aw, sizeof aw, where, space_axes[i]);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1)
            return err_set(e, "%s: expected a list of one or more values", aw);
        ax[na] = v;
        dims[na] = cJSON_GetArraySize(v);
        total *= (uint64_t)dims[na];
        na++;
        if (total > PLAN_SPACE_MAX)
            return err_set(e, "%s: more than %d combinations; fewer values per axis", where, PLAN_SPACE_MAX);
    }
    if (!na) return err_set(e, "%s: no axis (expected some of hardware, tp, engine, max_num_batched_tokens, "
                               "max_num_seqs, kv_dtype, speculation, disagg, parallel, pd_ratio, prefill_tp, "
                               "decode_tp)", where);
    int has_pd = cJSON_GetObjectItemCaseSensitive(space, "pd_ratio") != NULL;
    if (has_pd && cJSON_GetObjectItemCaseSensitive(space, "disagg"))
        return err_set(e, "%s: \"pd_ratio\" and \"disagg\" both give the split; give one", where);
    if (!has_pd && (cJSON_GetObjectItemCaseSensitive(space, "prefill_tp") || cJSON_GetObjectItemCaseSensitive(space, "decode_tp")))
        return err_set(e, "%s: prefill_tp and decode_tp are the split's pools: give a \"pd_ratio\" axis too", where);
    int idx[16] = {0};
    uint32_t made = 0;
    for (uint64_t n = 0; n < total; n++) {
        cJSON *c = cJSON_CreateObject();
        char nm[200] = "";
        const char *engine = NULL;
        cJSON *sched = NULL;
        /* the split's axes: the ratio first decides whether the pools' TPs apply */
        int pd_p = 0, pd_d = 0, ptp = 0, dtp = 0, dup = 0;
        for (int a = 0; a < na; a++) {
            const char *axis = ax[a]->string;
            const cJSON *v = cJSON_GetArrayItem(ax[a], idx[a]);
            char aw[700];
            snprintf(aw, sizeof aw, "%s.%s[%d]", where, axis, idx[a]);
            if (!strcmp(axis, "pd_ratio")) {
                unsigned pp = 0, dd = 0;
                char tail = 0;
                if (cJSON_IsString(v) && !strcmp(v->valuestring, "agg")) continue;
                if (!cJSON_IsString(v) || sscanf(v->valuestring, "%u:%u%c", &pp, &dd, &tail) != 2 || !pp || !dd ||
                    pp > 64 || dd > 64) {
                    cJSON_Delete(c);
                    return err_set(e, "%s: expected \"agg\" or \"P:D\" (prefill and decode workers, 1 to 64)", aw);
                }
                pd_p = (int)pp;
                pd_d = (int)dd;
            } else if (!strcmp(axis, "prefill_tp") || !strcmp(axis, "decode_tp")) {
                if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 64 || v->valuedouble != floor(v->valuedouble)) {
                    cJSON_Delete(c);
                    return err_set(e, "%s: expected a whole number 1 to 64", aw);
                }
                if (axis[0] == 'p') ptp = (int)v->valuedouble;
                else dtp = (int)v->valuedouble;
                dup |= idx[a] > 0; /* for an aggregated combination, a repeat */
            }
        }
        if (has_pd && !pd_p && dup) {
            cJSON_Delete(c);
            goto next;
        }
        for (int a = 0; a < na; a++) {
            const char *axis = ax[a]->string;
            const cJSON *v = cJSON_GetArrayItem(ax[a], idx[a]);
            int split_axis = !strcmp(axis, "pd_ratio") || !strcmp(axis, "prefill_tp") || !strcmp(axis, "decode_tp");
            if (split_axis) {
                char part[64] = "";
                if (!strcmp(axis, "pd_ratio")) snprintf(part, sizeof part, pd_p ? "pd%d:%d" : "agg", pd_p, pd_d);
                else if (pd_p && dims[a] > 1) snprintf(part, sizeof part, "%s%d", axis[0] == 'p' ? "ptp" : "dtp",
                                                       axis[0] == 'p' ? ptp : dtp);
                if (part[0]) {
                    size_t l = strlen(nm);
                    snprintf(nm + l, sizeof nm - l, "%s%s", l ? "-" : "", part);
                }
                continue;
            }
            if (dims[a] > 1 || !strcmp(axis, "hardware") || !strcmp(axis, "engine")) name_part(nm, sizeof nm, axis, v);
            char aw[700];
            snprintf(aw, sizeof aw, "%s.%s[%d]", where, axis, idx[a]);
            if (!strcmp(axis, "hardware") || !strcmp(axis, "engine") || !strcmp(axis, "kv_dtype")) {
                if (!cJSON_IsString(v)) {
                    cJSON_Delete(c);
                    cJSON_Delete(sched);
                    return err_set(e, "%s: expected a name", aw);
                }
                if (!strcmp(axis, "engine")) engine = v->valuestring;
                else if (!strcmp(axis, "hardware")) plan_set_item(c, "hardware", cJSON_Duplicate(v, 1));
                else {
                    const cJSON *bk = p->base ? cJSON_GetObjectItemCaseSensitive(p->base, "kv") : NULL;
                    cJSON *kv = cJSON_IsObject(bk) ? cJSON_Duplicate(bk, 1) : cJSON_CreateObject();
                    plan_set_item(kv, "dtype", cJSON_Duplicate(v, 1));
                    plan_set_item(c, "kv", kv);
                }
            } else if (!strcmp(axis, "tp") || !strcmp(axis, "max_num_batched_tokens") || !strcmp(axis, "max_num_seqs")) {
                if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble != floor(v->valuedouble)) {
                    cJSON_Delete(c);
                    cJSON_Delete(sched);
                    return err_set(e, "%s: expected a whole number >= 1", aw);
                }
                if (!strcmp(axis, "tp")) {
                    plan_set_item(c, "tp", cJSON_Duplicate(v, 1));
                } else {
                    if (!sched) sched = cJSON_CreateObject();
                    plan_set_item(sched, !strcmp(axis, "max_num_seqs") ? "max_running" : "token_budget",
                             cJSON_Duplicate(v, 1));
                }
            } else if (!cJSON_IsNull(v)) {
                if (!cJSON_IsObject(v)) {
                    cJSON_Delete(c);
                    cJSON_Delete(sched);
                    return err_set(e, "%s: expected an object or null (off)", aw);
                }
                plan_set_item(c, axis, cJSON_Duplicate(v, 1));
            }
        }
        if (sched) {
            if (engine) {
                /* the engine's own scheduler with these limits */
                cJSON *tb = cJSON_DetachItemFromObjectCaseSensitive(sched, "token_budget");
                if (tb) plan_set_item(sched, engine_continuous(engine) ? "max_num_tokens" : "token_budget", tb);
                cJSON *eo = cJSON_CreateObject();
                cJSON_AddStringToObject(eo, "base", engine);
                cJSON_AddItemToObject(eo, "scheduler", sched);
                plan_set_item(c, "engine", eo);
            } else {
                const cJSON *bs = p->base ? cJSON_GetObjectItemCaseSensitive(p->base, "scheduler") : NULL;
                cJSON *full = cJSON_IsObject(bs) ? cJSON_Duplicate(bs, 1) : NULL;
                if (!full) {
                    cJSON_Delete(c);
                    cJSON_Delete(sched);
                    return err_set(e, "%s: max_num_batched_tokens / max_num_seqs need an engine axis or a "
                                      "\"scheduler\" in \"base\"", where);
                }
                const cJSON *it;
                cJSON_ArrayForEach(it, sched) plan_set_item(full, it->string, cJSON_Duplicate(it, 1));
                cJSON_Delete(sched);
                plan_set_item(c, "scheduler", full);
            }
        } else if (engine) {
            plan_set_item(c, "engine", cJSON_CreateString(engine));
        }
        if (pd_p) {
            cJSON *d = cJSON_CreateObject(), *pf = cJSON_AddObjectToObject(d, "prefill"),
                  *dc = cJSON_AddObjectToObject(d, "decode");
            cJSON_AddNumberToObject(pf, "replicas", pd_p);
            cJSON_AddNumberToObject(dc, "replicas", pd_d);
            if (ptp) cJSON_AddNumberToObject(pf, "tp", ptp);
            if (dtp) cJSON_AddNumberToObject(dc, "tp", dtp);
            plan_set_item(c, "disagg", d);
        }
        if (!nm[0]) snprintf(nm, sizeof nm, "c%llu", (unsigned long long)n + 1);
        nm[63] = '\0';
        cJSON_AddStringToObject(c, "name", nm);
        cJSON_AddItemToArray(p->space_cands, c);
        made++;
    next:
        /* the next combination (the last axis fastest) */
        for (int a = na - 1; a >= 0; a--) {
            if (++idx[a] < dims[a]) break;
            idx[a] = 0;
        }
    }
    p->n_space = made;
    return 0;
}

