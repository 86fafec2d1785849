/*
 * test_cli.c -- the command line as a user meets it: bad input gives a
 * non-zero exit and a message naming the file, the key path and the
 * problem; good input runs; the same scenario and seed give byte-identical
 * reports.  Runs the binary named by $SERVESIM_BIN (make test sets it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "testhelp.h"

static char dir[256];

static const char *bin(void)
{
    const char *b = getenv("SERVESIM_BIN");
    return b ? b : "./servesim";
}

/* Runs "servesim ARGS" with stderr folded into the captured output. */
static int sh(const char *args, char *out, size_t n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin(), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

#define GOOD_HEAD "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", " \
    "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 4}, "

static void expect_fail(const char *file, const char *text, const char *const *needles)
{
    static char out[8192], args[1024];
    const char *p = write_tmp(file, text);
    CHECK(p != NULL);
    snprintf(args, sizeof args, "run %s", p);
    int rc = sh(args, out, sizeof out);
    CHECK(rc != 0 && rc != -1);
    CHECK_CONTAINS(out, file);
    for (int i = 0; needles[i]; i++) CHECK_CONTAINS(out, needles[i]);
    CHECK(strstr(out, "Sanitizer") == NULL);
}

static void test_bad_input_messages(void)
{
    {
        static const char *const n[] = {"malformed JSON", "line 3", NULL};
        expect_fail("malformed.json", "{\n  \"model\": \"qwen3-8b\",\n  \"tp\": ,\n}\n", n);
    }
    {
        static const char *const n[] = {"scheduler", "unknown key \"max_runing\"", "max_running", NULL};
        expect_fail("unknown_key.json",
                    "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\", "
                    "\"max_runing\": 4}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 10, "
                    "\"output_tokens\": 2}]}}", n);
    }
    {
        static const char *const n[] = {"workload.requests[1]", "missing key \"output_tokens\"", NULL};
        expect_fail("missing.json", GOOD_HEAD "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": "
                    "10, \"output_tokens\": 2}, {\"arrival_ms\": 1, \"prompt_tokens\": 10}]}}", n);
    }
    {
        static const char *const n[] = {"workload.requests[0].prompt_tokens", "-5", "expected", NULL};
        expect_fail("negative.json", GOOD_HEAD "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": "
                    "-5, \"output_tokens\": 2}]}}", n);
    }
    {
        static const char *const n[] = {"model", "qwen9-8b", "qwen3-8b", NULL};
        expect_fail("unknown_model.json", "{\"model\": \"qwen9-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                    "{\"kind\": \"static\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, "
                    "\"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"workload.prompt_tokens", "max", NULL};
        expect_fail("bad_dist.json", GOOD_HEAD "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 1, \"count\": 3, "
                    "\"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 10}, \"output_tokens\": 3}}", n);
    }
    {
        static const char *const n[] = {"scheduler.kind", "fifo", "continuous", NULL};
        expect_fail("bad_kind.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                    "{\"kind\": \"fifo\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, "
                    "\"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"do not fit", "tp", NULL};
        expect_fail("no_fit.json", "{\"model\": \"llama-3.1-70b\", \"hardware\": \"h100-sxm\", \"scheduler\": "
                    "{\"kind\": \"static\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 1, "
                    "\"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"kv.capacity_gib", "got 100", "53.24 GiB fit", NULL};
        expect_fail("kv_too_big.json", GOOD_HEAD "\"kv\": {\"capacity_gib\": 100}, \"workload\": {\"requests\": "
                    "[{\"arrival_ms\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1}]}}", n);
    }
    {
        static const char *const n[] = {"truncated.json", NULL};
        expect_fail("truncated.json", GOOD_HEAD "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prom", n);
    }
}

static void test_cli_usage_errors(void)
{
    static char out[8192];
    CHECK(sh("frobnicate", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "unknown command");
    CHECK(sh("run --bogus", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "--bogus");
    CHECK(sh("run /nonexistent/s.json", out, sizeof out) == 1);
    CHECK_CONTAINS(out, "/nonexistent/s.json");
    CHECK(sh("info", out, sizeof out) == 2);
    CHECK_CONTAINS(out, "--model");
    CHECK(sh("--help", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "run");
    CHECK(sh("run --help", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "--json");
}

static void test_info(void)
{
    static char out[16384];
    CHECK(sh("info --model qwen3-8b --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"weights_read_bytes\":\t15136811008");
    CHECK_CONTAINS(out, "\"kv_bytes_per_token\":\t147456");
    CHECK(sh("info --model qwen3-8b --hardware h100-sxm", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "kv capacity");
}

static void test_default_run_deterministic(void)
{
    static char a[65536], b[65536], args[1024];
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/a.json", dir);
    snprintf(pb, sizeof pb, "%s/b.json", dir);
    snprintf(args, sizeof args, "run --json %s", pa);
    CHECK(sh(args, a, sizeof a) == 0);
    CHECK_CONTAINS(a, "TTFT");
    CHECK_CONTAINS(a, "goodput");
    snprintf(args, sizeof args, "run --quiet --json %s", pb);
    CHECK(sh(args, b, sizeof b) == 0);
    size_t la = 0, lb = 0;
    Err e;
    char *ta = read_file(pa, &la, &e), *tb = read_file(pb, &lb, &e);
    CHECK(ta && tb && la == lb && la > 1000 && memcmp(ta, tb, la) == 0);
    free(ta);
    free(tb);
    /* a different seed gives a different run */
    snprintf(args, sizeof args, "run --quiet --seed 7 --json %s", pb);
    CHECK(sh(args, b, sizeof b) == 0);
    ta = read_file(pa, &la, &e);
    tb = read_file(pb, &lb, &e);
    CHECK(ta && tb && (la != lb || memcmp(ta, tb, la) != 0));
    free(ta);
    free(tb);
}

void suite_cli(void);
void suite_cli(void)
{
    snprintf(dir, sizeof dir, "/tmp/servesim-test-%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0) return;
    RUN(test_bad_input_messages);
    RUN(test_cli_usage_errors);
    RUN(test_info);
    RUN(test_default_run_deterministic);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
