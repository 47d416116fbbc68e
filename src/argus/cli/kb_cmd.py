"""`argus kb list | show ID | search WORDS | features KERNEL | match KERNEL`: the knowledge base from the command line.

Tables follow `argus.cli.output` (ids never cut; piped: tab-separated). ``--json`` alone prints a document to stdout,
``--json FILE`` writes it to FILE. The documents:

* ``list``, ``search``: a list of ``{"id", "category", "title", "transform"}`` (transform: the policy the entry's
  transform sets, or null);
* ``show``: the entry as its YAML file holds it (`argus.kb.schema` ``to_dict``);
* ``features``: ``{feature name: value}``;
* ``match``: a list of ``{"rank", "id", "score", "applicable", "transform", "reasons"}`` (transform: ``"ready"``
  when a transform can be applied now, else the policy or null; reasons: the ranking's explanations).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from argus.cli.errors import user_error
from argus.cli.output import STDOUT, Column, OptionalValueCommand, emit_json, json_option, print_table
from argus.diagnostics import ArgusError

app = typer.Typer(help="The knowledge base of optimization techniques.", no_args_is_help=True)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


_ENTRY_LIST = 'a list of {"id", "category", "title", "transform"} (transform: the policy it sets, or null)'


def _transform_text(entry) -> str:
    t = entry.transform
    return f"{t.policy}" if t.kind == "policy" else "-"


def _entry_json(entry) -> dict:
    return {"id": entry.id, "category": entry.category, "title": entry.title,
            "transform": entry.transform.policy if entry.transform.kind == "policy" else None}  # fmt: skip


def _print_entries(found, json_file: str | None) -> None:
    """The entries as a table (or, ``--json``, a document), and how many there are (to stderr when piped)."""
    doc = [_entry_json(e) for e in found]
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    columns = [Column("id", identifier=True), Column("category", identifier=True), Column("title"),
               Column("transform", identifier=True, optional=True)]  # fmt: skip
    form = print_table(columns, [(e.id, e.category, e.title, _transform_text(e)) for e in found])
    (err if form == "tsv" else out).print(f"{len(found)} entries", markup=False, highlight=False)
    if json_file is not None:
        err.print(f"wrote {emit_json(doc, json_file)}", markup=False, highlight=False)


@app.command("list", cls=OptionalValueCommand)
def list_entries(
    category: str = typer.Option("", "--category", help="only entries of this category"),
    json_file: str | None = json_option(_ENTRY_LIST),
) -> None:
    """Every entry: id, category, title, and the policy its transform sets (- when none)."""
    from argus.kb import CATEGORIES, entries

    try:
        found = [e for e in entries() if not category or e.category == category]
    except ArgusError as e:
        user_error(e)
    if category and category not in CATEGORIES:
        err.print(f"no category {category!r}; one of: {', '.join(CATEGORIES)}", markup=False, highlight=False)
        raise typer.Exit(2)
    _print_entries(found, json_file)


@app.command("show", cls=OptionalValueCommand)
def show(
    entry_id: str = typer.Argument(..., metavar="ID", help="an entry id (argus kb list)"),
    json_file: str | None = json_option("the entry as its YAML file holds it"),
) -> None:
    """One entry in full: intent, locus, preconditions, signals, effect, risks, transform, example."""
    from argus.kb import get_entry

    try:
        e = get_entry(entry_id)
    except ArgusError as x:
        user_error(x)
    if json_file is not None:
        written = emit_json(e.to_dict(), json_file)
        if written is None:
            return
        err.print(f"wrote {written}", markup=False, highlight=False)
    p = lambda text="": out.print(text, markup=False, highlight=False)  # noqa: E731
    p(f"{e.id} -- {e.title}")
    p(f"category: {e.category}    file: {e.file}")
    p()
    p(" ".join(e.intent.split()))
    p()
    p(f"where: {e.locus.description} (locus op={e.locus.op})")
    if e.preconditions:
        p("preconditions:")
        columns = [Column("category"), Column("precondition"), Column("reason")]
        print_table(columns, [(c.category or "", c.text(), c.reason) for c in e.preconditions])
    if e.signals:
        p("signals:")
        columns = [Column("signal"), Column("weight", justify="right"), Column("reason")]
        rows = [(s.text(), f"{s.weight:g}" + (" x log2" if s.scale else ""), s.reason) for s in e.signals]
        print_table(columns, rows)
    p(f"effect: improves {', '.join(e.effect.improves)}; {e.effect.magnitude}")
    p(f"  when: {e.effect.when} (relieves the {e.effect.bound} bound)")
    p("risks:")
    rows = [(r.risk + (f" (invariant: {r.invariant})" if r.invariant else ""), ", ".join([*r.codes, *r.caught_by]))
            for r in e.risks]  # fmt: skip
    print_table([Column("risk"), Column("caught by")], rows)
    if e.transform.kind == "policy":
        p(f"transform: policy {e.transform.policy}, candidates {list(e.transform.candidates)}")
    else:
        p(f"transform: none -- {e.transform.reason}")
    p()
    p("before:")
    p(e.example.before.rstrip())
    p("after:")
    p(e.example.after.rstrip())
    if e.example.note:
        p(f"({e.example.note})")
    p()
    p(f"provenance: {e.provenance.source}; " + "; ".join(e.provenance.references))


@app.command("search", cls=OptionalValueCommand)
def search_entries(
    words: Annotated[list[str], typer.Argument(metavar="WORDS", help="words to look for")],
    json_file: str | None = json_option(_ENTRY_LIST),
) -> None:
    """Entries whose id, title, keywords, category or intent contain every word; exit 1 when none does."""
    from argus.kb import search

    found = search(" ".join(words))
    if not found:
        if json_file is not None:
            emit_json([], json_file)
        (err if json_file == STDOUT else out).print(
            f"no entry matches {' '.join(words)!r}", markup=False, highlight=False
        )
        raise typer.Exit(1)
    _print_entries(found, json_file)


@app.command("match", cls=OptionalValueCommand)
def match(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME"),
    k: int = typer.Option(10, "--k", help="how many entries to show"),
    verify_first: bool = typer.Option(True, "--verify/--no-verify", help="feed the verifier's warnings in"),
    all_entries: bool = typer.Option(False, "--all", help="also list entries that do not apply, with why"),
    json_file: str | None = json_option(
        'a list of {"rank", "id", "score", "applicable", "transform", "reasons"} (transform: "ready", the policy, '
        "or null)"
    ),
) -> None:
    """Rank the entries for a kernel by its features (and the verifier's warnings)."""
    from argus.kb import kernel_features, retrieve
    from argus.kernels.registry import load

    try:
        target = load(name)
        features = kernel_features(target)
        findings = None
        if verify_first:
            from argus.verify import verify_kernel

            findings = verify_kernel(features.kernel)
        matches = retrieve(features, findings=findings, k=None if all_entries else k, include_inapplicable=all_entries)
    except ArgusError as x:
        user_error(x)
    doc, rows = [], []
    for i, m in enumerate(matches, 1):
        transform = "ready" if m.transform_ready else _transform_text(m.entry)
        if m.applicable:
            why = next((r for r in m.reasons if r.startswith(("signal", "the kernel is"))), m.reasons[0])
        else:
            why = next((r for r in m.reasons if r.startswith(("fails", "no place"))), m.reasons[0])
        rows.append((str(i), m.entry.id, f"{m.score:.2f}", "yes" if m.applicable else "no", transform, why))
        doc.append({"rank": i, "id": m.entry.id, "score": m.score, "applicable": m.applicable,
                    "transform": None if transform == "-" else transform, "reasons": list(m.reasons)})  # fmt: skip
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    columns = [
        Column("rank", justify="right"),
        Column("id", identifier=True),
        Column("score", justify="right"),
        Column("applies"),
        Column("transform", identifier=True, optional=True),
        Column("why", min_width=24),
    ]
    print_table(columns, rows)
    if json_file is not None:
        err.print(f"wrote {emit_json(doc, json_file)}", markup=False, highlight=False)


@app.command("features", cls=OptionalValueCommand)
def features_cmd(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME"),
    json_file: str | None = json_option("{feature name: value}"),
) -> None:
    """The features a kernel has: what entry preconditions and signals test."""
    from argus.kb import FEATURES, kernel_features
    from argus.kernels.registry import load

    try:
        features = kernel_features(load(name))
    except ArgusError as x:
        user_error(x)
    data = features.to_json()
    if json_file == STDOUT:
        emit_json(data, json_file)
        return
    columns = [Column("feature", identifier=True), Column("value"), Column("meaning")]
    print_table(columns, [(key, str(value), FEATURES[key].description) for key, value in data.items()])
    if json_file is not None:
        err.print(f"wrote {emit_json(data, json_file)}", markup=False, highlight=False)
