#!/usr/bin/env bash
# Session 14 call 2: the real default model (SmolLM2-135M-Instruct Q4_1, llama.cpp's reference file) on the H200: greedy tokens through the CUDA and wgpu token graphs against llama.cpp's (tests/reference.rs, teacher-forced and free-running), `cortiq run` on both, and its bench on both.
set -u
cd "$(dirname "$0")/.."
for b in cortiq reference; do [ -f gpuab/$b.gz ] && { gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; }; done; ls -la cortiq reference /tmp/cq
cat /tmp/cq/smol.part1 gpuab/smol.part2 > /tmp/cq/smol.gguf
sha256sum /tmp/cq/smol.gguf   # b179c952...db53 is the file llama.cpp's references were made with
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1 CORTIQ_TEST_MODEL=/tmp/cq/smol.gguf CORTIQ_REFERENCE_DIR=$PWD/gpuab/reference CORTIQ_HOME=/tmp/cq/home
start=$SECONDS
for b in cuda wgpu; do
  CMF_GPU=$b timeout 150 ./reference --test-threads 1 --nocapture --exact greedy_tokens_follow_llama_cpp_up_to_near_ties > $OUT/reference-$b.log 2>&1; echo "exit $?" >> $OUT/reference-$b.log
  echo "== $b"; grep -E "^test |exit|panicked|agree|differs|ours|llama.cpp:|pos " $OUT/reference-$b.log | head -30
done
for b in cuda wgpu; do
  echo "== cortiq run, $b"; CMF_GPU=$b timeout 60 ./cortiq run -m /tmp/cq/smol.gguf --temp 0 --raw -n 32 "The capital of France is" 2>&1 | tail -3
  CMF_GPU=$b timeout 60 ./cortiq run -m /tmp/cq/smol.gguf "Why is the sky blue?" -n 48 2>&1 | tail -4
done
for b in cuda wgpu; do
  echo "== bench, $b"; CMF_GPU=$b CMF_PROBE_CACHE=0 timeout 120 ./cortiq bench -m /tmp/cq/smol.gguf -p 512 -n 128 -r 3 --backend $b 2>&1 | tail -6
  CMF_GPU=$b CMF_PROBE_CACHE=0 timeout 120 ./cortiq bench -m /tmp/cq/smol.gguf -p 64 -n 128 -r 2 --backend $b --sample 2>&1 | tail -3
done
echo "done at $((SECONDS-start)) s"
