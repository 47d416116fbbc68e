"""`gemm_config_probe.py` with the split-K reduction's columns per block (`argus.kernels.matmul.REDUCE_BN`, 4 per
thread) set to the first argument: `python3 reduce_bn.py BN <probe arguments>` from the repository root."""

import runpy
import sys

import argus.kernels.matmul as mm

mm.REDUCE_BN = int(sys.argv[1])
sys.argv = ["gemm_config_probe.py", *sys.argv[2:]]
runpy.run_path("benchmarks/gemm_config_probe.py", run_name="__main__")
