#!/usr/bin/env bash
# Session 66, call 1: several query tokens against FlashAttention's (B, S, HK, D) KV cache. The GPU tests of
# test_sdpa.py (a bshd problem of 4 packed tokens among them, and every bshd row relaunched for a new query), then
# benchmarks/attention_decode.py --layout bshd --tokens 4: argus with q and O copied to and from (B, H, S, D) and K, V
# read in place (heads packed, keys split), the bshd kernel before (argus-prev), argus on (B, H, S, D) copies, cuDNN
# and FA2 on the bshd tensors' views, interleaved.
export PYTHONPATH=$PWD/.z3:$PWD/src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
timeout 200 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py -k gpu 2>&1 | tail -4 | tee $OUT/pytest.txt
timeout 360 python3 benchmarks/attention_decode.py --layout bshd --tokens 4 --rounds 15 --json $OUT/tokens4.json 2>&1 | tee $OUT/tokens4.txt | tail -22
