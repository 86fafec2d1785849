/*
 * plan_print.c -- the text a plan prints (plan.h plan_print).
 */
#include "plan.h"
#include "plan_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* ------------------------------------------------------------ the table */

/* A candidate's verdict as the table shows it: a verdict without a band
 * judged the predicted values only, and says so. */
static const char *verdict_label(const cJSON *c, char *buf, size_t n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "verdict");
    int no_band = !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "error_band"));
    int feasible = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "feasible"));
    snprintf(buf, n, "%s%s", cJSON_IsString(v) ? v->valuestring : "?", no_band && feasible ? " (no error band)" : "");
    return buf;
}

void plan_print(FILE *f, const cJSON *out)
{
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(out, "traffic");
    fprintf(f, "servesim plan: %s\n", cJSON_GetObjectItemCaseSensitive(out, "name")->valuestring);
    fprintf(f, "  traffic: %s: %.0f requests at %.3f req/s",
            cJSON_GetObjectItemCaseSensitive(tr, "source")->valuestring, plan_num(tr, "requests"), plan_num(tr, "rate_per_s"));
    if (plan_num(tr, "margin") != 1) fprintf(f, " (--margin %g: sized for %g x the plan's traffic)", plan_num(tr, "margin"),
                                        plan_num(tr, "margin"));
    fputc('\n', f);
    const cJSON *slo = cJSON_GetObjectItemCaseSensitive(out, "slo");
    const cJSON *se = cJSON_GetObjectItemCaseSensitive(out, "search");
    double pct = plan_num(slo, "percentile");
    if (isnan(pct)) pct = METRICS_DEFAULT_PERCENTILE;
    static const char *const keys[] = {"ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms"};
    static const char *const label[] = {"TTFT", "TPOT", "max ITL", "E2E"};
    fprintf(f, "  SLO:");
    const char *sep = " ";
    for (int k = 0; k < 4; k++)
        if (!isnan(plan_num(slo, keys[k]))) {
            fprintf(f, "%sp%g %s <= %g ms", sep, pct, label[k], plan_num(slo, keys[k]));
            sep = ", ";
        }
    if (!isnan(plan_num(slo, "attainment"))) fprintf(f, "%sattainment >= %g%%", sep, plan_num(slo, "attainment") * 100);
    if (cJSON_GetObjectItemCaseSensitive(slo, "classes")) fprintf(f, " (and per-class targets)");
    fprintf(f, "; %.0f seed%s; the first %.0f requests for one replica's search; fleets behind %s routers\n",
            plan_num(se, "seeds"), plan_num(se, "seeds") == 1 ? "" : "s", plan_num(se, "requests"),
            cJSON_GetObjectItemCaseSensitive(out, "router")->valuestring);
    /* the band columns when any candidate has an engine band */
    int banded = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(out, "candidates"))
        banded |= cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "fleet"),
                                                                  "ttft_p99_band_s"));
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(out, "space");
    if (sp) {
        fprintf(f, "  space: %.0f candidates, every combination of", plan_num(sp, "candidates"));
        const cJSON *ax;
        int first = 1;
        cJSON_ArrayForEach(ax, cJSON_GetObjectItemCaseSensitive(sp, "axes")) {
            fprintf(f, "%s%s", first ? " " : " x ", ax->valuestring);
            first = 0;
        }
        fputc('\n', f);
    }
    /* the name column as wide as the longest name */
    int w = 18;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(out, "candidates")) {
        int l = (int)strlen(cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring);
        if (l > w) w = l;
    }
    fprintf(f, "\n  %-*s %-9s %13s %8s %6s %9s %13s %11s", w, "candidate", "feasible", "max rate/rep", "replicas",
            "GPUs", "$/h", "$/1M good tok", "p99 TTFT ms");
    if (banded) fprintf(f, " %19s", "model error ms");
    fprintf(f, " %11s", "p99 TPOT ms");
    if (banded) fprintf(f, " %15s", "model error ms");
    fprintf(f, " %9s  %s\n", "p99 E2E s", "verdict");
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(out, "candidates")) {
        const char *nm = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
        int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "feasible"));
        char verdict[96];
        verdict_label(c, verdict, sizeof verdict);
        fprintf(f, "  %-*s %-9s", w, nm, ok ? "yes" : "no");
        if (!ok) {
            fprintf(f, " %13s %8s %6s %9s %13s %11s", "-", "", "", "", "", "");
            if (banded) fprintf(f, " %19s", "");
            fprintf(f, " %11s", "");
            if (banded) fprintf(f, " %15s", "");
            fprintf(f, " %9s  %s\n", "", verdict);
            continue;
        }
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(c, "fleet");
        fprintf(f, " %8.3f%s/s %8.0f %6g %9.2f %13.4f %11.1f", plan_num(c, "max_rate_per_replica"),
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "max_rate_is_lower_bound")) ? "+" : " ",
                plan_num(c, "replicas"), plan_num(c, "gpus"), plan_num(c, "usd_per_hour"), plan_num(c, "usd_per_1m_good_tokens"),
                plan_num(fl, "ttft_p99_s") * 1e3);
        const cJSON *tb = cJSON_GetObjectItemCaseSensitive(fl, "ttft_p99_band_s");
        const cJSON *pb = cJSON_GetObjectItemCaseSensitive(fl, "tpot_p99_band_s");
        char cell[64];
        if (banded) {
            if (tb) snprintf(cell, sizeof cell, "%.1f .. %.1f", plan_num(tb, "low") * 1e3, plan_num(tb, "high") * 1e3);
            else snprintf(cell, sizeof cell, "-");
            fprintf(f, " %19s", cell);
        }
        fprintf(f, " %11.2f", plan_num(fl, "tpot_p99_s") * 1e3);
        if (banded) {
            if (pb) snprintf(cell, sizeof cell, "%.2f .. %.2f", plan_num(pb, "low") * 1e3, plan_num(pb, "high") * 1e3);
            else snprintf(cell, sizeof cell, "-");
            fprintf(f, " %15s", cell);
        }
        fprintf(f, " %9.3f  %s\n", plan_num(fl, "e2e_p99_s"), verdict);
    }
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(out, "recommended");
    const cJSON *best = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(out, "candidates"))
        if (cJSON_IsString(rec) && !strcmp(cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring, rec->valuestring))
            best = c;
    char bv[96];
    if (best) fprintf(f, "\n  recommended: %s: %s\n", rec->valuestring, verdict_label(best, bv, sizeof bv));
    else fprintf(f, "\n  recommended: none (no feasible candidate)\n");
    fprintf(f, "  Pareto frontier ($ per 1M good tokens vs p99 %s):",
            cJSON_GetObjectItemCaseSensitive(out, "pareto_latency")->valuestring);
    const cJSON *x;
    int first = 1;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(out, "pareto")) {
        fprintf(f, "%s %s", first ? "" : ",", x->valuestring);
        first = 0;
    }
    fprintf(f, "%s\n", first ? " none" : "");
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(out, "candidates")) {
        fprintf(f, "  %s: %s\n", cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring,
                cJSON_GetObjectItemCaseSensitive(c, "why")->valuestring);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "verdict");
        const cJSON *vw = cJSON_GetObjectItemCaseSensitive(c, "verdict_why");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "feasible")) && cJSON_IsString(v) && cJSON_IsString(vw))
            fprintf(f, "    verdict: %s: %s\n", v->valuestring, vw->valuestring);
        const cJSON *fb = cJSON_GetObjectItemCaseSensitive(c, "fleet_fail_below");
        if (fb)
            fprintf(f, "    fleet: %.0f replicas pass, %.0f fail (%s); %d fleet runs\n", plan_num(c, "replicas"),
                    plan_num(fb, "replicas"), cJSON_GetObjectItemCaseSensitive(fb, "miss")->valuestring,
                    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "fleet_search")));
        else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "feasible")) && plan_num(c, "replicas") == 1)
            fprintf(f, "    fleet: 1 replica passes (the smallest fleet)\n");
        const cJSON *bd = cJSON_GetObjectItemCaseSensitive(c, "binding");
        if (bd) {
            const char *bc = cJSON_GetObjectItemCaseSensitive(bd, "constraint")->valuestring;
            if (!strcmp(bc, "attainment"))
                fprintf(f, "    binding: attainment %.1f%% of the %.1f%% target", 100 * plan_num(bd, "value"),
                        100 * plan_num(bd, "target"));
            else
                fprintf(f, "    binding: %s %.2f ms of %g ms (%.1f%% below the limit)", bc, 1e3 * plan_num(bd, "value_s"),
                        1e3 * plan_num(bd, "target_s"), 100 * plan_num(bd, "slack"));
            const cJSON *hr = cJSON_GetObjectItemCaseSensitive(c, "headroom");
            const cJSON *hf = cJSON_GetObjectItemCaseSensitive(hr, "traffic_scale_fails");
            if (cJSON_IsNumber(hf))
                fprintf(f, "; headroom: passes at %.2fx the traffic, fails at %.2fx\n",
                        plan_num(hr, "traffic_scale_passes"), hf->valuedouble);
            else
                fprintf(f, "; headroom: passes at %.2fx the traffic (the search stops there)\n",
                        plan_num(hr, "traffic_scale_passes"));
        }
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(c, "warnings"))
            fprintf(f, "    warning: %s\n", x->valuestring);
    }
}
