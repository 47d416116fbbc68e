"""What a cubin contains: per-kernel resources, SASS, and its instruction mix.

Owns reading cubins, with the wheel-provided ``cuobjdump`` and ``nvdisasm`` (no GPU needed):

* `inspect_cubin` — `KernelResources` per kernel. Registers, stack frame and static shared memory come
  from ``cuobjdump --dump-resource-usage`` (its ``SHARED`` includes the 1 KiB that sm_90 reserves per CTA
  when a kernel uses shared memory; that part is reported apart, as ``reserved_shared``). Launch bounds,
  cluster shape, barrier count, parameter size and the register cap come from the kernel's
  ``.nv.info.<kernel>`` attributes (``cuobjdump -elf``). Spill bytes are not recorded in a cubin as
  numbers, but ptxas lists every spill and refill instruction in the ``EIATTR_ANNOTATIONS`` attribute
  (``SpillRefill : Offset : 0x…``); summing the widths of those ``STL`` and ``LDL`` instructions in the
  SASS gives exactly the "bytes spill stores/loads" that ``ptxas -v`` prints (the tests check this against
  ``ptxas -v``). A disassembly costs about half a second (nvdisasm's start-up), so it only happens when a
  kernel has spills; otherwise inspection takes a few milliseconds.
* `sass` — the disassembly (``nvdisasm``), optionally with source-line comments; `split_sass` per kernel.
* `instruction_mix` — opcode counts (``HGMMA``, ``UTMALDG``, ``LDSM``, ``LDG``, …) of SASS text.
* `parse_ptxas_log` — the numbers ``ptxas -v`` prints, for compilations run with ``-Xptxas -v``.
"""

from __future__ import annotations

import re
import struct
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from argus.backend.cuda.errors import InspectError, ToolchainError
from argus.backend.cuda.locate import find_toolkit

RESERVED_SHARED_BYTES = 1024
"""Shared memory the toolchain reserves in each CTA's static allocation on sm_90 (the driver's
``reservedSharedMemoryPerBlock``); cuobjdump counts it in ``SHARED``, ptxas's ``bytes smem`` does not."""

_EM_CUDA = 190
_TOOL_TIMEOUT_S = 300


@dataclass(frozen=True)
class KernelResources:
    """The resources one kernel (a ``__global__`` entry) uses, as the cubin records them. Sizes in bytes.

    Attributes:
        name: the kernel's symbol (mangled unless ``extern "C"``).
        registers: registers per thread.
        spill_stores: bytes stored to local memory by register spills, per thread (as ``ptxas -v``).
        spill_loads: bytes loaded back from spills, per thread.
        spill_instructions: how many ``STL``/``LDL`` instructions are spills or refills.
        stack_frame: stack frame per thread (spills plus local arrays that live in memory).
        static_shared: statically declared shared memory per CTA (as ``ptxas -v``'s ``bytes smem``).
        reserved_shared: shared memory the toolchain reserves on top (`RESERVED_SHARED_BYTES` when the kernel
            uses shared memory on sm_90, else 0); cuobjdump's ``SHARED`` is the sum of the two.
        param_bytes: size of the kernel's parameters.
        barriers: named barriers (``bar.sync``) the kernel uses.
        max_registers: the register cap ptxas compiled under (255 unless ``-maxrregcount`` or launch bounds).
        max_threads: ``__launch_bounds__``/``.maxntid`` block shape, if declared.
        required_threads: ``.reqntid`` block shape, if declared.
        cluster_dims: ``__cluster_dims__``/``.reqnctapercluster`` cluster shape, if declared.
    """

    name: str
    registers: int
    spill_stores: int
    spill_loads: int
    spill_instructions: int
    stack_frame: int
    static_shared: int
    reserved_shared: int
    param_bytes: int
    barriers: int
    max_registers: int | None
    max_threads: tuple[int, int, int] | None
    required_threads: tuple[int, int, int] | None
    cluster_dims: tuple[int, int, int] | None

    @property
    def spills(self) -> bool:
        """Whether any register spills to local memory."""
        return self.spill_stores > 0 or self.spill_loads > 0

    def __str__(self) -> str:
        return (
            f"{self.name}: {self.registers} registers, {self.spill_stores} B spill stores, "
            f"{self.spill_loads} B spill loads, {self.stack_frame} B stack, {self.static_shared} B static shared"
        )


@dataclass(frozen=True)
class PtxasReport:
    """What ``ptxas -v`` printed for one entry function (sizes in bytes)."""

    name: str
    registers: int
    barriers: int
    static_shared: int
    stack_frame: int
    spill_stores: int
    spill_loads: int


def inspect_cubin(cubin: bytes, *, sass_text: str | None = None) -> dict[str, KernelResources]:
    """`KernelResources` for every kernel in `cubin`, by kernel name (in cuobjdump's order).

    `sass_text`, when given, must be ``sass(cubin)``; it spares a disassembly when a kernel spills.
    Raises `InspectError` if `cubin` is not a CUDA ELF or cuobjdump fails on it.
    """
    elf = _Elf.parse(cubin)
    output = _run_tool("cuobjdump", ["-elf", "--dump-resource-usage"], cubin)
    elf_text, _, usage_text = output.partition("\nResource usage:")
    usage = _parse_resource_usage(usage_text)
    attributes = _parse_kernel_attributes(elf_text)
    reserved = any(name.startswith((".nv.reservedSmem", "__nv_reservedSMEM")) for name in elf.symbols)
    kernel_sass: dict[str, str] | None = None
    result: dict[str, KernelResources] = {}
    for name, fields in usage.items():
        attrs = attributes.get(name, {})
        spill_offsets = [
            int(o, 16)
            for o in re.findall(r"SpillRefill\s*:\s*Offset\s*:\s*(0x[0-9a-fA-F]+)", attrs.get("EIATTR_ANNOTATIONS", ""))
        ]
        stores = loads = 0
        if spill_offsets:
            if kernel_sass is None:
                kernel_sass = split_sass(sass_text if sass_text is not None else sass(cubin))
            stores, loads = _spill_bytes(kernel_sass.get(name, ""), spill_offsets)
        shared = fields.get("SHARED", 0)
        reserved_shared = RESERVED_SHARED_BYTES if reserved and shared >= RESERVED_SHARED_BYTES else 0
        max_registers = _ints(attrs.get("EIATTR_MAXREG_COUNT"))
        param_bytes = _ints(attrs.get("EIATTR_CBANK_PARAM_SIZE"))
        barriers = _ints(attrs.get("EIATTR_NUM_BARRIERS"))
        result[name] = KernelResources(
            name=name,
            registers=fields.get("REG", 0),
            spill_stores=stores,
            spill_loads=loads,
            spill_instructions=len(spill_offsets),
            stack_frame=fields.get("STACK", 0),
            static_shared=shared - reserved_shared,
            reserved_shared=reserved_shared,
            param_bytes=param_bytes[0] if param_bytes else 0,
            barriers=barriers[0] if barriers else 0,
            max_registers=max_registers[0] if max_registers else None,
            max_threads=_dims(attrs.get("EIATTR_MAX_THREADS")),
            required_threads=_dims(attrs.get("EIATTR_REQNTID")),
            cluster_dims=_dims(attrs.get("EIATTR_CTA_PER_CLUSTER")),
        )
    return result


def sass(cubin: bytes, *, line_info: bool = False) -> str:
    """The SASS of every kernel in `cubin` (``nvdisasm -c``); with `line_info`, ``//## File "…", line N`` comments
    (``-gi``: the source line of each instruction, inlining included; needs a ``-lineinfo`` compile)."""
    _Elf.parse(cubin)
    return _run_tool("nvdisasm", ["-c", "-gi"] if line_info else ["-c"], cubin)


_SECTION = re.compile(r"^\s*\.section\s+\.text\.(?P<name>[^,\s]+)")
_INSTRUCTION = re.compile(
    r"^\s*/\*(?P<offset>[0-9a-fA-F]{4,})\*/\s+(?:@!?U?P(?:T|\d+)\s+)?(?P<opcode>[A-Z][A-Z0-9_]*)(?P<modifiers>(?:\.[A-Za-z0-9_]+)*)"
)


def split_sass(sass_text: str) -> dict[str, str]:
    """SASS text (from `sass` or ``cuobjdump -sass``) split per kernel: kernel name -> its code section."""
    kernels: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass_text.splitlines():
        if match := _SECTION.match(line):
            current = kernels.setdefault(match["name"], [])
        elif line.lstrip().startswith(".section") or line.startswith("//----"):
            current = None
        elif (function := re.match(r"^\s*Function\s*:\s*(?P<name>\S+)", line)) is not None:
            current = kernels.setdefault(function["name"], [])  # cuobjdump -sass layout
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in kernels.items()}


def instruction_mix(sass_text: str, *, modifiers: bool = False) -> Counter[str]:
    """How often each opcode occurs in `sass_text`: ``Counter({"LDG": 2, "FADD": 1, …})``.

    Opcodes are counted without their modifiers (``HGMMA.64x64x16.F32.BF16`` counts as ``HGMMA``) unless
    `modifiers` is set. Predicates (``@P0``) are ignored.
    """
    counts: Counter[str] = Counter()
    for line in sass_text.splitlines():
        if match := _INSTRUCTION.match(line):
            counts[match["opcode"] + (match["modifiers"] if modifiers else "")] += 1
    return counts


_PTXAS_PROPERTIES = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_log(log: str) -> dict[str, PtxasReport]:
    """The per-entry numbers in a ``ptxas -v`` log (from a compile with ``-Xptxas -v``), by entry name."""
    properties: dict[str, tuple[int, int, int]] = {}
    usage: dict[str, tuple[int, int, int]] = {}
    entry: str | None = None
    described: str | None = None
    for line in log.splitlines():
        if match := re.search(r"Compiling entry function '([^']+)'", line):
            entry = match[1]
        elif match := re.search(r"Function properties for (\S+)", line):
            described = match[1]
        elif (match := _PTXAS_PROPERTIES.search(line)) and described:
            properties[described] = (int(match[1]), int(match[2]), int(match[3]))
        elif (match := re.search(r"Used (\d+) registers", line)) and entry:
            barriers = re.search(r"used (\d+) barriers", line)
            smem = re.search(r"(\d+) bytes smem", line)
            usage[entry] = (int(match[1]), int(barriers[1]) if barriers else 0, int(smem[1]) if smem else 0)
    return {
        name: PtxasReport(name, registers, barriers, smem, *properties.get(name, (0, 0, 0)))
        for name, (registers, barriers, smem) in usage.items()
    }


def _spill_bytes(kernel_sass: str, offsets: Sequence[int]) -> tuple[int, int]:
    wanted = set(offsets)
    stores = loads = 0
    for line in kernel_sass.splitlines():
        match = _INSTRUCTION.match(line)
        if match is None or int(match["offset"], 16) not in wanted:
            continue
        width = _access_width(match["modifiers"])
        if match["opcode"] == "STL":
            stores += width
        elif match["opcode"] == "LDL":
            loads += width
    return stores, loads


def _access_width(modifiers: str) -> int:
    parts = set(modifiers.split("."))
    for suffix, width in (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1)):
        if suffix in parts:
            return width
    return 4


def _parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    kernels: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        if match := re.match(r"^\s*Function\s+(\S+?):\s*$", line):
            current = match[1]
            kernels[current] = {}
        elif current is not None and "REG:" in line:
            kernels[current].update({k: int(v) for k, v in re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", line)})
    return kernels


def _parse_kernel_attributes(elf_text: str) -> dict[str, dict[str, str]]:
    """``.nv.info.<kernel>`` sections of ``cuobjdump -elf``: kernel -> attribute name -> value text."""
    kernels: dict[str, dict[str, str]] = {}
    attrs: dict[str, str] | None = None
    name: str | None = None
    value: list[str] = []

    def flush() -> None:
        if attrs is not None and name is not None:
            attrs[name] = (attrs[name] + "\n" if name in attrs else "") + "\n".join(value).strip()

    for line in elf_text.splitlines():
        if line and not line[0].isspace():  # a section header at column 0 ends the previous section
            flush()
            name, value = None, []
            attrs = kernels.setdefault(line[len(".nv.info.") :].strip(), {}) if line.startswith(".nv.info.") else None
            continue
        if attrs is None:
            continue
        stripped = line.strip()
        if stripped.startswith("<0x"):
            flush()
            name, value = None, []
        elif stripped.startswith("Attribute:"):
            name = stripped.split(":", 1)[1].strip()
        elif stripped.startswith("Value:"):
            value = [stripped.split(":", 1)[1]]
        elif stripped and not stripped.startswith("Format:") and name is not None:
            value.append(stripped)
    flush()
    return kernels


def _ints(text: str | None) -> list[int]:
    return [int(token, 16) for token in re.findall(r"0x[0-9a-fA-F]+", text)] if text else []


def _dims(text: str | None) -> tuple[int, int, int] | None:
    values = _ints(text)
    return (values[0], values[1], values[2]) if len(values) >= 3 else None


def _run_tool(tool: str, arguments: list[str], cubin: bytes) -> str:
    executable = find_toolkit().require("cuobjdump" if tool == "cuobjdump" else "nvdisasm")
    with tempfile.TemporaryDirectory(prefix="argus-inspect-") as directory:
        path = Path(directory) / "module.cubin"
        path.write_bytes(cubin)
        try:
            completed = subprocess.run(
                [str(executable), *arguments, str(path)],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=_TOOL_TIMEOUT_S,
                check=False,
            )
        except PermissionError as exc:
            raise ToolchainError(
                "COMPILE_TOOLCHAIN", f"{executable} is not executable", hint=f"chmod +x {executable}"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise InspectError("INSPECT_TOOL", f"{tool} did not finish within {_TOOL_TIMEOUT_S} s") from exc
    if completed.returncode != 0:
        raise InspectError(
            "INSPECT_TOOL",
            f"{tool} {' '.join(arguments)} failed with exit status {completed.returncode}",
            details=f"  {completed.stderr.strip() or completed.stdout.strip()[:2000]}",
            output=completed.stderr + completed.stdout,
            hint="check that the cubin was built for an architecture this tool knows (sm_75 … sm_121)",
        )
    return completed.stdout


@dataclass(frozen=True)
class _Elf:
    """The little of a 64-bit CUDA ELF that inspection needs: section names and sizes, symbol names."""

    sections: dict[str, int]
    symbols: frozenset[str]

    @classmethod
    def parse(cls, data: bytes) -> _Elf:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InspectError("INSPECT_NOT_CUBIN", f"a cubin is bytes, got {type(data).__name__}")
        data = bytes(data)
        if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] != 2:
            raise InspectError(
                "INSPECT_NOT_CUBIN",
                f"expected a 64-bit CUDA ELF (cubin), got {len(data)} bytes starting {data[:8]!r}",
                hint="pass CompiledModule.cubin; fatbins and PTX text are not cubins",
            )
        try:
            (machine,) = struct.unpack_from("<H", data, 18)
            (shoff,) = struct.unpack_from("<Q", data, 40)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
            headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
            names_offset = headers[shstrndx][4]

            def name_at(table_offset: int, offset: int) -> str:
                end = data.index(b"\x00", table_offset + offset)
                return data[table_offset + offset : end].decode(errors="replace")

            sections = {name_at(names_offset, h[0]): h[5] for h in headers}
            symbols: set[str] = set()
            for header in headers:
                if header[1] != 2:  # SHT_SYMTAB
                    continue
                strtab_offset = headers[header[6]][4]
                entry_size = header[9] or 24
                for index in range(header[5] // entry_size):
                    (symbol_name,) = struct.unpack_from("<I", data, header[4] + index * entry_size)
                    symbols.add(name_at(strtab_offset, symbol_name))
        except (struct.error, IndexError, ValueError) as exc:
            raise InspectError("INSPECT_NOT_CUBIN", f"malformed ELF: {exc}") from exc
        if machine != _EM_CUDA:
            raise InspectError("INSPECT_NOT_CUBIN", f"an ELF for machine {machine}, not CUDA ({_EM_CUDA})")
        return cls(sections, frozenset(symbols))
