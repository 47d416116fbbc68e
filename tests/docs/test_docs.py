"""Every code block of the README and of docs/ runs (`tests/docs/harness.py` says how each kind is run), and the
README's two commands for a fresh machine are the ones CI runs."""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

import pytest
from tests.docs.harness import ROOT, DocRunner, blocks, console_pairs, output_matches

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@functools.cache
def ci_commands() -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location("readme_command", ROOT / ".ci" / "readme_command.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.readme_commands(ROOT / "README.md").values())


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_code_block_runs(doc: Path, tmp_path: Path) -> None:
    runner = DocRunner(doc, tmp_path)
    for block in blocks(doc):
        runner.run(block)


def test_the_readme_gives_the_two_commands_ci_runs() -> None:
    from_readme = ci_commands()
    assert len(from_readme) == 2, "the README's Quick start has a main-job command and a test command, marked ci"
    main, tests = from_readme
    assert "argus tour" in main and "-m venv" in main
    assert "-m pytest" in tests and "-m venv" in tests and '".[dev]"' in tests
    run = (ROOT / ".ci" / "run").read_text()
    assert "readme_command.py main" in run and "readme_command.py tests" in run
    assert 'bash -c "$main_command"' in run and 'bash -c "$tests_command"' in run


def test_the_readme_links_every_doc() -> None:
    readme = (ROOT / "README.md").read_text()
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{doc.name}" in readme, f"the README does not link docs/{doc.name}"


def test_a_bare_fence_is_refused(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "_probe_bare_fence.md"
    try:
        doc.write_text("text\n\n```\nplain\n```\n")
        with pytest.raises(AssertionError, match="needs a language"):
            blocks(doc)
    finally:
        doc.unlink()


def test_console_output_is_compared_and_can_fail(tmp_path: Path) -> None:
    pairs = console_pairs("$ echo hi\nhi\n$ echo two lines\ntwo ...\n")
    assert pairs == [("echo hi", "hi"), ("echo two lines", "two ...")]
    assert output_matches("two ...", "two lines")
    assert not output_matches("three", "two lines")
    assert output_matches("a\n...\nz", "a\nb\nc\nz")


def test_an_unknown_option_in_a_parsed_command_fails() -> None:
    from tests.docs.harness import parse_argus

    parse_argus("argus bench gemm --shapes M=128,N=64,K=64 --baselines cublas", "probe")
    with pytest.raises(AssertionError, match="no-such-option"):
        parse_argus("argus bench gemm --no-such-option 3", "probe")
    with pytest.raises(AssertionError, match="no command"):
        parse_argus("argus benchh gemm", "probe")


def test_every_argus_command_in_the_docs_names_a_real_command() -> None:
    """Inline commands in prose (`argus kb list`) must exist too."""
    from tests.docs.harness import parse_argus

    for doc in DOCS:
        for m in re.finditer(r"`(argus (?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)[^`]*`", doc.read_text()):
            words = m.group(1).split()
            if len(words) >= 2:
                try:
                    parse_argus(" ".join(words[:2]) + " --help", f"{doc.name}")
                except SystemExit:
                    pass
