#!/usr/bin/env bash
# Session 68, call 5: Nsight Compute on the decode products at one token (Qwen3-30B-A3B, Mixtral): each
# product as the layer launches it and torch._grouped_mm on the same rows, caches flushed before each (ncu's default).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  ncu --version | tail -1; date -u; } > $R/env5.txt 2>&1
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section SourceCounters"
MET="--metrics dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max,lts__t_sector_hit_rate.pct"
timeout -k 10 230 ncu --nvtx --nvtx-include prof/ $SEC $MET -o $R/decode python3 benchmarks/moe_decode_ncu_target.py Qwen3-30B-A3B:1 Mixtral:1 > $R/decode.log 2>&1; echo "exit $?" >> $R/decode.log
ncu --import $R/decode.ncu-rep --page details > $R/decode.txt 2>&1
ncu --import $R/decode.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,launch__grid_size,launch__registers_per_thread > $R/decode.csv 2>&1
rm -f $R/decode.ncu-rep
tail -5 $R/decode.log
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Grid Size" $R/decode.txt | head -80
# Qwen3-30B-A3B's small experts: the wide tile (rows of 512 bytes) for both products, the up-projection as the split
# plain product and the gated sum
timeout 150 python3 benchmarks/moe_decode_configs.py --shapes Qwen3-30B-A3B --tokens 1 2 --rounds 20 --config 64x256x64:4:s2 --config 64x256x64:4 --config 64x128x64:8:s2 --json $R/qwen5.json 2>&1 | tee $R/qwen5.txt
# the fused gather (the up-projection reading each routed row's token itself: one launch fewer) at decode sizes
timeout 150 python3 benchmarks/moe_layer_ab.py --switches FUSED_GATHER --cases Qwen3-30B-A3B:1 Qwen3-30B-A3B:2 DeepSeek-V3:1 --rounds 15 2>&1 | tee $R/gather5.txt
