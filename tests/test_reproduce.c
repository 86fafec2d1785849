/*
 * test_reproduce.c -- `servesim reproduce` (issue 19): every case of the
 * chapters passes, the JSON carries the computed values (checked here
 * against the chapters' numbers, so a case that read the wrong value would
 * fail twice), --list names the pending cases, and an edited input file
 * changes the computed value and fails its case.  Runs the binary named by
 * $SERVESIM_BIN (make test sets it) in a directory of its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "testhelp.h"

static char dir[256];

static int sh(const char *env, const char *args, char *out, size_t n)
{
    char cmd[4096];
    const char *b = getenv("SERVESIM_BIN");
    snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", env ? env : "", b ? b : "./servesim", args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    while (fread(cmd, 1, sizeof cmd, p) > 0) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const cJSON *find_case(const cJSON *root, const char *name)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return c;
    }
    return NULL;
}

static double computed(const cJSON *root, const char *name)
{
    const cJSON *c = find_case(root, name);
    const cJSON *v = c ? cJSON_GetObjectItemCaseSensitive(c, "computed") : NULL;
    if (!cJSON_IsNumber(v)) {
        fprintf(stderr, "  case %s: no computed value\n", name);
        return NAN;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "pass");
    if (!cJSON_IsTrue(p)) fprintf(stderr, "  case %s did not pass\n", name);
    return v->valuedouble;
}

static void test_reproduce_all(void)
{
    static char out[1 << 16], args[1024];
    snprintf(args, sizeof args, "reproduce all --json %s/all.json", dir);
    CHECK_INT(sh(NULL, args, out, sizeof out), 0);
    CHECK_CONTAINS(out, "seed 000: chapter 31");
    CHECK_CONTAINS(out, "seed 003: chapter 8");
    CHECK_CONTAINS(out, "0 failed");
    /* the lines reproduce/README.md and README.md quote */
    CHECK_CONTAINS(out, "245 cases: 240 passed, 0 failed, 5 pending (not computable from the chapter's inputs: see "
                        "--list)");
    CHECK_CONTAINS(out, "  PASS    t31.2-ttft-B-serial                       240          240  +-1e-06      ms      000 31.2 "
                        "table 31.2, B serial TTFT (260 - 20)");
    CHECK_CONTAINS(out, "  PASS    s8.1-request-time                        6.85      6.79029  +-0.1        s       003 8.1 "
                        "figure 8-2: one 2K request, 0.096 + 255 x 0.0265 s\n          calibrated roofline of the same "
                        "GPU (instead of the chapter's step model): 2.92869 s");
    CHECK_CONTAINS(out, "calibrated roofline of the same GPU (instead of the chapter's step model): 30.0374 x");
    CHECK_CONTAINS(out, "  PASS    s8.6-board-B-engine                      9.01      8.63903  +-0.4        s       003 8.6 "
                        "board B through the engine and the step model: about 9.01 s\n          calibrated roofline of "
                        "the same GPU (instead of the chapter's step model): 8.37158 s");
    CHECK_CONTAINS(out, "  PASS    s8.3-cancel-release                        31      27.8553  +-3.5        ms      003 8.3 "
                        "figure 8-16: 104 blocks released about 31 ms after cancel\n");
    CHECK_CONTAINS(out, "  pending s8.4-hybrid-v41                         9.531            -  +-0          MiB     003 8.4 "
                        "DeepSeek V4.1 8K state 9.531 MiB\n          needs inputs the chapter does not give: DeepSeek "
                        "V4/V4.1's layer counts");
    CHECK_CONTAINS(out, "  PASS    s8.2-step-decode-2k                     26.26      26.2565  +-0.005      ms      003 8.2 "
                        "step model: 2K decode 26.26 ms\n          calibrated roofline of the same GPU (instead of the "
                        "chapter's step model): 11.1117 ms");
    CHECK_CONTAINS(out, "calibrated roofline of the same GPU (instead of the chapter's step model): 90.5394 ms");
    CHECK_CONTAINS(out, "calibrated roofline of the same GPU (instead of the chapter's step model): 14.879 ms");
    CHECK_CONTAINS(out, "  PASS    s8.2-dw                           15136811008  15136811008  +-0          B");
    snprintf(args, sizeof args, "%s/all.json", dir);
    Err e;
    char *text = read_text_file(args, NULL, &e);
    CHECK(text != NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(root != NULL);
    if (!root) return;
    int n = 0, pass = 0, pend = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases"))
    {
        n++;
        static const char *const keys[] = {"name", "source", "book", "computed", "tolerance", "pass", "note"};
        for (int k = 0; k < 7; k++) CHECK(cJSON_GetObjectItemCaseSensitive(c, keys[k]) != NULL);
        pass += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "pass"));
        pend += cJSON_GetObjectItemCaseSensitive(c, "pending") != NULL;
    }
    CHECK_INT(n, 245);
    CHECK_INT(pass, 240);
    CHECK_INT(pend, 5);
    CHECK_INT(pass + pend, n);
    /* the computed values are the chapters' numbers */
    CHECK_NEAR(computed(root, "t31.2-ttft-B-serial"), 240, 1e-6);
    CHECK_NEAR(computed(root, "t31.2-ttft-B-continuous"), 130, 1e-6);
    CHECK_NEAR(computed(root, "e31.4-throughput-serial"), 16.667, 0.0005);
    CHECK_NEAR(computed(root, "e31.4-cost-per-1k-continuous"), 0.018519, 1e-6);
    CHECK_NEAR(computed(root, "e31.2-naive-average"), 4.0 / 3.0, 1e-12);
    CHECK_NEAR(computed(root, "e31.3-resample-p-paris"), 0.72, 0.005);
    CHECK_NEAR(computed(root, "s31.3-prefix-B"), 3, 0);
    CHECK_NEAR(computed(root, "s8.1-admit-2k"), 37, 0);
    CHECK_NEAR(computed(root, "s8.1-admit-2k-engine"), 37, 0);
    CHECK_NEAR(computed(root, "s8.1-admit-2k-on-demand"), 42, 0);
    CHECK_NEAR(computed(root, "s8.3-admit-shared"), 35, 0);
    CHECK_NEAR(computed(root, "s8.3-admit-shared-engine"), 35, 0);
    CHECK_NEAR(computed(root, "ex8.1-bkv-2k"), 51, 0);
    CHECK_NEAR(computed(root, "ex8.1-bkv-8k"), 13, 0);
    CHECK_NEAR(computed(root, "s8.3-paged-shared"), 44, 0);
    CHECK_NEAR(computed(root, "s8.3-branch-physical"), 131, 0);
    CHECK_NEAR(computed(root, "ex8.2-r2-iteration"), 375.97, 0.005);
    CHECK_NEAR(computed(root, "s8.2-graph-17-padding"), 15, 0);
    CHECK_NEAR(computed(root, "s8.6-board-B-time"), 2.04 + 255 * 0.02735, 1e-6);
    CHECK_NEAR(computed(root, "s8.6-board-D-time"), 2.23 + 85 * 0.02735, 1e-6);
    CHECK_NEAR(computed(root, "s8.6-board-one-option"), 1, 0);
    CHECK_NEAR(computed(root, "s8.6-board-6gib"), 0, 0);
    CHECK_NEAR(computed(root, "s8.5-ms-a075"), 26.36 / 3.05078125, 1e-9);
    CHECK_NEAR(computed(root, "s8.5-index-total"), 2 + 0.256 * 26.36 / 3.05078125, 1e-9);
    CHECK_NEAR(computed(root, "s8.6-prefill-16x8k"), 2137.509, 0.001);
    CHECK_NEAR(computed(root, "s8.6-little-05"), 4000 * 0.5 / (3999 / 4.0 + 0.5), 1e-6);
    /* a chapter inconsistency is stated with both values */
    const cJSON *g = find_case(root, "s8.2-chunk-growth");
    CHECK(g && strstr(cJSON_GetObjectItemCaseSensitive(g, "note")->valuestring, "42.18 -> 53.98"));
    /* measured-experiment cases print the calibrated roofline beside */
    g = find_case(root, "s8.1-request-time");
    CHECK(g && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(g, "roofline")));
    /* pending cases say why they cannot be computed and do not pass */
    g = find_case(root, "s8.4-hybrid-v4");
    CHECK(g && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(g, "pass")));
    CHECK(g && strstr(cJSON_GetObjectItemCaseSensitive(g, "pending")->valuestring, "inputs the chapter does not give"));
    g = find_case(root, "s8.3-agent-hits-6gib");
    CHECK(g && strstr(cJSON_GetObjectItemCaseSensitive(g, "pending")->valuestring, "12-round agent replay"));
    /* issue 18 part B: the cancel's release one step later through the
     * engine (1.6 + step(1, 1648) = 27.86 ms against the chapter's measured
     * ~31 ms, both shown), its 104 blocks; Tc = 0.8 ms through the cost
     * wrapper; exercise 8-8 through tasks_amdahl */
    g = find_case(root, "s8.3-cancel-release");
    CHECK(g && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "pass")));
    CHECK(g && strstr(cJSON_GetObjectItemCaseSensitive(g, "note")->valuestring, "27.86 ms"));
    CHECK_NEAR(computed(root, "s8.3-cancel-release"),
               1.6 + 26.22 + 30.4e-3 + 3e-6 * (1648 + 1), 2e-6);
    CHECK_NEAR(computed(root, "s8.3-cancel-blocks"), 104, 0);
    CHECK_NEAR(computed(root, "s8.3-cancel-return"), 1.6, 2e-6);
    CHECK_NEAR(computed(root, "s8.4-q8-conversion-slower"), 0.8 - computed(root, "s8.4-q8-saves-ms"), 1e-9);
    CHECK_NEAR(computed(root, "s8.4-q8-conversion-slower"), 0.313, 0.002);
    CHECK_NEAR(computed(root, "ex8.8-halve-prefill"), 90, 1e-9);
    CHECK_NEAR(computed(root, "ex8.8-halve-decode"), 75, 1e-9);
    CHECK_NEAR(computed(root, "ex8.8-halve-tool"), 85, 1e-9);
    CHECK_NEAR(computed(root, "ex8.8-decode-4x-drafts"), 70.5, 1e-9);
    /* issue 17: Q2_K, MLA, KDA snapshots, the 235B Q2_K file */
    CHECK_NEAR(computed(root, "s8.4-q2k-bytes"), 84, 0);
    CHECK_NEAR(computed(root, "s8.4-q2k-bits"), 2.625, 1e-12);
    CHECK_NEAR(computed(root, "s8.4-mla-8k"), 8192.0 * 61 * 576 * 2 / (1024.0 * 1024), 1e-9);
    CHECK_NEAR(computed(root, "s8.4-mla-8k"), 549, 1e-9);
    CHECK_NEAR(computed(root, "s8.3-kda-recompute"), 2560, 0);
    CHECK_NEAR(computed(root, "s8.3-kda-restore-from"), 8192, 0);
    CHECK_NEAR(computed(root, "s8.3-kda-snapshots-2"), 2 * 53.6, 1e-9);
    CHECK_NEAR(computed(root, "s8.3-kda-snapshots-32"), 32 * 53.6, 1e-9);
    CHECK_NEAR(computed(root, "s8.4-235b-q2k"), 79.80, 0.01);
    CHECK_NEAR(computed(root, "s8.4-235b-q2k-codes"), 64.43, 0.005);
    CHECK_NEAR(computed(root, "s8.4-235b-q2k-meta"), 15.37, 0.005);
    /* issue 18 part A's calculators, switched on */
    CHECK_NEAR(computed(root, "s8.2-lora-adapter-mib"), 14.625, 1e-9);
    CHECK_NEAR(computed(root, "s8.4-offload-net-2"), 2016, 1e-9);
    CHECK_NEAR(computed(root, "s8.3-value-per-mib-A"), 0.154, 0.001);
    cJSON_Delete(root);
    /* deterministic: the same bytes again */
    snprintf(args, sizeof args, "reproduce all --json %s/again.json > /dev/null && cmp %s/all.json %s/again.json && echo same",
             dir, dir, dir);
    CHECK_INT(sh(NULL, args, out, sizeof out), 0);
    CHECK_CONTAINS(out, "same");
}

static void test_reproduce_list_and_errors(void)
{
    static char out[1 << 16];
    CHECK_INT(sh(NULL, "reproduce --list", out, sizeof out), 0);
    CHECK_CONTAINS(out, "ready   s8.3-cancel-release ");
    CHECK_CONTAINS(out, "pending s8.3-preempt-1gib ");
    CHECK_CONTAINS(out, "pending s8.4-hybrid-v41 ");
    CHECK_CONTAINS(out, "needs inputs the chapter does not give: its 12-round agent replay");
    CHECK_CONTAINS(out, "needs inputs the chapter does not give: DeepSeek V4/V4.1");
    CHECK_CONTAINS(out, "needs inputs the chapter does not give: the workload of its 1 GiB pool observation");
    CHECK(strstr(out, "needs issue 1") == NULL); /* no case waits for another issue any more */
    CHECK_CONTAINS(out, "ready   s8.1-admit-2k ");
    CHECK_INT(sh(NULL, "reproduce s8.1-admit-2k", out, sizeof out), 0);
    CHECK_CONTAINS(out, "s8.1-admit-2k: PASS");
    CHECK_CONTAINS(out, "input:     workloads/chapters/ch8_capacity_2k.json");
    CHECK_CONTAINS(out, "computed:  37 requests");
    CHECK_INT(sh(NULL, "reproduce no-such-case", out, sizeof out), 2);
    CHECK_CONTAINS(out, "no case named 'no-such-case'");
    CHECK_INT(sh(NULL, "reproduce --bogus", out, sizeof out), 2);
    CHECK_INT(sh(NULL, "reproduce all --json", out, sizeof out), 2);
    CHECK_CONTAINS(out, "--json needs a value");
}

/* A reader edits one input and reruns: the computed value follows the
 * file, and a case that no longer matches the book fails (exit 1). */
static void test_reproduce_edit_input(void)
{
    static char out[1 << 16], cmd[4096], env[600];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/tree/workloads && ln -s %s/models %s/tree/models && cp -r %s/workloads/chapters "
             "%s/tree/workloads/ && sed -i 's/\"capacity_gib\": 12/\"capacity_gib\": 6/' "
             "%s/tree/workloads/chapters/ch8_capacity_2k.json",
             dir, SERVESIM_DATA_DIR, dir, SERVESIM_DATA_DIR, dir, dir);
    CHECK_INT(system(cmd), 0);
    snprintf(env, sizeof env, "SERVESIM_DATA=%s/tree", dir);
    CHECK_INT(sh(env, "reproduce s8.1-admit-2k", out, sizeof out), 1);
    CHECK_CONTAINS(out, "s8.1-admit-2k: FAIL");
    /* 6 GiB = 2730 blocks of 16 tokens, 144 blocks a request: 18 */
    CHECK_CONTAINS(out, "computed:  18 requests");
    /* a broken input names the file and the key */
    snprintf(cmd, sizeof cmd, "sed -i 's/\"block_tokens\": 16/\"block_tokens\": -3/' %s/tree/workloads/chapters/ch8_capacity_2k.json",
             dir);
    CHECK_INT(system(cmd), 0);
    CHECK_INT(sh(env, "reproduce s8.1-admit-2k", out, sizeof out), 1);
    CHECK_CONTAINS(out, "ch8_capacity_2k.json: block_tokens: got -3, expected an integer in [1, 4096]");
    /* issue 17's snapshots: a match through 12,000 restores from 8192 and
     * recomputes 3808; issue 18's Amdahl calculator names a wrong part */
    snprintf(cmd, sizeof cmd, "sed -i 's/\"matched\": 10752/\"matched\": 12000/' %s/tree/workloads/chapters/ch8_kda_snapshots.json"
             " && sed -i 's/\"speedup_part\": \"decode\"/\"speedup_part\": \"decod\"/' "
             "%s/tree/workloads/chapters/ch8_amdahl_ex8_8.json", dir, dir);
    CHECK_INT(system(cmd), 0);
    CHECK_INT(sh(env, "reproduce s8.3-kda-recompute", out, sizeof out), 1);
    CHECK_CONTAINS(out, "computed:  3808 tokens");
    CHECK_INT(sh(env, "reproduce ex8.8-decode-4x-drafts", out, sizeof out), 1);
    CHECK_CONTAINS(out, "ch8_amdahl_ex8_8.json.speedup_part: got \"decod\", expected the name of one of \"parts\"");
}

/* The chapter's experiment as a named step profile. */
static void test_named_step_profile(void)
{
    static char out[1 << 16], args[1024];
    snprintf(args, sizeof args, "run %s/workloads/chapters/ch8_single_2k.json --json %s/one.json --quiet",
             SERVESIM_DATA_DIR, dir);
    CHECK_INT(sh(NULL, args, out, sizeof out), 0);
    snprintf(args, sizeof args, "%s/bad.json", dir);
    FILE *f = fopen(args, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"model\": \"qwen3-8b\", \"hardware\": \"rtx-pro-6000\", \"cost_model\": \"ch8-experiment-9\", "
          "\"scheduler\": {\"kind\": \"static\"}, \"workload\": {\"requests\": [{\"arrival_ms\": 0, "
          "\"prompt_tokens\": 8, \"output_tokens\": 2}]}}",
          f);
    fclose(f);
    snprintf(args, sizeof args, "run %s/bad.json", dir);
    CHECK_INT(sh(NULL, args, out, sizeof out), 1);
    CHECK_CONTAINS(out, "bad.json: cost_model: unknown step profile \"ch8-experiment-9\"");
    CHECK_CONTAINS(out, "available: ch8-experiment-8-1");
}

/* --plots DIR: the schedule figures through servesim plot (the pictures
 * only where gnuplot is installed; the data and the reports always). */
static void test_reproduce_plots(void)
{
    static char out[1 << 16], args[1024];
    int have_gnuplot = system("command -v gnuplot > /dev/null 2>&1") == 0;
    snprintf(args, sizeof args, "reproduce t31.2-ttft-A-serial --plots %s/plots", dir);
    snprintf(out, sizeof out, "mkdir -p %s/plots", dir);
    CHECK_INT(system(out), 0);
    int rc = sh(NULL, args, out, sizeof out);
    if (!have_gnuplot) {
        CHECK_CONTAINS(out, "gnuplot");
        return;
    }
    CHECK_INT(rc, 0);
    CHECK_CONTAINS(out, "plots written to");
    static const char *const files[] = {"four_requests.png", "table_31_1.png", "goodput_vs_rate.png",
                                        "four_requests_continuous.json", "goodput_vs_rate.json"};
    for (int i = 0; i < 5; i++) {
        snprintf(args, sizeof args, "%s/plots/%s", dir, files[i]);
        FILE *f = fopen(args, "rb");
        CHECK(f != NULL);
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        CHECK(ftell(f) > 1000);
        fclose(f);
    }
}

static void reproduce_no_tmpdir(void)
{
    fprintf(stderr, "  cannot create a temporary directory like %s\n", dir);
    CHECK(0);
}

void suite_reproduce(void);
void suite_reproduce(void)
{
    snprintf(dir, sizeof dir, "/tmp/servesim-repro-XXXXXX");
    if (!mkdtemp(dir)) {
        RUN(reproduce_no_tmpdir);
        return;
    }
    RUN(test_reproduce_all);
    RUN(test_reproduce_list_and_errors);
    RUN(test_reproduce_edit_input);
    RUN(test_named_step_profile);
    RUN(test_reproduce_plots);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
