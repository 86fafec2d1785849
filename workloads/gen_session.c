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

static int gen_session_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w,
                             Err *e)
{
    static const char *const own[] = {"kind", "sessions", "turns", "rate_per_s", "start_ms", "first_prompt_tokens",
                                      "new_tokens_per_turn", "output_tokens", "think_ms", "system_prompt_tokens",
                                      "max_prompt_tokens", "tool_ms", "tool_output_tokens", NULL};
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
    int agent = !strcmp(w->kind, "agent");
    int64_t n_sessions, sys = 0, max_prompt = WL_LEN_MAX;
    double rate, start_ms = 0;
    if (jsonio_int(wj, "sessions", where, 1, 1, GEN_SESSION_MAX, &n_sessions, e) < 0) return -1;
    if (jsonio_num(wj, "rate_per_s", where, 1, 1e-9, 1e9, &rate, e) < 0) return -1;
    if (jsonio_num(wj, "start_ms", where, 0, 0, 1e12, &start_ms, e) < 0) return -1;
    if (jsonio_int(wj, "system_prompt_tokens", where, 0, 0, WL_LEN_MAX, &sys, e) < 0) return -1;
    if (jsonio_int(wj, "max_prompt_tokens", where, 0, 1, WL_LEN_MAX, &max_prompt, e) < 0) return -1;
    if (sys >= max_prompt)
        return err_set(e, "%s: system_prompt_tokens %lld leaves no room under max_prompt_tokens %lld", where,
                       (long long)sys, (long long)max_prompt);
    TimeDist think;
    if (gen_dist_time_key(wj, think_key, where, &think, e) < 0) return -1;
    LengthDist turns = {0}, first = {0}, newtok = {0}, od = {0};
    GenAttrs attrs = {0};
    int rc = -1;
    if (gen_dist_len_key(wj, "turns", where, base_dir, 1, &turns, e) < 0) goto out;
    if (gen_dist_len_key(wj, "first_prompt_tokens", where, base_dir, 1, &first, e) < 0) goto out;
    if (gen_dist_len_key(wj, newtok_key, where, base_dir, 1, &newtok, e) < 0) goto out;
    if (gen_dist_len_key(wj, "output_tokens", where, base_dir, 1, &od, e) < 0) goto out;
    if (gen_attr_parse(wj, where, base_dir, seed, 1, w, &attrs, e) < 0) goto out;
    gsl_rng *ra = rng_stream(seed, RNG_STREAM_ARRIVALS), *rk = rng_stream(seed, WL_STREAM_TURNS);
    gsl_rng *rp = rng_stream(seed, RNG_STREAM_PROMPT), *rn = rng_stream(seed, WL_STREAM_NEWTOK);
    gsl_rng *ro = rng_stream(seed, RNG_STREAM_OUTPUT), *rt = rng_stream(seed, WL_STREAM_THINK);
    double t_s = start_ms / 1e3;
    char name[32];
    rc = 0;
    for (uint32_t s = 0; s < (uint32_t)n_sessions && rc == 0; s++) {
        t_s += gsl_ran_exponential(ra, 1.0 / rate);
        const GenMix *m = gen_attr_pick(&attrs);
        uint32_t k_turns = gen_dist_len_draw(&turns, rk);
        uint64_t prompt = (uint64_t)sys + gen_dist_len_draw(m && m->has_prompt ? &m->prompt : &first, rp);
        if (prompt > (uint64_t)max_prompt) prompt = (uint64_t)max_prompt;
        uint32_t prev = UINT32_MAX, prev_out = 0;
        snprintf(name, sizeof name, "s%u", s);
        for (uint32_t k = 0; k < k_turns; k++) {
            if (k > 0) {
                uint64_t next = prompt + prev_out + gen_dist_len_draw(&newtok, rn);
                if (next > (uint64_t)max_prompt) break; /* the conversation outgrew the context */
                prompt = next;
            }
            if (w->n >= workload_max_requests()) {
                rc = err_set(e, "%s: more than %u requests; fewer sessions or turns, or %s", where,
                             workload_max_requests(), WL_MAX_REQUESTS_HINT);
                break;
            }
            uint32_t out = gen_dist_len_draw(m && m->has_output ? &m->output : &od, ro);
            int64_t think_ns = k > 0 ? gen_dist_time_draw_ns(&think, rt) : 0;
            Request *r = workload_push(w);
            uint32_t idx = w->n - 1;
            r->t_arrive_ns = llround(t_s * 1e9);
            r->prompt_tokens = (uint32_t)prompt;
            r->output_tokens = out;
            workload_set_id(w, idx, "s%u.%u", s, k);
            gen_attr_apply(&attrs, m, w, idx);
            if ((rc = workload_set_session(w, idx, name, (uint32_t)sys, where, e)) < 0) break;
            if (prev != UINT32_MAX) workload_link(w, prev, idx, think_ns);
            prev = idx;
            prev_out = out;
        }
    }
    gsl_rng_free(ra);
    gsl_rng_free(rk);
    gsl_rng_free(rp);
    gsl_rng_free(rn);
    gsl_rng_free(ro);
    gsl_rng_free(rt);
    if (rc == 0)
        snprintf(w->source, sizeof w->source, agent ? "agent, %lld tasks at %g/s, %u model calls in all"
                                                    : "sessions, %lld sessions at %g/s, %u turns in all",
                 (long long)n_sessions, rate, w->n);
out:
    gen_dist_len_free(&turns);
    gen_dist_len_free(&first);
    gen_dist_len_free(&newtok);
    gen_dist_len_free(&od);
    gen_attr_free(&attrs);
    return rc;
}

static const char *const session_kinds[] = {"sessions", "agent", NULL};

const WlSource wl_source_sessions = {.kinds = session_kinds, .build = gen_session_build};
