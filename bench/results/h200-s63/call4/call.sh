#!/usr/bin/env bash
# Session 63, call 4: the tensor-core prompt attention for head size 256 (flash_rows_h256:
# 8 warps, two a 16-row group, each scoring S in full and holding half of O) and with
# sliding windows (every flash_rows_h* takes the window; a row that has seen nothing yet
# rescales by 1). gpuab/: cortiq.gz and gpu_parity.gz with it, cortiq-base.gz = main
# (6c6e819: FP32 tiles of 8 warps for Gemma's prompt). Everything lands in $OUT/out.tgz.
# 1. cuda_attention_matches_an_exact_softmax (flash at 256, windowed cases on both paths,
#    the FP32 tiles again via without_flash), the f16 guard test, the Gemma token test,
#    the prefill-chunk test.
# 2. A/B pp512 on cuda, three rounds: Gemma 3 (prediction from call 3's ncu: attention 195 ->
#    ~30 us a layer, the chunk 6.2 -> ~3.3 ms: 83 k -> ~150 k tok/s) and llama-1b q4_0 (its
#    64-wide flash kernel gains the window's compare only: within the spread).
# 3. ncu over one Gemma bench again (the kernels' new split).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call4; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
(CMF_GPU=cuda timeout 300 ./cortiq-base gpu > $W/base-gpu.txt 2>&1 &)
timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax cuda_prefill_past_f16_range_follows_the_cpu_path > $W/attention.log 2>&1
echo "== attention + guard rc $? at $((SECONDS-start)) s"; grep -E "x 256|window|^ok|FAILED|test result|panicked" $W/attention.log | cut -c1-250 | tail -40
tar czf $OUT/out.tgz -C $W .
timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma.log 2>&1
echo "== gemma rc $? at $((SECONDS-start)) s"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma.log | cut -c1-400 | tail -6
timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact prefill_graph_chunks_match_the_cpu_prefill > $W/prefill.log 2>&1
echo "== prefill chunks rc $? at $((SECONDS-start)) s"; grep -E "cuda|test result|panicked" $W/prefill.log | cut -c1-300 | tail -14
tar czf $OUT/out.tgz -C $W .
wait
BINS="./cortiq ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=32 REPS=2 ROUNDS=3 MODELS_DIR=$M DEADLINE=$((450-(SECONDS-start))) bash bench/ab.sh $W/ab gemma3-270m:q4_0 llama-1b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout $((570-(SECONDS-start))) ncu --metrics gpu__time_duration.sum --csv ./cortiq bench -m $M/gemma3-270m-q4_0.gguf -p 512 -n 2 -r 1 --backend cuda > $W/ncu.csv 2>$W/ncu.err
gzip $W/ncu.csv; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
