"""`argus calibrate ROWS.jsonl [...]`: how far the static cost model can be trusted on measured rows, per family,
and the correction they support (`argus.eval.calibration`; docs/agent.md, "Calibration").

Each family's table compares the uncalibrated estimate with the calibrated one, held out a problem (group) at a
time: the median error (a ratio; 1.00 is exact), Spearman's rank correlation over all rows and among each
problem's TOP fastest candidates, the regret of taking the model's first choice (its measured time over the best,
geometric mean), the share of problems whose first choice is within 2 % of the best, and trust_k (how many of the
model's top candidates to measure to hold one within 2 % of the best in 90 % of problems).

``--test ROWS`` fits on the positional rows and reports on the test rows instead (problems measured elsewhere or
later). ``--featurize`` computes the cost model's features of rows without them (traces every plan: slow).
``--out FILE`` writes the fitted calibration (the package's own is ``src/argus/eval/data/calibration.json``, fitted
from ``benchmarks/calibration/recorded.jsonl``). Exit status 0, or 2 for a user error.
"""

from __future__ import annotations

from pathlib import Path

import typer

from argus.cli.output import STDOUT, Column, emit_json, json_option, print_table

_SCHEMA = (
    '{"fit": {"rows", "gpu"}, "test": rows or null, "families": {family: {"uncalibrated" | "calibrated" | "library": '
    "metrics}}}"
)


def calibrate(
    rows: list[Path] = typer.Argument(  # noqa: B008
        ..., metavar="ROWS.jsonl", help="measured rows (argus.eval.calibration.Row)"
    ),
    test: list[Path] = typer.Option(  # noqa: B008
        [], "--test", help="rows to report on (the positional rows are then only fitted)"
    ),
    gpu: str = typer.Option("H200", "--gpu", help="fit the rows measured on this GPU"),
    featurize: bool = typer.Option(False, "--featurize", help="compute missing features (traces every plan)"),
    out: Path | None = typer.Option(None, "--out", help="write the fitted calibration to this file"),  # noqa: B008
    json_file: str | None = json_option(_SCHEMA),
) -> None:
    """Report the cost model's error and rank correlation per family on measured rows, and fit its correction."""
    from argus.eval import calibration as C

    train = C.read_rows(rows)
    held = C.read_rows(test) if test else []
    if featurize:
        train, held = C.with_features(train), C.with_features(held)
    train = [r for r in train if r.gpu == gpu]
    if not train:
        raise C.CalibrationError("CALIBRATION_DATA", f"the rows: none was measured on {gpu} (--gpu)")
    report = C.evaluate_on(train, [r for r in held if r.gpu == gpu]) if test else C.evaluate(train)
    if not report:
        raise C.CalibrationError("CALIBRATION_DATA", "every family: fewer than two problems (groups) each")
    doc = {
        "fit": {"rows": len(train), "gpu": gpu},
        "test": len(held) if test else None,
        "families": {f: {k: m.to_json() for k, m in pair.items()} for f, pair in report.items()},
    }
    if json_file != STDOUT:
        columns = [
            Column("family", identifier=True), Column("model", identifier=True), Column("rows", justify="right"),
            Column("problems", justify="right"), Column("median error", justify="right"),
            Column("Spearman", justify="right"), Column(f"top-{C.TOP} Spearman", justify="right"),
            Column("regret", justify="right"), Column("hits", justify="right"), Column("trust_k", justify="right"),
        ]  # fmt: skip

        def num(v: float | None, fmt: str = ".3f") -> str:
            return "—" if v is None else format(v, fmt)

        table = [
            (f, model, m.rows, m.groups, num(m.median_error), num(m.spearman), num(m.top_spearman), num(m.regret),
             num(m.hits, ".2f"), m.trust_k)
            for f, pair in report.items()
            for model, m in pair.items()
        ]  # fmt: skip
        how = f"fitted on {len(train)} rows, reported on {len(held)} test rows" if test else "held out by problem"
        print_table(columns, table, title=f"the static cost model on {gpu}: {how}")
    if out is not None:
        cal = C.calibrate(train, gpu)
        cal.save(out)
        typer.echo(f"wrote {out}", err=True)
    if json_file is not None:
        where = emit_json(doc, json_file)
        if json_file != STDOUT:
            typer.echo(f"wrote {where}", err=True)
