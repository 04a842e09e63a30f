#!/usr/bin/env bash
# Session 35, call 2: the cluster layer probe with st.async exchanges and bulk-copy prefetch.
set -u
cd "$(dirname "$0")/.."
./gpuab/cluster_layer > $OUT/probe.md 2>&1; echo "rc $?" >> $OUT/probe.md; cat $OUT/probe.md
