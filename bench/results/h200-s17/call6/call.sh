#!/usr/bin/env bash
# Session 17 call 6: this session's final build: wgpu parity of the test hooks and top-k kernels as restructured in review (shared bound and rank helpers; hooks through validated / submit_pass), then the wgpu token's GPU time per kind of dispatch (CMF_GRAPH_HOSTPROF=2, timestamps around every dispatch: relative sizes only) at the table's context, to split attention's 12-14 us a layer between the split and the combine.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_top_k wgpu_draws wgpu_argmax wgpu_attention wgpu_quantizer sampled_tokens_drawn_ahead > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^wgpu|^cuda|exit|panicked|test result|cases" $OUT/parity.log | head -24
wait
echo "parity done at $((SECONDS-start)) s"
for s in smollm2-135m llama-1b; do
  echo "# $s" >> $OUT/profile.txt
  CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=2 CMF_PROBE_CACHE=0 timeout 90 ./cortiq bench -m $M/$s-q4_0.gguf -p 512 -n 64 -r 1 --backend wgpu --explain >> $OUT/profile.txt 2>&1
done
grep -vE "^\s*$" $OUT/profile.txt | head -80
echo "done at $((SECONDS-start)) s"
