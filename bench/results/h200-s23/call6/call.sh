#!/usr/bin/env bash
# Session 23 call 6: the grouped merge kernel with its combine (barrier, shared memory) only where more than 16 chunks (cortiq-hy) against call 5's grouped kernel (combining always) and call 4's one-group kernel (cortiq-m16): attention parity, then smollm2 tg128 at -p 512 and -p 2000 alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-hy cortiq-m16 gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
[ -f $M/smollm2-135m-q4_0.gguf ] || ./cortiq synth smollm2-135m --codec q4_0 -o $M/smollm2-135m-q4_0.gguf >/dev/null 2>&1 &
CMF_GPU=cuda ./cortiq gpu > /dev/null 2>&1 &
CMF_GPU=cuda ./cortiq-m16 gpu > /dev/null 2>&1 &
timeout 60 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "exit|panicked|test result|position 16999|position 999" $OUT/parity.log
wait
for p in 512 2000; do
BINS="./cortiq-m16 ./cortiq ./cortiq-hy" BACKEND=cuda PROMPT=$p GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((200-(SECONDS-start))) bash bench/ab.sh $OUT/ab-p$p smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-p$p/ab.md; rm -f $OUT/ab-p$p/ab.log
done
echo "done at $((SECONDS-start)) s"
