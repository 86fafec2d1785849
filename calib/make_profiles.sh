#!/usr/bin/env bash
# make_profiles.sh -- fit the bundled profiles (models/profiles/*.json) from
# the measured kernel tables in ../shared/data (or $SERVESIM_SHARED_DATA).
#
#   calib/make_profiles.sh              # every profile, from the repository root, after 'make'
#   calib/make_profiles.sh h200-sxm-trtllm b200   # only these
#
# Two families:
#   <hw>.json         the hardware files' default: NVIDIA's per-GPU tables
#                     (vLLM 0.14-0.19 kernels), Vidur's profiling for A100.
#   <hw>-<engine>.json  one per GPU x serving engine, from that engine's own
#                     tables (kernels/aiconfigurator_backends/<gpu>/<engine>-<v>/,
#                     the newest version folder with a GEMM table): GEMMs in
#                     BF16, FP8, FP8-block and NVFP4 (B200), prefill and decode
#                     attention with 16-bit and FP8 KV caches, and the engine's
#                     custom all-reduce with the GPU's NCCL table as the fallback
#                     (the faster of the two at each size, as the engine runs;
#                     the fitted bandwidth/latency form beyond the tables).
# Each profile's "source" names its tables and versions; the reference peaks
# are the hardware file's (--hardware).  Deterministic: the same data gives
# byte-identical profiles.  About half a minute per per-engine profile on two
# cores (two run at a time); CI does not run this script, it uses the files.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVESIM=${SERVESIM:-./servesim}
DATA=${SERVESIM_SHARED_DATA:-../shared/data}
AIC=$DATA/kernels/aiconfigurator
AICB=$DATA/kernels/aiconfigurator_backends
VID=$DATA/kernels/vidur
OUT=models/profiles
JOBS=${JOBS:-2}
mkdir -p "$OUT"
ONLY=" $* "

want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }

# Fits run JOBS at a time; each one's log is printed, in order, when it is
# joined, and a failed fit stops the script.
PIDS=() NAMES=()
join() {
    local i
    for i in "${!PIDS[@]}"; do
        wait "${PIDS[$i]}" || { cat "$OUT/.${NAMES[$i]}.log" >&2; echo "make_profiles: ${NAMES[$i]} failed" >&2; exit 1; }
        cat "$OUT/.${NAMES[$i]}.log"
        rm -f "$OUT/.${NAMES[$i]}.log"
    done
    PIDS=() NAMES=()
}
fit() { # fit NAME HARDWARE [--source TEXT] SOURCES...
    local name=$1 hw=$2
    shift 2
    want "$name" || return 0
    "$SERVESIM" calib fit "$@" --hardware "$hw" --name "$name" --out "$OUT/$name.json" > "$OUT/.$name.log" 2>&1 &
    PIDS+=($!) NAMES+=("$name")
    if [ "${#PIDS[@]}" -ge "$JOBS" ]; then join; fi
}

# ---------------------------------------------------------------- defaults
# NVIDIA aiconfigurator tables (vLLM kernels): GEMM, context and
# generation attention, and NCCL where measured (H100, RTX PRO 6000).
fit h100-sxm h100-sxm "$AIC/h100_sxm"
fit h200-sxm h200-sxm "$AIC/h200_sxm"
fit l40s l40s "$AIC/l40s"
fit b200 b200 "$AIC/b200_sxm"
fit rtx-pro-6000 rtx-pro-6000 "$AIC/rtx_pro_6000_server"
# A100: Vidur's A100 profiling (GEMMs of three Llama models at TP 1-8,
# FlashAttention prefill/decode of Llama-2-70B at TP 2, NCCL all-reduce
# inside a DGX node); the per-engine A100 profiles below use NVIDIA's.
fit a100-sxm-80gb a100-sxm-80gb \
    "$VID/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv" \
    "$VID/compute/a100/meta-llama/Llama-2-70b-hf/mlp.csv" \
    "$VID/compute/a100/meta-llama/Meta-Llama-3-8B/mlp.csv" \
    "$VID/legacy_a100/attention.csv" \
    "$VID/network/a100_dgx/all_reduce.csv"

# -------------------------------------------------------------- per engine
newest() { # newest DIR PREFIX FILE: the highest version folder DIR/PREFIX-* holding FILE
    local d
    d=$(for x in "$1/$2"-*/; do [ -f "$x$3" ] && basename "$x"; done | sort -V | tail -n 1)
    [ -n "$d" ] || { echo "make_profiles: no $1/$2-*/$3" >&2; exit 1; }
    echo "$d"
}

declare -A ENGINE_NAME=([trtllm]="TensorRT-LLM" [vllm]="vLLM" [sglang]="SGLang")
for pair in h100_sxm:h100-sxm h200_sxm:h200-sxm b200_sxm:b200 a100_sxm:a100-sxm-80gb; do
    gpu=${pair%%:*} hw=${pair#*:}
    nccl=$(newest "$AICB/$gpu" nccl nccl_perf.csv)
    for engine in trtllm vllm sglang; do
        ver=$(newest "$AICB/$gpu" "$engine" gemm_perf.csv)
        src="NVIDIA aiconfigurator kernel tables (ai-dynamo/aiconfigurator, Apache-2.0) measured with ${ENGINE_NAME[$engine]} ${ver#*-} kernels on $gpu:"
        src+=" kernels/aiconfigurator_backends/$gpu/$ver/{gemm_perf,context_attention_perf,generation_attention_perf,custom_allreduce_perf}.csv"
        src+=" and NCCL ${nccl#nccl-} ($gpu/$nccl/nccl_perf.csv) as the all-reduce fallback; servesim calib fit --hardware $hw"
        moe=()
        if [ -f "$AICB/$gpu/$ver/moe_perf.csv" ]; then
            # the engine's fused-MoE table (classes moe_bf16, moe_fp8, moe_fp8_block)
            moe=("$AICB/$gpu/$ver/moe_perf.csv")
            src+="; fused MoE from $gpu/$ver/moe_perf.csv (power_law_1.01 routing)"
        fi
        for t in context_mla_perf generation_mla_perf; do
            if [ -f "$AICB/$gpu/$ver/$t.csv" ]; then
                moe+=("$AICB/$gpu/$ver/$t.csv")
                src+="; MLA attention from $gpu/$ver/$t.csv"
            fi
        done
        src+="; NCCL alltoall rows as the expert-parallel all-to-all"
        fit "$hw-$engine" "$hw" --source "$src" "$AICB/$gpu/$ver" "$AICB/$gpu/$nccl/nccl_perf.csv" "${moe[@]}"
    done
done
join
set -- "$OUT"/*.json
echo "make_profiles: $# profiles in $OUT"
