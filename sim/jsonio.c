/*
 * jsonio.c -- cJSON reading with key paths, and stable number output.
 *
 * Owns: every error message about a JSON value.  A message names where the
 * value is (file and key path), the value as JSON and what was expected:
 *
 *   s.json: workload.requests[3].prompt_tokens: got -5, expected an integer >= 1
 *
 * Key paths: `where` is "file" for a file's top-level object and
 * "file: a.b[3]" below it.  jsonio_path therefore joins with ": " when
 * `where` has no ": " yet (it is still a bare file name) and with "."
 * afterwards; an empty `where` gives the key alone.
 *
 * Lookups are always case-sensitive (cJSON_GetObjectItem is not).  JSON
 * null is not treated as "absent": an optional key is either missing or
 * holds a valid value.
 */
#include "jsonio.h"
#include "outfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest rendering of a bad value inside a message. */
#define JSONIO_REPR_MAX 80
/* Significant digits kept by jsonio_add_num. */
#define JSONIO_SIG_DIGITS 12

/* Renders v as compact JSON into buf, cut with "..." when long. */
static const char *jsonio_repr(const cJSON *v, char *buf, size_t n)
{
    if (!v) {
        snprintf(buf, n, "(nothing)");
        return buf;
    }
    char *s = cJSON_PrintUnformatted(v);
    if (!s) {
        snprintf(buf, n, "(unprintable)");
        return buf;
    }
    size_t len = strlen(s);
    if (len < n) {
        memcpy(buf, s, len + 1);
    } else if (n > 4) {
        memcpy(buf, s, n - 4);
        memcpy(buf + n - 4, "...", 4);
    } else if (n > 0) {
        buf[0] = '\0';
    }
    cJSON_free(s);
    return buf;
}

/* "<where>.<key>: got <v>, expected <what>" */
static int jsonio_bad(const cJSON *v, const char *where, const char *key, const char *what,
                      Err *e)
{
    char path[512], repr[JSONIO_REPR_MAX];
    jsonio_path(path, sizeof path, where, key);
    return err_set(e, "%s: got %s, expected %s", path, jsonio_repr(v, repr, sizeof repr), what);
}

/* ------------------------------------------------------------------ */
/* Paths */

const char *jsonio_path(char *buf, size_t n, const char *where, const char *key)
{
    if (n == 0) return buf;
    if (!where) where = "";
    if (!key) key = "";
    if (!*where)
        snprintf(buf, n, "%s", key);
    else if (!*key)
        snprintf(buf, n, "%s", where);
    else if (!strstr(where, ": "))
        snprintf(buf, n, "%s: %s", where, key);
    else
        snprintf(buf, n, "%s.%s", where, key);
    return buf;
}

const char *jsonio_index(char *buf, size_t n, const char *where, int i)
{
    if (n == 0) return buf;
    if (!where || !*where)
        snprintf(buf, n, "[%d]", i);
    else if (!strstr(where, ": "))
        snprintf(buf, n, "%s: [%d]", where, i);
    else
        snprintf(buf, n, "%s[%d]", where, i);
    return buf;
}

/* ------------------------------------------------------------------ */
/* Parsing */

cJSON *jsonio_parse(const char *text, const char *name, Err *e)
{
    if (!name) name = "(text)";
    if (!text) {
        err_set(e, "%s: no text to parse", name);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (root) return root;

    /* cJSON points at (or just past) the offending byte; turn the offset
     * into a 1-based line and column so that an editor can jump there. */
    const char *at = end ? end : cJSON_GetErrorPtr();
    size_t len = strlen(text);
    size_t off = (at && at >= text && at <= text + len) ? (size_t)(at - text) : 0;
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    /* 23 bytes of the rest of the line, as valid UTF-8 (issue 15) */
    char near[48];
    size_t k = 0;
    while (off + k < len && k < 23 && text[off + k] != '\n') k++;
    text_excerpt(text + off, k, near, sizeof near);
    if (k == 0)
        err_set(e, "%s: line %d, column %d: malformed JSON (unexpected end of input)", name,
                line, col);
    else
        err_set(e, "%s: line %d, column %d: malformed JSON near '%s'", name, line, col, near);
    return NULL;
}

cJSON *jsonio_parse_file(const char *path, Err *e)
{
    char *text = read_text_file(path, NULL, e);
    if (!text) return NULL;
    cJSON *root = jsonio_parse(text, path, e);
    free(text);
    return root;
}

/* ------------------------------------------------------------------ */
/* A file's object read a piece at a time (jsonio_stream_array) */

typedef struct JsStream {
    const char *path, *key;
    JsonioEach each;
    void *ctx;
    FILE *rest;                 /* everything but the array's elements */
    char *elem;                 /* the element being read */
    size_t elem_len, elem_cap;
    uint64_t n_elems;
    int depth, in_str, esc;
    /* the top level: a key expected (after '{' or ','), its raw text,
     * whether it names the array; a value expected (after ':') */
    int want_key, in_key, key_hit, want_value, done_key;
    char kbuf[64];
    size_t klen;
    int in_array, need_elem;    /* in the array; an element is due (after ',') */
    int syntax;                 /* the error is the file's syntax (not each's) */
} JsStream;

static void js_elem_put(JsStream *j, char c)
{
    if (j->elem_len + 2 > j->elem_cap) {
        j->elem_cap = j->elem_cap ? 2 * j->elem_cap : 4096;
        j->elem = xrealloc(j->elem, j->elem_cap);
    }
    j->elem[j->elem_len++] = c;
}

/* The element read so far, parsed and handed on. */
static int js_elem_end(JsStream *j, Err *e)
{
    size_t a = 0;
    while (a < j->elem_len && strchr(" \t\r\n", j->elem[a])) a++;
    if (a == j->elem_len) {
        if (!j->need_elem) return 0;
        j->syntax = 1;
        return err_set(e, "%s: %s[%llu]: expected a value", j->path, j->key, (unsigned long long)j->n_elems);
    }
    j->elem[j->elem_len] = '\0';
    char name[600];
    snprintf(name, sizeof name, "%s: %s[%llu]", j->path, j->key, (unsigned long long)j->n_elems);
    cJSON *x = jsonio_parse(j->elem, name, e);
    if (!x) {
        j->syntax = 1;
        return -1;
    }
    int rc = j->each(j->ctx, x, j->n_elems++, e);
    cJSON_Delete(x);
    j->elem_len = 0;
    return rc;
}

/* One byte of the file. */
static int js_byte(JsStream *j, char c, Err *e)
{
    if (j->in_array) {
        if (j->in_str) {
            js_elem_put(j, c);
            if (j->esc) j->esc = 0;
            else if (c == '\\') j->esc = 1;
            else if (c == '"') j->in_str = 0;
            return 0;
        }
        if (c == '"') {
            j->in_str = 1;
        } else if (c == '[' || c == '{') {
            j->depth++;
        } else if ((c == ']' || c == '}') && j->depth > 2) {
            j->depth--;
        } else if (j->depth == 2 && (c == ']' || c == ',')) {
            /* the array's own comma or end (depth 2: inside it) */
            if (c == ',') j->need_elem = 1; /* an element before it */
            int rc = js_elem_end(j, e);
            j->need_elem = c == ',';
            if (c == ']') {
                j->in_array = 0;
                j->depth = 1;
            }
            return rc;
        }
        js_elem_put(j, c);
        return 0;
    }
    if (j->in_str) {
        fputc(c, j->rest);
        if (j->esc) j->esc = 0;
        else if (c == '\\') j->esc = 1;
        else if (c == '"') {
            j->in_str = 0;
            if (j->in_key) {
                j->in_key = 0;
                j->key_hit = !j->done_key && j->klen == strlen(j->key) && !memcmp(j->kbuf, j->key, j->klen);
            }
        } else if (j->in_key && j->klen < sizeof j->kbuf) {
            j->kbuf[j->klen++] = c;
        }
        return 0;
    }
    if (j->depth == 1 && j->want_value && !strchr(" \t\r\n", c)) {
        j->want_value = 0;
        if (j->key_hit && c == '[') {
            /* the array: its elements one at a time, "[]" in the rest */
            fputs("[]", j->rest);
            j->in_array = 1;
            j->done_key = 1;
            j->need_elem = 0;
            j->depth = 2;
            j->elem_len = 0;
            return 0;
        }
    }
    fputc(c, j->rest);
    if (c == '"') {
        j->in_str = 1;
        if (j->depth == 1 && j->want_key) {
            j->want_key = 0;
            j->in_key = 1;
            j->klen = 0;
        }
    } else if (c == '{' || c == '[') {
        j->depth++;
        if (j->depth == 1) j->want_key = c == '{';
    } else if (c == '}' || c == ']') {
        j->depth--;
    } else if (j->depth == 1 && c == ',') {
        j->want_key = 1;
    } else if (j->depth == 1 && c == ':') {
        j->want_value = 1;
    }
    return 0;
}

cJSON *jsonio_stream_array(const char *path, const char *key, JsonioEach each, void *ctx, Err *e)
{
    FILE *f = common_open_input(path, "rb", e);
    if (!f) return NULL;
    JsStream j = {.path = path, .key = key, .each = each, .ctx = ctx};
    char *rest = NULL;
    size_t rest_len = 0, max = common_max_file_bytes(), off = 0;
    j.rest = open_memstream(&rest, &rest_len);
    int rc = j.rest ? 0 : err_set(e, "%s: out of memory", path);
    static char buf[65536];
    size_t got;
    while (rc == 0 && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        /* as read_text_file: a NUL is not text, and the cap holds */
        const char *nul = memchr(buf, '\0', got);
        if (nul) {
            rc = err_set(e, "%s: a NUL byte at offset %zu; expected a text file", path, off + (size_t)(nul - buf));
            break;
        }
        if ((off += got) > max) {
            rc = err_set(e, "%s: larger than %zu bytes (the file-size cap; %s)", path, max, COMMON_FILE_CAP_HINT);
            break;
        }
        for (size_t k = 0; rc == 0 && k < got; k++) rc = js_byte(&j, buf[k], e);
    }
    if (rc == 0 && ferror(f)) rc = err_set(e, "%s: read error", path);
    fclose(f);
    if (rc == 0 && j.in_array) {
        j.syntax = 1;
        rc = err_set(e, "%s: not valid JSON: the file ends inside its \"%s\" array", path, key);
    }
    cJSON *root = NULL;
    if (j.rest) fclose(j.rest);
    if (rc == 0 && !(root = jsonio_parse(rest ? rest : "", path, e))) j.syntax = 1;
    free(rest);
    free(j.elem);
    if (j.syntax) {
        /* the message jsonio_parse_file gives, its line and column the
         * file's (the file is read whole only now, to say where it is bad) */
        cJSON *whole = jsonio_parse_file(path, e);
        if (whole) {
            cJSON_Delete(whole); /* NEVER: the pieces did not parse */
            err_set(e, "%s: not valid JSON", path);
        }
    }
    return root;
}

/* ------------------------------------------------------------------ */
/* Shape checks */

int jsonio_expect_object(const cJSON *v, const char *where, Err *e)
{
    if (cJSON_IsObject(v)) return 0;
    char repr[JSONIO_REPR_MAX];
    return err_set(e, "%s: got %s, expected an object", where, jsonio_repr(v, repr, sizeof repr));
}

int jsonio_expect_array(const cJSON *v, const char *where, Err *e)
{
    if (cJSON_IsArray(v)) return 0;
    char repr[JSONIO_REPR_MAX];
    return err_set(e, "%s: got %s, expected an array", where, jsonio_repr(v, repr, sizeof repr));
}

static int jsonio_allowed(const char *key, const char *const *allowed)
{
    for (const char *const *a = allowed; a && *a; a++)
        if (strcmp(*a, key) == 0) return 1;
    return 0;
}

/* cJSON keeps duplicates and lookups see only the first; a second copy
 * would be silently ignored, so readers refuse it: 1 when a member before
 * `it` has its key. */
static int jsonio_dup_before(const cJSON *obj, const cJSON *it)
{
    for (const cJSON *prev = obj->child; prev != it; prev = prev->next)
        if (prev->string && it->string && strcmp(prev->string, it->string) == 0) return 1;
    return 0;
}

int jsonio_check_keys(const cJSON *obj, const char *where, const char *const *allowed, Err *e)
{
    if (jsonio_expect_object(obj, where, e)) return -1;
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *key = it->string ? it->string : "";
        if (!jsonio_allowed(key, allowed)) {
            char list[600];
            size_t used = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; a && *a; a++) {
                int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *a);
                if (w < 0 || (size_t)w >= sizeof list - used) break;
                used += (size_t)w;
            }
            return err_set(e, "%s: unknown key \"%s\"; allowed: %s", where, key,
                           used ? list : "(none)");
        }
        if (jsonio_dup_before(obj, it)) return err_set(e, "%s: duplicate key \"%s\"", where, key);
    }
    return 0;
}

int jsonio_check_duplicates(const cJSON *obj, const char *where, Err *e)
{
    for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next)
        if (it->string && jsonio_dup_before(obj, it))
            return *where ? err_set(e, "%s: duplicate key \"%s\"", where, it->string)
                          : err_set(e, "duplicate key \"%s\"", it->string);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Getters */

/* Common head of every getter: 1 = found (*v set), 0 = absent and
 * optional, -1 = error (missing and required, or obj not an object). */
static int jsonio_lookup(const cJSON *obj, const char *key, const char *where, int required,
                         const cJSON **v, Err *e)
{
    *v = NULL;
    if (jsonio_expect_object(obj, where, e)) return -1;
    *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (*v) return 1;
    if (required) return err_set(e, "%s: missing key \"%s\"", where, key);
    return 0;
}

static void jsonio_int_range(char *buf, size_t n, int64_t min, int64_t max)
{
    if (min == INT64_MIN && max == INT64_MAX)
        snprintf(buf, n, "an integer");
    else if (max == INT64_MAX)
        snprintf(buf, n, "an integer >= %lld", (long long)min);
    else if (min == INT64_MIN)
        snprintf(buf, n, "an integer <= %lld", (long long)max);
    else
        snprintf(buf, n, "an integer in [%lld, %lld]", (long long)min, (long long)max);
}

int jsonio_int(const cJSON *obj, const char *key, const char *where, int required,
               int64_t min, int64_t max, int64_t *out, Err *e)
{
    const cJSON *v;
    int r = jsonio_lookup(obj, key, where, required, &v, e);
    if (r <= 0) return r;
    char what[96];
    jsonio_int_range(what, sizeof what, min, max);
    if (!cJSON_IsNumber(v)) return jsonio_bad(v, where, key, what, e);
    double d = v->valuedouble;
    /* 2^63 is exactly representable; anything at or beyond it cannot be
     * converted to int64_t without undefined behaviour. */
    if (!isfinite(d) || d != floor(d) || d >= 9223372036854775808.0 ||
        d < -9223372036854775808.0)
        return jsonio_bad(v, where, key, what, e);
    int64_t i = (int64_t)d;
    if (i < min || i > max) return jsonio_bad(v, where, key, what, e);
    *out = i;
    return 1;
}

/* Shortest %g form that reads back exactly: 1e+09, 0.5, 4096. */
static const char *jsonio_short(char *buf, size_t n, double v)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

static void jsonio_num_range(char *buf, size_t n, double min, double max)
{
    int lo = isfinite(min) && min > -1e300, hi = isfinite(max) && max < 1e300;
    char a[32], b[32];
    jsonio_short(a, sizeof a, min);
    jsonio_short(b, sizeof b, max);
    if (!lo && !hi)
        snprintf(buf, n, "a number");
    else if (!hi)
        snprintf(buf, n, "a number >= %s", a);
    else if (!lo)
        snprintf(buf, n, "a number <= %s", b);
    else
        snprintf(buf, n, "a number in [%s, %s]", a, b);
}

int jsonio_num(const cJSON *obj, const char *key, const char *where, int required,
               double min, double max, double *out, Err *e)
{
    const cJSON *v;
    int r = jsonio_lookup(obj, key, where, required, &v, e);
    if (r <= 0) return r;
    char what[128];
    jsonio_num_range(what, sizeof what, min, max);
    if (!cJSON_IsNumber(v)) return jsonio_bad(v, where, key, what, e);
    double d = v->valuedouble;
    if (!isfinite(d) || d < min || d > max) return jsonio_bad(v, where, key, what, e);
    *out = d;
    return 1;
}

int jsonio_bool(const cJSON *obj, const char *key, const char *where, int required, int *out,
                Err *e)
{
    const cJSON *v;
    int r = jsonio_lookup(obj, key, where, required, &v, e);
    if (r <= 0) return r;
    if (!cJSON_IsBool(v)) return jsonio_bad(v, where, key, "true or false", e);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 1;
}

int jsonio_str(const cJSON *obj, const char *key, const char *where, int required,
               const char **out, Err *e)
{
    const cJSON *v;
    int r = jsonio_lookup(obj, key, where, required, &v, e);
    if (r <= 0) return r;
    if (!cJSON_IsString(v) || !v->valuestring) return jsonio_bad(v, where, key, "a string", e);
    *out = v->valuestring;
    return 1;
}

int jsonio_enum(const cJSON *obj, const char *key, const char *where, int required,
                const char *const *choices, int *out, Err *e)
{
    const cJSON *v;
    int r = jsonio_lookup(obj, key, where, required, &v, e);
    if (r <= 0) return r;
    char what[600];
    size_t used = (size_t)snprintf(what, sizeof what, "one of ");
    for (int i = 0; choices && choices[i]; i++) {
        int w = snprintf(what + used, sizeof what - used, "%s\"%s\"", i ? ", " : "", choices[i]);
        if (w < 0 || (size_t)w >= sizeof what - used) break;
        used += (size_t)w;
    }
    if (cJSON_IsString(v) && v->valuestring) {
        for (int i = 0; choices && choices[i]; i++) {
            if (strcmp(choices[i], v->valuestring) == 0) {
                *out = i;
                return 1;
            }
        }
    }
    return jsonio_bad(v, where, key, what, e);
}

/* ------------------------------------------------------------------ */
/* Output */

int jsonio_write_file(const cJSON *root, const char *path, int pretty, Err *e)
{
    char *s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    if (!s) return err_set(e, "%s: cannot render JSON", path);
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) {
        cJSON_free(s);
        return -1;
    }
    fputs(s, f);
    fputc('\n', f);
    cJSON_free(s);
    return outfile_commit(&o, e);
}

cJSON *jsonio_add_num(cJSON *obj, const char *key, double v)
{
    /* Round through text: the shortest way to drop binary noise below the
     * 12th digit that gives the same bytes on every platform with a
     * correctly rounding printf/strtod.  cJSON writes non-finite numbers
     * as null, which is what a report should show for them. */
    if (isfinite(v)) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.*g", JSONIO_SIG_DIGITS, v);
        v = strtod(buf, NULL);
        if (v == 0.0) v = 0.0; /* no "-0" in reports */
    }
    return cJSON_AddNumberToObject(obj, key, v);
}
