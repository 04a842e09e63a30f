#!/usr/bin/env bash
# Session 30, call 3: A/B of base, a2 = y-ahead + merge-pos, a5 = a2 + image-loads-together,
# a4 = a5 + nw-with-x; parity of a5, then README's table with the binary whose tg128
# geometric mean over base is highest.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-base cortiq-a2 cortiq-a5 cortiq-a4 gpu_parity-a5; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0; do
  ./cortiq-base synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
timeout 150 ./gpu_parity-a5 --test-threads 1 --nocapture token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it cuda_attention_matches_an_exact_softmax > $OUT/parity-a5.log 2>&1
echo "parity a5 rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-a5.log)"; grep -E "panicked|FAILED|^cuda .*graph vs CPU" $OUT/parity-a5.log | head
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq-a2 ./cortiq-a5 ./cortiq-a4" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((380-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
best=$(python3 - $OUT/ab/ab-runs.txt <<'PY'
import sys, math, collections
tg = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5: continue
    s, b, r, pp, t = f; tg[(s, b)].append(float(t))
shapes = sorted({s for s, _ in tg}); bins = sorted({b for _, b in tg})
score = {}
for b in bins:
    logs = [math.log(max(tg[(s, b)]) / max(tg[(s, './cortiq-base')])) for s in shapes if (s, b) in tg and (s, './cortiq-base') in tg]
    score[b] = sum(logs) / len(logs) if logs else -1
    print(f"{b} geomean tg ratio {math.exp(score[b]):.4f}", file=sys.stderr)
print(max(score, key=score.get))
PY
)
echo "best: $best at $((SECONDS-start)) s"
CORTIQ_BIN=$best BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((520-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda
cat $OUT/table-cuda/bench.md; echo "table by $best" > $OUT/table-cuda/binary.txt
(cd $OUT && tar czf table.tgz table-cuda && rm -rf table-cuda)
echo "end at $((SECONDS-start)) s"
