/*
 * wl_build.c -- the Workload builder every workload source fills, and its
 * finishing pass (the builder half of sim/workload.h).
 *
 * Owns: the request array while it grows (doubling), the arena that holds
 * ids, names and token/hash id arrays (chunks that never move, so pointers
 * into it stay valid), the name tables of tenants, classes and sessions
 * (open-addressing hash tables over interned strings), and the links
 * between triggered requests.  Sources append requests in creation order;
 * workload_finish turns that into the invariants listed in workload.h.
 *
 * This file knows no source: the sources call it, and the dispatcher
 * (workload.c) reaches them only through their wl_source.h entries.
 */
#include "workload.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "rng.h"

#define ARENA_CHUNK_BYTES (1u << 20)
/* Keys of synthetic token ids: the shared prefix every session may start
 * with, and the seed of a session name's hash. */
#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

typedef struct Chunk {
    struct Chunk *next;
    size_t used, cap;
    max_align_t data[];
} Chunk;

/* Interned strings: names[i] is unique; slots hold index + 1 (0 = empty). */
typedef struct Names {
    const char **names;
    uint32_t n, cap;
    uint32_t *slots;
    uint32_t n_slots;
} Names;

typedef struct AfterLink {
    uint32_t idx;        /* creation index of the triggered request */
    const char *pred_id; /* its predecessor's id (arena) */
} AfterLink;

struct WlPriv {
    uint32_t cap;        /* capacity of reqs and of the side arrays */
    Chunk *arena;
    Names tenants, classes, sessions;
    uint32_t sessions_cap;
    AfterLink *after;
    uint32_t n_after, cap_after;
};

/* ------------------------------------------------------------- arena */

void *workload_alloc(Workload *w, size_t bytes)
{
    WlPriv *p = w->priv;
    size_t need = (bytes + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (need == 0) need = sizeof(max_align_t);
    Chunk *c = p->arena;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > ARENA_CHUNK_BYTES ? need : ARENA_CHUNK_BYTES;
        c = xmalloc(sizeof *c + cap);
        c->cap = cap;
        c->used = 0;
        c->next = p->arena;
        p->arena = c;
    }
    void *out = (char *)c->data + c->used;
    c->used += need;
    return out;
}

const char *workload_str(Workload *w, const char *s)
{
    size_t len = strlen(s) + 1;
    char *d = workload_alloc(w, len);
    memcpy(d, s, len);
    return d;
}

void workload_set_id(Workload *w, uint32_t idx, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    w->reqs[idx].id = workload_str(w, buf);
}

/* ------------------------------------------------------------- names */

static uint64_t str_hash(const char *s)
{
    uint64_t h = FNV_OFFSET;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * FNV_PRIME;
    return h;
}

static uint32_t names_find(const Names *t, const char *s)
{
    if (!t->n_slots) return UINT32_MAX;
    uint32_t mask = t->n_slots - 1;
    for (uint32_t i = (uint32_t)str_hash(s) & mask;; i = (i + 1) & mask) {
        uint32_t v = t->slots[i];
        if (!v) return UINT32_MAX;
        if (!strcmp(t->names[v - 1], s)) return v - 1;
    }
}

static void names_slot(Names *t, uint32_t idx)
{
    uint32_t mask = t->n_slots - 1;
    uint32_t i = (uint32_t)str_hash(t->names[idx]) & mask;
    while (t->slots[i]) i = (i + 1) & mask;
    t->slots[i] = idx + 1;
}

/* Adds `stored` (which must outlive the table and be absent from it). */
static uint32_t names_add(Names *t, const char *stored)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->names = xrealloc(t->names, t->cap * sizeof *t->names);
    }
    uint32_t idx = t->n++;
    t->names[idx] = stored;
    if (2 * t->n > t->n_slots) {
        free(t->slots);
        t->n_slots = t->n_slots ? t->n_slots * 2 : 16;
        while (2 * t->n > t->n_slots) t->n_slots *= 2;
        t->slots = xcalloc(t->n_slots, sizeof *t->slots);
        for (uint32_t k = 0; k < t->n; k++) names_slot(t, k);
    } else {
        names_slot(t, idx);
    }
    return idx;
}

static void names_free(Names *t)
{
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static uint32_t intern(Workload *w, Names *t, const char *name)
{
    uint32_t k = names_find(t, name);
    return k != UINT32_MAX ? k : names_add(t, workload_str(w, name));
}

uint32_t workload_tenant(Workload *w, const char *name)
{
    uint32_t k = intern(w, &w->priv->tenants, name);
    w->tenant_names = w->priv->tenants.names;
    w->n_tenants = w->priv->tenants.n;
    return k;
}

uint32_t workload_class(Workload *w, const char *name)
{
    uint32_t k = intern(w, &w->priv->classes, name);
    w->class_names = w->priv->classes.names;
    w->n_classes = w->priv->classes.n;
    return k;
}

/* ----------------------------------------------------------- builder */

void workload_init(Workload *w, const char *kind)
{
    memset(w, 0, sizeof *w);
    w->priv = xcalloc(1, sizeof *w->priv);
    snprintf(w->kind, sizeof w->kind, "%s", kind);
    workload_tenant(w, "default");
    workload_class(w, "default");
}

static void grow_side(uint32_t **a, uint32_t old_cap, uint32_t cap, uint32_t fill)
{
    *a = xrealloc(*a, cap * sizeof **a);
    for (uint32_t i = old_cap; i < cap; i++) (*a)[i] = fill;
}

static void grow_side64(int64_t **a, uint32_t old_cap, uint32_t cap)
{
    *a = xrealloc(*a, cap * sizeof **a);
    for (uint32_t i = old_cap; i < cap; i++) (*a)[i] = -1;
}

uint32_t workload_max_requests(void)
{
    const char *v = getenv("SERVESIM_MAX_REQUESTS");
    if (v && *v) {
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (!*end && x > 0) return x > 1000000000ull ? 1000000000u : (uint32_t)x;
    }
    return 10000000u;
}

Request *workload_push(Workload *w)
{
    WlPriv *p = w->priv;
    if (w->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 1024;
        w->reqs = xrealloc(w->reqs, cap * sizeof *w->reqs);
        if (w->session_of) grow_side(&w->session_of, p->cap, cap, WL_NO_SESSION);
        if (w->deadline_rel_ns) grow_side64(&w->deadline_rel_ns, p->cap, cap);
        p->cap = cap;
    }
    Request *r = &w->reqs[w->n++];
    request_init(r);
    return r;
}

int workload_set_session(Workload *w, uint32_t idx, const char *name, uint32_t shared_prefix_tokens,
                         const char *where, Err *e)
{
    WlPriv *p = w->priv;
    if (!w->session_of) grow_side(&w->session_of, 0, p->cap, WL_NO_SESSION);
    uint32_t k = names_find(&p->sessions, name);
    if (k == UINT32_MAX) {
        k = names_add(&p->sessions, workload_str(w, name));
        if (k == p->sessions_cap) {
            p->sessions_cap = p->sessions_cap ? p->sessions_cap * 2 : 64;
            w->sessions = xrealloc(w->sessions, p->sessions_cap * sizeof *w->sessions);
        }
        w->sessions[k] = (WlSession){.name = p->sessions.names[k], .shared_prefix_tokens = shared_prefix_tokens};
        w->n_sessions = p->sessions.n;
    } else if (w->sessions[k].shared_prefix_tokens != shared_prefix_tokens) {
        return err_set(e, "%s: session \"%s\": shared_prefix_tokens %u differs from %u given earlier in the "
                          "same session", where, name, shared_prefix_tokens, w->sessions[k].shared_prefix_tokens);
    }
    w->session_of[idx] = k;
    return 0;
}

void workload_set_deadline(Workload *w, uint32_t idx, int64_t rel_ns)
{
    if (!w->deadline_rel_ns) {
        if (rel_ns < 0) return;
        grow_side64(&w->deadline_rel_ns, 0, w->priv->cap);
    }
    w->deadline_rel_ns[idx] = rel_ns;
}

void workload_link(Workload *w, uint32_t pred, uint32_t idx, int64_t think_ns)
{
    w->reqs[pred].next_req = idx;
    w->reqs[idx].triggered = 1;
    w->reqs[idx].think_ns = think_ns;
    w->reqs[idx].t_arrive_ns = -1;
}

void workload_after(Workload *w, uint32_t idx, const char *pred_id, int64_t think_ns)
{
    WlPriv *p = w->priv;
    if (p->n_after == p->cap_after) {
        p->cap_after = p->cap_after ? p->cap_after * 2 : 64;
        p->after = xrealloc(p->after, p->cap_after * sizeof *p->after);
    }
    p->after[p->n_after++] = (AfterLink){.idx = idx, .pred_id = workload_str(w, pred_id)};
    w->reqs[idx].triggered = 1;
    w->reqs[idx].think_ns = think_ns;
    w->reqs[idx].t_arrive_ns = -1;
}

void workload_free(Workload *w)
{
    if (w->priv) {
        Chunk *c = w->priv->arena;
        while (c) {
            Chunk *nx = c->next;
            free(c);
            c = nx;
        }
        names_free(&w->priv->tenants);
        names_free(&w->priv->classes);
        names_free(&w->priv->sessions);
        free(w->priv->after);
        free(w->priv);
    }
    free(w->reqs);
    free(w->sessions);
    free(w->session_of);
    free(w->deadline_rel_ns);
    memset(w, 0, sizeof *w);
}

/* ---------------------------------------------------------- finishing */

typedef struct SortKey {
    int64_t t;
    uint32_t idx;
} SortKey;

static int cmp_key(const void *a, const void *b)
{
    const SortKey *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Ids unique; "after" names resolved to links. */
static int finish_ids(Workload *w, const char *where, Err *e)
{
    WlPriv *p = w->priv;
    for (uint32_t i = 0; i < w->n; i++)
        if (!w->reqs[i].id) workload_set_id(w, i, "%u", i);
    Names ids = {0};
    int rc = 0;
    for (uint32_t i = 0; i < w->n && rc == 0; i++) {
        if (names_find(&ids, w->reqs[i].id) != UINT32_MAX)
            rc = err_set(e, "%s: duplicate request id \"%s\"", where, w->reqs[i].id);
        else
            names_add(&ids, w->reqs[i].id);
    }
    for (uint32_t k = 0; k < p->n_after && rc == 0; k++) {
        const AfterLink *l = &p->after[k];
        Request *r = &w->reqs[l->idx];
        uint32_t pred = names_find(&ids, l->pred_id);
        if (pred == UINT32_MAX)
            rc = err_set(e, "%s: request \"%s\": after: no request has id \"%s\"", where, r->id, l->pred_id);
        else if (pred == l->idx)
            rc = err_set(e, "%s: request \"%s\": after: a request cannot follow itself", where, r->id);
        else if (w->reqs[pred].next_req != REQ_NONE)
            rc = err_set(e, "%s: request \"%s\": after: \"%s\" already triggers \"%s\"; a request triggers at "
                            "most one other", where, r->id, l->pred_id, w->reqs[w->reqs[pred].next_req].id);
        else
            w->reqs[pred].next_req = l->idx;
    }
    names_free(&ids);
    return rc;
}

/* Every triggered request must hang off a chain that starts at an
 * untriggered one; a chain can only fail to by being a cycle. */
static int finish_chains(Workload *w, const char *where, Err *e)
{
    uint8_t *seen = xcalloc(w->n, 1);
    for (uint32_t i = 0; i < w->n; i++) {
        /* chains start at untriggered requests and at a barrier's waiters */
        if (w->reqs[i].triggered && !w->reqs[i].barrier_waiter) continue;
        for (uint32_t k = i; k != REQ_NONE && !seen[k]; k = w->reqs[k].next_req) seen[k] = 1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (!seen[i]) {
            rc = err_set(e, "%s: request \"%s\" waits for a predecessor that never arrives (its \"after\" chain "
                            "is a cycle)", where, w->reqs[i].id);
            break;
        }
    free(seen);
    return rc;
}

static void finish_sort(Workload *w)
{
    uint32_t n = w->n;
    SortKey *key = xmalloc(n * sizeof *key);
    int sorted = 1;
    for (uint32_t i = 0; i < n; i++) {
        key[i] = (SortKey){.t = w->reqs[i].triggered ? INT64_MAX : w->reqs[i].t_arrive_ns, .idx = i};
        if (i && cmp_key(&key[i - 1], &key[i]) > 0) sorted = 0;
    }
    if (!sorted) {
        qsort(key, n, sizeof *key, cmp_key);
        uint32_t *pos = xmalloc(n * sizeof *pos);
        for (uint32_t k = 0; k < n; k++) pos[key[k].idx] = k;
        Request *nr = xmalloc(w->priv->cap * sizeof *nr);
        for (uint32_t k = 0; k < n; k++) {
            nr[k] = w->reqs[key[k].idx];
            if (nr[k].next_req != REQ_NONE) nr[k].next_req = pos[nr[k].next_req];
        }
        free(w->reqs);
        w->reqs = nr;
        if (w->session_of) {
            uint32_t *s = xmalloc(w->priv->cap * sizeof *s);
            for (uint32_t k = 0; k < n; k++) s[k] = w->session_of[key[k].idx];
            free(w->session_of);
            w->session_of = s;
        }
        if (w->deadline_rel_ns) {
            int64_t *d = xmalloc(w->priv->cap * sizeof *d);
            for (uint32_t k = 0; k < n; k++) d[k] = w->deadline_rel_ns[key[k].idx];
            free(w->deadline_rel_ns);
            w->deadline_rel_ns = d;
        }
        free(pos);
    }
    free(key);
}

uint64_t workload_synth_key(const char *session_name)
{
    uint64_t key = str_hash(session_name);
    return key ? key : 1;
}

/* Every turn of a session without stored ids gets the session's
 * synthetic ids (request.h request_token_id), keyed by its name. */
static void finish_sessions(Workload *w)
{
    if (!w->session_of) return;
    for (uint32_t i = 0; i < w->n; i++) {
        uint32_t s = w->session_of[i];
        Request *r = &w->reqs[i];
        if (s == WL_NO_SESSION || r->token_ids) continue;
        r->synth_key = workload_synth_key(w->sessions[s].name);
        r->synth_shared = w->sessions[s].shared_prefix_tokens;
        r->n_token_ids = r->prompt_tokens;
    }
}

int workload_finish(Workload *w, const char *where, Err *e)
{
    if (w->n == 0) return err_set(e, "%s: no requests (every record was filtered out or the source is empty)", where);
    if (finish_ids(w, where, e) < 0 || finish_chains(w, where, e) < 0) return -1;
    finish_sort(w);
    w->n_triggered = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        Request *r = &w->reqs[i];
        r->token_off = 0;
        r->deadline_ns = -1;
        r->deadline_after_ns = -1;
        if (r->triggered && w->deadline_rel_ns && w->deadline_rel_ns[i] >= 0)
            r->deadline_after_ns = w->deadline_rel_ns[i]; /* set on arrival by the engine */
        if (r->triggered) w->n_triggered++;
        else if (w->deadline_rel_ns && w->deadline_rel_ns[i] >= 0)
            r->deadline_ns = r->t_arrive_ns + w->deadline_rel_ns[i];
    }
    finish_sessions(w);
    return 0;
}

/* ------------------------------------------------------------ paths */

void workload_base_dir(const char *where, char *out, size_t n)
{
    if (!n) return;
    out[0] = '\0';
    if (!where) return;
    const char *colon = strstr(where, ": ");
    size_t len = colon ? (size_t)(colon - where) : strlen(where);
    /* the directory part of the file name */
    size_t slash = len;
    while (slash > 0 && where[slash - 1] != '/') slash--;
    if (slash == 0) return;
    if (slash >= n) slash = n - 1;
    memcpy(out, where, slash);
    out[slash] = '\0';
}

int workload_resolve(const char *base_dir, const char *path, const char *where, char *out, size_t n, Err *e)
{
    /* the one rule (paths.h paths_resolve_in): beside the scenario, then
     * the data directory, never the working directory first */
    if (path[0] == '/') {
        if ((size_t)snprintf(out, n, "%s", path) < n && access(out, R_OK) == 0) return 0;
        return err_set(e, "%s: cannot read \"%s\" (tried the absolute path)", where, path);
    }
    char tried[2300], root[1024];
    const char *dir = base_dir && *base_dir ? base_dir : ".";
    int len = snprintf(out, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", path);
    if (len >= 0 && (size_t)len < n && access(out, R_OK) == 0) return 0;
    snprintf(tried, sizeof tried, "%s beside the scenario", out);
    paths_data_root(root, sizeof root);
    len = snprintf(out, n, "%s/%s", root, path);
    if (len >= 0 && (size_t)len < n && access(out, R_OK) == 0) return 0;
    size_t tl = strlen(tried);
    snprintf(tried + tl, sizeof tried - tl, ", then %s in the data directory", out);
    return err_set(e, "%s: cannot read \"%s\" (tried %s)", where, path, tried);
}
