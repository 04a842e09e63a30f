#!/usr/bin/env bash
# Session 53, call 1, on a182deb's build (Q2_K, Q3_K, IQ4_NL, IQ4_XS read; int8 CPU kernels
# for them; the GPU backends decline them).
# 1. gpu_parity on CUDA: the matmul harness (every codec on odd shapes: the four new ones
#    must decline and leave the output untouched), the upload/decline test, the fused-FFN
#    test with session 52's greedy check. Prediction: all pass.
# 2. The new codecs end to end on CUDA: llama-1b in Q3_K with CMF_GPU=cuda must run (the
#    token graph declines to the CPU, said by --explain), not fail.
# 3. CPU speed on this host's 16 cores, llama-1b pp64 / tg32 per codec (bench/cpu-codecs.sh). Prediction from the
#    bytes a token streams (tg is bandwidth-bound): tg relative to Q4_0 (4.5 bits) about
#    q4_k 1.0, iq4_nl 1.0, iq4_xs 1.06, q3_k 1.3, q2_k 1.6, less where the kernels' extra
#    work (lookups, two dots for Q2_K) shows.
# 4. On an H200 only: README's table (bench/gpu-all.sh) on this build, time permitting.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"; lscpu | grep -E "Model name|^CPU\(s\)|Flags" | sed 's/Flags:.*\(avx_vnni\|avx512_vnni\).*/Flags: ... \1 .../' | cut -c1-120
cpu_specs="llama-1b:q4_0 llama-1b:q4_k llama-1b:iq4_nl llama-1b:iq4_xs llama-1b:q3_k llama-1b:q2_k"
table_specs=""
case "$gpu" in *H200*) table_specs="smollm2-135m:q8_0 smollm2-135m:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0" ;; esac
. bench/device-start.sh $cpu_specs $table_specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 240 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes weights_upload_once_and_unsupported_codecs_decline_untouched cuda_fused_ffn_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|fused FFN vs CPU" $OUT/parity.log
wait; echo "models at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/llama-1b-q3_k.gguf -p 64 -n 16 -r 1 --explain > $OUT/q3k-cuda.txt 2>&1
echo "== q3_k on CMF_GPU=cuda rc $?"; cat $OUT/q3k-cuda.txt | head -40
CORTIQ_BIN=./cortiq MODELS_DIR=$M bash bench/cpu-codecs.sh $OUT/cpu q4_0 q4_k iq4_nl iq4_xs q3_k q2_k 2>&1 | tail -9
left=$((560-(SECONDS-start)))
case "$gpu" in
  *H200*)
    CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $left bash bench/gpu-all.sh $OUT/table $table_specs llama-1b:q4_0 > /dev/null 2>&1
    cat $OUT/table/bench.md; tar czf $OUT/table.tgz -C $OUT table && rm -rf $OUT/table ;;
esac
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
