#!/usr/bin/env bash
# run-on-gpu.sh -- calibrate servesim on the NVIDIA GPU of this machine.
#
#   calib/run-on-gpu.sh OUTDIR
#
# Builds servesim and the CUDA kernels, checks every kernel against its
# CPU reference, times the operators of Qwen3-8B and Llama-3.1-8B over the
# full grid, fits one profile to both, and writes into OUTDIR:
#   gpu.txt                 what nvidia-smi says about the GPU
#   kernel-*.txt            each kernel program's check and benchmark
#   check.txt               'servesim calib check --backend cuda'
#   <model>/measurements.csv, <model>.log   the measurements
#   <gpu>-measured.json     the fitted profile
#   report.txt              fit statistics and measured vs fitted per operator class
# Then commit <gpu>-measured.json as models/profiles/<gpu>-measured.json and
# report.txt next to it (calib/README.md says how to use the profile).
#
# About ten minutes on an H100.  Every step's exit status is checked; the
# first failure stops the script with a message saying which step failed.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: calib/run-on-gpu.sh OUTDIR" >&2
    exit 2
fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
cd "$REPO"

fail() {
    echo "run-on-gpu: $*" >&2
    exit 1
}
step() {
    echo "== $(date +%H:%M:%S) $*"
}

step "1/6 prerequisites"
command -v nvidia-smi >/dev/null 2>&1 || fail "nvidia-smi not found: no NVIDIA driver on this machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$OUT/gpu.txt" ||
    fail "nvidia-smi could not query the GPU"
command -v nvcc >/dev/null 2>&1 || fail "nvcc not found: put the CUDA toolkit's bin/ on PATH"
GPU_NAME=$(head -n 1 "$OUT/gpu.txt" | cut -d, -f1)
# The hardware description whose datasheet peaks the efficiencies are
# fractions of; another GPU is fitted against its own best measured rates.
case "$GPU_NAME" in
*H100*) HW=h100-sxm ;;
*H200*) HW=h200-sxm ;;
*A100*) HW=a100-sxm-80gb ;;
*L40S*) HW=l40s ;;
*B200*) HW=b200 ;;
*"RTX PRO 6000"*) HW=rtx-pro-6000 ;;
*) HW="" ;;
esac
if [ -n "$HW" ]; then
    TAG=$HW
else
    TAG=$(echo "$GPU_NAME" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
fi
echo "GPU: $GPU_NAME -> profile $TAG-measured${HW:+ (reference peaks from models/hardware/$HW.json)}"

step "2/6 build servesim and the CUDA kernels"
make servesim || fail "building servesim failed (missing Debian packages? see 'make deps')"
make kernels || fail "building the CUDA kernels failed"
for f in gemm attn_prefill attn_decode membw libservesim_kernels.so; do
    [ -e "kernels/build/$f" ] || fail "kernels/build/$f is missing after 'make kernels'"
done

step "3/6 check each kernel against its CPU reference (and benchmark it)"
for k in gemm attn_prefill attn_decode membw; do
    if ! "./kernels/build/$k" >"$OUT/kernel-$k.txt" 2>&1; then
        cat "$OUT/kernel-$k.txt" >&2
        fail "kernels/build/$k failed its check or benchmark (output above)"
    fi
    cat "$OUT/kernel-$k.txt"
done
if ! ./servesim calib check --backend cuda >"$OUT/check.txt" 2>&1; then
    cat "$OUT/check.txt" >&2
    fail "'servesim calib check --backend cuda' failed (output above)"
fi
cat "$OUT/check.txt"

step "4/6 time the operators of Qwen3-8B and Llama-3.1-8B (full grid)"
MEAS=()
for m in qwen3-8b llama-3.1-8b; do
    if ! ./servesim calib run --backend cuda --model "$m" --grid full --reps 5 --out "$OUT/$m" >"$OUT/$m.log" 2>&1; then
        tail -n 20 "$OUT/$m.log" >&2
        fail "'servesim calib run' for $m failed (last lines above, all in $OUT/$m.log)"
    fi
    tail -n 1 "$OUT/$m.log"
    MEAS+=("$OUT/$m/measurements.csv")
done

step "5/6 fit the profile"
HWARG=()
if [ -n "$HW" ]; then
    HWARG=(--hardware "$HW")
fi
PROFILE="$OUT/$TAG-measured.json"
SOURCE="calib/run-on-gpu.sh on $GPU_NAME ($(cut -d, -f3 "$OUT/gpu.txt" | head -n 1 | tr -d ' ') driver): servesim's CUDA kernels (cuBLAS GEMMs, tiled and paged attention) timed for Qwen3-8B and Llama-3.1-8B"
if ! ./servesim calib fit "${MEAS[@]}" ${HWARG[@]+"${HWARG[@]}"} --name "$TAG-measured" --source "$SOURCE" \
    --out "$PROFILE" >"$OUT/fit.txt" 2>&1; then
    cat "$OUT/fit.txt" >&2
    fail "'servesim calib fit' failed (output above)"
fi
cat "$OUT/fit.txt"

step "6/6 report"
{
    echo "servesim calibration on $(cat "$OUT/gpu.txt")"
    echo
    cat "$OUT/check.txt"
    echo
    ./servesim calib report "$PROFILE" "${MEAS[@]}"
} >"$OUT/report.txt" || fail "'servesim calib report' failed"
cat "$OUT/report.txt"
step "done: $PROFILE and $OUT/report.txt"
echo "commit them as models/profiles/$TAG-measured.json and models/profiles/$TAG-measured-report.txt"
