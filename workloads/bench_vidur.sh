#!/bin/sh
# bench_vidur.sh VIDUR_DIR -- `make bench`'s side-by-side with Vidur
# (microsoft/vidur): the Azure 2023 conversation trace replayed by both on
# the same model, GPU, parallelism and scheduler (Llama-2-70B, A100, TP 2,
# vLLM's scheduler); prints each one's wall time and the ratio.  Vidur runs
# from its own checkout with its own Python environment; the trace is
# converted to its trace_replay CSV (arrived_at s, num_prefill_tokens,
# num_decode_tokens).
set -e
VIDUR_DIR=$1
HERE=$(cd "$(dirname "$0")/.." && pwd)
TRACE=$HERE/../shared/data/traces/azure_llm_2023/AzureLLMInferenceTrace_conv.csv
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
awk -F, 'NR > 1 { split($1, d, " "); split(d[2], t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3];
         if (NR == 2) s0 = s; printf "%.6f,%d,%d\n", s - s0, $2, $3 }
         BEGIN { print "arrived_at,num_prefill_tokens,num_decode_tokens" }' "$TRACE" > "$TMP/azure_conv_vidur.csv"
now() { date +%s.%N; }
t0=$(now)
(cd "$VIDUR_DIR" && python -m vidur.main \
    --replica_config_device a100 --replica_config_model_name meta-llama/Llama-2-70b-hf \
    --cluster_config_num_replicas 1 --replica_config_tensor_parallel_size 2 --replica_config_num_pipeline_stages 1 \
    --request_generator_config_type trace_replay --trace_request_generator_config_trace_file "$TMP/azure_conv_vidur.csv" \
    --replica_scheduler_config_type vllm --vllm_scheduler_config_batch_size_cap 256 > "$TMP/vidur.log" 2>&1) || { tail -n 20 "$TMP/vidur.log"; exit 1; }
t1=$(now)
"$HERE/servesim" bench --scenario "$HERE/workloads/bench_vidur_llama70b.json"
t2=$(now)
awk -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN { v = t1 - t0; s = t2 - t1;
    printf "vidur side-by-side (Azure conv, Llama-2-70B TP2, A100, vLLM): Vidur %.2f s wall, servesim %.3f s wall (whole process), %.0fx\n", v, s, v / s }'
