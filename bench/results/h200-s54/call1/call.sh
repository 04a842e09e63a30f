#!/usr/bin/env bash
# Session 54, call 1: session 53's IQ4_XS-on-CUDA patch (as Q8_0, kind 2, each block's scale
# rounded to f16), applied to main (6722131) with the Q3_K transcode (now through
# codec::q3_k_stored_scales) not yet rerun on a GPU since that change.
# 1. gpu_parity: the matmul harness (IQ4_XS against the CPU's int8 kernel at REL_F16) and the
#    token / prefill graph test (tiny q3_k, iq4_nl, iq4_xs among its shapes). Prediction: pass;
#    the harness 105 codec/shape cases (100 before + IQ4_XS's 5). The token graph test now
#    runs 128 teacher-forced steps and requires every greedy pick off the CPU's to be a near-tie.
#    q8_row (cortiq's own codec) now uploads as Q8_0 too, its f32 row scale rounded to f16:
#    the harness's q8_row shapes run instead of declining (prediction: 105 + 10 = 115 cases).
# 2. llama-1b tg128 after -p 512: iq4_xs at q8_0's speed (the same kind 2 bytes), q3_k at
#    q6_k's (1703 / 1710 on the H100 in session 53); llama-1b q8_0 converted to q8_row (CMF)
#    through the token graph at q8_0's speed too (before: CPU, op by op).
# Meanwhile README's table models are synthesized for call 2 (kept on the warm machine).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
specs="llama-1b:iq4_xs llama-1b:q8_0 llama-1b:q3_k llama-1b:q6_k"
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
. bench/device-start.sh $specs $table
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 420 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|iq4_xs|q3_k" $OUT/parity.log | cut -c1-260
for s in $specs; do
  c=${s##*:}
  while [ ! -f $M/llama-1b-$c.gguf ]; do sleep 2; done
  CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/llama-1b-$c.gguf -p 512 -n 128 -r 2 --bandwidth $bw > $OUT/bench-$c.txt 2>&1
  echo "== $c rc $? at $((SECONDS-start)) s"; grep -E "\| (pp|tg)|graph|weight bytes" $OUT/bench-$c.txt | head -6
done
./cortiq convert $M/llama-1b-q8_0.gguf $M/llama-1b-q8_row.cmf --codec q8_row > /dev/null 2>&1
CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/llama-1b-q8_row.cmf -p 512 -n 128 -r 2 --bandwidth $bw --explain > $OUT/bench-q8_row.txt 2>&1
echo "== q8_row rc $? at $((SECONDS-start)) s"; grep -E "\| (pp|tg)|graph|weight bytes|declin" $OUT/bench-q8_row.txt | head -8
tar czf $OUT/bench.tgz -C $OUT $(cd $OUT && ls bench-*.txt) && rm $OUT/bench-*.txt
gzip $OUT/parity.log
ls $M
echo "end at $((SECONDS-start)) s"
