#!/usr/bin/env python3
"""derive_defaults.py -- the default efficiencies in models/hardware/*.json,
derived from the measured kernel and end-to-end data in ../shared/data.

Run from the repository root (stdlib only):

    python3 calib/derive_defaults.py            # human-readable report
    python3 calib/derive_defaults.py --json     # the numbers as JSON
    python3 calib/derive_defaults.py --check    # fail if models/hardware/*.json differ

The data directory is ../shared/data relative to the repository, or
$SERVESIM_SHARED_DATA.  Every figure below is a median, so one bad
measurement cannot move it; rows that claim more than the datasheet peak
(impossible, usually an L2-resident working set or a failed kernel) are
dropped and counted.

What each number is (the JSON `sources` cite this file for them):

gemm_compute  AIC gemm_perf.csv, bfloat16 rows with n, k >= 2048: achieved
              FLOP/s = 2mnk / latency, divided by the BF16 peak of the AIC
              system file; the median over shapes at each m, at m = 1, 2, 4,
              ... up to the largest m measured.  Powers of two because the
              simulator interpolates linearly in log2(m) and, while a GEMM is
              memory-bound, efficiency grows linearly in m: coarser spacing
              would overstate it between points by up to 25%.  At small m the
              figure is low because those GEMMs are memory-bound, so the
              compute term then reproduces the measured weight-streaming time
              rather than adding to it.  A100 (no AIC data): vidur's A100 mlp.csv,
              the four projection GEMMs of each row (QKV, O, gate+up, down;
              n, k after the row's tensor parallelism), same rule.
mem           AIC's mem_bw_empirical_scaling_factor 0.8 (systems/*.yaml),
              kept unless this GPU's own weight-streaming measurement (GEMMs
              with m <= 8 and >= 128 MiB of BF16 weights: bytes
              2(nk + mk + mn) / latency over peak bandwidth) differs from it by
              more than 0.05; then the measurement is used.
attn_compute  AIC context_attention_perf.csv, bf16 attention with bf16 KV,
              head_dim 128, no sliding window, isl >= 4096: FLOPs = 4 * batch
              * num_heads * head_dim * isl(isl+1)/2 over latency and BF16
              peak; the best kernel_source per configuration (the engine would
              pick it); median.  A100: vidur legacy_a100/attention.csv prefill
              rows (Llama-2-70B TP2: 32 query heads per GPU) with context >=
              4096, pairs = chunk * cached + chunk(chunk+1)/2.
attn_mem      AIC generation_attention_perf.csv, bf16 KV, head_dim 128, no
              window: bytes = batch * (isl + step) * 2 * kv_heads * head_dim
              * 2 over latency and peak bandwidth, for configurations reading
              >= 0.5 GiB (several times any L2, so the KV really streams from
              DRAM); best kernel per configuration; median.  A100: vidur
              legacy decode rows (4 KV heads per GPU), same threshold.
iter_overhead e2e/silicon_visible.csv, Llama-3.1-8B at TP 1 and the lowest
              concurrency measured (8 on H100 TRT-LLM BF16; 16 on H200 vLLM
              FP8 -- there are no concurrency-1 rows).  Per row:
                  step    = TPOT * (1 - (c - 1) * P / cycle)
                  overhead = step - W - A
                  W = max(Dw / (bw * mem), c * (F_token + F_lmhead) / (peak * gemm_compute(c)))
                  A = max(c * L * k / (bw * attn_mem), c * L * F_pair / (peak * attn_compute))
              with L = isl + osl/2 the mean context (the same max(compute,
              memory) per operator class as the cost model, SPEC section 5)
              where cycle = TTFT + (osl - 1) * TPOT is one client's request
              period and P the compute time of one prefill (isl tokens at
              gemm_compute(isl) and attn_compute), so that the other clients'
              prefills that land inside a request's decode phase are not
              counted as per-step overhead.  Dw is Llama-3.1-8B's weights read
              per step (BF16: 15,009,849,344 B as computed by sim/model.c;
              FP8 checkpoint: linear layers 1 B/param, LM head and norms
              BF16), k its KV bytes per token (BF16 KV, 131,072 B).  Rows where
              the estimated prefill share (c - 1) P / cycle exceeds 20% are not
              used: the overhead would then be a small difference of large
              estimates.  That removes every H200 row (c >= 16 with 4-8K
              prompts, 80-90% prefill), so the median comes from H100 alone
              and is carried over to every GPU.
"""
import csv
import json
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("SERVESIM_SHARED_DATA",
                      os.path.join(HERE, "..", "..", "shared", "data"))
AIC = os.path.join(DATA, "kernels", "aiconfigurator")
VIDUR = os.path.join(DATA, "kernels", "vidur")

# servesim hardware name -> AIC directory / system file stem
GPUS = {
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "a100-sxm-80gb": "a100_sxm",
    "l40s": "l40s",
    "b200": "b200_sxm",
    "rtx-pro-6000": "rtx_pro_6000_server",
}
GIB = 1024.0 ** 3
STREAM_MIN_BYTES = 0.5 * GIB      # attn_mem: configurations reading at least this
WEIGHT_STREAM_MIN = 128 * 1024**2  # mem: GEMMs whose weights are at least this
MEM_PRIOR = 0.8                   # AIC mem_bw_empirical_scaling_factor
MEM_TOLERANCE = 0.05


def read_yaml_scalars(path):
    """The flat `key: number` lines of an AIC system file (enough here)."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*([A-Za-z_0-9]+):\s*([-+0-9.eE]+)\s*(#.*)?$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
    return out


def system(gpu):
    return read_yaml_scalars(os.path.join(AIC, "systems", GPUS[gpu] + ".yaml"))


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def sig3(x):
    """Three significant digits: enough for a default, stable in JSON."""
    return float("%.3g" % x)


def curve_points(ms):
    """Powers of two from 1 to the largest m, plus the largest m itself."""
    top = max(ms)
    pts = [1 << i for i in range(0, 40) if (1 << i) <= top and (1 << i) in ms]
    if top not in pts:
        pts.append(top)
    return pts


# ---------------------------------------------------------------- GEMM

def gemm_aic(gpu, peak, bw):
    by_m, stream, dropped = {}, [], 0
    with open(os.path.join(AIC, GPUS[gpu], "gemm_perf.csv")) as f:
        for r in csv.DictReader(f):
            if r["gemm_dtype"] != "bfloat16":
                continue
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            t = float(r["latency"]) * 1e-3
            if t <= 0:
                dropped += 1
                continue
            eff = 2.0 * m * n * k / t / peak
            if eff > 1.0:
                dropped += 1
                continue
            if n >= 2048 and k >= 2048:
                by_m.setdefault(m, []).append(eff)
            if m <= 8 and 2 * n * k >= WEIGHT_STREAM_MIN:
                stream.append(2.0 * (n * k + m * k + m * n) / t / bw)
    return by_m, stream, dropped


def gemm_vidur_a100(peak, bw):
    by_m, stream = {}, []
    base = os.path.join(VIDUR, "compute", "a100", "meta-llama")
    for model in sorted(os.listdir(base)):
        with open(os.path.join(base, model, "mlp.csv")) as f:
            for r in csv.DictReader(f):
                h, kvh = int(r["n_head"]), int(r["n_kv_head"])
                d, ffn = int(r["n_embd"]), int(r["n_expanded_embd"])
                tp = int(r["num_tensor_parallel_workers"])
                hd = d // h
                up = (2 if r["use_gated_mlp"] == "True" else 1) * ffn
                ops = {"attn_pre_proj": ((h + 2 * kvh) * hd // tp, d),
                       "attn_post_proj": (d, h * hd // tp),
                       "mlp_up_proj": (up // tp, d),
                       "mlp_down_proj": (d, ffn // tp)}
                m = int(r["num_tokens"])
                for op, (n, k) in ops.items():
                    t = float(r["time_stats.%s.median" % op]) * 1e-3
                    if t <= 0:
                        continue
                    eff = 2.0 * m * n * k / t / peak
                    if n >= 2048 and k >= 2048 and eff <= 1.0:
                        by_m.setdefault(m, []).append(eff)
                    if m <= 8 and 2 * n * k >= WEIGHT_STREAM_MIN:
                        stream.append(2.0 * (n * k + m * k + m * n) / t / bw)
    return by_m, stream


# ----------------------------------------------------------- attention

def best_per_config(path, keyf, valf):
    """Max efficiency per configuration over kernel sources; drops > 1."""
    best, dropped = {}, 0
    with open(path) as f:
        for r in csv.DictReader(f):
            k = keyf(r)
            if k is None:
                continue
            v = valf(r)
            if v is None:
                continue
            if v > 1.0:
                dropped += 1
                continue
            best[k] = max(best.get(k, 0.0), v)
    return list(best.values()), dropped


def plain_bf16(r):
    return (r["attn_dtype"] in ("bfloat16", "float16")
            and r["kv_cache_dtype"] in ("bfloat16", "float16")
            and r["head_dim"] == "128" and r.get("window_size", "0") in ("0", "")
            and r.get("beam_width", "1") == "1")


def attn_compute_aic(gpu, peak):
    def key(r):
        if not plain_bf16(r) or int(r["isl"]) < 4096:
            return None
        return (r["batch_size"], r["isl"], r["num_heads"], r["num_key_value_heads"])

    def val(r):
        b, h, isl = int(r["batch_size"]), int(r["num_heads"]), int(r["isl"])
        t = float(r["latency"]) * 1e-3
        return 4.0 * b * h * 128 * isl * (isl + 1) / 2 / t / peak if t > 0 else None
    return best_per_config(os.path.join(AIC, GPUS[gpu], "context_attention_perf.csv"),
                           key, val)


def kv_read_bytes(r):
    ctx = int(r["isl"]) + int(r["step"])
    return int(r["batch_size"]) * ctx * 2 * int(r["num_key_value_heads"]) * 128 * 2


def attn_mem_aic(gpu, bw):
    def key(r):
        if not plain_bf16(r) or kv_read_bytes(r) < STREAM_MIN_BYTES:
            return None
        return (r["batch_size"], r["isl"], r["step"], r["num_heads"],
                r["num_key_value_heads"])

    def val(r):
        t = float(r["latency"]) * 1e-3
        return kv_read_bytes(r) / t / bw if t > 0 else None
    return best_per_config(os.path.join(AIC, GPUS[gpu], "generation_attention_perf.csv"),
                           key, val)


def attn_vidur_a100(peak, bw):
    """Llama-2-70B at TP 2: 32 query and 4 KV heads per GPU, head_dim 128."""
    comp, mem = [], []
    with open(os.path.join(VIDUR, "legacy_a100", "attention.csv")) as f:
        for r in csv.DictReader(f):
            tp = int(r["num_tensor_parallel_workers"])
            qh = int(r["n_q_head"]) // tp
            kvh = int(r["n_kv_head"]) // tp
            hd = int(r["n_embd"]) // int(r["n_q_head"])
            kv = int(r["kv_cache_size"])
            if r["is_prefill"] == "True":
                c = int(r["prefill_chunk_size"])
                t = float(r["time_stats.attn_prefill.median"]) * 1e-3
                if kv + c >= 4096 and t > 0:
                    pairs = c * kv + c * (c + 1) / 2
                    comp.append(4.0 * qh * hd * pairs / t / peak)
            else:
                b = int(r["batch_size"])
                t = float(r["time_stats.attn_decode.median"]) * 1e-3
                by = b * kv * 2 * kvh * hd * 2
                if by >= STREAM_MIN_BYTES and t > 0:
                    mem.append(by / t / bw)
    return comp, mem


# -------------------------------------------------------- per-step overhead

# Llama-3.1-8B, as sim/model.c derives it (tests/test_model.c checks these).
L8 = dict(layers=32, hidden=4096, q_heads=32, kv_heads=8, head_dim=128, ffn=14336,
          vocab=128256)


def llama8b():
    h, hd = L8["hidden"], L8["head_dim"]
    attn = 2 * h * L8["q_heads"] * hd + 2 * h * L8["kv_heads"] * hd
    matmul = attn + 3 * h * L8["ffn"]
    norms = 2 * h
    embed = L8["vocab"] * h
    return dict(
        matmul=matmul,
        dw_bf16=2 * (L8["layers"] * (matmul + norms) + h + embed),
        # ModelOpt FP8 checkpoint: linear layers FP8, LM head and norms BF16
        dw_fp8=L8["layers"] * matmul + 2 * (L8["layers"] * norms + h + embed),
        kv=2 * L8["layers"] * L8["kv_heads"] * hd * 2,
        flops_per_token=2 * L8["layers"] * matmul,
        flops_per_pair=4 * L8["layers"] * L8["q_heads"] * hd,
        lm_head_flops=2 * L8["vocab"] * h,
    )


def interp_log2(pts, x):
    xs = [p[0] for p in pts]
    if x <= xs[0]:
        return pts[0][1]
    if x >= xs[-1]:
        return pts[-1][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            t = (math.log2(x) - math.log2(x0)) / (math.log2(x1) - math.log2(x0))
            return y0 + t * (y1 - y0)
    return pts[-1][1]


PREFILL_SHARE_MAX = 0.2  # rows where other clients' prefills take more are not used


def iter_overhead(results):
    """Rows at TP 1 and each GPU's lowest measured concurrency; see the top."""
    mdl = llama8b()
    out = []
    with open(os.path.join(DATA, "e2e", "silicon_visible.csv")) as f:
        rows = [r for r in csv.DictReader(f)
                if "Llama-3.1-8B" in r["model_path"] and r["tp_size"] == "1"]
    for system_name, gpu in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm")):
        mine = [r for r in rows if r["system"] == system_name]
        if not mine:
            continue
        cmin = min(int(r["batch_size"]) for r in mine)
        res = results[gpu]
        for r in mine:
            c = int(r["batch_size"])
            if c != cmin:
                continue
            fp8 = r["precision"] == "fp8" or r["gemm_quant_mode"] == "fp8"
            peak = res["peak_fp8"] if fp8 else res["peak_bf16"]
            dw = mdl["dw_fp8"] if fp8 else mdl["dw_bf16"]
            bw = res["mem_bw"]
            isl, osl = int(r["isl"]), int(r["osl"])
            tpot = float(r["silicon_tpot_ms"]) * 1e-3
            ttft = float(r["silicon_ttft_ms"]) * 1e-3
            geff = interp_log2(res["gemm_curve"], isl)
            prefill = (isl * mdl["flops_per_token"] / (peak * geff)
                       + mdl["flops_per_pair"] * isl * (isl + 1) / 2
                       / (res["peak_bf16"] * res["attn_compute"]))
            cycle = ttft + (osl - 1) * tpot
            share = (c - 1) * prefill / cycle
            step = tpot * (1 - min(share, 1.0))
            # The cost model charges each class max(compute, memory); do the
            # same so that the overhead is what is left over in its terms.
            ctx = isl + osl / 2
            weights_t = max(dw / (bw * res["mem"]),
                            c * (mdl["flops_per_token"] + mdl["lm_head_flops"])
                            / (peak * interp_log2(res["gemm_curve"], c)))
            kv_t = max(c * ctx * mdl["kv"] / (bw * res["attn_mem"]),
                       c * ctx * mdl["flops_per_pair"] / (res["peak_bf16"] * res["attn_compute"]))
            out.append(dict(gpu=gpu, engine=r["backend"] + " " + r["backend_version"],
                            precision="fp8" if fp8 else "bf16", c=c, isl=isl, osl=osl,
                            tpot_ms=tpot * 1e3, prefill_share=share,
                            weights_ms=weights_t * 1e3, kv_ms=kv_t * 1e3,
                            overhead_raw_us=(tpot - weights_t - kv_t) * 1e6,
                            overhead_us=(step - weights_t - kv_t) * 1e6,
                            used=share <= PREFILL_SHARE_MAX))
    return out, mdl


# ------------------------------------------------------------------ main

def derive():
    results = {}
    for gpu in GPUS:
        sy = system(gpu)
        peak = sy["bfloat16_tc_flops"]
        bw = sy["mem_bw"]
        res = dict(peak_bf16=peak, peak_fp8=sy.get("fp8_tc_flops", 0.0), mem_bw=bw,
                   mem_prior=sy.get("mem_bw_empirical_scaling_factor", MEM_PRIOR),
                   other_mem_gib=sy.get("other_mem", 0) / GIB)
        if gpu == "a100-sxm-80gb":
            by_m, stream = gemm_vidur_a100(peak, bw)
            dropped = 0
            comp, mem = attn_vidur_a100(peak, bw)
            dc = dm = 0
            res["gemm_data"] = "vidur compute/a100/meta-llama/*/mlp.csv"
        else:
            by_m, stream, dropped = gemm_aic(gpu, peak, bw)
            comp, dc = attn_compute_aic(gpu, peak)
            mem, dm = attn_mem_aic(gpu, bw)
            res["gemm_data"] = "aiconfigurator/%s/gemm_perf.csv" % GPUS[gpu]
        pts = curve_points(sorted(by_m))
        res["gemm_curve"] = [(m, sig3(median(by_m[m]))) for m in pts]
        res["gemm_shapes_per_m"] = min(len(by_m[m]) for m in pts)
        res["gemm_dropped"] = dropped
        res["weight_stream"] = round(median(stream), 3)
        res["weight_stream_n"] = len(stream)
        prior = res["mem_prior"]
        res["mem"] = prior if abs(res["weight_stream"] - prior) <= MEM_TOLERANCE else res["weight_stream"]
        res["attn_compute"] = round(median(comp), 3)
        res["attn_compute_n"], res["attn_compute_dropped"] = len(comp), dc
        res["attn_mem"] = round(median(mem), 3)
        res["attn_mem_n"], res["attn_mem_dropped"] = len(mem), dm
        results[gpu] = res
    rows, mdl = iter_overhead(results)
    used = [r for r in rows if r["used"]]
    ov = round(median([r["overhead_us"] for r in used]) / 10.0) * 10
    ov_raw = median([r["overhead_raw_us"] for r in used])
    return results, rows, mdl, ov, ov_raw, len(used)


def main():
    results, rows, mdl, ov, ov_raw, nused = derive()
    if "--check" in sys.argv:
        bad = 0
        for g, r in results.items():
            path = os.path.join(HERE, "..", "models", "hardware", g + ".json")
            with open(path) as f:
                hw = json.load(f)
            want = dict(gemm_compute=dict(rows=[m for m, _ in r["gemm_curve"]],
                                          eff=[e for _, e in r["gemm_curve"]]),
                        mem=r["mem"], attn_compute=r["attn_compute"], attn_mem=r["attn_mem"])
            for k, v in want.items():
                if hw["efficiency"].get(k) != v:
                    print("%s: efficiency.%s is %s, derived %s" % (path, k, hw["efficiency"].get(k), v))
                    bad += 1
            if hw["iter_overhead_us"] != ov:
                print("%s: iter_overhead_us is %s, derived %s" % (path, hw["iter_overhead_us"], ov))
                bad += 1
        print("%d difference(s)" % bad)
        sys.exit(1 if bad else 0)
    if "--json" in sys.argv:
        out = {g: dict(gemm_compute=dict(rows=[m for m, _ in r["gemm_curve"]],
                                         eff=[e for _, e in r["gemm_curve"]]),
                       mem=r["mem"], attn_compute=r["attn_compute"], attn_mem=r["attn_mem"],
                       iter_overhead_us=ov,
                       runtime_reserve_gib=round(r["other_mem_gib"], 3))
               for g, r in results.items()}
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    print("data: %s" % os.path.normpath(DATA))
    for g, r in results.items():
        print("\n== %s  (BF16 peak %.4g FLOP/s, %.4g B/s)" % (g, r["peak_bf16"], r["mem_bw"]))
        print("  gemm_compute from %s, >= %d shapes per m, %d rows > peak dropped:"
              % (r["gemm_data"], r["gemm_shapes_per_m"], r["gemm_dropped"]))
        print("    rows %s" % json.dumps([m for m, _ in r["gemm_curve"]]))
        print("    eff  %s" % json.dumps([e for _, e in r["gemm_curve"]]))
        print("  mem %.2f  (AIC prior %.2f; weight streaming at m <= 8 measures %.3f over %d GEMMs)"
              % (r["mem"], r["mem_prior"], r["weight_stream"], r["weight_stream_n"]))
        print("  attn_compute %.3f  (median of %d configurations, %d rows > peak dropped)"
              % (r["attn_compute"], r["attn_compute_n"], r["attn_compute_dropped"]))
        print("  attn_mem %.3f  (median of %d configurations reading >= 0.5 GiB, %d rows > peak dropped)"
              % (r["attn_mem"], r["attn_mem_n"], r["attn_mem_dropped"]))
        print("  runtime_reserve_gib %.3f  (AIC other_mem; nccl_mem for 1 GPU is 0)" % r["other_mem_gib"])
    print("\n== iter_overhead (Llama-3.1-8B: Dw BF16 %d B, FP8 %d B, KV %d B/token)"
          % (mdl["dw_bf16"], mdl["dw_fp8"], mdl["kv"]))
    print("  %-9s %-18s %-4s %4s %5s %4s %8s %7s %8s %7s %9s %9s %s" % (
        "gpu", "engine", "prec", "c", "isl", "osl", "TPOT ms", "prefill", "weights", "kv ms",
        "raw us", "corr us", "used"))
    for r in rows:
        print("  %-9s %-18s %-4s %4d %5d %4d %8.3f %6.1f%% %8.3f %7.3f %9.0f %9.0f %s" % (
            r["gpu"], r["engine"], r["precision"], r["c"], r["isl"], r["osl"], r["tpot_ms"],
            100 * r["prefill_share"], r["weights_ms"], r["kv_ms"], r["overhead_raw_us"],
            r["overhead_us"], "yes" if r["used"] else "no (prefill share > %.0f%%)"
            % (100 * PREFILL_SHARE_MAX)))
    print("  iter_overhead_us = %.0f: median of the %d rows used, rounded to 10 us "
          "(%.0f us without the prefill correction)" % (ov, nused, ov_raw))


if __name__ == "__main__":
    main()
