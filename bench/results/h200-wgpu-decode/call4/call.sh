#!/usr/bin/env bash
# Session 8 call 4: parity of the norm-in-loop matvec and the 256-invocation split attention; A/B of the GPU pass against the base; unroll sweep.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq-n; gunzip -c gpuab/cortiq-b.gz > ./cortiq-b; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq-n cortiq-b gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-n synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done; wait
pass() { b=$1; shift; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-$b bench -m $M/$1-q4_0.gguf -p 16 -n 256 -r 1 --backend wgpu --explain 2>&1 | grep -E "token graph, per|tg256 " | sed -e 's/.*on the GPU //' -e 's/.*tg256 //' | tr '\n' ' '; }
for r in 1 2; do for s in smollm2-135m llama-1b llama-8b; do for b in b n; do echo "$s $b $(pass $b $s)" >> $OUT/ab.txt; done; done; done
for sh in 32x8x2 32x8x4 128x4x2 64x4x2 128x8x1 128x8x2; do for s in llama-1b llama-8b smollm2-135m; do echo "$s $sh $(CMF_WGPU_MATVEC=$sh pass n $s)" >> $OUT/sweep.txt; done; done
cat $OUT/ab.txt $OUT/sweep.txt
( timeout 240 ./gpu_parity --test-threads 1 --nocapture decode_attention token_graph prefill_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|graph vs CPU|decode attention" $OUT/parity.log | head -40
