"""Verifier results: findings, counterexamples, and their three renderings.

A `Result` holds the `Finding`s of one kernel; a violated finding carries a `Counterexample`: the
concrete block, thread (warpgroup / warp / lane), loop iterations and problem sizes under which the
invariant fails, the element (buffer, index, logical coordinate), the expected and the actual tag,
the accesses involved (for races) and the chain of operations that brought the value there.

Renderings:

* `Counterexample.render_text` — GPUVerify's style: a headline such as ``possible write-write race
  on sA[4092]``, then each access with its thread, block and source line;
* `Counterexample.render_table` — Faial's style: a table of launch values (grid point, problem sizes)
  and one of per-thread variables (plain text, or a `rich` table);
* `Counterexample.to_json` / `Result.to_json` — plain data for the agent.

A finding may carry a `Blame`: the statement that made the fact false (a ``T.assume`` too weak, an allocation
that crosses the budget, a misplaced commit or wait), which is not always where the failure surfaced, with the
statements in effect (every allocation with its bytes, the assumptions on a symbol) and, where the verifier
proved one, the change that makes the proof go through (`argus.verify.blame` computes them).

`Finding.from_json` reads a finding back from its ``to_json()`` (as the run store keeps it), so that a stored
counterexample is rendered by the same `render_text`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from argus.atoms.common import WARP_SIZE, WARPGROUP_SIZE
from argus.ir.expr import SourceLoc
from argus.verify.catalog import Severity, entry


class Verdict(StrEnum):
    VERIFIED = "verified"
    VIOLATED = "violated"
    UNKNOWN = "unknown"


def _loc_json(loc: SourceLoc | None) -> dict[str, Any] | None:
    if loc is None:
        return None
    return {"file": loc.file, "line": loc.line, "col": loc.col, "text": loc.text.strip()}


def _loc_from_json(data: dict[str, Any] | None) -> SourceLoc | None:
    if not data:
        return None
    return SourceLoc(data["file"], data["line"], data.get("col", 0), data.get("text", ""))


def _loc_short(loc: SourceLoc | None) -> str:
    return f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else "<unknown line>"


@dataclass(frozen=True)
class ThreadPoint:
    """A thread of a block: its index, and where it sits (its warpgroup, warp and lane)."""

    thread: int
    role: str | None = None

    @property
    def warpgroup(self) -> int:
        return self.thread // WARPGROUP_SIZE

    @property
    def warp(self) -> int:
        return self.thread // WARP_SIZE

    @property
    def lane(self) -> int:
        return self.thread % WARP_SIZE

    def __str__(self) -> str:
        role = f", role {self.role}" if self.role else ""
        return f"thread {self.thread} (warpgroup {self.warpgroup}, warp {self.warp}, lane {self.lane}{role})"

    def to_json(self) -> dict[str, Any]:
        return {
            "thread": self.thread,
            "warpgroup": self.warpgroup,
            "warp": self.warp,
            "lane": self.lane,
            "role": self.role,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ThreadPoint | None:
        return cls(data["thread"], data.get("role")) if data else None


@dataclass(frozen=True)
class Element:
    """A data element: buffer and memory space, the physical index (shared-memory element offset,
    global row-major index, or register value index), and the logical coordinate in the buffer."""

    buffer: str
    space: str
    index: int | None = None
    coord: tuple[int, ...] | None = None
    value: int | None = None  # fragments: the register value index of the holding thread

    def __str__(self) -> str:
        if self.space == "fragment":
            where = f"{self.buffer} value {self.value}"
            return where + (f" (element {self.coord})" if self.coord is not None else "")
        text = f"{self.buffer}[{self.index}]" if self.index is not None else self.buffer
        return text + (f" (element {self.coord})" if self.coord is not None else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "buffer": self.buffer,
            "space": self.space,
            "index": self.index,
            "coord": list(self.coord) if self.coord is not None else None,
            "value": self.value,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Element | None:
        if not data:
            return None
        coord = tuple(data["coord"]) if data.get("coord") is not None else None
        return cls(data["buffer"], data["space"], data.get("index"), coord, data.get("value"))


@dataclass(frozen=True)
class TagValue:
    """A concrete tag: a name and integer coordinates; `masked` when the element is the fill value
    of an out-of-bounds part of a global window."""

    name: str
    coords: tuple[int, ...] = ()
    masked: bool = False

    def __str__(self) -> str:
        text = f"{self.name}({', '.join(str(c) for c in self.coords)})" if self.coords else self.name
        return text + " [masked]" if self.masked else text

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "coords": list(self.coords), "masked": self.masked}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> TagValue | None:
        return cls(data["name"], tuple(data.get("coords", ())), data.get("masked", False)) if data else None


@dataclass(frozen=True)
class Access:
    """One memory access of a race or pipeline counterexample."""

    kind: str  # "read" or "write"
    op: str  # the operation, e.g. "copy (cp.async)"
    loc: SourceLoc | None
    thread: ThreadPoint | None
    loops: dict[str, int] = field(default_factory=dict)
    element: Element | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "op": self.op,
            "loc": _loc_json(self.loc),
            "thread": self.thread.to_json() if self.thread else None,
            "loops": dict(self.loops),
            "element": self.element.to_json() if self.element else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Access:
        return cls(data["kind"], data["op"], _loc_from_json(data.get("loc")), ThreadPoint.from_json(data.get("thread")),
                   dict(data.get("loops") or {}), Element.from_json(data.get("element")))  # fmt: skip


@dataclass(frozen=True)
class ChainStep:
    """One operation on the path that brought a value to the point of the failure (newest first)."""

    op: str
    loc: SourceLoc | None
    detail: str = ""
    loops: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        loops = ", ".join(f"{k}={v}" for k, v in self.loops.items())
        return (
            f"{_loc_short(self.loc)}: {self.op}"
            + (f" ({loops})" if loops else "")
            + (f": {self.detail}" if self.detail else "")
        )

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "loc": _loc_json(self.loc), "detail": self.detail, "loops": dict(self.loops)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChainStep:
        return cls(data["op"], _loc_from_json(data.get("loc")), data.get("detail", ""), dict(data.get("loops") or {}))


@dataclass(frozen=True)
class Counterexample:
    """Concrete values under which an invariant fails."""

    code: str
    message: str
    op_loc: SourceLoc | None  # the offending operation
    assertion_loc: SourceLoc | None = None  # the user assertion (TAG_ASSERT), else None
    program_point: str = ""
    block: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, int] = field(default_factory=dict)
    thread: ThreadPoint | None = None
    loops: dict[str, int] = field(default_factory=dict)
    element: Element | None = None
    expected: TagValue | None = None
    actual: TagValue | None = None
    accesses: tuple[Access, ...] = ()
    chain: tuple[ChainStep, ...] = ()
    variables: dict[str, int] = field(default_factory=dict)  # other per-thread values (atom lane, k, ...)

    # --- GPUVerify-style text -------------------------------------------------------------------------
    def render_text(self) -> str:
        sev = entry(self.code).severity.value
        where = self.assertion_loc or self.op_loc
        lines = [f"{_loc_short(where)}: {sev}[{self.code}]: {self.message}"]
        if self.block:
            lines.append(f"  block ({_kv(self.block)})" + (f", problem size {_kv(self.shapes)}" if self.shapes else ""))
        elif self.shapes:  # a fact about the whole launch (coverage): no block of its own
            lines.append(f"  problem size {_kv(self.shapes)}")
        if self.accesses:
            for a in self.accesses:
                lines.append("")
                head = f"{_loc_short(a.loc)}: {a.kind} by {a.thread}" if a.thread else f"{_loc_short(a.loc)}: {a.kind}"
                if a.loops:
                    head += f", iteration {_kv(a.loops)}"
                lines.append(head + f" ({a.op})")
                if a.element is not None:
                    lines.append(f"    element {a.element}")
                if a.loc is not None and a.loc.text:
                    lines.append(f"    {a.loc.text.strip()}")
        else:
            if self.thread is not None:
                lines.append(f"  {self.thread}" + (f", iteration {_kv(self.loops)}" if self.loops else ""))
            elif self.loops:
                lines.append(f"  iteration {_kv(self.loops)}")
            if self.element is not None:
                lines.append(f"  element {self.element}")
            if self.expected is not None and self.actual is not None:
                lines.append(f"  expected tag {self.expected}, actual tag {self.actual}")
            elif self.actual is not None:
                lines.append(f"  tag {self.actual}")
            if self.variables:
                lines.append(f"  with {_kv(self.variables)}")
            if self.op_loc is not None:
                if self.assertion_loc is not None and self.op_loc != self.assertion_loc:
                    lines.append(f"  at {_loc_short(self.op_loc)}")
                if self.op_loc.text:
                    lines.append(f"    {self.op_loc.text.strip()}")
        if self.chain:
            lines.append("  how the value got there (newest first):")
            lines += [f"    {step}" for step in self.chain]
        return "\n".join(lines)

    # --- Faial-style tables -----------------------------------------------------------------------------
    def table_rows(self) -> tuple[list[tuple[str, str]], list[str], list[tuple[str, list[str]]]]:
        """(launch rows, thread column titles, per-thread rows) of the tables."""
        launch = [(k, str(v)) for k, v in {**self.block, **self.shapes}.items()]
        if self.accesses:
            titles = [f"{a.kind} ({_loc_short(a.loc)})" for a in self.accesses]
            threads = [a.thread for a in self.accesses]
            loops = [a.loops for a in self.accesses]
            elements = [a.element for a in self.accesses]
        else:
            titles = ["thread"]
            threads = [self.thread]
            loops = [self.loops]
            elements = [self.element]
        rows: list[tuple[str, list[str]]] = []

        def add(name: str, values: list[Any]) -> None:
            if any(v is not None for v in values):
                rows.append((name, ["-" if v is None else str(v) for v in values]))

        add("threadIdx.x", [t.thread if t else None for t in threads])
        add("warpgroup", [t.warpgroup if t else None for t in threads])
        add("warp", [t.warp if t else None for t in threads])
        add("lane", [t.lane if t else None for t in threads])
        names = sorted({k for lp in loops for k in lp})
        for n in names:
            add(n, [lp.get(n) for lp in loops])
        add("element", [e for e in elements])
        for k, v in self.variables.items():
            add(k, [v] + [None] * (len(titles) - 1))
        if not self.accesses:
            add("expected tag", [self.expected])
            add("actual tag", [self.actual])
        return launch, titles, rows

    def render_table(self, rich: bool = False) -> Any:
        """The launch and per-thread tables: plain text, or (``rich=True``) a `rich` renderable."""
        launch, titles, rows = self.table_rows()
        if rich:
            from rich.console import Group
            from rich.table import Table

            t1 = Table(title="launch", show_header=True)
            for name, _ in launch:
                t1.add_column(name)
            t1.add_row(*[v for _, v in launch])
            t2 = Table(title="threads", show_header=True)
            t2.add_column("variable")
            for t in titles:
                t2.add_column(t)
            for name, values in rows:
                t2.add_row(name, *values)
            return Group(t1, t2)
        return _plain_tables(launch, titles, rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "op_loc": _loc_json(self.op_loc),
            "assertion_loc": _loc_json(self.assertion_loc),
            "program_point": self.program_point,
            "block": dict(self.block),
            "shapes": dict(self.shapes),
            "thread": self.thread.to_json() if self.thread else None,
            "loops": dict(self.loops),
            "element": self.element.to_json() if self.element else None,
            "expected": self.expected.to_json() if self.expected else None,
            "actual": self.actual.to_json() if self.actual else None,
            "accesses": [a.to_json() for a in self.accesses],
            "chain": [c.to_json() for c in self.chain],
            "variables": dict(self.variables),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Counterexample:
        """The inverse of `to_json`."""
        return cls(
            code=data["code"],
            message=data["message"],
            op_loc=_loc_from_json(data.get("op_loc")),
            assertion_loc=_loc_from_json(data.get("assertion_loc")),
            program_point=data.get("program_point", ""),
            block=dict(data.get("block") or {}),
            shapes=dict(data.get("shapes") or {}),
            thread=ThreadPoint.from_json(data.get("thread")),
            loops=dict(data.get("loops") or {}),
            element=Element.from_json(data.get("element")),
            expected=TagValue.from_json(data.get("expected")),
            actual=TagValue.from_json(data.get("actual")),
            accesses=tuple(Access.from_json(a) for a in data.get("accesses") or ()),
            chain=tuple(ChainStep.from_json(c) for c in data.get("chain") or ()),
            variables=dict(data.get("variables") or {}),
        )


def _kv(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def _plain_tables(launch: list[tuple[str, str]], titles: list[str], rows: list[tuple[str, list[str]]]) -> str:
    def table(header: list[str], body: list[list[str]]) -> list[str]:
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
        return [sep, fmt(header), sep, *[fmt(r) for r in body], sep]

    out = ["~~~~ launch ~~~~"]
    if launch:
        out += table([k for k, _ in launch], [[v for _, v in launch]])
    out.append("~~~~ threads ~~~~")
    out += table(["variable", *titles], [[name, *values] for name, values in rows])
    return "\n".join(out)


@dataclass(frozen=True)
class Blame:
    """The statement that made a finding's fact false, and why; `fix`: a change proved (or, for an unknown,
    found) to decide the fact; `related`: other statements in effect, each ``(loc, what)``."""

    loc: SourceLoc | None
    why: str
    fix: str | None = None
    related: tuple[tuple[SourceLoc | None, str], ...] = ()

    def render_text(self) -> str:
        stmt = f" {self.loc.text.split('  #')[0].strip()}" if self.loc is not None and self.loc.text else ""
        where = _loc_short(self.loc) if self.loc is not None else "<no statement>"
        lines = [f"  caused by: {where}{stmt} — {self.why}"]
        for loc, what in self.related:
            lines.append(f"    {_loc_short(loc) if loc is not None else '<no statement>'}: {what}")
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)

    def table_rows(self) -> list[tuple[str, str, str]]:
        """(role, line, statement or note) rows: the blamed statement, then the related ones, then the fix."""
        rows = [("caused by", _loc_short(self.loc) if self.loc else "-", self.why)]
        rows += [("related", _loc_short(loc) if loc else "-", what) for loc, what in self.related]
        if self.fix:
            rows.append(("fix", "-", self.fix))
        return rows

    def render_table(self, rich: bool = False) -> Any:
        rows = self.table_rows()
        if rich:
            from rich.table import Table

            t = Table(title="blame", show_header=True)
            for c in ("", "line", "what"):
                t.add_column(c)
            for r in rows:
                t.add_row(*r)
            return t
        widths = [max(len(r[i]) for r in [("", "line", "what"), *rows]) for i in range(3)]
        sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
        return "\n".join(["~~~~ blame ~~~~", sep, fmt(("", "line", "what")), sep, *[fmt(r) for r in rows], sep])

    def to_json(self) -> dict[str, Any]:
        return {
            "loc": _loc_json(self.loc),
            "line": self.loc.line if self.loc is not None else None,
            "why": self.why,
            "fix": self.fix,
            "related": [{"loc": _loc_json(loc), "what": what} for loc, what in self.related],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Blame | None:
        if not data:
            return None
        related = tuple((_loc_from_json(r.get("loc")), r["what"]) for r in data.get("related") or ())
        return cls(_loc_from_json(data.get("loc")), data["why"], data.get("fix"), related)


@dataclass(frozen=True)
class Finding:
    """One outcome of one check at one place: `verdict` violated (with a counterexample), unknown
    (with the reason and what to pin), or a warning (verdict violated, severity warning)."""

    code: str
    verdict: Verdict
    message: str
    loc: SourceLoc | None = None
    counterexample: Counterexample | None = None
    reason: str | None = None  # unknown: why
    pin: str | None = None  # unknown: what to pin or change so that it can be decided
    details: dict[str, Any] = field(default_factory=dict)
    blame: Blame | None = None  # the statement that made the fact false (or, unknown: what would decide it)

    @property
    def severity(self) -> Severity:
        return entry(self.code).severity

    @property
    def hint(self) -> str:
        return entry(self.code).hint

    @property
    def is_error(self) -> bool:
        return self.verdict == Verdict.VIOLATED and self.severity == Severity.ERROR

    def render_text(self) -> str:
        if self.counterexample is not None:
            text = self.counterexample.render_text()
        else:
            sev = self.severity.value
            text = f"{_loc_short(self.loc)}: {sev}[{self.code}]: {self.message}"
            if self.loc is not None and self.loc.text:
                text += f"\n    {self.loc.text.strip()}"
        if self.reason:
            text += f"\n  reason: {self.reason}"
        if self.pin:
            text += f"\n  to decide it: {self.pin}"
        if self.blame is not None:
            text += "\n" + self.blame.render_text()
        if self.verdict == Verdict.VIOLATED:
            text += f"\n  hint: {self.hint}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "verdict": self.verdict.value,
            "severity": self.severity.value,
            "title": entry(self.code).title,
            "message": self.message,
            "loc": _loc_json(self.loc),
            "counterexample": self.counterexample.to_json() if self.counterexample else None,
            "reason": self.reason,
            "pin": self.pin,
            "hint": self.hint,
            "details": _jsonable(self.details),
            "blame": self.blame.to_json() if self.blame is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """The inverse of `to_json` (the derived severity, title and hint come from the catalog again; `details`
        stay as JSON)."""
        cex = data.get("counterexample")
        return cls(
            code=data["code"],
            verdict=Verdict(data["verdict"]),
            message=data["message"],
            loc=_loc_from_json(data.get("loc")),
            counterexample=Counterexample.from_json(cex) if cex else None,
            reason=data.get("reason"),
            pin=data.get("pin"),
            details=dict(data.get("details") or {}),
            blame=Blame.from_json(data.get("blame")),
        )


def undecided(out: Any, message: str, *, loc: Any, pin: bool = False, **extra: Any) -> Finding:
    """The `Finding` for a check whose solver answer `out` is unknown: its code (``UNKNOWN_SOLVER`` unless the
    solve says which), `message`, where, the solver's reason; `pin` adds the catalog's hint for that code."""
    code = out.code or "UNKNOWN_SOLVER"
    if pin:
        extra["pin"] = entry(code).hint
    explain = getattr(out, "explain", None)
    if explain is not None and "blame" not in extra:
        extra["blame"] = explain()
    return Finding(code, Verdict.UNKNOWN, message, loc=loc, reason=out.reason, **extra)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    return str(x)


@dataclass(frozen=True)
class CheckRecord:
    """What was checked, where, with which outcome and how long it took."""

    check: str
    target: str
    verdict: Verdict
    seconds: float
    #: outside the check's scope (`Context.record_not_checked`): listed in `Result.not_checked`, no finding
    not_checked: bool = False


@dataclass(frozen=True)
class Result:
    """All findings for one traced kernel."""

    kernel: str
    params: dict[str, Any]
    findings: tuple[Finding, ...]
    checks: tuple[CheckRecord, ...] = ()
    seconds: float = 0.0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == Severity.WARNING]

    @property
    def unknowns(self) -> list[Finding]:
        return [f for f in self.findings if f.verdict == Verdict.UNKNOWN]

    @property
    def verdict(self) -> Verdict:
        """violated if any error, else unknown if anything is undecided, else verified (warnings
        never change the verdict)."""
        if self.errors:
            return Verdict.VIOLATED
        if self.unknowns:
            return Verdict.UNKNOWN
        return Verdict.VERIFIED

    @property
    def not_checked(self) -> list[CheckRecord]:
        """Checks that were not made, each with its reason in its target: a property outside what a check covers
        (an output coverage through a window bounded by tensor data, addresses that depend on data for the
        performance check) is recorded so (`Context.record_not_checked`, its target saying why), never as a finding.
        A `verified` verdict does not cover these; `render_text` and `to_json` list them (docs/verify.md, "What
        verified means"). A check that was attempted and not decided is an unknown finding instead, not listed here."""
        return [c for c in self.checks if c.not_checked]

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def render_text(self, tables: bool = False) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        head = f"{self.kernel}({params}): {self.verdict.value}"
        skipped = self.not_checked
        head += (
            f" — {len(self.errors)} error(s), {len(self.warnings)} warning(s), {len(self.unknowns)} unknown"
            + (f", {len(skipped)} not checked" if skipped else "")
            + f" [{len(self.checks)} checks, {self.seconds:.2f} s]"
        )
        parts = [head]
        for f in sorted(self.findings, key=_finding_order):
            parts.append("")
            parts.append(f.render_text())
            if tables and f.counterexample is not None:
                parts.append(f.counterexample.render_table())
            if tables and f.blame is not None:
                parts.append(f.blame.render_table())
        if skipped:
            parts += ["", "not checked (the verdict does not cover these):"]
            parts += [f"  - {c.check}: {c.target}" for c in skipped]
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "params": _jsonable(self.params),
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 3),
            "findings": [f.to_json() for f in self.findings],
            "not_checked": [{"check": c.check, "target": c.target} for c in self.not_checked],
            "checks": [
                {"check": c.check, "target": c.target, "verdict": c.verdict.value, "seconds": round(c.seconds, 4)}
                for c in self.checks
            ],
        }


def _finding_order(f: Finding) -> tuple:
    rank = {Severity.ERROR: 0, Severity.UNKNOWN: 1, Severity.WARNING: 2}[f.severity]
    line = f.loc.line if f.loc is not None else 0
    return (rank, line, f.code)
