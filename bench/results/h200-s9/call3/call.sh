#!/usr/bin/env bash
# Session 9 call 3: CUDA split attention issuing the loads of older mirror rows before the PDL wait (new) vs without (base, b898132): parity, A/B; then the tables of record (gpu-all.sh, CUDA at 4350 GB/s and wgpu at 3800) with the faster binary.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-base.gz > ./cortiq-base; gunzip -c gpuab/cortiq-new.gz > ./cortiq-new; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq-base cortiq-new gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq-new synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_attention token_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
grep -E "^test |parity exit|panicked|test result|graph vs CPU|attention .* relative" $OUT/parity.log | head -40
BINS="./cortiq-base ./cortiq-new" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=150 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
cat $OUT/ab/ab.md
win=$(python3 - $OUT/ab/ab-runs.txt <<'PY'
import sys, collections
s = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) == 5: s[(f[0], f[1])].append(float(f[4]))
shapes = {k[0] for k in s}
ratio = [sum(s[(sh, './cortiq-new')]) / sum(s[(sh, './cortiq-base')]) for sh in shapes if s[(sh, './cortiq-new')] and s[(sh, './cortiq-base')]]
print('new' if ratio and sum(ratio) / len(ratio) > 1.0 else 'base')
PY
)
echo "table binary: cortiq-$win" | tee $OUT/table-binary.txt
grep -q "parity exit 0" $OUT/parity.log || { echo "parity failed: table with base"; win=base; }
CORTIQ_BIN=./cortiq-$win BACKENDS=cuda REPS=2 BANDWIDTH=4350 timeout 170 bash bench/gpu-all.sh $OUT/table-cuda > $OUT/gpu-all-cuda.log 2>&1; cat $OUT/table-cuda/bench.md
CORTIQ_BIN=./cortiq-$win BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout 170 bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
