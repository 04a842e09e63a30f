#!/usr/bin/env bash
# Session 44, call 4: the merge in the output projection with each thread's own max and total
# in the groups' combine (call 3's long-prompt case failed: a block's values span two heads,
# and the combine took one max a group): its parity test, and the exact-softmax test for
# the merge launch, which now shares that combine.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh
timeout 170 ./gpu_parity --test-threads 1 --nocapture cuda_output_projection_merge > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|merge in o vs" $OUT/parity.log | head -20
echo "parity done at $((SECONDS-start)) s"
timeout $((290-(SECONDS-start))) ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/softmax.log 2>&1; echo "rc $?" >> $OUT/softmax.log
grep -E "^test result|^rc|panicked" $OUT/softmax.log | head
(cd $OUT && gzip parity.log softmax.log)
echo "end at $((SECONDS-start)) s"
