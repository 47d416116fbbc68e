#!/usr/bin/env bash
# Session 65, call 3: the final planner (fitted widths, multiples of 32, FLAT_NARROW_TILE_TIME 0.85) on every row of
# calls 1 and 2 at 15 rounds, each flattened row beside the 128/256 rule's tile and the widths the model ranks first.
NAME=final ROUNDS=15 LIMIT=540 SHAPES='--extra --heldout' bash benchmarks/results/2026-12-06-conv-widths/call1.sh
