/*
 * test_vheld.c -- validate over several files, held out and banded (issue
 * 34): rows of two engine families in several slices; leave-one-slice-out
 * and leave-one-engine-out really leave the rows out (a poisoned row of the
 * left-out engine changes nothing), each held-out engine gets its own fit,
 * and --bands writes each engine file's measured error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cluster.h"
#include "jsonio.h"
#include "outfile.h"
#include "scenario.h"
#include "testhelp.h"
#include "validate.h"
#include "vrows.h"

/* ------------------------------------------------------------ several files, held out, bands (issue 34) */

/* Ten short rows of two engine families: TensorRT-LLM in two slices (its
 * own version on Llama-3.1-8B, 1.0 on the FP8 checkpoint) and vLLM in one,
 * so leave-one-slice-out and leave-one-engine-out differ for TensorRT-LLM.
 * held_csv writes rows `from` to `to` (0-based, half open) to path, then
 * `extra` (more CSV lines) when given; a row whose id is poison gets its
 * measured TPOT times 1000. */
static const char held_head[] = "id,backend,backend_version,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,"
                                "tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n";
static const struct {
    const char *id, *backend, *version, *model;
    int isl, c, tp;
    double ttft, tpot;
} held_rows[] = {
    {"a1", "trtllm", "", "meta-llama/Llama-3.1-8B-Instruct", 256, 2, 1, 30, 7.5},
    {"a2", "trtllm", "", "meta-llama/Llama-3.1-8B-Instruct", 512, 3, 1, 45, 7.9},
    {"a3", "trtllm", "", "meta-llama/Llama-3.1-8B-Instruct", 384, 4, 2, 35, 5.1},
    {"f1", "trtllm", "1.0.0rc3", "nvidia/Llama-3.1-8B-Instruct-FP8", 256, 2, 1, 24, 5.2},
    {"f2", "trtllm", "1.0.0rc3", "nvidia/Llama-3.1-8B-Instruct-FP8", 512, 3, 2, 29, 3.9},
    {"f3", "trtllm", "1.0.0rc3", "nvidia/Llama-3.1-8B-Instruct-FP8", 768, 2, 1, 40, 5.4},
    {"v1", "vllm", "", "meta-llama/Llama-3.1-8B-Instruct", 256, 2, 1, 36, 8.1},
    {"v2", "vllm", "", "meta-llama/Llama-3.1-8B-Instruct", 512, 3, 1, 52, 8.6},
    {"v3", "vllm", "", "meta-llama/Llama-3.1-8B-Instruct", 384, 4, 2, 41, 5.9},
    {"v4", "vllm", "", "meta-llama/Llama-3.1-8B-Instruct", 768, 2, 2, 48, 5.5},
};

static void held_csv(const char *path, int from, int to, const char *poison, const char *extra)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(held_head, f);
    for (int i = from; i < to; i++)
        fprintf(f, "%s,%s,%s,%s,h100_sxm,agg,%d,24,,%d,%d,1,%g,%g\n", held_rows[i].id, held_rows[i].backend,
                held_rows[i].version, held_rows[i].model, held_rows[i].isl, held_rows[i].c, held_rows[i].tp,
                held_rows[i].ttft, held_rows[i].tpot * (poison && !strcmp(poison, held_rows[i].id) ? 1000 : 1));
    if (extra) fputs(extra, f);
    fclose(f);
}

/* The number `key` of the JSON row with that id (NAN where absent). */
static double row_num(const cJSON *root, const char *id, const char *key)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(root, "rows")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "id")), id)) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, key);
            return cJSON_IsNumber(v) ? v->valuedouble : NAN;
        }
    }
    return NAN;
}

/* `servesim validate ARGS` in dir, its output into dir/out.txt: the exit
 * status (-1 when it did not run). */
static int validate_in(const char *bin, const char *dir, const char *args)
{
    char cmd[3072];
    snprintf(cmd, sizeof cmd, "cd %s && SERVESIM_DATE=2026-02-03 %s validate %s > out.txt 2>&1", dir, bin, args);
    int st = system(cmd);
    return st == -1 ? -1 : WEXITSTATUS(st);
}

/* dir/out.txt holds the fixed string s. */
static int out_has(const char *dir, const char *s)
{
    char path[600];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *t = read_file(path, NULL, NULL);
    int has = t && strstr(t, s) != NULL;
    if (!has) printf("     out.txt lacks \"%s\"\n", s);
    free(t);
    return has;
}

/* Several files are one set of rows: a.csv (TensorRT-LLM, and a row of an
 * unknown model) and b.csv (vLLM, one row repeating a1's measurement)
 * fitted together give the figures, constants and predictions of one file
 * holding both's rows (ab.csv), row for row; the JSON names each row's file, and the
 * messages name the file and line.  Files of two formats are refused,
 * naming both. */
static void test_validate_several_files(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-valfiles-XXXXXX", path[600];
    CHECK(mkdtemp(dir) != NULL);
    const char *odd = "x1,trtllm,,no-such/Model,h100_sxm,agg,256,24,,2,1,1,30,7.5\n";
    const char *rep = "v5,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,256,24,,2,1,1,30,7.5\n";
    snprintf(path, sizeof path, "%s/a.csv", dir);
    held_csv(path, 0, 6, NULL, odd);
    snprintf(path, sizeof path, "%s/b.csv", dir);
    held_csv(path, 6, 10, NULL, rep);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cd %s && (cat a.csv && tail -n +2 b.csv) > ab.csv", dir);
    CHECK(system(cmd) == 0);
    CHECK_INT(validate_in(b, dir, "ab.csv --fit --jobs 2 --json one.json"), 0);
    CHECK_INT(validate_in(b, dir, "a.csv b.csv --fit --jobs 2 --json two.json"), 0);
    CHECK(out_has(dir, "not modelled: a.csv line 8 x1: unknown model"));
    CHECK(out_has(dir, "repeats a.csv line 2: b.csv line 6 v5"));
    CHECK(out_has(dir, "(11 rows of a.csv, b.csv)"));
    Err e = {0};
    char js[2][700];
    cJSON *r[2];
    for (int k = 0; k < 2; k++) {
        snprintf(js[k], sizeof js[k], "%s/%s.json", dir, k ? "two" : "one");
        r[k] = jsonio_parse_file(js[k], &e);
        CHECK(r[k] != NULL);
    }
    if (r[0] && r[1]) {
        static const char *const ids[] = {"a1", "a3", "f2", "v1", "v4", "v5"};
        for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
            CHECK(row_num(r[0], ids[i], "predicted_ttft_ms") > 0);
            CHECK(row_num(r[0], ids[i], "predicted_ttft_ms") == row_num(r[1], ids[i], "predicted_ttft_ms"));
            CHECK(row_num(r[0], ids[i], "predicted_tpot_ms") == row_num(r[1], ids[i], "predicted_tpot_ms"));
        }
        static const char *const keys[] = {"overall", "slices", "fit", "engines"};
        for (int k = 0; k < 4; k++) {
            char *x = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r[0], keys[k]));
            char *y = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r[1], keys[k]));
            CHECK(x && y && !strcmp(x, y));
            free(x);
            free(y);
        }
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(r[1], "rows");
        CHECK_INT(cJSON_GetArraySize(rows), 12);
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 0), "file")), "a.csv"));
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 7), "file")), "b.csv"));
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 7), "line")), 2, 0);
        CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r[1], "files")), 2);
    }
    cJSON_Delete(r[0]);
    cJSON_Delete(r[1]);
    snprintf(path, sizeof path, "%s/sw.csv", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("model,hardware,prompt_size,batch_size,token_size,prompt_time,token_time,tensor_parallel\n"
              "llama2-70b,a100-80gb,512,1,128,0.1,0.03,2\n", f);
        fclose(f);
    }
    CHECK_INT(validate_in(b, dir, "a.csv sw.csv --no-rows"), 1);
    CHECK(out_has(dir, "a.csv is in the silicon format and sw.csv in the splitwise format"));
    th_rm_tree(dir);
}

/* validate --fit --loso of dir/rows<k>.csv: its JSON (r<k>.json) parsed,
 * NULL (a failed check) when it did not run. */
static cJSON *fit_loso(const char *b, const char *dir, int k)
{
    char args[256], path[600];
    Err e = {0};
    snprintf(args, sizeof args, "rows%d.csv --fit --loso --no-rows --jobs 2 --json r%d.json", k, k);
    CHECK_INT(validate_in(b, dir, args), 0);
    snprintf(path, sizeof path, "%s/r%d.json", dir, k);
    cJSON *r = jsonio_parse_file(path, &e);
    CHECK(r != NULL);
    return r;
}

/* Leave-one-engine-out leaves the whole family out: with one vLLM row's
 * measured TPOT made 1000 times larger, the vLLM rows' leave-one-engine-out
 * predictions (fitted on TensorRT-LLM's rows alone) are the same to the
 * last bit, while their in-sample ones (fitted with the row) move, and so
 * do TensorRT-LLM's held-out ones (fitted on vLLM's rows).  And a poisoned
 * row of TensorRT-LLM 1.0 (the FP8 slice) leaves the other TensorRT-LLM
 * slice's leave-one-engine-out predictions as they were -- the family's
 * versions are left out together -- while its leave-one-slice-out ones,
 * which the other slice's rows train, move. */
static void test_validate_loeo_excludes_engine(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-valloeo-XXXXXX", path[600];
    CHECK(mkdtemp(dir) != NULL);
    static const char *const poison[3] = {NULL, "v2", "f2"};
    cJSON *r[3];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/rows%d.csv", dir, k);
        held_csv(path, 0, 10, poison[k], NULL);
        r[k] = fit_loso(b, dir, k);
    }
    CHECK(out_has(dir, "      leave-one-engine-out   "));
    CHECK(out_has(dir, "per engine family"));
    if (r[0] && r[1] && r[2]) {
        static const char *const v[] = {"v1", "v2", "v3", "v4"}, *const a[] = {"a1", "a2", "a3"};
        int in_moved = 0, a_moved = 0, loso_moved = 0;
        for (int i = 0; i < 4; i++) {
            CHECK(row_num(r[0], v[i], "loeo_predicted_tpot_ms") > 0);
            CHECK(row_num(r[0], v[i], "loeo_predicted_ttft_ms") == row_num(r[1], v[i], "loeo_predicted_ttft_ms"));
            CHECK(row_num(r[0], v[i], "loeo_predicted_tpot_ms") == row_num(r[1], v[i], "loeo_predicted_tpot_ms"));
            in_moved += row_num(r[0], v[i], "predicted_tpot_ms") != row_num(r[1], v[i], "predicted_tpot_ms");
        }
        for (int i = 0; i < 3; i++) {
            a_moved += row_num(r[0], a[i], "loeo_predicted_tpot_ms") != row_num(r[1], a[i], "loeo_predicted_tpot_ms");
            CHECK(row_num(r[0], a[i], "loeo_predicted_ttft_ms") == row_num(r[2], a[i], "loeo_predicted_ttft_ms"));
            CHECK(row_num(r[0], a[i], "loeo_predicted_tpot_ms") == row_num(r[2], a[i], "loeo_predicted_tpot_ms"));
            loso_moved += row_num(r[0], a[i], "loso_predicted_tpot_ms") != row_num(r[2], a[i], "loso_predicted_tpot_ms");
        }
        CHECK(in_moved > 0);
        CHECK(a_moved > 0);
        CHECK(loso_moved > 0);
        /* per family: the three figure sets; TensorRT-LLM's versions listed */
        const cJSON *en = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r[0], "engines"), 0);
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "engine")), "trtllm"));
        CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(en, "versions")), 2);
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(en, "rows")), 6, 0);
        const cJSON *lo = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(en, "leave_one_engine_out"), "tpot");
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(lo, "rows")), 6, 0);
    }
    for (int k = 0; k < 3; k++) cJSON_Delete(r[k]);
    th_rm_tree(dir);
}

/* The same where both engines have rows enough for fits of their own
 * (VFIT_MIN_ROWS): the held-out run keeps the full fit of the family it
 * does not touch (vfit's keep), and must not keep the full fit of the one
 * it leaves out.  Twelve TensorRT-LLM and twelve vLLM rows, one vLLM row's
 * TPOT poisoned: vLLM's leave-one-engine-out predictions stay to the bit
 * and carry TensorRT-LLM's host time, its in-sample ones move,
 * TensorRT-LLM's in-sample ones (its own fit) do not. */
static void test_validate_loeo_own_fits(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-valloeo2-XXXXXX", path[600];
    CHECK(mkdtemp(dir) != NULL);
    cJSON *r[2];
    Err e = {0};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/rows%d.csv", dir, k);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f) return;
        fputs(held_head, f);
        for (int i = 0; i < 24; i++) {
            int vllm = i >= 12, isl = 256 + 64 * (i % 12), c = 2 + i % 4, tp = 1 + i % 2;
            double tpot = (tp == 1 ? 7.5 : 5.1) + (vllm ? 0.6 : 0) + 0.1 * c;
            fprintf(f, "%c%d,%s,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,agg,%d,24,,%d,%d,1,%.1f,%.2f\n",
                    vllm ? 'v' : 'a', i % 12, vllm ? "vllm" : "trtllm", isl, c, tp, (vllm ? 36 : 30) + isl / 20.0,
                    tpot * (k && i == 15 ? 1000 : 1));
        }
        fclose(f);
        r[k] = fit_loso(b, dir, k);
    }
    CHECK(out_has(dir, "(own rows, 12 rows)"));
    /* and they carry the host time fitted on TensorRT-LLM's rows (about
     * 1.5 ms a step: 0.9 to 1.6 ms more TPOT), not nothing: rows0 with every
     * constant 0 beside them */
    CHECK_INT(validate_in(b, dir, "rows0.csv --set base_us=0 --no-rows --jobs 2 --json z.json"), 0);
    snprintf(path, sizeof path, "%s/z.json", dir);
    cJSON *z = jsonio_parse_file(path, &e);
    CHECK(z != NULL);
    for (int i = 0; z && r[0] && i < 12; i++) {
        char v[8];
        snprintf(v, sizeof v, "v%d", i);
        CHECK(row_num(r[0], v, "loeo_predicted_tpot_ms") > row_num(z, v, "predicted_tpot_ms") + 0.5);
    }
    cJSON_Delete(z);
    int moved = 0;
    for (int i = 0; r[0] && r[1] && i < 12; i++) {
        char v[8], a[8];
        snprintf(v, sizeof v, "v%d", i);
        snprintf(a, sizeof a, "a%d", i);
        CHECK(row_num(r[0], v, "loeo_predicted_tpot_ms") > 0);
        CHECK(row_num(r[0], v, "loeo_predicted_ttft_ms") == row_num(r[1], v, "loeo_predicted_ttft_ms"));
        CHECK(row_num(r[0], v, "loeo_predicted_tpot_ms") == row_num(r[1], v, "loeo_predicted_tpot_ms"));
        CHECK(row_num(r[0], a, "predicted_tpot_ms") == row_num(r[1], a, "predicted_tpot_ms"));
        moved += row_num(r[0], v, "predicted_tpot_ms") != row_num(r[1], v, "predicted_tpot_ms");
    }
    CHECK(moved > 0);
    for (int k = 0; k < 2; k++) cJSON_Delete(r[k]);
    th_rm_tree(dir);
}

/* A figure of a band file: engines.ENGINE[.SET].METRIC.KEY (set NULL: the
 * basis's). */
static double band_num(const cJSON *root, const char *engine, const char *set, const char *metric, const char *key)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "engines"), engine);
    if (set) o = cJSON_GetObjectItemCaseSensitive(o, set);
    o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, metric), key);
    return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

/* --bands OUT: per engine file the leave-one-slice-out MAPE and bias of
 * its rows (those of the JSON's per-row held-out predictions), with the
 * in-sample and leave-one-engine-out ones; merged into an existing band
 * file, whose other engines stay as they were; refused without --loso,
 * over an input, and over a file that is not a band file.  With one engine
 * family, no leave-one-engine-out: said, and absent from the band. */
static void test_validate_bands(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) return;
    char dir[] = "/tmp/servesim-valbands-XXXXXX", path[600], bp[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/rows.csv", dir);
    held_csv(path, 0, 10, NULL, NULL);
    snprintf(bp, sizeof bp, "%s/bands.json", dir);
    const char *old_sw = "{\"rows\": 630, \"ttft\": {\"mape\": 0.1, \"bias\": 0.01}, \"tpot\": {\"mape\": 0.05, \"bias\": -0.02}}";
    char text[1024];
    snprintf(text, sizeof text,
             "{\"source\": \"servesim validate sw.csv --loso --bands bands.json\", \"date\": \"2026-01-01\", "
             "\"basis\": \"leave-one-slice-out\", \"engines\": {\"splitwise\": %s, \"vllm\": {\"rows\": 1}}}\n", old_sw);
    Err e = {0};
    CHECK(outfile_write(bp, text, &e) == 0);
    CHECK_INT(validate_in(b, dir, "rows.csv --fit --loso --no-rows --jobs 2 --json v.json --bands bands.json"), 0);
    CHECK(out_has(dir, "error bands of 3 engines: bands.json"));
    cJSON *band = jsonio_parse_file(bp, &e);
    snprintf(path, sizeof path, "%s/v.json", dir);
    cJSON *v = jsonio_parse_file(path, &e);
    CHECK(band && v);
    if (band && v) {
        char got[256] = "";
        const cJSON *x;
        for (x = band->child; x; x = x->next) snprintf(got + strlen(got), sizeof got - strlen(got), "%s ", x->string);
        CHECK(!strcmp(got, "source date basis engines "));
        got[0] = 0;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(band, "engines"))
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s ", x->string);
        CHECK(!strcmp(got, "splitwise trtllm trtllm-1.0 vllm "));
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(band, "date")), "2026-02-03"));
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(band, "basis")), "leave-one-slice-out"));
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(band, "source")),
                      "servesim validate sw.csv --loso --bands bands.json; servesim validate rows.csv --fit --loso "
                      "--no-rows --jobs 2 --json v.json --bands bands.json"));
        /* the kept engine as it was */
        cJSON *sw = jsonio_parse(old_sw, "old", &e);
        char *p1 = cJSON_PrintUnformatted(sw);
        char *p2 = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(band, "engines"), "splitwise"));
        CHECK(p1 && p2 && !strcmp(p1, p2));
        free(p1);
        free(p2);
        cJSON_Delete(sw);
        /* vLLM's entry replaced: its keys, and its figures from the rows */
        got[0] = 0;
        const cJSON *vl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(band, "engines"), "vllm");
        for (x = vl ? vl->child : NULL; x; x = x->next) snprintf(got + strlen(got), sizeof got - strlen(got), "%s ", x->string);
        CHECK(!strcmp(got, "rows ttft tpot in_sample leave_one_engine_out "));
        CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(vl, "rows")), 4, 0);
        static const char *const ids[] = {"v1", "v2", "v3", "v4"};
        static const char *const pre[3] = {"loso_predicted", "predicted", "loeo_predicted"};
        static const char *const set[3] = {NULL, "in_sample", "leave_one_engine_out"};
        for (int s = 0; s < 3; s++)
            for (int t = 0; t < 2; t++) {
                double mape = 0, bias = 0;
                char key[64];
                snprintf(key, sizeof key, "%s_%s_ms", pre[s], t ? "tpot" : "ttft");
                for (int i = 0; i < 4; i++) {
                    double meas = row_num(v, ids[i], t ? "measured_tpot_ms" : "measured_ttft_ms");
                    double rel = (row_num(v, ids[i], key) - meas) / meas;
                    mape += fabs(rel) / 4;
                    bias += rel / 4;
                }
                CHECK_REL(band_num(band, "vllm", set[s], t ? "tpot" : "ttft", "mape"), mape, 1e-3);
                CHECK_REL(band_num(band, "vllm", set[s], t ? "tpot" : "ttft", "bias"), bias, 1e-3);
            }
        CHECK(band_num(band, "trtllm-1.0", NULL, "ttft", "mape") > 0);
        CHECK(band_num(band, "trtllm", "leave_one_engine_out", "tpot", "mape") > 0);
    }
    cJSON_Delete(band);
    cJSON_Delete(v);
    /* refused: without --loso; over the input; over a file that is not a band file */
    char *before = read_file(bp, NULL, &e);
    CHECK_INT(validate_in(b, dir, "rows.csv --fit --bands other.json"), 2);
    CHECK(out_has(dir, "--bands needs --loso"));
    CHECK_INT(validate_in(b, dir, "rows.csv --loso --bands ./rows.csv"), 1);
    CHECK(out_has(dir, "--bands ./rows.csv: is the input file rows.csv"));
    CHECK_INT(validate_in(b, dir, "rows.csv --json ../$(basename $PWD)/rows.csv"), 1);
    CHECK(out_has(dir, "is the input file rows.csv"));
    snprintf(path, sizeof path, "%s/rows.csv", dir);
    char *csv = read_file(path, NULL, &e);
    CHECK(csv && !strncmp(csv, held_head, strlen(held_head)));
    free(csv);
    snprintf(path, sizeof path, "%s/v.json", dir);
    CHECK_INT(validate_in(b, dir, "rows.csv --loso --no-rows --bands v.json"), 1);
    CHECK(out_has(dir, "--bands v.json: not a band file, left as it is"));
    char *after = read_file(bp, NULL, &e);
    CHECK(before && after && !strcmp(before, after));
    free(before);
    free(after);
    /* one engine family: nothing to leave it out against */
    snprintf(path, sizeof path, "%s/trt.csv", dir);
    held_csv(path, 0, 6, NULL, NULL);
    CHECK_INT(validate_in(b, dir, "trt.csv --loso --no-rows --jobs 2 --bands trt.json"), 0);
    CHECK(out_has(dir, "      leave-one-engine-out: no other engine's rows"));
    snprintf(path, sizeof path, "%s/trt.json", dir);
    band = jsonio_parse_file(path, &e);
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(band, "engines"), "trtllm");
    CHECK(tr && !cJSON_GetObjectItemCaseSensitive(tr, "leave_one_engine_out"));
    CHECK(band_num(band, "trtllm", NULL, "ttft", "mape") > 0);
    cJSON_Delete(band);
    th_rm_tree(dir);
}

void suite_vheld(void);
void suite_vheld(void)
{
    RUN(test_validate_several_files);
    RUN(test_validate_loeo_excludes_engine);
    RUN(test_validate_loeo_own_fits);
    RUN(test_validate_bands);
}
