"""`argus explain CODE`: what a diagnostic code means and what to do about it, from the diagnostics catalog
(`argus.diagnostics.Code`, docs/diagnostics.md).

``CODE`` is a code as errors print it (any case); a category (``DSL``, ``gate``) or a prefix (``RUNTIME_ARG``)
lists the codes it covers instead. A verifier finding also shows its title, severity and description
(`argus.verify.catalog`), a gate outcome its stage and meaning (`argus.eval.codes`). ``--json`` alone prints a
document to stdout, ``--json FILE`` writes it to FILE: for one code, an object with ``code``, ``category``,
``message``, ``fix`` (and ``severity``, ``title``, ``description`` for a verifier finding; ``stage``, ``meaning``
for a gate outcome); for a listing, a list of such objects without the extras.
"""

from __future__ import annotations

import difflib
from typing import Any

import typer

from argus.cli.errors import user_error
from argus.cli.output import STDOUT, Column, emit_json, json_option, print_table
from argus.diagnostics import ArgusError, Category, Code, lookup
from argus.diagnostics.catalog import codes
from argus.diagnostics.catalog import explain as entry_text

_SCHEMA = (
    'one code: {"code", "category", "message", "fix"} (+ "severity", "title", "description" for a verifier '
    'finding; "stage", "meaning" for a gate outcome); a listing: a list of {"code", "category", "message", "fix"}'
)


def explain(
    code: str = typer.Argument(..., metavar="CODE", help="a code (DSL_UNKNOWN_PARAM), a category (DSL) or a prefix"),
    json_file: str | None = json_option(_SCHEMA),
) -> None:
    """What a diagnostic code means and how to fix it (or the codes of a category or prefix)."""
    text = code.strip().upper()
    entry = lookup(text)
    if entry is not None:
        _show(_details(entry), entry_text(entry), json_file)
        return
    retired = _retired(text)
    if retired is not None:
        _show(retired, _retired_text(retired), json_file)
        return
    listed = codes(text) if text in Category.__members__ else [c for c in Code if c.value.startswith(text)]
    if not listed:
        user_error(_unknown(text))
    doc = [_base(c) for c in listed]
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    print_table([Column("code", identifier=True), Column("message")], [(c.value, c.message) for c in listed])
    if json_file is not None:
        typer.echo(f"wrote {emit_json(doc, json_file)}", err=True)


def _base(code: Code) -> dict[str, Any]:
    return {"code": code.value, "category": code.category.value, "message": code.message, "fix": code.fix}


def _details(code: Code) -> dict[str, Any]:
    """The catalog entry, with the verifier's or the gate's own description of the code where it has one."""
    doc = _base(code)
    doc.update(_domain(code.value))
    return doc


def _domain(code: str) -> dict[str, Any]:
    """What the verifier's catalog (title, severity, description) or the gate's (stage, meaning) says of `code`."""
    from argus.eval.codes import CODES as GATE_CODES
    from argus.verify.catalog import CATALOG as VERIFY_CODES

    if code in VERIFY_CODES:
        e = VERIFY_CODES[code]
        return {"severity": e.severity.value, "title": e.title, "description": e.description}
    if code in GATE_CODES:
        g = GATE_CODES[code]
        return {"stage": g.stage, "meaning": g.meaning}
    return {}


def _retired(code: str) -> dict[str, Any] | None:
    """A code the verifier's or the gate's catalog lists but nothing in this version reports (so `Code` lacks it)."""
    doc = _domain(code)
    if not doc:
        return None
    from argus.eval.codes import CODES as GATE_CODES
    from argus.verify.catalog import CATALOG as VERIFY_CODES

    fix = VERIFY_CODES[code].hint if code in VERIFY_CODES else GATE_CODES[code].hint
    return {"code": code, "category": None, "message": None, "fix": fix, **doc, "reported": False}


def _retired_text(doc: dict[str, Any]) -> str:
    lines = [doc["code"], "  listed by the verifier's or the gate's catalog, but nothing in this version reports it"]
    lines += [f"  {key}: {doc[key]}" for key in ("title", "severity", "stage", "meaning", "fix") if key in doc]
    return "\n".join(lines)


def _show(doc: dict[str, Any], text: str, json_file: str | None) -> None:
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    extra = [f"  {key}: {doc[key]}" for key in ("title", "severity", "stage", "meaning") if key in doc]
    if "description" in doc:
        extra.append(f"  description: {doc['description']}")
    typer.echo("\n".join([text, *extra]) if doc.get("reported", True) else text)
    if json_file is not None:
        typer.echo(f"wrote {emit_json(doc, json_file)}", err=True)


def _unknown(text: str) -> ArgusError:
    close = difflib.get_close_matches(text, [c.value for c in Code], n=3, cutoff=0.6)
    return ArgusError(
        "CLI_UNKNOWN_CODE",
        f"no diagnostic code {text!r}",
        f"did you mean {', '.join(close)}?" if close else None,
    )
