/*
 * lua_sched.c -- the Lua-backed scheduler (see lua_sched.h).
 *
 * Owns: the view object handed to the script at each boundary and the
 * validation of every decision before it reaches the engine; the sandboxed
 * state (one per scheduler), the keys common to every Lua policy and the
 * failure record are lua_plugin.c's.
 *
 * Data exchange, kept cheap because it happens at every boundary: nothing
 * is copied.  The view `v`, its lists v.waiting and v.running and the
 * request views are userdata created once and answered through __index
 * from the engine's live state; request views are cached per request in a
 * weak table, so a request keeps one identity (usable as a table key) for
 * as long as the script holds it.  Field names dispatch through a table of
 * interned strings to integer codes (one rawget per access).
 *
 * Invariants:
 *  - the view's methods act only while a callback runs (s->active), on the
 *    engine that called it (s->eng);
 *  - a decision reaches eng_* only after every check passed, so a bad
 *    decision leaves the engine as it was before that decision;
 *  - an error in on_arrival (which cannot return one) is kept
 *    (s->plug.failed) and returned by the next schedule call.
 */
#include "lua_sched.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "jsonio.h"
#include "lua_plugin.h"
#include "lua_sandbox.h"
#include "lua_view.h"

#define LUA_SCHED_VIEW_MAGIC 0x56494557u /* "VIEW" */
#define LUA_SCHED_LIST_MAGIC 0x4c495354u /* "LIST" */
/* Instruction-equivalents charged per item a C method walks (v:estimate's
 * list, a decision table's entries): the Lua API calls per item, about
 * what the same loop in Lua would count. */
#define LUA_SCHED_ITEM_WORK 8u

typedef struct LuaSched {
    LuaPlugin plug;
    LuaSchedConfig cfg;      /* without args (the caller's tree) */
    char name[1100];         /* Scheduler.name: "lua:<path>" */
    int ref_schedule;        /* registry refs */
    int ref_on_arrival;
    int ref_view;
    int ref_cache;           /* weak table: request index + 1 -> request view */
    int ref_reqmt;           /* the request views' metatable */
    int line_schedule;       /* where schedule is defined (for returned decisions) */
    Engine *eng;             /* the engine of the current callback */
    int64_t now_ns;
    int active;              /* a callback runs: the view's methods may act */
    int in_arrival;          /* that callback is on_arrival: only v:reject may act */
    uint64_t boundaries;
    BatchItem *scratch;      /* v:estimate's batch */
    uint32_t scratch_cap;
} LuaSched;

typedef struct LuaSchedObj {
    uint32_t magic;
    int which;               /* lists: 0 = waiting, 1 = running */
    LuaSched *s;
} LuaSchedObj;

enum { OP_DECODE = 0, OP_PREFILL, OP_ADMIT, OP_TRY_ADMIT, OP_PREEMPT, OP_REJECT };
static const char *const lua_sched_op_names[] = {"decode", "prefill", "admit", "try_admit", "preempt", "reject"};

/* --------------------------------------------------------------- errors */

/* Raises "<label>: <message>" or, for a method call (label NULL),
 * "<script>:<line>: <message>" naming the line that called the method. */
static int lua_sched_bad(lua_State *L, const char *label, const char *fmt, ...)
{
    va_list ap;
    if (label) lua_pushfstring(L, "%s: ", label);
    else luaL_where(L, 1);
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    lua_concat(L, 2);
    return lua_error(L);
}

/* ------------------------------------------------------------ requests */

/* Pushes the (cached) view of request idx. */
static void lua_sched_push_req(lua_State *L, LuaSched *s, int cache_idx, int mt_idx, uint32_t idx)
{
    if (lua_rawgeti(L, cache_idx, (lua_Integer)idx + 1) != LUA_TNIL) return;
    lua_pop(L, 1);
    lua_view_req_push(L, mt_idx, idx, eng_req(s->eng, idx), &s->now_ns, s);
    lua_pushvalue(L, -1);
    lua_rawseti(L, cache_idx, (lua_Integer)idx + 1);
}

static void lua_sched_push_req_reg(lua_State *L, LuaSched *s, uint32_t idx)
{
    luaL_checkstack(L, 4, NULL);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_cache);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_reqmt);
    lua_sched_push_req(L, s, lua_gettop(L) - 1, lua_gettop(L), idx);
    lua_replace(L, -3);
    lua_pop(L, 1);
}

static const char *lua_sched_id(LuaSched *s, uint32_t idx)
{
    const char *id = eng_req(s->eng, idx)->id;
    return id ? id : "?";
}

/* The request a decision names: a view made by this scheduler, or the id
 * of a waiting or running request. */
static uint32_t lua_sched_resolve(lua_State *L, LuaSched *s, int op, int ridx, const char *label)
{
    const char *opn = lua_sched_op_names[op];
    LuaViewReq *q = lua_view_req_check(L, ridx);
    if (q) {
        if (q->owner != s) lua_sched_bad(L, label, "%s: the request view belongs to another policy", opn);
        return q->idx;
    }
    if (lua_type(L, ridx) == LUA_TSTRING) {
        const char *id = lua_tostring(L, ridx);
        Engine *eng = s->eng;
        for (uint32_t i = 0; i < eng_waiting_count(eng); i++)
            if (!strcmp(lua_sched_id(s, eng_waiting_at(eng, i)), id)) return eng_waiting_at(eng, i);
        for (uint32_t i = 0; i < eng_running_count(eng); i++)
            if (!strcmp(lua_sched_id(s, eng_running_at(eng, i)), id)) return eng_running_at(eng, i);
        lua_sched_bad(L, label, "%s(\"%s\"): unknown request id (no waiting or running request has it)", opn, id);
    }
    lua_sched_bad(L, label, "%s: expected a request (from v.waiting or v.running) or its id string, got %s", opn,
                  luaL_typename(L, ridx));
    return 0;
}

/* The chunk argument: absent -> dflt; otherwise a whole number. */
static lua_Integer lua_sched_chunk(lua_State *L, LuaSched *s, int op, uint32_t idx, int cidx, lua_Integer dflt,
                                   const char *label)
{
    if (cidx == 0 || lua_isnoneornil(L, cidx)) return dflt;
    int isint = 0;
    lua_Integer c = lua_tointegerx(L, cidx, &isint);
    if (!isint) {
        if (lua_type(L, cidx) == LUA_TNUMBER)
            lua_sched_bad(L, label, "%s(%s, %f): a chunk is a whole number of tokens", lua_sched_op_names[op],
                          lua_sched_id(s, idx), (double)lua_tonumber(L, cidx));
        lua_sched_bad(L, label, "%s(%s, ...): the chunk must be a whole number of tokens, got %s",
                      lua_sched_op_names[op], lua_sched_id(s, idx), luaL_typename(L, cidx));
    }
    return c;
}

static void lua_sched_check_budget(lua_State *L, LuaSched *s, int op, uint32_t idx, lua_Integer c, const char *label)
{
    if (!s->cfg.token_budget) return;
    uint64_t planned = eng_plan(s->eng)->new_tokens;
    if (planned + (uint64_t)c > s->cfg.token_budget)
        lua_sched_bad(L, label, "%s(%s, %I): exceeds the token budget: %I tokens already in this iteration + %I > "
                      "token_budget %I", lua_sched_op_names[op], lua_sched_id(s, idx), c, (lua_Integer)planned, c,
                      (lua_Integer)s->cfg.token_budget);
}

static uint32_t lua_sched_left(const Request *r)
{
    return r->prefill_target > r->kv_len ? r->prefill_target - r->kv_len : 0;
}

/* Applies one decision after validating it.  ridx: the request's stack
 * index; cidx: the chunk's (0 = none).  Returns 1 when done, 0 when not
 * done for a reason that is no error (try_admit that does not fit; the
 * engine preempted the request itself to grow on-demand KV).  Raises on a
 * bad decision. */
static int lua_sched_apply(lua_State *L, LuaSched *s, int op, int ridx, int cidx, const char *label)
{
    Engine *eng = s->eng;
    const char *opn = lua_sched_op_names[op];
    uint32_t idx = lua_sched_resolve(L, s, op, ridx, label);
    Request *r = eng_req(eng, idx);
    const char *id = lua_sched_id(s, idx);
    uint32_t left = lua_sched_left(r);
    switch (op) {
    case OP_DECODE: {
        if (r->state != REQ_RUNNING)
            lua_sched_bad(L, label, "decode(%s): the request is %s, not running", id, lua_view_state_name(r));
        if (!request_decoding(r))
            lua_sched_bad(L, label, "decode(%s): the request has %d prompt tokens left to prefill; plan a prefill "
                          "chunk first", id, (int)left);
        lua_sched_check_budget(L, s, op, idx, 1, label);
        if (eng_plan_add(eng, idx, 0)) return 1;
        if (r->state == REQ_RUNNING)
            lua_sched_bad(L, label, "decode(%s): already in this iteration's batch (one item per request)", id);
        return 0;
    }
    case OP_PREFILL: {
        if (r->state != REQ_RUNNING)
            lua_sched_bad(L, label, "prefill(%s): the request is %s, not running (admit it with a first chunk)", id,
                          lua_view_state_name(r));
        lua_Integer c = lua_sched_chunk(L, s, op, idx, cidx, left, label);
        if (left == 0)
            lua_sched_bad(L, label, "prefill(%s, %I): the prompt is done; decode it instead", id, c);
        if (c < 1 || c > (lua_Integer)left)
            lua_sched_bad(L, label, "prefill(%s, %I): chunk outside 1..%d (the prompt tokens left to prefill)", id,
                          c, (int)left);
        lua_sched_check_budget(L, s, op, idx, c, label);
        if (eng_plan_add(eng, idx, (uint32_t)c)) return 1;
        if (r->state == REQ_RUNNING)
            lua_sched_bad(L, label, "prefill(%s, %I): already in this iteration's batch (one item per request)", id,
                          c);
        return 0;
    }
    case OP_ADMIT:
    case OP_TRY_ADMIT: {
        if (r->state != REQ_QUEUED)
            lua_sched_bad(L, label, "%s(%s): the request is %s, not waiting", opn, id, lua_view_state_name(r));
        lua_Integer c = lua_sched_chunk(L, s, op, idx, cidx, left, label);
        if (c < 1 || c > (lua_Integer)left)
            lua_sched_bad(L, label, "%s(%s, %I): first chunk outside 1..%d (the prompt tokens left to prefill)", opn,
                          id, c, (int)left);
        if (eng_running_count(eng) >= s->cfg.max_running)
            lua_sched_bad(L, label, "%s(%s): %d requests already run; max_running is %d", opn, id,
                          (int)eng_running_count(eng), (int)s->cfg.max_running);
        lua_sched_check_budget(L, s, op, idx, c, label);
        uint32_t pos = 0, nw = eng_waiting_count(eng);
        while (pos < nw && eng_waiting_at(eng, pos) != idx) pos++;
        if (pos == nw) lua_sched_bad(L, label, "%s(%s): not in the waiting queue", opn, id);
        if (!eng_admit(eng, pos, (uint32_t)c)) {
            if (op == OP_TRY_ADMIT) return 0;
            lua_sched_bad(L, label, "admit(%s, %I): past KV capacity: the pool cannot hold it now (%I of %I blocks "
                          "free); check v.kv_free_blocks or use v:try_admit", id, c,
                          (lua_Integer)eng_kv_free_blocks(eng), (lua_Integer)eng_kv_total_blocks(eng));
        }
        /* a prefix-cache hit may have shortened the prefill; a request
         * handed over with its KV decodes at once */
        uint32_t now_left = lua_sched_left(r);
        uint32_t chunk = request_decoding(r) ? 0 : ((uint32_t)c < now_left ? (uint32_t)c : now_left);
        return eng_plan_add(eng, idx, chunk) ? 1 : 0;
    }
    case OP_PREEMPT:
        if (r->state != REQ_RUNNING)
            lua_sched_bad(L, label, "preempt(%s): the request is %s, not running", id, lua_view_state_name(r));
        eng_preempt(eng, idx);
        return 1;
    case OP_REJECT:
        if (r->state != REQ_QUEUED)
            lua_sched_bad(L, label, "reject(%s): the request is %s, not waiting", id, lua_view_state_name(r));
        eng_reject(eng, idx, REJECT_ADMISSION);
        return 1;
    default:
        break;
    }
    return lua_sched_bad(L, label, "unknown decision %d", op);
}

/* ---------------------------------------------------------------- view */

static LuaSched *lua_sched_self(lua_State *L, const char *method)
{
    LuaSchedObj *o = lua_view_obj(L, 1, sizeof *o, LUA_SCHED_VIEW_MAGIC);
    if (!o) luaL_error(L, "%s: call it as v:%s(...) (with a colon) on the view", method, method);
    if (!o->s->active) luaL_error(L, "v:%s: the view works only inside schedule/on_arrival", method);
    return o->s;
}

/* A method that changes the batch: not in on_arrival, which runs between
 * boundaries (an iteration may be in flight; only rejecting is safe). */
static LuaSched *lua_sched_self_batch(lua_State *L, const char *method)
{
    LuaSched *s = lua_sched_self(L, method);
    if (s->in_arrival)
        luaL_error(L, "v:%s: on_arrival may only reject (v:reject or return \"reject\"); batch decisions "
                      "belong in schedule", method);
    return s;
}

static int lua_sched_method(lua_State *L, int op)
{
    LuaSched *s = op == OP_REJECT ? lua_sched_self(L, lua_sched_op_names[op])
                                  : lua_sched_self_batch(L, lua_sched_op_names[op]);
    luaL_checkany(L, 2);
    int cidx = (op == OP_PREFILL || op == OP_ADMIT || op == OP_TRY_ADMIT) ? 3 : 0;
    lua_pushboolean(L, lua_sched_apply(L, s, op, 2, cidx, NULL));
    return 1;
}

static int lua_sched_m_decode(lua_State *L) { return lua_sched_method(L, OP_DECODE); }
static int lua_sched_m_prefill(lua_State *L) { return lua_sched_method(L, OP_PREFILL); }
static int lua_sched_m_admit(lua_State *L) { return lua_sched_method(L, OP_ADMIT); }
static int lua_sched_m_try_admit(lua_State *L) { return lua_sched_method(L, OP_TRY_ADMIT); }
static int lua_sched_m_preempt(lua_State *L) { return lua_sched_method(L, OP_PREEMPT); }
static int lua_sched_m_reject(lua_State *L) { return lua_sched_method(L, OP_REJECT); }

/* v:advance_all() -- every running request not yet in the batch advances,
 * in admission order: one decode token, or the rest of its prefill (capped
 * by the budget left; stops when the budget is spent).  The list is re-read
 * at every step because growing on-demand KV may preempt the newest
 * request.  This is the C schedulers' plan_all_running, offered as one
 * call so that a Lua policy does not pay a Lua round trip per running
 * request per iteration.  Returns the number of requests added. */
static int lua_sched_m_advance_all(lua_State *L)
{
    LuaSched *s = lua_sched_self_batch(L, "advance_all");
    Engine *eng = s->eng;
    lua_sandbox_charge(L, eng_running_count(eng));
    lua_Integer added = 0;
    for (uint32_t i = 0; i < eng_running_count(eng); i++) {
        uint32_t idx = eng_running_at(eng, i);
        const Request *r = eng_req(eng, idx);
        uint32_t c = request_decoding(r) ? 0 : lua_sched_left(r);
        if (s->cfg.token_budget) {
            uint64_t planned = eng_plan(eng)->new_tokens;
            if (planned >= s->cfg.token_budget) break;
            if (c > s->cfg.token_budget - planned) c = (uint32_t)(s->cfg.token_budget - planned);
        }
        if (eng_plan_add(eng, idx, c)) added++;
    }
    lua_pushinteger(L, added);
    return 1;
}

/* v:decode_all() -- one decode token for every running request that has
 * its first token and is not yet in the batch, in admission order, while
 * the budget lasts.  Returns the number of decodes added. */
static int lua_sched_m_decode_all(lua_State *L)
{
    LuaSched *s = lua_sched_self_batch(L, "decode_all");
    Engine *eng = s->eng;
    lua_sandbox_charge(L, eng_running_count(eng));
    lua_Integer added = 0;
    for (uint32_t i = 0; i < eng_running_count(eng); i++) {
        uint32_t idx = eng_running_at(eng, i);
        if (!request_decoding(eng_req(eng, idx))) continue;
        if (s->cfg.token_budget && eng_plan(eng)->new_tokens >= s->cfg.token_budget) break;
        if (eng_plan_add(eng, idx, 0)) added++;
    }
    lua_pushinteger(L, added);
    return 1;
}

/* v:kv_need(r) -> the KV blocks r needs at its largest (its reservation,
 * or for on-demand KV its final length): what admitting it may take. */
static int lua_sched_m_kv_need(lua_State *L)
{
    LuaSched *s = lua_sched_self(L, "kv_need");
    luaL_checkany(L, 2);
    LuaViewReq *q = lua_view_req_check(L, 2);
    if (!q || q->owner != s) return luaL_error(L, "v:kv_need: expected a request view of this policy, got %s",
                                               luaL_typename(L, 2));
    const KvPolicy *kv = engine_kv(s->eng);
    lua_pushinteger(L, (lua_Integer)kv->need_blocks(kv->ctx, eng_req(s->eng, q->idx)));
    return 1;
}

/* v:request(id) -> the waiting or running request with this id, or nil. */
static int lua_sched_m_request(lua_State *L)
{
    LuaSched *s = lua_sched_self(L, "request");
    const char *id = luaL_checkstring(L, 2);
    Engine *eng = s->eng;
    lua_sandbox_charge(L, (uint64_t)eng_running_count(eng) + eng_waiting_count(eng));
    for (int pass = 0; pass < 2; pass++) {
        uint32_t n = pass ? eng_running_count(eng) : eng_waiting_count(eng);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t idx = pass ? eng_running_at(eng, i) : eng_waiting_at(eng, i);
            if (!strcmp(lua_sched_id(s, idx), id)) {
                lua_sched_push_req_reg(L, s, idx);
                return 1;
            }
        }
    }
    lua_pushnil(L);
    return 1;
}

/* v:estimate{{c, h [, "prefill"|"decode"]}, ...} -> seconds the cost model
 * gives a batch of these items (c new tokens over h cached ones). */
static int lua_sched_m_estimate(lua_State *L)
{
    LuaSched *s = lua_sched_self(L, "estimate");
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
    luaL_argcheck(L, n >= 1 && n <= 1000000, 2, "expected a list of 1..1e6 items {c, h}");
    lua_sandbox_charge(L, (uint64_t)n * LUA_SCHED_ITEM_WORK);
    if ((uint32_t)n > s->scratch_cap) {
        s->scratch_cap = (uint32_t)n;
        s->scratch = xrealloc(s->scratch, s->scratch_cap * sizeof *s->scratch);
    }
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, 2, i) != LUA_TTABLE) luaL_error(L, "v:estimate: item %I is not a table {c, h}", i);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        lua_rawgeti(L, -3, 3);
        int okc = 0, okh = 0;
        lua_Integer c = lua_tointegerx(L, -3, &okc), h = lua_tointegerx(L, -2, &okh);
        if (!okc || !okh || c < 1 || h < 0 || c > UINT32_MAX || h > UINT32_MAX)
            luaL_error(L, "v:estimate: item %I: expected {c >= 1, h >= 0} whole numbers", i);
        const char *kind = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "prefill";
        int decode = !strcmp(kind, "decode");
        if (!decode && strcmp(kind, "prefill")) luaL_error(L, "v:estimate: item %I: kind is \"prefill\" or \"decode\"", i);
        s->scratch[i - 1] = (BatchItem){.req = 0, .c = (uint32_t)c, .h = (uint32_t)h,
                                        .kind = decode ? ITEM_DECODE : ITEM_PREFILL, .samples = 1};
        lua_pop(L, 4);
    }
    lua_pushnumber(L, eng_estimate_s(s->eng, s->scratch, (uint32_t)n));
    return 1;
}

static const char *const lua_sched_view_fields[] = {
    "now", "now_ns", "iteration", "waiting", "running", "n_waiting", "n_running", "max_running", "token_budget",
    "budget_left", "batch_tokens", "batch_size", "kv_free_blocks", "kv_used_blocks", "kv_total_blocks",
    "kv_block_tokens", "decode", "prefill", "admit", "try_admit", "preempt", "reject", "request", "estimate",
    "advance_all", "decode_all", "kv_need", NULL};

enum {
    V_NOW = 1, V_NOW_NS, V_ITERATION, V_WAITING, V_RUNNING, V_N_WAITING, V_N_RUNNING, V_MAX_RUNNING,
    V_TOKEN_BUDGET, V_BUDGET_LEFT, V_BATCH_TOKENS, V_BATCH_SIZE, V_KV_FREE, V_KV_USED, V_KV_TOTAL,
    V_KV_BLOCK_TOKENS, V_DECODE, V_PREFILL, V_ADMIT, V_TRY_ADMIT, V_PREEMPT, V_REJECT, V_REQUEST, V_ESTIMATE,
    V_ADVANCE_ALL, V_DECODE_ALL, V_KV_NEED
};

/* upvalues: 1 = field codes, 2 = v.waiting, 3 = v.running */
static int lua_sched_view_index(lua_State *L)
{
    LuaSchedObj *o = lua_touserdata(L, 1);
    if (!o || o->magic != LUA_SCHED_VIEW_MAGIC) return luaL_error(L, "not a scheduler view");
    LuaSched *s = o->s;
    lua_pushvalue(L, 2);
    int code = lua_rawget(L, lua_upvalueindex(1)) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    if (code >= V_DECODE) {
        static const lua_CFunction methods[] = {lua_sched_m_decode, lua_sched_m_prefill, lua_sched_m_admit,
                                                lua_sched_m_try_admit, lua_sched_m_preempt, lua_sched_m_reject,
                                                lua_sched_m_request, lua_sched_m_estimate,
                                                lua_sched_m_advance_all, lua_sched_m_decode_all,
                                                lua_sched_m_kv_need};
        lua_pushcfunction(L, methods[code - V_DECODE]);
        return 1;
    }
    if (!code) {
        const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
        return luaL_error(L, "the view has no field '%s' (fields: now, waiting, running, max_running, budget_left, "
                             "kv_free_blocks, ...; see lua/README.md)", k);
    }
    if (!s->active) return luaL_error(L, "the view works only inside schedule/on_arrival");
    Engine *eng = s->eng;
    switch (code) {
    case V_NOW: lua_pushnumber(L, (double)s->now_ns / 1e9); break;
    case V_NOW_NS: lua_pushinteger(L, s->now_ns); break;
    case V_ITERATION: lua_pushinteger(L, (lua_Integer)s->boundaries); break;
    case V_WAITING: lua_pushvalue(L, lua_upvalueindex(2)); break;
    case V_RUNNING: lua_pushvalue(L, lua_upvalueindex(3)); break;
    case V_N_WAITING: lua_pushinteger(L, eng_waiting_count(eng)); break;
    case V_N_RUNNING: lua_pushinteger(L, eng_running_count(eng)); break;
    case V_MAX_RUNNING: lua_pushinteger(L, s->cfg.max_running); break;
    case V_TOKEN_BUDGET:
        if (s->cfg.token_budget) lua_pushinteger(L, s->cfg.token_budget);
        else lua_pushnil(L);
        break;
    case V_BUDGET_LEFT: {
        uint64_t planned = eng_plan(eng)->new_tokens;
        if (!s->cfg.token_budget) lua_pushinteger(L, LUA_MAXINTEGER);
        else lua_pushinteger(L, planned < s->cfg.token_budget ? (lua_Integer)(s->cfg.token_budget - planned) : 0);
        break;
    }
    case V_BATCH_TOKENS: lua_pushinteger(L, (lua_Integer)eng_plan(eng)->new_tokens); break;
    case V_BATCH_SIZE: lua_pushinteger(L, eng_plan(eng)->n); break;
    case V_KV_FREE: lua_pushinteger(L, (lua_Integer)eng_kv_free_blocks(eng)); break;
    case V_KV_USED: lua_pushinteger(L, (lua_Integer)(eng_kv_total_blocks(eng) - eng_kv_free_blocks(eng))); break;
    case V_KV_TOTAL: lua_pushinteger(L, (lua_Integer)eng_kv_total_blocks(eng)); break;
    case V_KV_BLOCK_TOKENS: lua_pushinteger(L, eng_kv_block_tokens(eng)); break;
    default: lua_pushnil(L); break;
    }
    return 1;
}

/* upvalues: 1 = request cache, 2 = request metatable */
static int lua_sched_list_index(lua_State *L)
{
    LuaSchedObj *o = lua_touserdata(L, 1);
    if (!o || o->magic != LUA_SCHED_LIST_MAGIC) return luaL_error(L, "not a request list");
    LuaSched *s = o->s;
    if (!s->active) return luaL_error(L, "the request lists work only inside schedule/on_arrival");
    int isint = 0;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    if (!isint)
        return luaL_error(L, "v.%s is indexed by position 1..#v.%s, not by %s", o->which ? "running" : "waiting",
                          o->which ? "running" : "waiting", luaL_typename(L, 2));
    Engine *eng = s->eng;
    uint32_t n = o->which ? eng_running_count(eng) : eng_waiting_count(eng);
    if (i < 1 || i > (lua_Integer)n) {
        lua_pushnil(L);
        return 1;
    }
    uint32_t idx = o->which ? eng_running_at(eng, (uint32_t)i - 1) : eng_waiting_at(eng, (uint32_t)i - 1);
    lua_sched_push_req(L, s, lua_upvalueindex(1), lua_upvalueindex(2), idx);
    return 1;
}

static int lua_sched_list_len(lua_State *L)
{
    LuaSchedObj *o = lua_touserdata(L, 1);
    if (!o || o->magic != LUA_SCHED_LIST_MAGIC) return luaL_error(L, "not a request list");
    if (!o->s->active) return luaL_error(L, "the request lists work only inside schedule/on_arrival");
    lua_pushinteger(L, o->which ? eng_running_count(o->s->eng) : eng_waiting_count(o->s->eng));
    return 1;
}

static int lua_sched_obj_tostring(lua_State *L)
{
    LuaSchedObj *o = lua_touserdata(L, 1);
    if (o && o->magic == LUA_SCHED_LIST_MAGIC) lua_pushstring(L, o->which ? "running requests" : "waiting requests");
    else lua_pushliteral(L, "scheduler view");
    return 1;
}

/* Pushes a new userdata of kind magic with a locked, read-only metatable
 * (lua_view_metatable, plus __tostring) whose __index is the closure on
 * top of the stack (popped). */
static void lua_sched_new_obj(lua_State *L, LuaSched *s, uint32_t magic, int which, const char *name)
{
    LuaSchedObj *o = lua_newuserdatauv(L, sizeof *o, 0);
    *o = (LuaSchedObj){.magic = magic, .which = which, .s = s};
    lua_rotate(L, -2, 1); /* obj, index */
    lua_view_metatable(L, name, magic == LUA_SCHED_LIST_MAGIC ? lua_sched_list_len : NULL);
    lua_pushcfunction(L, lua_sched_obj_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
}

/* Builds the view, its lists and the request cache; runs protected, with
 * the LuaSched as light userdata at 1. */
static int lua_sched_build_view(lua_State *L)
{
    LuaSched *s = lua_touserdata(L, 1);
    lua_newtable(L); /* cache, weak values */
    lua_newtable(L);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    int cache = lua_gettop(L);
    lua_view_req_metatable(L);
    int mt = lua_gettop(L);
    for (int which = 0; which < 2; which++) {
        lua_pushvalue(L, cache);
        lua_pushvalue(L, mt);
        lua_pushcclosure(L, lua_sched_list_index, 2);
        lua_sched_new_obj(L, s, LUA_SCHED_LIST_MAGIC, which, "request list");
    }
    /* stack: cache, mt, waiting, running */
    lua_view_push_codes(L, lua_sched_view_fields);
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, lua_sched_view_index, 3);
    lua_sched_new_obj(L, s, LUA_SCHED_VIEW_MAGIC, 0, "scheduler view");
    s->ref_view = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 2);
    s->ref_reqmt = luaL_ref(L, LUA_REGISTRYINDEX);
    s->ref_cache = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* --------------------------------------------------- returned decisions */

static const char *const lua_sched_lists[] = {"preempt", "reject", "decode", "prefill", "admit", NULL};
static const int lua_sched_list_ops[] = {OP_PREEMPT, OP_REJECT, OP_DECODE, OP_PREFILL, OP_ADMIT};

/* Applies a decision table {preempt, reject, decode, prefill, admit};
 * runs protected with (LuaSched, table) at (1, 2). */
static int lua_sched_apply_table(lua_State *L)
{
    LuaSched *s = lua_touserdata(L, 1);
    char label[1300];
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        int known = 0;
        if (lua_type(L, -2) == LUA_TSTRING)
            for (int k = 0; lua_sched_lists[k]; k++) known |= !strcmp(lua_tostring(L, -2), lua_sched_lists[k]);
        if (!known) {
            snprintf(label, sizeof label, "%s:%d: the decision table returned by schedule", s->plug.path,
                     s->line_schedule);
            const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
            lua_sched_bad(L, label, "unknown key '%s' (expected preempt, reject, decode, prefill, admit)", k);
        }
        lua_pop(L, 1);
    }
    for (int k = 0; lua_sched_lists[k]; k++) {
        int op = lua_sched_list_ops[k];
        lua_pushstring(L, lua_sched_lists[k]);
        int t = lua_rawget(L, 2);
        if (t == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        int list = lua_gettop(L);
        if (t != LUA_TTABLE) {
            snprintf(label, sizeof label, "%s:%d: schedule returned %s", s->plug.path, s->line_schedule,
                     lua_sched_lists[k]);
            lua_sched_bad(L, label, "expected a list, got %s", luaL_typename(L, list));
        }
        lua_Integer n = (lua_Integer)lua_rawlen(L, list);
        lua_sandbox_charge(L, (uint64_t)n * LUA_SCHED_ITEM_WORK);
        for (lua_Integer i = 1; i <= n; i++) {
            snprintf(label, sizeof label, "%s:%d: schedule returned %s[%lld]", s->plug.path, s->line_schedule,
                     lua_sched_lists[k], (long long)i);
            int et = lua_rawgeti(L, list, i);
            int ridx = lua_gettop(L), cidx = 0;
            if (et == LUA_TTABLE) {
                if (op != OP_PREFILL && op != OP_ADMIT)
                    lua_sched_bad(L, label, "%s takes requests, not {request, chunk} pairs", lua_sched_lists[k]);
                lua_rawgeti(L, ridx, 1);
                lua_rawgeti(L, ridx, 2);
                cidx = lua_gettop(L);
                ridx = cidx - 1;
                if (lua_isnil(L, cidx))
                    lua_sched_bad(L, label, "expected {request, chunk}, the chunk is missing");
            }
            lua_sched_apply(L, s, op, ridx, cidx, label);
            lua_settop(L, list);
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* ------------------------------------------------------------ callbacks */

static void lua_sched_enter(LuaSched *s, Engine *eng, int in_arrival)
{
    s->eng = eng;
    s->now_ns = eng_now_ns(eng);
    s->active = 1;
    s->in_arrival = in_arrival;
}

/* The callback and the time a message names after the scheduler:
 * "schedule at t = ... s", "on_arrival(r3) at t = ... s" (built only for
 * messages). */
static const char *lua_sched_when(LuaSched *s, const char *cb, uint32_t idx, char *buf, size_t n)
{
    if (idx == REQ_NONE)
        snprintf(buf, n, "%s at t = %.6f s", cb, (double)s->now_ns / 1e9);
    else
        snprintf(buf, n, "%s(%s) at t = %.6f s", cb, lua_sched_id(s, idx), (double)s->now_ns / 1e9);
    return buf;
}

static int lua_sched_schedule(void *ctx, Engine *eng, Err *e)
{
    LuaSched *s = ctx;
    lua_State *L = s->plug.L;
    char when[1300];
    if (lua_plugin_check(&s->plug, e) < 0) return -1;
    lua_sched_enter(s, eng, 0);
    s->boundaries++;
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_schedule);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_view);
    if (lua_plugin_call(&s->plug, 1, e) < 0) {
        s->active = 0;
        return lua_plugin_prefix(&s->plug, e, "%s", lua_sched_when(s, "schedule", REQ_NONE, when, sizeof when));
    }
    int t = lua_type(L, -1);
    if (t == LUA_TTABLE) {
        lua_pushcfunction(L, lua_sched_apply_table);
        lua_pushlightuserdata(L, s);
        lua_pushvalue(L, -3);
        if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
            lua_plugin_error(&s->plug, e, "%s: %s", lua_sched_when(s, "schedule", REQ_NONE, when, sizeof when),
                             lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error");
            lua_pop(L, 2);
            s->active = 0;
            return -1;
        }
    } else if (t != LUA_TNIL) {
        lua_plugin_error(&s->plug, e, "%s: %s:%d: schedule returned a %s; expected nothing (decisions made with "
                         "v:decode, v:admit, ...) or a decision table {preempt, reject, decode, prefill, admit}",
                         lua_sched_when(s, "schedule", REQ_NONE, when, sizeof when), s->plug.path, s->line_schedule,
                         lua_typename(L, t));
        lua_pop(L, 1);
        s->active = 0;
        return -1;
    }
    lua_pop(L, 1);
    s->active = 0;
    if (eng_plan(eng)->n == 0 && eng_running_count(eng) > 0)
        return lua_plugin_error(&s->plug, e, "%s: %s:%d: schedule planned nothing while %u requests run; every "
                                "boundary must advance at least one (decode or prefill)",
                                lua_sched_when(s, "schedule", REQ_NONE, when, sizeof when), s->plug.path,
                                s->line_schedule, eng_running_count(eng));
    return 0;
}

/* (LuaSched, idx) -> on_arrival(v, r)'s result; runs under
 * lua_sandbox_call, so that making the request's view is protected too. */
static int lua_sched_arrival_p(lua_State *L)
{
    LuaSched *s = lua_touserdata(L, 1);
    uint32_t idx = (uint32_t)lua_tointeger(L, 2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_on_arrival);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_view);
    lua_sched_push_req_reg(L, s, idx);
    lua_call(L, 2, 1);
    return 1;
}

static void lua_sched_on_arrival(void *ctx, Engine *eng, uint32_t idx)
{
    LuaSched *s = ctx;
    lua_State *L = s->plug.L;
    if (s->plug.failed) return;
    lua_sched_enter(s, eng, 1);
    char when[1300];
    lua_pushcfunction(L, lua_sched_arrival_p);
    lua_pushlightuserdata(L, s);
    lua_pushinteger(L, idx);
    if (lua_plugin_call(&s->plug, 2, NULL) < 0) {
        lua_plugin_prefix(&s->plug, NULL, "%s", lua_sched_when(s, "on_arrival", idx, when, sizeof when));
        s->active = 0;
        return;
    }
    int t = lua_type(L, -1);
    if (t == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "reject")) {
        if (eng_req(eng, idx)->state == REQ_QUEUED) eng_reject(eng, idx, REJECT_ADMISSION);
    } else if (!(t == LUA_TNIL || (t == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "keep")))) {
        lua_plugin_error(&s->plug, NULL, "%s: on_arrival returned %s%s%s; expected nothing, \"keep\" or \"reject\"",
                         lua_sched_when(s, "on_arrival", idx, when, sizeof when),
                         t == LUA_TSTRING ? "\"" : "a ", t == LUA_TSTRING ? lua_tostring(L, -1) : lua_typename(L, t),
                         t == LUA_TSTRING ? "\"" : "");
    }
    lua_pop(L, 1);
    s->active = 0;
}

static void lua_sched_destroy(void *ctx)
{
    LuaSched *s = ctx;
    if (!s) return;
    lua_plugin_close(&s->plug);
    free(s->scratch);
    free(s);
}

/* ------------------------------------------------------------ creation */

void lua_sched_defaults(LuaSchedConfig *c)
{
    *c = (LuaSchedConfig){.script = NULL, .args = NULL, .max_running = 256, .token_budget = 0,
                          .max_instructions = LUA_SANDBOX_POLICY_INSTRUCTIONS,
                          .max_memory_bytes = LUA_SANDBOX_POLICY_MEMORY, .seed = 1};
}

/* Reads a function field of the module table at -1 into a registry ref
 * (raw access: the script's table may carry metamethods).  On a missing or
 * non-function value, pushes an error message and returns LUA_REFNIL. */
static int lua_sched_field_ref(lua_State *L, const char *key, int required)
{
    lua_pushstring(L, key);
    int t = lua_rawget(L, -2);
    if (t == LUA_TNIL && !required) {
        lua_pop(L, 1);
        return LUA_NOREF;
    }
    if (t != LUA_TFUNCTION) {
        lua_pop(L, 1);
        lua_pushfstring(L, "the table the script returns has %s for '%s'; expected a function %s(v%s)",
                        t == LUA_TNIL ? "nothing" : lua_typename(L, t), key, key,
                        strcmp(key, "on_arrival") ? "" : ", r");
        return LUA_REFNIL;
    }
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Builds the view, runs the script's chunk with the args table as `...`
 * and keeps its functions.  Protected, with the LuaSched at 1; returns an
 * error message, or nothing when all is well. */
static int lua_sched_init_p(lua_State *L)
{
    LuaSched *s = lua_touserdata(L, 1);
    lua_settop(L, 1);
    lua_sched_build_view(L);
    lua_settop(L, 1);
    if (lua_plugin_run_script(L, &s->plug)) return 1; /* the syntax error */
    if (lua_type(L, -1) == LUA_TTABLE) {
        if ((s->ref_schedule = lua_sched_field_ref(L, "schedule", 1)) == LUA_REFNIL) return 1;
        if ((s->ref_on_arrival = lua_sched_field_ref(L, "on_arrival", 0)) == LUA_REFNIL) return 1;
        lua_pop(L, 1);
    } else {
        if (lua_plugin_entry(L, "schedule", "(v)")) return 1;
        s->ref_schedule = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_schedule);
    s->line_schedule = lua_plugin_line(L, -1);
    return 0;
}

/* The keys c shares with every Lua policy. */
static LuaPluginConfig lua_sched_plugin_config(const LuaSchedConfig *c)
{
    return (LuaPluginConfig){.script = c->script, .args = c->args, .max_instructions = c->max_instructions,
                             .max_memory_bytes = c->max_memory_bytes, .seed = c->seed};
}

int lua_sched_create(const LuaSchedConfig *c, Scheduler *out, Err *e)
{
    if (!c->script || !*c->script) return err_set(e, "lua scheduler: no script given");
    if (c->max_running < 1) return err_set(e, "lua scheduler %s: max_running must be >= 1", c->script);
    LuaSched *s = xcalloc(1, sizeof *s);
    s->cfg = *c;
    s->cfg.script = s->plug.path;
    s->cfg.args = NULL; /* the caller's tree: not kept */
    s->ref_schedule = s->ref_on_arrival = s->ref_view = s->ref_cache = s->ref_reqmt = LUA_NOREF;
    LuaPluginConfig pc = lua_sched_plugin_config(c);
    if (lua_plugin_open(&s->plug, "lua scheduler", &pc, lua_sched_init_p, s, e) < 0) {
        free(s);
        return -1;
    }
    snprintf(s->name, sizeof s->name, "lua:%s", s->plug.path);
    *out = (Scheduler){.name = s->name, .ctx = s, .schedule = lua_sched_schedule,
                       .on_arrival = s->ref_on_arrival != LUA_NOREF ? lua_sched_on_arrival : NULL,
                       .destroy = lua_sched_destroy};
    return 0;
}

int lua_sched_is_lua(const cJSON *cfg)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(cfg, "kind");
    return cJSON_IsString(k) && !strcmp(k->valuestring, "lua");
}

/* Checks a scheduler object and fills c (c->script points into path):
 * the keys of every Lua policy (lua_plugin.h) and max_running and
 * token_budget between script and max_instructions. */
static int lua_sched_parse(const cJSON *cfg, const char *where, const char *base_dir, LuaSchedConfig *c,
                           char *path, size_t n, Err *e)
{
    static const char *const keys[] = {"kind", "script", "args", "max_running", "token_budget", "max_instructions",
                                       "max_memory_mib", "seed", NULL};
    const char *script = NULL;
    if (lua_plugin_parse_head(cfg, where, keys, NULL, &script, e) < 0) return -1;
    lua_sched_defaults(c);
    int64_t mr = c->max_running, tb = 0;
    if (jsonio_int(cfg, "max_running", where, 0, 1, 1 << 20, &mr, e) < 0) return -1;
    if (jsonio_int(cfg, "token_budget", where, 0, 1, 1 << 24, &tb, e) < 0) return -1;
    LuaPluginConfig pc = lua_sched_plugin_config(c);
    if (lua_plugin_parse_tail(cfg, where, base_dir, script, &pc, path, n, e) < 0) return -1;
    *c = (LuaSchedConfig){.script = pc.script, .args = pc.args, .max_running = (uint32_t)mr,
                          .token_budget = (uint32_t)tb, .max_instructions = pc.max_instructions,
                          .max_memory_bytes = pc.max_memory_bytes, .seed = pc.seed};
    return 0;
}

int lua_sched_validate(const cJSON *cfg, const char *where, const char *base_dir, Err *e)
{
    LuaSchedConfig c;
    char path[LUA_PLUGIN_PATH_MAX];
    return lua_sched_parse(cfg, where, base_dir, &c, path, sizeof path, e);
}

int lua_sched_new(const cJSON *cfg, const char *where, const char *base_dir, Scheduler *out, Err *e)
{
    LuaSchedConfig c;
    char path[LUA_PLUGIN_PATH_MAX];
    if (lua_sched_parse(cfg, where, base_dir, &c, path, sizeof path, e) < 0) return -1;
    return lua_sched_create(&c, out, e);
}
