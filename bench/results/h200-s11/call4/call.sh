#!/usr/bin/env bash
# Session 11 call 4: the CUDA kernels' PTX cache (first process compiles with NVRTC and writes it, the second reads it): `cortiq gpu` wall time twice from an empty cache; then c25, every ring slot's weight copy issued before the PDL wait (CMF_X_EARLY=1 defines RING_ALL_EARLY: an uncommitted switch, diff early.diff), A/B against the current loop (one slot short before the wait), tg128 at -p 512; then CUDA parity with c25 on (CUDA-only parity build).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity_cuda; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
export CORTIQ_HOME=/tmp/cortiq-home; rm -rf $CORTIQ_HOME
for i in 1 2; do s=$(date +%s%N); CMF_GPU=cuda ./cortiq gpu > $OUT/gpu-$i.txt 2>&1; e=$(date +%s%N); echo "run $i: $(( (e - s) / 1000000 )) ms; $(grep -i 'kernels:' $OUT/gpu-$i.txt)" | tee -a $OUT/ptx-cache.txt; done
ls -la $CORTIQ_HOME/cuda-kernels >> $OUT/ptx-cache.txt
BINS=./cortiq BACKEND=cuda VARIANTS="CMF_X_EARLY=0 CMF_X_EARLY=1" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=220 bash bench/ab.sh $OUT/ab-cuda llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q8_0
cat $OUT/ab-cuda/ab.md
( CMF_X_EARLY=1 timeout 200 ./gpu_parity_cuda --test-threads 1 --nocapture > $OUT/parity-early.log 2>&1; echo "parity exit $?" >> $OUT/parity-early.log )
grep -E "^test |parity exit|panicked|test result|FAIL" $OUT/parity-early.log | head -30
