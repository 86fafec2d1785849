/*
 * test_serveres.c -- issue 18's serving resources: LoRA adapters (sizes,
 * cache, cap, grouped GEMMs, Zipf workloads, adapter-affinity routing),
 * weight offload with prefetch buffers, weights outside HBM, compressed KV
 * transfers and the cache value of a prefix.  The chapter's numbers come
 * from ../shared/seeds/003_*.txt (sections 8.1, 8.3, 8.4, exercises 8-4
 * and 8-5), each reproduced from its stated inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "cluster.h"
#include "cost.h"
#include "lora.h"
#include "metrics.h"
#include "offload.h"
#include "testhelp.h"
#include "testrun.h"

/* ------------------------------------------------------------- helpers */

typedef struct Outcome {
    int rc;
    Err err;
    EngineStats st;          /* the cluster's, summed */
    Summary sum;
    double kv_capacity_bytes;
    uint64_t kv_blocks;
    double ttft_ms[64];      /* first 64 requests, in workload order */
    double first_tok_ms[64];
    uint32_t n;
    uint32_t peak_running;
} Outcome;

static void run_text(const char *text, const char *name, Outcome *o)
{
    memset(o, 0, sizeof *o);
    Scenario s;
    if (scenario_load_text(text, name, 0, 0, &s, &o->err) < 0) {
        o->rc = -1;
        return;
    }
    o->kv_capacity_bytes = s.kv.capacity_bytes;
    Cluster *c = cluster_new(&s, NULL, &o->err);
    if (!c || cluster_run(c, &o->err) != 0) {
        o->rc = -1;
    } else {
        Slo slo[METRICS_CLS_MAX];
        MetricsCfg mc;
        RunData rd;
        cluster_summarize(c, &s, slo, &mc, &rd, &o->sum);
        o->st = *rd.st;
        o->kv_blocks = engine_stats(cluster_engine(c, 0))->kv_total_blocks;
        o->peak_running = o->st.peak_running;
        o->n = s.wl.n < 64 ? s.wl.n : 64;
        for (uint32_t i = 0; i < o->n; i++) {
            const Request *r = &s.wl.reqs[i];
            o->ttft_ms[i] = (double)(r->t_first_token_ns - r->t_arrive_ns) / 1e6;
            o->first_tok_ms[i] = (double)r->t_first_token_ns / 1e6;
        }
    }
    if (o->rc < 0) fprintf(stderr, "  %s: %s\n", name, o->err.msg);
    cluster_free(c);
    scenario_free(&s);
}

static void run_file(const char *rel, Outcome *o)
{
    char path[512], *text;
    Err e = {0};
    snprintf(path, sizeof path, "%s/%s", SERVESIM_DATA_DIR, rel);
    if (!(text = read_text_file(path, NULL, &e))) {
        memset(o, 0, sizeof *o);
        o->rc = -1;
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    run_text(text, path, o);
    free(text);
}

static ModelDesc qwen8b(void)
{
    ModelDesc m;
    Err e = {0};
    memset(&m, 0, sizeof m);
    if (model_load("qwen3-8b", &m, &e) < 0) fprintf(stderr, "  %s\n", e.msg);
    return m;
}

/* Runs "servesim ARGS" and parses its JSON stdout (NULL on failure). */
static cJSON *cli_json(const char *args)
{
    const char *b = getenv("SERVESIM_BIN");
    char cmd[1024];
    static char out[65536];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", b ? b : "./servesim", args);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    int st = pclose(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return NULL;
    return cJSON_Parse(out);
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The chapter's hardware line and step model (003, experiment 8-1). */
#define CH8_HEAD "\"model\": \"qwen3-8b\", \"hardware\": {\"base\": \"rtx-pro-6000\", \"peak_flops\": {\"bf16\": 503.8e12}}, " \
                 "\"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 26.22, \"per_token_us\": 30.4, \"per_pair_ns\": 3}, "

/* ---------------------------------------------------------------- LoRA */

static void test_lora_adapter_bytes_chapter(void)
{
    /* 003 section 8.3: rank 16 on Q and V in BF16 is 14.6 MiB an adapter,
     * 1.43 GiB for 100 -- from Qwen3-8B's shapes: Q 4096 -> 4096, V 4096 ->
     * 1024, 36 layers */
    ModelDesc m = qwen8b();
    LoraCfg c = {.rank = 16, .targets = LORA_Q | LORA_V, .dtype = DTYPE_BF16};
    CHECK_NEAR(lora_adapter_params(&m, 16, LORA_Q | LORA_V), 36.0 * 16 * (8192 + 5120), 0);
    CHECK_NEAR(lora_adapter_bytes(&m, &c), 15335424, 0);
    CHECK_NEAR(lora_adapter_bytes(&m, &c) / MIB, 14.625, 1e-12);
    CHECK_NEAR(round(100 * lora_adapter_bytes(&m, &c) / GIB * 100) / 100, 1.43, 1e-12);
    /* every projection: the MLP's shapes count too */
    double all = lora_adapter_params(&m, 8, 127);
    CHECK_NEAR(all, 36.0 * 8 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 12288)), 0);
    unsigned t;
    Err e = {0};
    CHECK(lora_targets_parse("q,v", "t", &t, &e) == 0 && t == (LORA_Q | LORA_V));
    CHECK(lora_targets_parse("q,x", "--targets", &t, &e) < 0);
    CHECK_CONTAINS(e.msg, "unknown projection \"x\"");
    cJSON *j = cli_json("lora-size --model qwen3-8b --rank 16 --targets q,v --adapters 100 --context 8192 --json");
    CHECK(j != NULL);
    CHECK_NEAR(jnum(j, "kv_gib_for_contexts"), 112.5, 1e-12); /* 003: 100 unshared 8K contexts */
    CHECK_NEAR(jnum(j, "bytes_per_adapter"), 15335424, 0);
    CHECK_NEAR(jnum(j, "gib_total"), 100 * 15335424 / GIB, 1e-9);
    cJSON_Delete(j);
}

/* Two requests with different adapters, 2048 in and 2 out each, at 0 ms,
 * under the chapter's step model; lora options as given. */
static void two_adapter_run(const char *lora, Outcome *o)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{" CH8_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 2}, "
             "\"kv\": {\"capacity_gib\": 12, \"reserve\": \"final\"}, \"lora\": %s, "
             "\"workload\": {\"requests\": ["
             "{\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 2, \"adapter\": 1},"
             "{\"id\": \"b\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 2, \"adapter\": 2}]}}",
             lora);
    run_text(text, "two_adapters.json", o);
}

static void test_lora_load_cap_and_grouped_gemm(void)
{
    ModelDesc m = qwen8b();
    HwDesc hw;
    Err e = {0};
    CHECK(hw_load("rtx-pro-6000", &hw, &e) == 0);
    hw.peak_flops[DTYPE_BF16] = 503.8e12;
    LoraCfg c = {.rank = 16, .targets = LORA_Q | LORA_V, .dtype = DTYPE_BF16, .adapters = 2, .gpu_slots = 2,
                 .max_per_batch = 2, .link_bytes_per_s = 64e9};
    double load_s = 15335424 / 64e9;                                  /* 0.2396 ms over PCIe Gen5 */
    double step0 = 26.22e-3 + 2 * 2048 * 30.4e-6 + 2 * 2098176 * 3e-9; /* both prefills */
    double seg = lora_segment_s(&m, &c, &hw, 1, DTYPE_BF16, 2048, NULL, NULL);
    /* a 2048-row segment reads 36 x 2 x 2 small matrices and computes
     * 2 x 2048 x 16 x (8192 + 5120) x 36 FLOPs per adapter */
    double f = 0, b = 0;
    lora_segment_s(&m, &c, &hw, 1, DTYPE_BF16, 2048, &f, &b);
    CHECK_NEAR(f, 2.0 * 2048 * 16 * (8192 + 5120) * 36, 1);
    /* 2 x 2 x 36 launches each reading the segment's 2048 activations: ~1.4 ms */
    CHECK(seg > 1e-3 && seg < 2e-3);

    /* both fit: one iteration prefills both, each adapter loaded once, two segments */
    Outcome o;
    two_adapter_run("{\"adapters\": 2, \"gpu_slots\": 2, \"max_per_batch\": 2}", &o);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.ttft_ms[0], (step0 + 2 * load_s + 2 * seg) * 1e3, 1e-5);
    CHECK_NEAR(o.ttft_ms[1], o.ttft_ms[0], 1e-9);
    CHECK_INT(o.st.hooks.adapter_loads, 2);
    CHECK_INT(o.st.hooks.adapter_lookups, 2);
    CHECK_INT(o.st.hooks.adapter_hits, 0);
    CHECK_NEAR(o.st.hooks.adapter_load_s, 2 * load_s, 1e-12);
    /* the two slots' bytes left the 12 GiB pool */
    CHECK_NEAR(o.kv_capacity_bytes, 12 * GIB - 2 * 15335424.0, 1e-3);
    CHECK_INT(o.kv_blocks, (uint64_t)((12 * GIB - 2 * 15335424.0) / (16 * 147456.0)));

    /* one distinct adapter per batch: b waits until a has left (a's decode
     * runs alone), then its adapter loads into the second slot */
    two_adapter_run("{\"adapters\": 2, \"gpu_slots\": 2, \"max_per_batch\": 1}", &o);
    CHECK_INT(o.rc, 0);
    double a_prefill = 26.22e-3 + 2048 * 30.4e-6 + 2098176 * 3e-9;
    double seg1 = lora_segment_s(&m, &c, &hw, 1, DTYPE_BF16, 1, NULL, NULL);
    double a_decode = 26.22e-3 + 30.4e-6 + 2049 * 3e-9 + seg1;
    CHECK_NEAR(o.ttft_ms[0], (a_prefill + load_s + seg) * 1e3, 1e-5);
    CHECK_NEAR(o.ttft_ms[1], (a_prefill + load_s + seg + a_decode + a_prefill + load_s + seg) * 1e3, 1e-5);
    CHECK(o.st.hooks.adapter_deferred >= 1);

    /* three requests a (adapter 1), b (2), c (1), one adapter a batch:
     * "skip" lets c join a while b waits; "block" holds c behind b */
    {
        static const char fmt3[] =
            "{" CH8_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 3}, "
            "\"kv\": {\"capacity_gib\": 12, \"reserve\": \"final\"}, "
            "\"lora\": {\"adapters\": 2, \"gpu_slots\": 2, \"max_per_batch\": 1, \"cap\": \"%s\"}, "
            "\"workload\": {\"requests\": ["
            "{\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 2, \"adapter\": 1},"
            "{\"id\": \"b\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 2, \"adapter\": 2},"
            "{\"id\": \"c\", \"arrival_ms\": 0, \"prompt_tokens\": 2048, \"output_tokens\": 2, \"adapter\": 1}]}}";
        char t3[2048];
        Outcome s3, b3;
        snprintf(t3, sizeof t3, fmt3, "skip");
        run_text(t3, "skip.json", &s3);
        snprintf(t3, sizeof t3, fmt3, "block");
        run_text(t3, "block.json", &b3);
        CHECK_INT(s3.rc, 0);
        CHECK_INT(b3.rc, 0);
        CHECK_NEAR(s3.ttft_ms[2], s3.ttft_ms[0], 1e-9);  /* c prefills with a */
        CHECK(s3.ttft_ms[1] > s3.ttft_ms[2]);
        CHECK(b3.ttft_ms[2] > b3.ttft_ms[1]);             /* c after b */
        CHECK(b3.ttft_ms[1] > b3.ttft_ms[0]);
        snprintf(t3, sizeof t3, fmt3, "fifo");
        run_text(t3, "bad.json", &b3);
        CHECK_CONTAINS(b3.err.msg, "lora.cap");
    }
    /* one slot: b's adapter evicts a's */
    two_adapter_run("{\"adapters\": 2, \"gpu_slots\": 1}", &o);
    CHECK_INT(o.rc, 0);
    CHECK_INT(o.st.hooks.adapter_loads, 2);

    /* requests naming adapters need the key; ids are bounded */
    two_adapter_run("{\"adapters\": 1}", &o);
    CHECK_INT(o.rc, -1);
    CHECK_CONTAINS(o.err.msg, "request b names adapter 2, expected 1 .. lora.adapters (1)");
    two_adapter_run("{\"adapters\": 2, \"gpu_slots\": 2, \"max_per_batch\": 3}", &o);
    CHECK_CONTAINS(o.err.msg, "lora.max_per_batch: got 3, expected at most gpu_slots (2)");
    two_adapter_run("{\"adapters\": 2, \"gpu_slots\": 100000}", &o);
    CHECK_CONTAINS(o.err.msg, "leave no room in the");
}

static void test_lora_prefix_cache_keys_adapter(void)
{
    /* the same 64 token ids under adapter 1, then adapter 2, then adapter 1
     * again: only the third reuses blocks */
    char text[8192], ids[1024];
    int n = 0;
    for (int k = 0; k < 64; k++) n += snprintf(ids + n, sizeof ids - (size_t)n, "%s%d", k ? "," : "", 100 + k);
    snprintf(text, sizeof text,
             "{" CH8_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 4}, "
             "\"kv\": {\"capacity_gib\": 12, \"reserve\": \"on_demand\", \"prefix_cache\": true}, "
             "\"lora\": {\"adapters\": 2}, \"workload\": {\"requests\": ["
             "{\"id\": \"a\", \"arrival_ms\": 0, \"output_tokens\": 1, \"adapter\": 1, \"token_ids\": [%s]},"
             "{\"id\": \"b\", \"arrival_ms\": 1000, \"output_tokens\": 1, \"adapter\": 2, \"token_ids\": [%s]},"
             "{\"id\": \"c\", \"arrival_ms\": 2000, \"output_tokens\": 1, \"adapter\": 1, \"token_ids\": [%s]}]}}",
             ids, ids, ids);
    Outcome o;
    run_text(text, "prefix_adapter.json", &o);
    CHECK_INT(o.rc, 0);
    CHECK_INT(o.st.kv.lookup_tokens, 192);
    CHECK_INT(o.st.kv.hit_tokens, 48); /* c: three full blocks (the last token is always computed) */
}

static void test_lora_zipf_workload(void)
{
    /* 100 adapters, P(k) ~ 1/k: adapter 1 gets 1/H_100 = 19.3% of 1,000
     * requests (binomial sd 12.5) */
    static const char text[] =
        "{\"kind\": \"poisson\", \"rate_per_s\": 10, \"count\": 1000, \"prompt_tokens\": 16, \"output_tokens\": 4,"
        " \"adapters\": {\"count\": 100, \"zipf_s\": 1.0}}";
    cJSON *j = cJSON_Parse(text);
    Workload w;
    Err e = {0};
    CHECK(workload_from_json(j, "w", 7, &w, &e) == 0);
    uint32_t cnt[101] = {0}, top = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        CHECK(w.reqs[i].adapter >= 1 && w.reqs[i].adapter <= 100);
        cnt[w.reqs[i].adapter]++;
    }
    double h100 = 0;
    for (int k = 1; k <= 100; k++) h100 += 1.0 / k;
    CHECK_NEAR(cnt[1], 1000 / h100, 50);
    CHECK_NEAR(cnt[2], 500 / h100, 40);
    for (int k = 1; k <= 100; k++) top = cnt[k] > top ? cnt[k] : top;
    CHECK_INT(top, cnt[1]);
    workload_free(&w);
    cJSON_Delete(j);
    /* the trace column */
    j = cJSON_Parse("{\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2, \"adapter\": 7}]}");
    CHECK(workload_from_json(j, "w", 1, &w, &e) == 0);
    CHECK_INT(w.reqs[0].adapter, 7);
    workload_free(&w);
    cJSON_Delete(j);
}

static void test_lora_zipf100_scenario(void)
{
    /* workloads/lora/lora_zipf100.json: 24 of 100 adapters resident, at most
     * 24 per batch; against every adapter resident and no cap */
    Outcome a, b;
    run_file("workloads/lora/lora_zipf100.json", &a);
    run_file("workloads/lora/lora_zipf100_all_resident.json", &b);
    CHECK_INT(a.rc, 0);
    CHECK_INT(b.rc, 0);
    CHECK_INT(a.st.hooks.adapter_lookups, 1000);
    CHECK_INT(a.st.hooks.adapter_hits, 606);
    CHECK_INT(a.st.hooks.adapter_loads, 385);
    CHECK_NEAR(a.st.hooks.adapter_load_s, 385.0 * 15335424 / 64e9, 1e-9);
    CHECK_INT(b.st.hooks.adapter_hits, 901);
    CHECK_INT(b.st.hooks.adapter_loads, 99); /* every adapter drawn, once */
    CHECK_NEAR(a.sum.ttft_s.mean * 1e3, 191.81, 0.005);
    CHECK_NEAR(b.sum.ttft_s.mean * 1e3, 53.71, 0.005);
    CHECK(a.sum.ttft_s.p99 > 10 * b.sum.ttft_s.p99);
    /* "cap": "block": a request over the cap holds the queue (FCFS) */
    Err e = {0};
    char *text = read_text_file(SERVESIM_DATA_DIR "/workloads/lora/lora_zipf100.json", NULL, &e);
    CHECK(text != NULL);
    if (!text) return;
    char *k = strstr(text, "\"link\": \"pcie_gen5_x16\"}");
    CHECK(k != NULL);
    if (k) {
        char buf[8192];
        snprintf(buf, sizeof buf, "%.*s\"link\": \"pcie_gen5_x16\", \"cap\": \"block\"}%s", (int)(k - text), text,
                 k + strlen("\"link\": \"pcie_gen5_x16\"}"));
        Outcome c;
        run_text(buf, "lora_block.json", &c);
        CHECK_INT(c.rc, 0);
        CHECK_INT(c.st.hooks.adapter_hits, 603);
        CHECK_NEAR(c.sum.ttft_s.mean * 1e3, 419.96, 0.005);
    }
    free(text);
}

static void test_adapter_affinity_beats_round_robin(void)
{
    /* 4 replicas, 16 adapter slots each, 2,000 requests at 24 req/s, seed 1 */
    Outcome af, rr;
    run_file("workloads/lora/lora_cluster4_affinity.json", &af);
    run_file("workloads/lora/lora_cluster4_round_robin.json", &rr);
    CHECK_INT(af.rc, 0);
    CHECK_INT(rr.rc, 0);
    CHECK_INT(af.st.hooks.adapter_hits, 1674);
    CHECK_INT(rr.st.hooks.adapter_hits, 1023);
    CHECK_INT(af.st.hooks.adapter_loads, 325);
    CHECK_INT(rr.st.hooks.adapter_loads, 964);
    CHECK_NEAR(af.sum.ttft_s.mean * 1e3, 47.58, 0.005);
    CHECK_NEAR(rr.sum.ttft_s.mean * 1e3, 165.39, 0.005);
    CHECK_NEAR(af.sum.ttft_s.p99 * 1e3, 235.11, 0.005);
    CHECK_NEAR(rr.sum.ttft_s.p99 * 1e3, 2774.96, 0.005);
    CHECK_NEAR(af.sum.goodput_requests_per_s, 21.94, 0.005);
    CHECK_NEAR(rr.sum.goodput_requests_per_s, 20.34, 0.005);
    CHECK_INT(af.sum.verdict, 1);
    CHECK_INT(rr.sum.verdict, 0);
    /* disaggregated: each pool keeps its own homes; lookups happen at the
     * prefill side, loads on both */
    Outcome dis;
    run_text("{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", "
             "\"scheduler\": {\"kind\": \"chunked\", \"max_running\": 64, \"token_budget\": 2048}, "
             "\"disagg\": {\"prefill\": {\"replicas\": 2}, \"decode\": {\"replicas\": 2}, \"router\": \"adapter_affinity\"}, "
             "\"lora\": {\"adapters\": 20, \"gpu_slots\": 4}, "
             "\"workload\": {\"kind\": \"poisson\", \"rate_per_s\": 10, \"count\": 300, \"prompt_tokens\": 1000, "
             "\"output_tokens\": 100, \"adapters\": {\"count\": 20}}}", "disagg_lora.json", &dis);
    CHECK_INT(dis.rc, 0);
    CHECK_INT(dis.st.finished, 300);
    CHECK_INT(dis.st.hooks.adapter_lookups, 300);
    CHECK(dis.st.hooks.adapter_loads >= 20 && dis.st.hooks.adapter_loads < 600);
    /* the rule as a Lua router (lua/routers/adapter_affinity.lua) routes alike */
    Err e = {0};
    char *text = read_text_file(SERVESIM_DATA_DIR "/workloads/lora/lora_cluster4_affinity.json", NULL, &e);
    CHECK(text != NULL);
    if (!text) return;
    const char *key = "\"router\": \"adapter_affinity\"";
    char *k = strstr(text, key);
    CHECK(k != NULL);
    if (k) {
        char buf[8192];
        snprintf(buf, sizeof buf, "%.*s\"router\": {\"kind\": \"lua\", \"script\": \"%s/lua/routers/adapter_affinity.lua\"}%s",
                 (int)(k - text), text, SERVESIM_DATA_DIR, k + strlen(key));
        Outcome lu;
        run_text(buf, "lua_affinity.json", &lu);
        CHECK_INT(lu.rc, 0);
        CHECK_INT(lu.st.hooks.adapter_hits, af.st.hooks.adapter_hits);
        CHECK_INT(lu.st.hooks.adapter_loads, af.st.hooks.adapter_loads);
        CHECK_NEAR(lu.sum.ttft_s.mean, af.sum.ttft_s.mean, 1e-12);
    }
    free(text);
}

/* ------------------------------------------------------------- offload */

static void test_offload_chapter_figures(void)
{
    /* 003 section 8.4, figures 8-24/8-25 and exercise 8-5 */
    ModelDesc m = qwen8b();
    OffloadCfg c = {.every = 4, .buffers = 1, .link_bytes_per_s = 64e9};
    OffloadPlan p;
    Err e = {0};
    CHECK(offload_plan(&m, 1, &c, &p, &e) == 0);
    CHECK_INT(p.layers, 9);
    CHECK_NEAR(p.layer_bytes / MIB, 288, 1e-12);
    CHECK_NEAR(p.freed_bytes / MIB, 2592, 1e-12);
    CHECK_NEAR(p.net_bytes / MIB, 2304, 1e-12);
    CHECK_NEAR(floor(p.net_bytes / MIB / 1152), 2, 0);
    CHECK_NEAR(floor(p.net_bytes / MIB / 1188), 1, 0);
    CHECK_NEAR(p.freed_bytes / 1e9, 2.72, 0.005);
    CHECK_NEAR(p.copy_s * 1e3, 42.5, 0.05);
    CHECK(p.copy_s > 26.26e-3);
    CHECK_NEAR(255 * p.copy_s, 10.8, 0.05);
    CHECK_NEAR(255 * p.freed_bytes / 1.0 / 1e9, 693.1, 0.05); /* GB/s for 1 s of copying in all */
    c.buffers = 2;
    CHECK(offload_plan(&m, 1, &c, &p, &e) == 0);
    CHECK_NEAR(p.net_bytes / MIB, 2016, 1e-12);
    CHECK_NEAR(floor(p.net_bytes / MIB / 1152), 1, 0);
    CHECK_NEAR(floor(p.net_bytes / MIB / 1188), 1, 0);
    /* the layer pipeline: the 26.26 ms step becomes link-bound; two
     * buffers keep the link busy (42.47 ms + the last layer), one leaves it
     * idle while each offloaded layer computes */
    double t2 = offload_iter_s(&m, &c, p.layer_bytes, 26.26e-3);
    CHECK_NEAR(t2, p.copy_s + 26.26e-3 / 36, 1e-12);
    c.buffers = 1;
    double t1 = offload_iter_s(&m, &c, p.layer_bytes, 26.26e-3);
    CHECK_NEAR(t1, 9 * (p.copy_s / 9 + 26.26e-3 / 36), 1e-12);
    /* NVLink-C2C: 6.0 ms a step, hidden under the compute */
    c.link_bytes_per_s = offload_link_parse("nvlink_c2c", "link", &e);
    CHECK(offload_plan(&m, 1, &c, &p, &e) == 0);
    CHECK_NEAR(p.copy_s * 1e3, 6.0, 0.05);
    CHECK_NEAR(offload_iter_s(&m, &c, p.layer_bytes, 26.26e-3), 26.26e-3, 1e-12);
    CHECK(offload_link_parse("pcie7", "offload.link", &e) < 0);
    CHECK_CONTAINS(e.msg, "offload.link: unknown link \"pcie7\"");
    cJSON *j = cli_json("offload-plan --model qwen3-8b --every 4 --buffers 1,2 --step-ms 26.26 --state-mib 1152,1188 "
                        "--steps 255 --budget-s 1 --json");
    CHECK(j != NULL);
    CHECK_NEAR(jnum(j, "freed_mib"), 2592, 1e-9);
    CHECK_NEAR(jnum(j, "copy_ms_per_step"), 42.467, 0.001);
    cJSON *bufs = cJSON_GetObjectItemCaseSensitive(j, "buffers");
    CHECK_NEAR(jnum(cJSON_GetArrayItem(bufs, 0), "net_mib"), 2304, 1e-9);
    CHECK_NEAR(jnum(cJSON_GetArrayItem(bufs, 1), "net_mib"), 2016, 1e-9);
    cJSON_Delete(j);
}

/* 16 requests of 8192 in / 256 out at 0 ms (003's design board), 12 GiB of
 * final-length reservations; offload as given ("" = none). */
static void offload_run(const char *offload, uint32_t count, uint32_t out_tokens, Outcome *o)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{" CH8_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 16}, "
             "\"kv\": {\"capacity_gib\": 12, \"reserve\": \"final\"}, %s%s%s"
             "\"workload\": {\"kind\": \"constant\", \"rate_per_s\": 1000000, \"count\": %u, \"prompt_tokens\": 8192, "
             "\"output_tokens\": %u}}",
             *offload ? "\"offload\": " : "", offload, *offload ? ", " : "", count, out_tokens);
    run_text(text, "offload.json", o);
}

static void test_offload_engine(void)
{
    /* capacity: 12 GiB + 2304 MiB (one buffer) holds 12 full 8K requests
     * (1188 MiB each) where 12 GiB held 10 */
    Outcome o;
    offload_run("", 16, 256, &o);
    CHECK_INT(o.rc, 0);
    CHECK_INT(o.peak_running, 10);
    offload_run("{\"every\": 4, \"buffers\": 1}", 16, 256, &o);
    CHECK_INT(o.rc, 0);
    CHECK_NEAR(o.kv_capacity_bytes, 12 * GIB + 2304 * MIB, 1e-3);
    CHECK_INT(o.peak_running, 12);
    /* one request: its decode steps wait for the link */
    ModelDesc m = qwen8b();
    OffloadCfg c = {.every = 4, .buffers = 2, .link_bytes_per_s = 64e9};
    double layer = offload_mlp_layer_bytes(&m);
    offload_run("{\"every\": 4, \"buffers\": 2, \"link\": \"pcie_gen5_x16\"}", 1, 3, &o);
    CHECK_INT(o.rc, 0);
    double prefill = 26.22e-3 + 8192 * 30.4e-6 + (8192.0 * 8193 / 2) * 3e-9;
    CHECK_NEAR(o.ttft_ms[0], offload_iter_s(&m, &c, layer, prefill) * 1e3, 1e-5);
    CHECK_NEAR(o.ttft_ms[0], prefill * 1e3, 1e-5); /* the copies hide under a 376 ms prefill */
    CHECK_INT(o.st.hooks.offload_iters, 3);
    CHECK_INT(o.st.hooks.offload_link_bound, 2);
    double dec1 = 26.22e-3 + 30.4e-6 + 8193 * 3e-9;
    CHECK_NEAR(o.st.hooks.offload_wait_s, offload_iter_s(&m, &c, layer, dec1) - dec1 +
                                              offload_iter_s(&m, &c, layer, dec1 + 3e-9) - dec1 - 3e-9, 1e-9);
    CHECK(o.st.hooks.offload_wait_s > 2 * (42.4e-3 - dec1));
    CHECK_NEAR(o.st.hooks.offload_bytes, 3 * 9 * layer, 1e-3);
    /* the link defaults to the hardware's host link: a Grace Hopper-like
     * what-if at NVLink-C2C's 450 GB/s copies a step in 6.04 ms */
    Scenario sc;
    Err e = {0};
    static const char gh[] =
        "{\"model\": \"qwen3-8b\", \"hardware\": {\"base\": \"h100-sxm\", \"host_link_bw_bytes_per_s\": 450e9}, "
        "\"scheduler\": {\"kind\": \"continuous\"}, \"offload\": {\"every\": 4}, \"lora\": {\"adapters\": 4}, "
        "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2}]}}";
    CHECK(scenario_load_text(gh, "gh.json", 0, 0, &sc, &e) == 0);
    CHECK_NEAR(sc.offload.link_bytes_per_s, 450e9, 0);
    CHECK_NEAR(sc.offload_plan.copy_s * 1e3, 6.04, 0.005);
    CHECK_NEAR(sc.lora.link_bytes_per_s, 450e9, 0);
    scenario_free(&sc);
    static const char h100[] =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", \"scheduler\": {\"kind\": \"continuous\"}, "
        "\"offload\": {\"every\": 4, \"buffers\": 2}, "
        "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2}]}}";
    CHECK(scenario_load_text(h100, "h100.json", 0, 0, &sc, &e) == 0);
    CHECK_NEAR(sc.offload.link_bytes_per_s, 64e9, 0); /* PCIe Gen5 from h100-sxm.json */
    CHECK_NEAR(sc.kv.capacity_bytes - hw_kv_capacity_bytes(&sc.hw, &sc.model, 1), 2016 * MIB, 1e-3);
    scenario_free(&sc);
}

/* ------------------------------------------------ weights outside HBM */

static void test_weights_separate_memory(void)
{
    /* 003 figure 8-4: with the weights in a separate memory, HBM carries
     * only the KV: W/B + K becomes K per output token */
    ModelDesc m = qwen8b();
    HwDesc hw;
    Err e = {0};
    CHECK(hw_load("rtx-pro-6000", &hw, &e) == 0);
    CHECK(hw_attach_profile(&hw, "none", &e) == 0);
    double k = model_kv_bytes_per_token(&m, DTYPE_BF16);
    RooflineCfg rc = {.model = m, .hw = hw, .tp = 1, .compute_dtype = DTYPE_BF16, .kv_bytes_per_token = k,
                      .act_bytes = 2};
    CostModel a, b;
    CHECK(cost_roofline_new(&rc, &a, &e) == 0);
    rc.weights_separate = 1;
    CHECK(cost_roofline_new(&rc, &b, &e) == 0);
    BatchItem it = {.req = 0, .c = 1, .h = 8191, .kind = ITEM_DECODE, .samples = 1};
    CostBreakdown ca, cb;
    a.iter_time(a.ctx, &it, 1, &ca);
    b.iter_time(b.ctx, &it, 1, &cb);
    CHECK_NEAR(ca.bytes - cb.bytes, 15136811008.0, 1);
    CHECK_NEAR(cb.bytes, 8192 * k + k, 1);
    CHECK(cb.t_s < ca.t_s / 5);
    a.destroy(a.ctx);
    b.destroy(b.ctx);
    /* a calibrated profile times GEMMs with their weight reads: refused */
    Outcome o;
    run_text("{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", "
             "\"cost_model\": {\"kind\": \"roofline\", \"weights_separate_memory\": true}, "
             "\"scheduler\": {\"kind\": \"continuous\"}, "
             "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2}]}}",
             "wsep.json", &o);
    CHECK_INT(o.rc, -1);
    CHECK_CONTAINS(o.err.msg, "weights_separate_memory: the calibrated profile");
}

/* ------------------------------------------------ compressed transfers */

static void test_kv_compression(void)
{
    /* R_dec > B_link / (1 - r): q8_0 keeps 34 of 64 B, so over 64 GB/s
     * decompression must beat 136.5 GB/s */
    double r = 34.0 / 64, S = 1152 * MIB;
    CHECK_NEAR(offload_kv_breakeven_dec(64e9, r), 64e9 / (1 - r), 1e-3);
    CHECK_NEAR(offload_kv_breakeven_dec(64e9, r) / 1e9, 136.53, 0.005);
    int comp = -1;
    CHECK_NEAR(offload_kv_transfer_s(S, 64e9, r, 100e9, &comp), S / 64e9, 1e-15);
    CHECK_INT(comp, 0);
    CHECK_NEAR(offload_kv_transfer_s(S, 64e9, r, 200e9, &comp), r * S / 64e9 + S / 200e9, 1e-15);
    CHECK_INT(comp, 1);
    /* at the break-even rate both take the same; it stays uncompressed */
    offload_kv_transfer_s(S, 64e9, r, offload_kv_breakeven_dec(64e9, r) * (1 - 1e-9), &comp);
    CHECK_INT(comp, 0);
    /* disaggregation: the decode side's first token waits for the transfer */
    static const char fmt[] =
        "{" CH8_HEAD "\"scheduler\": {\"kind\": \"continuous\", \"max_running\": 4}, "
        "\"kv\": {\"capacity_gib\": 12, \"reserve\": \"final\"}, "
        "\"disagg\": {\"link_gb_per_s\": 50, \"link_latency_us\": 10, \"first_token\": \"decode\"}, %s"
        "\"workload\": {\"requests\": [{\"arrival_ms\": 0, \"prompt_tokens\": 8192, \"output_tokens\": 2}]}}";
    char text[2048];
    Outcome plain, packed;
    snprintf(text, sizeof text, fmt, "");
    run_text(text, "disagg.json", &plain);
    snprintf(text, sizeof text, fmt, "\"kv_transfer\": {\"compression_ratio\": 0.53125, \"decompress_gb_per_s\": 400}, ");
    run_text(text, "disagg_c.json", &packed);
    CHECK_INT(plain.rc, 0);
    CHECK_INT(packed.rc, 0);
    double bytes = 8192 * 147456.0;
    CHECK_NEAR(plain.ttft_ms[0] - packed.ttft_ms[0],
               (bytes / 50e9 - (0.53125 * bytes / 50e9 + bytes / 400e9)) * 1e3, 2e-6);
    /* swap: every swapped token goes out and back, each way compressed */
    static const char swap[] =
        "{\"model\": \"qwen3-8b\", \"hardware\": \"h100-sxm\", "
        "\"cost_model\": {\"kind\": \"linear\", \"fixed_ms\": 10, \"per_token_us\": 100, \"per_pair_ns\": 0}, "
        "\"scheduler\": {\"kind\": \"vllm\", \"preemption\": \"swap\", \"watermark\": 0}, "
        "\"kv\": {\"capacity_gib\": 0.05, \"reserve\": \"on_demand\"}, "
        "\"kv_transfer\": {\"compression_ratio\": 0.5, \"decompress_gb_per_s\": 400}, \"workload\": {\"requests\": ["
        "{\"id\": \"a\", \"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 200},"
        "{\"id\": \"b\", \"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 200},"
        "{\"id\": \"c\", \"arrival_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 200}]}}";
    Outcome sw;
    run_text(swap, "swap_c.json", &sw);
    CHECK_INT(sw.rc, 0);
    CHECK(sw.st.swapped_tokens > 0);
    CHECK_NEAR(sw.st.swap_s, 2.0 * sw.st.swapped_tokens * 147456 * (0.5 / 64e9 + 1 / 400e9), 1e-9);
    snprintf(text, sizeof text, fmt, "\"kv_transfer\": {\"compression_ratio\": 1.5, \"decompress_gb_per_s\": 400}, ");
    run_text(text, "disagg_bad.json", &packed);
    CHECK_CONTAINS(packed.err.msg, "kv_transfer.compression_ratio");
}

/* --------------------------------------------------------- cache value */

static void test_cache_value_exercise_8_4(void)
{
    /* 003 figure 8-22, exercise 8-4: 864 MiB of cache; A = 6144 tokens
     * (864 MiB, recompute 307.9 ms), B = 2048 (288 MiB, 94.7 ms) at 62% of
     * 503.8 TFLOP/s; fetch and maintenance over PCIe Gen5 x16, p = 0.5:
     * A ~0.154 ms per MiB, B ~0.140 */
    ModelDesc m = qwen8b();
    double k = model_kv_bytes_per_token(&m, DTYPE_BF16);
    CacheValue a, b;
    offload_cache_value(&m, k, 6144, 0.5, 0.62 * 503.8e12, 64e9, &a);
    offload_cache_value(&m, k, 2048, 0.5, 0.62 * 503.8e12, 64e9, &b);
    CHECK_NEAR(a.bytes / MIB, 864, 1e-9);
    CHECK_NEAR(b.bytes / MIB, 288, 1e-9);
    CHECK_REL(a.recompute_s, 307.9e-3, 0.005); /* 308.89 ms from the model's FLOPs */
    CHECK_REL(b.recompute_s, 94.7e-3, 0.005);  /* 95.05 */
    CHECK_NEAR(a.recompute_s / b.recompute_s, 3.25, 0.005);
    CHECK_NEAR(a.fetch_s * 1e3, 14.156, 0.001);
    CHECK_NEAR(a.value_s_per_mib * 1e3, 0.154, 0.0005);
    CHECK_NEAR(b.value_s_per_mib * 1e3, 0.140, 0.0005);
    CHECK(a.value_s > 3 * b.value_s);
    /* the thresholds: A's hit probability below which three B are worth more */
    cJSON *j5 = cli_json("cache-value --model qwen3-8b --hardware rtx-pro-6000 --peak-tflops 503.8 --efficiency 0.62 "
                         "--link pcie_gen5_x16 --prefix A:6144:0.5 --prefix B:2048:0.5:3 --json");
    cJSON *j4 = cli_json("cache-value --model qwen3-8b --hardware rtx-pro-6000 --peak-tflops 503.8 --efficiency 0.62 "
                         "--link pcie_gen4_x16 --prefix A:6144:0.5 --prefix B:2048:0.5:3 --json");
    CHECK(j5 && j4);
    double t5 = jnum(j5, "threshold_p_first"), t4 = jnum(j4, "threshold_p_first");
    CHECK_NEAR(t5, (3 * b.value_s + a.maintain_s) / (a.recompute_s - a.fetch_s), 1e-4);
    CHECK_NEAR(t5, 0.4597, 0.0001);
    CHECK_NEAR(t4, 0.4577, 0.0001);
    CHECK(t4 < t5); /* a slower link costs the three B more (three fetches of their own) */
    const cJSON *pa = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j4, "prefixes"), 0);
    CHECK_NEAR(jnum(pa, "fetch_ms"), 28.312, 0.001);
    cJSON_Delete(j5);
    cJSON_Delete(j4);
}

/* ---------------------------------------------------- README numbers */

/* Every line the README quotes from a command is in the command's output
 * and in README.md, byte for byte. */
static void readme_quotes(const char *readme, const char *args, const char *const *lines)
{
    static char out[65536];
    CHECK_INT(testrun_cli(args, out, sizeof out), 0);
    for (int k = 0; lines[k]; k++) {
        CHECK_CONTAINS(out, lines[k]);
        CHECK_CONTAINS(readme, lines[k]);
    }
}

static void test_readme_serveres_numbers(void)
{
    Err e = {0};
    char *readme = read_text_file(SERVESIM_DATA_DIR "/sim/README.md", NULL, &e);
    CHECK(readme != NULL);
    if (!readme) return;
    static const char *const lora[] = {
        "  one adapter: 7667712 params, 15335424 B = 14.625 MiB\n",
        "  100 adapters: 1.43 GiB (the model's weights read per step: 14.10 GiB)\n",
        "  KV of 100 unshared 8192-token contexts (BF16): 112.50 GiB\n", NULL};
    readme_quotes(readme, "lora-size --model qwen3-8b --rank 16 --targets q,v --adapters 100 --context 8192", lora);
    char *wreadme = read_text_file(SERVESIM_DATA_DIR "/workloads/README.md", NULL, &e);
    CHECK(wreadme != NULL);
    static const char *const wl[] = {
        "  adapters    1000 requests on 99 distinct adapters; most requested: 1 (194), 2 (106), 3 (68), 4 (51), 5 (37)\n",
        NULL};
    if (wreadme) readme_quotes(wreadme, "workload " SERVESIM_DATA_DIR "/workloads/lora/lora_zipf100.json --stats", wl);
    free(wreadme);
    cJSON *wj = cli_json("workload " SERVESIM_DATA_DIR "/workloads/lora/lora_zipf100.json --stats --json");
    const cJSON *ad = wj ? cJSON_GetObjectItemCaseSensitive(wj, "adapters") : NULL;
    CHECK(ad != NULL);
    CHECK_NEAR(jnum(ad, "distinct"), 99, 0);
    CHECK_NEAR(jnum(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ad, "top"), 0), "requests"), 194, 0);
    cJSON_Delete(wj);
    static const char *const zipf[] = {
        "  TTFT          191.81     39.93    266.88   2447.66   3174.03 ms  (n=1000)\n",
        "  adapters: 606 of 1000 requests found theirs on the GPU (60.6%), 385 loads taking 0.092 s, low-rank GEMMs 1.611 s\n",
        NULL};
    readme_quotes(readme, "run " SERVESIM_DATA_DIR "/workloads/lora/lora_zipf100.json", zipf);
    static const char *const all[] = {
        "  TTFT           53.71     37.16    111.18    240.07    367.41 ms  (n=1000)\n",
        "  adapters: 901 of 1000 requests found theirs on the GPU (90.1%), 99 loads taking 0.024 s, low-rank GEMMs 1.618 s\n",
        NULL};
    readme_quotes(readme, "run " SERVESIM_DATA_DIR "/workloads/lora/lora_zipf100_all_resident.json", all);
    static const char *const off[] = {
        "  freed 9 x 288 MiB = 2592 MiB; copy per step >= 2.718 GB / 64.0 GB/s = 42.47 ms\n",
        "  255 steps of copying: 10.83 s\n",
        "  1 buffer: 288 MiB, net 2304 MiB; 2 more 1152 MiB states fit; 1 more 1188 MiB states fit; a 26.26 ms step "
        "takes 49.03 ms (link-bound)\n",
        "  2 buffers: 576 MiB, net 2016 MiB; 1 more 1152 MiB states fit; 1 more 1188 MiB states fit; a 26.26 ms step "
        "takes 43.20 ms (link-bound)\n", NULL};
    readme_quotes(readme, "offload-plan --model qwen3-8b --every 4 --buffers 1,2 --step-ms 26.26 --state-mib 1152,1188", off);
    static const char *const c2c[] = {"  freed 9 x 288 MiB = 2592 MiB; copy per step >= 2.718 GB / 450.0 GB/s = 6.04 ms\n",
                                      NULL};
    readme_quotes(readme, "offload-plan --model qwen3-8b --link nvlink_c2c --buffers 1 --step-ms 26.26", c2c);
    static const char *const cv[] = {
        "  A            6144     864.0       308.89    14.156      14.156  0.500    133.214       0.1542      0.0480\n",
        "  B            2048     288.0        95.05     4.719       4.719  0.500     40.446       0.1404      0.0522\n",
        "  keep 1 x A: 133.21 ms; keep 3 x B: 121.34 ms -> keep A\n",
        "  A is worth more while its hit probability exceeds 0.4597 (B's held at 0.500)\n", NULL};
    readme_quotes(readme, "cache-value --model qwen3-8b --hardware rtx-pro-6000 --peak-tflops 503.8 --prefix A:6144:0.5 "
                          "--prefix B:2048:0.5:3", cv);
    /* the offloaded design board and the cluster table's figures */
    Outcome o, base;
    run_file("workloads/chapters/ch8_offload_every4.json", &o);
    CHECK_INT(o.rc, 0);
    CHECK_INT(o.peak_running, 12);
    CHECK_INT(o.kv_blocks, 6485);
    CHECK_NEAR(o.sum.tpot_s.mean * 1e3, 51.23, 0.005);
    CHECK_INT(o.st.hooks.offload_link_bound, 509);
    CHECK_INT(o.st.iterations, 513);
    CHECK_CONTAINS(readme, "TPOT grows from 28.66 to 51.23 ms as 509 of 513");
    char *text = read_text_file(SERVESIM_DATA_DIR "/workloads/chapters/ch8_offload_every4.json", NULL, &e);
    CHECK(text != NULL);
    if (text) {
        char *k = strstr(text, "\"offload\"");
        if (k) memset(k, ' ', (size_t)(strchr(k, '}') + 2 - k)); /* the same board without offload */
        run_text(text, "no_offload.json", &base);
        CHECK_INT(base.peak_running, 10);
        CHECK_NEAR(base.sum.tpot_s.mean * 1e3, 28.66, 0.005);
        free(text);
    }
    CHECK_CONTAINS(readme, "| `adapter_affinity` | 1674 / 2000 (83.7%) | 325 | 47.58 ms | 235.11 ms | 21.94 req/s | pass |");
    CHECK_CONTAINS(readme, "| `round_robin` | 1023 / 2000 (51.1%) | 964 | 165.39 ms | 2774.96 ms | 20.34 req/s | FAIL |");
    free(readme);
}

void suite_serveres(void);
void suite_serveres(void)
{
    RUN(test_lora_adapter_bytes_chapter);
    RUN(test_lora_load_cap_and_grouped_gemm);
    RUN(test_lora_prefix_cache_keys_adapter);
    RUN(test_lora_zipf_workload);
    RUN(test_lora_zipf100_scenario);
    RUN(test_adapter_affinity_beats_round_robin);
    RUN(test_offload_chapter_figures);
    RUN(test_offload_engine);
    RUN(test_weights_separate_memory);
    RUN(test_kv_compression);
    RUN(test_cache_value_exercise_8_4);
    RUN(test_readme_serveres_numbers);
}
