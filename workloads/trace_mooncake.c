/*
 * trace_mooncake.c -- lines of a Mooncake trace (kvcache-ai/Mooncake,
 * FAST'25 release):
 *
 *   {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}
 *
 * timestamp: ms from the trace's start; hash_ids: one id per 512-token
 * block of the prompt, equal ids meaning an equal prefix up to that block
 * (the prefix cache's food).  Keys beyond these four are ignored: the format
 * is someone else's and may grow.  A line that does not parse (a truncated
 * line) names the column where parsing stopped.  The state is the current
 * line's JSON tree (freed on the next line) and the hash id buffer.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "trace_fmt.h"
#include "trace_text.h"

typedef struct MooncakeState {
    cJSON *cur;                 /* the current line's tree */
    TraceIdBuf ids;
} MooncakeState;

static int get_int(const cJSON *o, const char *key, int64_t max, int64_t *out, Err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return err_set(e, "missing key \"%s\"", key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > (double)max) {
        char *s = cJSON_PrintUnformatted(v);
        err_set(e, "%s: got %s, expected an integer in [0, %lld]", key, s ? s : "?", (long long)max);
        cJSON_free(s);
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int mooncake_parse(void *st, char *line, TraceRecord *rec, Err *e)
{
    MooncakeState *ms = st;
    cJSON_Delete(ms->cur);
    const char *end = NULL;
    ms->cur = cJSON_ParseWithOpts(line, &end, 1);
    if (!ms->cur) {
        char ex[96];
        long col = end ? (long)(end - line) + 1 : 1;
        return err_set(e, "malformed JSON at column %ld of %zu (a truncated line?): %s", col, strlen(line),
                       trace_text_excerpt(line, ex, sizeof ex));
    }
    if (!cJSON_IsObject(ms->cur)) return err_set(e, "expected a JSON object per line");
    if (jsonio_check_duplicates(ms->cur, "", e) < 0) return -1;
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(ms->cur, "timestamp");
    if (!ts) return err_set(e, "missing key \"timestamp\"");
    if (!cJSON_IsNumber(ts) || !(ts->valuedouble >= 0) || ts->valuedouble > 1e12) {
        char *s = cJSON_PrintUnformatted(ts);
        err_set(e, "timestamp: got %s, expected a number of ms in [0, 1e12]", s ? s : "?");
        cJSON_free(s);
        return -1;
    }
    rec->t_ns = llround(ts->valuedouble * 1e6);
    if (get_int(ms->cur, "input_length", TRACE_LEN_MAX, &rec->prompt_tokens, e) < 0) return -1;
    if (get_int(ms->cur, "output_length", TRACE_LEN_MAX, &rec->output_tokens, e) < 0) return -1;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(ms->cur, "hash_ids");
    if (!h) return 1;
    if (!cJSON_IsArray(h)) return err_set(e, "hash_ids: expected an array of integers");
    uint32_t n = (uint32_t)cJSON_GetArraySize(h);
    TraceIdBuf *b = &ms->ids;
    if (n > b->hash_cap) {
        b->hash_cap = n > 2 * b->hash_cap ? n : 2 * b->hash_cap;
        b->hash = xrealloc(b->hash, b->hash_cap * sizeof *b->hash);
    }
    uint32_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, h) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble != floor(it->valuedouble) ||
            it->valuedouble > 9007199254740992.0)
            return err_set(e, "hash_ids[%u]: expected an integer in [0, 2^53]", k);
        b->hash[k++] = (uint64_t)it->valuedouble;
    }
    rec->hash_ids = b->hash;
    rec->n_hash_ids = n;
    rec->hash_block_tokens = 512;
    return 1;
}

/* The first line of a Mooncake trace names its keys. */
static int mooncake_sniff(const char *first_line) { return strstr(first_line, "\"input_length\"") != NULL; }

static void *mooncake_state_new(const char *path)
{
    (void)path;
    return xcalloc(1, sizeof(MooncakeState));
}

static void mooncake_state_free(void *st)
{
    MooncakeState *ms = st;
    cJSON_Delete(ms->cur);
    trace_record_idbuf_free(&ms->ids);
    free(ms);
}

static const char *const mooncake_exts[] = {"jsonl", NULL};

const TraceFormatOps trace_fmt_mooncake = {
    .name = "mooncake",
    .exts = mooncake_exts,
    .sniff = mooncake_sniff,
    .sorted = 1,
    .state_new = mooncake_state_new,
    .state_free = mooncake_state_free,
    .parse = mooncake_parse,
};
