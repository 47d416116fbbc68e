# ruff: noqa: B008 -- typer reads its options from argument defaults
"""`argus lineage walk|curriculum` and `argus skills list|show|admit`: thin shells over `argus.lineage` (the
curriculum comparison runs the agent: `argus.agent.curriculum`).

``--json`` alone prints the command's document to stdout; ``--json FILE`` writes it to FILE (`argus.cli.output`):

* ``skills list``: a list of ``{"id", "category", "title", "kernel", "step", "measured"}`` (the lineage step the
  skill was mined from);
* ``skills show``: the skill in the knowledge-base schema (``to_dict``);
* ``skills admit``: the admission record written into the skill;
* ``lineage curriculum``: a list of per-curriculum results (`argus.agent.curriculum` ``to_json``).
"""

from __future__ import annotations

import pathlib

import typer

from argus.cli.executor_options import parallel_option, ray_executor, ray_option
from argus.cli.output import STDOUT, Column, OptionalValueCommand, emit_json, json_option, print_table

app = typer.Typer(help="KLineage: walk an expert kernel backward into verified skills.", no_args_is_help=True)
skills_app = typer.Typer(help="Mined skills (KLineage) in the knowledge-base schema.", no_args_is_help=True)


def _sizes(text: str | None) -> dict[str, dict[str, int]] | None:
    """``gemm_nt:M=136,N=72,K=136;gemm:M=100,N=72,K=80`` -> per-task sizes."""
    if not text:
        return None
    from argus.kernels.registry import parse_shape

    out = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        task, _, shape = part.partition(":")
        out[task.strip()] = parse_shape(shape)
    return out


@app.command("walk")
def walk_cmd(
    kernel: str = typer.Argument(..., help="library kernel name or FILE.py:function"),
    out: pathlib.Path = typer.Option(None, "--out", help="lineage JSON (default: NAME.lineage.json)"),
    skills: pathlib.Path = typer.Option(None, "--skills", help="write the mined skills here (default: the skills dir)"),
    no_skills: bool = typer.Option(False, "--no-skills", help="do not mine skills"),
    task: str = typer.Option(None, "--task", help="built-in task (default: the one matching the kernel's tensors)"),
    sizes: str = typer.Option(
        None, "--sizes", help="gate sizes per task, e.g. 'gemm_nt:M=136,N=72,K=136;gemm:M=100,N=72,K=80'"
    ),
    max_steps: int = typer.Option(16, "--max-steps"),
    max_rejections: int = typer.Option(24, "--max-rejections"),
    parallel: int | None = parallel_option(
        "candidates checked and gated at once, the next ones in the walk's order (default 1: one at a time, in "
        "this process): through --ray, else a local pool of K worker processes (with GPUs: one per GPU, at most K); "
        "the lineage is the serial walk's"
    ),
    ray: str | None = ray_option("check and gate the candidates", "this process (a local pool with --parallel K)"),
) -> None:
    """Walk KERNEL backward, print the lineage as a table, write it (and its skills)."""
    from argus.lineage import walk
    from argus.lineage.skills import mine_skills, skills_dir, write_skills

    per_task = _sizes(sizes)
    with ray_executor(ray) as executor:  # None: this process, or the walk's own local pool with --parallel K
        lineage = walk(
            kernel,
            task,
            sizes=per_task,
            max_steps=max_steps,
            max_rejections=max_rejections,
            progress=lambda text: typer.echo(text, err=True),
            executor=executor,
            parallel=parallel,
        )
    typer.echo(lineage.table())
    for r in lineage.rejections:
        typer.echo(
            f"rejected at step {r['step']}: {r['operator']} -> {r['candidate']}: "
            f"{r['stage']} {r['code'] or ''} {r['reason']}"
        )
    path = lineage.write(out or pathlib.Path(f"{kernel.replace(':', '_').replace('/', '_')}.lineage.json"))
    typer.echo(f"lineage written to {path}")
    if not no_skills and lineage.steps:
        paths = write_skills(mine_skills(lineage, sizes=per_task), skills or skills_dir())
        typer.echo(f"{len(paths)} skills written to {paths[0].parent}")
    if not lineage.steps:
        raise typer.Exit(1)


@app.command("curriculum", cls=OptionalValueCommand)
def curriculum_cmd(
    kernel: str = typer.Argument(..., help="start kernel (library name or FILE.py:function)"),
    budget: int = typer.Option(8, "--budget", help="optimizer steps per curriculum"),
    skills: pathlib.Path = typer.Option(None, "--skills", help="mined skills directory"),
    json_file: str | None = json_option("a list of per-curriculum results"),
) -> None:
    """Compare curricula (no KB, curated only, curated + mined) on KERNEL with the same budget and agent loop."""
    from argus.agent.curriculum import agent_runner, compare, curricula

    arms = curricula(skills)
    runner = agent_runner()
    results = compare(kernel, budget, runner, arms)
    if json_file is not None and emit_json([r.to_json() for r in results], json_file) is None:
        return
    for r in results:
        best = f"{r.best_ms:.4g} ms" if r.best_ms is not None else "-"
        typer.echo(
            f"{r.curriculum:14s} entries={r.entries:3d} best={best:>12s} steps to 90% of the best: {r.steps_to_90}"
        )
        if r.mined_actions:
            named = ", ".join(f"{a['step']}: {a['action']} ({a['entry_id']})" for a in r.mined_actions)
            typer.echo(f"{'':14s} named by mined skills: {named}")
    typer.echo("times: the gate's profile stage (the cost model's estimates on a machine without a GPU)")
    if json_file is not None:
        typer.echo(f"wrote {json_file}", err=True)


@app.command("sweep", cls=OptionalValueCommand)
def sweep_cmd(
    problems: list[str] = typer.Argument(  # noqa: B008
        ..., metavar="KERNEL[@M=..,N=..]", help="start kernels with their problem sizes, solved in this order"
    ),
    budget: int = typer.Option(8, "--budget", help="gated candidates per problem and arm"),
    skills: pathlib.Path = typer.Option(None, "--skills", help="mined skills directory"),  # noqa: B008
    store_dir: pathlib.Path = typer.Option(  # noqa: B008
        pathlib.Path("argus-sweep"), "--store-dir", help="one run store per arm (ARM.db)"
    ),
    json_file: str | None = json_option('{"problems", "results": {problem: [per-arm result]}, "summary": {arm: ...}}'),
) -> None:
    """Compare none / curated / curated + mined / + cross-problem priors over a sweep of problems (issue #26)."""
    from argus.agent.curriculum import Problem, compare_sweep, sweep_curricula, sweep_runner

    parsed = []
    for text in problems:
        target, _, dims = text.partition("@")
        try:
            sizes = {k.strip(): int(v) for k, v in (kv.split("=") for kv in dims.split(","))} if dims else None
        except ValueError:
            raise typer.BadParameter(f"a problem is KERNEL or KERNEL@M=4096,N=4096,K=4096, not {text!r}") from None
        parsed.append(Problem(target, sizes))
    arms, learns = sweep_curricula(skills)
    report = compare_sweep(parsed, budget, sweep_runner(store_dir, learns), arms)
    if json_file is not None and emit_json(report.to_json(), json_file) is None:
        return
    for label, rows in report.results.items():
        typer.echo(label)
        for r in rows:
            best = f"{r.best_ms:.4g} ms" if r.best_ms is not None else "-"
            typer.echo(f"  {r.curriculum:22s} best={best:>12s} steps to 90% of the best: {r.steps_to_90}")
    typer.echo("geometric means over the problems (quality: best time / the problem's best; candidates to 90 %):")
    for arm, s in report.summary().items():
        q = f"{s['quality']:.3f}" if s["quality"] is not None else "-"
        c = f"{s['candidates']:.2f}" if s["candidates"] is not None else "-"
        typer.echo(f"  {arm:22s} quality={q} candidates={c} never={s['never']}/{s['problems']}")
    typer.echo("times: the gate's profile stage (the cost model's estimates on a machine without a GPU)")
    if json_file is not None:
        typer.echo(f"wrote {json_file}", err=True)


@skills_app.command("list", cls=OptionalValueCommand)
def skills_list(
    directory: pathlib.Path = typer.Option(None, "--dir", help="skills directory"),
    json_file: str | None = json_option('a list of {"id", "category", "title", "kernel", "step", "measured"}'),
) -> None:
    """The mined skills: id, category, the kernel and lineage step they come from, the measured effect. Piped: one
    tab-separated line per skill after a header line."""
    from argus.lineage.skills import load_skills, skills_dir

    found = load_skills(directory)
    doc = [
        {"id": e.id, "category": e.category, "title": e.title, "kernel": e.provenance.lineage.get("kernel"),
         "step": e.provenance.lineage.get("step"), "measured": e.provenance.lineage.get("measured")}
        for e in found
    ]  # fmt: skip
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    if not found:
        typer.echo(f"no skills in {directory or skills_dir()} (run `argus lineage walk NAME`)")
    else:
        columns = [Column("id", identifier=True), Column("kernel", identifier=True), Column("step", justify="right"),
                   Column("measured", min_width=20), Column("category", identifier=True, optional=True)]  # fmt: skip
        print_table(columns, [(d["id"], d["kernel"], str(d["step"]), d["measured"], d["category"]) for d in doc])
    if json_file is not None:
        typer.echo(f"wrote {emit_json(doc, json_file)}", err=True)


@skills_app.command("show", cls=OptionalValueCommand)
def skills_show(
    skill_id: str = typer.Argument(...),
    directory: pathlib.Path = typer.Option(None, "--dir", help="skills directory"),
    json_file: str | None = json_option("the skill in the knowledge-base schema"),
) -> None:
    """One skill in full: preconditions with reasons, failures avoided, evidence."""
    from argus.lineage.skills import load_skills, skills_dir

    for e in load_skills(directory):
        if e.id == skill_id:
            if json_file is not None:
                written = emit_json(e.to_dict(), json_file)
                if written is None:
                    return
                typer.echo(f"wrote {written}", err=True)
            lin = e.provenance.lineage
            typer.echo(f"{e.id}: {e.title}\n  {e.intent.strip()}\n  category {e.category}; locus {e.locus.description}")
            typer.echo("  preconditions:")
            for p in e.preconditions:
                typer.echo(f"    [{p.category}] {p.text()} -- {p.reason}")
            typer.echo(f"  effect: {e.effect.magnitude}")
            typer.echo("  failures avoided:")
            for f in lin.get("failures_avoided", []):
                typer.echo(f"    [{f['category']}] {f['probe']}: {f['stage']} {f['code']}: {f['counterexample'][:200]}")
            typer.echo(
                f"  evidence: {lin.get('kernel_before')} ({lin.get('fingerprint_before')}) -> "
                f"{lin.get('kernel_after')} ({lin.get('fingerprint_after')}); {lin.get('mechanism_check')}"
            )
            return
    typer.echo(f"no skill {skill_id!r} in {directory or skills_dir()}", err=True)
    raise typer.Exit(1)


@skills_app.command("admit", cls=OptionalValueCommand)
def skills_admit(
    skill_id: str = typer.Argument(...),
    on: str = typer.Option(..., "--on", help="the library rung to replay the skill's move from (another family's)"),
    directory: pathlib.Path = typer.Option(None, "--dir", help="skills directory"),
    sizes: str = typer.Option(None, "--sizes", help="gate sizes per task, e.g. 'gemm_residual:M=40,N=24,K=40'"),
    json_file: str | None = json_option("the admission record written into the skill"),
) -> None:
    """Replay SKILL's forward move on a held-out rung (--on KERNEL: the move KERNEL -> its next rung), gate both
    kernels and record the verdict in the skill (provenance.lineage.admission). Exit status 0 when admitted, 1 when
    not, 2 when no move of KERNEL adds the skill's mechanism."""
    from argus.lineage.errors import LineageError
    from argus.lineage.skills import admit, load_skills, skills_dir, write_admission

    skill = next((e for e in load_skills(directory) if e.id == skill_id), None)
    if skill is None:
        typer.echo(f"no skill {skill_id!r} in {directory or skills_dir()}", err=True)
        raise typer.Exit(2)
    try:
        record = admit(skill, on, sizes=_sizes(sizes))
    except LineageError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(2) from None
    write_admission(skill_id, record, directory or skills_dir())
    if json_file is not None:
        written = emit_json(record, json_file)
        if written is not None:
            typer.echo(f"wrote {written}", err=True)
    if json_file != STDOUT:
        verdict = "admitted" if record["admitted"] else "not admitted"
        where = f"{record['kernel']} -> {record['kernel_after']} ({record['family']}"
        where += ", held out)" if record["held_out"] else ", the skill's own family)"
        typer.echo(f"{skill_id}: {verdict} on {where}: {record['reason']}")
        typer.echo(f"  {record['mechanism_check']}; gate before: {record['gate_before']}")
        typer.echo(f"  gate after: {record['gate_after']}")
    raise typer.Exit(0 if record["admitted"] else 1)
