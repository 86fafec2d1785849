#!/usr/bin/env bash
# make_profiles.sh -- fit the bundled profiles (models/profiles/*.json) from
# the measured kernel tables in ../shared/data (or $SERVESIM_SHARED_DATA).
#
#   calib/make_profiles.sh            # from the repository root, after 'make'
#
# Each profile says in "source" which tables it was fitted from; the
# reference peaks are the hardware file's (--hardware).  Deterministic:
# the same data gives byte-identical profiles.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVESIM=${SERVESIM:-./servesim}
DATA=${SERVESIM_SHARED_DATA:-../shared/data}
AIC=$DATA/kernels/aiconfigurator
VID=$DATA/kernels/vidur
OUT=models/profiles
mkdir -p "$OUT"

fit() { # fit NAME HARDWARE SOURCES...
    local name=$1 hw=$2
    shift 2
    "$SERVESIM" calib fit "$@" --hardware "$hw" --name "$name" --out "$OUT/$name.json"
}

# NVIDIA aiconfigurator tables (vLLM kernels): GEMM, context and
# generation attention, and NCCL where measured (H100, RTX PRO 6000).
fit h100-sxm h100-sxm "$AIC/h100_sxm"
fit h200-sxm h200-sxm "$AIC/h200_sxm"
fit l40s l40s "$AIC/l40s"
fit b200 b200 "$AIC/b200_sxm"
fit rtx-pro-6000 rtx-pro-6000 "$AIC/rtx_pro_6000_server"
# A100: no aiconfigurator tables; Vidur's A100 profiling instead (GEMMs of
# three Llama models at TP 1-8, FlashAttention prefill/decode of
# Llama-2-70B at TP 2, NCCL all-reduce inside a DGX node).
fit a100-sxm-80gb a100-sxm-80gb \
    "$VID/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv" \
    "$VID/compute/a100/meta-llama/Llama-2-70b-hf/mlp.csv" \
    "$VID/compute/a100/meta-llama/Meta-Llama-3-8B/mlp.csv" \
    "$VID/legacy_a100/attention.csv" \
    "$VID/network/a100_dgx/all_reduce.csv"
set -- "$OUT"/*.json
echo "make_profiles: $# profiles in $OUT"
