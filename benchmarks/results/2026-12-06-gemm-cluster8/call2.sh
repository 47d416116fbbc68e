#!/usr/bin/env bash
# device call 2 (session 64, issue #20): `matmul.fused_cluster` (a fused split of 8 or more on 128-row two-consumer
# tiles runs in 2-block clusters) on ten new held-out shapes (seed 65, `shapes2.py`): the heuristic (now clustered)
# against the same plan unclustered, interleaved with cuBLAS, checked against the f32 product before and after.
SHAPES=shapes2.py NAME=cluster8b exec bash "$(dirname "$0")/call1.sh"
