/*
 * test_model.c -- derived model quantities against published figures
 * (Hugging Face parameter counts, SPEC section 9 / chapter 003 numbers),
 * every bundled description, and the error messages for bad ones.
 */
#include <math.h>
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
    "llama-2-7b", "llama-2-70b", "mistral-7b", "deepseek-v3", "deepseek-r1", "qwen3-235b-a22b",
    "qwen3-235b-a22b-q2_k", "gpt-oss-120b", "kimi-linear-48b-a3b", "bloom-176b", NULL,
};

static int load(const char *name, ModelDesc *m)
{
    Err e = {0};
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
    /* BLOOM-176B: 176,247,271,424 with the linear layers' and LayerNorms'
     * biases, which the description does not count (70 x 9 x 14336 +
     * 70 x 2 x 14336 + 3 x 14336 = 11,081,728); multi-head attention, so
     * K and V of all 112 heads per layer */
    if (!load("bloom-176b", &m)) {
        CHECK_INT(m.params, 176247271424LL - 11081728LL);
        CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 2.0 * 70 * 112 * 128 * 2, 0);
        CHECK_NEAR(m.lm_head_flops, 2.0 * 250880 * 14336, 0);
    } else CHECK(0);
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
    Err e = {0};
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
    Err e = {0};
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
             "\"tied_embeddings\": false, \"dtype\": \"q5_0\"}", base_head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: dtype: got \"q5_0\", expected one of \"bf16\"");

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
    Err e = {0};
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

/* Issue 17: the block formats' bytes, scales included. */
static void test_model_block_formats(void)
{
    /* Chapter 003 figure 8-23: GGML Q2_K stores 256 values in 64 B of codes
     * + 20 B of metadata = 84 B, 2.625 bits per value, metadata ~24%. */
    CHECK_NEAR(dtype_bytes(DTYPE_Q2_K, 256), 84, 0);
    CHECK_NEAR(dtype_meta_bytes(DTYPE_Q2_K, 256), 20, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q2_K, 256) * 8 / 256, 2.625, 1e-12);
    CHECK_NEAR(dtype_meta_bytes(DTYPE_Q2_K, 256) / dtype_bytes(DTYPE_Q2_K, 256), 0.238, 0.001);
    /* q8_0 = 32 B codes + 2 B scale = 34 B (8.5 bits); q4_0 = 16 + 2 = 18 B (4.5 bits) */
    CHECK_NEAR(dtype_bytes(DTYPE_Q8_0, 32) * 8 / 32, 8.5, 0);
    CHECK_NEAR(dtype_meta_bytes(DTYPE_Q8_0, 32), 2, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q4_0, 32) * 8 / 32, 4.5, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q2_K, 257), 168, 0); /* whole blocks */
    CHECK_NEAR(dtype_bytes(DTYPE_Q3_K, 256), 110, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q4_K, 256), 144, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_Q6_K, 256), 210, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_MXFP4, 32), 17, 0);
    CHECK_NEAR(dtype_meta_bytes(DTYPE_MXFP4, 64), 2, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_NVFP4, 16), 9, 0);
    CHECK_NEAR(dtype_meta_bytes(DTYPE_NVFP4, 16), 1, 0);
    CHECK_NEAR(dtype_bytes(DTYPE_INT4, 128), 66, 0);
    CHECK_NEAR(dtype_meta_bytes(DTYPE_BF16, 128), 0, 0);
    CHECK_NEAR(dtype_act_bytes(DTYPE_MXFP4), 2, 0);
    CHECK_INT(dtype_parse("q2_k"), DTYPE_Q2_K);
    CHECK_INT(dtype_parse("mxfp4"), DTYPE_MXFP4);
    CHECK_INT(dtype_parse("int4"), DTYPE_INT4);
}

/* DeepSeek-V3/R1: MLA cache, MoE counts against the published figures. */
static void test_model_deepseek_mla(void)
{
    ModelDesc m, r;
    if (load("deepseek-v3", &m) || load("deepseek-r1", &r)) { CHECK(0); return; }
    /* DeepSeek-V3 technical report: 671B total, 37B activated per token. */
    CHECK_REL(m.params, 671e9, 0.001);
    CHECK_INT(m.params, 671026419200LL);
    CHECK_REL(m.params_active, 37e9, 0.02);
    CHECK_INT(r.params, m.params); /* R1: the same shape */
    CHECK_INT(m.moe_layers, 58);
    /* The latent: (512 + 64) values per token per layer; 61 layers in BF16
     * = 70,272 B.  Chapter 003: "the compact MLA state of the same 8K
     * context is only 549 MiB". */
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 61.0 * 576 * 2, 0);
    CHECK_NEAR(model_kv_bytes_for_tokens(&m, DTYPE_BF16, 8192) / MIB, 549.0, 1e-9);
    /* ... against 2 * 128 heads * (192 + 128 dims) if K and V were cached
     * decompressed: 28.4 x more. */
    CHECK_NEAR(m.flops_per_pair, 2.0 * 61 * 128 * (192 + 128), 0);
    CHECK_NEAR(m.flops_per_pair_absorbed, 2.0 * 61 * 128 * (2 * 512 + 64), 0);
    CHECK_NEAR(model_attn_flops(&m, 1, 99, 1), 100 * m.flops_per_pair_absorbed, 0);
    /* Expected distinct experts: one token touches its 8, a big batch all 256. */
    CHECK_NEAR(model_expected_experts(&m, 1), 8, 1e-9);
    CHECK_NEAR(model_expected_experts(&m, 2), 256 * (1 - pow(1 - 8.0 / 256, 2)), 1e-9);
    CHECK_NEAR(model_expected_experts(&m, 4096), 256, 1e-6);
    CHECK_NEAR(model_expected_experts(&m, 0), 0, 0);
    /* Weights read: all but the idle experts (58 layers x 248 at batch 1). */
    CHECK_NEAR(model_weights_read_bytes_tokens(&m, 1),
               m.weights_read_bytes - 58.0 * 248 * m.expert_bytes, 1);
    CHECK_NEAR(model_weights_read_bytes_tokens(&m, 1e6), m.weights_read_bytes, 1);
    CHECK_INT(m.expert_params, 3LL * 7168 * 2048);
}

static void test_model_routing_skew(void)
{
    ModelDesc m;
    if (load("qwen3-30b-a3b", &m)) { CHECK(0); return; }
    double uni = model_expected_experts(&m, 16);
    CHECK_NEAR(uni, 128 * (1 - pow(1 - 8.0 / 128, 16)), 1e-9);
    /* Dense models read every weight. */
    ModelDesc d;
    if (!load("qwen3-8b", &d)) CHECK_NEAR(model_weights_read_bytes_tokens(&d, 7), d.weights_read_bytes, 0);
    /* Zipf-skewed routing: still k experts per token, fewer distinct per
     * batch; s = 0 is uniform. */
    m.routing = MODEL_ROUTING_ZIPF;
    m.routing_s = 0;
    CHECK_NEAR(model_expected_experts(&m, 16), uni, 1e-9);
    m.routing_s = 1.2;
    CHECK_NEAR(model_expected_experts(&m, 1), 8, 1e-9);
    double skew = model_expected_experts(&m, 16);
    CHECK(skew < uni - 5);
    CHECK(model_expected_experts(&m, 17) > skew);
    Err e = {0};
    ModelDesc z;
    const char *t = "{\"name\": \"z\", \"source\": \"test\", \"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
                    "\"kv_heads\": 2, \"head_dim\": 16, \"vocab\": 10, \"tied_embeddings\": false, "
                    "\"dtype\": \"bf16\", \"moe\": {\"experts\": 4, \"active_experts\": 2, \"expert_ffn\": 8, "
                    "\"routing\": {\"kind\": \"zipf\", \"s\": 1}}}";
    CHECK_INT(from_text(t, &z, &e), 0);
    CHECK_INT(z.routing, MODEL_ROUTING_ZIPF);
    CHECK_NEAR(z.routing_s, 1, 0);
    /* weights 1, 1/2, 1/3, 1/4 (sum 25/12): c = 2 * 12/25 -> q = 0.96, 0.48, 0.32, 0.24 */
    CHECK_NEAR(model_expected_experts(&z, 1), 2, 1e-12);
    CHECK_NEAR(model_expected_experts(&z, 2), (1 - 0.04 * 0.04) + (1 - 0.52 * 0.52) + (1 - 0.68 * 0.68) +
                                                  (1 - 0.76 * 0.76), 1e-12);
}

static void test_model_gpt_oss_sliding(void)
{
    ModelDesc m;
    if (load("gpt-oss-120b", &m)) { CHECK(0); return; }
    /* OpenAI's model card: 116.83B parameters, 5.13B active per token
     * without the input embedding table (0.58B). */
    CHECK_REL(m.params, 116.83e9, 0.0005);
    CHECK_REL((double)m.params_active - (double)m.embed_params, 5.13e9, 0.005);
    CHECK_INT(m.n_sliding, 18);
    CHECK_INT(m.n_full, 18);
    CHECK_INT(m.layer_kind[0], MODEL_LAYER_SLIDING);
    CHECK_INT(m.layer_kind[1], MODEL_LAYER_FULL);
    /* KV: 18 full layers grow (2 * 8 * 64 * 2 B each per token); the 18
     * sliding ones stop at 128 tokens. */
    double layer = 2.0 * 8 * 64 * 2;
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 18 * layer, 0);
    CHECK_NEAR(model_kv_bytes_for_tokens(&m, DTYPE_BF16, 100), 100 * 36 * layer, 0);
    CHECK_NEAR(model_kv_bytes_for_tokens(&m, DTYPE_BF16, 8192), 8192 * 18 * layer + 128 * 18 * layer, 0);
    /* Pairs: a decode token at 1000 sees 1001 keys in a full layer, 128 in a sliding one. */
    double per = 4.0 * 64 * 64;
    CHECK_NEAR(model_attn_flops(&m, 1, 1000, 0), 18 * per * 1001 + 18 * per * 128, 0);
    /* A 200-token prefill: full layers 200*201/2 pairs, sliding 128*129/2 + 72*128. */
    CHECK_NEAR(model_attn_flops(&m, 200, 0, 0), 18 * per * (200 * 201 / 2) + 18 * per * (128 * 129 / 2 + 72 * 128), 0);
    /* Experts in mxfp4 (17 B per 32 values), the rest bf16. */
    CHECK_INT(m.expert_dtype, DTYPE_MXFP4);
    CHECK_NEAR(m.expert_bytes, 17.0 * 3 * 2880 * 2880 / 32 + 2.0 * (2 * 2880 + 2880), 0);
}

/* Chapter 003, "a 235B model's Q2_K file on an M2 Max": Qwen3-235B-A22B as
 * llama.cpp quantizes it to Q2_K holds about 64.43 GiB of codes and float
 * data + 15.37 GiB of quantization metadata. */
static void test_model_qwen3_235b_q2k(void)
{
    ModelDesc b, q;
    if (load("qwen3-235b-a22b", &b) || load("qwen3-235b-a22b-q2_k", &q)) { CHECK(0); return; }
    CHECK_REL(b.params, 235.09e9, 0.0005); /* Hugging Face: 235B total, 22B activated */
    CHECK_REL(b.params_active, 22.19e9, 0.001);
    CHECK_INT(q.params, b.params);
    CHECK_NEAR((q.weights_total_bytes - q.weights_meta_bytes) / GIB, 64.43, 0.005);
    CHECK_NEAR(q.weights_meta_bytes / GIB, 15.37, 0.005);
    CHECK_NEAR(model_kv_bytes_per_token(&q, DTYPE_BF16), 2.0 * 94 * 4 * 128 * 2, 0);
}

/* Kimi Linear: 20 KDA layers with a fixed state, 7 MLA layers. */
static void test_model_kimi_linear(void)
{
    ModelDesc m;
    if (load("kimi-linear-48b-a3b", &m)) { CHECK(0); return; }
    CHECK_INT(m.n_linear, 20);
    CHECK_INT(m.n_full, 7);
    CHECK_INT(m.layer_kind[26], MODEL_LAYER_FULL);
    CHECK_INT(m.layer_kind[25], MODEL_LAYER_LINEAR);
    /* Moonshot: 48B total, 3B activated. */
    CHECK_REL(m.params, 48e9, 0.03);
    CHECK_REL(m.params_active, 3e9, 0.17);
    /* State per sequence: 32 heads x 128 x 128 fp32 + the q, k, v short
     * convolutions' last 3 inputs (3 x 4096 channels, 16-bit), per KDA layer. */
    CHECK_NEAR(m.linear_state_bytes, 20 * (32.0 * 128 * 128 * 4 + 3 * 3 * 4096 * 2), 0);
    CHECK_NEAR(model_kv_bytes_per_token(&m, DTYPE_BF16), 7 * 576 * 2, 0);
    CHECK_NEAR(model_kv_bytes_for_tokens(&m, DTYPE_BF16, 10), 10 * 7 * 576 * 2 + m.linear_state_bytes, 0);
    CHECK_NEAR(model_attn_flops(&m, 3, 0, 0), m.flops_per_pair * 6 + 3 * m.linear_flops_per_token, 0);
}

static void test_model_variant_errors(void)
{
    ModelDesc m;
    Err e = {0};
    const char *head = "{\"name\": \"t\", \"source\": \"test\", \"layers\": 2, \"hidden\": 64, \"q_heads\": 4, "
                       "\"kv_heads\": 2, \"head_dim\": 16, \"ffn\": 128, \"vocab\": 10, \"tied_embeddings\": false, "
                       "\"dtype\": \"bf16\"";
    char text[1024];
    snprintf(text, sizeof text, "%s, \"layer_types\": [\"sliding\", \"full\"]}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: \"layer_types\" has sliding layers: give \"sliding_window\"");
    snprintf(text, sizeof text, "%s, \"sliding_window\": 64}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: sliding_window = 64 but no layer in \"layer_types\" is \"sliding\"");
    snprintf(text, sizeof text, "%s, \"layer_types\": [\"full\", \"window\"]}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: layer_types[1]: got \"window\", expected \"full\", \"sliding\" or \"linear\"");
    snprintf(text, sizeof text, "%s, \"layer_types\": [\"full\", \"full\", \"full\"]}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: layer_types: got 3 entries, expected one per layer (2)");
    snprintf(text, sizeof text, "%s, \"layer_types\": [\"linear\", \"full\"]}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "describe them in \"linear_attention\"");
    snprintf(text, sizeof text, "%s, \"layer_types\": [\"linear\", \"full\"], \"linear_attention\": "
             "{\"kind\": \"mamba\", \"heads\": 2, \"key_head_dim\": 8, \"value_head_dim\": 8}}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: linear_attention.kind: got \"mamba\", expected one of \"kda\", \"gated_deltanet\"");
    snprintf(text, sizeof text, "%s, \"attention\": {\"kind\": \"mla\", \"kv_lora_rank\": 32, "
             "\"qk_rope_head_dim\": 8, \"qk_nope_head_dim\": 16, \"v_head_dim\": 16}}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "attention (mla): expected kv_heads = q_heads (4, got 2) and head_dim = "
                          "qk_nope_head_dim + qk_rope_head_dim (24, got 16)");
    snprintf(text, sizeof text, "%s, \"attention\": {\"kind\": \"mla\", \"kv_lora_rank\": 32}}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: attention: missing key \"qk_rope_head_dim\"");
    snprintf(text, sizeof text, "%s, \"moe\": {\"experts\": 4, \"active_experts\": 2, \"expert_ffn\": 8, "
             "\"routing\": \"zipf\"}}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: moe.routing: \"zipf\" needs its exponent");
    snprintf(text, sizeof text, "%s, \"moe\": {\"experts\": 4, \"active_experts\": 2, \"expert_ffn\": 8, "
             "\"dense_layers\": 3}}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "moe.dense_layers: got 3, expected 0 to layers (2)");
    snprintf(text, sizeof text, "%s, \"moe\": {\"experts\": 4, \"active_experts\": 2, \"expert_ffn\": 8, "
             "\"dtype\": \"q9\"}}", head);
    CHECK_INT(from_text(text, &m, &e), -1);
    CHECK_CONTAINS(e.msg, "m.json: moe.dtype: got \"q9\"");
}

void suite_model(void)
{
    RUN(test_model_block_formats);
    RUN(test_model_deepseek_mla);
    RUN(test_model_routing_skew);
    RUN(test_model_gpt_oss_sliding);
    RUN(test_model_qwen3_235b_q2k);
    RUN(test_model_kimi_linear);
    RUN(test_model_variant_errors);
    RUN(test_model_dtypes);
    RUN(test_model_qwen3_8b);
    RUN(test_model_published_param_counts);
    RUN(test_model_moe);
    RUN(test_model_every_bundled_model_loads);
    RUN(test_model_tied_and_options);
    RUN(test_model_errors);
    RUN(test_model_load_errors);
}
