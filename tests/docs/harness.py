"""Run the code blocks of a Markdown document, so that the docs cannot rot.

Every fenced block names its language, and the language says what is done with it:

* ``python`` — run. A block with ``>>>`` prompts is a doctest (``...`` matches anything, whitespace is
  normalized); any other block is executed. The python blocks of one document share one namespace and one working
  directory, in order, like a notebook.
* ``python file=NAME.py`` — written to ``NAME.py`` in the document's working directory (later blocks and commands
  use it), then imported once to check that it loads.
* ``console`` — ``$ command`` lines, each followed by its expected output (``...`` on a line of its own matches any
  lines; inside a line it matches any text; whitespace is normalized). The command runs in the document's working
  directory with this interpreter's ``argus`` first on ``PATH``; it must exit 0 unless the line ends with
  ``# exit N``.
* ``sh`` — each command runs as in ``console`` (exit 0 expected), output not compared. A block of only ``export``
  lines is a configuration: the variables are given to the LLM provider's configuration loader, which must accept
  them (no request is made).
* ``toml`` — parsed; under ``<!-- check: llm-config -->`` loaded by the provider configuration loader.
* ``text`` — not code (outputs, diagrams, file trees); not run.

An HTML comment right before a block changes what is done:

* ``<!-- gpu -->`` — needs an NVIDIA GPU: run where there is one; elsewhere every ``argus`` command's arguments
  are parsed by the command's own parser (an option that does not exist fails) and python is compiled.
* ``<!-- parse-only: WHY -->`` — cannot run in a test (an LLM endpoint, a run id from another session): as
  ``gpu`` without a GPU, always.
* ``<!-- excerpt: PATH -->`` — a python excerpt of the file PATH (relative to the repository): every line that
  is not ``...`` must appear in that file, in order (comments and surrounding whitespace aside).
* ``<!-- ci -->`` — a command that CI runs itself (`.ci/run`): checked to be one of the commands `.ci/run` takes
  from the README, not run here.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("python", "console", "sh", "toml", "text")
DIRECTIVES = ("gpu", "parse-only", "excerpt", "ci", "check")


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    language: str
    info: dict[str, str]
    body: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


_FENCE = re.compile(r"^```(.*)$")
_DIRECTIVE = re.compile(r"^<!--\s*([a-z-]+)(?::\s*(.*?))?\s*-->$")


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of `doc` with their directives; a fence without a language is an error (AssertionError)."""
    lines = doc.read_text().splitlines()
    out: list[Block] = []
    i = 0
    pending: dict[str, str] = {}
    while i < len(lines):
        m = _FENCE.match(lines[i])
        d = _DIRECTIVE.match(lines[i].strip())
        if d and d.group(1) in DIRECTIVES:
            pending[d.group(1)] = d.group(2) or ""
            i += 1
            continue
        if not m:
            if lines[i].strip():
                pending = {}
            i += 1
            continue
        info = m.group(1).split()
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        language = info[0] if info else ""
        where = f"{doc.relative_to(ROOT)}:{start + 1}"
        assert language in LANGUAGES, f"{where}: a code block needs a language, one of {LANGUAGES}; found {language!r}"
        attrs = dict(a.split("=", 1) for a in info[1:] if "=" in a)
        out.append(Block(doc, start + 1, language, attrs, "\n".join(body) + "\n", pending))
        pending = {}
    return out


def has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def environment(workdir: Path) -> dict[str, str]:
    """The environment commands run in: this interpreter's scripts first on PATH (never the caller's PATH alone),
    a private run store and caches in the working directory, no LLM endpoint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARGUS_LLM")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["ARGUS_RUNS_DB"] = str(workdir / "runs.db")
    env["COLUMNS"] = "100"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(workdir), env.get("PYTHONPATH", "")]))
    return env


def _shim(workdir: Path) -> None:
    """An ``argus`` executable in the working directory's bin that runs this interpreter's argus (so a PATH
    without the virtual environment's bin still finds it)."""
    bin_dir = workdir / ".bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "argus"
    if not shim.exists():
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m argus "$@"\n')
        shim.chmod(0o755)


def run_command(command: str, workdir: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    _shim(workdir)
    env = environment(workdir)
    env["PATH"] = os.pathsep.join([str(workdir / ".bin"), env["PATH"]])
    return subprocess.run(
        ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
    )


def _strip_comment(command: str) -> tuple[str, int]:
    """(command, expected exit status) from ``cmd  # exit 1``; other trailing comments are dropped (a ``#`` after
    whitespace and outside quotes starts one)."""
    quote = None
    cut = len(command)
    for i, ch in enumerate(command):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            cut = i
            break
    comment = command[cut:]
    m = re.match(r"#\s*exit\s+(\d+)\s*$", comment)
    return command[:cut].strip(), int(m.group(1)) if m else 0


def parse_argus(command: str, where: str) -> None:
    """Parse an ``argus ...`` command line with the command's own parser (nothing runs): an unknown command or
    option is an AssertionError naming it."""
    import typer

    from argus.cli.main import app

    words = shlex.split(command, comments=True)
    if not words or words[0] != "argus":
        return
    cmd = typer.main.get_command(app)
    ctx = None
    args = [w for w in words[1:] if w != "--debug"]
    name = "argus"
    while True:
        try:
            ctx = cmd.make_context(name, list(args), parent=ctx, resilient_parsing=False)
        except Exception as e:  # the parser's usage error (typer vendors its own click)
            if getattr(e, "exit_code", None) == 0:  # --help
                return
            if hasattr(e, "format_message"):
                raise AssertionError(f"{where}: `{command}`: {e.format_message()}") from None
            raise
        if not hasattr(cmd, "commands"):  # a leaf command: its arguments parsed
            return
        rest = [*(getattr(ctx, "protected_args", None) or getattr(ctx, "_protected_args", None) or []), *ctx.args]
        if not rest:
            return
        name, args = rest[0], rest[1:]
        sub = cmd.get_command(ctx, name)
        assert sub is not None, f"{where}: `{command}`: argus has no command {name!r}"
        cmd = sub


def commands(body: str) -> list[str]:
    """The commands of a ``sh`` block: lines joined across trailing backslashes, blank lines and comments dropped."""
    out, current = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip() and not current.strip().startswith("#"):
            out.append(current.strip())
        current = ""
    return out


def console_pairs(body: str) -> list[tuple[str, str]]:
    """(command, expected output) for each ``$ `` line of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif pairs:
            pairs[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"console block text before the first `$ ` command: {line!r}")
    return [(c, "\n".join(o).strip("\n")) for c, o in pairs]


def output_matches(want: str, got: str) -> bool:
    """`got` matches `want` with ``...`` wildcards (a line of its own: any lines; in a line: any text) and
    whitespace normalized."""
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    # a line of its own `...` may stand for nothing: glue it to its neighbours, so that the whitespace around it
    # (which normalization turns into single spaces) is not required twice
    want = re.sub(r"\s*\n\.\.\.\n\s*", "...", "\n" + want.strip() + "\n").strip()
    return checker.check_output(want + "\n", got.strip() + "\n", flags)


def check_excerpt(block: Block, path: str) -> None:
    source = (ROOT / path).read_text().splitlines()
    norm = [re.sub(r"\s+#.*$", "", s).strip() for s in source]
    position = 0
    for line in block.body.splitlines():
        text = re.sub(r"\s+#.*$", "", line).strip()
        if not text or text == "..." or text.startswith("#"):
            continue
        try:
            position = norm.index(text, position) + 1
        except ValueError:
            raise AssertionError(f"{block.where}: the excerpt's line {text!r} is not in {path} (in order)") from None


def check_llm_config(env: dict[str, str], config_file: Path | None, where: str) -> None:
    """The provider configuration loader accepts `env` (and `config_file`), with no configuration of this machine's
    (the default config file is looked for under an empty home)."""
    from argus.agent.providers.config import load_config

    empty = Path("/nonexistent-home")
    load_config(env={**env, "HOME": str(empty), "XDG_CONFIG_HOME": str(empty / ".config")}, config_file=config_file)


def exports(body: str) -> dict[str, str] | None:
    """The variables of a block made only of ``export`` lines, else None."""
    env: dict[str, str] = {}
    for command in commands(body):
        words = shlex.split(command, comments=True)
        if not words or words[0] != "export":
            return None
        for w in words[1:]:
            name, _, value = w.partition("=")
            env[name] = value
    return env


class DocRunner:
    """Runs the blocks of one document in order, in one working directory and one python namespace."""

    def __init__(self, doc: Path, workdir: Path) -> None:
        self.doc = doc
        self.workdir = workdir
        for name in ("src", "tests", "benchmarks", "docs"):  # a doc's commands may name the repository's files
            (workdir / name).symlink_to(ROOT / name, target_is_directory=True)
        self.namespace: dict[str, object] = {"__name__": f"doc_{doc.stem}"}
        self.gpu = has_gpu()

    def run(self, block: Block) -> None:
        runnable = not ("parse-only" in block.directives or ("gpu" in block.directives and not self.gpu))
        if "ci" in block.directives:
            from tests.docs.test_docs import ci_commands

            for command in commands(block.body):
                assert command in ci_commands(), f"{block.where}: `{command}` is not what .ci/run runs"
            return
        if "excerpt" in block.directives:
            check_excerpt(block, block.directives["excerpt"])
            return
        getattr(self, f"_{block.language}")(block, runnable)

    def _text(self, block: Block, runnable: bool) -> None:
        return

    def _toml(self, block: Block, runnable: bool) -> None:
        data = tomllib.loads(block.body)
        if block.directives.get("check") == "llm-config":
            path = self.workdir / "config.toml"
            path.write_text(block.body)
            env = {v: "placeholder" for v in _key_variables(data)}
            check_llm_config(env, path, block.where)

    def _python(self, block: Block, runnable: bool) -> None:
        if "file" in block.info:
            path = self.workdir / block.info["file"]
            path.write_text(block.body)
            compile(block.body, str(path), "exec")
            if runnable:
                got = run_command(f'"{sys.executable}" -c "import runpy; runpy.run_path({str(path)!r})"', self.workdir)
                assert got.returncode == 0, f"{block.where}: {path.name} does not load:\n{got.stderr[-3000:]}"
            return
        if not runnable:
            source = "\n".join(ln[4:] for ln in block.body.splitlines() if ln.startswith((">>> ", "... ")))
            compile(source if ">>>" in block.body else block.body, block.where, "exec")
            return
        cwd = os.getcwd()
        os.chdir(self.workdir)
        try:
            if ">>>" in block.body:
                test = doctest.DocTestParser().get_doctest(block.body, self.namespace, block.where, str(self.doc),
                                                           block.line)  # fmt: skip
                runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
                out: list[str] = []
                test.globs = self.namespace  # get_doctest copies it: share the document's namespace
                runner.run(test, out=out.append, clear_globs=False)
                assert runner.failures == 0, f"{block.where}: doctest failed:\n" + "".join(out)
            else:
                exec(compile(block.body, block.where, "exec"), self.namespace)
        finally:
            os.chdir(cwd)

    def _sh(self, block: Block, runnable: bool) -> None:
        env = exports(block.body)
        if env is not None:
            check_llm_config({**env}, None, block.where)
            return
        for command in commands(block.body):
            clean, status = _strip_comment(command)
            if not runnable:
                parse_argus(clean, block.where)
                continue
            got = run_command(clean, self.workdir)
            assert got.returncode == status, (
                f"{block.where}: `{clean}` exited {got.returncode}, expected {status}:\n{got.stdout[-2000:]}"
                f"\n{got.stderr[-3000:]}"
            )

    def _console(self, block: Block, runnable: bool) -> None:
        for command, want in console_pairs(block.body):
            clean, status = _strip_comment(command)
            if not runnable:
                parse_argus(clean, block.where)
                continue
            got = run_command(clean, self.workdir)
            text = got.stdout + (got.stderr if got.stderr.strip() else "")
            assert got.returncode == status, (
                f"{block.where}: `{clean}` exited {got.returncode}, expected {status}:\n{text[-3000:]}"
            )
            assert output_matches(want, text), (
                f"{block.where}: `{clean}` printed something else.\n--- the doc says:\n{want}\n--- it printed:\n{text}"
            )


def _key_variables(data: dict) -> list[str]:
    llm = data.get("llm", {}) if isinstance(data, dict) else {}
    return [llm["api_key_env"]] if isinstance(llm, dict) and "api_key_env" in llm else []
