/*
 * testrun.c -- see testrun.h.
 */
#include "testrun.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jsonio.h"
#include "report.h"

TestRun *testrun_new(const char *text, const char *name)
{
    TestRun *R = calloc(1, sizeof *R);
    if (!R) return NULL;
    if (scenario_load_text(text, name, 0, 0, &R->s, &R->e) < 0) {
        fprintf(stderr, "  %s\n", R->e.msg);
        free(R);
        return NULL;
    }
    R->c = cluster_new(&R->s, NULL, &R->e);
    if (!R->c || cluster_run(R->c, &R->e) < 0) {
        fprintf(stderr, "  %s\n", R->e.msg);
        cluster_free(R->c);
        scenario_free(&R->s);
        free(R);
        return NULL;
    }
    scenario_metrics_cfg(&R->s, &R->mc, R->slo, METRICS_CLS_MAX);
    cluster_rundata(R->c, &R->rd);
    metrics_summarize(&R->mc, &R->rd, &R->m);
    return R;
}

void testrun_free(TestRun *R)
{
    if (!R) return;
    cluster_free(R->c);
    scenario_free(&R->s);
    free(R);
}

const Request *testrun_req(const TestRun *R, const char *id)
{
    for (uint32_t i = 0; i < R->s.wl.n; i++)
        if (!strcmp(R->s.wl.reqs[i].id, id)) return &R->s.wl.reqs[i];
    return NULL;
}

const char *testrun_bin(void)
{
    const char *b = getenv("SERVESIM_BIN");
    return b ? b : "./servesim";
}

int testrun_popen(const char *cmd, char *out, size_t n)
{
    size_t len = strlen(cmd) + 8;
    char *c = malloc(len);
    if (!c) return -1;
    snprintf(c, len, "%s 2>&1", cmd);
    FILE *p = popen(c, "r");
    free(c);
    if (!p) return -1;
    size_t got = fread(out, 1, n - 1, p);
    out[got] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int testrun_cli(const char *args, char *out, size_t n)
{
    size_t len = strlen(testrun_bin()) + strlen(args) + 2;
    char *c = malloc(len);
    if (!c) return -1;
    snprintf(c, len, "%s %s", testrun_bin(), args);
    int rc = testrun_popen(c, out, n);
    free(c);
    return rc;
}

int testrun_band_figure(const char *engine, const char *metric, double *mape, double *bias)
{
    Err e = {0};
    cJSON *root = jsonio_parse_file(SERVESIM_DATA_DIR "/models/engines/error_bands.json", &e);
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "engines"), engine);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(eng, metric);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "mape"), *b = cJSON_GetObjectItemCaseSensitive(m, "bias");
    int ok = cJSON_IsNumber(a) && cJSON_IsNumber(b);
    *mape = ok ? a->valuedouble : NAN;
    *bias = ok ? b->valuedouble : NAN;
    cJSON_Delete(root);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------- fixtures */

#define TESTRUN_FIXTURE_DIR SERVESIM_DATA_DIR "/tests/fixtures/stream"

/* 0: comparing; 1: regenerating; 2: SERVESIM_REGEN_FIXTURES names another
 * commit than the fixtures' (every fixture check fails, saying so). */
static int fixture_mode = -1;
static char fixture_commit[64];

static int fixture_regen_mode(void)
{
    if (fixture_mode >= 0) return fixture_mode;
    const char *want = getenv("SERVESIM_REGEN_FIXTURES");
    fixture_mode = 0;
    if (!want || !*want) return fixture_mode;
    FILE *f = fopen(TESTRUN_FIXTURE_DIR "/COMMIT", "r");
    if (!f || fscanf(f, "%63s", fixture_commit) != 1) fixture_commit[0] = '\0';
    if (f) fclose(f);
    /* an abbreviation of at least 7 hex digits will do */
    size_t n = strlen(want);
    fixture_mode = n >= 7 && fixture_commit[0] && !strncmp(fixture_commit, want, n) ? 1 : 2;
    return fixture_mode;
}

int testrun_regen(void)
{
    return fixture_regen_mode() == 1;
}

int testrun_cli_run(const char *args, char *out, size_t n)
{
    size_t len = strlen(args) + 32;
    char *c = malloc(len);
    if (!c) return -1;
    /* the only place the tests name the materialised path: the previous
     * release's outputs, written as fixtures */
    snprintf(c, len, "run %s%s", testrun_regen() ? "--materialise " : "", args);
    int rc = testrun_cli(c, out, n);
    free(c);
    return rc;
}

/* Appends text[0, n) to the growing buffer *b (length *len, room *cap). */
static int fixture_put(char **b, size_t *len, size_t *cap, const char *text, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = (*len + n + 1) * 2;
        char *nb = realloc(*b, c);
        if (!nb) return -1;
        *b = nb;
        *cap = c;
    }
    memcpy(*b + *len, text, n);
    *len += n;
    (*b)[*len] = '\0';
    return 0;
}

/* text with each from[i] replaced by to[i] (the earlier pair first where
 * both match); NULL when out of memory. */
static char *fixture_normalise(const char *text, size_t n, const char *const *from, const char *const *to, int pairs,
                               size_t *out_len)
{
    char *b = NULL;
    size_t len = 0, cap = 0;
    if (fixture_put(&b, &len, &cap, "", 0) < 0) return NULL;
    size_t i = 0;
    while (i < n) {
        int hit = -1;
        for (int k = 0; k < pairs && hit < 0; k++) {
            size_t fl = from[k] ? strlen(from[k]) : 0;
            if (fl && fl <= n - i && !memcmp(text + i, from[k], fl)) hit = k;
        }
        int rc;
        if (hit >= 0) {
            rc = fixture_put(&b, &len, &cap, to[hit], strlen(to[hit]));
            i += strlen(from[hit]);
        } else {
            rc = fixture_put(&b, &len, &cap, text + i, 1);
            i++;
        }
        if (rc < 0) {
            free(b);
            return NULL;
        }
    }
    *out_len = len;
    return b;
}

/* SHA-256 (FIPS 180-4) of a fixture too large to commit as bytes. */
static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define SHA256_ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], a[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = SHA256_ROR(w[i - 15], 7) ^ SHA256_ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = SHA256_ROR(w[i - 2], 17) ^ SHA256_ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(a, h, sizeof a);
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = SHA256_ROR(a[4], 6) ^ SHA256_ROR(a[4], 11) ^ SHA256_ROR(a[4], 25);
        uint32_t t1 = a[7] + S1 + ((a[4] & a[5]) ^ (~a[4] & a[6])) + sha256_k[i] + w[i];
        uint32_t S0 = SHA256_ROR(a[0], 2) ^ SHA256_ROR(a[0], 13) ^ SHA256_ROR(a[0], 22);
        uint32_t t2 = S0 + ((a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]));
        memmove(a + 1, a, 7 * sizeof *a);
        a[4] += t1;
        a[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) h[i] += a[i];
}

/* hex: 65 bytes, the lower-case digest and a NUL. */
static void sha256_hex(const char *text, size_t n, char hex[65])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) sha256_block(h, p + i);
    unsigned char last[128] = {0};
    size_t rest = n - i, blocks = rest + 9 > 64 ? 2 : 1;
    memcpy(last, p + i, rest);
    last[rest] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int k = 0; k < 8; k++) last[blocks * 64 - 1 - (size_t)k] = (unsigned char)(bits >> (8 * k));
    for (size_t b = 0; b < blocks; b++) sha256_block(h, last + 64 * b);
    for (int k = 0; k < 8; k++) snprintf(hex + 8 * k, 9, "%08x", (unsigned)h[k]);
}

/* The end of the JSON string that opens at t[i]. */
static size_t fixture_json_string_end(const char *t, size_t i, size_t n)
{
    for (i++; i < n && t[i] != '"'; i++)
        if (t[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

/* The end of the JSON value (object, array, string or literal) at t[i]. */
static size_t fixture_json_value_end(const char *t, size_t i, size_t n)
{
    if (i < n && t[i] == '"') return fixture_json_string_end(t, i, n);
    if (i < n && (t[i] == '{' || t[i] == '[')) {
        int depth = 0;
        while (i < n) {
            if (t[i] == '"') {
                i = fixture_json_string_end(t, i, n);
                continue;
            }
            if (t[i] == '{' || t[i] == '[') depth++;
            if ((t[i] == '}' || t[i] == ']') && --depth == 0) return i + 1;
            i++;
        }
        return n;
    }
    while (i < n && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != '\n') i++;
    return i;
}

static int fixture_starts(const char *t, size_t i, size_t n, const char *with)
{
    size_t k = strlen(with);
    return k <= n - i && !memcmp(t + i, with, k);
}

/* text with the engine's measured error band made "@BAND@": the table's
 * "  model error" line and the "    mean TTFT/TPOT" lines under it become
 * one line, a JSON report's "error_band" value (and the "error_band_note"
 * beside it when there is none) one string.  The band is data that
 * `validate --bands` refits (models/engines/error_bands.json), not the
 * engine path's output, and the tests follow the file (testrun_band_figure);
 * a refit must not move the fixtures.  NULL when out of memory. */
static char *fixture_unband(const char *t, size_t n, size_t *out_len)
{
    char *b = NULL;
    size_t len = 0, cap = 0;
    if (fixture_put(&b, &len, &cap, "", 0) < 0) return NULL;
    size_t i = 0;
    int rc = 0;
    while (i < n && rc == 0) {
        if ((i == 0 || t[i - 1] == '\n') && fixture_starts(t, i, n, "  model error")) {
            do {
                while (i < n && t[i] != '\n') i++;
                if (i < n) i++;
            } while (fixture_starts(t, i, n, "    mean TTFT") || fixture_starts(t, i, n, "    mean TPOT"));
            static const char line[] = "  model error: @BAND@\n";
            rc = fixture_put(&b, &len, &cap, line, sizeof line - 1);
        } else if (fixture_starts(t, i, n, "\"error_band\":")) {
            i += strlen("\"error_band\":");
            while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
            i = fixture_json_value_end(t, i, n);
            /* a note beside a null band goes with it */
            size_t j = i;
            if (j < n && t[j] == ',') {
                for (j++; j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n'); j++) {}
                if (fixture_starts(t, j, n, "\"error_band_note\":")) {
                    for (j += strlen("\"error_band_note\":"); j < n && (t[j] == ' ' || t[j] == '\t'); j++) {}
                    i = fixture_json_value_end(t, j, n);
                }
            }
            static const char band[] = "\"error_band\":\t\"@BAND@\"";
            rc = fixture_put(&b, &len, &cap, band, sizeof band - 1);
        } else {
            rc = fixture_put(&b, &len, &cap, t + i, 1);
            i++;
        }
    }
    if (rc < 0) {
        free(b);
        return NULL;
    }
    *out_len = len;
    return b;
}

static void fixture_path(char *path, size_t n, const char *name)
{
    snprintf(path, n, "%s/%s", TESTRUN_FIXTURE_DIR, name);
}

char *testrun_fixture_read(const char *name, size_t *len)
{
    char path[1024];
    fixture_path(path, sizeof path, name);
    Err e = {0};
    size_t l = 0;
    char *t = read_file(path, &l, &e);
    if (!t) fprintf(stderr, "  fixture %s: %s (tests/fixtures/stream/regen.sh makes it)\n", name, e.msg);
    if (len) *len = l;
    return t;
}

/* One line of text (from its start ls) for a message: at most 160
 * characters around column col. */
static void fixture_print_line(const char *label, const char *text, size_t n, size_t ls, size_t col)
{
    size_t le = ls;
    while (le < n && text[le] != '\n') le++;
    size_t from = ls + (col > 80 ? col - 80 : 0), to = from + 160 < le ? from + 160 : le;
    fprintf(stderr, "    %s %s%.*s%s\n", label, from > ls ? "..." : "", (int)(to - from), text + from,
            to < le ? "..." : "");
}

/* 0 when want[0, wl) and got[0, gl) are the same bytes; else -1, the
 * first differing line of fixture name printed from both. */
static int fixture_diff(const char *want, size_t wl, const char *got, size_t gl, const char *name)
{
    if (wl == gl && memcmp(want, got, gl) == 0) return 0;
    size_t i = 0, line = 1, ls = 0;
    while (i < gl && i < wl && want[i] == got[i]) {
        if (got[i] == '\n') {
            line++;
            ls = i + 1;
        }
        i++;
    }
    fprintf(stderr, "  fixture %s differs at line %zu (byte %zu; the fixture has %zu bytes, this run %zu):\n", name,
            line, i, wl, gl);
    fixture_print_line("fixture: ", want, wl, ls, i - ls);
    fixture_print_line("this run:", got, gl, ls, i - ls);
    return -1;
}

/* Under valgrind (make valgrind sets SERVESIM_VALGRIND) a long double is
 * computed as a double -- GSL's means and variances accumulate in long
 * double -- so a statistic may move by a unit in its 12th printed digit.
 * There a text fixture is the same when it differs only in numbers within
 * a relative 1e-9 of each other, and a digest is not compared (make test
 * compares both exactly). */
static int fixture_valgrind(void)
{
    return getenv("SERVESIM_VALGRIND") != NULL;
}

static int fixture_number_at(const char *t, size_t i, size_t n)
{
    return i < n && (isdigit((unsigned char)t[i]) ||
                     ((t[i] == '-' || t[i] == '.') && i + 1 < n && isdigit((unsigned char)t[i + 1])));
}

/* want and got alike but for numbers within a relative 1e-9 (both
 * NUL-terminated, so strtod stops at their ends). */
static int fixture_same_numbers(const char *want, size_t wl, const char *got, size_t gl)
{
    size_t i = 0, j = 0;
    while (i < wl && j < gl) {
        /* a number starts where the previous character cannot continue one */
        int at_start = i == 0 || !(isalnum((unsigned char)want[i - 1]) || want[i - 1] == '.');
        if (at_start && fixture_number_at(want, i, wl) && fixture_number_at(got, j, gl)) {
            char *ew, *eg;
            double a = strtod(want + i, &ew), b = strtod(got + j, &eg);
            if (!(fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)))) return 0;
            i = (size_t)(ew - want);
            j = (size_t)(eg - got);
            continue;
        }
        if (want[i] != got[j]) return 0;
        i++;
        j++;
    }
    return i == wl && j == gl;
}

/* fixture_diff, but under valgrind numbers within its rounding pass. */
static int fixture_check(const char *want, size_t wl, const char *got, size_t gl, const char *name)
{
    if (fixture_valgrind() && fixture_same_numbers(want, wl, got, gl)) return 0;
    return fixture_diff(want, wl, got, gl, name);
}

/* Writes the fixture (regenerating), its directory made as needed. */
static int fixture_write(const char *name, const char *text, size_t n)
{
    char path[1024];
    fixture_path(path, sizeof path, name);
    for (char *p = path + strlen(TESTRUN_FIXTURE_DIR) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0777); /* EEXIST is fine; a real failure shows at fopen */
        *p = '/';
    }
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(text, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "  fixture %s: cannot write %s\n", name, path);
    return ok ? 0 : -1;
}

/* A fixture larger than this is committed as its SHA-256 digest
 * (NAME.sha256: "sha256 HEX" and "bytes N" lines) rather than its bytes;
 * a failed comparison then shows the digests, not the first differing
 * line. */
#define TESTRUN_FIXTURE_MAX_BYTES (64 * 1024)

/* Compares the normalised text got[0, n) with fixture name, or writes it
 * (write). */
static int fixture_compare(const char *got, size_t n, const char *name, int write)
{
    char digest_name[512], path[1024], hex[65];
    snprintf(digest_name, sizeof digest_name, "%s.sha256", name);
    if (write) {
        int big = n > TESTRUN_FIXTURE_MAX_BYTES;
        /* one form of a fixture at a time */
        fixture_path(path, sizeof path, big ? name : digest_name);
        unlink(path);
        if (!big) return fixture_write(name, got, n);
        char line[128];
        sha256_hex(got, n, hex);
        int len = snprintf(line, sizeof line, "sha256 %s\nbytes %zu\n", hex, n);
        return fixture_write(digest_name, line, (size_t)len);
    }
    fixture_path(path, sizeof path, name);
    if (access(path, F_OK) != 0) {
        fixture_path(path, sizeof path, digest_name);
        if (access(path, F_OK) == 0) {
            size_t dl = 0;
            char *d = testrun_fixture_read(digest_name, &dl), want[65] = "";
            unsigned long long bytes = 0;
            if (!d || sscanf(d, "sha256 %64s bytes %llu", want, &bytes) != 2) {
                if (d) fprintf(stderr, "  fixture %s: not \"sha256 HEX\" and \"bytes N\"\n", digest_name);
                free(d);
                return -1;
            }
            free(d);
            sha256_hex(got, n, hex);
            if (bytes == n && !strcmp(hex, want)) return 0;
            if (fixture_valgrind()) {
                fprintf(stderr, "  (fixture %s not compared under valgrind: its long double is a double)\n",
                        digest_name);
                return 0;
            }
            fprintf(stderr, "  fixture %s differs: the fixture's digest %s of %llu bytes, this run's %s of %zu\n",
                    digest_name, want, bytes, hex, n);
            return -1;
        }
    }
    size_t fl = 0;
    char *want = testrun_fixture_read(name, &fl);
    if (!want) return -1;
    int rc = fixture_check(want, fl, got, n, name);
    free(want);
    return rc;
}

/* The fixture check of text: regen 1 writes it when regenerating, 0
 * compares only (and does nothing when regenerating). */
static int fixture_text(const char *text, size_t len, const char *name, const char *tmpdir, int regen)
{
    int mode = fixture_regen_mode();
    if (mode == 2) {
        fprintf(stderr, "  fixture %s: SERVESIM_REGEN_FIXTURES=%s is not the fixtures' commit (%s, in "
                        "tests/fixtures/stream/COMMIT)\n", name, getenv("SERVESIM_REGEN_FIXTURES"),
                fixture_commit[0] ? fixture_commit : "unreadable");
        return -1;
    }
    if (mode == 1 && !regen) return 0;
    /* where the previous release's servesim lies (regen.sh builds it in a
     * worktree of its own): its source tree too is "@SRC@" */
    char bin_dir[1024] = "";
    if (mode == 1) {
        snprintf(bin_dir, sizeof bin_dir, "%s", testrun_bin());
        char *slash = strrchr(bin_dir, '/');
        if (slash) *slash = '\0';
        else bin_dir[0] = '\0';
    }
    const char *from[3] = {tmpdir, bin_dir[0] ? bin_dir : NULL, SERVESIM_DATA_DIR};
    const char *to[3] = {"@TMP@", "@SRC@", "@SRC@"};
    size_t n = 0;
    char *moved = fixture_normalise(text, len, from, to, 3, &n);
    char *got = moved ? fixture_unband(moved, n, &n) : NULL;
    free(moved);
    if (!got) return -1;
    int rc = fixture_compare(got, n, name, mode == 1);
    free(got);
    return rc;
}

int testrun_fixture_text(const char *text, size_t len, const char *name, const char *tmpdir)
{
    return fixture_text(text, len, name, tmpdir, 1);
}

static int fixture_file(const char *produced, const char *name, const char *tmpdir, int regen)
{
    if (fixture_regen_mode() == 1 && !regen) return 0;
    Err e = {0};
    size_t n = 0;
    char *t = read_file(produced, &n, &e);
    if (!t) {
        fprintf(stderr, "  fixture %s: the run wrote no %s (%s)\n", name, produced, e.msg);
        return -1;
    }
    int rc = fixture_text(t, n, name, tmpdir, regen);
    free(t);
    return rc;
}

int testrun_fixture_file(const char *produced, const char *name, const char *tmpdir)
{
    return fixture_file(produced, name, tmpdir, 1);
}

int testrun_fixture_cmp_file(const char *produced, const char *name, const char *tmpdir)
{
    return fixture_file(produced, name, tmpdir, 0);
}

cJSON *testrun_summary_tree(const Scenario *sc, const MetricsCfg *mc, const Summary *sum)
{
    RunData none = {0};
    cJSON *root = report_json(mc, &none, sum, 0);
    ErrBand band;
    Err e = {0};
    if (scenario_error_band(sc, &band, &e) == 0) report_band_json(root, &band, sum);
    else fprintf(stderr, "  %s\n", e.msg);
    cJSON *s = cJSON_DetachItemFromObjectCaseSensitive(root, "summary");
    cJSON_Delete(root);
    return s;
}

/* Removes the dotted key path ("itl_s", "kv.capacity_gib_total") from o. */
static void fixture_drop(cJSON *o, const char *path)
{
    char key[128];
    const char *dot;
    while (o && (dot = strchr(path, '.')) != NULL) {
        snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path = dot + 1;
    }
    if (o) cJSON_DeleteItemFromObjectCaseSensitive(o, path);
}

/* The previous release's summary of text, written as fixture name. */
static int fixture_summary_regen(const char *text, const char *name, const char *tmpdir)
{
    if (!tmpdir) {
        fprintf(stderr, "  fixture %s: regenerating needs the test's temporary directory\n", name);
        return -1;
    }
    char base[600], scen[700], js[700], flat[256];
    snprintf(flat, sizeof flat, "%s", name);
    for (char *c = flat; *c; c++)
        if (*c == '/') *c = '_';
    snprintf(base, sizeof base, "%s/fixture-%s", tmpdir, flat);
    snprintf(scen, sizeof scen, "%s.scen.json", base);
    snprintf(js, sizeof js, "%s.out.json", base);
    FILE *f = fopen(scen, "w");
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    char args[1600];
    static char out[16384];
    snprintf(args, sizeof args, "--quiet --summary-only --json %s %s", js, scen);
    if (testrun_cli_run(args, out, sizeof out) != 0) {
        fprintf(stderr, "  fixture %s: %s\n", name, out);
        return -1;
    }
    Err e = {0};
    char *t = read_file(js, NULL, &e);
    cJSON *root = t ? cJSON_Parse(t) : NULL;
    free(t);
    char *p = cJSON_Print(cJSON_GetObjectItemCaseSensitive(root, "summary"));
    cJSON_Delete(root);
    int rc = p ? fixture_text(p, strlen(p), name, tmpdir, 1) : -1;
    cJSON_free(p);
    unlink(scen);
    unlink(js);
    return rc;
}

int testrun_fixture_summary(const char *text, const Scenario *sc, const MetricsCfg *mc, const Summary *sum,
                            const char *const *except, const char *name, const char *tmpdir)
{
    if (fixture_regen_mode() == 1) return fixture_summary_regen(text, name, tmpdir);
    cJSON *got = testrun_summary_tree(sc, mc, sum);
    if (!except || !*except) {
        char *p = got ? cJSON_Print(got) : NULL;
        cJSON_Delete(got);
        int rc = p ? fixture_text(p, strlen(p), name, tmpdir, 1) : -1;
        cJSON_free(p);
        return rc;
    }
    /* both trees less the fields left out, printed alike */
    char *ft = testrun_fixture_read(name, NULL);
    cJSON *want = ft ? cJSON_Parse(ft) : NULL;
    free(ft);
    /* the band is "@BAND@" in the fixture (fixture_unband): left out too */
    static const char *const band[] = {"error_band", "error_band_note"};
    for (int k = 0; k < 2; k++) {
        fixture_drop(got, band[k]);
        fixture_drop(want, band[k]);
    }
    for (int k = 0; except[k]; k++) {
        fixture_drop(got, except[k]);
        fixture_drop(want, except[k]);
    }
    char *pg = got ? cJSON_Print(got) : NULL, *pw = want ? cJSON_Print(want) : NULL;
    int rc = pg && pw ? fixture_check(pw, strlen(pw), pg, strlen(pg), name) : -1;
    if (!pw) fprintf(stderr, "  fixture %s: not a JSON object\n", name);
    cJSON_free(pg);
    cJSON_free(pw);
    cJSON_Delete(got);
    cJSON_Delete(want);
    return rc;
}
