#!/usr/bin/env bash
# Session 9 call 2: CUDA split attention rewritten (K/V loads first, warp reductions, parallel merge): parity (new exact-softmax test, graphs), then A/B against the base (GPU time per token, tg128 at -p 512); wgpu attn_rows-256 parity on the H200.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-base.gz > ./cortiq-base; gunzip -c gpuab/cortiq-new.gz > ./cortiq-new; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq-base cortiq-new gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-new synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 280 ./gpu_parity --test-threads 1 --nocapture attention_matches token_graph prefill_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
grep -E "^test |parity exit|panicked|test result|graph vs CPU|graph chunks|attention .* relative" $OUT/parity.log | head -80
cpass() { CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-$1 bench -m $M/$2-q4_0.gguf -p 16 -n 256 -r 1 --backend cuda --explain 2>&1 | grep -E "token graph, per|tg256 " | sed -e 's/.*host encode/host/' -e 's/.*tg256 //' | tr '\n' ' '; }
for r in 1 2; do for s in smollm2-135m llama-1b llama-8b; do for b in base new; do echo "$s $b $(cpass $b $s)" >> $OUT/pass.txt; done; done; done
cat $OUT/pass.txt
BINS="./cortiq-base ./cortiq-new" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=200 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
cat $OUT/ab/ab.md
