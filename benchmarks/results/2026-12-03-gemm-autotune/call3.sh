#!/usr/bin/env bash
# device call 3 (session 48, issue #20): call 2 without programmatic dependent launches (each kernel's own time), at
# the two shapes whose plans have two kernels.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call3
timeout -k 5 -s INT 300 python3 benchmarks/gemm_kernel_times.py --shapes 512,512,65536 1,4096,4096 --top 8 --rounds 20 --no-pdl > $OUT/call3/times.txt 2>&1
echo "exit $?" >> $OUT/call3/times.txt
grep -v Warn $OUT/call3/times.txt | cut -c1-330
