#!/usr/bin/env bash
# Session 21 call 6: the real default model (SmolLM2-135M-Instruct Q4_1, the file of shared/reference/) with the prompt attention on the matrix units: tests/reference.rs under CMF_GPU=wgpu (greedy tokens against llama.cpp's, the device's logits against the CPU path's), a ~400-token prompt's greedy continuation on the CPU, wgpu (attention on matrix units) and wgpu (f32 attention), and pp512 with the attention off / on.
set -u
cd "$(dirname "$0")/.."
cat /tmp/cq/smol.part1 gpuab-p2/smol.part2 > /tmp/cq/smol.gguf
sha256sum /tmp/cq/smol.gguf
gunzip -c gpuab-p2/reference.gz > /tmp/cq/reference; chmod +x /tmp/cq/reference
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1 CORTIQ_TEST_MODEL=/tmp/cq/smol.gguf CORTIQ_REFERENCE_DIR=$PWD/gpuab-p2/reference CORTIQ_HOME=/tmp/cq/home
start=$SECONDS
CMF_GPU=wgpu timeout 150 /tmp/cq/reference --test-threads 1 --nocapture --exact greedy_tokens_follow_llama_cpp_up_to_near_ties > $OUT/reference-wgpu.log 2>&1; echo "exit $?" >> $OUT/reference-wgpu.log
grep -E "^test |exit|panicked|agree|floor|within|one ulp" $OUT/reference-wgpu.log | head -20
P="$(head -c 1800 gpuab-p2/reference/gpl-3.txt) Summarize the license above in one sentence:"
for v in cpu wgpu-units wgpu-f32-attention; do
  case $v in cpu) env="CMF_GPU=cpu";; wgpu-units) env="CMF_GPU=wgpu";; wgpu-f32-attention) env="CMF_GPU=wgpu CMF_WGPU_ATTN_SUBGROUPS=0";; esac
  echo "== $v"; env $env timeout 60 /tmp/cq/cortiq run -m /tmp/cq/smol.gguf --temp 0 "$P" -n 40 2>/dev/null | tail -c 400; echo
done > $OUT/long-prompt.txt 2>&1
cat $OUT/long-prompt.txt
for round in 1 2; do for v in 0 4; do r=$(CMF_WGPU_ATTN_SUBGROUPS=$v CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 /tmp/cq/cortiq bench -m /tmp/cq/smol.gguf -p 512 -n 16 -r 1 --backend wgpu 2>&1 | grep -E "^\| .*pp512" | awk -F'|' '{print $(NF-1)}'); echo "real smollm2 q4_1 round $round CMF_WGPU_ATTN_SUBGROUPS=$v pp512 $r" | tee -a $OUT/ab-real.txt; done; done
echo "done at $((SECONDS-start)) s"
