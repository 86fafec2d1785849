/*
 * launch.c -- a scenario's engine launch commands (see launch.h).
 */
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "model.h"
#include "outfile.h"
#include "paths.h"

/* Appends s single-quoted for sh ('\'' inside). */
static void sh_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

/* The model's Hugging Face id: its description's "hf_id" (the -FP8 one for
 * FP8 weights), or "" when the scenario's model has none. */
static void hf_id(const cJSON *scen, const Scenario *s, char *out, size_t n)
{
    out[0] = '\0';
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(scen, "model");
    cJSON *root = NULL;
    const cJSON *ids = NULL;
    if (cJSON_IsObject(m)) {
        ids = cJSON_GetObjectItemCaseSensitive(m, "hf_id");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "base");
        if (!ids && cJSON_IsString(b)) m = b;
    }
    if (!ids && cJSON_IsString(m)) {
        char path[4096];
        Err e = {0};
        if (paths_resolve(path, sizeof path, "model", "", m->valuestring, &e))
            root = jsonio_parse_file(path, &e);
        ids = root ? cJSON_GetObjectItemCaseSensitive(root, "hf_id") : NULL;
    }
    int fp8 = s->model.weight_dtype == DTYPE_FP8 || s->model.weight_dtype == DTYPE_FP8_BLOCK;
    if (cJSON_IsString(ids)) snprintf(out, n, "%s", ids->valuestring);
    const cJSON *it;
    const cJSON *list = cJSON_IsArray(ids) ? ids : NULL;
    cJSON_ArrayForEach(it, list) {
        if (!cJSON_IsString(it)) continue;
        size_t len = strlen(it->valuestring);
        int is_fp8 = len >= 4 && !strcmp(it->valuestring + len - 4, "-FP8");
        if (!out[0] || (fp8 && is_fp8)) snprintf(out, n, "%s", it->valuestring);
    }
    cJSON_Delete(root);
}

/* The value of a property for pool k, or -1 when the scenario does not
 * have it (0: a switch that is on). */
typedef struct LaunchPool {
    int k, role;  /* role: 0 aggregated, 1 prefill, 2 decode */
} LaunchPool;

static double prop(const Scenario *s, const LaunchPool *lp, const char *name)
{
    const Pool *pl = &s->pools[lp->k];
    const SchedConfig *sc = &pl->sched;
    if (!strcmp(name, "tp")) return pl->tp;
    if (!strcmp(name, "max_running")) return sc->max_running ? (double)sc->max_running : -1;
    if (!strcmp(name, "token_budget")) {
        uint32_t t = sc->kind == SCHED_CONTINUOUS ? sc->max_num_tokens : sc->token_budget;
        return t ? (double)t : -1;
    }
    if (!strcmp(name, "mem_fraction")) return s->engine.kv_rule != ENGKV_HW ? s->engine.kv_fraction : -1;
    if (!strcmp(name, "kv_fp8")) return s->kv_dtype == DTYPE_FP8 ? 0 : -1;
    if (!strcmp(name, "prefix_on")) return s->prefix_cache ? 0 : -1;
    if (!strcmp(name, "prefix_off")) return s->prefix_cache ? -1 : 0;
    if (!strcmp(name, "mixed_on")) return sc->kind == SCHED_CHUNKED && !sc->prefill_apart ? 0 : -1;
    if (!strcmp(name, "mixed_off")) return sc->kind == SCHED_CHUNKED && sc->prefill_apart ? 0 : -1;
    if (!strcmp(name, "spec_ngram"))
        return s->spec.enabled && s->spec.method == SPEC_LOOKUP ? (double)s->spec.draft_len : -1;
    if (!strcmp(name, "disagg_prefill")) return lp->role == 1 ? 0 : -1;
    if (!strcmp(name, "disagg_decode")) return lp->role == 2 ? 0 : -1;
    return -2; /* unknown */
}

/* tmpl with "{}" replaced by v (a number), or by text when given. */
static void put_tmpl(FILE *f, const char *tmpl, double v, const char *text, int quote)
{
    const char *at = strstr(tmpl, "{}");
    if (!at) {
        fputs(tmpl, f);
        return;
    }
    fwrite(tmpl, 1, (size_t)(at - tmpl), f);
    if (text && quote) sh_quote(f, text);
    else if (text) fputs(text, f);
    else fprintf(f, "%.12g", v);
    fputs(at + 2, f);
}

/* Checks a "flags" / "yaml" list: [[PROPERTY, TEMPLATE], ...]. */
static int check_list(const cJSON *l, const char *where, const char *key, Err *e)
{
    if (!l) return 0;
    if (!cJSON_IsArray(l)) return err_set(e, "%s.launch.%s: expected a list of [property, template] pairs", where, key);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, l) {
        const cJSON *a = cJSON_GetArrayItem(it, 0), *b = cJSON_GetArrayItem(it, 1);
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsString(a) || !cJSON_IsString(b))
            return err_set(e, "%s.launch.%s[%d]: expected [property, template] (two strings)", where, key, i);
        i++;
    }
    return 0;
}

int launch_write(const char *dir, const char *name, const cJSON *scen, const Scenario *s, Err *e)
{
    char sh_path[4096], yaml_path[4096], yaml_name[600];
    snprintf(sh_path, sizeof sh_path, "%s/%s.sh", dir, name);
    snprintf(yaml_name, sizeof yaml_name, "%s.yaml", name);
    snprintf(yaml_path, sizeof yaml_path, "%s/%s", dir, yaml_name);
    OutFile o;
    FILE *f = outfile_open(&o, sh_path, e);
    if (!f) return -1;
    fprintf(f, "#!/bin/sh\n# %s: launch commands for the deployment `servesim run %s.json` simulates\n", name, name);
    const cJSON *la = s->engine.present ? s->engine.launch : NULL;
    if (!la) {
        fprintf(f, "# no launch command: %s\n",
                s->engine.present ? "its engine file has no \"launch\" table"
                                  : "the scenario names no serving engine (\"engine\": vllm, sglang or trtllm)");
        return outfile_commit(&o, e);
    }
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(la, "command");
    const cJSON *flags = cJSON_GetObjectItemCaseSensitive(la, "flags"), *yaml = cJSON_GetObjectItemCaseSensitive(la, "yaml");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(la, "source");
    if (!cJSON_IsString(cmd) || check_list(flags, s->engine.name, "flags", e) < 0 ||
        check_list(yaml, s->engine.name, "yaml", e) < 0) {
        outfile_abort(&o);
        return e->msg[0] ? -1 : err_set(e, "engine %s: launch.command: expected a string", s->engine.name);
    }
    char model[512];
    hf_id(scen, s, model, sizeof model);
    fprintf(f, "# engine: %s %s; flags from %s\n", s->engine.name, s->engine.version,
            cJSON_IsString(src) ? src->valuestring : "(the engine file names no source)");
    if (!model[0]) fprintf(f, "# the model's description has no \"hf_id\": set MODEL to its checkpoint\n");
    /* what the table cannot say */
    if (s->spec.enabled && s->spec.method != SPEC_LOOKUP)
        fprintf(f, "# speculation (%s, %u drafts) has no flag in the engine file: configure it by hand\n",
                s->spec.method == SPEC_DRAFT_MODEL ? "a draft model" : "parallel drafts", s->spec.draft_len);
    int has_spec = 0, has_fp8 = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, flags) {
        const char *pn = cJSON_GetArrayItem(it, 0)->valuestring;
        has_spec |= !strcmp(pn, "spec_ngram");
        has_fp8 |= !strcmp(pn, "kv_fp8");
    }
    cJSON_ArrayForEach(it, yaml) {
        const char *pn = cJSON_GetArrayItem(it, 0)->valuestring;
        has_spec |= !strcmp(pn, "spec_ngram");
        has_fp8 |= !strcmp(pn, "kv_fp8");
    }
    if (s->spec.enabled && s->spec.method == SPEC_LOOKUP && !has_spec)
        fprintf(f, "# lookup speculation (%u drafts) has no flag in the engine file: configure it by hand\n",
                s->spec.draft_len);
    if (s->kv_dtype != DTYPE_BF16 && s->kv_dtype != DTYPE_FP16 && !(s->kv_dtype == DTYPE_FP8 && has_fp8))
        fprintf(f, "# KV cache %s has no flag in the engine file\n", dtype_name(s->kv_dtype));
    int yaml_used = 0;
    for (uint32_t k = 0; k < s->n_pools; k++) {
        LaunchPool lp = {.k = (int)k, .role = s->disagg ? (k == 0 ? 1 : 2) : 0};
        fprintf(f, "\n# %s: %u replica%s of %d GPU%s each\n", lp.role == 1 ? "prefill pool" : lp.role == 2 ? "decode pool" : "every replica",
                s->pools[k].replicas, s->pools[k].replicas == 1 ? "" : "s", s->pools[k].tp, s->pools[k].tp == 1 ? "" : "s");
        /* the YAML lines this pool takes (one file: the pools differ only
         * in their flags, except a disaggregated role) */
        int pool_yaml = 0;
        cJSON_ArrayForEach(it, yaml) {
            if (prop(s, &lp, cJSON_GetArrayItem(it, 0)->valuestring) >= 0) pool_yaml = 1;
        }
        if (pool_yaml && s->disagg) snprintf(yaml_name, sizeof yaml_name, "%s.%s.yaml", name, lp.role == 1 ? "prefill" : "decode");
        /* the command, {model} the checkpoint */
        const char *cm = cmd->valuestring, *at = strstr(cm, "{model}");
        if (at) {
            fwrite(cm, 1, (size_t)(at - cm), f);
            if (model[0]) sh_quote(f, model);
            else fputs("\"$MODEL\"", f);
            fputs(at + 7, f);
        } else {
            fputs(cm, f);
        }
        cJSON_ArrayForEach(it, flags) {
            const char *pn = cJSON_GetArrayItem(it, 0)->valuestring, *tm = cJSON_GetArrayItem(it, 1)->valuestring;
            if (!strcmp(pn, "yaml")) {
                if (!pool_yaml) continue;
                fputs(" \\\n    ", f);
                put_tmpl(f, tm, 0, yaml_name, 1);
                continue;
            }
            double v = prop(s, &lp, pn);
            if (v == -2) {
                outfile_abort(&o);
                return err_set(e, "engine %s: launch.flags: unknown property \"%s\" (expected tp, max_running, "
                                  "token_budget, mem_fraction, kv_fp8, prefix_on, prefix_off, mixed_on, mixed_off, "
                                  "spec_ngram, disagg_prefill, disagg_decode or yaml)", s->engine.name, pn);
            }
            if (v < 0) continue;
            fputs(" \\\n    ", f);
            put_tmpl(f, tm, v, NULL, 0);
        }
        fputc('\n', f);
        if (pool_yaml) {
            char yp[4096];
            snprintf(yp, sizeof yp, "%s/%s", dir, yaml_name);
            OutFile yo;
            FILE *y = outfile_open(&yo, yp, e);
            if (!y) {
                outfile_abort(&o);
                return -1;
            }
            fprintf(y, "# %s: extra options for the %s (%s)\n", name,
                    lp.role == 1 ? "prefill pool" : lp.role == 2 ? "decode pool" : "engine",
                    cJSON_IsString(src) ? src->valuestring : "");
            cJSON_ArrayForEach(it, yaml) {
                const char *pn = cJSON_GetArrayItem(it, 0)->valuestring, *tm = cJSON_GetArrayItem(it, 1)->valuestring;
                double v = prop(s, &lp, pn);
                if (v == -2) {
                    outfile_abort(&yo);
                    outfile_abort(&o);
                    return err_set(e, "engine %s: launch.yaml: unknown property \"%s\"", s->engine.name, pn);
                }
                if (v < 0) continue;
                put_tmpl(y, tm, v, NULL, 0);
                fputc('\n', y);
            }
            if (outfile_commit(&yo, e) < 0) {
                outfile_abort(&o);
                return -1;
            }
            yaml_used = 1;
        }
    }
    (void)yaml_used;
    (void)yaml_path;
    return outfile_commit(&o, e);
}
