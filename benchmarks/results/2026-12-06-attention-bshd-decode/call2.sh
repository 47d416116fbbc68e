#!/usr/bin/env bash
# Session 65, call 2: the attention GPU tests after call 1 (the overlapped-loop test no longer asks a merged split
# to run the overlapped loop; the varlen and paged calls, whose kernel gained KV_LAYOUT's default).
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 500 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py tests/kernels/test_sdpa_varlen.py tests/kernels/test_sdpa_paged.py -k gpu 2>&1 | tail -4 | tee $OUT/pytest2.txt
