/*
 * test_main.c -- runs every suite and prints "N passed, N failed" last.
 *
 * Suites are declared weak so that the runner links while a module's tests
 * are being written; a suite that is absent is reported, not skipped
 * silently.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lua_register.h"
#include "testhelp.h"

int th_failures;
static int passed, failed;
static const char *only;  /* run only tests whose name or suite contains this */
static const char *suite; /* the suite being run */

/* Parallel runs (SERVESIM_TEST_JOBS, default the online CPUs, at most
 * TH_MAX_JOBS): the runner forks that many workers; each walks every suite
 * in order and runs a test only when it claims the test's index first (an
 * atomic flag in shared memory), so a worker held by a long test leaves the
 * next ones to the others.  Tests share no file (each suite makes its own
 * mkdtemp directory), so the order within a worker is all a test may rely
 * on: a suite's set-up runs in every worker. */
#define TH_MAX_JOBS 8
#define TH_MAX_TESTS 8192
typedef struct {
    unsigned char claimed[TH_MAX_TESTS];
    int passed, failed, missing;
} Shared;
static Shared *shared; /* NULL when serial */
static unsigned test_index;
static int worker; /* this worker's number */

void th_rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

void th_run(const char *name, void (*fn)(void))
{
    if (only && !strstr(name, only) && !strstr(suite, only)) return;
    unsigned idx = test_index++;
    if (shared) {
        if (idx >= TH_MAX_TESTS) { /* past the flags: worker 0 runs them */
            if (worker != 0) return;
        } else if (__atomic_exchange_n(&shared->claimed[idx], 1, __ATOMIC_SEQ_CST)) {
            return; /* another worker has it */
        }
    }
    th_failures = 0;
    fn();
    if (th_failures == 0) {
        passed++;
        printf("ok   %s\n", name);
    } else {
        failed++;
        printf("FAIL %s (%d checks)\n", name, th_failures);
    }
    fflush(stdout);
}

#define SUITES(X) X(jsonio) X(model) X(hw) X(evq) X(kv) X(cost) X(sched) \
    X(engine) X(workload) X(report) X(band) X(metrics) X(prefix) X(policies) X(spec) X(calib) X(lua) X(cli) X(validate) X(vheld) \
    X(plan) X(plots) X(hostile) X(fuzz) X(serveres) X(agents) X(moe) X(reproduce) X(fast)

#define DECL(s) void suite_##s(void) __attribute__((weak));
SUITES(DECL)

static int run_suites(void)
{
    int missing = 0;
#define CALL(s) suite = #s; if (suite_##s) suite_##s(); else if (!only || strstr(#s, only)) { if (worker == 0) { printf("(suite %s not linked)\n", #s); missing++; } }

    SUITES(CALL)
    return missing;
}

static int jobs_wanted(void)
{
    const char *j = getenv("SERVESIM_TEST_JOBS");
    long n = j && *j ? strtol(j, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > TH_MAX_JOBS ? TH_MAX_JOBS : (int)n;
}

int main(int argc, char **argv)
{
    if (argc > 1) only = argv[1];
    lua_plugins_register();
    int jobs = jobs_wanted(), missing = 0;
    if (jobs > 1)
        shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (jobs <= 1 || shared == MAP_FAILED) {
        shared = NULL;
        missing = run_suites();
    } else {
        memset(shared, 0, sizeof *shared);
        fflush(stdout);
        fflush(stderr);
        pid_t pids[TH_MAX_JOBS];
        for (int w = 0; w < jobs; w++) {
            pids[w] = fork();
            if (pids[w] == 0) {
                worker = w;
                int m = run_suites();
                __atomic_add_fetch(&shared->passed, passed, __ATOMIC_SEQ_CST);
                __atomic_add_fetch(&shared->failed, failed, __ATOMIC_SEQ_CST);
                __atomic_add_fetch(&shared->missing, m, __ATOMIC_SEQ_CST);
                fflush(stdout);
                fflush(stderr);
                exit(0);
            }
            if (pids[w] < 0) { /* no worker: the rest run here */
                missing = run_suites();
                jobs = w;
                break;
            }
        }
        for (int w = 0; w < jobs; w++) {
            int st = 0;
            if (waitpid(pids[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("FAIL test worker %d ended abnormally (status %d): its current test did not finish\n", w, st);
                failed++;
            }
        }
        passed += shared->passed;
        failed += shared->failed;
        missing += shared->missing;
    }
    printf("%d passed, %d failed\n", passed, failed + missing);
    return (failed + missing) ? 1 : 0;
}
