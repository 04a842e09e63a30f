#!/usr/bin/env bash
# Session 60's second call. Carries .gl/ and gpuab/ (each `cargo build --release --features
# gpu,cuda`, stripped and gzipped): cortiq.gz = this session's build (Gemma's q/k norms, RoPE
# and mirror append in one dispatch, norm_rope.wgsl; synthesized norms 1 + N(0, 0.1)),
# cortiq-c81957f.gz (before the fusion: q norm, k norm, rope_store), cortiq-5aee1e8.gz (no
# f16 guard), gpu_parity.gz = this build's. Everything lands in $OUT/out.tgz (the tool
# brings back at most 8 files).
# 1. Gemma 3's token graph test on the GPU (synthesized gemma3-270m, its norms now distinct).
# 2. A/B tg128 after a 512-token prompt, gemma3-270m q4_0 on wgpu, fused against c81957f.
#    Prediction: 36 dispatches fewer a token (2 a layer) at ~5.5 us each of call 1's
#    1.275 ms: +15-20 % (784 -> ~900-930 tok/s).
# 3. The f16 guard's cost split (call 1: pp512 -2.5 % against 5aee1e8 on llama-1b):
#    CMF_GRAPH_HOSTPROF=1's per-chunk split of the prefill graph, each build twice.
# 4. The parity tests over the synthesized shapes whose norms changed (prefill chunks on both
#    backends), as far as the time allows.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call2; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
CORTIQ_REQUIRE_GPU=wgpu timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_gemma3_token_graph_follows_the_cpu_path > $W/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "wgpu .*gemma|test result|panicked|differ" $W/gemma-test.log | cut -c1-400
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-c81957f" BACKEND=wgpu PROMPT=512 GEN=128 REPS=2 ROUNDS=4 MODELS_DIR=$M DEADLINE=90 bash bench/ab.sh $W/ab gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
for round in 1 2; do
  for bin in ./cortiq ./cortiq-5aee1e8; do
    CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 timeout 40 $bin bench -m $M/llama-1b-q4_0.gguf -p 512 -n 16 -r 3 --explain > $W/hostprof-$round-${bin#./}.txt 2>&1
    echo "$bin round $round: $(grep -E 'pp512' $W/hostprof-$round-${bin#./}.txt | tail -1 | cut -c1-120)"
    grep -E "prefill graph, per chunk" $W/hostprof-$round-${bin#./}.txt
  done
done
echo "hostprof at $((SECONDS-start)) s"
CORTIQ_REQUIRE_GPU=cuda timeout $((540 - SECONDS + start)) ./gpu_parity --test-threads 1 --nocapture --exact prefill_graph_chunks_match_the_cpu_prefill token_graph_matches_the_cpu_path > $W/parity.log 2>&1
echo "== parity rc $?"; grep -E "^test |test result|panicked|differ" $W/parity.log | cut -c1-300 | head -20
echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
