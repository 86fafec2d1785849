/*
 * repro_decode.c -- the decoding calculators of `servesim reproduce`
 * (repro_calc_int.h): speculation's E[N] and draft plans (spec.h), the
 * verifiers and greedy acceptance, the FlashAttention merge of partial
 * softmaxes, and the Amdahl split of an agent task (tasks.h).
 */
#include <math.h>
#include <string.h>

#include "jsonio.h"
#include "repro_calc_int.h"
#include "spec.h"
#include "tasks.h"

/* Speculative-decoding plans (003 section 8.5, exercise 8-7): E[N], ms
 * per output token, the draft time at which speculation stops paying, and
 * the setup time a draft index needs to earn back. */
int calc_spec_plan(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "plans", NULL};
    if (jsonio_check_keys(in, w, keys, e) < 0) return -1;
    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(in, "plans"), *pl;
    char p[512];
    jsonio_path(p, sizeof p, w, "plans");
    if (!cJSON_IsObject(plans)) return err_set(e, "%s: expected an object of named plans", p);
    cJSON_ArrayForEach(pl, plans)
    {
        char q[600];
        jsonio_path(q, sizeof q, p, pl->string);
        static const char *const pk[] = {"accept", "draft_len", "verify_ms", "per_draft_ms", "group", "draft_ms",
                                         "draft_forwards", "tokens_per_round", "setup_s", "tokens", "plain_ms", NULL};
        double a = 0, verify = 0, per = 0, draft = 0, tpr = 0, setup = 0, plain = 0;
        int64_t m = 1, group = 1, fw = 1, tokens = 0;
        if (jsonio_expect_object(pl, q, e) < 0 || jsonio_check_keys(pl, q, pk, e) < 0 ||
            jsonio_num(pl, "accept", q, 0, 0, 1, &a, e) < 0 || jsonio_int(pl, "draft_len", q, 1, 1, SPEC_M_MAX, &m, e) < 0 ||
            jsonio_num(pl, "verify_ms", q, 1, 0, 1e6, &verify, e) < 0 ||
            jsonio_num(pl, "per_draft_ms", q, 0, 0, 1e6, &per, e) < 0 ||
            jsonio_int(pl, "group", q, 0, 1, SPEC_M_MAX, &group, e) < 0 ||
            jsonio_num(pl, "draft_ms", q, 0, 0, 1e6, &draft, e) < 0 ||
            jsonio_int(pl, "draft_forwards", q, 0, 1, SPEC_M_MAX, &fw, e) < 0 ||
            jsonio_num(pl, "tokens_per_round", q, 0, 1, SPEC_M_MAX + 1, &tpr, e) < 0 ||
            jsonio_num(pl, "setup_s", q, 0, 0, 1e6, &setup, e) < 0 ||
            jsonio_int(pl, "tokens", q, 0, 0, 10000000, &tokens, e) < 0 ||
            jsonio_num(pl, "plain_ms", q, 0, 0, 1e6, &plain, e) < 0)
            return -1;
        SpecCfg c = {.enabled = 1, .draft_len = (uint32_t)m};
        if (tpr > 0) {
            /* an assumed mean: every round accepts tpr - 1 drafts */
            c.n_counts = (uint32_t)tpr;
            if (tpr != floor(tpr) || tpr > (double)m + 1)
                return err_set(e, "%s.tokens_per_round: got %g, expected an integer in [1, draft_len + 1]", q, tpr);
            c.counts[(int)tpr - 1] = 1;
        } else {
            c.n_rates = 1;
            c.rates[0] = a;
        }
        /* verify rows padded to multiples of group (captured shapes) */
        double padded = (double)(group * ((m + group - 1) / group));
        double round = verify + per * padded + draft * (double)fw;
        double en = spec_expected_tokens(&c, (uint32_t)m);
        double mpt = spec_time_per_token(&c, (uint32_t)m, round);
        cJSON *o = cJSON_AddObjectToObject(out, pl->string);
        cJSON_AddNumberToObject(o, "expected_tokens", en);
        cJSON_AddNumberToObject(o, "round_ms", round);
        cJSON_AddNumberToObject(o, "draft_total_ms", draft * (double)fw);
        cJSON_AddNumberToObject(o, "ms_per_token", mpt);
        /* (verify + x) / E[N] = verify: the draft time where it breaks even */
        cJSON_AddNumberToObject(o, "breakeven_draft_ms", verify * (en - 1));
        if (plain > 0) {
            cJSON_AddNumberToObject(o, "saved_ms_per_token", plain - mpt);
            if (setup > 0) cJSON_AddNumberToObject(o, "setup_breakeven_tokens", setup * 1e3 / (plain - mpt));
            if (tokens > 0) cJSON_AddNumberToObject(o, "plain_s", (double)tokens * plain / 1e3);
        }
        if (tokens > 0) cJSON_AddNumberToObject(o, "total_s", setup + (double)tokens * mpt / 1e3);
    }
    return 0;
}

/* The rejection-sampling verifier (000 example 31.3 and its exercise; 003
 * figures 8-30/8-31): acceptance probabilities, the residual, and the
 * output distribution over `draws` seeded draws. */
int calc_spec_verify(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "p", "q", "draws", "seed", NULL};
    double p[CALC_LIST_MAX], q[CALC_LIST_MAX];
    int np, nq;
    int64_t draws = 200000, seed = 1;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "p", w, 1, p, CALC_LIST_MAX, &np, e) < 0 ||
        get_nums(in, "q", w, 1, q, CALC_LIST_MAX, &nq, e) < 0 ||
        jsonio_int(in, "draws", w, 0, 1, 10000000, &draws, e) < 0 ||
        jsonio_int(in, "seed", w, 0, 0, INT64_MAX, &seed, e) < 0)
        return -1;
    if (np != nq) return err_set(e, "%s: p has %d entries and q %d; expected the same vocabulary", w, np, nq);
    double sp = 0, sq = 0;
    for (int i = 0; i < np; i++) {
        if (!(p[i] >= 0) || !(q[i] >= 0)) return err_set(e, "%s: p[%d] = %g, q[%d] = %g: expected probabilities", w, i, p[i], i, q[i]);
        sp += p[i];
        sq += q[i];
    }
    if (fabs(sp - 1) > 1e-9 || fabs(sq - 1) > 1e-9)
        return err_set(e, "%s: p sums to %g and q to %g; expected 1", w, sp, sq);
    double res[CALC_LIST_MAX];
    double mass = spec_residual(p, q, (size_t)np, res);
    cJSON *acc = cJSON_AddArrayToObject(out, "accept"), *rs = cJSON_AddArrayToObject(out, "residual");
    cJSON *am = cJSON_AddArrayToObject(out, "accepted_mass");
    for (int i = 0; i < np; i++) {
        double a = q[i] > 0 ? fmin(1, p[i] / q[i]) : 0;
        cJSON_AddItemToArray(acc, cJSON_CreateNumber(a));
        cJSON_AddItemToArray(rs, cJSON_CreateNumber(res[i]));
        cJSON_AddItemToArray(am, cJSON_CreateNumber(q[i] * a));
    }
    cJSON_AddNumberToObject(out, "rejected_mass", mass);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    double cnt[2][CALC_LIST_MAX] = {{0}};
    for (int rule = 0; rule < 2; rule++) {
        gsl_rng_set(r, (unsigned long)seed);
        for (int64_t d = 0; d < draws; d++) {
            int accepted;
            size_t x = rule == 0 ? spec_verify_exact(p, q, (size_t)np, r, &accepted, NULL)
                                 : spec_verify_resample_p(p, q, (size_t)np, r, &accepted, NULL);
            cnt[rule][x] += 1;
        }
    }
    gsl_rng_free(r);
    cJSON *fin = cJSON_AddArrayToObject(out, "final"), *bad = cJSON_AddArrayToObject(out, "final_resample_p");
    for (int i = 0; i < np; i++) {
        cJSON_AddItemToArray(fin, cJSON_CreateNumber(cnt[0][i] / (double)draws));
        cJSON_AddItemToArray(bad, cJSON_CreateNumber(cnt[1][i] / (double)draws));
    }
    cJSON_AddNumberToObject(out, "draws", (double)draws);
    return 0;
}

/* Greedy verification (003 figure 8-29): the first mismatch ends the round. */
int calc_greedy(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "draft", "target", NULL};
    double d[CALC_LIST_MAX], t[CALC_LIST_MAX];
    int nd, nt;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "draft", w, 1, d, SPEC_M_MAX, &nd, e) < 0 ||
        get_nums(in, "target", w, 1, t, SPEC_M_MAX, &nt, e) < 0)
        return -1;
    if (nd != nt) return err_set(e, "%s: draft has %d tokens and target %d; expected one target token per draft", w, nd, nt);
    uint32_t du[SPEC_M_MAX], tu[SPEC_M_MAX];
    for (int i = 0; i < nd; i++) {
        if (!(d[i] >= 0 && t[i] >= 0 && d[i] < 4e9 && t[i] < 4e9))
            return err_set(e, "%s: token ids must be non-negative integers (draft[%d] = %g, target[%d] = %g)", w, i, d[i], i, t[i]);
        du[i] = (uint32_t)d[i];
        tu[i] = (uint32_t)t[i];
    }
    uint32_t acc = spec_verify_greedy(du, tu, (uint32_t)nd);
    cJSON_AddNumberToObject(out, "accepted", acc);
    /* the target's own token at the first mismatch (or after the last
     * draft) is emitted too */
    cJSON_AddNumberToObject(out, "emitted", acc + 1);
    return 0;
}

/* The blockwise softmax merge of FlashAttention (000 example 31.2): each
 * block keeps (numerator, denominator); merging adds them.  The wrong way
 * averages the blocks' normalised outputs. */
int calc_merge(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "weights", "values", "blocks", NULL};
    double wt[CALC_LIST_MAX], v[CALC_LIST_MAX], bl[CALC_LIST_MAX];
    int nw, nv, nb;
    if (jsonio_check_keys(in, w, keys, e) < 0 || get_nums(in, "weights", w, 1, wt, CALC_LIST_MAX, &nw, e) < 0 ||
        get_nums(in, "values", w, 1, v, CALC_LIST_MAX, &nv, e) < 0 ||
        get_nums(in, "blocks", w, 1, bl, CALC_LIST_MAX, &nb, e) < 0)
        return -1;
    if (nw != nv) return err_set(e, "%s: %d weights and %d values; expected one weight per value", w, nw, nv);
    double num = 0, den = 0, sum_norm = 0;
    int pos = 0;
    cJSON *blocks = cJSON_AddArrayToObject(out, "blocks");
    for (int b = 0; b < nb; b++) {
        if (!(bl[b] >= 1) || pos + (int)bl[b] > nw)
            return err_set(e, "%s.blocks[%d]: got %g; the block sizes must split the %d weights", w, b, bl[b], nw);
        double bn = 0, bd = 0;
        for (int i = 0; i < (int)bl[b]; i++, pos++) {
            if (!(wt[pos] > 0)) return err_set(e, "%s.weights[%d]: got %g, expected a positive weight", w, pos, wt[pos]);
            bn += wt[pos] * v[pos];
            bd += wt[pos];
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "numerator", bn);
        cJSON_AddNumberToObject(o, "denominator", bd);
        cJSON_AddItemToArray(blocks, o);
        num += bn;
        den += bd;
        sum_norm += bn / bd;
    }
    if (pos != nw) return err_set(e, "%s.blocks: cover %d of the %d weights", w, pos, nw);
    double full_n = 0, full_d = 0;
    for (int i = 0; i < nw; i++) {
        full_n += wt[i] * v[i];
        full_d += wt[i];
    }
    cJSON_AddNumberToObject(out, "full", full_n / full_d);
    cJSON_AddNumberToObject(out, "full_numerator", full_n);
    cJSON_AddNumberToObject(out, "full_denominator", full_d);
    cJSON_AddNumberToObject(out, "merged", num / den);
    cJSON_AddNumberToObject(out, "naive_average", sum_norm / nb);
    return 0;
}

/* Amdahl's law over a task's parts (003 section 8.6, exercise 8-8; issue
 * 18's tasks_amdahl): each part alone halved, and one part `speedup` times
 * faster with `added_s` of new work. */
int calc_amdahl(const cJSON *in, const char *w, cJSON *out, Err *e)
{
    static const char *const keys[] = {"source", "kind", "parts", "speedup_part", "speedup", "added_s", NULL};
    const char *sp = NULL;
    double s = 1, add = 0, total = 0;
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(in, "parts"), *p;
    if (jsonio_check_keys(in, w, keys, e) < 0 || jsonio_str(in, "speedup_part", w, 0, &sp, e) < 0 ||
        jsonio_num(in, "speedup", w, 0, 1e-6, 1e9, &s, e) < 0 || jsonio_num(in, "added_s", w, 0, 0, 1e12, &add, e) < 0)
        return -1;
    if (!cJSON_IsObject(parts) || !parts->child) return err_set(e, "%s.parts: expected {name: seconds, ...}", w);
    cJSON_ArrayForEach(p, parts)
    {
        if (!cJSON_IsNumber(p) || !(p->valuedouble >= 0) || p->valuedouble > 1e12)
            return err_set(e, "%s.parts.%s: expected seconds >= 0", w, p->string);
        total += p->valuedouble;
    }
    if (!(total > 0)) return err_set(e, "%s.parts: the parts sum to 0 s", w);
    cJSON_AddNumberToObject(out, "total_s", total);
    const cJSON *found = NULL;
    cJSON_ArrayForEach(p, parts)
    {
        cJSON *o = cJSON_AddObjectToObject(out, p->string);
        double f = p->valuedouble / total;
        cJSON_AddNumberToObject(o, "fraction", f);
        cJSON_AddNumberToObject(o, "halved_total_s", total / tasks_amdahl(f, 2));
        if (sp && !strcmp(sp, p->string)) found = p;
    }
    if (sp) {
        if (!found) return err_set(e, "%s.speedup_part: got \"%s\", expected the name of one of \"parts\"", w, sp);
        double nt = total / tasks_amdahl(found->valuedouble / total, s) + add;
        cJSON_AddNumberToObject(out, "new_total_s", nt);
        cJSON_AddNumberToObject(out, "net_speedup", total / nt);
    }
    return 0;
}
