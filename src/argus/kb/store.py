"""Loading entries: every ``*.toml`` file of a directory (by default the curated entries shipped
in ``argus/kb/entries``), validated one by one and then together (unique ids, `related` ids that
exist). Errors from all files are gathered, so one run shows everything that is wrong."""

from __future__ import annotations

import difflib
import functools
import pathlib
import tomllib

from argus.kb.errors import KBError, SchemaError, SchemaProblem
from argus.kb.schema import Entry, parse_entry

ENTRIES_DIR = pathlib.Path(__file__).resolve().parent / "entries"


def _read(path: pathlib.Path, expected_id: str | None) -> Entry:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise SchemaError([SchemaProblem(path.name, "<file>", f"not valid TOML: {err}")]) from None
    return parse_entry(data, path.name, expected_id=expected_id)


def load_file(path: pathlib.Path | str) -> Entry:
    """One entry file, validated (`SchemaError` names the file and each bad field); its id must be
    the file's name."""
    path = pathlib.Path(path)
    return _read(path, path.stem)


def load_entries(directory: pathlib.Path | str | None = None) -> tuple[Entry, ...]:
    """Every entry of `directory` (default: the shipped entries), sorted by id. Raises one
    `SchemaError` that lists the problems of every malformed file; an id declared by two files
    raises with code ``KB_DUPLICATE_ID`` naming both; an id that differs from its file's name and a
    `related` id that no entry has are problems too."""
    directory = pathlib.Path(directory) if directory is not None else ENTRIES_DIR
    if not directory.is_dir():
        raise KBError("KB_NO_ENTRIES", f"no entry directory {directory}")
    problems: list[SchemaProblem] = []
    loaded: list[tuple[pathlib.Path, Entry]] = []
    for path in sorted(directory.glob("*.toml")):
        try:
            loaded.append((path, _read(path, None)))
        except SchemaError as err:
            problems += err.problems
    seen: dict[str, str] = {}
    duplicates = []
    for path, e in loaded:
        if e.id in seen:
            duplicates.append(SchemaProblem(path.name, "id", f"duplicate id {e.id!r} (also declared in {seen[e.id]})"))
        seen.setdefault(e.id, path.name)
    if duplicates:
        raise SchemaError(duplicates + problems, code="KB_DUPLICATE_ID")
    for path, e in loaded:
        if e.id != path.stem:
            problems.append(SchemaProblem(path.name, "id", f"{e.id!r} differs from the file name {path.stem!r}"))
        for i, other in enumerate(e.related):
            if other not in seen:
                problems.append(SchemaProblem(path.name, f"related[{i}]", f"no entry with id {other!r}"))
    if problems:
        raise SchemaError(problems)
    return tuple(sorted((e for _, e in loaded), key=lambda e: e.id))


@functools.cache
def _shipped() -> tuple[Entry, ...]:
    return load_entries(ENTRIES_DIR)


def entries() -> tuple[Entry, ...]:
    """The shipped entries (validated once per process)."""
    return _shipped()


def get_entry(entry_id: str) -> Entry:
    """The shipped entry with this id (`KBError` ``KB_UNKNOWN_ENTRY`` with the closest id)."""
    for e in entries():
        if e.id == entry_id:
            return e
    close = difflib.get_close_matches(entry_id, [e.id for e in entries()], n=1)
    raise KBError(
        "KB_UNKNOWN_ENTRY",
        f"no knowledge-base entry {entry_id!r}",
        f"did you mean {close[0]!r}?" if close else "`argus kb list` shows them all",
    )


def search(text: str) -> list[Entry]:
    """Entries whose id, title, intent, category or keywords contain every word of `text`
    (case-insensitive), best (most words in id/title/keywords) first."""
    words = [w for w in text.lower().split() if w]
    if not words:
        return list(entries())
    found = []
    for e in entries():
        strong = " ".join((e.id, e.title, " ".join(e.keywords), e.category)).lower()
        weak = " ".join((e.intent, e.locus.description, e.transform.policy or "")).lower()
        if all(w in strong or w in weak for w in words):
            found.append((-sum(w in strong for w in words), e.id, e))
    return [e for *_, e in sorted(found, key=lambda x: (x[0], x[1]))]


def with_skills(*directories: pathlib.Path | str) -> tuple[Entry, ...]:
    """The shipped entries and the mined skills (KLineage, `argus.lineage.skills`) of `directories` that exist,
    each directory validated as `load_entries` does; an id declared twice raises `SchemaError`
    ``KB_DUPLICATE_ID``. Pass the result as ``retrieve(..., entries=...)``."""
    found = list(entries())
    seen = {e.id: "curated" for e in found}
    for directory in directories:
        directory = pathlib.Path(directory)
        if not directory.is_dir():
            continue
        for e in load_entries(directory):
            if e.id in seen:
                raise SchemaError(
                    [SchemaProblem(e.file, "id", f"duplicate id {e.id!r} (also in {seen[e.id]})")],
                    code="KB_DUPLICATE_ID",
                )
            seen[e.id] = str(directory)
            found.append(e)
    return tuple(found)
