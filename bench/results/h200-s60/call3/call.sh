#!/usr/bin/env bash
# Session 60's third call. Carries .gl/ and gpuab/ (`cargo build --release --features
# gpu,cuda`, stripped and gzipped): cortiq.gz and gpu_parity.gz = df75bc2 (call 2's build with
# the synthesized norms made distinct only in the Gemma block: the layers' input norms are
# 1 again, as the one-ulp noise floor needs), cortiq-5aee1e8.gz (no f16 guard). Everything
# lands in $OUT/out.tgz.
# 1. Gemma 3's token-graph test and the prefill-chunk test (its synthesized Gemma on wgpu,
#    the llama shapes on both backends) on the GPU with this synthesized Gemma.
# 2. The f16 guard's cost again (call 1: -2.5 % pp512 over eight rounds; call 2's two pairs
#    -0.9 % and +2.8 %, per-chunk split unchanged): eight more alternating rounds.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call3; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh llama-1b:q4_0
CORTIQ_REQUIRE_GPU=wgpu timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_gemma3_token_graph_follows_the_cpu_path > $W/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "wgpu .*gemma|test result|panicked|differ" $W/gemma-test.log | cut -c1-400
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-5aee1e8" BACKEND=wgpu PROMPT=512 GEN=16 REPS=3 ROUNDS=8 MODELS_DIR=$M DEADLINE=100 bash bench/ab.sh $W/ab llama-1b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
CORTIQ_REQUIRE_GPU=cuda timeout $((500 - SECONDS + start)) ./gpu_parity --test-threads 1 --nocapture --exact prefill_graph_chunks_match_the_cpu_prefill > $W/prefill.log 2>&1
echo "== prefill rc $?"; grep -E "gemma|test result|panicked|differ" $W/prefill.log | cut -c1-300 | head -20
echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
