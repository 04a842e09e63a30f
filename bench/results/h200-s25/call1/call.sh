#!/usr/bin/env bash
# Session 25 call 1: the whole parity harness one test at a time (wgpu SKIPs: this machine's Vulkan ICD does not come up), then decode at the bench's context (prompt + gen + 1) against `cortiq run`'s default 4096 and 8192 (`bench -c`).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 330 ./gpu_parity --test-threads 1 --nocapture > $OUT/parity.log 2>&1
echo "parity rc $? at $((SECONDS-start)) s"
grep -E "^test |test result|SKIP|panicked|SIGSEGV" $OUT/parity.log | sort | uniq -c | sort -rn | head -60
wait
for round in 1 2; do
  for s in smollm2-135m llama-1b llama-8b; do
    for c in 641 4096 8192; do
      [ $((SECONDS-start)) -lt 540 ] || continue
      r=$(CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 120 ./cortiq bench -m $M/$s-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda --json -c $c 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results']; print(round(r[0]['tokens_per_s'],1), round(r[1]['tokens_per_s'],1))")
      echo "$s c$c round $round: pp512 / tg128 $r" | tee -a $OUT/ctx.txt
    done
  done
done
echo "done at $((SECONDS-start)) s"
