/*
 * trace_json.c -- our own request-list format, one request object:
 *
 *   {"id": "r0", "arrival_ms": 0, "prompt_tokens": 2048, "output_tokens": 8,
 *    "max_output_tokens": 256, "tenant": "acme", "class": "chat",
 *    "session": "s1", "shared_prefix_tokens": 0, "priority": 1,
 *    "deadline_ms": 5000, "correct": true,
 *    "token_ids": [...] | "hash_ids": [...], "hash_block_tokens": 512}
 *   {"id": "r1", "after": "r0", "think_ms": 1000, ...}    (triggered)
 *
 * Read from a scenario's inline list or from a file a line at a time (the
 * layout `servesim workload --out` writes: a "{"requests": [" line, one
 * object per line with a trailing comma, a "]}" line; JSON lines work too).
 * Every value is checked with its key path; unknown keys are errors.  A
 * pretty-printed document (a lone "{" or "[" then "{" line) cannot be read
 * a line at a time: it is parsed whole and its requests handed out one by
 * one (next_doc).  The state is the current line's tree, the id buffers and
 * the whole document when there is one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "trace_fmt.h"
#include "trace_json.h"
#include "trace_text.h"

typedef struct JsonState {
    char path[1024];
    cJSON *cur;                 /* the current line's tree (freed on the next line) */
    TraceIdBuf ids;
    /* a whole document (pretty-printed files) */
    cJSON *doc;
    const cJSON *doc_item;      /* the next request object */
    int doc_index;
    char where[1200];           /* scratch for key paths */
    /* line by line: the line that opened a request list ("[" or
     * "{"requests": [") until its "]" / "]}" closes it, so that a file cut
     * before its end is refused, not read as a shorter list */
    unsigned long long list_open_line;
    int list_closed;
    unsigned long long lines;   /* non-blank lines seen */
} JsonState;

/* Copies an array of integers in [0, max] into a reusable buffer. */
static int get_ids(const cJSON *arr, const char *where, const char *key, double max, int wide, TraceIdBuf *b,
                   uint32_t *n_out, Err *e)
{
    char p[1300];
    jsonio_path(p, sizeof p, where, key);
    if (jsonio_expect_array(arr, p, e) < 0) return -1;
    uint32_t n = (uint32_t)cJSON_GetArraySize(arr);
    if (n > TRACE_LEN_MAX) return err_set(e, "%s: %u ids, expected at most %d", p, n, TRACE_LEN_MAX);
    uint32_t *cap = wide ? &b->hash_cap : &b->tok_cap;
    if (n > *cap) {
        *cap = n > 2 * *cap ? n : 2 * *cap;
        if (wide) b->hash = xrealloc(b->hash, *cap * sizeof *b->hash);
        else b->tok = xrealloc(b->tok, *cap * sizeof *b->tok);
    }
    uint32_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > max ||
            it->valuedouble != floor(it->valuedouble))
            return err_set(e, "%s[%u]: expected an integer in [0, %.0f]", p, k, max);
        if (wide) b->hash[k] = (uint64_t)it->valuedouble;
        else b->tok[k] = (uint32_t)it->valuedouble;
        k++;
    }
    *n_out = n;
    return 0;
}

int trace_json_record(const cJSON *obj, const char *where, TraceIdBuf *buf, TraceRecord *rec, Err *e)
{
    static const char *const keys[] = {"id", "arrival_ms", "after", "think_ms", "prompt_tokens", "output_tokens",
                                       "max_output_tokens", "tenant", "class", "session", "shared_prefix_tokens",
                                       "priority", "deadline_ms", "correct", "token_ids", "hash_ids",
                                       "hash_block_tokens", "n", "adapter", "cancel_after_ms", "tool_ms", NULL};
    if (jsonio_expect_object(obj, where, e) < 0 || jsonio_check_keys(obj, where, keys, e) < 0) return -1;
    if (jsonio_str(obj, "id", where, 0, &rec->id, e) < 0) return -1;
    if (jsonio_str(obj, "after", where, 0, &rec->after, e) < 0) return -1;
    int has_arrival = cJSON_GetObjectItemCaseSensitive(obj, "arrival_ms") != NULL;
    if (rec->after && has_arrival)
        return err_set(e, "%s: \"arrival_ms\" and \"after\" exclude each other (a request arrives at a time or "
                          "after another leaves)", where);
    if (!rec->after) {
        double ms = 0;
        if (cJSON_GetObjectItemCaseSensitive(obj, "think_ms"))
            return err_set(e, "%s: \"think_ms\" needs \"after\"", where);
        if (cJSON_GetObjectItemCaseSensitive(obj, "tool_ms"))
            return err_set(e, "%s: \"tool_ms\" needs \"after\" (the turn whose tool call it waits for)", where);
        if (jsonio_num(obj, "arrival_ms", where, 1, 0, 1e12, &ms, e) < 0) return -1;
        rec->t_ns = llround(ms * 1e6);
    } else {
        double think = 0;
        rec->has_arrival = 0;
        if (jsonio_num(obj, "think_ms", where, 0, 0, 1e12, &think, e) < 0) return -1;
        /* an agent's turn waits for a tool call: the same delay, named so */
        if (cJSON_GetObjectItemCaseSensitive(obj, "tool_ms")) {
            if (cJSON_GetObjectItemCaseSensitive(obj, "think_ms"))
                return err_set(e, "%s: \"think_ms\" and \"tool_ms\" exclude each other (both are the delay after "
                                  "the predecessor leaves)", where);
            if (jsonio_num(obj, "tool_ms", where, 1, 0, 1e12, &think, e) < 0) return -1;
        }
        rec->think_ns = llround(think * 1e6);
    }
    rec->token_ids = NULL;
    rec->hash_ids = NULL;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "token_ids"))) {
        if (get_ids(v, where, "token_ids", 4294967295.0, 0, buf, &rec->n_token_ids, e) < 0) return -1;
        rec->token_ids = buf->tok;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "hash_ids"))) {
        if (get_ids(v, where, "hash_ids", 9007199254740992.0, 1, buf, &rec->n_hash_ids, e) < 0) return -1;
        rec->hash_ids = buf->hash;
    }
    int64_t bt = 512;
    if (jsonio_int(obj, "hash_block_tokens", where, 0, 1, 1 << 20, &bt, e) < 0) return -1;
    rec->hash_block_tokens = (uint32_t)bt;
    int64_t p = -1;
    if (jsonio_int(obj, "prompt_tokens", where, !rec->token_ids && !rec->hash_ids, 1, TRACE_LEN_MAX, &p, e) < 0)
        return -1;
    if (rec->token_ids) {
        if (p >= 0 && p != rec->n_token_ids)
            return err_set(e, "%s.prompt_tokens: got %lld, but token_ids holds %u ids", where, (long long)p,
                           rec->n_token_ids);
        if (!rec->n_token_ids) return err_set(e, "%s.token_ids: empty; expected the prompt's ids", where);
        p = rec->n_token_ids;
    }
    if (rec->hash_ids) {
        if (p < 0) p = (int64_t)rec->n_hash_ids * bt;
        int64_t blocks = (p + bt - 1) / bt;
        if (blocks != rec->n_hash_ids)
            return err_set(e, "%s.hash_ids: got %u block hashes, expected ceil(%lld prompt tokens / %lld) = %lld",
                           where, rec->n_hash_ids, (long long)p, (long long)bt, (long long)blocks);
        if (p < 1) return err_set(e, "%s.hash_ids: empty; expected one hash per prompt block", where);
    }
    rec->prompt_tokens = p;
    if (jsonio_int(obj, "output_tokens", where, 1, 1, TRACE_LEN_MAX, &rec->output_tokens, e) < 0) return -1;
    if (jsonio_int(obj, "max_output_tokens", where, 0, 1, TRACE_LEN_MAX, &rec->max_output_tokens, e) < 0) return -1;
    if (rec->max_output_tokens && rec->max_output_tokens < rec->output_tokens)
        return err_set(e, "%s.max_output_tokens: got %lld, expected >= output_tokens (%lld)", where,
                       (long long)rec->max_output_tokens, (long long)rec->output_tokens);
    if (jsonio_str(obj, "tenant", where, 0, &rec->tenant, e) < 0) return -1;
    if (jsonio_str(obj, "class", where, 0, &rec->cls, e) < 0) return -1;
    if (jsonio_str(obj, "session", where, 0, &rec->session, e) < 0) return -1;
    int64_t sp = 0, prio = 0;
    if (jsonio_int(obj, "shared_prefix_tokens", where, 0, 0, TRACE_LEN_MAX, &sp, e) < 0) return -1;
    if (sp && !rec->session) return err_set(e, "%s: \"shared_prefix_tokens\" needs \"session\"", where);
    rec->shared_prefix_tokens = (uint32_t)sp;
    if (jsonio_int(obj, "priority", where, 0, -1000000, 1000000, &prio, e) < 0) return -1;
    rec->priority = (int32_t)prio;
    double dl = -1;
    if (jsonio_num(obj, "deadline_ms", where, 0, 1e-6, 1e12, &dl, e) < 0) return -1;
    rec->deadline_ns = dl > 0 ? llround(dl * 1e6) : -1;
    int correct = -1;
    if (jsonio_bool(obj, "correct", where, 0, &correct, e) < 0) return -1;
    rec->correct = (int8_t)correct;
    int64_t ad = 0;
    if (jsonio_int(obj, "adapter", where, 0, 0, 1000000, &ad, e) < 0) return -1;
    rec->adapter = (uint32_t)ad;
    int64_t ns = 1;
    if (jsonio_int(obj, "n", where, 0, 1, 64, &ns, e) < 0) return -1;
    rec->n_samples = (uint32_t)ns;
    double cancel_ms = 0;
    if (jsonio_num(obj, "cancel_after_ms", where, 0, 1e-6, 1e12, &cancel_ms, e) < 0) return -1;
    rec->cancel_after_ns = cancel_ms > 0 ? llround(cancel_ms * 1e6) : 0;
    if (cancel_ms > 0 && rec->cancel_after_ns < 1) rec->cancel_after_ns = 1;
    return 1;
}

/* Line layout: 1 = a record was parsed, 0 = the line is list punctuation
 * ("{"requests": [", "]}", ...), -1 = malformed. */
static int json_parse(void *st, char *line, TraceRecord *rec, Err *e)
{
    JsonState *js = st;
    while (*line == ' ' || *line == '\t') line++;
    size_t len = strlen(line);
    if (len && line[len - 1] == ',') line[--len] = '\0';
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = '\0';
    js->lines++;
    /* the list's punctuation: "[", "]", "]}", "{"requests": [" */
    if (!len) return 0;
    if (!strcmp(line, "[") || (line[0] == '{' && line[len - 1] == '[')) {
        if (js->list_open_line || js->lines > 1)
            return err_set(e, "a request list opens here (%s), but only the file's first line may open one",
                           line[0] == '[' ? "\"[\"" : "\"{\\\"requests\\\": [\"");
        js->list_open_line = rec->line;
        return 0;
    }
    if (!strcmp(line, "]") || !strcmp(line, "]}")) {
        if (!js->list_open_line || js->list_closed)
            return err_set(e, "\"%s\" closes a request list that was not opened", line);
        js->list_closed = 1;
        return 0;
    }
    if (js->list_closed) return err_set(e, "a request after the list's closing line; expected the end of the file");
    cJSON_Delete(js->cur);
    const char *end = NULL;
    js->cur = cJSON_ParseWithOpts(line, &end, 1);
    if (!js->cur) {
        char ex[96];
        long col = end ? (long)(end - line) + 1 : 1;
        return err_set(e, "malformed JSON at column %ld of %zu (a truncated line?): %s", col, len,
                       trace_text_excerpt(line, ex, sizeof ex));
    }
    char where[1100];
    snprintf(where, sizeof where, "%s:%llu", js->path, (unsigned long long)rec->line);
    Err le;
    if (trace_json_record(js->cur, where, &js->ids, rec, &le) < 0) {
        /* the reader prefixes "FILE:LINE: " itself */
        const char *msg = le.msg;
        size_t wl = strlen(where);
        if (!strncmp(msg, where, wl)) msg += wl;
        while (*msg == ':' || *msg == ' ' || *msg == '.') msg++;
        return err_set(e, "%s", msg);
    }
    return 1;
}

/* At the end of a line-by-line file: an opened list must be closed. */
static int json_finish(void *st, Err *e)
{
    JsonState *js = st;
    if (js->list_open_line && !js->list_closed)
        return err_set(e, "%s: the request list opened on line %llu is never closed (no \"]}\" or \"]\" line before "
                          "the end of the file: a truncated file?)", js->path, js->list_open_line);
    return 0;
}

/* Decides between a whole document and lines by the first lines: a lone
 * "{" (or "[" then "{") is a pretty-printed document, and so is a first
 * line that holds a whole list ({"requests": [...]} or [{...}] on one
 * line); otherwise one request per line. */
static int json_open(void *st, FILE *f, Err *e)
{
    JsonState *js = st;
    char *line = NULL;
    size_t cap = 0;
    int whole = 0;
    if (trace_text_peek_line(f, &line, &cap, 0)) {
        const char *t = trace_text_skip_blanks(line);
        size_t tl = strlen(t);
        while (tl && (t[tl - 1] == ' ' || t[tl - 1] == '\t' || t[tl - 1] == '\r' || t[tl - 1] == '\n')) tl--;
        whole = !strcmp(t, "{") || (t[0] == '[' && tl > 1) ||
                (t[0] == '{' && tl > 1 && t[tl - 1] != '[' && strstr(t, "\"requests\"") != NULL);
        if (!strcmp(t, "[") && trace_text_peek_line(f, &line, &cap, 1))
            whole = !strcmp(trace_text_skip_blanks(line), "{");
    }
    free(line);
    if (!whole) return 0;
    char *text = read_text_file(js->path, NULL, e);
    if (!text) return -1;
    js->doc = jsonio_parse(text, js->path, e);
    free(text);
    if (!js->doc) return -1;
    const cJSON *arr = js->doc;
    if (cJSON_IsObject(js->doc)) {
        static const char *const keys[] = {"requests", NULL};
        if (jsonio_check_keys(js->doc, js->path, keys, e) < 0) return -1;
        arr = cJSON_GetObjectItemCaseSensitive(js->doc, "requests");
        if (!arr) return err_set(e, "%s: missing key \"requests\"", js->path);
    }
    if (jsonio_expect_array(arr, cJSON_IsObject(js->doc) ? "requests" : js->path, e) < 0)
        return err_prefix(e, "%s", js->path);
    js->doc_item = arr->child;
    return 1;
}

static int json_next_doc(void *st, TraceRecord *rec, Err *e)
{
    JsonState *js = st;
    if (!js->doc_item) return 0;
    const cJSON *it = js->doc_item;
    js->doc_item = it->next;
    char base[1100];
    snprintf(base, sizeof base, "%s: requests", js->path);
    jsonio_index(js->where, sizeof js->where, base, js->doc_index++);
    return trace_json_record(it, js->where, &js->ids, rec, e) < 0 ? -1 : 1;
}

static void *json_state_new(const char *path)
{
    JsonState *js = xcalloc(1, sizeof *js);
    snprintf(js->path, sizeof js->path, "%s", path);
    return js;
}

static void json_state_free(void *st)
{
    JsonState *js = st;
    cJSON_Delete(js->cur);
    cJSON_Delete(js->doc);
    trace_record_idbuf_free(&js->ids);
    free(js);
}

static const char *const json_exts[] = {"json", "jsonl", NULL};

const TraceFormatOps trace_fmt_json = {
    .name = "json",
    .exts = json_exts,
    .state_new = json_state_new,
    .state_free = json_state_free,
    .open = json_open,
    .parse = json_parse,
    .next_doc = json_next_doc,
    .finish = json_finish,
};
