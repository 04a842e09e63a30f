#!/usr/bin/env bash
# Session 62's third call, same binaries as calls 1-2, a fresh machine. Everything lands in
# $OUT/out.tgz. The parity tests call 2's time limit cut: token_graph_matches_the_cpu_path
# on the shapes after smollm2 q4_1 (llama-1b's K-quant shapes left out for time), then
# weights_upload_once_and_unsupported_codecs_decline_untouched.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call3; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh
CORTIQ_PARITY_SHAPES=llama-1b:q4_0,tiny:q4_k,tiny:q4_k_m,tiny:q6_k,smollm2-135m:q4_k_m,tiny:q5_k_m,tiny:q3_k,tiny:iq4_nl,tiny:iq4_xs,tiny:bf16,tiny:q5_1,smollm2-135m:q5_k_m \
  timeout 280 ./gpu_parity --test-threads 1 --nocapture --exact token_graph_matches_the_cpu_path > $W/token-graph.log 2>&1
echo "== token graph rc $?"; grep -E "graph vs CPU|argmax same: false|test result|panicked" $W/token-graph.log | cut -c1-200 | tail -30
tar czf $OUT/out.tgz -C $W .
timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact weights_upload_once_and_unsupported_codecs_decline_untouched > $W/upload.log 2>&1
echo "== upload rc $?"; grep -E "^ok|FAILED|test result|panicked" $W/upload.log | cut -c1-300 | tail -6
echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
