#!/usr/bin/env bash
# device call 5 (session 48, issue #20): the TMA maps' L2 promotion (NONE, 64, 128 = the default, 256 bytes) as an
# A/B, interleaved with cuBLAS: rows 16 bytes past a multiple of 32 (6000x6000x3000, 5336x6240x5816, 1000^3), the
# L2-bound split-K shape (512x512x65536) and aligned controls (4096^3, 8192x7168x2048, 256x7168x2048).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call5
timeout -k 5 -s INT 400 python3 benchmarks/gemm_l2_promotion.py --shapes 6000,6000,3000 5336,6240,5816 1000,1000,1000 512,512,65536 4096,4096,4096 8192,7168,2048 256,7168,2048 --promotions NONE L2_64B L2_128B L2_256B --rounds 60 > $OUT/call5/promotion.txt 2>&1
echo "exit $?" >> $OUT/call5/promotion.txt
cat $OUT/call5/promotion.txt | cut -c1-200
