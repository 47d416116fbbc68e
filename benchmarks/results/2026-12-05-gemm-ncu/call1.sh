#!/usr/bin/env bash
# device call 1 (session 58, issue #20): Nsight Compute on argus's GEMM kernels and cuBLAS's at the two rows still short
# of their targets: 512x512x65536 bf16 (the heuristic's 128x256 split16 cluster2, cuBLAS's own decomposition 128x128x64
# s6 split8 cluster2 in argus's kernel, and cuBLAS), and FP8 8192x8192x28672 (the heuristic against torch._scaled_mm).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call1
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  ncu --version | tail -1; date -u; } > $R/env.txt 2>&1
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
MET="--metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,gpc__cycles_elapsed.max"
N="timeout -k 10 240 ncu --nvtx --nvtx-include prof/ $SEC $MET"
$N -o $R/p512 python3 benchmarks/gemm_ncu_target.py 512,512,65536 heuristic 128,128,64,6,2,8,2 128,128,64,6,2,8,2,tma > $R/p512.log 2>&1; echo "exit $?" >> $R/p512.log
ncu --import $R/p512.ncu-rep --page details > $R/p512.txt 2>&1
$N -o $R/fp8 python3 benchmarks/gemm_ncu_target.py 8192,8192,28672 heuristic --fp8 > $R/fp8.log 2>&1; echo "exit $?" >> $R/fp8.log
ncu --import $R/fp8.ncu-rep --page details > $R/fp8.txt 2>&1
tail -3 $R/p512.log $R/fp8.log
# split slices stored through TMA (3-D boxes of the f32 workspace) against direct stores, interleaved with cuBLAS
P="timeout -k 5 -s INT 150 python3 benchmarks/gemm_config_probe.py"
$P 512,512,65536 128,128,64,6,2,8,2 128,128,64,6,2,8,2,tma 128,256,64,4,2,16,2,tma --rounds 150 --kernel-only \
    --json $R/t512.json > $R/t512.txt 2>&1; echo "exit $?" >> $R/t512.txt
$P 1024,1024,16384 128,128,128,3,2,4,1 128,128,128,3,2,4,1,tma --rounds 150 --json $R/t1024.json > $R/t1024.txt 2>&1
echo "exit $?" >> $R/t1024.txt
grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/t512.txt $R/t1024.txt
for f in $R/p512.txt $R/fp8.txt; do grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Th|Memory Throughput|dram__bytes|lts__t_bytes|hit_rate|Issued Warp|No Eligible|Warp Cycles Per Issued|Registers Per|Stall|Block Limit|Achieved Occ" $f | cut -c1-150 | head -120; done
cd $OUT && tar czf call1.tgz call1 && rm -rf call1
