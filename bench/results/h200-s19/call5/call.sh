#!/usr/bin/env bash
# Session 19 call 5: the real default model (SmolLM2-135M-Instruct Q4_1, the file of shared/reference/) on the H200 with this session's build, whose wgpu token graph now takes int8 activations with QKV folded into the attention split: tests/reference.rs under CMF_GPU=wgpu (greedy tokens against llama.cpp's, the device's logits against the CPU path's and the CPU's own one-ulp floor), `cortiq run`, then tg128 greedy and sampled, int8 graph (default) against the f32 graph, alternating.
set -u
cd "$(dirname "$0")/.."
cat /tmp/cq/smol.part1 gpuab-p2/smol.part2 > /tmp/cq/smol.gguf
sha256sum /tmp/cq/smol.gguf   # b179c952...db53: the file of shared/reference/README.md
gunzip -c gpuab-p2/reference.gz > /tmp/cq/reference; chmod +x /tmp/cq/reference
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1 CORTIQ_TEST_MODEL=/tmp/cq/smol.gguf CORTIQ_REFERENCE_DIR=$PWD/gpuab-p2/reference CORTIQ_HOME=/tmp/cq/home
start=$SECONDS
CMF_GPU=wgpu timeout 150 /tmp/cq/reference --test-threads 1 --nocapture --exact greedy_tokens_follow_llama_cpp_up_to_near_ties > $OUT/reference-wgpu.log 2>&1; echo "exit $?" >> $OUT/reference-wgpu.log
grep -E "^test |exit|panicked|agree|floor|within|one ulp" $OUT/reference-wgpu.log | head -20
{ echo "== cortiq run, wgpu"; CMF_GPU=wgpu timeout 60 /tmp/cq/cortiq run -m /tmp/cq/smol.gguf "Why is the sky blue?" -n 64 2>&1 | tail -4
  echo "== explain, wgpu"; CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 /tmp/cq/cortiq bench -m /tmp/cq/smol.gguf -p 512 -n 128 -r 1 --backend wgpu --explain 2>&1 | grep -E "tg128|token graph|int8|stage" | head; } > $OUT/real-wgpu.txt 2>&1
cat $OUT/real-wgpu.txt
for args in "" "--sample"; do
  for round in 1 2; do
    for v in 1 0; do
      r=$(CMF_WGPU_INT8=$v CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 120 /tmp/cq/cortiq bench -m /tmp/cq/smol.gguf -p 512 -n 128 -r 1 --backend wgpu $args 2>&1 | grep -E "^\| .*tg128" | awk -F'|' '{print $(NF-1)}')
      echo "real smollm2 q4_1 ${args:-greedy} round $round CMF_WGPU_INT8=$v tg128 $r" | tee -a $OUT/ab-real.txt
    done
  done
done
echo "done at $((SECONDS-start)) s"
