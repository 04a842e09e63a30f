#!/usr/bin/env bash
# Session 36, call 4: the cluster kernel with its big device functions not inlined (the
# kernel's code 154 -> 73 KB) and its layer table in shared memory: parity, stage timeline,
# tg128 cluster vs launches.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q4_1
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 100 ./gpu_parity --test-threads 1 --nocapture cuda_cluster_layers_match_the_cpu_path > $OUT/parity.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/parity.log
grep -E "^cuda|panicked|SKIP|^test result|^rc|error" $OUT/parity.log | head -40
wait
echo "parity and synth done at $((SECONDS-start)) s"
CMF_CUDA_CLUSTER=1 CMF_GPU=cuda CMF_CUDA_DEFINES=CORTIQ_TRACE CMF_PROBE_CACHE=0 CMF_CUDA_TRACE=$OUT/trace.bin timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 16 -r 1 --backend cuda > $OUT/trace-bench.txt 2>&1
python3 bench/cluster_timeline.py $OUT/trace.bin 8 > $OUT/cluster-timeline.md 2>&1; cat $OUT/cluster-timeline.md; gzip -f $OUT/trace.bin
for v in none cluster; do
  [ $v = none ] && e=CMF_NONE=1 || e=CMF_CUDA_CLUSTER=1
  for m in q4_0 q4_1; do
    env $e CMF_GPU=cuda timeout 40 ./cortiq bench -m $M/smollm2-135m-$m.gguf -p 512 -n 128 -r 2 --backend cuda > $OUT/bench-$v-$m.txt 2>&1; echo "$e $m: $(grep -E 'tg128' $OUT/bench-$v-$m.txt | tail -1)"
  done
done
echo "benches done at $((SECONDS-start)) s"
echo "end at $((SECONDS-start)) s"
