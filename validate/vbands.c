/*
 * vbands.c -- the stored error band file (see vbands.h).
 *
 * Invariant: the file is replaced only through jsonio_write_file (a
 * temporary file renamed over it), after the old one, when there is one,
 * has been read and checked as a band file; entries it holds for other
 * engines are copied over unchanged.  Figures are rounded to four
 * significant digits: a band is a few percent wide, and fewer digits keep
 * the shipped file's diffs to what moved.
 */
#include "vbands.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jsonio.h"

#define VBANDS_BASIS "leave-one-slice-out"

static void vbands_num(cJSON *o, const char *key, double v)
{
    if (!isfinite(v)) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.4g", v);
    v = strtod(buf, NULL);
    cJSON_AddNumberToObject(o, key, v == 0.0 ? 0.0 : v); /* no "-0" */
}

/* {"ttft": {"mape", "bias"}, "tpot": {...}} into o. */
static void vbands_pair(cJSON *o, const VBandFig *t, const VBandFig *p)
{
    const VBandFig *f[2] = {t, p};
    static const char *const k[2] = {"ttft", "tpot"};
    for (int i = 0; i < 2; i++) {
        cJSON *x = cJSON_AddObjectToObject(o, k[i]);
        vbands_num(x, "mape", f[i]->mape);
        vbands_num(x, "bias", f[i]->bias);
    }
}

static cJSON *vbands_entry(const VBand *b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rows", b->rows);
    vbands_pair(o, &b->ttft, &b->tpot);
    vbands_pair(cJSON_AddObjectToObject(o, "in_sample"), &b->in_ttft, &b->in_tpot);
    if (b->has_loeo) vbands_pair(cJSON_AddObjectToObject(o, "leave_one_engine_out"), &b->loeo_ttft, &b->loeo_tpot);
    return o;
}

/* The band file at path, checked: NULL with *none = 1 when there is no
 * file (or an empty one), NULL + err when it is not a band file. */
static cJSON *vbands_read_old(const char *path, int *none, Err *e)
{
    struct stat st;
    *none = 0;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        *none = 1;
        return NULL;
    }
    size_t len;
    char *text = read_text_file(path, &len, e);
    /* the file this command replaces on purpose (its entries merged), not
     * an input it must not write over */
    common_forget_input(path);
    if (!text) return NULL;
    size_t k = 0;
    while (k < len && (text[k] == ' ' || text[k] == '\n' || text[k] == '\t' || text[k] == '\r')) k++;
    if (k == len) {
        free(text);
        *none = 1;
        return NULL;
    }
    cJSON *root = jsonio_parse(text, path, e);
    free(text);
    if (!root) return NULL;
    static const char *const keys[] = {"source", "date", "basis", "engines", NULL};
    const cJSON *basis = cJSON_GetObjectItemCaseSensitive(root, "basis");
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(root, "engines");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(root, "source");
    int bad = jsonio_check_keys(root, path, keys, e) < 0;
    if (!bad && !cJSON_IsObject(eng))
        bad = err_set(e, "%s: expected an \"engines\" object", path) < 0;
    if (!bad && src && !cJSON_IsString(src)) bad = err_set(e, "%s: source: expected a string", path) < 0;
    if (!bad && !(cJSON_IsString(basis) && !strcmp(basis->valuestring, VBANDS_BASIS)))
        bad = err_set(e, "%s: basis: expected \"%s\" (the bands this command writes)", path, VBANDS_BASIS) < 0;
    const cJSON *x, *each = bad ? NULL : eng;
    cJSON_ArrayForEach(x, each) {
        if (!cJSON_IsObject(x) || !x->string || !*x->string) {
            bad = err_set(e, "%s: engines.%s: expected an object", path, x->string ? x->string : "") < 0;
            break;
        }
    }
    if (!bad && jsonio_check_duplicates(eng, "engines", e) < 0) bad = 1;
    if (bad) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* old's commands ("; " between them) and then cmd, each once, into a
 * malloc'd string. */
static char *vbands_sources(const char *old, const char *cmd)
{
    size_t cap = (old ? strlen(old) : 0) + strlen(cmd) + 3;
    char *out = xmalloc(cap), *buf = xstrdup(old ? old : "");
    size_t used = 0;
    out[0] = 0;
    for (char *s = buf; s && *s;) {
        char *semi = strstr(s, "; ");
        if (semi) *semi = 0;
        if (*s && strcmp(s, cmd)) used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "; " : "", s);
        s = semi ? semi + 2 : NULL;
    }
    snprintf(out + used, cap - used, "%s%s", used ? "; " : "", cmd);
    free(buf);
    return out;
}

static int vbands_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int vbands_write(const char *path, const char *source, const char *date, const VBand *b, uint32_t n, Err *e)
{
    int none;
    cJSON *old = vbands_read_old(path, &none, e);
    if (!old && !none) return err_prefix(e, "--bands %s: not a band file, left as it is (remove it or name another)", path);
    const cJSON *old_eng = old ? cJSON_GetObjectItemCaseSensitive(old, "engines") : NULL;
    /* the names to write: b's, then the old file's not among them */
    uint32_t n_old = (uint32_t)cJSON_GetArraySize(old_eng), m = 0;
    const char **names = xmalloc((n + n_old + 1) * sizeof *names);
    for (uint32_t i = 0; i < n; i++) names[m++] = b[i].engine;
    const cJSON *x;
    cJSON_ArrayForEach(x, old_eng) {
        uint32_t i = 0;
        while (i < n && strcmp(b[i].engine, x->string)) i++;
        if (i == n) names[m++] = x->string;
    }
    qsort(names, m, sizeof *names, vbands_cmp);
    const cJSON *os = old ? cJSON_GetObjectItemCaseSensitive(old, "source") : NULL;
    char *src = vbands_sources(m > n && cJSON_IsString(os) ? os->valuestring : NULL, source);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "source", src);
    cJSON_AddStringToObject(root, "date", date);
    cJSON_AddStringToObject(root, "basis", VBANDS_BASIS);
    cJSON *eng = cJSON_AddObjectToObject(root, "engines");
    for (uint32_t k = 0; k < m; k++) {
        uint32_t i = 0;
        while (i < n && strcmp(b[i].engine, names[k])) i++;
        cJSON *entry = i < n ? vbands_entry(&b[i])
                             : cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(old_eng, names[k]), 1);
        cJSON_AddItemToObject(eng, names[k], entry);
    }
    int rc = jsonio_write_file(root, path, 1, e);
    cJSON_Delete(root);
    cJSON_Delete(old);
    free(names);
    free(src);
    return rc;
}

int vbands_date(char *out, Err *e)
{
    const char *env = getenv("SERVESIM_DATE");
    if (env) {
        int y, mo, d;
        char end;
        if (strlen(env) != 10 || sscanf(env, "%4d-%2d-%2d%c", &y, &mo, &d, &end) != 3 || env[4] != '-' ||
            env[7] != '-' || mo < 1 || mo > 12 || d < 1 || d > 31)
            return err_set(e, "SERVESIM_DATE: expected YYYY-MM-DD, got \"%s\"", env);
        memcpy(out, env, 11);
        return 0;
    }
    time_t now = time(NULL);
    struct tm tm;
    if (now == (time_t)-1 || !gmtime_r(&now, &tm) || strftime(out, 11, "%Y-%m-%d", &tm) != 10)
        return err_set(e, "--bands: cannot tell today's date");
    return 0;
}
