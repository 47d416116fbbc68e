"""The lane-level CPU interpreter: runs IR with numpy, one block at a time, modelling each
thread's registers (fragments as ``(threads, values)`` arrays laid out by their TV layouts), shared
memory in physical (swizzled) order, asynchronous copies that land only at their wait, MMAs
that read registers the way the hardware does, and warp roles run under a choice of schedules
(`SCHEDULES`) with mbarriers and TMA loads that land when their phase completes, all within a memory
budget (`MAX_BYTES_ENV`). For correctness, never for timing; `argus.interp.machine` says what is not
modelled yet."""

from argus.interp.machine import (
    MAX_BYTES_ENV,
    SCHEDULES,
    InterpError,
    check_memory,
    has_roles,
    interpret,
    memory_budget,
    memory_needed,
    run_kernel,
)

__all__ = [
    "MAX_BYTES_ENV",
    "SCHEDULES",
    "InterpError",
    "check_memory",
    "has_roles",
    "interpret",
    "memory_budget",
    "memory_needed",
    "run_kernel",
]
