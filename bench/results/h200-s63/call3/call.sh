#!/usr/bin/env bash
# Session 63, call 3, the same warm H100: every kernel's time under ncu (caches flushed per
# kernel, launches serialized) over one Gemma 3 bench (a warm-up and one run of pp512 + tg2),
# summed by kernel name here; out/ncu.csv.gz is the raw table.
. bench/device-start.sh gemma3-270m:q4_0 >/dev/null 2>&1; wait; CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 250 ncu --metrics gpu__time_duration.sum --csv ./cortiq bench -m $M/gemma3-270m-q4_0.gguf -p 512 -n 2 -r 1 --backend cuda > $OUT/ncu.csv 2>$OUT/ncu.err
gzip $OUT/ncu.csv
