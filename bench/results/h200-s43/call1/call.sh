#!/usr/bin/env bash
# Session 43, call 1: the KV mirror in f16 (kv_t in the kernels; the host's KvCache and
# llama.cpp keep K and V in f16, the mirror was f32). Parity first: every CUDA test of
# gpu_parity (the exact-softmax test with K / V rounded to f16 before kernel and reference,
# the token and prefill graphs against the CPU, the cluster path, the fused FFN, the f16
# guard with q past range), then A/B against cortiq-main (14e30dc, the f32 mirror; its
# grouped-attention helpers ran on the H200 for the first time here): tg128 after -p 512 and
# after -p 4096.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 260 ./gpu_parity --test-threads 1 --nocapture cuda token_graph prefill_graph > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity.log | head -30
grep -E "graph vs CPU|cluster|exact softmax|q x 1e6|prefill graph" $OUT/parity.log | grep -v "grouped attention\|cuda attention" | head -30
grep -E "cuda (grouped )?attention" $OUT/parity.log | awk '{print $NF, $0}' | sort -g | tail -3
echo "parity done at $((SECONDS-start)) s"
wait
mkdir -p $OUT/ab
for p in 512 4096; do
  BINS="./cortiq-main ./cortiq" BACKEND=cuda PROMPT=$p GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) MODELS_DIR=$M \
    bash bench/ab.sh $OUT/ab/p$p llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
  cat $OUT/ab/p$p/ab.md
done
(cd $OUT && gzip parity.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
