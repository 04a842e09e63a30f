#!/usr/bin/env bash
# Session 12 call 1 (branch s11-cublas-probe rebased on main 2446d65): (1) issue #8's prefill question: cortiq's int8 mma GEMM vs cuBLAS f16 GEMM behind a dequant step on llama-8b's shapes; (2) wgpu device-prefix parity with the int8 prompt default; (3) bench --sample beside greedy (CUDA, wgpu); (4) bench/anatomy.sh on CUDA; (5) on wgpu as time allows.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
lib=$(find /usr /opt $(python3 -c "import sysconfig;print(sysconfig.get_paths()['purelib'])") -name 'libcublas.so.1*' 2>/dev/null | head -1)
echo "cublas: $lib" | tee $OUT/cublas-path.txt
[ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname $lib):$LD_LIBRARY_PATH
start=$SECONDS
( timeout 170 ./gpu_parity --test-threads 1 --nocapture cuda_prefill_gemm_probe > $OUT/probe.log 2>&1; echo "exit $?" >> $OUT/probe.log )
grep -E "GEMM|exit|panicked|SKIP|test result" $OUT/probe.log | head -30
( timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_device_prefix > $OUT/prefix.log 2>&1; echo "exit $?" >> $OUT/prefix.log )
grep -E "^test |exit|panicked|test result" $OUT/prefix.log | head
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
echo "synth done at $((SECONDS-start)) s"
for be in cuda wgpu; do for m in smollm2-135m-q4_0 llama-1b-q4_0; do for s in "" --sample; do
  CMF_GPU=$be timeout 60 ./cortiq bench -m $M/$m.gguf -p 512 -n 128 -r 2 --backend $be $s 2>&1 | grep -E "tg128|pp512" | sed "s/^/$be $m $s: /" | tee -a $OUT/sample.txt
done; done; done
echo "sample done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKEND=cuda timeout $((520-(SECONDS-start))) bash bench/anatomy.sh $OUT/anatomy-cuda > /dev/null 2>&1
cat $OUT/anatomy-cuda/anatomy.md 2>/dev/null || cat $OUT/anatomy-cuda/anatomy.tsv
echo "anatomy cuda done at $((SECONDS-start)) s"
left=$((570-(SECONDS-start)))
[ $left -gt 40 ] && { CORTIQ_BIN=./cortiq BACKEND=wgpu timeout $left bash bench/anatomy.sh $OUT/anatomy-wgpu smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null 2>&1; cat $OUT/anatomy-wgpu/anatomy.md 2>/dev/null || cat $OUT/anatomy-wgpu/anatomy.tsv; }
