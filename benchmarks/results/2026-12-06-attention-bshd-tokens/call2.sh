#!/usr/bin/env bash
# Session 66, call 2: the GPU test of call 1 that failed (its relaunch check), with its message; then the benchmark
# with 4 causal query tokens (speculative decoding's drafts; the mask at the bottom right, torch's backends given
# causal_lower_right).
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py -k "sdpa_matches_torch_on_the_gpu" --tb=line 2>&1 | tail -6 | tee $OUT/pytest2.txt
timeout 200 python3 benchmarks/attention_decode.py --layout bshd --tokens 4 --causal --rounds 15 --json $OUT/tokens4-causal.json 2>&1 | tee $OUT/tokens4-causal.txt | tail -20
