/*
 * test_jsonio.c -- key paths, getters and their messages, parse errors with
 * line and column, stable number output.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "jsonio.h"
#include "outfile.h"
#include "testhelp.h"

/* jsonio_stream_array: each element of one array member parsed alone, in
 * order (nested arrays, a "]" inside a string, escapes, scalars), the rest
 * a tree with an empty array in its place; a syntax error gives
 * jsonio_parse_file's own message (its line and column the file's). */
typedef struct StreamSeen {
    double sum;
    uint64_t n;
    int ordered;
} StreamSeen;

static int stream_each(void *ctx, const cJSON *x, uint64_t i, Err *e)
{
    (void)e;
    StreamSeen *s = ctx;
    s->ordered &= i == s->n;
    s->n++;
    const cJSON *v = cJSON_IsObject(x) ? cJSON_GetObjectItemCaseSensitive(x, "v") : x;
    if (cJSON_IsNumber(v)) s->sum += v->valuedouble;
    return 0;
}

static void test_jsonio_stream_array(void)
{
    char path[] = "/tmp/servesim-jstream-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    Err e = {0};
    CHECK(outfile_write(path, "{\"a\": [1, 2], \"req\": [ {\"v\": 1, \"x\": [1, {\"s\": \"]\\\"\"}]},\n"
                              "{\"v\": 2.5} , 4, {\"v\": null} ], \"b\": {\"req\": [9]}, \"req2\": []}", &e) == 0);
    StreamSeen seen = {.ordered = 1};
    cJSON *root = jsonio_stream_array(path, "req", stream_each, &seen, &e);
    CHECK(root != NULL);
    CHECK_INT(seen.n, 4);
    CHECK(seen.ordered && seen.sum == 7.5);
    char *txt = root ? cJSON_PrintUnformatted(root) : NULL;
    CHECK(txt && !strcmp(txt, "{\"a\":[1,2],\"req\":[],\"b\":{\"req\":[9]},\"req2\":[]}"));
    cJSON_free(txt);
    cJSON_Delete(root);
    /* a key that is not an array stays in the tree; none at all */
    CHECK(outfile_write(path, "{\"req\": {\"v\": 3}}", &e) == 0);
    seen = (StreamSeen){.ordered = 1};
    root = jsonio_stream_array(path, "req", stream_each, &seen, &e);
    CHECK(root && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "req")) && seen.n == 0);
    cJSON_Delete(root);
    /* syntax errors: jsonio_parse_file's messages */
    static const char *const bad[] = {"{\"req\": [1, ]}", "{\"req\": [1, {\"v\": 2}", "{\"req\": [1], \"x\": }",
                                      "{\"req\": [{\"v\": 1 2}]}"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        Err e1 = {0}, e2 = {0};
        CHECK(outfile_write(path, bad[k], &e1) == 0);
        CHECK(jsonio_stream_array(path, "req", stream_each, &seen, &e1) == NULL);
        CHECK(jsonio_parse_file(path, &e2) == NULL);
        CHECK(e1.msg[0] && !strcmp(e1.msg, e2.msg));
        if (strcmp(e1.msg, e2.msg)) fprintf(stderr, "  %s\n  %s\n", e1.msg, e2.msg);
    }
    unlink(path);
}

void suite_jsonio(void);

static void test_jsonio_paths(void)
{
    char b[64];
    CHECK(strcmp(jsonio_path(b, sizeof b, "s.json", "workload"), "s.json: workload") == 0);
    CHECK(strcmp(jsonio_path(b, sizeof b, "s.json: workload", "requests"),
                 "s.json: workload.requests") == 0);
    CHECK(strcmp(jsonio_index(b, sizeof b, "s.json: workload.requests", 3),
                 "s.json: workload.requests[3]") == 0);
    CHECK(strcmp(jsonio_path(b, sizeof b, "", "k"), "k") == 0);
    /* Truncation is safe and still NUL-terminated. */
    char tiny[8];
    jsonio_path(tiny, sizeof tiny, "s.json: a.very.long.path", "key");
    CHECK(strlen(tiny) == sizeof tiny - 1);
}

static void test_jsonio_parse_error_line_column(void)
{
    Err e = {0};
    const char *text = "{\n  \"a\": 1,\n  \"b\": ]\n}\n";
    cJSON *j = jsonio_parse(text, "s.json", &e);
    CHECK(j == NULL);
    CHECK_CONTAINS(e.msg, "s.json: line 3, column 8");
    CHECK_CONTAINS(e.msg, "malformed JSON");

    j = jsonio_parse("", "empty.json", &e);
    CHECK(j == NULL);
    CHECK_CONTAINS(e.msg, "empty.json: line 1, column 1: malformed JSON");

    /* Trailing garbage after a valid document is an error too. */
    j = jsonio_parse("{} x", "t.json", &e);
    CHECK(j == NULL);
    CHECK_CONTAINS(e.msg, "t.json: line 1, column 4");

    j = jsonio_parse(NULL, "n.json", &e);
    CHECK(j == NULL);
    CHECK_CONTAINS(e.msg, "n.json");

    j = jsonio_parse("{\"a\": [1, 2]}", "ok.json", &e);
    CHECK(j != NULL);
    cJSON_Delete(j);
}

static void test_jsonio_int(void)
{
    Err e = {0};
    cJSON *j = jsonio_parse("{\"prompt_tokens\": -5, \"half\": 2.5, \"s\": \"x\", \"big\": 1e30,"
                            " \"ok\": 7, \"neg\": -9223372036854775808}",
                            "s.json", &e);
    CHECK(j != NULL);
    if (!j) return;
    const char *where = "s.json: workload.requests[3]";
    int64_t v = 42;
    CHECK_INT(jsonio_int(j, "prompt_tokens", where, 1, 1, INT64_MAX, &v, &e), -1);
    CHECK(strcmp(e.msg, "s.json: workload.requests[3].prompt_tokens: got -5, expected an "
                        "integer >= 1") == 0);
    CHECK_INT(v, 42);
    CHECK_INT(jsonio_int(j, "half", where, 1, 0, 10, &v, &e), -1);
    CHECK_CONTAINS(e.msg, "half: got 2.5, expected an integer in [0, 10]");
    CHECK_INT(jsonio_int(j, "s", where, 1, 0, 10, &v, &e), -1);
    CHECK_CONTAINS(e.msg, "s: got \"x\", expected an integer in [0, 10]");
    CHECK_INT(jsonio_int(j, "big", where, 1, INT64_MIN, INT64_MAX, &v, &e), -1);
    CHECK_CONTAINS(e.msg, "big: got 1e+30, expected an integer");
    CHECK_INT(jsonio_int(j, "ok", where, 1, 8, INT64_MAX, &v, &e), -1);
    CHECK_CONTAINS(e.msg, "expected an integer >= 8");
    CHECK_INT(jsonio_int(j, "ok", where, 1, INT64_MIN, 6, &v, &e), -1);
    CHECK_CONTAINS(e.msg, "expected an integer <= 6");
    CHECK_INT(jsonio_int(j, "ok", where, 1, 0, 10, &v, &e), 1);
    CHECK_INT(v, 7);
    CHECK_INT(jsonio_int(j, "neg", where, 1, INT64_MIN, INT64_MAX, &v, &e), 1);
    CHECK(v == INT64_MIN);

    /* Absent: optional leaves *out alone; required names the key. */
    v = 3;
    CHECK_INT(jsonio_int(j, "absent", where, 0, 0, 10, &v, &e), 0);
    CHECK_INT(v, 3);
    CHECK_INT(jsonio_int(j, "count", "s.json: workload", 1, 0, 10, &v, &e), -1);
    CHECK(strcmp(e.msg, "s.json: workload: missing key \"count\"") == 0);
    cJSON_Delete(j);
}

static void test_jsonio_num_bool_str_enum(void)
{
    Err e = {0};
    cJSON *j = jsonio_parse("{\"rate\": -1, \"flag\": 1, \"name\": 5, \"kind\": \"fifo2\","
                            " \"k2\": \"lifo\", \"x\": 0.25, \"t\": true, \"n\": null}",
                            "s.json", &e);
    CHECK(j != NULL);
    if (!j) return;
    double d = 0;
    CHECK_INT(jsonio_num(j, "rate", "s.json: arrival", 1, 0, 1e300 * 10, &d, &e), -1);
    CHECK(strcmp(e.msg, "s.json: arrival.rate: got -1, expected a number >= 0") == 0);
    CHECK_INT(jsonio_num(j, "x", "s.json", 1, 0.5, 1.0, &d, &e), -1);
    CHECK_CONTAINS(e.msg, "s.json: x: got 0.25, expected a number in [0.5, 1]");
    CHECK_INT(jsonio_num(j, "x", "s.json", 1, 0, 1, &d, &e), 1);
    CHECK_NEAR(d, 0.25, 0);
    CHECK_INT(jsonio_num(j, "n", "s.json", 0, 0, 1, &d, &e), -1); /* null is not "absent" */
    CHECK_CONTAINS(e.msg, "got null");

    int b = 0;
    CHECK_INT(jsonio_bool(j, "flag", "s.json", 1, &b, &e), -1);
    CHECK_CONTAINS(e.msg, "s.json: flag: got 1, expected true or false");
    CHECK_INT(jsonio_bool(j, "t", "s.json", 1, &b, &e), 1);
    CHECK_INT(b, 1);

    const char *s = NULL;
    CHECK_INT(jsonio_str(j, "name", "s.json", 1, &s, &e), -1);
    CHECK_CONTAINS(e.msg, "s.json: name: got 5, expected a string");
    CHECK_INT(jsonio_str(j, "k2", "s.json", 1, &s, &e), 1);
    CHECK(s && strcmp(s, "lifo") == 0);

    static const char *const kinds[] = {"fifo", "lifo", NULL};
    int idx = -1;
    CHECK_INT(jsonio_enum(j, "kind", "s.json: scheduler", 1, kinds, &idx, &e), -1);
    CHECK(strcmp(e.msg, "s.json: scheduler.kind: got \"fifo2\", expected one of \"fifo\", "
                        "\"lifo\"") == 0);
    CHECK_INT(jsonio_enum(j, "k2", "s.json", 1, kinds, &idx, &e), 1);
    CHECK_INT(idx, 1);
    cJSON_Delete(j);
}

static void test_jsonio_check_keys(void)
{
    Err e = {0};
    static const char *const allowed[] = {"kind", "max_running", "token_budget", NULL};
    cJSON *j = jsonio_parse("{\"kind\": \"x\", \"max_runing\": 4}", "s.json", &e);
    CHECK(j != NULL);
    CHECK_INT(jsonio_check_keys(j, "s.json: scheduler", allowed, &e), -1);
    CHECK(strcmp(e.msg, "s.json: scheduler: unknown key \"max_runing\"; allowed: kind, "
                        "max_running, token_budget") == 0);
    cJSON_Delete(j);

    /* Case matters: "Kind" is not "kind". */
    j = jsonio_parse("{\"Kind\": \"x\"}", "s.json", &e);
    CHECK_INT(jsonio_check_keys(j, "s.json", allowed, &e), -1);
    CHECK_CONTAINS(e.msg, "unknown key \"Kind\"");
    cJSON_Delete(j);

    j = jsonio_parse("{\"kind\": \"a\", \"kind\": \"b\"}", "s.json", &e);
    CHECK_INT(jsonio_check_keys(j, "s.json", allowed, &e), -1);
    CHECK_CONTAINS(e.msg, "duplicate key \"kind\"");
    cJSON_Delete(j);

    j = jsonio_parse("[1]", "s.json", &e);
    CHECK_INT(jsonio_check_keys(j, "s.json: scheduler", allowed, &e), -1);
    CHECK_CONTAINS(e.msg, "s.json: scheduler: got [1], expected an object");
    CHECK_INT(jsonio_expect_array(j, "s.json", &e), 0);
    int64_t v;
    CHECK_INT(jsonio_int(j, "k", "s.json", 0, 0, 1, &v, &e), -1); /* getter on a non-object */
    cJSON_Delete(j);
}

static void test_jsonio_add_num_and_write(void)
{
    cJSON *o = cJSON_CreateObject();
    jsonio_add_num(o, "a", 0.1 + 0.2);
    jsonio_add_num(o, "b", 1.0 / 3.0);
    jsonio_add_num(o, "c", 2137509000000000.4);
    jsonio_add_num(o, "z", -0.0);
    char *s = cJSON_PrintUnformatted(o);
    CHECK(s && strcmp(s, "{\"a\":0.3,\"b\":0.333333333333,\"c\":2.137509e+15,\"z\":0}") == 0);
    cJSON_free(s);

    char dir[] = "/tmp/servesim_jsonioXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/out.json", dir);
    Err e = {0};
    CHECK_INT(jsonio_write_file(o, path, 0, &e), 0);
    cJSON *back = jsonio_parse_file(path, &e);
    CHECK(back != NULL);
    CHECK(back && cJSON_Compare(back, o, 1));
    cJSON_Delete(back);
    remove(path);
    rmdir(dir);

    snprintf(path, sizeof path, "%s/no/such/dir/out.json", dir);
    CHECK_INT(jsonio_write_file(o, path, 1, &e), -1);
    CHECK_CONTAINS(e.msg, "cannot create a temporary file beside it");
    CHECK(jsonio_parse_file(path, &e) == NULL);
    CHECK_CONTAINS(e.msg, "cannot open");
    cJSON_Delete(o);
}

void suite_jsonio(void)
{
    RUN(test_jsonio_paths);
    RUN(test_jsonio_parse_error_line_column);
    RUN(test_jsonio_int);
    RUN(test_jsonio_num_bool_str_enum);
    RUN(test_jsonio_check_keys);
    RUN(test_jsonio_add_num_and_write);
    RUN(test_jsonio_stream_array);
}
