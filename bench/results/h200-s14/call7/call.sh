#!/usr/bin/env bash
# Session 14 call 7: the real default model (SmolLM2-135M-Instruct Q4_1, the file of shared/reference/) on the H200 with this session's final build: tests/reference.rs under CMF_GPU=cuda and =wgpu (greedy tokens against llama.cpp's, the device's logits against the CPU path's and the CPU's own one-ulp floor), `cortiq run` sampled on both, bench greedy and --sample on both.
set -u
cd "$(dirname "$0")/.."
cat /tmp/cq/smol.part1 gpuab/smol.part2 > /tmp/cq/smol.gguf
sha256sum /tmp/cq/smol.gguf   # b179c952...db53: the file of shared/reference/README.md
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1 CORTIQ_TEST_MODEL=/tmp/cq/smol.gguf CORTIQ_REFERENCE_DIR=$PWD/gpuab/reference CORTIQ_HOME=/tmp/cq/home
start=$SECONDS
for b in cuda wgpu; do
  CMF_GPU=$b timeout 150 /tmp/cq/reference --test-threads 1 --nocapture --exact greedy_tokens_follow_llama_cpp_up_to_near_ties > $OUT/reference-$b.log 2>&1; echo "exit $?" >> $OUT/reference-$b.log
  echo "== $b"; grep -E "^test |exit|panicked|agree|floor|within|one ulp" $OUT/reference-$b.log | head -20
done
for b in cuda wgpu; do
  { echo "== cortiq run, $b"; CMF_GPU=$b timeout 60 /tmp/cq/cortiq run -m /tmp/cq/smol.gguf "Why is the sky blue?" -n 64 2>&1 | tail -4
    echo "== bench, $b"; CMF_GPU=$b CMF_PROBE_CACHE=0 timeout 120 /tmp/cq/cortiq bench -m /tmp/cq/smol.gguf -p 512 -n 128 -r 3 --backend $b 2>&1 | grep -E "pp512|tg128"
    CMF_GPU=$b CMF_PROBE_CACHE=0 timeout 120 /tmp/cq/cortiq bench -m /tmp/cq/smol.gguf -p 64 -n 128 -r 3 --backend $b --sample 2>&1 | grep -E "tg128"; } > $OUT/real-$b.txt 2>&1
  cat $OUT/real-$b.txt
done
echo "done at $((SECONDS-start)) s"
