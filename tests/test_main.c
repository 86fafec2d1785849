/*
 * test_main.c -- runs every suite and prints "N passed, N failed" last.
 *
 * Suites are declared weak so that the runner links while a module's tests
 * are being written; a suite that is absent is reported, not skipped
 * silently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_register.h"
#include "testhelp.h"

int th_failures;
static int passed, failed;
static const char *only;  /* run only tests whose name or suite contains this */
static const char *suite; /* the suite being run */

void th_rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

void th_run(const char *name, void (*fn)(void))
{
    if (only && !strstr(name, only) && !strstr(suite, only)) return;
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

int main(int argc, char **argv)
{
    if (argc > 1) only = argv[1];
    lua_plugins_register();
    int missing = 0;
#define CALL(s) suite = #s; if (suite_##s) suite_##s(); else if (!only || strstr(#s, only)) { printf("(suite %s not linked)\n", #s); missing++; }

    SUITES(CALL)
    printf("%d passed, %d failed\n", passed, failed + missing);
    return (failed + missing) ? 1 : 0;
}
