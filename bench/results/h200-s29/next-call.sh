#!/usr/bin/env bash
# Prepared in session 29 for the next one (not run): the A/B of the prepared diffs NOTES.md
# (session 29) predicts. Build five binaries first, locally, from a clean tree at this commit:
#   base:     cargo build --release --features gpu,cuda
#   nwx:      git apply bench/results/h200-s29/nw-with-x.diff, build, git checkout crates
#   image:    git apply bench/results/h200-s29/image-loads-together.diff, build, git checkout crates
#   ringlast: git apply bench/results/h200-s29/ring-last-after-wait.diff, build, git checkout crates
#   all:      git apply bench/results/h200-s29/all.diff, build; also
#             cargo test --release --features gpu,cuda --no-run (the gpu_parity binary it names)
# Strip and gzip them into gpuab/ as cortiq-base.gz, cortiq-nwx.gz, cortiq-image.gz,
# cortiq-ringlast.gz, cortiq-all.gz and gpu_parity.gz (the all build's); copy this to gpuab/call.sh; carry gpuab.
# Then: the all build's parity (its results are meant to be bit-identical to base), the A/B of
# the five binaries, and staged timelines of base and all on smollm2 q4_0.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-base cortiq-nwx cortiq-image cortiq-ringlast cortiq-all gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do
  ./cortiq-base synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
timeout 150 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it cuda_attention_matches_an_exact_softmax > $OUT/parity-all.log 2>&1
echo "parity (all four) rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-all.log)"; grep -E "panicked|FAILED|^cuda .*graph vs CPU" $OUT/parity-all.log | head
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq-nwx ./cortiq-image ./cortiq-ringlast ./cortiq-all" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((500-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
for b in base all; do
  CORTIQ_BIN=./cortiq-$b DEFINES=CORTIQ_TRACE_STAGED MODELS_DIR=$M GEN=8 timeout 40 bash bench/timeline.sh $OUT/timeline-staged-$b smollm2-135m:q4_0 | grep -E "^## |^\| (qkv|merge|o|gate_up|down) "
  rm -f $OUT/timeline-staged-$b/*.gz $OUT/timeline-staged-$b/*.bin
done
(cd $OUT && tar czf timelines.tgz timeline-* && rm -rf timeline-*)
echo "end at $((SECONDS-start)) s"
