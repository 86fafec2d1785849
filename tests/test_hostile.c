/*
 * test_hostile.c -- regressions of issue 15 (reliability): each case is
 * input a hostile-input review found to crash, spin, fill memory, lose a
 * result or print garbage; each now gets a clean message (or a documented
 * success).  Runs the binary named by $SERVESIM_BIN under `timeout` and a
 * memory ulimit, so a regression fails the test instead of hanging the
 * suite; the limits are generous safety bounds, never timing assertions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "common.h"
#include "engine.h"
#include "outfile.h"
#include "testhelp.h"

static char hdir[256];
static char hout[65536];

static const char *hbin(void)
{
    const char *b = getenv("SERVESIM_BIN");
    return b ? b : "./servesim";
}

/* "servesim ARGS" (env may prefix VAR=value) with stderr folded in, at
 * most 60 s and 4 GiB of address space. */
static int hsh(const char *env, const char *args)
{
    char cmd[4096];
    /* AddressSanitizer reserves terabytes of address space up front, so
     * under `make asan` only the time limit applies */
#if defined(__SANITIZE_ADDRESS__)
    const char *vlimit = "";
#else
    const char *vlimit = "ulimit -v 4194304; ";
#endif
    snprintf(cmd, sizeof cmd, "%s%s timeout 60 %s %s 2>&1", vlimit, env ? env : "", hbin(), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(hout, 1, sizeof hout - 1, p);
    hout[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *hpath(const char *name)
{
    static char path[2][512];
    static int k;
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%s/%s", hdir, name);
    return path[k];
}

static const char *hwrite(const char *name, const char *text, size_t len)
{
    const char *p = hpath(name);
    FILE *f = fopen(p, "wb");
    if (!f) return p;
    fwrite(text, 1, len, f);
    fclose(f);
    return p;
}
#define HWRITE(name, text) hwrite(name, text, strlen(text))

/* Whether s is valid UTF-8 (overlongs and surrogates refused). */
static int valid_utf8(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        if (*u < 0x80) {
            u++;
            continue;
        }
        int n = *u >= 0xc2 && *u <= 0xdf ? 2 : *u >= 0xe0 && *u <= 0xef ? 3 : *u >= 0xf0 && *u <= 0xf4 ? 4 : 0;
        if (!n) return 0;
        for (int k = 1; k < n; k++)
            if ((u[k] & 0xc0) != 0x80) return 0;
        u += n;
    }
    return 1;
}

#define MODEL_HEAD "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", " \
    "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 4}, "
#define SMALL_WL "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 5, \"count\": 20, " \
    "\"prompt_tokens\": 100, \"output_tokens\": 10}"

/* The excerpt helper: invalid and control bytes escaped, a multi-byte
 * character never cut; err_set keeps every message valid UTF-8. */
static void test_hostile_excerpt(void)
{
    char buf[16];
    text_excerpt("ab\xff\x01" "c", 5, buf, sizeof buf);
    CHECK(!strcmp(buf, "ab\\xff\\x01c"));
    /* "é" is two bytes: an 8-byte buffer cuts before it, not inside */
    const char *s = "aaaaé€xyz";
    char small[8];
    text_excerpt(s, strlen(s), small, sizeof small);
    CHECK(valid_utf8(small));
    CHECK_CONTAINS(small, "...");
    text_excerpt("\xe2\x82", 2, buf, sizeof buf); /* a truncated character */
    CHECK(!strcmp(buf, "\\xe2\\x82"));
    text_excerpt("\xc0\xaf", 2, buf, sizeof buf); /* an overlong '/' */
    CHECK(!strcmp(buf, "\\xc0\\xaf"));
    Err e;
    err_set(&e, "bad key \"%s\"", "\xfe\xff\x1b[31m");
    CHECK(valid_utf8(e.msg));
    CHECK(!strchr(e.msg, 0x1b));
    CHECK_CONTAINS(e.msg, "\\xfe\\xff\\x1b[31m");
}

/* speculation.accept_file: a malformed line's message was read from freed
 * text; the file is found beside the scenario, not in the working dir. */
static void test_hostile_accept_file(void)
{
    HWRITE("counts.txt", "# accepted drafts\n1\n2\nx\xff" "bad\n");
    const char *sc = HWRITE("spec.json", MODEL_HEAD SMALL_WL ", \"speculation\": {\"method\": \"lookup\", "
                                                             "\"draft_len\": 3, \"accept_file\": \"counts.txt\"}}");
    char args[1024];
    snprintf(args, sizeof args, "run %s --quiet", sc);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "counts.txt:4: got \"x\\xffbad\", expected an accepted-draft count in 0..");
    CHECK(valid_utf8(hout));
    HWRITE("counts.txt", "1\n2\n3\n0\n");
    CHECK_INT(hsh(NULL, args), 0);
}

static void test_hostile_azure_years(void)
{
    const char *tr = HWRITE("far.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                       "2023-11-16 18:15:46.6805900,374,44\n9999-01-01 00:00:00,10,10\n");
    char args[1024];
    snprintf(args, sizeof args, "workload %s --format azure --stats", tr);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "far.csv:3: TIMESTAMP: got \"9999-01-01 00:00:00\", expected a year in 1970..2200");
    tr = HWRITE("early.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n0001-01-01 00:00:00,10,10\n");
    snprintf(args, sizeof args, "workload %s --format azure --stats", tr);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "expected a year in 1970..2200");
}

/* Generators that spun forever on legal values now end or say why. */
static void test_hostile_generators(void)
{
    char args[1024];
    const char *w = HWRITE("onoff.json", "{\"kind\": \"onoff\", \"rate_per_s\": 1e-9, \"on_s\": 1e-9, \"off_s\": 0, "
                                         "\"periods\": \"exponential\", \"count\": 3, \"prompt_tokens\": 1, "
                                         "\"output_tokens\": 1}");
    snprintf(args, sizeof args, "workload %s --stats", w);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "no arrival within");
    w = HWRITE("onoff2.json", "{\"kind\": \"onoff\", \"rate_per_s\": 1e-3, \"on_s\": 1e-6, \"off_s\": 0, "
                              "\"duration_s\": 100000, \"prompt_tokens\": 1, \"output_tokens\": 1}");
    snprintf(args, sizeof args, "workload %s --stats", w);
    CHECK_INT(hsh(NULL, args), 0);
    /* a huge peak-to-base ratio: exact sampling per segment */
    w = HWRITE("piece.json", "{\"kind\": \"piecewise\", \"rates\": [[0, 1000], [1, 1e-9]], \"duration_s\": 1000, "
                             "\"prompt_tokens\": 1, \"output_tokens\": 1}");
    snprintf(args, sizeof args, "workload %s --stats", w);
    CHECK_INT(hsh(NULL, args), 0);
    w = HWRITE("piece2.json", "{\"kind\": \"piecewise\", \"rates\": [[0, 1000], [1, 1e-9]], \"count\": 5000, "
                              "\"prompt_tokens\": 1, \"output_tokens\": 1}");
    snprintf(args, sizeof args, "workload %s --stats", w);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "past the 1e+09 s a run may span");
    /* a count that cannot fit in memory is refused at once */
    w = HWRITE("big.json", "{\"kind\": \"poisson\", \"rate_per_s\": 10, \"count\": 100000000, "
                           "\"prompt_tokens\": 1, \"output_tokens\": 1}");
    snprintf(args, sizeof args, "workload %s --stats", w);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "more than the 10000000 requests a workload may hold; set SERVESIM_MAX_REQUESTS");
}

/* Line and file caps; NUL bytes are not text. */
static void test_hostile_caps(void)
{
    char args[1024];
    char *big = xmalloc(5000);
    memset(big, '1', 4999);
    big[4999] = '\0';
    char *text = xmalloc(6000);
    snprintf(text, 6000, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,%s,4\n", big);
    const char *tr = HWRITE("long.csv", text);
    snprintf(args, sizeof args, "workload %s --format azure --stats", tr);
    CHECK_INT(hsh("SERVESIM_MAX_LINE_BYTES=1000", args), 1);
    CHECK_CONTAINS(hout, "long.csv:2: a line longer than 1000 bytes (the line cap; set SERVESIM_MAX_LINE_BYTES");
    free(text);
    free(big);
    tr = hwrite("zero.csv", "TIMESTAMP\0\0\0\0", 13);
    snprintf(args, sizeof args, "workload %s --format azure --stats", tr);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "zero.csv:1: a NUL byte at column 10; expected a text file");
    /* a scenario was read only up to an embedded NUL */
    static const char nul_sc[] = MODEL_HEAD SMALL_WL "}\0 trailing garbage";
    const char *sc = hwrite("nul.json", nul_sc, sizeof nul_sc - 1);
    snprintf(args, sizeof args, "run %s --quiet", sc);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "a NUL byte at offset");
    sc = HWRITE("ok.json", MODEL_HEAD SMALL_WL "}");
    snprintf(args, sizeof args, "run %s --quiet", sc);
    CHECK_INT(hsh("SERVESIM_MAX_FILE_BYTES=100", args), 1);
    CHECK_CONTAINS(hout, "larger than 100 bytes (the file-size cap; set SERVESIM_MAX_FILE_BYTES");
    /* a malformed file's excerpt is valid UTF-8 */
    sc = HWRITE("bad.json", "{\"model\": \xff\xfe\x01 }");
    snprintf(args, sizeof args, "run %s", sc);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "malformed JSON near '\\xff\\xfe\\x01 }'");
    CHECK(valid_utf8(hout));
}

/* Outputs: checked before the run, never the input, write errors fail. */
/* Issue 35, class 3: no output over any file the command read, however
 * it is spelled -- the scenario through ./, a symlink, the trace the
 * scenario names, a model file, a scenario named report.json under --html
 * DIR, a sweep's own scenario, workload --out over its trace -- each
 * refused with a message naming the input, and the input left as it was. */
/* Issue 35, class 2: a shared script reads only under its directory, the
 * working directory and the bundled data, as it writes only under the
 * working directory: servesim.load of /etc/passwd, and a scenario whose
 * trace is /etc/passwd, fail without a line of it; --allow-read lifts it. */
static void test_hostile_lua_reads(void)
{
    const char *lua = HWRITE("reads.lua",
                             "local ok, err = pcall(servesim.load, '/etc/passwd')\n"
                             "print('load', ok, err)\n"
                             "ok, err = pcall(servesim.run, {model = 'qwen3-8b', hardware = 'h100-sxm', "
                             "scheduler = {kind = 'continuous'}, workload = {trace = '/etc/passwd', format = 'csv'}})\n"
                             "print('run', ok, err)\n");
    char args[2048];
    snprintf(args, sizeof args, "lua %s", lua);
    CHECK_INT(hsh(NULL, args), 0);
    CHECK_CONTAINS(hout, "load\tfalse\tservesim.load: /etc/passwd: outside what this script may read");
    CHECK_CONTAINS(hout, "run\tfalse\tservesim.run: /etc/passwd: outside what this script may read");
    CHECK(!strstr(hout, "root:"));
    snprintf(args, sizeof args, "lua --allow-read /etc %s", lua);
    CHECK_INT(hsh(NULL, args), 0);
    CHECK(!strstr(hout, "outside what this script may read"));
    snprintf(args, sizeof args, "lua --allow-read /no/such/dir %s", lua);
    CHECK_INT(hsh(NULL, args), 2);
    CHECK_CONTAINS(hout, "--allow-read /no/such/dir: No such file or directory");
}

/* Issue 35 class 7: every path a scenario names resolves beside the
 * scenario, then in the data directory -- a same-named file in the working
 * directory is never taken instead (it was, for models, hardware, engines
 * and profiles; traces fell back to it). */
static void test_hostile_paths(void)
{
    char cmd[4096], args[1024], cd[600];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/pscen %s/pcwd && sed 's/\"name\": *\"Qwen3-8B\"/\"name\": \"Beside-8B\"/' "
             "models/qwen3-8b.json > %s/pscen/m.json && "
             "sed 's/\"name\": *\"Qwen3-8B\"/\"name\": \"Decoy-8B\"/' models/qwen3-8b.json > %s/pcwd/m.json && "
             "echo 'not json' > %s/pcwd/h100-sxm.json && echo 'arrival_s,prompt_tokens,output_tokens' > %s/pcwd/t.csv && "
             "echo 'not json' > %s/pcwd/prof.json",
             hdir, hdir, hdir, hdir, hdir, hdir, hdir);
    CHECK_INT(system(cmd), 0);
    HWRITE("pscen/s.json", "{\"model\": \"m.json\", \"hardware\": \"h100-sxm.json\", \"scheduler\": {\"kind\": "
                           "\"continuous\", \"max_running\": 4}, \"workload\": {\"kind\": \"poisson\", "
                           "\"rate_per_s\": 5, \"count\": 3, \"prompt_tokens\": 10, \"output_tokens\": 2}}");
    snprintf(cd, sizeof cd, "cd %s/pcwd && ", hdir);
    /* the model beside the scenario, the bundled hardware: neither decoy */
    CHECK_INT(hsh(cd, "run ../pscen/s.json"), 0);
    CHECK_CONTAINS(hout, "Beside-8B on 1 GPU(s) of NVIDIA H100");
    CHECK(!strstr(hout, "Decoy"));
    /* a trace and a profile only the working directory holds are not found */
    HWRITE("pscen/t.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                           "\"continuous\"}, \"workload\": {\"trace\": \"t.csv\", \"format\": \"csv\"}}");
    CHECK_INT(hsh(cd, "run ../pscen/t.json --quiet"), 1);
    CHECK_CONTAINS(hout, "cannot read \"t.csv\" (tried ../pscen/t.csv beside the scenario, then ");
    HWRITE("pscen/p.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"cost_model\": {\"kind\": "
                           "\"roofline\", \"profile\": \"prof.json\"}, \"scheduler\": {\"kind\": \"continuous\"}, \"workload\": {\"kind\": "
                           "\"poisson\", \"rate_per_s\": 5, \"count\": 3, \"prompt_tokens\": 10, "
                           "\"output_tokens\": 2}}");
    CHECK_INT(hsh(cd, "run ../pscen/p.json --quiet"), 1);
    CHECK_CONTAINS(hout, "profile \"prof.json\": cannot read it (tried ../pscen/prof.json beside the file that names it");
    /* a scenario given in the working directory still finds its files there */
    snprintf(args, sizeof args, "run %s/pscen/s.json --quiet", hdir);
    CHECK_INT(hsh(NULL, args), 0);
}

/* Issue 35 class 5: legal inputs past the memory end in a message and exit
 * status 1, never a signal; a sessions workload's token ids cost no memory
 * (issue 36: derived from (session, position)).  Address-space limits
 * cannot apply under AddressSanitizer (it reserves terabytes up front). */
static void test_hostile_memory(void)
{
#if !defined(__SANITIZE_ADDRESS__)
    char args[1024];
    const char *big = HWRITE("oom.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                                         "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 1000, \"count\": "
                                         "3000000, \"prompt_tokens\": 100, \"output_tokens\": 10}}");
    snprintf(args, sizeof args, "workload %s --stats", big);
    CHECK_INT(hsh("ulimit -v 300000; ", args), 1);
    CHECK_CONTAINS(hout, "servesim: out of memory: could not allocate ");
    CHECK_CONTAINS(hout, "fewer requests, a shorter duration, or more memory");
    /* 4,000 sessions of 30,000-token prompts: 480 MB of ids when they were
     * stored per session; now the run fits in 400 MB of address space */
    const char *sess = HWRITE("sess.json", "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"engine\": \"vllm\", "
                                           "\"workload\": {\"kind\": \"sessions\", \"sessions\": 4000, \"turns\": 1, "
                                           "\"rate_per_s\": 1000, \"first_prompt_tokens\": 30000, \"output_tokens\": 1, "
                                           "\"new_tokens_per_turn\": 1}}");
    snprintf(args, sizeof args, "run %s", sess);
    CHECK_INT(hsh("ulimit -v 400000; ", args), 0);
    CHECK_CONTAINS(hout, "prefix cache: 0 of 120000000 prompt tokens hit");
#endif
}

static void test_hostile_no_output_over_input(void)
{
    static const char trace[] = "arrival_ms,prompt_tokens,output_tokens\n0,64,4\n10,64,4\n";
    const char *tr = HWRITE("og_tr.csv", trace);
    char sc_text[1024], args[2048];
    snprintf(sc_text, sizeof sc_text,
             "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"}, "
             "\"workload\": {\"trace\": \"og_tr.csv\"}}");
    const char *sc = HWRITE("og_sc.json", sc_text);
    char sc_copy[600], tr_copy[600], link[600], dot_tr[700], dot_sc[700];
    snprintf(sc_copy, sizeof sc_copy, "%s", sc);
    snprintf(tr_copy, sizeof tr_copy, "%s", tr);
    snprintf(link, sizeof link, "%s", hpath("og_link.json"));
    remove(link);
    CHECK(symlink(sc_copy, link) == 0);
    /* DIR/./name: another spelling of the same file */
    char *slash = strrchr(tr_copy, '/');
    snprintf(dot_tr, sizeof dot_tr, "%.*s/./%s", (int)(slash - tr_copy), tr_copy, slash + 1);
    slash = strrchr(sc_copy, '/');
    snprintf(dot_sc, sizeof dot_sc, "%.*s/./%s", (int)(slash - sc_copy), sc_copy, slash + 1);
    struct {
        const char *args_fmt, *a, *b, *want;
    } cases[] = {
        {"run %s --quiet --csv %s", sc_copy, dot_tr, "which this command read as an input"},
        {"run %s --quiet --json %s", sc_copy, link, "is the input file"},
        {"sweep %s --rates 1 --quiet --json %s", sc_copy, dot_sc, "which this command reads as an input"},
        {"workload %s --out %s", tr_copy, dot_tr, "which this command read as an input"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(args, sizeof args, cases[i].args_fmt, cases[i].a, cases[i].b);
        CHECK_INT(hsh(NULL, args), 1);
        CHECK_CONTAINS(hout, cases[i].want);
    }
    /* a model file the scenario names */
    char *model = read_file(SERVESIM_DATA_DIR "/models/qwen3-8b.json", NULL, &(Err){0});
    const char *m = model ? HWRITE("og_model.json", model) : NULL;
    free(model);
    if (m) {
        char m_copy[600];
        snprintf(m_copy, sizeof m_copy, "%s", m);
        snprintf(sc_text, sizeof sc_text,
                 "{\"model\": \"%s\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": "
                 "\"continuous\"}, \"workload\": {\"trace\": \"og_tr.csv\"}}", m_copy);
        const char *sc2 = HWRITE("og_sc2.json", sc_text);
        snprintf(args, sizeof args, "run %s --quiet --json %s", sc2, m_copy);
        CHECK_INT(hsh(NULL, args), 1);
        CHECK_CONTAINS(hout, "which this command read as an input");
        char *after = read_file(m_copy, NULL, &(Err){0});
        CHECK(after && strstr(after, "\"name\""));
        free(after);
    }
    /* --html DIR over a scenario named DIR/report.json */
    char hdir2[600], rep[700], cmd[4096];
    snprintf(hdir2, sizeof hdir2, "%s", hpath("og_html"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir '%s' && cp '%s' '%s/report.json' && cp '%s' '%s/og_tr.csv'", hdir2,
             hdir2, sc_copy, hdir2, tr_copy, hdir2);
    CHECK(system(cmd) == 0);
    snprintf(rep, sizeof rep, "%s/report.json", hdir2);
    snprintf(args, sizeof args, "run %s --quiet --html %s", rep, hdir2);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "which this command read as an input");
    /* every input as it was */
    char *t = read_file(tr_copy, NULL, &(Err){0});
    CHECK(t && !strcmp(t, trace));
    free(t);
    t = read_file(sc_copy, NULL, &(Err){0});
    CHECK(t && strstr(t, "og_tr.csv"));
    free(t);
    t = read_file(rep, NULL, &(Err){0});
    CHECK(t && strstr(t, "og_tr.csv"));
    free(t);
}

static void test_hostile_outputs(void)
{
    char args[2048];
    const char *sc = HWRITE("out_sc.json", MODEL_HEAD SMALL_WL "}");
    snprintf(args, sizeof args, "run %s --quiet --json - > /dev/full", sc);
    CHECK_INT(hsh(NULL, args), 1);
    snprintf(args, sizeof args, "run %s > /dev/full", sc); /* the table (stderr goes there too) */
    CHECK_INT(hsh(NULL, args), 1);
    snprintf(args, sizeof args, "run %s --quiet --json %s", sc, sc);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "is the input file");
    /* a bad --vllm-json fails before --json is written */
    const char *js = hpath("r.json");
    unlink(js);
    snprintf(args, sizeof args, "run %s --quiet --json %s --vllm-json %s/no/such/v.json", sc, js, hdir);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "does not exist");
    struct stat st;
    CHECK(stat(js, &st) != 0);
    /* rejected requests: no nan in the table, the CSV says why */
    const char *rj = HWRITE("rej.json", MODEL_HEAD "\"kv\": {\"capacity_gib\": 0.01}, \"price\": "
                                        "{\"usd_per_gpu_hour\": 2}, \"workload\": {\"requests\": [{\"id\": \"a\", "
                                        "\"arrival_ms\": 0, \"prompt_tokens\": 100000, \"output_tokens\": 4}]}}");
    snprintf(args, sizeof args, "run %s --csv %s", rj, hpath("rej.csv"));
    int rc = hsh(NULL, args);
    CHECK_INT(rc, 0);
    CHECK(!strstr(hout, "nan"));
    CHECK_CONTAINS(hout, "no output tokens to price");
    char *csv = read_file(hpath("rej.csv"), NULL, NULL);
    CHECK_CONTAINS(csv, ",good,reject_reason\n");
    CHECK_CONTAINS(csv, ",rejected,");
    CHECK_CONTAINS(csv, ",rejected,,,,,,0,0,context_too_long\n");
    free(csv);
}

static void test_hostile_cli(void)
{
    CHECK_INT(hsh(NULL, "help spec-plan"), 0);
    CHECK_CONTAINS(hout, "usage: servesim spec-plan");
    CHECK_INT(hsh(NULL, "help spec-verify"), 0);
    CHECK_CONTAINS(hout, "usage: servesim spec-verify");
    CHECK_INT(hsh(NULL, "help nosuch"), 2);
    CHECK_CONTAINS(hout, "no help on 'nosuch'");
    CHECK_INT(hsh(NULL, "--version"), 0);
    CHECK_CONTAINS(hout, "servesim ");
    CHECK_INT(hsh(NULL, "spec-verify --p nan,1 --q 0.5,0.5"), 2);
    CHECK(!strstr(hout, "nan\n"));
    CHECK_INT(hsh(NULL, "spec-verify --p 0.5,0.5 --q inf,0"), 2);
    /* replay refuses duplicate ids, as run does */
    char args[1024];
    const char *rp = HWRITE("dup.json", "{\"requests\": [{\"id\": \"A\", \"arrival_ms\": 0, \"prompt_tokens\": 4, "
                                        "\"output_tokens\": 1, \"token_times_ms\": [10]}, {\"id\": \"A\", "
                                        "\"arrival_ms\": 1, \"prompt_tokens\": 4, \"output_tokens\": 1, "
                                        "\"token_times_ms\": [20]}]}");
    snprintf(args, sizeof args, "replay %s", rp);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "requests[1]: duplicate request id \"A\" (also requests[0])");
    /* compare refuses values that are not numbers, negative or absurd */
    char sim[512];
    snprintf(sim, sizeof sim, "%s", HWRITE("sim.json", "{\"mean_ttft_ms\": 10}"));
    const char *m1 = HWRITE("m1.json", "{\"mean_ttft_ms\": \"x\"}");
    snprintf(args, sizeof args, "compare %s %s", sim, m1);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "\"mean_ttft_ms\": got a string, expected a number in [0, ");
    const char *m2 = HWRITE("m2.json", "{\"ttfts\": [0.1, 0.2], \"itls\": [[0.01], [0.02]], \"output_lens\": [2, -5]}");
    snprintf(args, sizeof args, "compare %s %s", sim, m2);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "output_lens[1]: got -5, expected a number in [0, 1e+08]");
    const char *m3 = HWRITE("m3.json", "{\"ttfts\": [0.1], \"itls\": [[0.01]], \"output_lens\": [1e300]}");
    snprintf(args, sizeof args, "compare %s %s", sim, m3);
    CHECK_INT(hsh(NULL, args), 1);
    CHECK_CONTAINS(hout, "output_lens[0]: got 1e+300");
}

/* `--json /dev/null` writes into the device: an atomic rename over it
 * would, run as root (as CI is), replace /dev/null with a regular file for
 * the whole machine.  outfile writes a path that exists and is not a
 * regular file in place; the plot command refuses one as its picture. */
static void test_hostile_device_output(void)
{
    struct stat st;
    CHECK_INT(hsh(NULL, "run workloads/chapters/ch8_four_requests_static.json --quiet --json /dev/null"),
              0);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    Err e = {0};
    CHECK_INT(outfile_write("/dev/null", "x\n", &e), 0);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

/* The size of the temporary file a run writes beside tgt ("tgt.tmpXXXXXX"),
 * or -1 while there is none. */
static long kill_tmp_size(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    size_t bl = strlen(base);
    long size = -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, base, bl) != 0 || strncmp(de->d_name + bl, ".tmp", 4) != 0) continue;
        char p[600];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) == 0 && (long)st.st_size > size) size = (long)st.st_size;
    }
    closedir(d);
    return size;
}

/* A run killed (SIGKILL) while it writes its report leaves the old report
 * or the complete new one, never a torn file (sim/outfile.c: a temporary
 * file beside it, fsynced, renamed).  Kill k waits, by watching the
 * temporary file, until the report is k/KILLS written: the kill moments
 * follow the write's progress, not the clock, so the test is the same on
 * a fast or a loaded machine (a run that renames first leaves the new
 * report, which passes too). */
static void test_hostile_kill_while_writing(void)
{
    char oldp[300], newp[300], tgt[300], args[1200];
    snprintf(oldp, sizeof oldp, "%s/kill_old.json", hdir);
    snprintf(newp, sizeof newp, "%s/kill_new.json", hdir);
    snprintf(tgt, sizeof tgt, "%s/kill_target.json", hdir);
    snprintf(args, sizeof args, "run --quiet --seed 2 --json %s", oldp);
    CHECK_INT(hsh(NULL, args), 0);
    snprintf(args, sizeof args, "run --quiet --json %s", newp);
    CHECK_INT(hsh(NULL, args), 0);
    size_t n_old = 0, n_new = 0;
    char *old = read_file(oldp, &n_old, NULL), *fresh = read_file(newp, &n_new, NULL);
    CHECK(old && fresh && (n_old != n_new || memcmp(old, fresh, n_old) != 0));
    if (!old || !fresh) {
        free(old);
        free(fresh);
        return;
    }
    enum { KILLS = 16 };
    int saw_old = 0, saw_new = 0, torn = 0, mid_write = 0;
    for (int k = 0; k < KILLS; k++) {
        Err e = {0};
        if (outfile_write(tgt, old, &e) < 0) { /* the old report in place */
            CHECK(0);
            break;
        }
        pid_t pid = fork();
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
            execl(hbin(), hbin(), "run", "--quiet", "--json", tgt, (char *)NULL);
            _exit(127);
        }
        CHECK(pid > 0);
        if (pid <= 0) break;
        /* wait for k/KILLS of the report in the temporary file (or the
         * run's end); 1 ms pauses between looks, at most ~10 min */
        long want = (long)((double)n_new * k / KILLS);
        int st, done = 0;
        for (long look = 0; look < 600000; look++) {
            if (waitpid(pid, &st, WNOHANG) == pid) {
                done = 1;
                break;
            }
            long sz = kill_tmp_size(hdir, "kill_target.json");
            if (sz >= 0 && sz >= want) {
                mid_write++;
                break;
            }
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (!done) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        }
        size_t n = 0;
        char *got = read_file(tgt, &n, NULL);
        if (got && n == n_old && !memcmp(got, old, n)) saw_old++;
        else if (got && n == n_new && !memcmp(got, fresh, n)) saw_new++;
        else torn++;
        free(got);
        char rm[400];
        snprintf(rm, sizeof rm, "rm -f %s.tmp*", tgt); /* a killed run leaves its temporary file */
        if (system(rm) != 0) { }
    }
    printf("     %d kills (%d while the report was being written): %d left the old report, %d the new one, "
           "%d torn\n", KILLS, mid_write, saw_old, saw_new, torn);
    CHECK_INT(torn, 0);
    CHECK_INT(saw_old + saw_new, KILLS);
    /* the report goes through a temporary file: a writer in place would
     * leave none to see, and this test would not test anything */
    CHECK(mid_write > 0);
    free(old);
    free(fresh);
}

/* servesim.write_csv crashed once its text passed LUAL_BUFFERSIZE. */
static void test_hostile_lua_write_csv(void)
{
    char script[1024], args[1400];
    snprintf(script, sizeof script,
             "local rows = {}\n"
             "for i = 1, 3000 do rows[i] = {id = 'r' .. i, x = i * 1.5, note = 'a, \"b\"'} end\n"
             "servesim.write_csv('%s', rows)\n", hpath("big.csv"));
    const char *lua = HWRITE("csv.lua", script);
    snprintf(args, sizeof args, "lua --allow-write %s %s", hdir, lua);
    CHECK_INT(hsh(NULL, args), 0);
    char *csv = read_file(hpath("big.csv"), NULL, NULL);
    CHECK(csv != NULL);
    int lines = 0;
    for (const char *p = csv; p && *p; p++) lines += *p == '\n';
    CHECK_INT(lines, 3001);
    CHECK_CONTAINS(csv, "id,note,x\nr1,\"a, \"\"b\"\"\",1.5\n");
    CHECK_CONTAINS(csv, "r3000,\"a, \"\"b\"\"\",4500\n");
    free(csv);
}

/* The end-of-run invariant checker names the request, time and rule. */
static void test_hostile_invariants(void)
{
    Request r[2];
    int64_t tt[4] = {10, 20, 15, 40};
    for (int i = 0; i < 2; i++) {
        request_init(&r[i]);
        r[i].id = i ? "b" : "a";
        r[i].t_arrive_ns = 5;
        r[i].output_tokens = 2;
        r[i].generated = 2;
        r[i].state = REQ_FINISHED;
        r[i].token_off = (uint64_t)i * 2;
        r[i].t_first_sched_ns = 5;
        r[i].t_finish_ns = tt[i * 2 + 1];
    }
    EngineStats st = {0};
    st.finished = 2;
    Err e = {0};
    tt[2] = 30;
    CHECK_INT(engine_check_invariants(r, 2, tt, &st, &e), 0);
    tt[2] = 45; /* b's first token after its second */
    CHECK_INT(engine_check_invariants(r, 2, tt, &st, &e), -1);
    CHECK_CONTAINS(e.msg, "invariant violated: request b at t = 0.000000040 s: a token before the previous one");
    tt[2] = 30;
    r[0].generated = 3;
    CHECK_INT(engine_check_invariants(r, 2, tt, &st, &e), -1);
    CHECK_CONTAINS(e.msg, "request a");
    CHECK_CONTAINS(e.msg, "emitted more tokens than its output_tokens");
    r[0].generated = 2;
    st.finished = 1;
    CHECK_INT(engine_check_invariants(r, 2, tt, &st, &e), -1);
    CHECK_CONTAINS(e.msg, "requests not conserved: 2 finished and 0 rejected by state, 1 and 0 counted");
}

/* The hostile-input corpus: tests/hostile/cases.tsv lists each file with
 * its command (`servesim` = the binary under test, {} = the file), the exit
 * status and a fragment the output must hold; a status 0 needs a note (a
 * documented success or a known fault).  Each case runs in a fresh mkdtemp
 * directory under timeout 60 and the address-space ulimit; its output must
 * be valid UTF-8, and a success must print no nan. */
static int corpus_word_nan(const char *s)
{
    for (const char *p = s; (p = strstr(p, "nan")); p++) {
        int before = p > s && ((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || p[-1] == '_');
        int after = (p[3] >= 'a' && p[3] <= 'z') || (p[3] >= 'A' && p[3] <= 'Z') || p[3] == '_';
        if (!before && !after) return 1;
    }
    return 0;
}

static void corpus_append(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(dst);
    if (n + strlen(src) < cap) memcpy(dst + n, src, strlen(src) + 1);
}

static int corpus_case(const char *dir, char *line, int lineno)
{
    char *f[5] = {0};
    int nf = 0;
    for (char *p = line; nf < 5; nf++) {
        f[nf] = p;
        char *t = strchr(p, '\t');
        if (!t) {
            nf++;
            break;
        }
        *t = '\0';
        p = t + 1;
    }
    if (nf < 4) {
        fprintf(stderr, "  cases.tsv:%d: expected file, command, status, fragment[, note]\n", lineno);
        return 1;
    }
    const char *note = nf > 4 ? f[4] : "";
    int want = atoi(f[2]);
    char wd[] = "/tmp/servesim-corpus-XXXXXX";
    if (!mkdtemp(wd)) return 1;
    /* the command: {} -> 'DIR/FILE', "servesim " -> "timeout 10 BIN ":
     * the bound of 10 s and 2 GiB per case (2 GiB of address
     * space, which bounds the resident memory too).  Under ASan (which
     * reserves terabytes of address space up front and runs several times
     * slower) only a 60 s limit applies. */
    static char cmd[8192];
#if defined(__SANITIZE_ADDRESS__)
    const char *tlimit = "timeout 60";
    snprintf(cmd, sizeof cmd, "cd '%s' && { ", wd);
#else
    const char *tlimit = "timeout 10";
    snprintf(cmd, sizeof cmd, "cd '%s' && ulimit -v 2097152 && { ", wd);
#endif
    for (const char *p = f[1]; *p;) {
        if (p[0] == '{' && p[1] == '}') {
            char path[1024];
            snprintf(path, sizeof path, "'%s/%s'", dir, f[0]);
            corpus_append(cmd, sizeof cmd, path);
            p += 2;
        } else if (!strncmp(p, "servesim ", 9) && (p == f[1] || p[-1] == ' ' || p[-1] == ';')) {
            char bin[1024], here[512];
            const char *b = hbin();
            /* the command runs in wd: a relative binary is found from here */
            if (b[0] == '/' || !getcwd(here, sizeof here)) snprintf(bin, sizeof bin, "%s %s ", tlimit, b);
            else snprintf(bin, sizeof bin, "%s '%s/%s' ", tlimit, here, b);
            corpus_append(cmd, sizeof cmd, bin);
            p += 9;
        } else {
            char c[2] = {*p++, 0};
            corpus_append(cmd, sizeof cmd, c);
        }
    }
    corpus_append(cmd, sizeof cmd, "; } 2>&1");
    FILE *pp = popen(cmd, "r");
    int got = -1;
    hout[0] = '\0';
    if (pp) {
        size_t len = fread(hout, 1, sizeof hout - 1, pp);
        hout[len] = '\0';
        int st = pclose(pp);
        got = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", wd);
    if (system(rm) != 0) fprintf(stderr, "  could not remove %s\n", wd);
    int bad = 0;
    if (got != want) {
        fprintf(stderr, "  cases.tsv:%d: %s: exit %d, expected %d\n", lineno, f[0], got, want);
        bad = 1;
    }
    if (!strstr(hout, f[3])) {
        fprintf(stderr, "  cases.tsv:%d: %s: output lacks \"%s\"\n", lineno, f[0], f[3]);
        bad = 1;
    }
    if (want != 0 && want != 124 && !f[3][0]) {
        fprintf(stderr, "  cases.tsv:%d: %s: an error case needs a message fragment\n", lineno, f[0]);
        bad = 1;
    }
    if (want == 0 && !note[0]) {
        fprintf(stderr, "  cases.tsv:%d: %s: exit 0 needs a note (documented success or known)\n", lineno, f[0]);
        bad = 1;
    }
    if (!valid_utf8(hout)) {
        fprintf(stderr, "  cases.tsv:%d: %s: output is not valid UTF-8\n", lineno, f[0]);
        bad = 1;
    }
    /* a sanitizer exits 1 like a clean error: its report must not hide */
    if (strstr(hout, "runtime error:") || strstr(hout, "AddressSanitizer") || strstr(hout, "LeakSanitizer")) {
        fprintf(stderr, "  cases.tsv:%d: %s: a sanitizer report\n", lineno, f[0]);
        bad = 1;
    }
    if (want == 0 && corpus_word_nan(hout)) {
        fprintf(stderr, "  cases.tsv:%d: %s: a success printed nan\n", lineno, f[0]);
        bad = 1;
    }
    if (bad) fprintf(stderr, "    output: %.400s\n", hout);
    return bad;
}

static void test_hostile_corpus(void)
{
    const char *d = getenv("SERVESIM_HOSTILE_DIR");
    char dir[768];
    char cwd[512];
    if (d && d[0] == '/') snprintf(dir, sizeof dir, "%s", d);
    else snprintf(dir, sizeof dir, "%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", d ? d : "tests/hostile");
    char tsv[1024];
    snprintf(tsv, sizeof tsv, "%s/cases.tsv", dir);
    FILE *f = fopen(tsv, "r");
    CHECK(f != NULL);
    if (!f) return;
    static char line[16384];
    int lineno = 0, cases = 0, failed = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        cases++;
        failed += corpus_case(dir, line, lineno);
    }
    fclose(f);
    CHECK(cases >= 150);
    CHECK_INT(failed, 0);
}

static void hostile_no_tmpdir(void)
{
    CHECK(0);
}

void suite_hostile(void);
void suite_hostile(void)
{
    snprintf(hdir, sizeof hdir, "/tmp/servesim-hostile-XXXXXX");
    if (!mkdtemp(hdir)) {
        RUN(hostile_no_tmpdir);
        return;
    }
    RUN(test_hostile_excerpt);
    RUN(test_hostile_accept_file);
    RUN(test_hostile_azure_years);
    RUN(test_hostile_generators);
    RUN(test_hostile_caps);
    RUN(test_hostile_lua_reads);
    RUN(test_hostile_paths);
    RUN(test_hostile_memory);
    RUN(test_hostile_no_output_over_input);
    RUN(test_hostile_outputs);
    RUN(test_hostile_cli);
    RUN(test_hostile_lua_write_csv);
    RUN(test_hostile_kill_while_writing);
    RUN(test_hostile_device_output);
    RUN(test_hostile_invariants);
    RUN(test_hostile_corpus);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", hdir);
    if (system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", hdir);
}
