#!/usr/bin/env bash
# Session 55, call 4: on the H200 that call 3 found warm (1db1a85's cortiq), README's table
# rows re-read with this session's build by `cortiq bench` directly (tg128 after -p 512, two
# repetitions, as bench/gpu-all.sh runs it; the whole script did not fit the device time left).
# Run as one command line, written out here.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0; wait
for s in smollm2-135m-q4_0 llama-1b-q4_0 llama-1b-q8_0; do
  CMF_GPU=cuda timeout 40 ./cortiq bench -m $M/$s.gguf -p 512 -n 128 -r 2 --bandwidth 4350 > $OUT/bench-$s.txt 2>&1
  echo "== $s rc $? at $((SECONDS-start)) s"; grep -E "\| (pp|tg)" $OUT/bench-$s.txt
done
