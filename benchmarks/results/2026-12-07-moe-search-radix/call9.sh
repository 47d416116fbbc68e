#!/usr/bin/env bash
# Session 71, call 9 (issue #23): Qwen3-30B-A3B's decode products at 8 and 64 tokens (52 and 128 experts touched,
# K = 768 for the down-projection: 12 K-blocks a unit) at other stage counts (BK 128 is not generated for the grouped
# kernels' A boxes: CODEGEN_UNSUPPORTED); then Nsight Compute on the chosen ones at 8 tokens (warp states, memory,
# source counters).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env9.txt 2>&1
timeout 200 python3 benchmarks/moe_decode_configs.py --shapes Qwen3-30B-A3B --tokens 8 64 --products down --rounds 15 \
  --config 64x128x64:8 --config 64x128x64:6 --config 64x128x64:4 --config 64x64x64:8 2>&1 | tee $R/qwen_down9.txt
timeout 200 python3 benchmarks/moe_decode_configs.py --shapes Qwen3-30B-A3B --tokens 8 64 --products up --rounds 15 \
  --config 64x64x64:8 --config 64x64x64:6 --config 64x64x64:4 2>&1 | tee $R/qwen_up9.txt
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section SourceCounters"
timeout -k 10 150 ncu --nvtx --nvtx-include "prof/" $SEC -o $R/q8 python3 benchmarks/moe_decode_ncu_target.py \
  Qwen3-30B-A3B:8 > $R/q8.log 2>&1; echo "exit $?" >> $R/q8.log
ncu --import $R/q8.ncu-rep --page details > $R/q8.txt 2>&1
rm -f $R/q8.ncu-rep
grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Warp Cycles Per Issued|Stall|Achieved Occupancy" $R/q8.txt | cut -c1-150 | head -60
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env9.txt 2>&1
