#!/usr/bin/env bash
# Session 43, call 2: call 1's f16 mirror lost 2.4-4.2 % (converting each K / V load at the
# load, so a load issued before the PDL wait or beside others was waited for at once). Now
# the kernels keep K / V raw (uint2) in registers and convert at use. A/B against
# cortiq-main (14e30dc) after -p 512 and -p 4096; then the int8-chain test that failed in
# call 1 (attn,glu on tiny q4_0 differed at step 5): twice on this build and once on main's
# (gpu_parity-main), to tell a change from a flake.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
mkdir -p $OUT/ab
for p in 512 4096; do
  BINS="./cortiq-main ./cortiq" BACKEND=cuda PROMPT=$p GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M \
    bash bench/ab.sh $OUT/ab/p$p llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
  cat $OUT/ab/p$p/ab.md
done
echo "ab done at $((SECONDS-start)) s"
for b in gpu_parity gpu_parity gpu_parity-main; do
  timeout 100 ./$b --test-threads 1 --nocapture cuda_int8_chain_gives_the_logits_of_the_graph_without_it > $OUT/int8-$b.log 2>&1; echo "rc $?" >> $OUT/int8-$b.log
  echo "== $b"; grep -E "int8 chain|^rc|panicked" $OUT/int8-$b.log | head -14
done
(cd $OUT && tar czf ab.tgz ab int8-*.log && rm -rf ab int8-*.log)
echo "end at $((SECONDS-start)) s"
