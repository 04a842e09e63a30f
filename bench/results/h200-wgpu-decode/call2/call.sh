#!/usr/bin/env bash
# Session 8 call 2: the SM clock while wgpu and CUDA run (is wgpu's slow mode the idle clock?).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,utilization.gpu,power.draw --format=csv,noheader -lms 100 > $OUT/smi.csv 2>&1 &
SMI=$!
mark() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" >> $OUT/marks.txt; }
mark start; nvidia-smi -q -d PERFORMANCE > $OUT/perf-idle.txt 2>&1
for s in llama-1b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null; done
mark synth-done
( sleep 6; nvidia-smi -q -d PERFORMANCE > $OUT/perf-wgpu-decode.txt 2>&1 ) &
mark wgpu-1b-decode; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 16 -n 2048 -r 1 --backend wgpu --explain 2>&1 | grep -E "tg2048|token graph, per" >> $OUT/runs.txt
mark cuda-1b-decode; CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 16 -n 2048 -r 1 --backend cuda 2>&1 | grep -E "tg2048" >> $OUT/runs.txt
mark wgpu-1b-decode-again; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 16 -n 2048 -r 1 --backend wgpu --explain 2>&1 | grep -E "tg2048|token graph, per" >> $OUT/runs.txt
mark kernels; timeout 150 ./cortiq gpu --kernels --bandwidth 3800 > $OUT/kernels.md 2>/dev/null
mark end; sleep 0.3; kill $SMI
cat $OUT/marks.txt $OUT/runs.txt; grep -A12 "Clocks Event Reasons\|Clocks Throttle" $OUT/perf-wgpu-decode.txt | head -30
python3 - $OUT/smi.csv $OUT/marks.txt <<'PY'
import sys
marks=[l.split(None,1) for l in open(sys.argv[2])]
rows=[l.strip().split(', ') for l in open(sys.argv[1]) if l.count(',')>=5]
def t(s): h,m,x=s.split(':'); return int(h)*3600+int(m)*60+float(x)
for i,(ts,name) in enumerate(marks[:-1]):
    a=t(ts); b=t(marks[i+1][0])
    sel=[r for r in rows if a<=t(r[0].split()[-1])<b]
    if not sel: continue
    sm=[int(r[1].split()[0]) for r in sel]; ut=[int(r[4].split()[0]) for r in sel]
    print(name.strip(), 'samples',len(sel),'sm MHz min/median/max',min(sm),sorted(sm)[len(sm)//2],max(sm),'util median',sorted(ut)[len(ut)//2], 'pstates', sorted(set(r[3] for r in sel)))
PY
