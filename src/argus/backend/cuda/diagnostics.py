"""From NVRTC's log back to the DSL line that caused it.

Owns:

* line maps — generated CUDA line -> ``"file.py:LINE"`` of the DSL. Given by the code generator, or
  derived from the ``// file.py:LINE`` comments it writes (`derive_line_map`); a generated line maps to
  the nearest DSL comment at or above it (`dsl_location`);
* parsing NVRTC's log into `Diagnostic` records: front-end messages (``gemm.cu(57): error: …``) and
  ptxas messages (``ptxas application ptx input, line 35; error : …``), the latter mapped from the PTX
  line to the generated CUDA line through the PTX ``.loc`` directives that ``-lineinfo`` emits;
* building the `CompileError` for a failed compilation: the DSL line first, then the generated line
  with NVRTC's caret, a hint, and the full log.
"""

from __future__ import annotations

import bisect
import linecache
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from argus.backend.cuda.errors import CompileError

LineMap = Mapping[int, str]
"""Generated CUDA line (1-based) -> DSL location ``"file.py:LINE"``."""

_DSL_COMMENT = re.compile(r"//\s*(?P<location>[^\s:]+\.py:\d+)\b")
_FRONTEND = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<severity>catastrophic error|error|warning|remark)"
    r"(?: #\w+(?:-\w)?)?: (?P<message>.*)$"
)
_PTXAS = re.compile(r"^ptxas[^,\n]*?, line (?P<line>\d+); (?P<severity>error|warning)\s*: (?P<message>.*)$")
_TOOL = re.compile(
    r"^(?P<tool>nvrtc|ptxas)(?:\s+(?P<kind>fatal|error|warning|info))?\s*:\s*"
    r"(?:(?P<severity>error|warning)\s*:\s*)?(?P<message>.*)$"
)
#: The text of ptxas's info lines that report code it made slower than written (``(C7514) Potential Performance
#: Loss: wgmma.mma_async instructions are serialized ...``): reported as warnings.
_PERFORMANCE_LOSS = "Potential Performance Loss"
_PTX_LOC = re.compile(r"^\s*\.loc\s+(?P<file>\d+)\s+(?P<line>\d+)\b")
_PTX_FILE = re.compile(r'^\s*\.file\s+(?P<file>\d+)\s+"(?P<path>[^"]*)"')


@dataclass(frozen=True)
class Diagnostic:
    """One message from NVRTC's log.

    Attributes:
        tool: ``"nvrtc"`` (the C++ front end) or ``"ptxas"`` (the PTX assembler).
        severity: ``"error"``, ``"catastrophic error"``, ``"warning"``, ``"remark"`` or ``"fatal"``.
        message: the message text, without file and line.
        file: the file NVRTC names (the program, a header), ``"ptx"`` for ptxas, or None.
        line: the line in `file` (for ptxas: the PTX line).
        generated_line: the line of the generated CUDA source, when known.
        location: ``"file.py:LINE"`` of the DSL, when the generated line maps to one.
    """

    tool: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    generated_line: int | None = None
    location: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity in ("error", "catastrophic error", "fatal")

    def __str__(self) -> str:
        where = self.location or (f"{self.file}:{self.line}" if self.file and self.line else self.tool)
        if self.location and self.generated_line is not None:
            where += f" (generated line {self.generated_line})"
        return f"{where}: {self.severity}: {self.message}"


def derive_line_map(source: str) -> dict[int, str]:
    """Generated line -> DSL location, for every line of `source` carrying a ``// file.py:LINE`` comment.

    Only the commented lines are keys; `dsl_location` extends each to the lines below it. The last such
    comment on a line wins.
    """
    line_map: dict[int, str] = {}
    for number, text in enumerate(source.splitlines(), start=1):
        matches = _DSL_COMMENT.findall(text)
        if matches:
            line_map[number] = matches[-1]
    return line_map


def dsl_location(line_map: LineMap, generated_line: int | None) -> str | None:
    """The DSL location of the nearest mapped line at or above `generated_line`, or None."""
    if generated_line is None or not line_map:
        return None
    keys = sorted(line_map)
    index = bisect.bisect_right(keys, generated_line) - 1
    return line_map[keys[index]] if index >= 0 else None


def ptx_line_to_source_line(ptx: str, ptx_line: int, program_name: str) -> int | None:
    """The generated CUDA line that PTX line `ptx_line` came from, read off the nearest ``.loc`` above it.

    Only ``.loc`` directives naming `program_name` count (not headers); None without ``-lineinfo``.
    """
    lines = ptx.splitlines()
    program_files = {
        match["file"] for text in lines if (match := _PTX_FILE.match(text)) and _same_file(match["path"], program_name)
    }
    for text in reversed(lines[: max(ptx_line, 0)]):
        match = _PTX_LOC.match(text)
        if match and match["file"] in program_files:
            return int(match["line"])
    return None


def _same_file(path: str, program_name: str) -> bool:
    return path == program_name or path.replace("\\", "/").rsplit("/", 1)[-1] == program_name


def parse_log(log: str, *, program_name: str, line_map: LineMap, ptx: str | None = None) -> tuple[Diagnostic, ...]:
    """Every error and warning in `log`, with generated lines and DSL locations filled in where known."""
    diagnostics: list[Diagnostic] = []
    for text in log.splitlines():
        text = text.rstrip()
        if match := _FRONTEND.match(text):
            line = int(match["line"])
            ours = _same_file(match["file"], program_name)
            generated = line if ours else None
            diagnostics.append(
                Diagnostic(
                    tool="nvrtc",
                    severity=match["severity"],
                    message=match["message"].strip(),
                    file=match["file"],
                    line=line,
                    generated_line=generated,
                    location=dsl_location(line_map, generated),
                )
            )
        elif match := _PTXAS.match(text):
            ptx_line = int(match["line"])
            generated = ptx_line_to_source_line(ptx, ptx_line, program_name) if ptx else None
            diagnostics.append(
                Diagnostic(
                    tool="ptxas",
                    severity=match["severity"],
                    message=match["message"].strip(),
                    file="ptx",
                    line=ptx_line,
                    generated_line=generated,
                    location=dsl_location(line_map, generated),
                )
            )
        elif (match := _TOOL.match(text)) and _PERFORMANCE_LOSS in match["message"]:
            # an info line, but one a kernel author must see: ptxas serialized the wgmma pipeline (C7514: a non-wgmma
            # instruction touches an accumulator register while MMAs are in flight), several times slower K loops
            diagnostics.append(Diagnostic(tool=match["tool"], severity="warning", message=match["message"].strip()))
        elif (match := _TOOL.match(text)) and (severity := match["severity"] or match["kind"]) not in (None, "info"):
            if severity == "fatal" and any(d.tool == "ptxas" and d.is_error for d in diagnostics):
                continue  # "ptxas fatal : Ptx assembly aborted due to errors" repeats what came before
            diagnostics.append(Diagnostic(tool=match["tool"], severity=severity, message=match["message"].strip()))
    return tuple(diagnostics)


def compile_error(
    *,
    status: str,
    log: str,
    source: str,
    program_name: str,
    arch: str,
    options: Sequence[str],
    line_map: LineMap,
    ptx: str | None,
) -> CompileError:
    """The `CompileError` for a failed NVRTC run: DSL line first, then the generated line, hint and log."""
    diagnostics = parse_log(log, program_name=program_name, line_map=line_map, ptx=ptx)
    errors = [d for d in diagnostics if d.is_error]
    first = errors[0] if errors else None
    if status == "NVRTC_ERROR_INVALID_OPTION":
        reason = first.message if first else "an option was rejected"
        return CompileError(
            "COMPILE_OPTION",
            f"NVRTC rejected an option for {program_name}: {reason}",
            log=log,
            diagnostics=diagnostics,
            program_name=program_name,
            source=source,
            options=options,
            details="  options: " + " ".join(options),
            hint="see NVRTC's supported compile options (nvrtc --help lists them); "
            "the architecture goes in arch=, not in options",
        )
    summary = first.message if first else f"NVRTC returned {status}"
    details: list[str] = []
    if first is not None:
        if first.location:
            details.append(f"  at {first.location}")
            dsl_text = _dsl_source_line(first.location)
            if dsl_text is not None:
                line_number = first.location.rsplit(":", 1)[1]
                details.append(f"    {line_number:>5} | {dsl_text}")
        if first.generated_line is not None:
            details.append(f"  generated {program_name}:{first.generated_line}")
            details += _excerpt(source, first.generated_line, log, first)
        elif first.tool == "ptxas" and first.line is not None:
            details.append(f"  in the PTX at line {first.line} (no .loc maps it to {program_name})")
    for other in errors[1:]:
        details.append(f"  also: {other}")
    return CompileError(
        "COMPILE_NVRTC",
        f"NVRTC could not compile {program_name} for {arch}: {summary}",
        log=log,
        location=first.location if first else None,
        generated_line=first.generated_line if first else None,
        diagnostics=diagnostics,
        program_name=program_name,
        source=source,
        options=options,
        details="\n".join(details) or None,
        hint=_hint(first, log),
    )


def _dsl_source_line(location: str) -> str | None:
    path, _, line = location.rpartition(":")
    if not path or not line.isdigit():
        return None
    text = linecache.getline(path, int(line))
    return text.rstrip() if text.strip() else None


def _excerpt(source: str, line: int, log: str, diagnostic: Diagnostic) -> list[str]:
    """The generated line, with NVRTC's caret under it when the log has one."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return []
    text = lines[line - 1]
    excerpt = [f"    {line:>5} | {text}"]
    caret = _caret_column(log, diagnostic, text)
    if caret is not None:
        excerpt.append(f"    {'':>5} | {' ' * caret}^")
    return excerpt


def _caret_column(log: str, diagnostic: Diagnostic, text: str) -> int | None:
    """NVRTC echoes the offending line (indented by 2) and a caret line under its message; find the caret."""
    log_lines = log.splitlines()
    header = f"({diagnostic.line}): {diagnostic.severity}"
    for index, entry in enumerate(log_lines):
        if header in entry and diagnostic.message in entry:
            for follow in log_lines[index + 1 : index + 4]:
                if follow.strip() == "^":
                    column = len(follow) - len(follow.lstrip()) - 2
                    return column if 0 <= column <= len(text) else None
            return None
    return None


def _hint(first: Diagnostic | None, log: str) -> str:
    if "cannot open source file" in log:
        return (
            "the header is not on the include path: pass include_dirs=..., or set ARGUS_CUDA_HOME to a toolkit "
            "that has it (NVRTC cannot include host-only headers such as cuda.h or <stdlib.h>; declare what "
            "device code needs, e.g. an opaque alignas(64) 128-byte struct for CUtensorMap)"
        )
    if first is not None and first.tool == "ptxas":
        return (
            "ptxas rejected the PTX (usually inline asm): check the instruction's spelling, operands and "
            "that the target supports it (wgmma, setmaxnreg and TMA need sm_90a)"
        )
    if first is not None and first.location:
        return (
            f"if {first.location} is valid DSL, this is a code-generator bug: the generated source is in "
            "CompileError.source"
        )
    return "the generated source is in CompileError.source; its // file.py:LINE comments lead back to the DSL"
