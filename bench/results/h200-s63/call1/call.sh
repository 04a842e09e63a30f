#!/usr/bin/env bash
# Session 63, call 1: session 62's prepared next call. gpuab/: cortiq.gz and gpu_parity.gz
# = main (40dba76, the review mend not yet run on a GPU) + attention-rows-8warps.diff
# (Gemma's FP32 prompt-attention tiles over 8 warps of 4 rows, ATT_ROWS_THREADS = 256 from
# the host); cortiq-base.gz = main. No .gl/. Everything lands in $OUT/out.tgz.
# 1. cuda_attention_matches_an_exact_softmax (a new case: 100 rows of head size 256, four
#    tiles; the first process pays the kernels' compile), the f16 guard test (the mend's
#    f16_guard_tripped), the Gemma token test (its prompts through the prefill graph,
#    windows 24 and 512) and the prefill-chunk test (the mend's launch helpers).
# 2. A/B Gemma 3 pp512 on cuda, three rounds alternating. Prediction (NOTES, session 62):
#    76.6 k -> ~90-100 k tok/s on an H100.
# On an H200 the table's models are synthesized in the background for call 2.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call1; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
case "$gpu" in *H200*) . bench/device-start.sh gemma3-270m:q4_0 $table ;; *) . bench/device-start.sh gemma3-270m:q4_0 ;; esac
(CMF_GPU=cuda timeout 300 ./cortiq-base gpu > $W/base-gpu.txt 2>&1 &)
timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax cuda_prefill_past_f16_range_follows_the_cpu_path > $W/attention.log 2>&1
echo "== attention + guard rc $? at $((SECONDS-start)) s"; grep -E "x 256|^ok|FAILED|test result|panicked" $W/attention.log | cut -c1-250 | tail -12
tar czf $OUT/out.tgz -C $W .
timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma.log 2>&1
echo "== gemma rc $? at $((SECONDS-start)) s"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma.log | cut -c1-400 | tail -6
timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact prefill_graph_chunks_match_the_cpu_prefill > $W/prefill.log 2>&1
echo "== prefill chunks rc $? at $((SECONDS-start)) s"; grep -E "cuda|test result|panicked" $W/prefill.log | cut -c1-300 | tail -12
tar czf $OUT/out.tgz -C $W .
BINS="./cortiq ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=32 REPS=2 ROUNDS=3 MODELS_DIR=$M DEADLINE=$((560-(SECONDS-start))) bash bench/ab.sh $W/ab gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
