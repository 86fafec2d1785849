/*
 * test_cost.c -- the roofline and the chapter's analytic numbers for
 * Qwen3-8B (003 sections 8.2, 8.6): d(b, L), bKV, the 2,137.5 TFLOP prefill
 * of 16 x 8192 tokens and its ~7.3 s at 58% of 503.8 TFLOP/s, the 34.46 GB
 * (BF16) and 25.40 GB (q8_0) decode rounds, and the TP all-reduce term.
 *
 * The chapter's figures and the closed-form checks are about the roofline
 * with the hardware file's flat efficiencies, so those tests detach the
 * calibrated profile that hw_load attaches (models/profiles/); the
 * profile-driven roofline is checked against its operator models below.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "testhelp.h"

static ModelDesc qwen;
static HwDesc rtx;

static int load(void)
{
    Err e = {0};
    if (model_load("qwen3-8b", &qwen, &e) < 0 || hw_load("rtx-pro-6000", &rtx, &e) < 0 ||
        hw_attach_profile(&rtx, "none", &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    return 0;
}

static void test_read_model(void)
{
    CHECK(load() == 0);
    double k = model_kv_bytes_per_token(&qwen, DTYPE_BF16);
    /* d(2K, b = 1) = 14.38 GiB, d(2K, 64) = 0.50 GiB (about 1/29) */
    CHECK_NEAR(cost_bytes_per_output_token(&qwen, k, 1, 2048) / GIB, 14.38, 0.005);
    CHECK_NEAR(cost_bytes_per_output_token(&qwen, k, 64, 2048) / GIB, 0.50, 0.005);
    CHECK_INT(cost_kv_crossover_batch(&qwen, k, 2048), 51);
    CHECK_INT(cost_kv_crossover_batch(&qwen, k, 8192), 13);
}

static BatchItem items[16];

static void fill(uint32_t c, uint32_t h, uint8_t kind)
{
    for (int i = 0; i < 16; i++) items[i] = (BatchItem){.req = (uint32_t)i, .c = c, .h = h, .kind = kind, .samples = 1};
}

static void test_prefill_16x8k(void)
{
    CHECK(load() == 0);
    fill(8192, 0, ITEM_PREFILL);
    /* LM head only on the last position of each prompt */
    CHECK_NEAR(cost_flops(&qwen, items, 16) / 1e12, 2137.509, 0.001);
    /* At 58% of the chapter's 503.8 TFLOP/s: about 7.3 s */
    RooflineCfg cfg = {.model = qwen, .hw = rtx, .tp = 1, .compute_dtype = DTYPE_BF16,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&qwen, DTYPE_BF16), .act_bytes = 2};
    cfg.hw.peak_flops[DTYPE_BF16] = 503.8e12;
    cfg.hw.gemm_compute_eff = (EffCurve){.flat = 0.58};
    cfg.hw.attn_compute_eff = 0.58;
    cfg.hw.iter_overhead_s = 0;
    CostModel cm;
    Err e;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    CostBreakdown cb;
    cm.iter_time(cm.ctx, items, 16, &cb);
    CHECK_NEAR(cb.t_s, 7.3, 0.05);
    CHECK_NEAR(cb.gemm_s + cb.attn_s, 2137.5e12 / (0.58 * 503.8e12), 0.001);
    cm.destroy(cm.ctx);
}

static void test_decode_round_bytes(void)
{
    CHECK(load() == 0);
    fill(1, 8191, ITEM_DECODE); /* a step that reads 8192 tokens of context each */
    const Dtype kv[2] = {DTYPE_BF16, DTYPE_Q8_0};
    const double want_gb[2] = {34.46, 25.40};
    for (int j = 0; j < 2; j++) {
        RooflineCfg cfg = {.model = qwen, .hw = rtx, .tp = 1, .compute_dtype = DTYPE_BF16,
                           .kv_bytes_per_token = model_kv_bytes_per_token(&qwen, kv[j]), .act_bytes = 2};
        CostModel cm;
        Err e;
        CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
        CostBreakdown cb;
        cm.iter_time(cm.ctx, items, 16, &cb);
        /* bytes also count the one new token's KV write per request */
        double write = 16 * cfg.kv_bytes_per_token;
        CHECK_NEAR((cb.bytes - write) / 1e9, want_gb[j], 0.005);
        /* decode attention is memory-bound: its time is the KV stream */
        double kv_bytes = 16 * 8193 * cfg.kv_bytes_per_token;
        CHECK_NEAR(cb.attn_s, kv_bytes / (cfg.hw.mem_bw_bytes_per_s * cfg.hw.attn_mem_eff), 1e-12);
        cm.destroy(cm.ctx);
    }
}

static double roof2(double flops, double peak, double bytes, double bw)
{
    return flops / peak > bytes / bw ? flops / peak : bytes / bw;
}

static void test_decode_time_formula(void)
{
    CHECK(load() == 0);
    HwDesc h = rtx;
    RooflineCfg cfg = {.model = qwen, .hw = h, .tp = 1, .compute_dtype = DTYPE_BF16,
                       .kv_bytes_per_token = 147456, .act_bytes = 2};
    CostModel cm;
    Err e;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    BatchItem one = {.req = 0, .c = 1, .h = 2048, .kind = ITEM_DECODE, .samples = 1};
    CostBreakdown cb;
    cm.iter_time(cm.ctx, &one, 1, &cb);
    double bw = h.mem_bw_bytes_per_s;
    double head = (double)qwen.lm_head_params + qwen.hidden;
    double w_layers = qwen.weights_read_bytes - 2 * head;
    double peak = h.peak_flops[DTYPE_BF16], e1 = effcurve_at(&h.gemm_compute_eff, 1);
    CHECK_NEAR(cb.gemm_s, roof2(qwen.flops_per_token, peak * e1, w_layers, bw * h.mem_eff), 1e-12);
    /* one query over 2048 cached tokens: 2049 pairs, 2049 tokens read + 1 written */
    CHECK_NEAR(cb.attn_s, roof2(qwen.flops_per_pair * 2049, peak * h.attn_compute_eff, 2050 * 147456.0,
                                bw * h.attn_mem_eff), 1e-12);
    CHECK_NEAR(cb.lm_head_s, roof2(qwen.lm_head_flops, peak * e1, 2 * head, bw * h.mem_eff), 1e-12);
    CHECK_NEAR(cb.flops, qwen.flops_per_token + qwen.flops_per_pair * 2049 + qwen.lm_head_flops, 1);
    CHECK_NEAR(cb.t_s, cb.gemm_s + cb.attn_s + cb.lm_head_s + h.iter_overhead_s, 1e-15);
    CHECK_INT(cb.comm_s, 0);
    cm.destroy(cm.ctx);

    /* TP 2 on an H100 pair: per-GPU weights halve; two ring all-reduces per
     * layer of the step's hidden states (2 (tp-1)/tp of the payload). */
    HwDesc h100;
    CHECK(hw_load("h100-sxm", &h100, &e) == 0 && hw_attach_profile(&h100, "none", &e) == 0);
    cfg.hw = h100;
    cfg.tp = 2;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    cm.iter_time(cm.ctx, &one, 1, &cb);
    double payload = 1.0 * qwen.hidden * 2;
    CHECK_NEAR(cb.comm_s, 2 * 36 * (h100.link_latency_s + payload / h100.link_bw_bytes_per_s), 1e-12);
    CHECK_NEAR(cb.gemm_s, roof2(qwen.flops_per_token / 2, h100.peak_flops[DTYPE_BF16] *
                                effcurve_at(&h100.gemm_compute_eff, 1), w_layers / 2,
                                h100.mem_bw_bytes_per_s * h100.mem_eff), 1e-12);
    cm.destroy(cm.ctx);
}

static void test_gemm_eff_curve(void)
{
    EffCurve c = {.n = 3, .x = {1, 16, 256}, .eff = {0.1, 0.5, 0.9}};
    CHECK_NEAR(effcurve_at(&c, 1), 0.1, 1e-12);
    CHECK_NEAR(effcurve_at(&c, 4), 0.3, 1e-12); /* halfway in log2 */
    CHECK_NEAR(effcurve_at(&c, 1000), 0.9, 1e-12);
    CHECK_NEAR(effcurve_at(&c, 0.5), 0.1, 1e-12);
}


/* The profile-driven roofline is the sum of the profile's operator models:
 * each layer GEMM at its own (m, n, k), one prefill and one decode
 * attention launch per layer, the LM head over the sampled rows. */
static void test_profile_roofline_matches_ops(void)
{
    CHECK(load() == 0);
    Err e = {0};
    static HwDesc h;
    if (hw_load("h100-sxm", &h, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    CHECK(h.profile.present);
    CHECK(!strcmp(h.profile_name, "h100-sxm"));
    RooflineCfg cfg = {.model = qwen, .hw = h, .tp = 1, .compute_dtype = DTYPE_BF16,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&qwen, DTYPE_BF16), .act_bytes = 2};
    CostModel cm;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    BatchItem b[9];
    for (int i = 0; i < 8; i++) b[i] = (BatchItem){.req = (uint32_t)i, .c = 1, .h = 1000 + 100 * (uint32_t)i,
                                                   .kind = ITEM_DECODE, .samples = 1};
    b[8] = (BatchItem){.req = 8, .c = 512, .h = 1024, .kind = ITEM_PREFILL, .samples = 0};
    CostBreakdown cb;
    CHECK(cm.iter_time(cm.ctx, b, 9, &cb) == 0);

    const Profile *p = &h.profile;
    const double T = 8 + 512, hd = 128, qh = 32, kvh = 8, hid = 4096;
    const double shapes[4][2] = {{(qh + 2 * kvh) * hd, hid}, {hid, qh * hd}, {2.0 * 12288, hid}, {hid, 12288}};
    double layer = 0;
    for (int g = 0; g < 4; g++) layer += profile_gemm_time(p, 0, T, shapes[g][0], shapes[g][1], NULL);
    CHECK_REL(cb.gemm_s, 36 * layer, 1e-12);
    /* 151,936 columns > the widest measured 65,536: three GEMMs of a third */
    CHECK_REL(cb.lm_head_s, 3 * profile_gemm_time(p, 0, 8, 151936 / 3.0, hid, NULL), 1e-12);
    ProfSeq dec[8], pre[1] = {{512, 1024}};
    for (int i = 0; i < 8; i++) dec[i] = (ProfSeq){1, 1000 + 100.0 * i};
    double attn = profile_attn_time(&p->op[PROF_ATTN_DECODE], dec, 8, qh, kvh, hd, 2, 2, NULL, NULL) +
                  profile_attn_time(&p->op[PROF_ATTN_PREFILL], pre, 1, qh, kvh, hd, 2, 2, NULL, NULL);
    CHECK_REL(cb.attn_s, 36 * attn, 1e-12);
    CHECK_NEAR(cb.t_s, cb.gemm_s + cb.attn_s + cb.lm_head_s + h.iter_overhead_s, 1e-15);
    /* FLOPs and bytes keep the model's accounting (MFU, MBU). */
    CHECK_REL(cb.flops, cost_flops(&qwen, b, 9), 1e-12);
    cm.destroy(cm.ctx);

    /* A uniform launch is exactly the fitted form. */
    ProfSeq u[4] = {{1, 4095}, {1, 4095}, {1, 4095}, {1, 4095}};
    double feat[PF_COUNT], f, by;
    profile_attn_shape(4, 1, 4095, qh, kvh, hd, 2, 2, feat, &f, &by);
    CHECK_REL(profile_attn_time(&p->op[PROF_ATTN_DECODE], u, 4, qh, kvh, hd, 2, 2, NULL, NULL),
              profile_op_time(&p->op[PROF_ATTN_DECODE], feat, f, by), 1e-12);
    ProfSeq v[2] = {{2048, 0}, {2048, 0}};
    profile_attn_shape(2, 2048, 0, qh, kvh, hd, 2, 2, feat, &f, &by);
    CHECK_REL(profile_attn_time(&p->op[PROF_ATTN_PREFILL], v, 2, qh, kvh, hd, 2, 2, NULL, NULL),
              profile_op_time(&p->op[PROF_ATTN_PREFILL], feat, f, by), 1e-12);
}

/* Every cost query outside the profile's measured grid is counted, with
 * the worst ratio and which shape it was. */
static void test_profile_extrapolation_counted(void)
{
    Err e = {0};
    static HwDesc h;
    ModelDesc l2;
    if (hw_load("h100-sxm", &h, &e) < 0 || model_load("llama-2-7b", &l2, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    RooflineCfg cfg = {.model = l2, .hw = h, .tp = 1, .compute_dtype = DTYPE_BF16,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&l2, DTYPE_BF16), .act_bytes = 2};
    CostModel cm;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    CostExtrap x;
    CHECK(cost_extrapolation(&cm, &x) == 0);
    CHECK_INT(x.queries, 0);
    CHECK_NEAR(x.worst_ratio, 1, 0);
    /* Llama-2-7B's vocabulary (32,000) and a small decode batch lie inside
     * NVIDIA's H100 grid. */
    BatchItem d[4];
    for (int i = 0; i < 4; i++) d[i] = (BatchItem){.req = (uint32_t)i, .c = 1, .h = 500, .kind = ITEM_DECODE, .samples = 1};
    CostBreakdown cb;
    CHECK(cm.iter_time(cm.ctx, d, 4, &cb) == 0);
    CHECK(cost_extrapolation(&cm, &x) == 0);
    CHECK_INT(x.queries, 1);
    CHECK_INT(x.outside, 0);
    /* A 20,000-token chunk: GEMM rows beyond the measured 8192 (x2.44),
     * the chunk beyond the measured 16,384 (x1.22): the worst is kept. */
    BatchItem big = {.req = 9, .c = 20000, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
    CHECK(cm.iter_time(cm.ctx, &big, 1, &cb) == 0);
    CHECK(cm.iter_time(cm.ctx, d, 4, &cb) == 0);
    CHECK(cost_extrapolation(&cm, &x) == 0);
    CHECK_INT(x.queries, 3);
    CHECK_INT(x.outside, 1);
    CHECK_NEAR(x.worst_ratio, 20000.0 / 8192.0, 1e-9);
    CHECK_CONTAINS(x.worst, "layer GEMMs: m outside the measured 1 .. 8192");
    cm.destroy(cm.ctx);

    /* Qwen3's 151,936-entry LM head is wider than any measured GEMM: it is
     * priced as measured widths, so an ordinary run is not extrapolated. */
    CHECK(load() == 0);
    cfg.model = qwen;
    cfg.kv_bytes_per_token = model_kv_bytes_per_token(&qwen, DTYPE_BF16);
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    CHECK(cm.iter_time(cm.ctx, d, 4, &cb) == 0);
    CHECK(cost_extrapolation(&cm, &x) == 0);
    CHECK_INT(x.queries, 1);
    CHECK_INT(x.outside, 0);
    CHECK_NEAR(x.worst_ratio, 1, 0);
    CHECK(cb.lm_head_s > 0);
    cm.destroy(cm.ctx);

    /* Only a profile-driven roofline reports. */
    LinearCostCfg lc = {0.01, 1e-5, 0};
    CHECK(cost_linear_new(&lc, &cm, &e) == 0);
    CHECK(cost_extrapolation(&cm, &x) == -1);
    CHECK_INT(x.queries, 0);
    cm.destroy(cm.ctx);
}

/* Issue 12, finding 6: causal attention work is the sum over the batch's
 * prompts, not over their concatenation -- 2 x 1000 new tokens cost less
 * attention than one 2000-token prompt, 4 x 250 less than 1 x 1000, with
 * FLOPs equal to the per-request sums -- on the Vidur-fitted A100 profile
 * (measured one sequence per launch, so each prompt is priced on its own)
 * and on the H100 one. */
static void test_batched_prefill_attention_sums_requests(void)
{
    Err e = {0};
    ModelDesc m;
    static HwDesc h;
    if (model_load("llama-2-70b", &m, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    const char *const hws[2] = {"a100-sxm-80gb", "h100-sxm"};
    for (int w = 0; w < 2; w++) {
        if (hw_load(hws[w], &h, &e) < 0) {
            fprintf(stderr, "  %s\n", e.msg);
            CHECK(0);
            continue;
        }
        CHECK(h.profile.present);
        RooflineCfg cfg = {.model = m, .hw = h, .tp = 2, .compute_dtype = DTYPE_BF16,
                           .kv_bytes_per_token = model_kv_bytes_per_token(&m, DTYPE_BF16), .act_bytes = 2};
        CostModel cm;
        CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
        const uint32_t sizes[4] = {1000, 2000, 250, 1000}, counts[4] = {2, 1, 4, 1};
        CostBreakdown cb[4], one[2];
        for (int k = 0; k < 4; k++) {
            fill(sizes[k], 0, ITEM_PREFILL);
            CHECK(cm.iter_time(cm.ctx, items, counts[k], &cb[k]) == 0);
        }
        fill(1000, 0, ITEM_PREFILL);
        CHECK(cm.iter_time(cm.ctx, items, 1, &one[0]) == 0);
        fill(250, 0, ITEM_PREFILL);
        CHECK(cm.iter_time(cm.ctx, items, 1, &one[1]) == 0);
        fprintf(stderr, "     %s Llama-2-70B TP2 attention: 2x1000 %.2f ms, 1x2000 %.2f ms, 4x250 %.2f ms, "
                        "1x1000 %.2f ms\n",
                hws[w], 1e3 * cb[0].attn_s, 1e3 * cb[1].attn_s, 1e3 * cb[2].attn_s, 1e3 * cb[3].attn_s);
        CHECK(cb[0].attn_s < cb[1].attn_s);
        CHECK(cb[2].attn_s < cb[3].attn_s);
        CHECK_REL(cb[0].flops, 2 * one[0].flops, 1e-12);
        CHECK_REL(cb[2].flops, 4 * one[1].flops, 1e-12);
        if (w == 0) {
            /* one launch's t0 per layer, every sequence's own cost */
            double t0 = h.profile.op[PROF_ATTN_PREFILL].t0_s;
            CHECK_REL(cb[0].attn_s, 2 * one[0].attn_s - 80 * t0, 1e-9);
        }
        cm.destroy(cm.ctx);
    }
}

/* Precisions: bytes with their block scales, and the GEMM class a compute
 * dtype selects. */
static void test_precisions(void)
{
    CHECK_INT(dtype_parse("fp8_block"), DTYPE_FP8_BLOCK);
    CHECK_INT(dtype_parse("nvfp4"), DTYPE_NVFP4);
    CHECK_NEAR(dtype_bytes(DTYPE_FP8_BLOCK, 16384), 16388, 1e-9); /* one FP32 scale per 128 x 128 */
    CHECK_NEAR(dtype_act_bytes(DTYPE_FP8_BLOCK), 1 + 4.0 / 128, 0);  /* one per 1 x 128 group */
    CHECK_NEAR(dtype_bytes(DTYPE_NVFP4, 16), 9, 0);                  /* 8 B of E2M1 + an E4M3 scale */
    CHECK_NEAR(dtype_bytes(DTYPE_NVFP4, 17), 18, 0);
    CHECK_NEAR(dtype_act_bytes(DTYPE_NVFP4), 9.0 / 16, 0);
    CHECK_NEAR(dtype_act_bytes(DTYPE_BF16), 2, 0);
    CHECK_INT(profile_gemm_op(DTYPE_BF16), PROF_GEMM_BF16);
    CHECK_INT(profile_gemm_op(DTYPE_FP16), PROF_GEMM_BF16);
    CHECK_INT(profile_gemm_op(DTYPE_FP8), PROF_GEMM_FP8);
    CHECK_INT(profile_gemm_op(DTYPE_FP8_BLOCK), PROF_GEMM_FP8_BLOCK);
    CHECK_INT(profile_gemm_op(DTYPE_NVFP4), PROF_GEMM_NVFP4);
    CHECK_INT(profile_gemm_op(DTYPE_Q4_0), -1);
    Err e = {0};
    static HwDesc h;
    CHECK_INT(hw_load("b200", &h, &e), 0);
    CHECK_NEAR(h.peak_flops[DTYPE_NVFP4], 9e15, 0);
    CHECK_NEAR(h.peak_flops[DTYPE_FP8_BLOCK], h.peak_flops[DTYPE_FP8], 0);
    CHECK_INT(hw_load("h100-sxm", &h, &e), 0);
    CHECK_NEAR(h.peak_flops[DTYPE_NVFP4], 0, 0); /* no FP4 tensor cores on Hopper */
}

/* The per-engine profile prices TensorRT-LLM's own kernels: an FP8 GEMM of
 * Llama-3.1-70B at TP 8 (gate/up: n = 2 x 28,672 / 8 = 7,168, k = 8,192) is
 * faster than BF16 by the ratio NVIDIA's H200 table shows, within the two
 * fits' in-sample p90 errors; the roofline picks the class by compute dtype. */
static void test_engine_profile_fp8_gemm(void)
{
    Err e = {0};
    Profile *p = malloc(sizeof *p);
    if (profile_load("h200-sxm-trtllm", p, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        free(p);
        return;
    }
    CHECK(p->op[PROF_GEMM_FP8].present && p->op[PROF_GEMM_FP8_BLOCK].present && p->op[PROF_ALLREDUCE].present);
    CHECK(p->op[PROF_ATTN_PREFILL_FP8KV].present && p->op[PROF_ATTN_DECODE_FP8KV].present);
    CHECK_CONTAINS(p->source, "TensorRT-LLM 1.3.0rc20");
    /* aiconfigurator_backends/h200_sxm/trtllm-1.3.0rc20/gemm_perf.csv */
    const double m[2] = {4096, 1024}, bf[2] = {0.5888586839040121, 0.16478932897249857},
                 f8[2] = {0.3945759932200114, 0.11569333076477051};
    const double tol = p->op[PROF_GEMM_BF16].fit.train_p90 + p->op[PROF_GEMM_FP8].fit.train_p90;
    for (int i = 0; i < 2; i++) {
        double tb = profile_gemm_time(p, PROF_GEMM_BF16, m[i], 7168, 8192, NULL);
        double tf = profile_gemm_time(p, PROF_GEMM_FP8, m[i], 7168, 8192, NULL);
        fprintf(stderr, "     h200-sxm-trtllm m=%.0f: BF16/FP8 %.3f predicted, %.3f measured (tolerance %.1f%%)\n", m[i],
                tb / tf, bf[i] / f8[i], 100 * tol);
        CHECK(tf < tb);
        CHECK(fabs((tb / tf) / (bf[i] / f8[i]) - 1) <= tol);
    }
    free(p);

    ModelDesc l70;
    static HwDesc h;
    if (model_load("llama-3.1-70b", &l70, &e) < 0 || hw_load("h200-sxm", &h, &e) < 0 ||
        hw_attach_profile(&h, "h200-sxm-trtllm", &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    RooflineCfg cfg = {.model = l70, .hw = h, .tp = 8, .compute_dtype = DTYPE_BF16,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&l70, DTYPE_BF16), .act_bytes = 2};
    CostBreakdown gb[3];
    const Dtype cd[3] = {DTYPE_BF16, DTYPE_FP8, DTYPE_FP8_BLOCK};
    fill(4096, 0, ITEM_PREFILL);
    for (int i = 0; i < 3; i++) {
        CostModel cm;
        cfg.compute_dtype = cd[i];
        CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
        CHECK(cm.iter_time(cm.ctx, items, 1, &gb[i]) == 0);
        CostExtrap x;
        CHECK(cost_extrapolation(&cm, &x) == 0);
        CHECK(!x.fallback[0]);
        cm.destroy(cm.ctx);
    }
    CHECK(gb[1].gemm_s < gb[0].gemm_s);
    CHECK(gb[2].gemm_s < gb[0].gemm_s);
    CHECK_REL(gb[1].lm_head_s, gb[0].lm_head_s, 1e-12); /* the LM head stays BF16 */
}

/* The TP all-reduce of a Llama-3.1-70B TP 8 decode step (8,192 x batch BF16
 * elements, twice per layer) is priced by the engine's custom all-reduce
 * table: within 30% of TensorRT-LLM's measured row on H200, and far below
 * the 10 us + link model it replaces.  An FP8 KV cache runs its own
 * attention classes. */
static void test_engine_profile_allreduce_and_fp8_kv(void)
{
    Err e = {0};
    ModelDesc l70;
    static HwDesc h;
    if (model_load("llama-3.1-70b", &l70, &e) < 0 || hw_load("h200-sxm", &h, &e) < 0 ||
        hw_attach_profile(&h, "h200-sxm-trtllm", &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    RooflineCfg cfg = {.model = l70, .hw = h, .tp = 8, .compute_dtype = DTYPE_FP8,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&l70, DTYPE_BF16), .act_bytes = 2};
    CostModel cm;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    /* custom_allreduce_perf.csv, 8 GPUs: 8192, 65536, 524288 elements */
    const uint32_t batch[3] = {1, 8, 64};
    const double meas_ms[3] = {0.00348800003528595, 0.006393280029296874, 0.025736000537872318};
    static BatchItem d64[64];
    for (uint32_t i = 0; i < 64; i++) d64[i] = (BatchItem){.req = i, .c = 1, .h = 2047, .kind = ITEM_DECODE, .samples = 1};
    for (int i = 0; i < 3; i++) {
        CostBreakdown cb;
        CHECK(cm.iter_time(cm.ctx, d64, batch[i], &cb) == 0);
        double one_ms = 1e3 * cb.comm_s / (2 * 80);
        fprintf(stderr, "     h200-sxm-trtllm all-reduce of %u x 8192 BF16: %.4f ms, measured %.4f ms\n", batch[i],
                one_ms, meas_ms[i]);
        CHECK(fabs(one_ms / meas_ms[i] - 1) <= 0.30);
    }
    cm.destroy(cm.ctx);

    /* KV dtype: BF16 -> attn_decode, FP8 -> attn_decode_fp8kv */
    const Profile *p = &h.profile;
    ProfSeq dec[16];
    for (int i = 0; i < 16; i++) dec[i] = (ProfSeq){1, 2047};
    for (int kv = 0; kv < 2; kv++) {
        cfg.kv_bytes_per_token = model_kv_bytes_per_token(&l70, kv ? DTYPE_FP8 : DTYPE_BF16);
        CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
        fill(1, 2047, ITEM_DECODE);
        CostBreakdown cb;
        CHECK(cm.iter_time(cm.ctx, items, 16, &cb) == 0);
        const ProfOp *op = &p->op[kv ? PROF_ATTN_DECODE_FP8KV : PROF_ATTN_DECODE];
        CHECK_REL(cb.attn_s, 80 * profile_attn_time(op, dec, 16, 8, 1, 128, 2, kv ? 1 : 2, NULL, NULL), 1e-12);
        cm.destroy(cm.ctx);
    }
}

/* A profile without the compute dtype's GEMM class prices it with the
 * nearest slower class and says so in every query's extrapolation. */
static void test_gemm_class_fallback(void)
{
    Err e = {0};
    ModelDesc m;
    static HwDesc h;
    if (model_load("llama-3.1-8b", &m, &e) < 0 || hw_load("b200", &h, &e) < 0 ||
        hw_attach_profile(&h, "h200-sxm-trtllm", &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    RooflineCfg cfg = {.model = m, .hw = h, .tp = 1, .compute_dtype = DTYPE_NVFP4,
                       .kv_bytes_per_token = model_kv_bytes_per_token(&m, DTYPE_BF16), .act_bytes = 2};
    CostModel cm;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == 0);
    fill(1, 1000, ITEM_DECODE);
    CostBreakdown cb;
    CHECK(cm.iter_time(cm.ctx, items, 4, &cb) == 0);
    CHECK(cm.iter_time(cm.ctx, items, 8, &cb) == 0);
    CostExtrap x;
    CHECK(cost_extrapolation(&cm, &x) == 0);
    CHECK_INT(x.queries, 2);
    CHECK_INT(x.outside, 2);
    CHECK_CONTAINS(x.fallback, "gemm_nvfp4 priced by gemm_fp8_block (profile h200-sxm-trtllm has no gemm_nvfp4)");
    cm.destroy(cm.ctx);
    /* a GGML block format has no GEMM class at all */
    cfg.compute_dtype = DTYPE_Q4_0;
    cfg.hw.peak_flops[DTYPE_Q4_0] = 1e15;
    CHECK(cost_roofline_new(&cfg, &cm, &e) == -1);
    CHECK_CONTAINS(e.msg, "compute dtype q4_0 has no GEMM class");
}

/* Chapter 003's design board, option C: a q8_0 round of 16 x 8K reads
 * 25.40 GB; priced from the measured step-time table of experiment 8-1 (2K
 * context, decode rounds of batch 1, 16 and 64: 26.26, 27.44 and 29.63 ms)
 * it comes to about 28.26 ms.  The points' bytes are the rounds' reads,
 * Dw + b * 2048 * k, computed here from the model, not typed. */
static void test_table_cost_option_c(void)
{
    CHECK(load() == 0);
    static TableCostCfg t;
    memset(&t, 0, sizeof t);
    double k16 = model_kv_bytes_per_token(&qwen, DTYPE_BF16), dw = qwen.weights_read_bytes;
    const double b[3] = {1, 16, 64}, ms[3] = {26.26, 27.44, 29.63};
    for (int i = 0; i < 3; i++) {
        t.x[i] = dw + b[i] * 2048 * k16;
        t.t_s[i] = ms[i] * 1e-3;
    }
    CHECK_NEAR(t.x[0] / 1e9, 15.44, 0.005);
    CHECK_NEAR(t.x[2] / 1e9, 34.46, 0.005);
    t.n = 3;
    t.model = qwen;
    t.kv_bytes_per_token = model_kv_bytes_per_token(&qwen, DTYPE_Q8_0);
    CostModel cm;
    Err e = {0};
    if (cost_table_new(&t, &cm, &e) < 0) { CHECK(0); return; }
    fill(1, 8191, ITEM_DECODE); /* 16 decode steps at 8K context */
    CostBreakdown cb;
    CHECK_INT(cm.iter_time(cm.ctx, items, 16, &cb), 0);
    CHECK_NEAR(cb.bytes / 1e9, 25.40, 0.005);
    CHECK_NEAR(cb.t_s * 1e3, 28.26, 0.005);
    /* on a point, exactly the measured time; beyond the table the end
     * segment extends */
    CHECK_NEAR(cost_table_at(&t, t.x[1]), 27.44e-3, 1e-12);
    CHECK(cost_table_at(&t, 2 * t.x[2]) > 29.63e-3);
    CHECK_NEAR(cost_table_at(&t, 0), 26.26e-3 - (t.x[0] - 0) * (1.18e-3 / (t.x[1] - t.x[0])), 1e-12);
    cm.destroy(cm.ctx);
    static TableCostCfg steep = {.n = 2, .x = {100, 200}, .t_s = {1e-3, 101e-3}};
    CHECK_NEAR(cost_table_at(&steep, 150), 51e-3, 1e-12);
    CHECK_NEAR(cost_table_at(&steep, 0), 0, 0); /* never below zero */
    /* bad tables */
    t.x[1] = t.x[0];
    CHECK_INT(cost_table_new(&t, &cm, &e), -1);
    CHECK_CONTAINS(e.msg, "cost_model.points[1]: x");
    CHECK_CONTAINS(e.msg, "does not exceed the previous point's");
    t.n = 1;
    CHECK_INT(cost_table_new(&t, &cm, &e), -1);
    CHECK_CONTAINS(e.msg, "cost_model.points: got 1 points, expected 2 to 64");
}

/* Chapter 003, option D: 16 requests each verifying 8 positions at an 8K
 * context, every position sampled (the LM head 8 times each): about 2.56
 * TFLOP per round. */
static void test_verify_round_flops(void)
{
    CHECK(load() == 0);
    fill(8, 8192, ITEM_VERIFY);
    CHECK_NEAR(cost_flops(&qwen, items, 16) / 1e12, 2.56, 0.005);
    double want = 128 * qwen.flops_per_token + 16 * (8.0 * 8192 + 36) * qwen.flops_per_pair + 128 * qwen.lm_head_flops;
    CHECK_NEAR(cost_flops(&qwen, items, 16), want, 1);
}

/* Issue 17: the flat roofline counts sliding layers' windowed pairs and
 * KV, and MLA decodes absorbed. */
static void test_hybrid_attention_roofline(void)
{
    ModelDesc g, d;
    HwDesc h;
    Err e = {0};
    if (model_load("gpt-oss-120b", &g, &e) || model_load("deepseek-v3", &d, &e) || hw_load("h200-sxm", &h, &e) ||
        hw_attach_profile(&h, "none", &e)) {
        CHECK(0);
        return;
    }
    double k = model_kv_bytes_per_token(&g, DTYPE_BF16);
    RooflineCfg cfg = {.model = g, .hw = h, .tp = 1, .compute_dtype = DTYPE_BF16, .kv_bytes_per_token = k,
                       .act_bytes = 2};
    CostModel cm;
    if (cost_roofline_new(&cfg, &cm, &e) < 0) { CHECK(0); return; }
    BatchItem it = {.c = 1, .h = 8191, .kind = ITEM_DECODE, .samples = 1};
    CostBreakdown cb;
    CHECK_INT(cm.iter_time(cm.ctx, &it, 1, &cb), 0);
    /* a decode token at 8K: 18 full layers see 8192 keys, 18 sliding 128 */
    double per = 4.0 * 64 * 64;
    double attn = 18 * per * 8192 + 18 * per * 128;
    CHECK_NEAR(cost_flops(&g, &it, 1), g.flops_per_token + attn + g.lm_head_flops, 1);
    CHECK_NEAR(cb.flops, cost_flops(&g, &it, 1), 1);
    /* KV read: 8192 tokens of the full layers + 128 of the sliding ones, + the new token's writes;
     * weights: the experts one token touches (issue 35: all of them put MBU above 100%) */
    CHECK(model_weights_read_bytes_tokens(&g, 1) < 0.5 * g.weights_read_bytes);
    CHECK_NEAR(cb.bytes - model_weights_read_bytes_tokens(&g, 1), 8192 * k + 128 * k + 2 * k, 1);
    cm.destroy(cm.ctx);
    /* DeepSeek-V3: decode pairs at the absorbed 2 x 128 x (2 x 512 + 64) per layer */
    it.h = 4095;
    CHECK_NEAR(cost_flops(&d, &it, 1), d.flops_per_token + 4096 * 2.0 * 61 * 128 * 1088 + d.lm_head_flops, 1);
    BatchItem pre = {.c = 4, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
    CHECK_NEAR(cost_flops(&d, &pre, 1), 4 * d.flops_per_token + 10 * d.flops_per_pair + d.lm_head_flops, 1);
}

/* The calibrated-profile roofline for a hybrid model: sliding layers run
 * the measured launches over at most the window, so below the window they
 * cost what full layers cost and beyond it less. */
static void test_hybrid_attention_profile(void)
{
    ModelDesc g, full;
    HwDesc h;
    Err e = {0};
    if (model_load("gpt-oss-120b", &g, &e) || hw_load("h200-sxm", &h, &e) || !h.profile.present) {
        CHECK(0);
        return;
    }
    full = g;
    memset(full.layer_kind, MODEL_LAYER_FULL, sizeof full.layer_kind);
    full.sliding_window = 0;
    CHECK_INT(model_derive(&full, "all-full", &e), 0);
    double k = model_kv_bytes_per_token(&g, DTYPE_BF16);
    double t[2][3];
    const uint32_t hs[3] = {100, 8191, 128};
    for (int v = 0; v < 2; v++) {
        RooflineCfg cfg = {.model = v ? full : g, .hw = h, .tp = 1, .compute_dtype = DTYPE_BF16,
                           .kv_bytes_per_token = v ? 2 * k : k, .act_bytes = 2};
        CostModel cm;
        if (cost_roofline_new(&cfg, &cm, &e) < 0) { CHECK(0); return; }
        for (int x = 0; x < 3; x++) {
            BatchItem it = {.c = 1, .h = hs[x], .kind = ITEM_DECODE, .samples = 1};
            CostBreakdown cb;
            CHECK_INT(cm.iter_time(cm.ctx, &it, 1, &cb), 0);
            t[v][x] = cb.attn_s;
        }
        cm.destroy(cm.ctx);
    }
    CHECK_REL(t[0][0], t[1][0], 1e-12); /* inside the window: the same launches */
    /* at 8K: 18 layers over 8,192 keys, 18 over the 128-key window */
    CHECK_REL(t[0][1], 0.5 * t[1][1] + 0.5 * t[1][2], 1e-12);
    CHECK(t[0][1] < t[1][1]);
}

void suite_cost(void);
void suite_cost(void)
{
    RUN(test_hybrid_attention_profile);
    RUN(test_hybrid_attention_roofline);
    RUN(test_table_cost_option_c);
    RUN(test_verify_round_flops);
    RUN(test_read_model);
    RUN(test_prefill_16x8k);
    RUN(test_decode_round_bytes);
    RUN(test_decode_time_formula);
    RUN(test_gemm_eff_curve);
    RUN(test_profile_roofline_matches_ops);
    RUN(test_profile_extrapolation_counted);
    RUN(test_batched_prefill_attention_sums_requests);
    RUN(test_precisions);
    RUN(test_engine_profile_fp8_gemm);
    RUN(test_engine_profile_allreduce_and_fp8_kv);
    RUN(test_gemm_class_fallback);
}
