#!/usr/bin/env bash
# Session 8 call 1: where the wgpu token's time goes: dispatch floor, kernel table, per-kind decode profile, matvec shape sweep.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
timeout 150 ./cortiq gpu --kernels --bandwidth 3800 > $OUT/kernels.md 2>/dev/null
wait
tg() { CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$1-q4_0.gguf -p 16 -n 64 -r 1 --backend wgpu --json 2>/dev/null | python3 -c "import json,sys; r={x['test']:x for x in json.load(sys.stdin)['results']}; print(round(r['tg64']['tokens_per_s'],1))"; }
for s in llama-1b llama-8b smollm2-135m; do for sh in default 32x4 32x16 64x8 128x8 256x8 128x4 256x16; do if [ $sh = default ]; then v=$(tg $s); else v=$(CMF_WGPU_MATVEC=$sh tg $s); fi; echo "$s $sh $v" >> $OUT/sweep.txt; done; done
for s in smollm2-135m llama-1b llama-8b; do for hp in 1 2; do echo "# $s HOSTPROF=$hp" >> $OUT/profile.txt; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=$hp CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$s-q4_0.gguf -p 16 -n 64 -r 1 --backend wgpu --explain >> $OUT/profile.txt 2>&1; done; done
head -5 $OUT/kernels.md | tail -3; cat $OUT/sweep.txt; grep -E "tg64|per token|graph" $OUT/profile.txt | head -40
