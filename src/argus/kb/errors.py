"""The knowledge base's typed errors: one `KBError` with a stable code, and `SchemaError`, which
lists every problem of an entry file as (file, field, what is wrong)."""

from __future__ import annotations

from dataclasses import dataclass

from argus.diagnostics import ArgusError


class KBError(ArgusError):
    """A knowledge-base error (codes ``KB_*``): an unknown entry, a transform that does not apply,
    features or profile data that do not fit."""


@dataclass(frozen=True)
class SchemaProblem:
    """One thing wrong with one entry: the file it came from, the field (a dotted path such as
    ``risks[0].codes[1]``) and what is wrong with it."""

    file: str
    field: str
    problem: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.problem}"


class SchemaError(KBError):
    """An entry (or a set of entries) that does not follow the schema (code ``KB_SCHEMA``, or
    ``KB_DUPLICATE_ID`` when two files declare one id). `problems` lists each (file, field, problem)."""

    def __init__(self, problems: list[SchemaProblem], code: str = "KB_SCHEMA") -> None:
        self.problems = list(problems)
        files = sorted({p.file for p in self.problems})
        head = (
            f"{len(self.problems)} problem(s) in {', '.join(files)}" if len(files) > 1 else f"{files[0]} is malformed"
        )
        body = "\n".join(f"  - {p.field}: {p.problem}" if len(files) == 1 else f"  - {p}" for p in self.problems)
        super().__init__(
            code,
            f"{head}\n{body}",
            "see docs/kb.md for the schema; `argus kb show ID` prints a well-formed entry",
        )
