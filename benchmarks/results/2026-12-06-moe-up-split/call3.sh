#!/usr/bin/env bash
# Session 68, call 3 (on the machine of calls 1-2, warm): the wide decode tile split 2, 4 and 8 ways and the narrow one
# split two ways, both products, Mixtral and DeepSeek-V3 at 1, 2 and 4 tokens.
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 400 python3 benchmarks/moe_decode_configs.py --shapes Mixtral DeepSeek-V3 --tokens 1 2 4 --rounds 15 --config 64x256x64:4:s2 --config 64x256x64:4:s4 --config 64x256x64:4:s8 --config 64x128x64:8:s2 --json $OUT/wide.json 2>&1 | tee $OUT/wide.txt
