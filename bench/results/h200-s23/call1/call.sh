#!/usr/bin/env bash
# Session 23 call 1: the CUDA checks session 22 could not run (the >4096-wide staging path, the int8 chain, the token graph against the CPU) on 0e33d09, then the CUDA table of record (bench/gpu-all.sh, REPS=2).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 240 ./gpu_parity --test-threads 1 --nocapture cuda_graphs_norm_rows_wider cuda_int8_chain token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result|^test |relative|agree" $OUT/parity.log | head -60
wait
echo "parity + synth done at $((SECONDS-start)) s"
CMF_GPU=cuda ./cortiq gpu 2>&1 | grep -i 'chain\|device'
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((580-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
cat $OUT/table-cuda/bench.md
rm -f $OUT/table-cuda/*.log
echo "done at $((SECONDS-start)) s"
