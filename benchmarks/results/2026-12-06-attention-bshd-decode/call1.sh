#!/usr/bin/env bash
# Session 65, call 1: decoding against FlashAttention's (B, S, HK, D) KV cache. The GPU tests of test_sdpa.py (the
# bshd decode path among them), then benchmarks/attention_decode.py --layout bshd: argus with K and V read in place
# (heads packed, keys split), the bshd kernel before (argus-prev), argus on (B, H, S, D) copies, cuDNN and FA2 on
# the bshd tensors' views, interleaved.
export PYTHONPATH=$PWD/.z3:$PWD/src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
timeout 200 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py -k gpu 2>&1 | tail -4 | tee $OUT/pytest.txt
timeout 380 python3 benchmarks/attention_decode.py --layout bshd --rounds 20 --json $OUT/decode-bshd.json 2>&1 | tee $OUT/decode-bshd.txt | tail -22
