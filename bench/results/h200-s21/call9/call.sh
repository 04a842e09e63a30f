#!/usr/bin/env bash
# Session 21 call 9: where a prompt chunk's time goes with the landed defaults (CMF_GRAPH_HOSTPROF=2: GPU time per kind of dispatch, timestamps around each), llama-8b and llama-1b q4_0, pp512.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "synth done at $((SECONDS-start)) s"
for m in llama-8b llama-1b; do CMF_GRAPH_HOSTPROF=2 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$m-q4_0.gguf -p 512 -n 4 -r 1 --backend wgpu --explain > $OUT/profile-$m.txt 2>&1; echo "== $m"; grep -E "pp512|per prefill chunk" $OUT/profile-$m.txt | head -14; done
echo "done at $((SECONDS-start)) s"
