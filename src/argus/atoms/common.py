"""Vocabulary shared by all atoms: memory spaces, execution scopes, and dtype checks."""

from __future__ import annotations

from enum import StrEnum

from argus.atoms.errors import AtomError
from argus.atoms.target import DEFAULT_TARGET
from argus.ir.types import DType, dtype_from_name


class MemorySpace(StrEnum):
    """Where an operand lives."""

    GLOBAL = "global"
    SHARED = "shared"
    REGISTERS = "registers"


class Scope(StrEnum):
    """Which threads execute one instance of an atom together.

    ``THREAD``: each thread on its own (vector loads, ``cp.async``), or one elected thread on behalf
    of the CTA (TMA). ``WARP``: the 32 lanes of a warp (``mma.sync``, ``ldmatrix``, ``stmatrix``).
    ``WARPGROUP``: four consecutive warps, 128 threads whose warp rank modulo 4 is 0..3 (``wgmma``).
    """

    THREAD = "thread"
    WARP = "warp"
    WARPGROUP = "warpgroup"


# The default target's facts under the names the atoms and checks use (`argus.atoms.target` holds them).
WARP_SIZE = DEFAULT_TARGET.warp_size
WARPGROUP_SIZE = DEFAULT_TARGET.warpgroup_size

#: 32-bit registers per SM (a warp-specialized block runs alone on its SM: all of them are the block's).
REGISTER_FILE = DEFAULT_TARGET.register_file
#: Registers a thread can address.
MAX_THREAD_REGISTERS = DEFAULT_TARGET.max_thread_registers
#: Shared memory one Hopper block may use (opt-in maximum, bytes).
SHARED_MEMORY_BUDGET = DEFAULT_TARGET.shared_memory_per_block
#: Shared memory of one SM, and what the hardware reserves for each resident block (bytes).
SHARED_MEMORY_PER_SM = DEFAULT_TARGET.shared_memory_per_sm
SHARED_MEMORY_RESERVED_PER_BLOCK = DEFAULT_TARGET.shared_memory_reserved_per_block
#: Streaming multiprocessors: a persistent kernel's default number of blocks.
SMS = DEFAULT_TARGET.sms
#: The most blocks a launch's grid has along x, y and z (CUDA's limits).
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_GRID_Y, MAX_GRID_Z = MAX_GRID[1], MAX_GRID[2]


def shared_budget(blocks_per_sm: int = 1) -> int:
    """Shared memory one block may use when `blocks_per_sm` blocks are to be resident on an SM together."""
    if blocks_per_sm <= 1:
        return SHARED_MEMORY_BUDGET
    return (SHARED_MEMORY_PER_SM - SHARED_MEMORY_RESERVED_PER_BLOCK * blocks_per_sm) // blocks_per_sm


def setmaxnreg_ok(registers: int) -> bool:
    """Whether ``setmaxnreg`` takes `registers`: a multiple of 8 in 24..256."""
    return registers % 8 == 0 and 24 <= registers <= 256


def register_split(threads: int, roles: list[tuple[int, int | None]], blocks_per_sm: int = 1) -> tuple[int, int]:
    """(registers the block's warp roles hold together, registers per thread at entry) for a block of `threads`
    launched with the launch bounds (threads, blocks_per_sm) whose roles are ``(warpgroups, setmaxnreg budget or
    None)``; threads outside every role keep the entry count. Over `register_pool`, ``setmaxnreg.inc`` waits
    forever. (Plain statements and list comprehensions: the LLM coder sees this function inlined beside the
    kernels that call it, under the restricted-source rules.)"""
    entry = min(MAX_THREAD_REGISTERS, REGISTER_FILE // (threads * max(1, blocks_per_sm)) // 8 * 8)
    covered = sum([WARPGROUP_SIZE * groups for groups, _ in roles])
    total = sum([WARPGROUP_SIZE * groups * (budget or entry) for groups, budget in roles])
    return total + max(0, threads - covered) * entry, entry


def register_pool(threads: int, blocks_per_sm: int = 1) -> int:
    """Registers a block's ``setmaxnreg`` budgets may hold together: the register file with one block per SM;
    with several, the block's own allocation at entry (``setmaxnreg.inc`` only takes what the block's
    ``setmaxnreg.dec`` released)."""
    if blocks_per_sm <= 1:
        return REGISTER_FILE
    _, entry = register_split(threads, [], blocks_per_sm)
    return threads * entry


def consumer_registers(
    threads: int, consumers: int, blocks_per_sm: int, producer: int, most: int = MAX_THREAD_REGISTERS
) -> int:
    """The ``setmaxnreg`` budget of each of `consumers` warpgroups in a block of `threads` whose one producer
    warpgroup keeps `producer` registers a thread, `blocks_per_sm` blocks resident per SM: what the block's register
    pool (`register_pool`) leaves them, at most `most`, rounded down to setmaxnreg's multiple of 8."""
    pool = register_pool(threads, blocks_per_sm)
    per_thread = (pool - WARPGROUP_SIZE * producer) // (WARPGROUP_SIZE * consumers)
    return min(per_thread, most) // 8 * 8


def memory_space(value: MemorySpace | str, what: str) -> MemorySpace:
    """Parse a memory space given as an enum or its name (``"shared"``)."""
    try:
        return MemorySpace(value)
    except ValueError:
        raise AtomError(
            "ATOM_OPERAND_SOURCE",
            f"{what} must be one of {', '.join(repr(m.value) for m in MemorySpace)}",
            actual=repr(value),
        ) from None


def supported_dtype(value: DType | str, atom: str, what: str = "operand dtype") -> DType:
    """Parse a dtype and refuse those no atom supports (a format declared ``supported=False``), with
    ``ATOM_DTYPE_UNSUPPORTED``."""
    dtype = dtype_from_name(value)
    if not dtype.supported:
        raise AtomError(
            "ATOM_DTYPE_UNSUPPORTED",
            f"{atom}: {what} {dtype.name} is known to argus but not yet supported by any atom",
            actual=dtype.name,
            hint=(
                "use a supported dtype (bf16, f16, or e4m3/e5m2 on wgmma): a format declared unsupported has no atom "
                "yet"
            ),
        )
    return dtype
