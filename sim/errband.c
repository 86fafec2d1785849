/*
 * errband.c -- the band file, the lookup of an engine's band and how a
 * band is written beside a prediction (see errband.h).
 *
 * The reader is strict: the file is the contract between `validate
 * --bands` and every answer that quotes it, so a key it does not know, a
 * figure that is not a number or out of range fails with the file, the key
 * path, the value and what was expected, rather than printing a band
 * nobody measured.  A band file that does not exist is not an error: the
 * answers say that no band was measured.
 */
#include "errband.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"

#define ERRBAND_FIGURE_MAX 100.0 /* a MAPE or bias of 10,000% is not a measurement */

static const char errband_interval_text[] =
    "measured = predicted / (1 + e): low = predicted / (1 + bias + mape), "
    "high = predicted / max(1 + bias - mape, 0.05), bias_corrected = predicted / (1 + bias)";

/* ------------------------------------------------------------- reading */

static int metric_parse(const cJSON *o, const char *where, const char *key, ErrBandMetric *m, Err *e)
{
    static const char *const keys[] = {"mape", "bias", NULL};
    char p[600];
    jsonio_path(p, sizeof p, where, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return err_set(e, "%s: missing key \"%s\" (expected {\"mape\": 0.21, \"bias\": -0.04})", where, key);
    if (!cJSON_IsObject(v))
        return err_set(e, "%s: expected an object {\"mape\": M, \"bias\": B} (fractions: 0.21 = 21%%)", p);
    if (jsonio_check_keys(v, p, keys, e) < 0) return -1;
    if (jsonio_num(v, "mape", p, 1, -HUGE_VAL, HUGE_VAL, &m->mape, e) < 0 ||
        jsonio_num(v, "bias", p, 1, -HUGE_VAL, HUGE_VAL, &m->bias, e) < 0)
        return -1;
    if (!(m->mape >= 0 && m->mape <= ERRBAND_FIGURE_MAX))
        return err_set(e, "%s.mape: got %g, expected a fraction in [0, %g] (the mean of |predicted - measured| / "
                          "measured: 0.21 = 21%%)", p, m->mape, ERRBAND_FIGURE_MAX);
    if (!(m->bias > -1 && m->bias <= ERRBAND_FIGURE_MAX))
        return err_set(e, "%s.bias: got %g, expected a fraction > -1 and <= %g (the mean of (predicted - measured) / "
                          "measured; -1 would be every prediction 0)", p, m->bias, ERRBAND_FIGURE_MAX);
    return 0;
}

static int figures_parse(const cJSON *o, const char *where, ErrBandFigures *f, Err *e)
{
    return metric_parse(o, where, "ttft", &f->ttft, e) < 0 || metric_parse(o, where, "tpot", &f->tpot, e) < 0 ? -1 : 0;
}

/* An optional {"ttft", "tpot"} object under key. */
static int extra_parse(const cJSON *o, const char *where, const char *key, int *has, ErrBandFigures *f, Err *e)
{
    static const char *const keys[] = {"ttft", "tpot", NULL};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *has = 0;
    if (!v) return 0;
    char p[600];
    jsonio_path(p, sizeof p, where, key);
    if (jsonio_expect_object(v, p, e) < 0 || jsonio_check_keys(v, p, keys, e) < 0 || figures_parse(v, p, f, e) < 0)
        return -1;
    *has = 1;
    return 0;
}

static int rows_parse(const cJSON *o, const char *where, ErrBand *b, Err *e)
{
    b->rows = -1;
    return jsonio_int(o, "rows", where, 0, 0, 1000000000, &b->rows, e) < 0 ? -1 : 0;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < ERRBAND_NAME_MAX && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == n;
}

int errband_file_parse(const cJSON *root, const char *where, ErrBandFile *f, Err *e)
{
    static const char *const keys[] = {"source", "date", "basis", "engines", NULL};
    static const char *const ek[] = {"rows", "ttft", "tpot", "in_sample", "leave_one_engine_out", NULL};
    memset(f, 0, sizeof *f);
    if (jsonio_expect_object(root, where, e) < 0 || jsonio_check_keys(root, where, keys, e) < 0) return -1;
    const char *s = NULL, *date = NULL;
    if (jsonio_str(root, "source", where, 0, &s, e) < 0 || jsonio_str(root, "date", where, 0, &date, e) < 0) return -1;
    s = NULL;
    if (jsonio_str(root, "basis", where, 1, &s, e) < 0) return -1;
    char p[600];
    jsonio_path(p, sizeof p, where, "basis");
    if (!*s || strlen(s) >= sizeof f->basis)
        return err_set(e, "%s: got \"%.100s\", expected what the figures are, such as \"leave-one-slice-out\" (1 to "
                          "%zu characters)", p, s, sizeof f->basis - 1);
    snprintf(f->basis, sizeof f->basis, "%s", s);
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(root, "engines");
    jsonio_path(p, sizeof p, where, "engines");
    if (!eng) return err_set(e, "%s: missing key \"engines\" (expected {\"vllm\": {\"rows\", \"ttft\", \"tpot\"}, ...})", where);
    if (!cJSON_IsObject(eng))
        return err_set(e, "%s: expected an object of engine names, {\"vllm\": {\"ttft\": ..., \"tpot\": ...}, ...}", p);
    if (jsonio_check_duplicates(eng, p, e) < 0) return -1;
    /* where the answers say the band came from */
    const char *slash = strrchr(where, '/');
    char src[160];
    snprintf(src, sizeof src, "%s%s%s", slash ? slash + 1 : where, date ? " of " : "", date ? date : "");
    const cJSON *it;
    cJSON_ArrayForEach(it, eng) {
        if (!name_ok(it->string))
            return err_set(e, "%s: engine \"%.80s\": expected an engine file's name such as \"vllm\" or \"trtllm-1.0\" "
                              "(1 to %d of a-z 0-9 - _ .)", p, it->string, ERRBAND_NAME_MAX - 1);
        if (f->n == ERRBAND_ENGINES_MAX)
            return err_set(e, "%s: more than %d engines", p, ERRBAND_ENGINES_MAX);
        char ep[700];
        jsonio_path(ep, sizeof ep, p, it->string);
        ErrBand *b = &f->bands[f->n];
        memset(b, 0, sizeof *b);
        if (jsonio_expect_object(it, ep, e) < 0 || jsonio_check_keys(it, ep, ek, e) < 0 || rows_parse(it, ep, b, e) < 0 ||
            figures_parse(it, ep, &b->fig, e) < 0 || extra_parse(it, ep, "in_sample", &b->has_in_sample, &b->in_sample, e) < 0 ||
            extra_parse(it, ep, "leave_one_engine_out", &b->has_loeo, &b->loeo, e) < 0)
            return -1;
        b->present = 1;
        snprintf(b->engine, sizeof b->engine, "%s", it->string);
        memcpy(b->basis, f->basis, sizeof b->basis);
        snprintf(b->source, sizeof b->source, "%s", src);
        f->n++;
    }
    return 0;
}

int errband_file_load(const char *path, ErrBandFile *f, Err *e)
{
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int rc = errband_file_parse(root, path, f, e);
    cJSON_Delete(root);
    return rc;
}

const char *errband_file_path(char *buf, size_t n)
{
    const char *env = getenv("SERVESIM_ERROR_BANDS");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return buf;
    }
    return paths_data_file(buf, n, "engines/", "error_bands");
}

const ErrBand *errband_file_find(const ErrBandFile *f, const char *engine)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (!strcmp(f->bands[i].engine, engine)) return &f->bands[i];
    size_t fam = strcspn(engine, "-");
    if (!engine[fam]) return NULL; /* no family beyond the name itself */
    for (uint32_t i = 0; i < f->n; i++)
        if (strlen(f->bands[i].engine) == fam && !strncmp(f->bands[i].engine, engine, fam)) return &f->bands[i];
    return NULL;
}

int errband_from_json(const cJSON *o, const char *where, const char *engine, ErrBand *out, Err *e)
{
    static const char *const keys[] = {"ttft", "tpot", "basis", "rows", NULL};
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(o))
        return err_set(e, "%s: expected {\"ttft\": {\"mape\", \"bias\"}, \"tpot\": {\"mape\", \"bias\"}} (fractions: "
                          "0.21 = 21%%; bias = mean of (predicted - measured) / measured)", where);
    if (jsonio_check_keys(o, where, keys, e) < 0 || rows_parse(o, where, out, e) < 0 ||
        figures_parse(o, where, &out->fig, e) < 0)
        return -1;
    const char *basis = NULL;
    if (jsonio_str(o, "basis", where, 0, &basis, e) < 0) return -1;
    snprintf(out->basis, sizeof out->basis, "%s", basis && *basis ? basis : "its own measurement");
    out->own = 1;
    snprintf(out->engine, sizeof out->engine, "%s", engine);
    snprintf(out->source, sizeof out->source, "the scenario's engine \"error_band\"");
    out->present = 1;
    return 0;
}

int errband_resolve(const ErrBandRef *ref, ErrBand *out, Err *e)
{
    memset(out, 0, sizeof *out);
    out->rows = -1;
    if (ref->own && ref->own->present) {
        *out = *ref->own;
        return 0;
    }
    if (!ref->has_engine) {
        snprintf(out->why, sizeof out->why, "no measured error band: the scenario names no engine (bands are measured "
                                            "per engine by servesim validate)");
        return 0;
    }
    if (!ref->file[0]) {
        snprintf(out->why, sizeof out->why, "no measured error band for engine %s (%s)", ref->label,
                 ref->unbanded ? ref->unbanded : "not a bundled engine");
        return 0;
    }
    char path[4096];
    errband_file_path(path, sizeof path);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(out->why, sizeof out->why, "no measured error band for engine %s (no band file %.200s)", ref->file,
                 path);
        return 0;
    }
    fclose(fp);
    ErrBandFile *f = xmalloc(sizeof *f);
    int rc = errband_file_load(path, f, e);
    if (rc == 0) {
        const ErrBand *b = errband_file_find(f, ref->file);
        if (b) {
            *out = *b;
        } else {
            size_t fam = strcspn(ref->file, "-");
            char also[96] = "";
            if (ref->file[fam]) snprintf(also, sizeof also, " or its family %.*s", (int)fam, ref->file);
            const char *slash = strrchr(path, '/');
            snprintf(out->why, sizeof out->why, "no measured error band for engine %s (%.200s has none for it%s)",
                     ref->file, slash ? slash + 1 : path, also);
        }
    }
    free(f);
    return rc;
}

/* ------------------------------------------------------------ interval */

double errband_low(const ErrBandMetric *m, double pred)
{
    return pred / (1 + m->bias + m->mape);
}

double errband_high(const ErrBandMetric *m, double pred)
{
    return pred / fmax(1 + m->bias - m->mape, ERRBAND_FLOOR);
}

double errband_central(const ErrBandMetric *m, double pred)
{
    return pred / (1 + m->bias);
}

/* ------------------------------------------------------------- writing */

void errband_describe(char *buf, size_t n, const ErrBand *b)
{
    char rows[48] = "";
    if (b->rows >= 0) snprintf(rows, sizeof rows, ", %lld measured runs", (long long)b->rows);
    char who[160];
    if (b->own) snprintf(who, sizeof who, "the scenario's own measured error of engine %s", b->engine);
    else snprintf(who, sizeof who, "%s's measured error", b->engine);
    snprintf(buf, n, "%s (%s%s): TTFT MAPE %.1f%%, bias %+.1f%%; TPOT MAPE %.1f%%, bias %+.1f%%", who, b->basis, rows,
             b->fig.ttft.mape * 100, b->fig.ttft.bias * 100, b->fig.tpot.mape * 100, b->fig.tpot.bias * 100);
}

static void metric_line(FILE *f, const char *name, const ErrBandMetric *m, double pred_s)
{
    if (!isfinite(pred_s)) {
        fprintf(f, "    mean %s: no value to bound\n", name);
        return;
    }
    fprintf(f, "    mean %s %.2f ms -> measured likely %.2f .. %.2f ms (bias-corrected %.2f ms)\n", name, pred_s * 1e3,
            errband_low(m, pred_s) * 1e3, errband_high(m, pred_s) * 1e3, errband_central(m, pred_s) * 1e3);
}

void errband_print(FILE *f, const ErrBand *b, double ttft_mean_s, double tpot_mean_s)
{
    if (!b->present) {
        fprintf(f, "  model error: %s\n", b->why);
        return;
    }
    char d[400];
    errband_describe(d, sizeof d, b);
    fprintf(f, "  model error on mean TTFT and TPOT: %s\n", d);
    metric_line(f, "TTFT", &b->fig.ttft, ttft_mean_s);
    metric_line(f, "TPOT", &b->fig.tpot, tpot_mean_s);
}

static cJSON *metric_json(const ErrBandMetric *m)
{
    cJSON *o = cJSON_CreateObject();
    jsonio_add_num(o, "mape", m->mape);
    jsonio_add_num(o, "bias", m->bias);
    return o;
}

static cJSON *figures_json(const ErrBandFigures *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "ttft", metric_json(&g->ttft));
    cJSON_AddItemToObject(o, "tpot", metric_json(&g->tpot));
    return o;
}

/* Adds o.error_band (the band, or null beside error_band_note); returns
 * the band's object, or NULL. */
static cJSON *add_band(cJSON *o, const ErrBand *b)
{
    if (!b->present) {
        cJSON_AddNullToObject(o, "error_band");
        cJSON_AddStringToObject(o, "error_band_note", b->why);
        return NULL;
    }
    cJSON *x = cJSON_AddObjectToObject(o, "error_band");
    cJSON_AddStringToObject(x, "engine", b->engine);
    cJSON_AddStringToObject(x, "basis", b->basis);
    if (b->rows >= 0) cJSON_AddNumberToObject(x, "rows", (double)b->rows);
    else cJSON_AddNullToObject(x, "rows");
    cJSON_AddStringToObject(x, "source", b->source);
    char d[480];
    errband_describe(d, sizeof d, b);
    cJSON_AddStringToObject(x, "description", d);
    cJSON_AddStringToObject(x, "interval", errband_interval_text);
    cJSON_AddItemToObject(x, "ttft", metric_json(&b->fig.ttft));
    cJSON_AddItemToObject(x, "tpot", metric_json(&b->fig.tpot));
    if (b->has_in_sample) cJSON_AddItemToObject(x, "in_sample", figures_json(&b->in_sample));
    if (b->has_loeo) cJSON_AddItemToObject(x, "leave_one_engine_out", figures_json(&b->loeo));
    return x;
}

void errband_add_json(cJSON *o, const ErrBand *b)
{
    add_band(o, b);
}

static void metric_pred_json(cJSON *m, const ErrBandMetric *x, double pred_s)
{
    /* non-finite numbers print as null */
    jsonio_add_num(m, "mean_ms", pred_s * 1e3);
    jsonio_add_num(m, "low_ms", errband_low(x, pred_s) * 1e3);
    jsonio_add_num(m, "high_ms", errband_high(x, pred_s) * 1e3);
    jsonio_add_num(m, "bias_corrected_ms", errband_central(x, pred_s) * 1e3);
}

void errband_add_run_json(cJSON *summary, const ErrBand *b, double ttft_mean_s, double tpot_mean_s)
{
    cJSON *x = add_band(summary, b);
    if (!x) return;
    metric_pred_json(cJSON_GetObjectItemCaseSensitive(x, "ttft"), &b->fig.ttft, ttft_mean_s);
    metric_pred_json(cJSON_GetObjectItemCaseSensitive(x, "tpot"), &b->fig.tpot, tpot_mean_s);
}
