#!/usr/bin/env bash
# Session 21 call 1: the matrix-unit GEMM with double stage tiles (CMF_WGPU_COOP_BUFFERS=2: one barrier a stage) and the prompt attention on the matrix units (attn_coop.wgsl, CMF_WGPU_ATTN_SUBGROUPS=4|2, 0 = attn_rows): parity first, then pp512 alternating in one binary, then the 8b chunk profile.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_attention_matches > $OUT/parity-attention.log 2>&1; echo "exit $?" >> $OUT/parity-attention.log
grep -E "SKIP|exit|panicked|NVVM|cortiq:|256 rows|130 rows" $OUT/parity-attention.log | head -12
for b in 2 1; do CMF_WGPU_COOP_BUFFERS=$b timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-b$b.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-b$b.log; echo "== buffers $b"; grep -E "SKIP|exit|panicked|NVVM|cortiq:" $OUT/parity-gemm-b$b.log | head -6; done
timeout 120 ./gpu_parity --test-threads 1 --nocapture prefill_graph_chunks > $OUT/parity-prefill.log 2>&1; echo "exit $?" >> $OUT/parity-prefill.log
grep -E "SKIP|exit|panicked|relative|cortiq:" $OUT/parity-prefill.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_BUFFERS=1,CMF_WGPU_ATTN_SUBGROUPS=0 CMF_WGPU_COOP_BUFFERS=2,CMF_WGPU_ATTN_SUBGROUPS=0 CMF_WGPU_COOP_BUFFERS=1,CMF_WGPU_ATTN_SUBGROUPS=4 CMF_WGPU_COOP_BUFFERS=2,CMF_WGPU_ATTN_SUBGROUPS=4 CMF_WGPU_COOP_BUFFERS=2,CMF_WGPU_ATTN_SUBGROUPS=2" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((470-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
CMF_GRAPH_HOSTPROF=2 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-8b-q4_0.gguf -p 512 -n 4 -r 1 --backend wgpu --explain > $OUT/profile-8b.txt 2>&1; grep -E "pp512|per prefill chunk" $OUT/profile-8b.txt | head -12
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
