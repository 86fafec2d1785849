/*
 * plan_emit.c -- plan --emit DIR: each feasible candidate's scenario and its
 * engine's launch commands (see plan_int.h, launch.h).
 */
#include "plan_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonio.h"
#include "paths.h"
#include "launch.h"
#include "outfile.h"
#include "scenario.h"
#include "workload.h"

/* A candidate's name as a file name: letters, digits, '.', '_', '-' kept,
 * anything else '_' (names are user text). */
static void safe_name(const char *in, char *out, size_t n)
{
    size_t k = 0;
    if (in[0] == '.' || !in[0]) out[k++] = 'c';
    for (; *in && k + 1 < n; in++)
        out[k++] = (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *in) && *in)
                       ? *in : '_';
    out[k] = '\0';
}

/* A relative path the scenario names, made absolute from the plan's
 * directory, so the emitted scenario runs from anywhere. */
static int absolute_key(cJSON *obj, const char *key, const char *base_dir, const char *kind, const char *sub,
                        const char *where, Err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v) || v->valuestring[0] == '/') return 0;
    size_t len = strlen(v->valuestring);
    char path[4096], abs_path[4096];
    if (!strcmp(key, "trace")) {
        if (workload_resolve(base_dir, v->valuestring, where, path, sizeof path, e) < 0) return -1;
    } else {
        if (len < 5 || strcmp(v->valuestring + len - 5, ".json")) return 0; /* a bundled name */
        if (!paths_resolve_in(path, sizeof path, kind, sub, v->valuestring, base_dir, e)) return -1;
    }
    if (paths_absolute(path, abs_path, sizeof abs_path, e) < 0) return err_prefix(e, "%s", where);
    plan_set_item(obj, key, cJSON_CreateString(abs_path));
    return 0;
}

/* plan --emit DIR (issue 37): each feasible candidate, cheapest per good
 * token first, as DIR/NAME.json -- the scenario of its confirmed fleet,
 * which `servesim run` reproduces (its first seed) -- and DIR/NAME.sh, its
 * engine's launch commands (launch.h); DIR/ranking.txt lists them. */
int plan_emit(const Plan *p, const cJSON *out, const char *dir, Err *e)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return err_set(e, "--emit %s: %s", dir, strerror(errno));
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(out, "candidates");
    int n = cJSON_GetArraySize(cands);
    int *order = xcalloc((size_t)(n ? n : 1), sizeof *order), m = 0;
    for (int i = 0; i < n; i++)
        if (plan_ranked(cJSON_GetArrayItem(cands, i))) order[m++] = i;
    /* cheapest per good token first (ties: the lower $/h, then plan order) */
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0; j--) {
            const cJSON *a = cJSON_GetArrayItem(cands, order[j - 1]), *b = cJSON_GetArrayItem(cands, order[j]);
            double ca = plan_num(a, "usd_per_1m_good_tokens"), cb = plan_num(b, "usd_per_1m_good_tokens");
            if (cb < ca || (cb == ca && plan_num(b, "usd_per_hour") < plan_num(a, "usd_per_hour"))) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        }
    char base_dir[1024], rk[4096];
    workload_base_dir(p->name, base_dir, sizeof base_dir);
    snprintf(rk, sizeof rk, "%s/ranking.txt", dir);
    OutFile ro;
    FILE *rf = outfile_open(&ro, rk, e);
    if (!rf) {
        free(order);
        return -1;
    }
    fprintf(rf, "# servesim plan %s --emit: feasible candidates, cheapest per good token first\n"
                "# rank  name  replicas  $/1M good tokens  files\n", p->name);
    int rc = 0;
    char **used = xcalloc((size_t)(m ? m : 1), sizeof *used);
    for (int r = 0; r < m && rc == 0; r++) {
        int k = order[r];
        const cJSON *row = cJSON_GetArrayItem(cands, k), *c = cJSON_GetArrayItem(p->candidates, k);
        char nm[200], file[4096], where[700];
        safe_name(cJSON_GetObjectItemCaseSensitive(row, "name")->valuestring, nm, sizeof nm);
        for (int q = 0; q < r; q++)
            if (!strcmp(used[q], nm)) {
                size_t l = strlen(nm);
                snprintf(nm + (l < 180 ? l : 180), sizeof nm - (l < 180 ? l : 180), "-%d", k + 1);
                break;
            }
        used[r] = xstrdup(nm);
        uint32_t units = (uint32_t)plan_num(row, "replicas");
        cJSON *sc = plan_candidate_scenario(p, c, p->traffic, units, 0);
        snprintf(where, sizeof where, "%s (candidates[%d])", p->name, k);
        cJSON *wl = cJSON_GetObjectItemCaseSensitive(sc, "workload");
        rc = absolute_key(wl, "trace", base_dir, "trace", "", where, e);
        if (rc == 0) rc = absolute_key(sc, "model", base_dir, "model", "", where, e);
        if (rc == 0) rc = absolute_key(sc, "hardware", base_dir, "hardware", "hardware/", where, e);
        if (rc == 0) rc = absolute_key(sc, "engine", base_dir, "engine", "engines/", where, e);
        snprintf(file, sizeof file, "%s/%s.json", dir, nm);
        if (rc == 0) rc = jsonio_write_file(sc, file, 1, e);
        char *text = rc == 0 ? cJSON_Print(sc) : NULL;
        Scenario s;
        if (rc == 0 && (rc = scenario_load_text(text, file, 0, 0, &s, e)) == 0) {
            rc = launch_write(dir, nm, sc, &s, e);
            scenario_free(&s);
        }
        free(text);
        cJSON_Delete(sc);
        if (rc == 0)
            fprintf(rf, "%d  %s  %u  %.4f  %s.json %s.sh\n", r + 1, nm, units, plan_num(row, "usd_per_1m_good_tokens"), nm,
                    nm);
    }
    for (int r = 0; r < m; r++) free(used[r]);
    free(used);
    free(order);
    if (rc < 0) {
        outfile_abort(&ro);
        return -1;
    }
    return outfile_commit(&ro, e);
}

