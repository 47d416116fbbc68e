#!/usr/bin/env bash
# Session 70, call 1 (issue #23): the MoE layer's kernels launched as programmatic dependents (moe.DEPENDENT_LAUNCHES)
# against plain launches, interleaved, eager and graphed, at decode sizes; the layer's GPU tests; then Nsight Compute
# on the decode products at one token (session 68's prepared call 5: benchmarks/moe_decode_ncu_target.py).
# LEVEL=short: the A/B at three cases and no profile (a call that must fit a small device budget).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  ncu --version | tail -1; date -u; } > $R/env1.txt 2>&1
CASES="Mixtral:1 Qwen3-30B-A3B:1 DeepSeek-V3:1 Qwen3-30B-A3B:8"
[ "${LEVEL:-full}" = short ] && CASES="Mixtral:1 Qwen3-30B-A3B:1 Qwen3-30B-A3B:8"
timeout 200 python3 benchmarks/moe_layer_ab.py --switches DEPENDENT_LAUNCHES --cases $CASES --rounds 15 2>&1 | tee $R/pdl1.txt
timeout 110 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_moe_layer.py -m gpu 2>&1 | tail -4 | tee $R/pytest1.txt
if [ "${LEVEL:-full}" != short ]; then
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
MET="--metrics dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max,lts__t_sector_hit_rate.pct"
timeout -k 10 150 ncu --nvtx --nvtx-include prof/ $SEC $MET -o $R/decode python3 benchmarks/moe_decode_ncu_target.py Qwen3-30B-A3B:1 Mixtral:1 > $R/decode.log 2>&1; echo "exit $?" >> $R/decode.log
ncu --import $R/decode.ncu-rep --page details > $R/decode.txt 2>&1
rm -f $R/decode.ncu-rep
tail -3 $R/decode.log
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Grid Size" $R/decode.txt | head -60
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env1.txt 2>&1
