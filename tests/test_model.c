/*
 * test_model.c -- derived model quantities against published figures
 * (Hugging Face parameter counts, SPEC section 9 / chapter 003 numbers),
 * every bundled description, and the error messages for bad ones.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "jsonio.h"
#include "model.h"
#include "paths.h"
#include "testhelp.h"

void suite_model(void);

static const char *const bundled[] = {
    "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-2-7b", "llama-2-70b", "mistral-7b", NULL,
};

static int load(const char *name, ModelDesc *m)
{
    Err e = {{0}};
    int r = model_load(name, m, &e);
    if (r) fprintf(stderr, "  model_load(%s): %s\n", name, e.msg);
    return r;
}

/* Parses text as a model description named "m.json"; returns the status. */
static int from_text(const char *text, ModelDesc *m, Err *e)
{
    cJSON *j = jsonio_parse(text, "m.json", e);
    if (!j) return -1;
    int r = model_from_json(j, "m.json", m, e);
    cJSON_Delete(j);
    return r;
}

static void test_model_dtypes(void)
{
    CHECK_NEAR(dtype_bytes(DTYPE_BF16, 10), 20, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_FP8, 10), 10, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_FP32, 10), 40, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q8_0, 32), 34, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q8_0, 33), 68, 0); /* whole blocks */
    CHECK_NEAR(dtype_bytes(DTYPE_Q4_0, 128), 72, 0);
    CHECK_INT(dtype_parse("q8_0"), DTYPE_Q8_0);
    CHECK_INT(dtype_parse("fp16"), DTYPE_FP16);
    CHECK_INT(dtype_parse("BF16"), -1);
    CHECK_INT(dtype_parse("int8"), -1);
    CHECK_INT(dtype_parse(NULL), -1);
    for (int i = 0; i < DTYPE_COUNT; i++) CHECK_INT(dtype_parse(dtype_name((Dtype)i)), i);
}

static void test_model_qwen3_8b(void)
{
    ModelDesc m;
    if (load("qwen3-8b", &m)) { CHECK(0); return; }
    CHECK_INT(m.params, 8190735360LL);
    CHECK_INT(m.embed_params, 151936LL * 4096);
    CHECK_NEAR(m.weights_read_bytes, 15136811008.0, 0);
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 147456, 0);
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_FP8), 73728, 0);
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_Q8_0), 2 * 36 * 8 * 34 * 4, 0); /* 78,336 */
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_Q4_0), 2 * 36 * 8 * 18 * 4, 0); /* 41,472 */
    CHECK_NEAR(m.flops_per_pair, 4.0 * 36 * 32 * 128, 0);
    CHECK_NEAR(m.lm_head_flops, 2.0 * 151936 * 4096, 0);

    /* Chapter 003: prefill of 16 x 8192 tokens = 2,137.509 TFLOP, with the
     * LM head only on each prompt's last position. */
    double n = 16, L = 8192;
    double fl = m.flops_per_token * n * L + m.flops_per_pair * n * (L * (L + 1) / 2) +
                m.lm_head_flops * n;
    CHECK_NEAR(fl / 1e12, 2137.509, 0.001);

    /* Decode round for 16 x 8K: weights once plus every context's KV:
     * 34.46 GB in BF16, 25.40 GB with q8_0 KV. */
    double kv16 = n * L * model_kv_bytes_per_token(&m, DTYPE_BF16);
    double kvq8 = n * L * model_kv_bytes_per_token(&m, DTYPE_Q8_0);
    CHECK_NEAR((m.weights_read_bytes + kv16) / 1e9, 34.46, 0.01);
    CHECK_NEAR((m.weights_read_bytes + kvq8) / 1e9, 25.40, 0.01);
    CHECK_NEAR(m.weights_read_bytes + kv16, 34464163840.0, 0);
    CHECK_NEAR(m.weights_read_bytes + kvq8, 25404467200.0, 0);
}

static void test_model_published_param_counts(void)
{
    ModelDesc m;
    if (!load("llama-3.1-8b", &m)) {
        CHECK_INT(m.params, 8030261248LL);
        CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 131072, 0);
    } else CHECK(0);
    if (!load("llama-2-7b", &m)) {
        CHECK_INT(m.params, 6738415616LL);
        CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_FP16), 524288, 0);
    } else CHECK(0);
    if (!load("llama-3.1-70b", &m)) {
        CHECK_INT(m.params, 70553706496LL);
        CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 327680, 0);
    } else CHECK(0);
    if (!load("mistral-7b", &m)) CHECK_INT(m.params, 7248023552LL); else CHECK(0);
    if (!load("qwen3-32b", &m)) CHECK_INT(m.params, 32762123264LL); else CHECK(0);
}

static void test_model_moe(void)
{
    ModelDesc m;
    if (load("qwen3-30b-a3b", &m)) { CHECK(0); return; }
    /* Hugging Face lists 30.5B total, 3.3B activated. */
    CHECK_INT(m.params, 30532122624LL);
    double attn = 2.0 * 2048 * 32 * 128 + 2.0 * 2048 * 4 * 128;
    double active = attn + 8.0 * 3 * 2048 * 768 + 2048.0 * 128;
    CHECK_INT(m.layer_matmul_params, (int64_t)active);
    CHECK_NEAR(m.flops_per_token, 2.0 * 48 * active, 0);
    double activated = m.embed_params * 2.0 + 48 * (active + 2 * 2048 + 2 * 128) + 2048;
    CHECK_REL(activated, 3.3e9, 0.02);
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 2.0 * 48 * 4 * 128 * 2, 0);
}

static void test_model_every_bundled_model_loads(void)
{
    char names[2048];
    paths_list_names(names, sizeof names, "");
    for (int i = 0; bundled[i]; i++) {
        ModelDesc m;
        CHECK_INT(load(bundled[i], &m), 0);
        CHECK(m.source[0] != '\0');
        CHECK(m.params > 0 && m.weights_read_bytes > 0 && m.flops_per_token > 0);
        CHECK_CONTAINS(names, bundled[i]);
    }
    /* ... and every file in models/ is a valid description. */
    char *save = NULL, *copy = names;
    for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        ModelDesc m;
        CHECK_INT(load(tok, &m), 0);
    }
}

static void test_model_tied_and_options(void)
{
    const char *tied = "{\"name\": \"t\", \"source\": \"test\", \"layers\": 2, \"hidden\": 64,"
                       " \"q_heads\": 4, \"kv_heads\": 2, \"head_dim\": 16, \"ffn\": 128,"
                       " \"vocab\": 1000, \"tied_embeddings\": true, \"gated_mlp\": false,"
                       " \"qkv_bias\": true, \"dtype\": \"fp32\"}";
    ModelDesc m;
    Err e = {{0}};
    CHECK_INT(from_text(tied, &m, &e), 0);
    /* q 4096, k 2048, v 2048, o 4096; MLP 2*64*128; norms 128; bias 64+64. */
    int64_t layer = 4096 + 2048 + 2048 + 4096 + 2 * 64 * 128 + 128 + (64 + 2 * 32);
    CHECK_INT(m.layer_params, layer);
    CHECK_INT(m.params, 1000 * 64 + 2 * layer + 64);
    CHECK_NEAR(m.weights_read_bytes, 4.0 * (double)m.params, 0); /* tied: the LM head reads the table */
    CHECK_INT(m.layer_matmul_params, 4096 + 2048 + 2048 + 4096 + 2 * 64 * 128);
    CHECK_INT(m.max_context, 0);

    cJSON *o = cJSON_CreateObject();
    model_to_json(&m, o);
    cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "params");
    CHECK(p && p->valuedouble == (double)m.params);
    CHECK(cJSON_GetObjectItemCaseSensitive(o, "weights_read_bytes") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(o, "kv_bytes_per_token") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(o, "flops_per_token") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(o, "flops_per_pair") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(o, "lm_head_flops") != NULL);
    cJSON_Delete(o);
}

static void test_model_errors(void)
{
    ModelDesc m;
    Err e = {{0}};
    const char *base_head = "{\"name\": \"t\", \"source\": \"test\", ";
    char text[1024];

    snprintf(text, sizeof text, "%s\"layers\": -5, \"hidden\": 64, \"q_heads\": 4, "
             "\"kv_heads\": 2, \"head_dim\": 16, \"ffn\": 128, \"vocab\": 10, "
             "\"tied_embeddings\": false, \"dtype\": \"bf16\"}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK(strcmp(e.msg, "m.json: layers: got -5, expected an integer in [1, 4096]") == 0);

    snprintf(text, sizeof text, "%s\"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
             "\"kv_heads\": 3, \"head_dim\": 16, \"ffn\": 128, \"vocab\": 10, "
             "\"tied_embeddings\": false, \"dtype\": \"bf16\"}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "kv_heads = 3 does not divide q_heads = 4");

    snprintf(text, sizeof text, "%s\"layers\": 2, \"hiden\": 64}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: unknown key \"hiden\"; allowed: name, source, layers");

    snprintf(text, sizeof text, "%s\"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
             "\"kv_heads\": 2, \"head_dim\": 16, \"ffn\": 128, \"vocab\": 10, "
             "\"tied_embeddings\": false, \"dtype\": \"q4_0\"}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: dtype: got \"q4_0\", expected one of \"bf16\"");

    snprintf(text, sizeof text, "%s\"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
             "\"kv_heads\": 2, \"head_dim\": 16, \"vocab\": 10, "
             "\"tied_embeddings\": false, \"dtype\": \"bf16\"}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: missing key \"ffn\"");

    snprintf(text, sizeof text, "%s\"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
             "\"kv_heads\": 2, \"head_dim\": 16, \"vocab\": 10, \"tied_embeddings\": false, "
             "\"dtype\": \"bf16\", \"moe\": {\"experts\": 4, \"active_experts\": 5, "
             "\"expert_ffn\": 8}}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "active_experts (5) <= experts (4)");

    snprintf(text, sizeof text, "%s\"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
             "\"kv_heads\": 2, \"head_dim\": 16, \"vocab\": 10, \"tied_embeddings\": false, "
             "\"dtype\": \"bf16\", \"moe\": {\"experts\": 4, \"top_k\": 2}}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: moe: unknown key \"top_k\"");

    CHECK_INT(from_text("{\"name\": \"t\",\n \"layers\": 2,,}", &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: line 2, column 15: malformed JSON");

    CHECK_INT(from_text("[]", &m, &e), -1);
    CHECK_CONTAINS(e.msg, "expected an object");
}

static void test_model_load_errors(void)
{
    ModelDesc m;
    Err e = {{0}};
    CHECK_INT(model_load("qwen9-999b", &m, &e), -1);
    CHECK_CONTAINS(e.msg, "unknown model \"qwen9-999b\"");
    CHECK_CONTAINS(e.msg, "available: ");
    CHECK_CONTAINS(e.msg, "qwen3-8b");
    CHECK_CONTAINS(e.msg, "llama-3.1-70b");
    CHECK_INT(model_load("../etc/passwd", &m, &e), -1);
    CHECK_INT(model_load("", &m, &e), -1);

    /* A path ending in .json is read as given; errors name that path. */
    char dir[] = "/tmp/servesim_modelXXXXXX";
    if (!mkdtemp(dir)) { CHECK(0); return; }
    char path[256];
    snprintf(path, sizeof path, "%s/bad.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\n  \"name\": \"x\",\n  \"layers\": }\n", f);
        fclose(f);
    }
    CHECK_INT(model_load(path, &m, &e), -1);
    CHECK_CONTAINS(e.msg, path);
    CHECK_CONTAINS(e.msg, "line 3, column 13: malformed JSON");
    remove(path);

    char qpath[512];
    paths_data_file(qpath, sizeof qpath, "", "qwen3-8b");
    if (model_load(qpath, &m, &e) == 0) CHECK_INT(m.params, 8190735360LL); else CHECK(0);
    CHECK_INT(model_load("/nonexistent/x.json", &m, &e), -1);
    CHECK_CONTAINS(e.msg, "/nonexistent/x.json: cannot open");
    rmdir(dir);
}

void suite_model(void)
{
    RUN(test_model_dtypes);
    RUN(test_model_qwen3_8b);
    RUN(test_model_published_param_counts);
    RUN(test_model_moe);
    RUN(test_model_every_bundled_model_loads);
    RUN(test_model_tied_and_options);
    RUN(test_model_errors);
    RUN(test_model_load_errors);
}
