#!/usr/bin/env bash
# Session 71, call 2 (issue #23): where a decode step's time goes. The layer's graph replayed under the PyTorch
# profiler (benchmarks/moe_layer_trace.py: each kernel's time and the gap before it), then Nsight Compute on the decode
# products at one token (call 1's profile found no kernel: its NVTX ranges were named "prof/<case>", which ncu's
# "prof/" does not match; they are named "prof" now).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env2.txt 2>&1
timeout 200 python3 benchmarks/moe_layer_trace.py --cases Qwen3-30B-A3B:1 Mixtral:1 DeepSeek-V3:1 Qwen3-30B-A3B:8 \
  --replays 20 2>&1 | tee $R/trace2.txt
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
timeout -k 10 150 ncu --nvtx --nvtx-include "prof/" $SEC -o $R/decode python3 benchmarks/moe_decode_ncu_target.py \
  Qwen3-30B-A3B:1 Mixtral:1 > $R/decode2.log 2>&1; echo "exit $?" >> $R/decode2.log
ncu --import $R/decode.ncu-rep --page details > $R/decode2.txt 2>&1
rm -f $R/decode.ncu-rep
tail -3 $R/decode2.log
grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Grid Size|Registers Per|Dynamic Shared" $R/decode2.txt | head -90
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env2.txt 2>&1
