/*
 * testhelp.h -- a tiny test helper in the manner of Redis' testhelp.h.
 *
 * A test is a function; CHECK* record failures with file and line; RUN
 * counts the test as passed when none of its checks failed.  The runner's
 * last line is "N passed, N failed".
 */
#ifndef SERVESIM_TESTHELP_H
#define SERVESIM_TESTHELP_H

#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int th_failures;  /* checks failed in the current test */

#define CHECK(c) do { if (!(c)) { th_failures++; \
    fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); if (_a != _b) { \
    th_failures++; fprintf(stderr, "  %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, _a, _b); } } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (double)(a), _b = (double)(b); \
    if (!(fabs(_a - _b) <= (tol))) { th_failures++; \
    fprintf(stderr, "  %s:%d: %s == %.12g, expected %.12g (tol %g)\n", __FILE__, __LINE__, #a, _a, _b, (double)(tol)); } } while (0)
#define CHECK_REL(a, b, rel) CHECK_NEAR(a, b, fabs((double)(b)) * (rel))
#define CHECK_CONTAINS(s, sub) do { const char *_s = (s); if (!_s || !strstr(_s, (sub))) { th_failures++; \
    fprintf(stderr, "  %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, _s ? _s : "(null)", (sub)); } } while (0)

void th_run(const char *name, void (*fn)(void));
/* rm -rf of a test's own temporary directory (a mkdtemp name: no quote in it), checked. */
void th_rm_tree(const char *dir);
/* Under `make valgrind` (SERVESIM_VALGRIND set: every servesim run some
 * 30x slower) and `make asan` (some 3x) the tests that check many
 * streamed runs against the previous release's fixtures take one case in
 * every TH_LIGHT_STEP: the code paths stay covered, the suites stay within
 * CI's time; else 1 (every case). */
#define TH_LIGHT_STEP 3
static inline size_t th_step(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return TH_LIGHT_STEP;
#else
    return getenv("SERVESIM_VALGRIND") ? TH_LIGHT_STEP : 1;
#endif
}
#define RUN(fn) th_run(#fn, fn)

#endif
