/*
 * gen_session.c -- multi-turn conversations and agent loops (the source
 * wl_source_sessions).
 *
 *   {"kind": "sessions", "sessions": 100, "turns": 5 | {dist},
 *    "rate_per_s": 0.5, "start_ms": 0,
 *    "first_prompt_tokens": ..., "new_tokens_per_turn": ..., "output_tokens": ...,
 *    "think_ms": 2000 | {dist}, "system_prompt_tokens": 0, "max_prompt_tokens": N,
 *    tenant/class/priority/deadline_ms/mix (one pick per session)}
 *
 * Sessions start as a Poisson process.  Turn 1's prompt is the system
 * prompt plus first_prompt_tokens; turn k's prompt is turn k-1's prompt +
 * its answer + new_tokens_per_turn, and turn k arrives think_ms after turn
 * k-1 finishes (triggered).  A session ends after its turns, or before a
 * turn whose prompt would pass max_prompt_tokens.  Token ids come from the
 * session (workload.h): turn k's ids start with turn k-1's prompt ids and
 * answer ids, and the system prompt's ids are shared by every session.
 *
 * Agents: {"kind": "agent", ...} is the same source with the agent's
 * names: each turn is a model call, and the next call waits for a tool
 * call of "tool_ms" (a time or a distribution; it replaces think_ms) whose
 * output, "tool_output_tokens" (replacing new_tokens_per_turn), joins the
 * conversation; the prefix cache reuses the earlier turns.  Either kind
 * takes either name (not both of one pair).  The report splits each
 * task's time into queueing, prefill, decode and tool time (sim/tasks.h).
 *
 * Streams: session starts RNG_STREAM_ARRIVALS, turns per session
 * WL_STREAM_TURNS, first prompts RNG_STREAM_PROMPT, new tokens per turn
 * WL_STREAM_NEWTOK, answers RNG_STREAM_OUTPUT, think times WL_STREAM_THINK,
 * mixes WL_STREAM_MIX (one pick per session).  Token ids are not stored
 * here: every turn names its session and workload_finish derives one id
 * array per session that all its turns point into.
 */
#include "workload.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen_attr.h"
#include "gen_dist.h"
#include "jsonio.h"
#include "rng.h"
#include "wl_source.h"

#define GEN_SESSION_MAX 10000000

/* One session's turn before it becomes a request. */
typedef struct SessTurn {
    uint32_t prompt, output;
    int64_t think_ns;           /* after the previous turn leaves (0 for turn 0) */
    int64_t cancel_after_ns;    /* a stream's "cancel" draw (the materialised build's is gen_attr_apply's) */
} SessTurn;

/* The generator both ways share: gen_session_build drains it into a
 * workload, a stream (SessStream) pulls one session at a time.  Every
 * session's draws are made when it starts, in the materialised order
 * (session-major), so both make the same requests. */
typedef struct SessGen {
    int agent;
    int64_t n_sessions, sys, max_prompt;
    double rate, t_s;
    TimeDist think;
    LengthDist turns, first, newtok, od;
    GenAttrs attrs;
    gsl_rng *ra, *rk, *rp, *rn, *ro, *rt;
    uint32_t s;                 /* sessions made */
    /* the last session made: its start, mix pick and turns */
    int64_t t_arrive_ns;
    const GenMix *m;
    uint32_t adapter;           /* its LoRA adapter (the pick's: one per session) */
    SessTurn *turn;
    uint32_t n_turn, cap_turn;
} SessGen;

static void sess_gen_free(SessGen *g)
{
    gen_dist_len_free(&g->turns);
    gen_dist_len_free(&g->first);
    gen_dist_len_free(&g->newtok);
    gen_dist_len_free(&g->od);
    gen_attr_free(&g->attrs);
    gsl_rng *r[] = {g->ra, g->rk, g->rp, g->rn, g->ro, g->rt};
    for (size_t i = 0; i < sizeof r / sizeof *r; i++)
        if (r[i]) gsl_rng_free(r[i]);
    free(g->turn);
    memset(g, 0, sizeof *g);
}

static int sess_gen_init(SessGen *g, const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                         Workload *w, Err *e)
{
    static const char *const own[] = {"kind", "sessions", "turns", "rate_per_s", "start_ms", "first_prompt_tokens",
                                      "new_tokens_per_turn", "output_tokens", "think_ms", "system_prompt_tokens",
                                      "max_prompt_tokens", "tool_ms", "tool_output_tokens", NULL};
    memset(g, 0, sizeof *g);
    if (gen_attr_check_keys(wj, where, own, e) < 0) return -1;
    const char *think_key = "think_ms", *newtok_key = "new_tokens_per_turn";
    if (cJSON_GetObjectItemCaseSensitive(wj, "tool_ms")) {
        if (cJSON_GetObjectItemCaseSensitive(wj, "think_ms"))
            return err_set(e, "%s: \"think_ms\" and \"tool_ms\" exclude each other (both are the wait between turns)",
                           where);
        think_key = "tool_ms";
    }
    if (cJSON_GetObjectItemCaseSensitive(wj, "tool_output_tokens")) {
        if (cJSON_GetObjectItemCaseSensitive(wj, "new_tokens_per_turn"))
            return err_set(e, "%s: \"new_tokens_per_turn\" and \"tool_output_tokens\" exclude each other (both are "
                              "the tokens a turn adds)", where);
        newtok_key = "tool_output_tokens";
    }
    g->agent = !strcmp(w->kind, "agent");
    g->max_prompt = WL_LEN_MAX;
    double start_ms = 0;
    if (jsonio_int(wj, "sessions", where, 1, 1, GEN_SESSION_MAX, &g->n_sessions, e) < 0) return -1;
    if (jsonio_num(wj, "rate_per_s", where, 1, 1e-9, 1e9, &g->rate, e) < 0) return -1;
    if (jsonio_num(wj, "start_ms", where, 0, 0, 1e12, &start_ms, e) < 0) return -1;
    if (jsonio_int(wj, "system_prompt_tokens", where, 0, 0, WL_LEN_MAX, &g->sys, e) < 0) return -1;
    if (jsonio_int(wj, "max_prompt_tokens", where, 0, 1, WL_LEN_MAX, &g->max_prompt, e) < 0) return -1;
    if (g->sys >= g->max_prompt)
        return err_set(e, "%s: system_prompt_tokens %lld leaves no room under max_prompt_tokens %lld", where,
                       (long long)g->sys, (long long)g->max_prompt);
    if (gen_dist_time_key(wj, think_key, where, &g->think, e) < 0) return -1;
    if (gen_dist_len_key(wj, "turns", where, base_dir, 1, &g->turns, e) < 0) return -1;
    if (gen_dist_len_key(wj, "first_prompt_tokens", where, base_dir, 1, &g->first, e) < 0) return -1;
    if (gen_dist_len_key(wj, newtok_key, where, base_dir, 1, &g->newtok, e) < 0) return -1;
    if (gen_dist_len_key(wj, "output_tokens", where, base_dir, 1, &g->od, e) < 0) return -1;
    if (gen_attr_parse(wj, where, base_dir, seed, 1, w, &g->attrs, e) < 0) return -1;
    g->ra = rng_stream(seed, RNG_STREAM_ARRIVALS);
    g->rk = rng_stream(seed, WL_STREAM_TURNS);
    g->rp = rng_stream(seed, RNG_STREAM_PROMPT);
    g->rn = rng_stream(seed, WL_STREAM_NEWTOK);
    g->ro = rng_stream(seed, RNG_STREAM_OUTPUT);
    g->rt = rng_stream(seed, WL_STREAM_THINK);
    g->t_s = start_ms / 1e3;
    return 0;
}

/* The next session's start, mix and turns into g; 0 when all are made. */
static int sess_gen_next(SessGen *g)
{
    if (g->s >= (uint64_t)g->n_sessions) return 0;
    g->t_s += gsl_ran_exponential(g->ra, 1.0 / g->rate);
    g->t_arrive_ns = llround(g->t_s * 1e9);
    const GenMix *m = g->m = gen_attr_pick(&g->attrs);
    g->adapter = g->attrs.adapter;
    uint32_t k_turns = gen_dist_len_draw(&g->turns, g->rk);
    uint64_t prompt = (uint64_t)g->sys + gen_dist_len_draw(m && m->has_prompt ? &m->prompt : &g->first, g->rp);
    if (prompt > (uint64_t)g->max_prompt) prompt = (uint64_t)g->max_prompt;
    uint32_t prev_out = 0;
    g->n_turn = 0;
    for (uint32_t k = 0; k < k_turns; k++) {
        if (k > 0) {
            uint64_t next = prompt + prev_out + gen_dist_len_draw(&g->newtok, g->rn);
            if (next > (uint64_t)g->max_prompt) break; /* the conversation outgrew the context */
            prompt = next;
        }
        uint32_t out = gen_dist_len_draw(m && m->has_output ? &m->output : &g->od, g->ro);
        int64_t think_ns = k > 0 ? gen_dist_time_draw_ns(&g->think, g->rt) : 0;
        if (g->n_turn == g->cap_turn) {
            g->cap_turn = g->cap_turn ? 2 * g->cap_turn : 8;
            g->turn = xrealloc(g->turn, g->cap_turn * sizeof *g->turn);
        }
        g->turn[g->n_turn++] = (SessTurn){.prompt = (uint32_t)prompt, .output = out, .think_ns = think_ns};
        prev_out = out;
    }
    g->s++;
    return 1;
}

static int gen_session_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w,
                             Err *e)
{
    SessGen g;
    int rc = sess_gen_init(&g, wj, where, base_dir, seed, w, e);
    char name[32];
    while (rc == 0 && sess_gen_next(&g)) {
        uint32_t s = g.s - 1, prev = UINT32_MAX;
        snprintf(name, sizeof name, "s%u", s);
        for (uint32_t k = 0; k < g.n_turn; k++) {
            if (w->n >= workload_max_requests()) {
                rc = err_set(e, "%s: more than %u requests; fewer sessions or turns, or %s", where,
                             workload_max_requests(), WL_MAX_REQUESTS_HINT);
                break;
            }
            Request *r = workload_push(w);
            uint32_t idx = w->n - 1;
            r->t_arrive_ns = g.t_arrive_ns;
            r->prompt_tokens = g.turn[k].prompt;
            r->output_tokens = g.turn[k].output;
            workload_set_id(w, idx, "s%u.%u", s, k);
            gen_attr_apply(&g.attrs, g.m, w, idx);
            if ((rc = workload_set_session(w, idx, name, (uint32_t)g.sys, where, e)) < 0) break;
            if (prev != UINT32_MAX) workload_link(w, prev, idx, g.turn[k].think_ns);
            prev = idx;
        }
    }
    if (rc == 0)
        snprintf(w->source, sizeof w->source, g.agent ? "agent, %lld tasks at %g/s, %u model calls in all"
                                                      : "sessions, %lld sessions at %g/s, %u turns in all",
                 (long long)g.n_sessions, g.rate, w->n);
    sess_gen_free(&g);
    return rc;
}

/* ------------------------------------------------------------ streaming */

/* A session whose next turn has not arrived yet (the stream's handle:
 * Request.chain is its index in SessStream.live). */
typedef struct SessLive {
    uint32_t s, k, n;           /* session, its turn now, its turns */
    uint64_t seq_base;          /* turn 1's position in the materialised workload */
    const GenMix *m;
    uint32_t adapter;
    SessTurn *turn;             /* kept with the record, reused by the next session */
    uint32_t cap_turn;
    uint32_t next_free;
} SessLive;

struct SessStream {
    SessGen g;
    char where[512];
    SessLive *live;
    uint32_t n_live, free_head;
    uint64_t follow_seq;        /* follow-up turns made: theirs come after every first turn */
    char id[48];
    int flat;                   /* every turn, session by session (a pass that only sums) */
    uint32_t flat_k;
    uint64_t flat_base;         /* flat: the session's turn 1's position in the materialised workload */
    /* an engine profile's client jitter (workload_stream_client): drawn
     * for turns 1.. of each session as it starts, the materialised order */
    gsl_rng *rj;
    double jitter_s, jitter_per_token_s;
};

void sess_stream_jitter(SessStream *ss, uint64_t seed, double jitter_s, double jitter_per_token_s)
{
    if (!(jitter_s > 0 || jitter_per_token_s > 0)) return;
    ss->jitter_s = jitter_s;
    ss->jitter_per_token_s = jitter_per_token_s;
    if (!ss->rj) ss->rj = rng_stream(seed, RNG_STREAM_CLIENT_JITTER);
}

SessStream *sess_stream_open(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                             Workload *names, Err *e)
{
    SessStream *ss = xcalloc(1, sizeof *ss);
    snprintf(ss->where, sizeof ss->where, "%s", where);
    ss->free_head = UINT32_MAX;
    if (sess_gen_init(&ss->g, wj, where, base_dir, seed, names, e) < 0) {
        sess_stream_free(ss);
        return NULL;
    }
    return ss;
}

void sess_stream_flat(SessStream *ss) { ss->flat = 1; }
int sess_stream_may_cancel(const SessStream *ss) { return ss->g.attrs.rc != NULL; }

void sess_stream_free(SessStream *ss)
{
    if (!ss) return;
    for (uint32_t i = 0; i < ss->n_live; i++) free(ss->live[i].turn);
    free(ss->live);
    if (ss->rj) gsl_rng_free(ss->rj);
    sess_gen_free(&ss->g);
    free(ss);
}

/* Turn k of session s (of n turns) into r, its mix m's attributes and
 * the session's adapter. */
static void sess_fill(SessStream *ss, Request *r, uint32_t s, uint32_t k, uint32_t n, const SessTurn *t,
                      const GenMix *m, uint32_t adapter)
{
    const GenAttrs *a = &ss->g.attrs;
    request_init(r);
    r->prompt_tokens = t->prompt;
    r->output_tokens = t->output;
    snprintf(ss->id, sizeof ss->id, "s%u.%u", s, k);
    r->id = ss->id;
    r->tenant = m ? m->tenant : a->tenant;
    r->cls = m ? m->cls : a->cls;
    r->priority = m ? m->priority : a->priority;
    r->adapter = adapter;
    int64_t d = m ? m->deadline_ns : a->deadline_ns;
    char name[32];
    snprintf(name, sizeof name, "s%u", s);
    r->synth_key = workload_synth_key(name);
    r->synth_shared = (uint32_t)ss->g.sys;
    r->n_token_ids = r->prompt_tokens;
    r->task = s;
    r->cancel_after_ns = t->cancel_after_ns;
    r->task_link = k;
    r->task_last = k + 1 == n;
    if (k == 0) {
        r->t_arrive_ns = ss->g.t_arrive_ns;
        if (d >= 0) r->deadline_ns = r->t_arrive_ns + d;
    } else {
        r->think_ns = t->think_ns;
        r->deadline_after_ns = d;
    }
}

int sess_stream_next(SessStream *ss, Request *r, Err *e)
{
    (void)e;
    SessGen *g = &ss->g;
    if (ss->flat) {
        /* the rest of the last session's turns, then the next session
         * (no cancel draws: a pass that only sums) */
        if (ss->flat_k == 0 || ss->flat_k >= g->n_turn) {
            if (!sess_gen_next(g)) return 0;
            ss->flat_k = 0;
            ss->flat_base = (uint64_t)g->n_sessions + ss->follow_seq;
            ss->follow_seq += g->n_turn - 1;
        }
        uint32_t k = ss->flat_k++;
        sess_fill(ss, r, g->s - 1, k, g->n_turn, &g->turn[k], g->m, g->adapter);
        r->seq = k ? ss->flat_base + k - 1 : g->s - 1;
        return 1;
    }
    if (!sess_gen_next(g)) return 0;
    uint32_t s = g->s - 1, n = g->n_turn;
    /* "cancel": one draw per turn, session by session, as gen_attr_apply */
    for (uint32_t k = 0; k < n; k++) g->turn[k].cancel_after_ns = gen_attr_cancel(&g->attrs);
    for (uint32_t k = 1; ss->rj && k < n; k++) {
        /* as scenario.c: the mean grows with the previous turn's answer */
        double mean = ss->jitter_s + ss->jitter_per_token_s * g->turn[k - 1].output;
        g->turn[k].think_ns += mean > 0 ? llround(gsl_ran_exponential(ss->rj, mean) * 1e9) : 0;
    }
    sess_fill(ss, r, s, 0, n, &g->turn[0], g->m, g->adapter);
    r->seq = s;
    if (n < 2) return 1;
    /* the session's later turns wait in a record until each arrives */
    uint32_t h = ss->free_head;
    if (h != UINT32_MAX) {
        ss->free_head = ss->live[h].next_free;
    } else {
        if ((ss->n_live & (ss->n_live - 1)) == 0)
            ss->live = xrealloc(ss->live, (ss->n_live ? 2 * ss->n_live : 1) * sizeof *ss->live);
        h = ss->n_live++;
        ss->live[h] = (SessLive){0};
    }
    SessLive *l = &ss->live[h];
    if (l->cap_turn < n) {
        l->turn = xrealloc(l->turn, n * sizeof *l->turn);
        l->cap_turn = n;
    }
    memcpy(l->turn, g->turn, n * sizeof *l->turn);
    l->s = s;
    l->k = 0;
    l->n = n;
    l->m = g->m;
    l->adapter = g->adapter;
    l->seq_base = (uint64_t)g->n_sessions + ss->follow_seq;
    ss->follow_seq += n - 1;
    r->chain = h;
    return 1;
}

int sess_stream_follow(SessStream *ss, const Request *pred, int64_t *think_ns)
{
    if (pred->chain >= ss->n_live) return 0;
    const SessLive *l = &ss->live[pred->chain];
    if (l->k + 1 >= l->n) return 0;
    *think_ns = l->turn[l->k + 1].think_ns;
    return 1;
}

int sess_stream_pull_follow(SessStream *ss, uint32_t chain, Request *r, Err *e)
{
    if (chain >= ss->n_live || ss->live[chain].k + 1 >= ss->live[chain].n)
        return err_set(e, "internal: %s: session record %u has no next turn", ss->where, chain);
    SessLive *l = &ss->live[chain];
    uint32_t k = ++l->k;
    sess_fill(ss, r, l->s, k, l->n, &l->turn[k], l->m, l->adapter);
    r->seq = l->seq_base + k - 1;
    if (k + 1 < l->n) {
        r->chain = chain;
    } else {
        l->next_free = ss->free_head;
        ss->free_head = chain;
    }
    return 1;
}

static const char *const session_kinds[] = {"sessions", "agent", NULL};

const WlSource wl_source_sessions = {.kinds = session_kinds, .build = gen_session_build};
