/*
 * servext.c -- calculators for the serving resources of issue 18, each
 * printing the arithmetic the chapter does (../shared/seeds/003_*.txt):
 *
 *   servesim lora-size     bytes of one LoRA adapter and of N (sim/lora.h)
 *   servesim offload-plan  memory freed by weight offload, net of prefetch
 *                          buffers, the copy per step and whether the step is
 *                          link-bound (sim/offload.h)
 *   servesim cache-value   V = p (T_recompute - T_fetch) - T_maintain per MiB
 *                          of a cached prefix, and the hit probability at
 *                          which one choice overtakes another (exercise 8-4)
 *
 * Every figure comes from the model and hardware descriptions and the
 * options; nothing is typed in.
 */
#include "servext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cliarg.h"
#include "hw.h"
#include "jsonio.h"
#include "lora.h"
#include "model.h"
#include "offload.h"

static const char usage_lora[] =
    "usage: servesim lora-size --model NAME [--rank R] [--targets q,v,...] [--dtype bf16|fp16|fp8|fp32]\n"
    "                          [--adapters N] [--context L] [--json]\n"
    "\n"
    "Bytes of one LoRA adapter (rank R on each target projection of every layer:\n"
    "R x (d_in + d_out) parameters) and of N adapters.  Defaults: rank 16 on q,v in\n"
    "BF16, 100 adapters (Qwen3-8B: 14.625 MiB and 1.43 GiB, chapter 8).  --context L\n"
    "adds the BF16 KV of N unshared L-token contexts, one per adapter (8192: 112.5 GiB):\n"
    "room for adapters is not room for their requests.\n";

static const char usage_offload[] =
    "usage: servesim offload-plan --model NAME [--every K] [--buffers B1[,B2..]]\n"
    "                             [--link pcie_gen4_x16|pcie_gen5_x16|nvlink_c2c | --link-gb-per-s X]\n"
    "                             [--step-ms T] [--steps N] [--state-mib M1[,M2..]] [--budget-s S] [--json]\n"
    "\n"
    "Weight offload of every K-th layer's MLP (default 4): memory freed, net of B\n"
    "prefetch buffers (one layer's MLP each), how many more KV states of M MiB fit,\n"
    "the copy per step over the link, whether a step of T ms becomes link-bound (the\n"
    "layer pipeline of sim/offload.h), N steps' copying, and the link a copy budget of\n"
    "S seconds over N steps needs.\n";

static const char usage_cache[] =
    "usage: servesim cache-value --model NAME --hardware NAME [--efficiency E] [--peak-tflops P]\n"
    "                            [--link pcie_gen4_x16|pcie_gen5_x16|nvlink_c2c | --link-gb-per-s X]\n"
    "                            [--kv-dtype bf16|fp8|q8_0|q4_0] --prefix NAME:TOKENS[:P_HIT[:COUNT]] ...\n"
    "                            [--json]\n"
    "\n"
    "Value of keeping each prefix cached: V = p (T_recompute - T_fetch) - T_maintain,\n"
    "recompute = prefill FLOPs / (peak x E) (default E = 0.62, the chapter's), fetch and\n"
    "maintenance (one copy out) = KV bytes / link (default PCIe Gen5 x16, 64 GB/s),\n"
    "p = P_HIT (default 0.5).  With two prefixes, COUNT copies each: the value of each\n"
    "choice and the hit probability of the first below which the second is worth more.\n";


static int list_arg(const char *s, double lo, double hi, double *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !(v >= lo && v <= hi)) return -1;
        out[n++] = v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return *s || n == 0 ? -1 : n;
}

static int print_json(cJSON *o)
{
    char *t = cJSON_Print(o);
    int rc = t ? 0 : 1;
    if (t) printf("%s\n", t);
    free(t);
    cJSON_Delete(o);
    return rc;
}

/* --link NAME or --link-gb-per-s X: 1 consumed option (2 args), 0 not ours, -1 bad */
static int link_opt(int argc, char **argv, int *i, double *bw, char *name, size_t n, const char *usage, int *rc)
{
    if (!strcmp(argv[*i], "--link") && *i + 1 < argc) {
        Err e = {0};
        double v = offload_link_parse(argv[++*i], "--link", &e);
        if (v < 0) {
            fprintf(stderr, "servesim: %s\n", e.msg);
            *rc = 2;
            return -1;
        }
        *bw = v;
        snprintf(name, n, "%s", argv[*i]);
        return 1;
    }
    if (!strcmp(argv[*i], "--link-gb-per-s") && *i + 1 < argc) {
        double v;
        if (cli_num_arg(argv[++*i], 1e-6, 1e6, &v) < 0) {
            *rc = cli_bad_usage("--link-gb-per-s: expected GB/s in (0, 1e6]", argv[*i], usage);
            return -1;
        }
        *bw = v * 1e9;
        snprintf(name, n, "%g GB/s", v);
        return 1;
    }
    return 0;
}

int servext_lora_size(int argc, char **argv)
{
    const char *model = NULL, *targets = "q,v", *dt = "bf16";
    double rank = 16, adapters = 100, context = 0;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_lora, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--context") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1, 1e8, &context) < 0 || context != floor(context))
                return cli_bad_usage("--context: expected a token count >= 1", argv[i], usage_lora);
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(argv[i], "--rank") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1, 65536, &rank) < 0 || rank != floor(rank))
                return cli_bad_usage("--rank: expected an integer in [1, 65536]", argv[i], usage_lora);
        } else if (!strcmp(argv[i], "--targets") && i + 1 < argc) {
            targets = argv[++i];
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            dt = argv[++i];
        } else if (!strcmp(argv[i], "--adapters") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1, 1e6, &adapters) < 0 || adapters != floor(adapters))
                return cli_bad_usage("--adapters: expected an integer in [1, 1000000]", argv[i], usage_lora);
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            return cli_bad_usage("unknown or incomplete option", argv[i], usage_lora);
        }
    }
    if (!model) return cli_bad_usage("--model is required", NULL, usage_lora);
    Err e = {0};
    ModelDesc m;
    LoraCfg c = {.rank = (uint32_t)rank};
    if (model_load(model, &m, &e) < 0 || lora_targets_parse(targets, "--targets", &c.targets, &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 1;
    }
    int d = dtype_parse(dt);
    if (d != DTYPE_BF16 && d != DTYPE_FP16 && d != DTYPE_FP8 && d != DTYPE_FP32)
        return cli_bad_usage("--dtype: expected bf16, fp16, fp8 or fp32", dt, usage_lora);
    c.dtype = (Dtype)d;
    double params = lora_adapter_params(&m, c.rank, c.targets), bytes = lora_adapter_bytes(&m, &c);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", m.name);
        cJSON_AddNumberToObject(o, "rank", rank);
        cJSON_AddStringToObject(o, "targets", targets);
        cJSON_AddStringToObject(o, "dtype", dtype_name(c.dtype));
        cJSON_AddNumberToObject(o, "params_per_adapter", params);
        cJSON_AddNumberToObject(o, "bytes_per_adapter", bytes);
        jsonio_add_num(o, "mib_per_adapter", bytes / MIB);
        cJSON_AddNumberToObject(o, "adapters", adapters);
        jsonio_add_num(o, "gib_total", adapters * bytes / GIB);
        jsonio_add_num(o, "weights_gib", m.weights_read_bytes / GIB);
        if (context > 0) jsonio_add_num(o, "kv_gib_for_contexts", adapters * context * model_kv_bytes_per_token(&m, DTYPE_BF16) / GIB);
        return print_json(o);
    }
    printf("%s: LoRA rank %g on %s in %s, %d layers\n", m.name, rank, targets, dtype_name(c.dtype), m.layers);
    for (int k = 0; k < LORA_TARGETS; k++) {
        if (!(c.targets & (1u << k))) continue;
        double din, dout;
        lora_target_shape(&m, 1u << k, &din, &dout);
        printf("  %-4s %6.0f -> %-6.0f  %g x (%g + %g) = %.0f params a layer\n", lora_target_names[k], din, dout,
               rank, din, dout, rank * (din + dout));
    }
    printf("  one adapter: %.0f params, %.0f B = %.3f MiB\n", params, bytes, bytes / MIB);
    printf("  %g adapters: %.2f GiB (the model's weights read per step: %.2f GiB)\n", adapters,
           adapters * bytes / GIB, m.weights_read_bytes / GIB);
    if (context > 0)
        printf("  KV of %g unshared %g-token contexts (BF16): %.2f GiB\n", adapters, context,
               adapters * context * model_kv_bytes_per_token(&m, DTYPE_BF16) / GIB);
    return 0;
}

int servext_offload_plan(int argc, char **argv)
{
    const char *model = NULL;
    double every = 4, step_ms = -1, steps = 255, budget_s = -1, buffers[8] = {1, 2}, states[8] = {0};
    int n_buf = 2, n_states = 0, json = 0, rc = 0;
    OffloadCfg c = {.every = 4, .buffers = 1, .link_bytes_per_s = 64e9};
    char link_name[48] = "pcie_gen5_x16";
    for (int i = 0; i < argc; i++) {
        int l = link_opt(argc, argv, &i, &c.link_bytes_per_s, link_name, sizeof link_name, usage_offload, &rc);
        if (l < 0) return rc;
        if (l > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_offload, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(argv[i], "--every") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1, 100000, &every) < 0 || every != floor(every))
                return cli_bad_usage("--every: expected an integer >= 1", argv[i], usage_offload);
        } else if (!strcmp(argv[i], "--buffers") && i + 1 < argc) {
            if ((n_buf = list_arg(argv[++i], 1, 100000, buffers, 8)) < 0)
                return cli_bad_usage("--buffers: expected up to 8 integers >= 1", argv[i], usage_offload);
        } else if (!strcmp(argv[i], "--step-ms") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1e-6, 1e7, &step_ms) < 0)
                return cli_bad_usage("--step-ms: expected ms > 0", argv[i], usage_offload);
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1, 1e9, &steps) < 0)
                return cli_bad_usage("--steps: expected a count >= 1", argv[i], usage_offload);
        } else if (!strcmp(argv[i], "--state-mib") && i + 1 < argc) {
            if ((n_states = list_arg(argv[++i], 1e-6, 1e9, states, 8)) < 0)
                return cli_bad_usage("--state-mib: expected up to 8 sizes in MiB", argv[i], usage_offload);
        } else if (!strcmp(argv[i], "--budget-s") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1e-9, 1e9, &budget_s) < 0)
                return cli_bad_usage("--budget-s: expected s > 0", argv[i], usage_offload);
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            return cli_bad_usage("unknown or incomplete option", argv[i], usage_offload);
        }
    }
    if (!model) return cli_bad_usage("--model is required", NULL, usage_offload);
    Err e = {0};
    ModelDesc m;
    if (model_load(model, &m, &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 1;
    }
    c.every = (uint32_t)every;
    cJSON *o = json ? cJSON_CreateObject() : NULL, *arr = json ? cJSON_CreateArray() : NULL;
    OffloadPlan pl = {0};
    for (int b = 0; b < n_buf; b++) {
        c.buffers = (uint32_t)buffers[b];
        if (offload_plan(&m, 1, &c, &pl, &e) < 0) {
            fprintf(stderr, "servesim: %s\n", e.msg);
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return 1;
        }
        double step = step_ms > 0 ? offload_iter_s(&m, &c, pl.layer_bytes, step_ms / 1e3) : NAN;
        if (b == 0 && !json) {
            printf("%s: the MLP of 1 layer in %u (%u layers of %.0f MiB) in host memory, link %s (%.1f GB/s)\n", m.name,
                   c.every, pl.layers, pl.layer_bytes / MIB, link_name, c.link_bytes_per_s / 1e9);
            printf("  freed %u x %.0f MiB = %.0f MiB; copy per step >= %.3f GB / %.1f GB/s = %.2f ms\n", pl.layers,
                   pl.layer_bytes / MIB, pl.freed_bytes / MIB, pl.freed_bytes / 1e9, c.link_bytes_per_s / 1e9,
                   pl.copy_s * 1e3);
            printf("  %g steps of copying: %.2f s\n", steps, steps * pl.copy_s);
            if (budget_s > 0)
                printf("  copying %g steps within %g s needs >= %.1f GB/s one way\n", steps, budget_s,
                       steps * pl.freed_bytes / budget_s / 1e9);
        }
        if (json) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "buffers", c.buffers);
            jsonio_add_num(x, "net_mib", pl.net_bytes / MIB);
            cJSON *fit = cJSON_AddArrayToObject(x, "extra_states");
            for (int k = 0; k < n_states; k++) cJSON_AddItemToArray(fit, cJSON_CreateNumber(floor(pl.net_bytes / MIB / states[k])));
            if (step_ms > 0) jsonio_add_num(x, "step_ms", step * 1e3);
            cJSON_AddItemToArray(arr, x);
            continue;
        }
        printf("  %u buffer%s: %.0f MiB, net %.0f MiB", c.buffers, c.buffers == 1 ? "" : "s", pl.buffer_bytes / MIB,
               pl.net_bytes / MIB);
        for (int k = 0; k < n_states; k++)
            printf("; %g more %g MiB states fit", floor(pl.net_bytes / MIB / states[k]), states[k]);
        if (step_ms > 0)
            printf("; a %.2f ms step takes %.2f ms (%s)", step_ms, step * 1e3,
                   step > step_ms / 1e3 * (1 + 1e-9) ? "link-bound" : "copies hidden");
        printf("\n");
    }
    if (json) {
        cJSON_AddStringToObject(o, "model", m.name);
        cJSON_AddNumberToObject(o, "every", c.every);
        cJSON_AddNumberToObject(o, "layers", pl.layers);
        jsonio_add_num(o, "layer_mib", pl.layer_bytes / MIB);
        jsonio_add_num(o, "freed_mib", pl.freed_bytes / MIB);
        cJSON_AddStringToObject(o, "link", link_name);
        jsonio_add_num(o, "link_gb_per_s", c.link_bytes_per_s / 1e9);
        jsonio_add_num(o, "copy_bytes_per_step", pl.freed_bytes);
        jsonio_add_num(o, "copy_ms_per_step", pl.copy_s * 1e3);
        jsonio_add_num(o, "copy_s_total", steps * pl.copy_s);
        if (budget_s > 0) jsonio_add_num(o, "min_gb_per_s_for_budget", steps * pl.freed_bytes / budget_s / 1e9);
        cJSON_AddItemToObject(o, "buffers", arr);
        return print_json(o);
    }
    return 0;
}

typedef struct PrefixArg {
    char name[32];
    double tokens, p, count;
} PrefixArg;

static int prefix_arg(const char *s, PrefixArg *out)
{
    const char *c1 = strchr(s, ':');
    if (!c1 || c1 == s || (size_t)(c1 - s) >= sizeof out->name) return -1;
    snprintf(out->name, sizeof out->name, "%.*s", (int)(c1 - s), s);
    out->p = 0.5;
    out->count = 1;
    double v[3];
    /* NAME:TOKENS[:P[:COUNT]] uses ':' between fields */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", c1 + 1);
    for (char *q = buf; *q; q++)
        if (*q == ':') *q = ',';
    int n = list_arg(buf, 0, 1e9, v, 3);
    if (n < 1 || v[0] < 1 || v[0] != floor(v[0])) return -1;
    out->tokens = v[0];
    if (n > 1) {
        if (v[1] > 1) return -1;
        out->p = v[1];
    }
    if (n > 2) {
        if (v[2] < 1 || v[2] != floor(v[2])) return -1;
        out->count = v[2];
    }
    return 0;
}

int servext_cache_value(int argc, char **argv)
{
    const char *model = NULL, *hwn = NULL, *kvd = "bf16";
    double eff = 0.62, peak_tf = -1, link = 64e9;
    char link_name[48] = "pcie_gen5_x16";
    PrefixArg pre[8];
    int n_pre = 0, json = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        int l = link_opt(argc, argv, &i, &link, link_name, sizeof link_name, usage_cache, &rc);
        if (l < 0) return rc;
        if (l > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_cache, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(argv[i], "--hardware") && i + 1 < argc) {
            hwn = argv[++i];
        } else if (!strcmp(argv[i], "--kv-dtype") && i + 1 < argc) {
            kvd = argv[++i];
        } else if (!strcmp(argv[i], "--efficiency") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1e-6, 1, &eff) < 0)
                return cli_bad_usage("--efficiency: expected a fraction in (0, 1]", argv[i], usage_cache);
        } else if (!strcmp(argv[i], "--peak-tflops") && i + 1 < argc) {
            if (cli_num_arg(argv[++i], 1e-6, 1e9, &peak_tf) < 0)
                return cli_bad_usage("--peak-tflops: expected TFLOP/s > 0", argv[i], usage_cache);
        } else if (!strcmp(argv[i], "--prefix") && i + 1 < argc) {
            if (n_pre == 8) return cli_bad_usage("--prefix: at most 8", argv[i + 1], usage_cache);
            if (prefix_arg(argv[++i], &pre[n_pre]) < 0)
                return cli_bad_usage("--prefix: expected NAME:TOKENS[:P_HIT[:COUNT]] (tokens >= 1, p in [0, 1], "
                                     "count >= 1)", argv[i], usage_cache);
            n_pre++;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            return cli_bad_usage("unknown or incomplete option", argv[i], usage_cache);
        }
    }
    if (!model || !hwn) return cli_bad_usage("--model and --hardware are required", NULL, usage_cache);
    if (!n_pre) return cli_bad_usage("give at least one --prefix NAME:TOKENS[:P_HIT[:COUNT]]", NULL, usage_cache);
    Err e = {0};
    ModelDesc m;
    HwDesc h;
    if (model_load(model, &m, &e) < 0 || hw_load(hwn, &h, &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 1;
    }
    int kd = dtype_parse(kvd);
    if (kd < 0) return cli_bad_usage("--kv-dtype: expected bf16, fp16, fp8, q8_0 or q4_0", kvd, usage_cache);
    double peak = peak_tf > 0 ? peak_tf * 1e12 : h.peak_flops[DTYPE_BF16];
    double kvb = model_kv_bytes_per_token(&m, (Dtype)kd);
    CacheValue cv[8];
    for (int k = 0; k < n_pre; k++) offload_cache_value(&m, kvb, pre[k].tokens, pre[k].p, peak * eff, link, &cv[k]);
    /* two choices: the first's hit probability at which they are worth the same */
    double thr = NAN, tot0 = cv[0].value_s * pre[0].count, tot1 = n_pre == 2 ? cv[1].value_s * pre[1].count : NAN;
    if (n_pre == 2 && cv[0].recompute_s > cv[0].fetch_s)
        thr = (tot1 + pre[0].count * cv[0].maintain_s) / (pre[0].count * (cv[0].recompute_s - cv[0].fetch_s));
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", m.name);
        cJSON_AddStringToObject(o, "hardware", h.name);
        jsonio_add_num(o, "flops_per_s", peak * eff);
        cJSON_AddStringToObject(o, "link", link_name);
        jsonio_add_num(o, "link_gb_per_s", link / 1e9);
        cJSON *arr = cJSON_AddArrayToObject(o, "prefixes");
        for (int k = 0; k < n_pre; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "name", pre[k].name);
            cJSON_AddNumberToObject(x, "tokens", pre[k].tokens);
            cJSON_AddNumberToObject(x, "count", pre[k].count);
            jsonio_add_num(x, "mib", cv[k].bytes / MIB);
            jsonio_add_num(x, "recompute_ms", cv[k].recompute_s * 1e3);
            jsonio_add_num(x, "fetch_ms", cv[k].fetch_s * 1e3);
            jsonio_add_num(x, "maintain_ms", cv[k].maintain_s * 1e3);
            jsonio_add_num(x, "p_hit", cv[k].p_hit);
            jsonio_add_num(x, "value_ms", cv[k].value_s * 1e3);
            jsonio_add_num(x, "value_ms_per_mib", cv[k].value_s_per_mib * 1e3);
            jsonio_add_num(x, "total_value_ms", cv[k].value_s * pre[k].count * 1e3);
            jsonio_add_num(x, "breakeven_p", cv[k].breakeven_p);
            cJSON_AddItemToArray(arr, x);
        }
        if (n_pre == 2 && isfinite(thr)) jsonio_add_num(o, "threshold_p_first", thr);
        return print_json(o);
    }
    printf("%s on %s: recompute at %.1f TFLOP/s (%.0f%% of %.1f), fetch and maintain over %s (%.1f GB/s)\n", m.name,
           h.name, peak * eff / 1e12, eff * 100, peak / 1e12, link_name, link / 1e9);
    printf("  %-8s %8s %9s %12s %9s %11s %6s %10s %12s %11s\n", "prefix", "tokens", "MiB", "recompute ms", "fetch ms",
           "maintain ms", "p", "V ms", "V ms/MiB", "keep if p >");
    for (int k = 0; k < n_pre; k++)
        printf("  %-8s %8.0f %9.1f %12.2f %9.3f %11.3f %6.3f %10.3f %12.4f %11.4f\n", pre[k].name, pre[k].tokens,
               cv[k].bytes / MIB, cv[k].recompute_s * 1e3, cv[k].fetch_s * 1e3, cv[k].maintain_s * 1e3, cv[k].p_hit,
               cv[k].value_s * 1e3, cv[k].value_s_per_mib * 1e3, cv[k].breakeven_p);
    if (n_pre == 2) {
        printf("  keep %g x %s: %.2f ms; keep %g x %s: %.2f ms -> keep %s\n", pre[0].count, pre[0].name, tot0 * 1e3,
               pre[1].count, pre[1].name, tot1 * 1e3, tot0 >= tot1 ? pre[0].name : pre[1].name);
        if (isfinite(thr))
            printf("  %s is worth more while its hit probability exceeds %.4f (%s's held at %.3f)\n", pre[0].name, thr,
                   pre[1].name, pre[1].p);
    }
    return 0;
}
