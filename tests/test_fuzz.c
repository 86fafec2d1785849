/*
 * test_fuzz.c -- every input a fuzzer found a crash with (fuzz/regress/
 * HARNESS/NAME, the same bytes the harness was given) goes through the
 * library call the harness makes and through the normal command:
 *   scenario  servesim run FILE
 *   trace     (first byte: format) a scenario naming the rest as its trace
 *   replay    servesim replay FILE
 *   calib     (first byte: file name) servesim calib import FILE --out X
 *   compare   servesim compare FILE FILE
 * The command must end with status 0 or 1 (a clean error), no signal, no
 * sanitizer report.  Adding a regression: drop the file in; fuzz/README.md.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "calib_meas.h"
#include "common.h"
#include "compare.h"
#include "../fuzz/fuzz_lua_policy.h"
#include "replay.h"
#include "scenario.h"
#include "testhelp.h"
#include "trace_reader.h"

#define FZ_DIR SERVESIM_DATA_DIR "/fuzz/regress"

static const char *const fz_calib_names[] = {
    "meas.csv", "gemm_perf.csv", "context_attention_perf.csv",
    "generation_attention_perf.csv", "custom_allreduce_perf.csv",
    "nccl_perf.csv", "mlp.csv", "attention.csv", "all_reduce.csv",
};

static char fz_tmp[256];

static const char *fz_bin(void)
{
    const char *b = getenv("SERVESIM_BIN");
    return b ? b : "./servesim";
}

static unsigned char *fz_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(1 << 17);
    *n = buf ? fread(buf, 1, (1 << 17) - 1, f) : 0;
    fclose(f);
    if (buf) buf[*n] = 0;
    return buf;
}

static const char *fz_write(const char *name, const unsigned char *d, size_t n)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fz_tmp, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    if (n) fwrite(d, 1, n, f);
    fclose(f);
    return path;
}

/* Runs "servesim ARGS"; the check of status and output. */
static void fz_cli(const char *what, const char *args)
{
    char cmd[2048];
    static char out[1 << 16];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", fz_bin(), args);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    size_t len = fread(out, 1, sizeof out - 1, p);
    while (fgetc(p) != EOF) { }
    out[len] = '\0';
    int st = pclose(p);
    int ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1) && !strstr(out, "Sanitizer") &&
             !strstr(out, "runtime error");
    if (!ok) fprintf(stderr, "  %s: status %d:\n%.2000s\n", what, st, out);
    CHECK(ok);
}

static void fz_one(const char *harness, const char *name, const unsigned char *d, size_t n)
{
    char what[512], args[1200];
    Err e = {0};
    snprintf(what, sizeof what, "fuzz/regress/%s/%s", harness, name);
    if (!strcmp(harness, "scenario")) {
        Scenario s;
        if (scenario_load_text((const char *)d, what, 0, 0, &s, &e) == 0) scenario_free(&s);
        snprintf(args, sizeof args, "run %s --quiet", fz_write("s.json", d, n));
    } else if (!strcmp(harness, "trace")) {
        if (n < 1) return;
        TraceFormat fmt = (TraceFormat)(d[0] % TRACE_FORMAT_COUNT);
        const char *p = fz_write("t.trace", d + 1, n - 1);
        TraceReader *tr = trace_reader_open(p, fmt, (d[0] >> 4) & 1, &e);
        TraceRecord rec;
        while (tr && trace_reader_next(tr, &rec, &e) > 0) { }
        if (tr) trace_reader_close(tr);
        char scen[1024];
        snprintf(scen, sizeof scen,
                 "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"workload\": {\"trace\": \"%s\", "
                 "\"format\": \"%s\", \"on_error\": \"%s\"}}",
                 p, trace_reader_format_name(fmt), (d[0] >> 4) & 1 ? "skip" : "fail");
        snprintf(args, sizeof args, "run %s --quiet", fz_write("s.json", (const unsigned char *)scen, strlen(scen)));
    } else if (!strcmp(harness, "replay")) {
        Replay r;
        if (replay_load_text((const char *)d, what, &r, &e) == 0) replay_free(&r);
        snprintf(args, sizeof args, "replay %s", fz_write("r.json", d, n));
    } else if (!strcmp(harness, "calib")) {
        if (n < 1) return;
        const char *p = fz_write(fz_calib_names[d[0] % (sizeof fz_calib_names / sizeof fz_calib_names[0])], d + 1,
                                 n - 1);
        MeasSet s;
        calib_meas_init(&s);
        (void)calib_meas_import(&s, p, &e);
        calib_meas_free(&s);
        snprintf(args, sizeof args, "calib import %s --out %s/out.csv", p, fz_tmp);
    } else if (!strcmp(harness, "compare")) {
        cJSON *root = cJSON_ParseWithLength((const char *)d, n);
        CmpSide side;
        if (root) (void)compare_from_json(root, what, &side, &e);
        cJSON_Delete(root);
        const char *p = fz_write("c.json", d, n);
        snprintf(args, sizeof args, "compare %s %s", p, p);
    } else if (!strcmp(harness, "lua")) {
        size_t len = 0;
        char *src = fuzz_lua_policy(d, n, &len);
        if (!src) return;
        char script[600], scen[2048];
        snprintf(script, sizeof script, "%s", fz_write("policy.lua", (const unsigned char *)src, len));
        free(src);
        fuzz_lua_scenario(scen, sizeof scen, d, script);
        snprintf(args, sizeof args, "run %s --quiet", fz_write("s.json", (const unsigned char *)scen, strlen(scen)));
    } else {
        return;
    }
    fz_cli(what, args);
}

static void test_fuzz_regressions(void)
{
    snprintf(fz_tmp, sizeof fz_tmp, "/tmp/servesim-fuzzreg-XXXXXX");
    CHECK(mkdtemp(fz_tmp) != NULL);
    static const char *const harnesses[] = {"scenario", "trace", "replay", "calib", "compare", "lua"};
    int count = 0;
    for (size_t h = 0; h < sizeof harnesses / sizeof harnesses[0]; h++) {
        char dpath[512];
        snprintf(dpath, sizeof dpath, "%s/%s", FZ_DIR, harnesses[h]);
        DIR *dir = opendir(dpath);
        if (!dir) continue;
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.') continue;
            char fpath[1024];
            snprintf(fpath, sizeof fpath, "%s/%s", dpath, de->d_name);
            size_t n = 0;
            unsigned char *d = fz_read(fpath, &n);
            CHECK(d != NULL);
            if (!d) continue;
            fz_one(harnesses[h], de->d_name, d, n);
            free(d);
            count++;
        }
        closedir(dir);
    }
    CHECK(count >= 1);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fz_tmp);
    CHECK(system(cmd) == 0);
}

void suite_fuzz(void);
void suite_fuzz(void)
{
    th_run("fuzz_regressions", test_fuzz_regressions);
}
