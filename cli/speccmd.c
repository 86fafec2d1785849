/*
 * speccmd.c -- speculative-decoding planning and the verifier on the
 * command line (see spec.h for the arithmetic).
 *
 * spec-plan prices a round at T_m = verify_ms + per_draft_ms x rows(m) +
 * draft_ms, with rows(m) = m, or group x ceil(m / group) when execution is
 * padded to groups (captured graph sizes), or from the roofline of a model
 * on a hardware at a batch size and context; it prints E[N], T_m and the
 * ms per output token for each draft length and the best one.
 */
#include "speccmd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cliarg.h"
#include "cost.h"
#include "jsonio.h"
#include "rng.h"
#include "spec.h"

static const char usage_plan[] =
    "usage: servesim spec-plan --accept A[,A2,...] [--draft-len M] [--max-draft-len N]\n"
    "                          (--verify-ms T [--per-draft-ms D] [--group G]\n"
    "                           | --model NAME --hardware NAME [--batch B] [--context L])\n"
    "                          [--draft-ms T] [--json]\n"
    "\n"
    "Expected tokens per round E[N] = 1 + a1 + a1 a2 + ... for each draft length,\n"
    "the round time T_m and ms per output token (T_m / E[N]); the draft length\n"
    "that minimises it.  --group G pads the drafts to multiples of G rows (graph\n"
    "sizes); --model/--hardware price verify rounds with the roofline instead.\n";

static const char usage_verify[] =
    "usage: servesim spec-verify --p P1,P2,... --q Q1,Q2,... [--draws N] [--seed S]\n"
    "                            [--rule exact|resample-p] [--json]\n"
    "\n"
    "Runs the rejection-sampling verifier N times (default 1,000,000): propose x ~ q,\n"
    "accept with min(1, p(x)/q(x)), otherwise draw from normalize(max(p - q, 0))\n"
    "(exact) or from p (resample-p, the biased rule).  Prints the output distribution,\n"
    "the acceptance of each proposed symbol and the residual distribution.\n";

static int parse_list(const char *s, double *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v)) return -1; /* nan and inf are no probabilities or rates */
        out[n++] = v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return *s ? -1 : n;
}


int speccmd_plan(int argc, char **argv)
{
    SpecCfg c = {.enabled = 1};
    double verify_ms = -1, per_draft_ms = 0, draft_ms = 0, group = 0, m_fixed = 0, m_max = 16, batch = 1, ctx = 2048;
    const char *model = NULL, *hw = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_plan, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        } else if (!v) {
            return cli_bad_usage("option needs a value or is unknown", a, usage_plan);
        } else if (!strcmp(a, "--accept")) {
            int n = parse_list(v, c.rates, SPEC_M_MAX);
            rc = n < 1 ? -1 : 0;
            c.n_rates = n > 0 ? (uint32_t)n : 0;
            for (uint32_t k = 0; k < c.n_rates; k++)
                if (!(c.rates[k] >= 0 && c.rates[k] <= 1)) rc = -1;
        } else if (!strcmp(a, "--draft-len")) {
            rc = cli_num_arg(v, 1, SPEC_M_MAX, &m_fixed);
        } else if (!strcmp(a, "--max-draft-len")) {
            rc = cli_num_arg(v, 1, SPEC_M_MAX, &m_max);
        } else if (!strcmp(a, "--verify-ms")) {
            rc = cli_num_arg(v, 0, 1e7, &verify_ms);
        } else if (!strcmp(a, "--per-draft-ms")) {
            rc = cli_num_arg(v, 0, 1e7, &per_draft_ms);
        } else if (!strcmp(a, "--draft-ms")) {
            rc = cli_num_arg(v, 0, 1e7, &draft_ms);
        } else if (!strcmp(a, "--group")) {
            rc = cli_num_arg(v, 1, 1024, &group);
        } else if (!strcmp(a, "--batch")) {
            rc = cli_num_arg(v, 1, 1e5, &batch);
        } else if (!strcmp(a, "--context")) {
            rc = cli_num_arg(v, 0, 1e7, &ctx);
        } else if (!strcmp(a, "--model")) {
            model = v;
        } else if (!strcmp(a, "--hardware")) {
            hw = v;
        } else {
            return cli_bad_usage("unknown option", a, usage_plan);
        }
        if (rc < 0) return cli_bad_usage("bad value", v, usage_plan);
        i++;
    }
    if (c.n_rates == 0) return cli_bad_usage("--accept is required", NULL, usage_plan);
    if ((verify_ms < 0) == !(model && hw))
        return cli_bad_usage("give --verify-ms, or --model and --hardware", NULL, usage_plan);
    CostModel cm = {0};
    if (model) {
        Err e = {0};
        ModelDesc md;
        HwDesc hd;
        if (model_load(model, &md, &e) < 0 || hw_load(hw, &hd, &e) < 0) {
            fprintf(stderr, "servesim: %s\n", e.msg);
            return 1;
        }
        RooflineCfg rc = {.model = md, .hw = hd, .tp = 1, .compute_dtype = DTYPE_BF16,
                          .kv_bytes_per_token = model_kv_bytes_per_token(&md, DTYPE_BF16), .act_bytes = 2};
        if (cost_roofline_new(&rc, &cm, &e) < 0) {
            fprintf(stderr, "servesim: %s\n", e.msg);
            return 1;
        }
    }
    uint32_t lo = m_fixed > 0 ? (uint32_t)m_fixed : 1, hi = m_fixed > 0 ? (uint32_t)m_fixed : (uint32_t)m_max;
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "draft_lengths");
    double best = INFINITY;
    uint32_t best_m = lo;
    BatchItem *items = xmalloc((size_t)batch * sizeof *items);
    /* the plain decode the speculation competes with */
    double plain_ms = verify_ms;
    if (model) {
        for (uint32_t b = 0; b < (uint32_t)batch; b++)
            items[b] = (BatchItem){.c = 1, .h = (uint32_t)ctx, .kind = ITEM_DECODE, .samples = 1};
        CostBreakdown cb;
        cm.iter_time(cm.ctx, items, (uint32_t)batch, &cb);
        plain_ms = cb.t_s * 1e3;
    }
    if (!json)
        printf("  %4s %10s %12s %12s\n", "m", "E[N]", "round (ms)", "ms/token");
    for (uint32_t m = lo; m <= hi; m++) {
        double rows_m = group > 0 ? group * ceil(m / group) : m, t;
        if (model) {
            for (uint32_t b = 0; b < (uint32_t)batch; b++)
                items[b] = (BatchItem){.c = (uint32_t)rows_m + 1, .h = (uint32_t)ctx, .kind = ITEM_VERIFY,
                                       .samples = 1};
            CostBreakdown cb;
            cm.iter_time(cm.ctx, items, (uint32_t)batch, &cb);
            t = cb.t_s * 1e3 + draft_ms;
        } else {
            t = verify_ms + per_draft_ms * rows_m + draft_ms;
        }
        double en = spec_expected_tokens(&c, m), per = t / en;
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "draft_len", m);
        jsonio_add_num(r, "expected_tokens_per_round", en);
        jsonio_add_num(r, "round_ms", t);
        jsonio_add_num(r, "ms_per_token", per);
        cJSON_AddItemToArray(rows, r);
        if (!json) printf("  %4u %10.4f %12.3f %12.4f\n", m, en, t, per);
        if (per < best) {
            best = per;
            best_m = m;
        }
    }
    free(items);
    if (cm.destroy) cm.destroy(cm.ctx);
    cJSON_AddNumberToObject(root, "best_draft_len", best_m);
    jsonio_add_num(root, "best_ms_per_token", best);
    jsonio_add_num(root, "plain_decode_ms_per_token", plain_ms);
    if (m_fixed > 0) {
        cJSON *r = cJSON_GetArrayItem(rows, 0);
        cJSON_AddNumberToObject(root, "expected_tokens_per_round",
                                cJSON_GetObjectItemCaseSensitive(r, "expected_tokens_per_round")->valuedouble);
        cJSON_AddNumberToObject(root, "ms_per_token", cJSON_GetObjectItemCaseSensitive(r, "ms_per_token")->valuedouble);
    }
    if (json) {
        char *txt = cJSON_Print(root);
        puts(txt);
        cJSON_free(txt);
    } else {
        printf("  best draft length %u: %.4f ms per token (plain decode %.4f)\n", best_m, best, plain_ms);
    }
    cJSON_Delete(root);
    return 0;
}

int speccmd_verify(int argc, char **argv)
{
    double p[256], q[256], draws = 1e6, seed = 1;
    int np = 0, nq = 0, json = 0, exact = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_verify, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        } else if (!v) {
            return cli_bad_usage("option needs a value or is unknown", a, usage_verify);
        } else if (!strcmp(a, "--p")) {
            rc = (np = parse_list(v, p, 256)) < 1 ? -1 : 0;
        } else if (!strcmp(a, "--q")) {
            rc = (nq = parse_list(v, q, 256)) < 1 ? -1 : 0;
        } else if (!strcmp(a, "--draws")) {
            rc = cli_num_arg(v, 1, 1e10, &draws);
        } else if (!strcmp(a, "--seed")) {
            rc = cli_num_arg(v, 0, 1e18, &seed);
        } else if (!strcmp(a, "--rule")) {
            if (!strcmp(v, "exact")) exact = 1;
            else if (!strcmp(v, "resample-p")) exact = 0;
            else rc = -1;
        } else {
            return cli_bad_usage("unknown option", a, usage_verify);
        }
        if (rc < 0) return cli_bad_usage("bad value", v, usage_verify);
        i++;
    }
    if (np == 0 || nq == 0) return cli_bad_usage("--p and --q are required", NULL, usage_verify);
    if (np != nq) return cli_bad_usage("--p and --q need the same number of symbols", NULL, usage_verify);
    double sp = 0, sq = 0;
    for (int k = 0; k < np; k++) {
        if (p[k] < 0 || q[k] < 0) return cli_bad_usage("probabilities must be >= 0", NULL, usage_verify);
        sp += p[k];
        sq += q[k];
    }
    if (fabs(sp - 1) > 1e-6 || fabs(sq - 1) > 1e-6)
        return cli_bad_usage("p and q must each sum to 1", NULL, usage_verify);
    gsl_rng *r = rng_stream((uint64_t)seed, 50);
    double *count = xcalloc((size_t)np, sizeof *count), *prop = xcalloc((size_t)np, sizeof *prop);
    double *acc = xcalloc((size_t)np, sizeof *acc), res[256];
    uint64_t n = (uint64_t)draws;
    for (uint64_t i = 0; i < n; i++) {
        int ok;
        size_t prop_x;
        size_t x = exact ? spec_verify_exact(p, q, (size_t)np, r, &ok, &prop_x)
                         : spec_verify_resample_p(p, q, (size_t)np, r, &ok, &prop_x);
        count[x]++;
        prop[prop_x]++;
        if (ok) acc[prop_x]++;
    }
    spec_residual(p, q, (size_t)np, res);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "rule", exact ? "exact" : "resample-p");
    cJSON_AddNumberToObject(root, "draws", (double)n);
    cJSON *d = cJSON_AddArrayToObject(root, "distribution"), *ap = cJSON_AddArrayToObject(root, "acceptance");
    cJSON *at = cJSON_AddArrayToObject(root, "acceptance_theory"), *rs = cJSON_AddArrayToObject(root, "residual");
    for (int k = 0; k < np; k++) {
        cJSON_AddItemToArray(d, cJSON_CreateNumber(count[k] / (double)n));
        cJSON_AddItemToArray(ap, cJSON_CreateNumber(prop[k] > 0 ? acc[k] / prop[k] : 0));
        cJSON_AddItemToArray(at, cJSON_CreateNumber(q[k] > 0 ? fmin(1, p[k] / q[k]) : 1));
        cJSON_AddItemToArray(rs, cJSON_CreateNumber(res[k]));
    }
    if (json) {
        char *txt = cJSON_Print(root);
        puts(txt);
        cJSON_free(txt);
    } else {
        printf("spec-verify (%s rule, %llu draws)\n  %6s %8s %8s %12s %12s %10s\n", exact ? "exact" : "resample-p",
               (unsigned long long)n, "symbol", "p", "q", "output", "acceptance", "residual");
        for (int k = 0; k < np; k++)
            printf("  %6d %8.4f %8.4f %12.6f %12.6f %10.4f\n", k, p[k], q[k], count[k] / (double)n,
                   prop[k] > 0 ? acc[k] / prop[k] : 0, res[k]);
    }
    cJSON_Delete(root);
    free(count);
    free(prop);
    free(acc);
    gsl_rng_free(r);
    return 0;
}
