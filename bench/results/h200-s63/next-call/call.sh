#!/usr/bin/env bash
# Prepared in session 63, never run (the device budget went on refused starts): the
# tensor-core prompt attention with V stored as rows and its B fragments read by
# ldmatrix.x2.trans, instead of V transposed by 16-bit stores (lanes 320 bytes apart: 16-way
# bank conflicts, 32 such stores a thread a key chunk at head size 256). `git apply
# bench/results/h200-s63/next-call/flash-ldmatrix-v.diff` on main; NVRTC 13.0 compiles it
# (registers h64 130 -> 128, h128 244 -> 238, h256 254 -> 255, flash_window_h256 8 bytes of
# stack). gpuab/: cortiq.gz and gpu_parity.gz with it, cortiq-base.gz = main. No .gl/.
# 1. cuda_attention_matches_an_exact_softmax (a wrong fragment mapping fails every case at
#    64, 128 and 256 on the tensor cores; the FP32 tiles pass either way), the Gemma token
#    test.
# 2. A/B pp512, two rounds: Gemma 3 (ncu in session 63: flash_*_h256 93-108 us a layer,
#    ~6 us a key chunk against ~1.5 us of mma; prediction if the stores are a third of it:
#    pp512 123 k -> ~135 k), llama-1b and llama-8b q4_0 (within 2 %).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/nextcall; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0 llama-8b:q4_0
(CMF_GPU=cuda timeout 300 ./cortiq-base gpu > $W/base-gpu.txt 2>&1 &)
timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax > $W/attention.log 2>&1
echo "== attention rc $? at $((SECONDS-start)) s"; grep -E "^cuda attention .*(x 256|window)|FAILED|test result|panicked" $W/attention.log | cut -c1-250 | tail -12
timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma.log 2>&1
echo "== gemma rc $? at $((SECONDS-start)) s"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma.log | cut -c1-400 | tail -6
tar czf $OUT/out.tgz -C $W .
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=32 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((450-(SECONDS-start))) bash bench/ab.sh $W/ab gemma3-270m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
