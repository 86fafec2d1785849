/*
 * test_hw.c -- bundled hardware files (load, figures, a citation for every
 * figure), efficiency curves, KV capacity, rejected bad values, and the
 * calibrated profile each bundled GPU brings (models/profiles/).
 */
#include <stdint.h>
#include <stdlib.h>

#include "hw.h"
#include "jsonio.h"
#include "paths.h"
#include "testhelp.h"

void suite_hw(void);

static const char *const bundled[] = {
    "h100-sxm", "h200-sxm", "a100-sxm-80gb", "l40s", "b200", "rtx-pro-6000", NULL,
};

static int load(const char *name, HwDesc *h)
{
    Err e = {0};
    int r = hw_load(name, h, &e);
    if (r) fprintf(stderr, "  hw_load(%s): %s\n", name, e.msg);
    return r;
}

static void test_hw_every_bundled_file_loads(void)
{
    char names[2048];
    paths_list_names(names, sizeof names, "hardware/");
    for (int i = 0; bundled[i]; i++) {
        HwDesc h;
        CHECK_INT(load(bundled[i], &h), 0);
        CHECK_CONTAINS(names, bundled[i]);
        CHECK(h.peak_flops[DTYPE_BF16] > 1e14);
        CHECK(h.peak_flops[DTYPE_FP16] == h.peak_flops[DTYPE_BF16]);
        CHECK(h.mem_bw_bytes_per_s > 5e11 && h.mem_bytes > 4e10);
        CHECK(h.gemm_compute_eff.n >= 8);
        CHECK(h.mem_eff > 0.5 && h.attn_mem_eff > 0.5 && h.attn_compute_eff > 0.2);
        CHECK(h.iter_overhead_s > 0 && h.iter_overhead_s < 0.01);
        CHECK_NEAR(h.runtime_reserve_bytes, 3.5 * GIB, 1);
        CHECK_NEAR(h.mem_util, 0.9, 0);
        CHECK(h.usd_per_gpu_hour > 0);
    }
    char *save = NULL;
    for (char *tok = strtok_r(names, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        HwDesc h;
        CHECK_INT(load(tok, &h), 0);
    }
}

/* The memory CUDA reports (what vLLM and SGLang size the KV pool from),
 * not the marketed capacity (issue 37): H100 81,050 MiB = 79.15 GiB, H200
 * 143,165 MiB = 139.81 GiB, A100 PyTorch's total_memory = 79.215 GiB. */
#define H100_CUDA_BYTES (81050.0 * MIB)
#define H200_CUDA_BYTES (143165.0 * MIB)
#define A100_CUDA_BYTES 85056798720.0

static void test_hw_figures(void)
{
    HwDesc h;
    if (!load("h100-sxm", &h)) {
        CHECK_NEAR(h.peak_flops[DTYPE_BF16], 989e12, 0);
        CHECK_NEAR(h.peak_flops[DTYPE_FP8], 1978e12, 0);
        CHECK_NEAR(h.mem_bw_bytes_per_s, 3.35e12, 0);
        CHECK_NEAR(h.mem_bytes, H100_CUDA_BYTES, 0);
        CHECK_NEAR(h.mem_bytes / GIB, 79.15, 0.005);
        CHECK_NEAR(h.link_bw_bytes_per_s, 450e9, 0);
        CHECK_NEAR(h.link_latency_s, 10e-6, 1e-12);
        CHECK_NEAR(h.busy_w, 700, 0);
    } else CHECK(0);
    if (!load("h200-sxm", &h)) {
        CHECK_NEAR(h.mem_bytes, H200_CUDA_BYTES, 0);
        CHECK_NEAR(h.mem_bytes / GIB, 139.81, 0.005);
    } else CHECK(0);
    if (!load("a100-sxm-80gb", &h)) {
        CHECK_NEAR(h.peak_flops[DTYPE_BF16], 312e12, 0);
        CHECK_NEAR(h.peak_flops[DTYPE_FP8], 0, 0); /* no FP8 on Ampere */
        CHECK_NEAR(h.mem_bytes, A100_CUDA_BYTES, 0);
        CHECK_NEAR(h.mem_bytes / GIB, 79.215, 0.0005);
    } else CHECK(0);
    if (!load("l40s", &h)) {
        CHECK_NEAR(h.mem_bytes, 48305799168.0, 0);
        CHECK_NEAR(h.link_bw_bytes_per_s, 32e9, 0); /* PCIe Gen4, no NVLink */
    } else CHECK(0);
    if (!load("b200", &h)) {
        CHECK_NEAR(h.peak_flops[DTYPE_BF16], 2250e12, 0);
        CHECK_NEAR(h.mem_bytes, 180 * GIB, 0); /* AIC's usable figure: no CUDA one at hand */
    } else CHECK(0);
    if (!load("rtx-pro-6000", &h)) {
        /* AIC's dense figure, not the chapter's 503.8 TFLOP/s. */
        CHECK_NEAR(h.peak_flops[DTYPE_BF16], 467.8e12, 0);
        CHECK_NEAR(h.mem_bw_bytes_per_s, 1.792e12, 0);
        CHECK_NEAR(h.mem_bytes, 102641958912.0, 0);
    } else CHECK(0);
}

/* Every top-level figure of every bundled file is cited in `sources`. */
static void test_hw_every_figure_has_a_source(void)
{
    for (int i = 0; bundled[i]; i++) {
        char path[1024];
        Err e = {0};
        paths_data_file(path, sizeof path, "hardware/", bundled[i]);
        cJSON *root = jsonio_parse_file(path, &e);
        CHECK(root != NULL);
        if (!root) continue;
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(root, "sources");
        CHECK(cJSON_IsObject(src));
        for (const cJSON *it = root->child; it && src; it = it->next) {
            if (strcmp(it->string, "sources") == 0 || strcmp(it->string, "source") == 0)
                continue;
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(src, it->string);
            if (!cJSON_IsString(s) || strlen(s->valuestring) < 10) {
                th_failures++;
                fprintf(stderr, "  %s: no source for \"%s\"\n", path, it->string);
            }
        }
        cJSON_Delete(root);
    }
}

/* Issue 17: Apple M2 Max, one unified pool (chapter 003's Q2_K example). */
static void test_hw_m2_max(void)
{
    HwDesc h;
    if (load("m2-max", &h)) { CHECK(0); return; }
    CHECK_INT(h.unified_memory, 1);
    /* "unified memory 96 GB = 89.41 GiB, reserve 8 GiB for the system" */
    CHECK_NEAR(h.mem_bytes / GIB, 89.41, 0.005);
    CHECK_NEAR(h.runtime_reserve_bytes, 8 * GIB, 0);
    CHECK_NEAR(h.mem_util, 1.0, 0);
    CHECK_NEAR(h.mem_bw_bytes_per_s, 400e9, 0);
    CHECK_NEAR(h.peak_flops[DTYPE_FP16], 13.6e12, 0);
    /* the Q2_K file (79.80 GiB) leaves 1.61 GiB for KV; the BF16 one does not fit */
    ModelDesc q, b;
    Err e = {0};
    if (model_load("qwen3-235b-a22b-q2_k", &q, &e) || model_load("qwen3-235b-a22b", &b, &e)) { CHECK(0); return; }
    CHECK_NEAR(hw_kv_capacity_bytes(&h, &q, 1) / GIB, 89.41 - 8 - 64.43 - 15.37, 0.01);
    CHECK(hw_kv_capacity_bytes(&h, &b, 1) < 0);
    /* every figure cited */
    char path[1024];
    paths_data_file(path, sizeof path, "hardware/", "m2-max");
    cJSON *root = jsonio_parse_file(path, &e);
    const cJSON *src = root ? cJSON_GetObjectItemCaseSensitive(root, "sources") : NULL;
    CHECK(cJSON_IsObject(src));
    for (const cJSON *it = root ? root->child : NULL; it && src; it = it->next) {
        if (!strcmp(it->string, "sources") || !strcmp(it->string, "source")) continue;
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(src, it->string);
        if (!cJSON_IsString(s) || strlen(s->valuestring) < 10) {
            th_failures++;
            fprintf(stderr, "  %s: no source for \"%s\"\n", path, it->string);
        }
    }
    cJSON_Delete(root);
}

static void test_hw_effcurve(void)
{
    EffCurve c = {0.5, 0, {0}, {0}};
    CHECK_NEAR(effcurve_at(&c, 123), 0.5, 0);
    EffCurve k = {0, 3, {1, 4, 64}, {0.1, 0.3, 0.9}};
    CHECK_NEAR(effcurve_at(&k, 0.5), 0.1, 0);  /* clamped below */
    CHECK_NEAR(effcurve_at(&k, 0), 0.1, 0);
    CHECK_NEAR(effcurve_at(&k, 1), 0.1, 1e-15);
    CHECK_NEAR(effcurve_at(&k, 2), 0.2, 1e-12); /* halfway in log2 */
    CHECK_NEAR(effcurve_at(&k, 4), 0.3, 1e-12);
    CHECK_NEAR(effcurve_at(&k, 16), 0.6, 1e-12); /* halfway from 4 to 64 in log2 */
    CHECK_NEAR(effcurve_at(&k, 1e9), 0.9, 0);   /* clamped above */

    HwDesc h;
    if (!load("h100-sxm", &h)) {
        const EffCurve *g = &h.gemm_compute_eff;
        CHECK_NEAR(effcurve_at(g, 1), g->eff[0], 0);
        CHECK(effcurve_at(g, 4096) > 0.7);
        CHECK(effcurve_at(g, 8) < 0.05); /* decode-sized GEMMs are memory-bound */
    } else CHECK(0);
}

static void test_hw_kv_capacity(void)
{
    HwDesc h;
    ModelDesc m;
    Err e = {0};
    if (load("h100-sxm", &h) || model_load("qwen3-8b", &m, &e)) { CHECK(0); return; }
    double one = H100_CUDA_BYTES * 0.9 - 2.0 * 8190735360.0 - 3.5 * GIB;
    CHECK_NEAR(hw_kv_capacity_bytes(&h, &m, 1), one, 1);
    CHECK_NEAR(hw_kv_capacity_bytes(&h, &m, 2), 2 * (H100_CUDA_BYTES * 0.9 - 3.5 * GIB) -
                                                    2.0 * 8190735360.0, 1);
    ModelDesc big;
    if (model_load("llama-3.1-70b", &big, &e) || load("l40s", &h)) { CHECK(0); return; }
    CHECK(hw_kv_capacity_bytes(&h, &big, 1) < 0); /* 141 GB of weights on a 48 GB card */
    CHECK(hw_kv_capacity_bytes(&h, &big, 4) > 0);
    /* issue 35: past one KV head a GPU (8 for the 70B) the heads are
     * replicated, so 16 GPUs hold the tokens of 8 GPUs' room, not 16 */
    if (load("h100-sxm", &h)) { CHECK(0); return; }
    double free16 = H100_CUDA_BYTES * 0.9 - big.weights_total_bytes / 16 - 3.5 * GIB;
    CHECK_NEAR(hw_kv_capacity_bytes(&h, &big, 16), 8 * free16, 1);
    double free8 = H100_CUDA_BYTES * 0.9 - big.weights_total_bytes / 8 - 3.5 * GIB;
    CHECK_NEAR(hw_kv_capacity_bytes(&h, &big, 8), 8 * free8, 1);
}

static void test_hw_round_trip(void)
{
    for (int i = 0; bundled[i]; i++) {
        HwDesc a, b;
        if (load(bundled[i], &a)) { CHECK(0); continue; }
        cJSON *o = cJSON_CreateObject();
        hw_to_json(&a, o);
        Err e = {0};
        CHECK_INT(hw_from_json(o, "round-trip", &b, &e), 0);
        CHECK(strcmp(a.name, b.name) == 0);
        for (int d = 0; d < DTYPE_COUNT; d++) CHECK_REL(b.peak_flops[d], a.peak_flops[d], 1e-12);
        CHECK_NEAR(b.mem_bytes, a.mem_bytes, 0);
        CHECK_REL(b.mem_bw_bytes_per_s, a.mem_bw_bytes_per_s, 1e-12);
        CHECK_REL(b.link_latency_s, a.link_latency_s, 1e-9);
        CHECK_REL(b.iter_overhead_s, a.iter_overhead_s, 1e-9);
        CHECK_REL(b.runtime_reserve_bytes, a.runtime_reserve_bytes, 1e-9);
        CHECK_INT(b.gemm_compute_eff.n, a.gemm_compute_eff.n);
        for (int k = 0; k < a.gemm_compute_eff.n; k++)
            CHECK_NEAR(b.gemm_compute_eff.eff[k], a.gemm_compute_eff.eff[k], 0);
        CHECK_NEAR(b.attn_mem_eff, a.attn_mem_eff, 1e-12);
        CHECK_NEAR(b.busy_w, a.busy_w, 0);
        CHECK_NEAR(b.usd_per_gpu_hour, a.usd_per_gpu_hour, 1e-12);
        cJSON_Delete(o);
    }
}

/* A minimal valid file with one value replaced. */
static int try_hw(const char *eff, const char *extra, Err *e)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"g\", \"peak_flops\": {\"bf16\": 1e15}, \"mem_bw_bytes_per_s\": 3e12,"
             " \"mem_bytes\": 8e10, \"link_bw_bytes_per_s\": 4.5e11, \"link_latency_us\": 10,"
             " \"efficiency\": {%s}, \"iter_overhead_us\": 500, \"runtime_reserve_gib\": 3.5,"
             " \"mem_util\": 0.9%s}",
             eff, extra);
    cJSON *j = jsonio_parse(text, "g.json", e);
    if (!j) return -2;
    HwDesc h;
    int r = hw_from_json(j, "g.json", &h, e);
    cJSON_Delete(j);
    return r;
}

static void test_hw_bad_values(void)
{
    Err e = {0};
    const char *ok = "\"gemm_compute\": 0.7, \"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8";
    CHECK_INT(try_hw(ok, "", &e), 0);

    CHECK_INT(try_hw("\"gemm_compute\": 0.7, \"mem\": 1.5, \"attn_compute\": 0.5, "
                     "\"attn_mem\": 0.8", "", &e), -1);
    CHECK(strcmp(e.msg, "g.json: efficiency.mem: got 1.5, expected a fraction in (0, 1]") == 0);
    CHECK_INT(try_hw("\"gemm_compute\": 0, \"mem\": 0.8, \"attn_compute\": 0.5, "
                     "\"attn_mem\": 0.8", "", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: efficiency.gemm_compute: got 0, expected a fraction in (0, 1]");
    CHECK_INT(try_hw("\"gemm_compute\": {\"rows\": [1, 64, 32], \"eff\": [0.1, 0.5, 0.6]}, "
                     "\"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8", "", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: efficiency.gemm_compute.rows[2]: expected numbers > 0 in "
                          "strictly ascending order");
    CHECK_INT(try_hw("\"gemm_compute\": {\"rows\": [1, 64], \"eff\": [0.1]}, "
                     "\"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8", "", &e), -1);
    CHECK_CONTAINS(e.msg, "gemm_compute.eff: got 1 values, expected 2");
    CHECK_INT(try_hw("\"gemm_compute\": {\"rows\": [1, 64], \"eff\": [0.1, 1.2]}, "
                     "\"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8", "", &e), -1);
    CHECK_CONTAINS(e.msg, "gemm_compute.eff[1]: expected a fraction in (0, 1]");
    CHECK_INT(try_hw("\"gemm_compute\": {\"rows\": [1, 64], \"eff\": [0.1, 0.7]}, "
                     "\"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8", "", &e), 0);
    CHECK_INT(try_hw("\"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8", "", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: efficiency: missing key \"gemm_compute\"");
    CHECK_INT(try_hw(ok, ", \"usd_per_hour\": 2", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: unknown key \"usd_per_hour\"; allowed: name, source, peak_flops");
    CHECK_INT(try_hw(ok, ", \"power_w\": {\"idle\": 800, \"busy\": 700}", &e), -1);
    CHECK_CONTAINS(e.msg, "idle 800 W exceeds busy 700 W");
    CHECK_INT(try_hw(ok, ", \"sources\": {\"mem_bytes\": 5}", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: sources.mem_bytes: expected a non-empty string");
    CHECK_INT(try_hw(ok, ", \"sources\": {\"membytes\": \"x\"}", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: sources: unknown key \"membytes\"");

    /* Unit slips: a bandwidth in GB/s, a negative one, memory in GB. */
    cJSON *j = jsonio_parse("{\"name\": \"g\", \"peak_flops\": {\"bf16\": 1e15}, "
                            "\"mem_bw_bytes_per_s\": -3e12}", "g.json", &e);
    HwDesc h;
    CHECK_INT(hw_from_json(j, "g.json", &h, &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: mem_bw_bytes_per_s: got -3000000000000, expected a number in [1e+09, 1e+14]");
    cJSON_Delete(j);
    j = jsonio_parse("{\"name\": \"g\", \"peak_flops\": {\"bf16\": 989}}", "g.json", &e);
    CHECK_INT(hw_from_json(j, "g.json", &h, &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: missing key \"mem_bw_bytes_per_s\"");
    cJSON_Delete(j);
    j = jsonio_parse("{\"name\": \"g\", \"peak_flops\": {\"bf16\": 1e15, \"int3\": 1}}", "g.json", &e);
    CHECK_INT(hw_from_json(j, "g.json", &h, &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: peak_flops: unknown key \"int3\"");
    cJSON_Delete(j);
    j = jsonio_parse("{\"name\": \"g\", \"peak_flops\": {\"fp8\": 1e15}}", "g.json", &e);
    CHECK_INT(hw_from_json(j, "g.json", &h, &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: peak_flops: missing key \"bf16\"");
    cJSON_Delete(j);
}

static void test_hw_load_errors(void)
{
    HwDesc h;
    Err e = {0};
    CHECK_INT(hw_load("h900", &h, &e), -1);
    CHECK_CONTAINS(e.msg, "unknown hardware \"h900\"");
    CHECK_CONTAINS(e.msg, "available: a100-sxm-80gb, b200, h100-sxm, h200-sxm, l40s, m2-max, rtx-pro-6000");
    CHECK_INT(hw_load("/nonexistent/g.json", &h, &e), -1);
    CHECK_CONTAINS(e.msg, "/nonexistent/g.json");
    CHECK_INT(hw_load(NULL, &h, &e), -1);
}


/* Every bundled GPU has a bundled profile, attached by hw_load; a file may
 * name another or "none"; the name survives a round trip. */
static void test_hw_profiles_attached(void)
{
    for (int i = 0; bundled[i]; i++) {
        static HwDesc h;
        if (load(bundled[i], &h)) { CHECK(0); continue; }
        CHECK(h.profile.present);
        CHECK(!strcmp(h.profile_name, bundled[i]));
        CHECK(!strcmp(h.profile.hardware, bundled[i]));
        CHECK(h.profile.op[PROF_GEMM_BF16].present);
        CHECK(h.profile.op[PROF_ATTN_PREFILL].present);
        CHECK(h.profile.op[PROF_ATTN_DECODE].present);
        /* the reference peaks are the hardware file's */
        CHECK_NEAR(h.profile.op[PROF_GEMM_BF16].peak_flops, h.peak_flops[DTYPE_BF16], 0);
        CHECK_NEAR(h.profile.op[PROF_ATTN_DECODE].bw_bytes_per_s, h.mem_bw_bytes_per_s, 0);
        CHECK(strlen(h.profile.source) > 20);
        /* no profile replaces the hardware's per-iteration overhead */
        CHECK_NEAR(h.iter_overhead_s, 1e-3, 1e-12);
        cJSON *o = cJSON_CreateObject();
        hw_to_json(&h, o);
        static HwDesc b;
        Err e = {0};
        CHECK_INT(hw_from_json(o, "round-trip", &b, &e), 0);
        CHECK(b.profile.present);
        CHECK_NEAR(profile_gemm_time(&b.profile, 0, 64, 4096, 4096, NULL),
                   profile_gemm_time(&h.profile, 0, 64, 4096, 4096, NULL), 0);
        cJSON_Delete(o);
    }
    Err e = {0};
    const char *ok = "\"gemm_compute\": 0.7, \"mem\": 0.8, \"attn_compute\": 0.5, \"attn_mem\": 0.8";
    CHECK_INT(try_hw(ok, ", \"profile\": \"h99\"", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: profile: unknown profile \"h99\"");
    CHECK_CONTAINS(e.msg, "available: a100-sxm-80gb, a100-sxm-80gb-sglang, a100-sxm-80gb-trtllm, a100-sxm-80gb-vllm, b200,");
    CHECK_INT(try_hw(ok, ", \"profile\": 3", &e), -1);
    CHECK_CONTAINS(e.msg, "g.json: profile");
    CHECK_INT(try_hw(ok, ", \"profile\": \"none\"", &e), 0);
    CHECK_INT(try_hw(ok, ", \"profile\": \"l40s\"", &e), 0);
    static HwDesc h;
    CHECK_INT(hw_attach_profile(&h, "none", &e), 0);
    CHECK(!h.profile.present);
    /* a description built on a bundled one gets its profile on request,
     * unless it chose (here: none) */
    CHECK_INT(hw_default_profile(&h, "l40s", &e), 0);
    CHECK(!h.profile.present);
    h.profile_name[0] = '\0';
    CHECK_INT(hw_default_profile(&h, "l40s", &e), 0);
    CHECK(h.profile.present && !strcmp(h.profile.name, "l40s"));
    CHECK_INT(hw_default_profile(&h, "my-gpu.json", &e), 0);
}

void suite_hw(void)
{
    RUN(test_hw_m2_max);
    RUN(test_hw_every_bundled_file_loads);
    RUN(test_hw_figures);
    RUN(test_hw_every_figure_has_a_source);
    RUN(test_hw_effcurve);
    RUN(test_hw_kv_capacity);
    RUN(test_hw_round_trip);
    RUN(test_hw_bad_values);
    RUN(test_hw_load_errors);
    RUN(test_hw_profiles_attached);
}
