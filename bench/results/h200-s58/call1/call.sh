#!/usr/bin/env bash
# Session 58, call 1: session 57's prepared call (../../h200-s57/next-call/call.sh) as it was,
# main's build now aa7b3e0's, plus at the end smollm2 q4_0's wgpu token graph split
# (CMF_GRAPH_HOSTPROF=2) for issue 7's next step. Any card, the table on an H200 only. Carries in gpuab/:
#   cortiq-9f44707.gz  9f44707's build (ring prologue unrolled for every kind)
#   cortiq.gz          main's build (its CUDA kernels afc25e9's: unrolled for the K-quant kinds 6 / 7 only, 3e3e6bc)
#   cortiq-ktile.gz    main plus ../../h200-s56/call4/k-tile-only.diff (unrolled for kinds 6 / 7's
#                      tile kernels only, NB > 1; NVRTC 13.0's machine code has no
#                      uniform-register LDGSTS with it either)
#   gpu_parity.gz      the ktile build's gpu_parity (its kind 6 / 7 decode kernels are the
#                      ones not yet run on a GPU)
# each `cargo build --release --features gpu,cuda` (+ `cargo test ... --test gpu_parity
# --no-run`), stripped and gzipped.
# 1. Parity of the ktile build (harness; token graph on tiny q4_k_m / q5_k_m, llama-1b q4_k_m).
# 2. A/B, alternating, tg128 after -p 512: 9f44707 / main / ktile. Prediction: main over
#    9f44707 +2.5 % smollm2 q4_0 (session 56's step at ce22153); ktile
#    over main ~+1-2 % on llama-1b q4_k_m if kinds 6 / 7's decode kernels lose to the unroll
#    as kinds 0 / 2 did.
# Also: whether Vulkan comes up now (the device tool's notes say headless Vulkan ran on these
# machines with the loader carried in .gl/ and NVIDIA's ICD named; session 25 found none): the
# loader unpacked under /tmp/gl for `cortiq gpu` alone, so the CUDA runs see no wgpu adapter.
# 3. README's table by bench/gpu-all.sh on main's build (11 rows, REPS=2).
set -u
cd "$(dirname "$0")/../../../.."
wg() { LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json CMF_GPU=wgpu "$@"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
ls /dev/nvidia* /usr/share/vulkan/icd.d 2>&1 | tr "\n" " "; echo; echo "libvulkan in ldconfig: $(ldconfig -p | grep -c libvulkan)"
mv .gl /tmp/gl-debs  # unpacked for the probe alone (gpu-env.sh would unpack it into / for every run)
h200=0; case "$gpu" in *H200*) h200=1 ;; esac
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
ab="smollm2-135m:q4_0 llama-1b:q4_k_m"
if [ $h200 = 1 ]; then . bench/device-start.sh $table; else . bench/device-start.sh $ab; fi
mkdir -p /tmp/gl; for f in /tmp/gl-debs/*.deb; do dpkg -x $f /tmp/gl; done
(VK_LOADER_DEBUG=error,warn wg timeout 200 ./cortiq gpu > $OUT/wgpu.txt 2>&1 &)
(CMF_GPU=cuda ./cortiq-9f44707 gpu > $OUT/gpu-9f44707.txt 2>&1 &)
(CMF_GPU=cuda ./cortiq gpu > $OUT/gpu-main.txt 2>&1 &)
CMF_GPU=cuda ./cortiq-ktile gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_PARITY_SHAPES=tiny:q4_k_m,tiny:q5_k_m,llama-1b:q4_k_m timeout 150 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test result|panicked|codec/shape|graph vs CPU" $OUT/parity.log | cut -c1-220
gzip $OUT/parity.log
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-9f44707 ./cortiq ./cortiq-ktile" PROMPT=512 GEN=128 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((250-(SECONDS-start))) bash bench/ab.sh $OUT/ab $ab > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab at $((SECONDS-start)) s"
wgprof() { echo "== wgpu smollm2 q4_0 graph split"; CMF_GRAPH_HOSTPROF=2 CMF_PROBE_CACHE=0 wg timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 1 --backend wgpu --explain > $OUT/wgpu-prof.txt 2>&1; grep -E "tg128 |token graph|GPU time|host" $OUT/wgpu-prof.txt | head -30; echo "end at $((SECONDS-start)) s"; }
[ $h200 = 1 ] || { echo "not an H200: no table"; echo "== wgpu"; head -c 1500 $OUT/wgpu.txt; wgprof; exit 0; }
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $((470-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table $table > /dev/null 2>&1
cat $OUT/table/bench.md
tar czf $OUT/table-logs.tgz -C $OUT/table $(cd $OUT/table && ls *.log) && rm $OUT/table/*.log
echo "table at $((SECONDS-start)) s"; echo "== wgpu"; head -c 1500 $OUT/wgpu.txt; wgprof
