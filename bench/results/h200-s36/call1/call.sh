#!/usr/bin/env bash
# Session 36, call 1: session 35's next-call.sh as run, with the probe's issue-free trace section
# (`cluster_layer trace`, its first version: cycles a job only) and a stage timeline of the cluster
# kernel (its first StageMarks: issue / slot / inbox / work; the parser has changed since, see
# out/cluster-timeline.md for what it printed). The parity test failed on its old 5e-2 bound.
# Prepared in session 35, NOT run (the device time was spent): the cluster kernel (every layer
# of the token in one 16-block cluster launch, CMF_CUDA_CLUSTER=1). Build the landed code
# (`cargo build --release --features gpu,cuda` and the parity test binary), carry cortiq.gz and
# gpu_parity.gz in gpuab/, copy this to gpuab/call.sh. Its parity against the CPU on smollm2
# q4_0 / q4_1 (short and long prompts, every run fed the CPU's greedy tokens), then the A/B
# against the layer launches (the default), the explain line, and the token-graph parity with
# the cluster on (its smollm2 q4_0 / q4_1 take it; the queued-ahead picks included).
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q4_1
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 120 ./gpu_parity --test-threads 1 --nocapture cuda_cluster_layers_match_the_cpu_path > $OUT/parity.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/parity.log
grep -E "^cuda|panicked|SKIP|^test result|^rc|error" $OUT/parity.log | head -30
wait
echo "parity and synth done at $((SECONDS-start)) s"
timeout 60 ./gpuab/cluster_layer trace > $OUT/probe.md 2>&1; tail -30 $OUT/probe.md
CMF_CUDA_CLUSTER=1 CMF_GPU=cuda CMF_CUDA_DEFINES=CORTIQ_TRACE CMF_PROBE_CACHE=0 CMF_CUDA_TRACE=$OUT/trace.bin timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 16 -r 1 --backend cuda > $OUT/trace-bench.txt 2>&1
python3 bench/cluster_timeline.py $OUT/trace.bin 8 > $OUT/cluster-timeline.md 2>&1; cat $OUT/cluster-timeline.md; gzip -f $OUT/trace.bin
[ $rc -eq 0 ] || { echo "cluster parity failed: no A/B"; exit 0; }
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_CLUSTER=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((200-(SECONDS-start))) \
  MODELS_DIR=$M timeout 90 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 smollm2-135m:q4_1 > /dev/null 2>&1
cat $OUT/ab/ab.md
CMF_CUDA_CLUSTER=1 CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 30 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda --explain > $OUT/explain.txt 2>&1; grep -iE "token graph|tg128" $OUT/explain.txt
CMF_CUDA_CLUSTER=1 timeout 100 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1; echo "rc $?" >> $OUT/parity-graph.log
grep -E "^cuda .*graph vs CPU|panicked|^test result|^rc" $OUT/parity-graph.log | head -20
echo "end at $((SECONDS-start)) s"
