#!/usr/bin/env bash
# Session 65, call 3: benchmarks/attention_decode.py in the (B, H, S, D) layout on the same H100 (its variants: the
# split rule before key_splits, three stages, programmatic dependent launches, the merge in the launch).
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 500 python3 benchmarks/attention_decode.py --rounds 20 --json $OUT/decode-bhsd.json 2>&1 | tee $OUT/decode-bhsd.txt | tail -22
