#!/usr/bin/env bash
# Session 66, call 2: the planner with FLAT_PERSISTENT (the flattened tile persistent where its tiles make more than
# a wave) on the rows of call 1, each beside the planner without it ("before"), the flattened tile a block per tile
# and the persistent forms; then the flattened tiles' GPU tests (the persistent forms' among them).
NAME=final ROUNDS=15 bash benchmarks/results/2026-12-06-conv-persistent-flat/call1.sh
