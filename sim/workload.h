/*
 * workload.h -- the requests a scenario feeds the engine, and the builder
 * that every workload source fills.
 *
 * A scenario's "workload" is one of (workloads/README.md has the keys; the
 * files are in workloads/, each registered in workload.c's source table):
 *   {"requests": [...]}                 an explicit list        (trace_load.c)
 *   {"trace": PATH, "format": F, ...}   a trace file + transforms (trace_load.c)
 *   {"kind": "poisson"|"gamma"|"constant"|"piecewise"|"diurnal"|"onoff", ...}
 *                                       open-loop generators     (gen_open.c)
 *   {"kind": "closed_loop", ...}        N clients                (gen_closed.c)
 *   {"kind": "sessions", ...}           multi-turn conversations (gen_session.c)
 *
 * Invariants of a finished Workload (what the engine relies on):
 *  - reqs[] holds every untriggered request sorted by arrival (ties keep
 *    input order), then every triggered one (t_arrive_ns = -1 until the
 *    engine sets it) in creation order;
 *  - a triggered request is the next_req of exactly one predecessor, and
 *    every chain of next_req starts at an untriggered request (no cycles);
 *    next_req holds positions in the final array;
 *  - ids are unique; cls < n_classes, tenant < n_tenants (0 = "default");
 *  - deadline_ns is absolute for untriggered requests; a triggered
 *    request's arrival is unknown here, so its deadline_ns is -1 and its
 *    relative deadline stays in deadline_rel_ns[] until the engine can
 *    apply a relative deadline when it sets the arrival;
 *  - every string and id array the requests point to lives in the
 *    workload's arena and stays valid until workload_free.
 */
#ifndef SERVESIM_WORKLOAD_H
#define SERVESIM_WORKLOAD_H

#include <cjson/cJSON.h>

#include "common.h"
#include "request.h"

/* Random streams of the workload sources, beside rng.h's arrivals (1),
 * prompt (2) and output (3): a new use gets a new id, so adding one never
 * shifts another's draws. */
enum {
    WL_STREAM_SAMPLE = 16,  /* trace sampling: one uniform per record in the window */
    WL_STREAM_MIX = 17,     /* class/tenant mix: one pick per request (per session) */
    WL_STREAM_THINK = 18,   /* think times of closed loops and sessions */
    WL_STREAM_TURNS = 19,   /* turns per session */
    WL_STREAM_NEWTOK = 20,  /* new tokens per session turn */
    WL_STREAM_ONOFF = 21,   /* ON/OFF period lengths */
    WL_STREAM_THIN = 22,    /* acceptance draws when thinning a time-varying rate */
    WL_STREAM_ADAPTER = 23, /* LoRA adapter per request (per session): Zipf over the adapters */
    WL_STREAM_CANCEL = 24,  /* which requests the client cancels, and when (gen_attr.h "cancel") */
    WL_STREAM_BOOTSTRAP = 25, /* a trace's block bootstrap: which block fills each slot */
};

#define WL_LEN_MAX 10000000u        /* tokens: longer than any context window we model */
#define WL_NO_SESSION UINT32_MAX
#define WL_HASH_BLOCK_TOKENS 512u   /* Mooncake's block of one hash id */

/* A conversation whose requests share a prefix: request token ids are
 * derived from (session name, position), so a later turn's prompt starts
 * with an earlier turn's prompt and answer.  The first shared_prefix_tokens
 * come from one workload-wide prefix (a system prompt every session
 * shares).  A turn has n_token_ids = prompt_tokens synthetic ids
 * (request.h request_token_id: synth_key from the session's name), computed
 * when the prefix cache asks and never stored, so a million sessions cost no
 * id memory; id p is the same at every position of every turn, answers
 * included, so a cache may key generated blocks too. */
typedef struct WlSession {
    const char *name;
    uint32_t shared_prefix_tokens;
} WlSession;

/* What reading and transforming cost: reported by `servesim workload`. */
typedef struct WlCounts {
    uint64_t records;           /* valid records read from trace files */
    uint64_t skipped;           /* malformed lines skipped (on_error "skip") */
    uint64_t out_of_window;     /* records outside window_s */
    uint64_t sampled_out;       /* records dropped by "sample" */
    uint64_t clipped;           /* requests shortened to max_context */
    uint64_t zero_prompt;       /* prompt lengths of 0 raised to 1 */
    uint64_t zero_output;       /* output lengths of 0 raised to 1 */
    char first_skip[256];       /* the first skipped line's message */
} WlCounts;

typedef struct WlPriv WlPriv;   /* builder state, private to wl_build.c */

typedef struct Workload {
    Request *reqs;
    uint32_t n;
    uint32_t n_triggered;       /* requests whose arrival a predecessor sets */
    char kind[32];              /* "requests", "trace", "poisson", "closed_loop", ... */
    char source[512];           /* one line saying where the requests came from */
    const char **class_names;   /* n_classes, [0] = "default"; Request.cls indexes it */
    uint32_t n_classes;
    const char **tenant_names;  /* n_tenants, [0] = "default"; Request.tenant indexes it */
    uint32_t n_tenants;
    WlSession *sessions;
    uint32_t n_sessions;
    uint32_t *session_of;       /* per request: index into sessions or WL_NO_SESSION; NULL if none */
    int64_t *deadline_rel_ns;   /* per request: deadline after arrival, -1 = none; NULL if none */
    WlCounts counts;
    WlPriv *priv;
} Workload;

/* ---- reading and writing (workloads/workload.c) ---- */

/* Parses a scenario's workload.  `where` is "FILE: workload": relative
 * trace paths resolve against FILE's directory first, then the current
 * directory. */
int workload_from_json(const cJSON *w, const char *where, uint64_t seed, Workload *out, Err *e);
/* The same with the directory for relative paths given ("" = current). */
int workload_from_json_dir(const cJSON *w, const char *where, const char *base_dir, uint64_t seed, Workload *out,
                           Err *e);
void workload_free(Workload *w);

/* Writes the materialised requests as our JSON request list, one request
 * per line ({"requests": [ ... ]}); workload_from_json reads it back to the
 * same requests.  Same workload -> byte-identical file. */
int workload_write_json(const Workload *w, const char *path, Err *e);

/* ---- streaming (workloads/gen_open.c, trace_load.c): a run that pulls
 * requests as simulated time reaches them instead of materialising the
 * workload (issues 16, 36): generators, sessions, closed loops and sorted
 * trace files a request at a time; a request list, an unsorted trace or a
 * block bootstrap read whole and handed out in order (their links as
 * chains, their parallel samples as branches); the stream makes exactly the requests,
 * in the same order, that workload_from_json makes for the same object
 * and seed.  A generator's ids are set by the engine (the index, as
 * there); a trace's are in r->id (its own, or the record's ordinal),
 * valid until the next call.
 * `names` is a workload_init()ed workload that receives the class and
 * tenant names; it holds no requests. ---- */
typedef struct WlStream WlStream;
WlStream *workload_stream_open(const cJSON *w, const char *where, uint64_t seed, Workload *names, Err *e);
/* A second copy of st's stream for a first pass (the same requests from
 * the start): opened again, or, for a workload st read whole, a view of
 * it (valid while st is). */
WlStream *workload_stream_reopen(const WlStream *st, const cJSON *w, const char *where, uint64_t seed,
                                 Workload *names, Err *e);
/* 1: the next request in *r (r->seq its index in the materialised
 * workload); 0: the end; -1: an error (a message). */
int workload_stream_next(WlStream *st, Request *r, Err *e);
void workload_stream_free(WlStream *st);
/* Chains (sessions, agent tasks, closed loops): workload_stream_next
 * yields the requests no other one triggers (first turns, each client's
 * first request), in arrival order; when a
 * request with r->chain != REQ_NONE leaves, workload_stream_follow says
 * whether its chain goes on and after what think time (1, *think_ns), and
 * workload_stream_pull_follow makes that request when it arrives.  Every
 * request carries r->seq, its index in the materialised workload (first
 * turns by arrival, then the later turns session by session; a closed
 * loop's creation order), and r->task,
 * its chain's index (REQ_NONE without chains). */
int workload_stream_chains(const WlStream *st);
int workload_stream_follow(WlStream *st, const Request *pred, int64_t *think_ns);
int workload_stream_pull_follow(WlStream *st, uint32_t chain, Request *r, Err *e);
/* Parallel sampling (a list's "n"): 1 when some request has branches;
 * workload_stream_branch makes branch k (1 ..) of parent (slots.h
 * slots_branch), seq its index in the materialised workload. */
int workload_stream_branched(const WlStream *st);
int workload_stream_branch(WlStream *st, const Request *parent, uint32_t k, Request *r, Err *e);
/* A closed loop's warm-up barrier (engine.h EngineBarrier): the members
 * (returned; 0: none) and the waiters, requests first_waiter .. +
 * n_waiters - 1, made by workload_stream_pull_follow with that index as
 * the chain once the last member has left. */
uint32_t workload_stream_barrier(const WlStream *st, uint32_t *first_waiter, uint32_t *n_waiters);
/* An engine profile's client (engprof.h), as scenario.c applies it to a
 * materialised workload in workload order: a closed loop's output lengths
 * spread by +- end_spread tokens (RNG_STREAM_END_SPREAD), and every
 * triggered request's think time plus an exponential delay of mean
 * jitter_s + jitter_per_token_s x its predecessor's output tokens
 * (RNG_STREAM_CLIENT_JITTER).  Before the first request; chains only. */
void workload_stream_client(WlStream *st, uint64_t seed, uint32_t end_spread, double jitter_s,
                            double jitter_per_token_s);
/* After this, workload_stream_next yields every request, chain by chain (a
 * pass that only counts, sums or looks up), each with its r->seq. */
void workload_stream_flat(WlStream *st);
/* 1 when the stream's "cancel" may cancel requests (a trace's records may
 * carry their own too: not known before they are read). */
int workload_stream_may_cancel(const WlStream *st);
/* The synthetic-id key of a session's name (request.h synth_key). */
uint64_t workload_synth_key(const char *session_name);

/* ---- builder (workloads/wl_build.c): used by the sources (trace_load.c,
 * gen_*.c) and the dispatcher; it calls none of them ---- */

void workload_init(Workload *w, const char *kind);
/* Appends a request_init()ed record whose id is its index; the pointer is
 * valid until the next push. */
Request *workload_push(Workload *w);
/* The most requests one workload may hold: about 370 B each, so the
 * default 10,000,000 is ~3.7 GB; SERVESIM_MAX_REQUESTS lifts it.  Every
 * generator and trace loader refuses more at once, naming the limit. */
uint32_t workload_max_requests(void);
#define WL_MAX_REQUESTS_HINT "set SERVESIM_MAX_REQUESTS to lift the limit (about 370 B of memory per request)"
/* The most requests a streamed generator yields (memory is not the bound
 * there, time is: about 2.6 us of CPU each, so 10^9 is some 45 minutes),
 * so that a typo in a count or a duration cannot run for days. */
#define WL_STREAM_MAX_REQUESTS 1000000000ull
#define WL_STREAM_MAX_HINT "a streamed run takes at most 10^9 (about 45 minutes of CPU)"
/* Copies into the arena (valid until workload_free). */
void *workload_alloc(Workload *w, size_t bytes);
const char *workload_str(Workload *w, const char *s);
/* Sets request idx's id to a formatted string. */
void workload_set_id(Workload *w, uint32_t idx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Name -> index (interned; 0 = "default"). */
uint32_t workload_tenant(Workload *w, const char *name);
uint32_t workload_class(Workload *w, const char *name);
/* Puts request idx into the named session; fails if the session exists
 * with another shared_prefix_tokens. */
int workload_set_session(Workload *w, uint32_t idx, const char *name, uint32_t shared_prefix_tokens,
                         const char *where, Err *e);
/* A deadline after the request's arrival (ns). */
void workload_set_deadline(Workload *w, uint32_t idx, int64_t rel_ns);
/* Request idx arrives think_ns after pred leaves (both are indices in
 * creation order); workload_after names the predecessor by id, resolved
 * by workload_finish. */
void workload_link(Workload *w, uint32_t pred, uint32_t idx, int64_t think_ns);
void workload_after(Workload *w, uint32_t idx, const char *pred_id, int64_t think_ns);
/* Checks ids and links, sorts, fixes indices, sets absolute deadlines and
 * session token ids.  `where` prefixes messages. */
int workload_finish(Workload *w, const char *where, Err *e);

/* "FILE: key.path" -> FILE's directory ("" when FILE has none). */
void workload_base_dir(const char *where, char *out, size_t n);
/* Resolves a relative path against base_dir, then the current directory;
 * -1 + a message naming both places tried. */
int workload_resolve(const char *base_dir, const char *path, const char *where, char *out, size_t n, Err *e);

#endif
