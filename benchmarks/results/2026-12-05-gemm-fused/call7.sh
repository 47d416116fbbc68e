#!/usr/bin/env bash
# device call 7 (session 60, issue #20): kernels with group barriers launched cooperatively (cuLaunchKernelEx with
# CU_LAUNCH_ATTRIBUTE_COOPERATIVE, `argus.runtime.loaded.COOPERATIVE_LAUNCHES`: the driver refuses a grid that cannot
# be resident at once instead of letting it hang), in 2-block clusters and without: correct, and as fast as without
# the attribute? Each fused plan against its two-launch twin and cuBLAS, once with the attribute and once without
# (two processes), checked before and after the timed relaunches.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call7
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout 200 python3 benchmarks/gemm_precompile.py 512,512,65536 1024,1024,16384 241,248,16960 \
    512,512,65536:128,256,64,4,2,16,2,tma 1024,1024,16384:128,256,64,4,2,4,1,tma 241,248,16960:64,128,128,4,1,16,2,tma \
    > $R/precompile.txt 2>&1; tail -1 $R/precompile.txt
P="timeout -k 5 -s INT 100 python3 benchmarks/gemm_config_probe.py"
for mode in cooperative plain; do
  flag=""; [ $mode = plain ] && flag="--no-cooperative"
  for job in 512,512,65536:128,256,64,4,2,16,2,tma 1024,1024,16384:128,256,64,4,2,4,1,tma 241,248,16960:64,128,128,4,1,16,2,tma; do
    s=${job%%:*}; c=${job#*:}; f=$R/${mode}_${s//,/x}
    $P $s $c --rounds 120 $flag --json $f.json > $f.txt 2>&1; echo "exit $?" >> $f.txt
    echo "$mode"; grep -h -E "cuBLAS [0-9]|x cuBLAS|exit|WRONG|refused|Error" $f.txt | cut -c1-120
  done
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call7.tgz call7 && rm -rf call7
