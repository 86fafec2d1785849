/*
 * plan_int.h -- what the planner's files share (plan.c: reading a plan,
 * the candidates' searches, ranking; plan_space.c: a "space" of axes made
 * candidates; plan_emit.c: --emit; plan_print.c: the text table).  Only
 * planner/plan*.c include it.
 */
#ifndef SERVESIM_PLAN_INT_H
#define SERVESIM_PLAN_INT_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "common.h"

/* A candidate's verdict (plan_verdict_names): fails at the predicted
 * values, passes at them but not at the engine's error band's high end,
 * passes at both. */
enum { PLAN_PASSES = 0, PLAN_WITHIN_ERROR, PLAN_FAILS };

typedef struct Plan {
    char name[400];              /* the file, in messages (room left for " (candidates[k])") */
    cJSON *root;                 /* the plan (owned) */
    const cJSON *base, *model, *slo, *candidates;
    cJSON *traffic;              /* the whole traffic, "scale" applied (owned) */
    cJSON *search_traffic;       /* its form for one replica's search (rate set per run; owned) */
    cJSON *zero_traffic;         /* its first request alone: the zero-load check (owned) */
    cJSON *space_cands;          /* "space" expanded, with any listed candidates (owned; candidates points here) */
    uint32_t n_space;            /* candidates the space made */
    char router[32];
    uint32_t seeds, max_replicas, search_requests;
    double tolerance, seed;
    int pareto_metric;           /* the latency of the Pareto frontier: 0 ttft (default), 1 tpot, 2 e2e p99 */
    double target_rate;          /* the traffic's mean arrival rate (the margin applied) */
    double margin;               /* --margin: the traffic sized for is this many times the plan's (1) */
    uint32_t traffic_requests;
    char traffic_source[512];
} Plan;

/* o[k] = v, replacing any value there (v is taken over). */
void plan_set_item(cJSON *o, const char *k, cJSON *v);
/* A number member, NAN when absent. */
double plan_num(const cJSON *o, const char *k);
/* The candidate record is feasible with a cost per good token. */
int plan_ranked(const cJSON *c);
/* Candidate c's scenario over traffic: units replicas behind the plan's
 * router (0: one replica), unbounded: a what-if KV pool for the memory
 * check. */
cJSON *plan_candidate_scenario(const Plan *p, const cJSON *c, const cJSON *traffic, uint32_t units, int unbounded);
/* "space" expanded into p->space_cands (plan_space.c). */
int plan_space_parse(Plan *p, const cJSON *space, Err *e);
/* plan --emit DIR (plan_emit.c). */
int plan_emit(const Plan *p, const cJSON *out, const char *dir, Err *e);

#endif
