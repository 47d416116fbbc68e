#!/usr/bin/env bash
# Session 66, call 3: the relaunch probe with its reference taken before q is negated (call 2's probe and GPU test
# negated q through an alias: `contiguous` of a transposed size-1 axis is a view), then the GPU test so fixed.
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 100 python3 benchmarks/attention_relaunch_probe.py 2>&1 | tee $OUT/relaunch.txt
timeout 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py -k "sdpa_matches_torch_on_the_gpu" --tb=line 2>&1 | tail -3 | tee $OUT/pytest3.txt
