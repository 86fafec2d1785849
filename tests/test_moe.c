/*
 * test_moe.c -- issue 17, part B: pricing mixture-of-experts and MLA
 * models, and their parallel layouts.
 *
 *  - calibration reads the engine's fused-MoE, MLA and NCCL all-to-all
 *    tables into their classes, and the bundled h200-sxm-trtllm profile
 *    predicts a measured fused-MoE row and an MLA decode row within the
 *    fit's error;
 *  - the roofline prices DeepSeek-V3's decode step under TP8, TP8 + EP8
 *    and attention DP8 + EP8 (numbers pinned; EP8 cheaper than MoE-TP8 at
 *    this batch, attention DP pays the all-to-all);
 *  - "parallel" in a scenario: replicas per attention-DP rank, weights per
 *    GPU, MLA's KV replicated over TP, and bad layouts refused with the key,
 *    the values and what was expected;
 *  - validate's reading of the MoE csv's layouts (the EP-scaled encoding,
 *    concurrency = batch_size x attention_dp_size);
 *  - attention DP runs its ranks in lock-step (cluster.c): a rank that
 *    prefills holds every other rank's iteration, the step's MoE carries
 *    the tokens of all ranks, and a request reaching an idle rank waits
 *    for the step's end; cluster replicas are separate groups;
 *  - TensorRT-LLM's shared-expert overlap in decode steps of a captured
 *    CUDA-graph batch size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib_meas.h"
#include "calib_report.h"
#include "cluster.h"
#include "cost.h"
#include "hw.h"
#include "model.h"
#include "policy.h"
#include "profile.h"
#include "scenario.h"
#include "testhelp.h"
#include "vrows.h"

void suite_moe(void);

static const char *moe_data(const char *rel)
{
    static char path[4096];
    char dir[2048];
    snprintf(path, sizeof path, "%s/%s", calib_data_dir(dir, sizeof dir), rel);
    return path;
}

static int moe_have(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

#define AICB_H200 "kernels/aiconfigurator_backends/h200_sxm/"

/* The fused-MoE and MLA tables become rows of their own classes. */
static void test_moe_calib_import(void)
{
    const char *moe = moe_data(AICB_H200 "trtllm-1.3.0rc20/moe_perf.csv");
    if (!moe_have(moe)) {
        printf("     (skipped: no %s)\n", moe);
        return;
    }
    MeasSet s;
    Err e = {0};
    calib_meas_init(&s);
    CHECK_INT(calib_meas_import(&s, moe, &e), 0);
    size_t by[PROF_OP_COUNT] = {0};
    const Meas *row = NULL;
    for (size_t i = 0; i < s.n; i++) {
        const Meas *r = &s.rows[i];
        CHECK(r->op == MEAS_MOE);
        by[calib_meas_prof_op(r)]++;
        /* DeepSeek-V3's experts, 64 tokens, TP1 x EP8, power_law_1.01 */
        if (r->dtype == DTYPE_FP8_BLOCK && r->m == 64 && r->k == 7168 && r->n == 2048 && r->batch == 32 &&
            r->ctx == 256 && r->chunk == 8)
            row = r;
    }
    /* one distribution of three: a third of each dtype's rows */
    CHECK_INT(by[PROF_MOE_FP8_BLOCK], 12933);
    CHECK_INT(by[PROF_MOE_BF16], 12852);
    CHECK_INT(by[PROF_MOE_FP8], 11178);
    CHECK_INT(by[PROF_MOE_W4A16], 378);
    CHECK(row != NULL);
    if (row) {
        CHECK_NEAR(row->latency_ms, 0.3006079912185669, 1e-12);
        /* 64 x 8 / 8 = 64 pairs on the GPU's 32 experts: 32 (1 - (1 - 8/256)^64) touched */
        double feat[PF_COUNT], f, b;
        calib_meas_features(row, feat, &f, &b);
        CHECK_NEAR(feat[PF_BATCH], 32 * (1 - pow(1 - 8.0 / 256, 64)), 1e-9);
        CHECK_NEAR(f, 2.0 * 64 * 3 * 2048 * 7168, 1);
        /* the bundled profile predicts it within its fit's error */
        Profile *p = malloc(sizeof *p);
        CHECK_INT(profile_load("h200-sxm-trtllm", p, &e), 0);
        CHECK(p->op[PROF_MOE_FP8_BLOCK].present);
        double t = profile_op_time(&p->op[PROF_MOE_FP8_BLOCK], feat, f, b) * 1e3;
        CHECK_REL(t, row->latency_ms, 0.15);
        free(p);
    }
    calib_meas_free(&s);

    calib_meas_init(&s);
    CHECK_INT(calib_meas_import(&s, moe_data(AICB_H200 "trtllm-1.3.0rc20/generation_mla_perf.csv"), &e), 0);
    CHECK_INT(s.n, 2896);
    for (size_t i = 0; i < s.n; i++) CHECK(s.rows[i].op == MEAS_MLA_DECODE && s.rows[i].chunk == 1);
    calib_meas_free(&s);
    calib_meas_init(&s);
    CHECK_INT(calib_meas_import(&s, moe_data(AICB_H200 "nccl-2.29.2/nccl_perf.csv"), &e), 0);
    size_t a2a = 0;
    for (size_t i = 0; i < s.n; i++) a2a += s.rows[i].op == MEAS_ALLTOALL;
    CHECK_INT(a2a, 63); /* the half rows (int8 elements are not a format the profile models) */
    calib_meas_free(&s);
}

/* DeepSeek-V3 with FP8 block weights and FP8 KV on H200, priced by
 * TensorRT-LLM's tables under a layout (shared-expert overlap on or off). */
static int dsv3_cost(int tp, int ep, int adp, int overlap, CostModel *cm)
{
    Err e = {0};
    ModelDesc *m = malloc(sizeof *m);
    HwDesc *h = malloc(sizeof *h);
    int rc = -1;
    if (model_load("deepseek-v3", m, &e) == 0 && hw_load("h200-sxm", h, &e) == 0 &&
        hw_attach_profile(h, "h200-sxm-trtllm", &e) == 0) {
        RooflineCfg c = {.model = *m, .hw = *h, .tp = tp, .compute_dtype = DTYPE_FP8_BLOCK,
                         .kv_bytes_per_token = model_kv_bytes_per_token(m, DTYPE_FP8), .act_bytes = 2,
                         .ep = ep, .attn_dp = adp, .moe_shared_overlap = overlap};
        rc = cost_roofline_new(&c, cm, &e);
    }
    if (rc < 0) fprintf(stderr, "  %s\n", e.msg);
    free(m);
    free(h);
    return rc;
}

/* DeepSeek-V3's decode step, 8 sequences at 2,047 cached tokens. */
static double moe_step_ms(int tp, int ep, int adp, CostBreakdown *cb)
{
    double t = NAN;
    CostModel cm;
    if (dsv3_cost(tp, ep, adp, 0, &cm) == 0) {
        BatchItem it[8];
        for (int i = 0; i < 8; i++) it[i] = (BatchItem){.c = 1, .h = 2047, .kind = ITEM_DECODE, .samples = 1};
        if (cm.iter_time(cm.ctx, it, 8, cb) == 0) t = cb->t_s * 1e3;
        double xs, as;
        CHECK_INT(cost_moe_layer(&cm, 8.0 * (adp ? adp : 1), &xs, &as), 0);
        CHECK(xs > 0);
        CHECK(adp > 1 ? as > 0 : as == 0);
        cm.destroy(cm.ctx);
    }
    return t;
}

static void test_moe_cost_layouts(void)
{
    CostBreakdown a, b, c;
    double tp8 = moe_step_ms(8, 0, 0, &a), ep8 = moe_step_ms(8, 8, 0, &b), dp8 = moe_step_ms(1, 8, 8, &c);
    CHECK_NEAR(tp8, 18.7511, 5e-4);
    CHECK_NEAR(ep8, 14.2626, 5e-4);
    CHECK_NEAR(dp8, 28.2504, 5e-4);
    /* the same attention and all-reduces; EP8's experts are cheaper at 8 tokens */
    CHECK_NEAR(a.attn_s, b.attn_s, 1e-12);
    CHECK_NEAR(a.comm_s, b.comm_s, 1e-12);
    CHECK(b.gemm_s < a.gemm_s);
    /* attention DP: 64 tokens meet in each MoE layer; its communication is
     * the dispatch and combine, not a TP all-reduce */
    CHECK(c.comm_s > a.comm_s);
    /* per token, the attention-DP step (64 tokens) is 5.3x cheaper */
    CHECK(dp8 / 64 < tp8 / 8 / 5);

    /* a layout that does not cover the GPUs is refused */
    Err e = {0};
    ModelDesc *m = malloc(sizeof *m);
    HwDesc *h = malloc(sizeof *h);
    CHECK_INT(model_load("deepseek-v3", m, &e), 0);
    CHECK_INT(hw_load("h200-sxm", h, &e), 0);
    RooflineCfg cfg = {.model = *m, .hw = *h, .tp = 8, .compute_dtype = DTYPE_FP8_BLOCK,
                       .kv_bytes_per_token = model_kv_bytes_per_token(m, DTYPE_FP8), .act_bytes = 2, .ep = 4,
                       .moe_tp = 4};
    CostModel cm;
    CHECK_INT(cost_roofline_new(&cfg, &cm, &e), -1);
    CHECK_CONTAINS(e.msg, "ep 4 x moe_tp 4 must equal tp 8 x attention_dp 1");
    free(m);
    free(h);
}

static int moe_scenario(const char *extra, Scenario *s, Err *e)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"model\": \"deepseek-v3\", \"hardware\": \"h200-sxm\", %s, "
             "\"scheduler\": {\"kind\": \"chunked\", \"token_budget\": 8192}, \"kv\": {\"dtype\": \"fp8\"}, "
             "\"workload\": {\"kind\": \"closed_loop\", \"clients\": 4, \"count\": 8, \"prompt_tokens\": 64, "
             "\"output_tokens\": 4}}",
             extra);
    return scenario_load_text(text, "moe.json", 0, 0, s, e);
}

static void test_moe_scenario_parallel(void)
{
    Err e = {0};
    Scenario s;
    /* TP8: every GPU holds the whole MLA latent cache, so the pool is one GPU's room */
    CHECK_INT(moe_scenario("\"tp\": 8", &s, &e), 0);
    double w8 = scenario_weights_per_gpu(&s, 8);
    CHECK_NEAR(w8, s.model.weights_total_bytes / 8, 1);
    CHECK_NEAR(s.kv.capacity_bytes, s.hw.mem_bytes * s.hw.mem_util - w8 - s.hw.runtime_reserve_bytes, 1);
    CHECK_INT(s.pools[0].replicas, 1);
    scenario_free(&s);
    /* attention DP 8 x EP 8: 8 replicas of one GPU; attention, shared and
     * dense weights on every GPU, the routed experts split 8 ways */
    CHECK_INT(moe_scenario("\"tp\": 1, \"parallel\": {\"ep\": 8, \"attention_dp\": 8}", &s, &e), 0);
    CHECK_INT(s.pools[0].replicas, 8);
    CHECK_INT(s.ep, 8);
    CHECK_INT(s.moe_tp, 1);
    double routed = (double)s.model.moe_layers * s.model.experts * s.model.expert_bytes;
    double w1 = scenario_weights_per_gpu(&s, 1);
    CHECK_NEAR(w1, s.model.weights_total_bytes - routed + routed / 8, 1);
    CHECK_NEAR(s.kv.capacity_bytes, s.hw.mem_bytes * s.hw.mem_util - w1 - s.hw.runtime_reserve_bytes, 1);
    /* 8 GPUs in all */
    CHECK_INT(s.pools[0].replicas * s.pools[0].tp, 8);
    scenario_free(&s);

    static const struct {
        const char *extra, *msg;
    } bad[] = {
        {"\"tp\": 8, \"parallel\": {\"ep\": 3}",
         "moe.json: parallel: ep 3 x moe_tp 2 = 6 GPUs, expected tp 8 x attention_dp 1 = 8"},
        {"\"tp\": 2, \"parallel\": {\"ep\": 3, \"moe_tp\": 2, \"attention_dp\": 3}",
         "ep 3 does not divide the 256 experts of DeepSeek-V3"},
        /* issue 35: the attention heads split evenly */
        {"\"tp\": 6", "tp 6 does not divide the 128 attention heads of DeepSeek-V3"},
        {"\"tp\": 8, \"parallel\": {\"ep\": 8, \"pp\": 2}", "pp"},
        {"\"tp\": 8, \"parallel\": {\"ep\": 0}", "ep"},
        {"\"tp\": 1, \"parallel\": {\"ep\": 8, \"attention_dp\": 8}, \"disagg\": {}",
         "attention_dp with \"disagg\" is not modelled"},
        {"\"tp\": 1, \"parallel\": {\"ep\": 256, \"attention_dp\": 256}, \"cluster\": {\"replicas\": 17}",
         "attention_dp 256 x 17 cluster replicas = 4352 attention replicas, expected at most 4096"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        CHECK_INT(moe_scenario(bad[i].extra, &s, &e), -1);
        CHECK_CONTAINS(e.msg, bad[i].msg);
    }
    /* a dense model takes no expert parallelism */
    memset(&e, 0, sizeof e);
    CHECK_INT(scenario_load_text("{\"model\": \"qwen3-8b\", \"hardware\": \"h200-sxm\", \"tp\": 2, "
                                 "\"parallel\": {\"ep\": 2}, \"scheduler\": {\"kind\": \"chunked\"}, "
                                 "\"workload\": {\"kind\": \"closed_loop\", \"clients\": 1, \"count\": 1, "
                                 "\"prompt_tokens\": 8, \"output_tokens\": 2}}",
                                 "dense.json", 0, 0, &s, &e),
              -1);
    CHECK_CONTAINS(e.msg, "but Qwen3-8B is dense (no experts)");
}

/* The MoE csv's layouts: the EP-scaled encoding of the 2026-04-06 rows and
 * batch_size per attention-DP rank. */
static void test_moe_validate_layouts(void)
{
    char dir[] = "/tmp/servesim-moe-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/moe.csv", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("id,backend,model_path,system,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
          "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
          "a,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,fp8,4,64,1,1,8,8,494,8.6\n"
          "b,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,fp8,4,8,1,1,1,8,494,8.6\n"
          "c,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,fp8,2,1,1,64,8,8,3201,31.5\n"
          "d,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,fp8,16,1,1,8,1,8,3201,31.5\n"
          "e,trtllm,openai/gpt-oss-120b,h200_sxm,agg,1024,1024,nvfp4,8,16,1,1,4,4,109,6.04\n"
          "f,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,fp8,4,8,1,1,8,1,308,13.8\n"
          "g,trtllm,deepseek-ai/DeepSeek-R1,h200_sxm,agg,1024,1024,fp8,4,8,1,1,2,2,308,13.8\n",
          f);
    fclose(f);
    VRow *rows = NULL;
    uint32_t n = 0;
    VFormat fmt;
    Err e = {0};
    CHECK_INT(vrows_read(path, VFMT_AUTO, NULL, 0, &rows, &n, &fmt, &e), 0);
    CHECK_INT(n, 7);
    if (n == 7) {
        /* a and b: TP8 EP8 over 8 GPUs, 4 clients; DeepSeek's fp8 is block-scaled */
        for (int i = 0; i < 2; i++) {
            CHECK_CONTAINS(rows[i].skip[0] ? "" : "ok", "ok");
            CHECK_INT(rows[i].tp, 8);
            CHECK_INT(rows[i].ep, 8);
            CHECK_INT(rows[i].moe_tp, 1);
            CHECK_INT(rows[i].adp, 1);
            CHECK_INT(rows[i].conc, 4);
            CHECK_CONTAINS(rows[i].dtype, "fp8_block");
        }
        /* c and d: 8 attention-DP ranks of one GPU, EP 8, 128 clients */
        for (int i = 2; i < 4; i++) {
            CHECK_INT(rows[i].tp, 1);
            CHECK_INT(rows[i].adp, 8);
            CHECK_INT(rows[i].ep, 8);
            CHECK_INT(rows[i].moe_tp, 1);
            CHECK_INT(rows[i].conc, 128);
        }
        /* e: gpt-oss TP4 EP4 ("tp4_ep4" in the file's id); NVFP4 on H200
         * runs the checkpoint's own formats */
        CHECK_INT(rows[4].tp, 4);
        CHECK_INT(rows[4].ep, 4);
        CHECK_INT(rows[4].moe_tp, 1);
        CHECK_CONTAINS(rows[4].dtype, "native");
        /* f: TP8 with MoE-TP 8 (no layout to write) */
        CHECK_INT(rows[5].tp, 8);
        CHECK_INT(rows[5].ep, 0);
        /* g: 2 x 2 experts on 8 GPUs is listed, not guessed */
        CHECK_CONTAINS(rows[6].skip, "moe_tp_size 2 x moe_ep_size 2 != tp_size 8 x attention_dp_size 1");
        char *text = vrows_scenario(&rows[2], NULL);
        CHECK_CONTAINS(text, "\"parallel\": {\"ep\": 8, \"moe_tp\": 1, \"attention_dp\": 8}");
        CHECK_CONTAINS(text, "\"clients\": 128");
        free(text);
    }
    free(rows);
    unlink(path);
    rmdir(dir);
}

/* One run of DeepSeek-V3 on attention DP 8 x EP 8 (TP 1 per rank): request
 * 0 (16 tokens in, 64 out) reaches rank 0 at 0, request 1 (8,192 in, 2
 * out) rank 1 at 1 ms (round robin).  Returns the token times of both. */
static int adp_lockstep_run(int64_t *t0, int64_t *t1, int64_t *sched1, double *prefill_alone_s)
{
    const char *text =
        "{\"model\": {\"base\": \"deepseek-v3\", \"dtype\": \"fp8_block\"}, \"hardware\": \"h200-sxm\", "
        "\"tp\": 1, \"parallel\": {\"ep\": 8, \"attention_dp\": 8}, \"engine\": \"trtllm\", "
        "\"cost_model\": {\"kind\": \"roofline\", \"compute_dtype\": \"fp8_block\"}, "
        "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 16, \"output_tokens\": 64}, "
        "{\"arrival_ms\": 1, \"prompt_tokens\": 8192, \"output_tokens\": 2}]}, "
        "\"report\": {\"token_times\": true}}";
    Err e = {0};
    Scenario s;
    if (scenario_load_text(text, "adp.json", 0, 0, &s, &e) < 0) {
        fprintf(stderr, "  %s\n", e.msg);
        return -1;
    }
    int rc = -1;
    Cluster *c = cluster_new(&s, NULL, &e);
    if (c && cluster_run(c, &e) == 0) {
        RunData rd;
        cluster_rundata(c, &rd);
        const Request *r = s.wl.reqs;
        for (uint32_t k = 0; k < 64; k++) t0[k] = rd.token_times[r[0].token_off + k];
        for (uint32_t k = 0; k < 2; k++) t1[k] = rd.token_times[r[1].token_off + k];
        *sched1 = r[1].t_first_sched_ns;
        CHECK_INT(r[0].replica, 0);
        CHECK_INT(r[1].replica, 1);
        /* the 8,192-token prefill alone, its MoE at its own tokens (as the
         * group prices it: no other rank has work in that step but rank
         * 0's one decode) */
        const Engine *e1 = cluster_engine(c, 1);
        BatchItem it = {.c = 8192, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
        s.adp_step_tokens = 8192;
        *prefill_alone_s = eng_estimate_s(e1, &it, 1);
        s.adp_step_tokens = 0;
        rc = 0;
    } else {
        fprintf(stderr, "  %s\n", e.msg);
    }
    cluster_free(c);
    scenario_free(&s);
    return rc;
}

static void test_moe_adp_lockstep(void)
{
    int64_t t0[64] = {0}, t1[2] = {0}, sched1 = 0;
    double alone = 0;
    CHECK_INT(adp_lockstep_run(t0, t1, &sched1, &alone), 0);
    /* request 1 came at 1 ms to an idle rank while rank 0 prefilled:
     * it starts at that step's end, request 0's first token */
    CHECK(t0[0] > 1000000);
    CHECK_INT(sched1, t0[0]);
    /* its prefill is one group step: rank 0's decode ends with it */
    CHECK_INT(t1[0], t0[1]);
    /* so request 0's second token waited the whole prefill (the rank's
     * own decode step is a few ms) */
    double gap_ms = (double)(t0[1] - t0[0]) / 1e6, later_ms = (double)(t0[10] - t0[9]) / 1e6;
    CHECK_NEAR(gap_ms, 1e3 * alone, 0.02 * 1e3 * alone);
    CHECK(gap_ms > 20 * later_ms);
    /* request 1's last token is a decode step shared with request 0 */
    CHECK_INT(t1[1], t0[2]);
    /* numbers pinned: deterministic */
    CHECK_NEAR(gap_ms, 696.709092, 1e-3);
    CHECK_NEAR(later_ms, 12.552457, 1e-3);
}

/* Two attention-DP groups (cluster replicas 2 x attention DP 2 of
 * Qwen3-30B-A3B, round robin): a long prompt on group 0's rank 0 holds its
 * rank 1, not group 1. */
static void test_moe_adp_groups(void)
{
    const char *text =
        "{\"model\": \"qwen3-30b-a3b\", \"hardware\": \"h200-sxm\", \"tp\": 1, "
        "\"parallel\": {\"ep\": 2, \"attention_dp\": 2}, \"engine\": \"trtllm\", "
        "\"cluster\": {\"replicas\": 2, \"router\": \"round_robin\"}, "
        "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 8192, \"output_tokens\": 2}, "
        "{\"arrival_ms\": 0, \"prompt_tokens\": 16, \"output_tokens\": 8}, "
        "{\"arrival_ms\": 0, \"prompt_tokens\": 16, \"output_tokens\": 8}]}}";
    Err e = {0};
    Scenario s;
    CHECK_INT(scenario_load_text(text, "groups.json", 0, 0, &s, &e), 0);
    Cluster *c = cluster_new(&s, NULL, &e);
    CHECK(c != NULL);
    if (c && cluster_run(c, &e) == 0) {
        const Request *r = s.wl.reqs;
        CHECK_INT(cluster_replicas(c), 4);
        CHECK_INT(r[0].replica, 0);
        CHECK_INT(r[1].replica, 1);
        CHECK_INT(r[2].replica, 2);
        /* request 1 shares request 0's 8,192-token step (same group) */
        CHECK_INT(r[1].t_first_token_ns, r[0].t_first_token_ns);
        CHECK_NEAR((double)r[0].t_first_token_ns / 1e6, 125.69938, 1e-3);
        /* request 2, alone in group 1, is not held */
        CHECK_NEAR((double)r[2].t_first_token_ns / 1e6, 11.65633, 1e-3);
        CHECK(r[2].t_first_token_ns * 5 < r[0].t_first_token_ns);
    } else {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
    }
    cluster_free(c);
    scenario_free(&s);
}

/* DeepSeek-V3 TP8 EP8, 8 decodes at 2,047 cached tokens (or 33, or 7 and
 * a 512-token prefill), priced without and with TensorRT-LLM's
 * shared-expert overlap. */
static double moe_overlap_ms(int overlap, uint32_t n_dec, int with_prefill)
{
    double t = NAN;
    CostModel cm;
    if (dsv3_cost(8, 8, 0, overlap, &cm) == 0) {
        BatchItem it[130];
        uint32_t n = 0;
        for (uint32_t i = 0; i < n_dec; i++) it[n++] = (BatchItem){.c = 1, .h = 2047, .kind = ITEM_DECODE, .samples = 1};
        if (with_prefill) it[n++] = (BatchItem){.c = 512, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
        CostBreakdown cb;
        if (cm.iter_time(cm.ctx, it, n, &cb) == 0) t = cb.t_s * 1e3;
        cm.destroy(cm.ctx);
    }
    return t;
}

static void test_moe_shared_overlap(void)
{
    /* a captured decode batch (8): each of the 58 MoE layers takes the
     * longer of shared and routed experts, not their sum */
    double a = moe_overlap_ms(0, 8, 0), b = moe_overlap_ms(1, 8, 0);
    CHECK_NEAR(a, 14.2626, 5e-4); /* = test_moe_cost_layouts' TP8 EP8 step */
    CHECK_NEAR(b, 13.3198, 5e-4);
    CHECK(b < a);
    /* 33 sequences is no captured size, a prefill makes the step eager:
     * both pay the sum */
    CHECK_NEAR(moe_overlap_ms(1, 33, 0), moe_overlap_ms(0, 33, 0), 1e-12);
    CHECK_NEAR(moe_overlap_ms(1, 7, 1), moe_overlap_ms(0, 7, 1), 1e-12);
    /* 64 is captured, 65 is not */
    CHECK(moe_overlap_ms(1, 64, 0) < moe_overlap_ms(0, 64, 0));
    CHECK_NEAR(moe_overlap_ms(1, 65, 0), moe_overlap_ms(0, 65, 0), 1e-12);
}

/* The README's "Mixture-of-experts layouts and pricing" quotes this command. */
static void test_moe_readme_cost(void)
{
    const char *b = getenv("SERVESIM_BIN");
    if (!b) {
        printf("     (skipped: needs $SERVESIM_BIN)\n");
        return;
    }
    static const char *const args[2] = {"--tp 1 --attention-dp 8 --ep 8", "--tp 8"};
    for (int k = 0; k < 2; k++) {
        char cmd[1024], out[4096];
        snprintf(cmd, sizeof cmd,
                 "%s cost --hardware h200-sxm --profile h200-sxm-trtllm --model deepseek-v3 --dtype fp8_block "
                 "--kv-dtype fp8 %s --batch 1:2047,1:2047,1:2047,1:2047,1:2047,1:2047,1:2047,1:2047 2>&1",
                 b, args[k]);
        FILE *p = popen(cmd, "r");
        CHECK(p != NULL);
        if (!p) return;
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = 0;
        CHECK_INT(pclose(p), 0);
        if (k == 0) {
            CHECK_CONTAINS(out, "iteration of 8 requests: DeepSeek-V3 on 1 x NVIDIA H200 SXM 141GB (tp 1, fp8_block, "
                                "KV fp8; profile: h200-sxm-trtllm)\n  t_ms           28.2504\n");
            CHECK_CONTAINS(out, "  comm_ms         1.7872  (tensor-parallel all-reduce; MoE dispatch and combine across "
                                "the attention replicas)\n");
        } else {
            CHECK_CONTAINS(out, "  t_ms           18.7511\n");
        }
    }
}

void suite_moe(void)
{
    RUN(test_moe_calib_import);
    RUN(test_moe_cost_layouts);
    RUN(test_moe_scenario_parallel);
    RUN(test_moe_validate_layouts);
    RUN(test_moe_readme_cost);
    RUN(test_moe_adp_lockstep);
    RUN(test_moe_adp_groups);
    RUN(test_moe_shared_overlap);
}
