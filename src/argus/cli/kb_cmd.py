"""`argus kb list | show ID | search WORDS | match KERNEL`: the knowledge base from the command line."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from argus.diagnostics import ArgusError

app = typer.Typer(help="The knowledge base of optimization techniques.", no_args_is_help=True)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def _transform_text(entry) -> str:
    t = entry.transform
    return f"{t.policy}" if t.kind == "policy" else "-"


def _table(found) -> Table:
    table = Table("id", "category", "title", "transform")
    for e in found:
        table.add_row(e.id, e.category, e.title, _transform_text(e))
    return table


@app.command("list")
def list_entries(
    category: str = typer.Option("", "--category", help="only entries of this category"),
) -> None:
    """Every entry: id, category, title, and the policy its transform sets (- when none)."""
    from argus.kb import CATEGORIES, entries

    try:
        found = [e for e in entries() if not category or e.category == category]
    except ArgusError as e:
        err.print(str(e), markup=False, highlight=False)
        raise typer.Exit(2) from None
    if category and category not in CATEGORIES:
        err.print(f"no category {category!r}; one of: {', '.join(CATEGORIES)}", markup=False, highlight=False)
        raise typer.Exit(2)
    out.print(_table(found))
    out.print(f"{len(found)} entries", markup=False, highlight=False)


@app.command("show")
def show(
    entry_id: str = typer.Argument(..., metavar="ID", help="an entry id (argus kb list)"),
    as_json: bool = typer.Option(False, "--json", help="print the entry as JSON"),
) -> None:
    """One entry in full: intent, locus, preconditions, signals, effect, risks, transform, example."""
    from argus.kb import get_entry

    try:
        e = get_entry(entry_id)
    except ArgusError as x:
        err.print(str(x), markup=False, highlight=False)
        raise typer.Exit(2) from None
    if as_json:
        import json

        out.print(json.dumps(e.to_dict(), indent=2), markup=False, highlight=False)
        return
    p = lambda text="": out.print(text, markup=False, highlight=False)  # noqa: E731
    p(f"{e.id} -- {e.title}")
    p(f"category: {e.category}    file: {e.file}")
    p()
    p(" ".join(e.intent.split()))
    p()
    p(f"where: {e.locus.description} (locus op={e.locus.op})")
    if e.preconditions:
        pre = Table("category", "precondition", "reason", title="preconditions")
        for c in e.preconditions:
            pre.add_row(c.category or "", c.text(), c.reason)
        out.print(pre)
    if e.signals:
        sig = Table("signal", "weight", "reason", title="signals")
        for s in e.signals:
            sig.add_row(s.text(), f"{s.weight:g}" + (" x log2" if s.scale else ""), s.reason)
        out.print(sig)
    p(f"effect: improves {', '.join(e.effect.improves)}; {e.effect.magnitude}")
    p(f"  when: {e.effect.when} (relieves the {e.effect.bound} bound)")
    risks = Table("risk", "caught by", title="risks")
    for r in e.risks:
        text = r.risk + (f"\n(invariant: {r.invariant})" if r.invariant else "")
        risks.add_row(text, ", ".join([*r.codes, *r.caught_by]))
    out.print(risks)
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


@app.command("search")
def search_entries(words: Annotated[list[str], typer.Argument(metavar="WORDS", help="words to look for")]) -> None:
    """Entries whose id, title, keywords, category or intent contain every word."""
    from argus.kb import search

    found = search(" ".join(words))
    if not found:
        out.print(f"no entry matches {' '.join(words)!r}", markup=False, highlight=False)
        raise typer.Exit(1)
    out.print(_table(found))


@app.command("match")
def match(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME"),
    k: int = typer.Option(10, "--k", help="how many entries to show"),
    verify_first: bool = typer.Option(True, "--verify/--no-verify", help="feed the verifier's warnings in"),
    all_entries: bool = typer.Option(False, "--all", help="also list entries that do not apply, with why"),
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
        err.print(str(x), markup=False, highlight=False)
        raise typer.Exit(2) from None
    table = Table("rank", "id", "score", "applies", "transform", "why")
    for i, m in enumerate(matches, 1):
        transform = "ready" if m.transform_ready else _transform_text(m.entry)
        if m.applicable:
            why = next((r for r in m.reasons if r.startswith(("signal", "the kernel is"))), m.reasons[0])
        else:
            why = next((r for r in m.reasons if r.startswith(("fails", "no place"))), m.reasons[0])
        table.add_row(str(i), m.entry.id, f"{m.score:.2f}", "yes" if m.applicable else "no", transform, why)
    out.print(table)


@app.command("features")
def features_cmd(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME"),
    as_json: bool = typer.Option(False, "--json", help="print the features as JSON"),
) -> None:
    """The features a kernel has: what entry preconditions and signals test."""
    from argus.kb import FEATURES, kernel_features
    from argus.kernels.registry import load

    try:
        features = kernel_features(load(name))
    except ArgusError as x:
        err.print(str(x), markup=False, highlight=False)
        raise typer.Exit(2) from None
    data = features.to_json()
    if as_json:
        import json

        out.print(json.dumps(data, indent=2), markup=False, highlight=False)
        return
    table = Table("feature", "value", "meaning")
    for key, value in data.items():
        table.add_row(key, str(value), FEATURES[key].description)
    out.print(table)
