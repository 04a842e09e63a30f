#!/usr/bin/env bash
# Session 22 call 4: the final build's CUDA parity (the int8 chain's bit-identity incl. llama-8b, whose gate/up blocks take two units each; the token graph against the CPU; the attention kernel against the exact softmax) gate_up_q8's grid on llama-8b (ncu launch statistics); on llama-1b q4_0, ncu's time of the gate/up and matvec kernels with the chain off and with the glu link alone (which lost 3 % in call 2).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 400 ./gpu_parity --test-threads 1 --nocapture cuda_int8_chain cuda_attention_matches token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result|^test " $OUT/parity.log | head -60
wait
echo "parity done at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:"gate_up_q8|matvec_img" --launch-skip 64 --launch-count 2 --section LaunchStats ./cortiq bench -m $M/llama-8b-q4_0.gguf -p 16 -n 8 -r 1 --backend cuda > $OUT/ncu-grid.txt 2>&1
echo "ncu exit $?"; grep -E "^  [a-z_0-9]+|Grid Size|Block Size|Registers Per|Waves Per" $OUT/ncu-grid.txt | head -20
for chain in 0 glu; do
  CMF_CUDA_INT8_CHAIN=$chain CMF_GPU=cuda timeout 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:"gate_up|matvec" --launch-skip 200 --launch-count 40 --metrics gpu__time_duration.sum ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda > $OUT/ncu-1b-chain-$chain.txt 2>&1
  echo "ncu 1b chain $chain exit $?"; grep -E "^  [a-z_0-9]+ \(|gpu__time_duration" $OUT/ncu-1b-chain-$chain.txt | paste - - | awk '{print $1, $(NF)}' | sort | uniq -c | head; grep -E "^  [a-z_0-9]+ \(|gpu__time_duration" $OUT/ncu-1b-chain-$chain.txt | paste - - | awk '{s[$1]+=$(NF); n[$1]++} END {for (k in s) print k, n[k], s[k]/n[k]}'
done
echo "done at $((SECONDS-start)) s"
