#!/usr/bin/env bash
# device call 8 (session 60, issue #20): 83x880x964 ran its fused plan 1.4 us slower than two launches in call 6 (the
# first run with cooperative launches; faster in calls 2-3). Its plan copies A and B to padded buffers first (K = 964),
# so the fused kernel is launched as a programmatic dependent of the copy: does the cooperative attribute cost the
# dependent launch's overlap? Each mode in its own process, twice, interleaved with cuBLAS (call 8b adds the
# cooperative attribute alone, without the dependent one: mode "alone").
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
C=${CALL:-call8}
R=$OUT/$C
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  date -u; } > $R/env.txt 2>&1
timeout 100 python3 benchmarks/gemm_precompile.py 83,880,964 83,880,964:64,64,128,6,1,4,1,tma 776,880,964 \
    776,880,964:64,64,128,6,1,4,1,tma > $R/precompile.txt 2>&1
P="timeout -k 5 -s INT 60 python3 benchmarks/gemm_config_probe.py"
for round in 1 2; do
  for mode in cooperative plain alone; do
    flag=""; [ $mode = plain ] && flag="--no-cooperative"; [ $mode = alone ] && flag="--cooperative-alone"
    f=$R/${mode}_${round}
    $P 83,880,964 64,64,128,6,1,4,1,tma --rounds 150 $flag --json $f.json > $f.txt 2>&1; echo "exit $?" >> $f.txt
    echo "$mode $round"; grep -h -E "cuBLAS [0-9]|x cuBLAS|exit [1-9]|WRONG|refused|Error" $f.txt | cut -c1-120
  done
done
cd $OUT && tar czf $C.tgz $C && rm -rf $C
