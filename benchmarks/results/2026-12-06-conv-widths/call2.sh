#!/usr/bin/env bash
# Session 65, call 2: call 1's script on the held-out rows (session 40's) and the rows of filter counts that are not
# powers of two (`WIDTH_ROWS`).
NAME=heldout SHAPES='--heldout --only vgg16 --only unet --only yolo --only odd --only b64 --only sd --only "b16 3x3 160" --only "b32 3x3 192" --only "b8 3x3 256->448" --only "b16 3x3 96" --only "b32 1x1/2"' bash benchmarks/results/2026-12-06-conv-widths/call1.sh
