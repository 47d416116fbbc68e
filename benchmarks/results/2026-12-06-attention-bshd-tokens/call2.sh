#!/usr/bin/env bash
# Session 66, call 2: the same benchmark with 4 causal query tokens (speculative decoding's drafts; the mask at the
# bottom right, torch's backends given causal_lower_right), then 16 causal tokens.
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 280 python3 benchmarks/attention_decode.py --layout bshd --tokens 4 --causal --rounds 15 --json $OUT/tokens4-causal.json 2>&1 | tee $OUT/tokens4-causal.txt | tail -20
timeout 280 python3 benchmarks/attention_decode.py --layout bshd --tokens 16 --causal --rounds 15 --json $OUT/tokens16-causal.json 2>&1 | tee $OUT/tokens16-causal.txt | tail -20
