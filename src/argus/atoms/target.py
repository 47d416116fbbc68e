"""The GPU a kernel is written for, as data: every hardware limit and count that the DSL, the interpreter, the
verifier, the code generator, the cost model and the knowledge base need is read from a `Target` here, never
written as a literal elsewhere (`tests/test_architecture.py` fails on a duplicate)."""

from __future__ import annotations

from dataclasses import dataclass

from argus.atoms.swizzle import SWIZZLE_WIDTHS


@dataclass(frozen=True)
class Target:
    """One GPU's architectural facts (NVIDIA Hopper; figures of the CUDA programming guide's compute capability 9.0
    table and the H100/H200 data sheets).

    Attributes:
        name, arch: how the GPU is called, and the code it runs (``sm_90a``: wgmma, setmaxnreg, TMA multicast).
        sms: streaming multiprocessors (a persistent kernel's default grid).
        warp_size, warpgroup_size: threads per warp, and per warpgroup (four consecutive warps: ``wgmma``'s scope).
        register_file: 32-bit registers per SM; max_thread_registers: registers one thread can address.
        max_threads_per_sm, max_blocks_per_sm, max_threads_per_block: residency limits.
        shared_memory_per_sm: bytes of shared memory per SM; shared_memory_per_block: the most one block may opt in
            to; shared_memory_reserved_per_block: what the hardware keeps for each resident block.
        named_barriers: hardware barriers per block (``bar.sync`` ids 0..15; 0 is ``__syncthreads``'s).
        swizzles: the shared-memory swizzle widths TMA and wgmma know (bytes; `argus.atoms.swizzle` is their table).
        dense_tensor_tflops: the data sheet's dense bf16/f16 tensor-core peak (``wgmma``), TFLOP/s, at the boost clock.
        dense_fp8_tensor_tflops: the same for FP8 inputs (``wgmma``'s k32 form: twice the 16-bit rate).
        dense_tf32_tensor_tflops: the same for TF32 inputs (``wgmma``'s k8 form: half the 16-bit rate).
        hbm_gbs: the data sheet's device-memory bandwidth, GB/s.
        l2_gbs: the bandwidth from L2 to all SMs together, GB/s (published microbenchmarks; no data-sheet figure).
        l2_bytes: the L2 cache's capacity (the data sheet's 50 MB of an H100 SXM5 and an H200).
    """

    name: str
    arch: str = "sm_90a"
    sms: int = 132
    warp_size: int = 32
    warpgroup_size: int = 128
    register_file: int = 65536
    max_thread_registers: int = 255
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    shared_memory_per_sm: int = 228 * 1024
    shared_memory_per_block: int = 227 * 1024
    shared_memory_reserved_per_block: int = 1024
    named_barriers: int = 16
    swizzles: tuple[int, ...] = SWIZZLE_WIDTHS
    dense_tensor_tflops: float = 989.4
    dense_fp8_tensor_tflops: float = 1978.9
    dense_tf32_tensor_tflops: float = 494.7
    hbm_gbs: float = 3350.0
    l2_gbs: float = 12000.0
    l2_bytes: int = 50 * 2**20


#: An H100 SXM5 (the default target) and an H200 (the same SM; more and faster memory).
H100_SXM = Target("H100-SXM")
H200 = Target("H200", hbm_gbs=4800.0)
DEFAULT_TARGET = H100_SXM
