"""Your kernel is a first-class citizen: a kernel written in a temporary file (not a library kernel, no built-in
task) with a PyTorch reference goes through `interpret`, `verify`, `compile`, `bench` and `optimize` from the
command line; sizes its `T.assume` excludes are refused; errors in the user's file print a code and the user's
line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

KERNEL = '''
import torch

import argus
import argus.lang as T


def reference(X, B):
    """Y = max(X + B, 0) * 2"""
    return torch.clamp(X + B, min=0) * 2


@argus.kernel(reference=reference, sizes={"N": 1000}, policies={"tile_shape": "BLOCK"})
def bias_relu2(X: T.Tensor[("N",), T.f32], B: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], BLOCK: int = 512):
    T.assume("N % 4 == 0")
    with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):
        x = T.alloc_fragment((BLOCK,), T.f32)
        b = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(X.tile(bx, BLOCK), x)
        T.copy(B.tile(bx, BLOCK), b)
        T.copy(T.maximum(x + b, 0.0) * 2.0, Y.tile(bx, BLOCK))


@argus.kernel
def no_reference(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], BLOCK: int = 256):
    with T.grid(T.cdiv(N, BLOCK), threads=64) as (bx,):
        x = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(X.tile(bx, BLOCK), x)
        T.copy(x * 3.0, Y.tile(bx, BLOCK))
'''

REFERENCES = """
def triple(X):
    return X * 3


def wrong(X):
    return X * 4
"""


#: A KernelBench-style problem as the reference: a module built from get_init_inputs(), sizes from get_inputs().
PROBLEM = """
import torch


class Model(torch.nn.Module):
    \"\"\"Y = X * k\"\"\"

    def __init__(self, k):
        super().__init__()
        self.k = torch.nn.Parameter(torch.tensor(float(k)))

    def forward(self, x):
        return x * self.k


def get_inputs():
    return [torch.randn(384)]


def get_init_inputs():
    return [K]
"""


def argus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "argus", *args], capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("user_kernel")
    (d / "mine.py").write_text(KERNEL)
    (d / "refs.py").write_text(REFERENCES)
    (d / "problem.py").write_text(PROBLEM.replace("[K]", "[3]"))
    (d / "problem_wrong.py").write_text(PROBLEM.replace("[K]", "[4]"))
    (d / "problem_two.py").write_text(
        PROBLEM.replace("[K]", "[3]").replace("[torch.randn(384)]", "[torch.randn(8)] * 2")
    )
    return d


def test_interpret_checks_a_file_kernel_against_its_own_reference(work: Path) -> None:
    got = argus("interpret", "mine.py:bias_relu2", cwd=work)
    assert got.returncode == 0, got.stderr
    assert "mine.py:bias_relu2 [N=1000] on the interpreter: match" in got.stdout
    odd = argus("interpret", "mine.py:bias_relu2", "--shape", "N=44", cwd=work)
    assert odd.returncode == 0 and "[N=44]" in odd.stdout and "match" in odd.stdout


def test_a_reference_given_on_the_command_line_decides_the_verdict(work: Path) -> None:
    right = argus("interpret", "mine.py:no_reference", "--reference", "refs.py:triple", "--shape", "N=300", cwd=work)
    assert right.returncode == 0 and "match" in right.stdout, right.stderr
    wrong = argus("interpret", "mine.py:no_reference", "--reference", "refs.py:wrong", "--shape", "N=300", cwd=work)
    assert wrong.returncode == 1 and "MISMATCH" in wrong.stdout
    missing = argus("interpret", "mine.py:no_reference", "--shape", "N=300", cwd=work)
    assert missing.returncode == 2 and "KERNEL_REFERENCE_MISSING" in missing.stderr
    assert "Traceback" not in missing.stderr
    sizes = argus("interpret", "mine.py:no_reference", "--reference", "refs.py:triple", cwd=work)
    assert sizes.returncode == 2 and "MISSING_SIZE" in sizes.stderr and "--shape N=" in sizes.stderr


def test_a_problem_module_is_a_reference_and_its_example_inputs_give_the_sizes(work: Path) -> None:
    right = argus("interpret", "mine.py:no_reference", "--reference", "problem.py:Model", cwd=work)
    assert right.returncode == 0 and "[N=384]" in right.stdout and "match" in right.stdout, right.stderr
    wrong = argus("interpret", "mine.py:no_reference", "--reference", "problem_wrong.py:Model", cwd=work)
    assert wrong.returncode == 1 and "MISMATCH" in wrong.stdout
    sized = argus("interpret", "mine.py:no_reference", "--reference", "problem.py:Model", "--shape", "N=96", cwd=work)
    assert sized.returncode == 0 and "[N=96]" in sized.stdout, sized.stderr  # the command line wins
    two = argus("interpret", "mine.py:no_reference", "--reference", "problem_two.py:Model", cwd=work)
    assert two.returncode == 2 and "KERNEL_SIZES" in two.stderr and "returns 2 tensor(s)" in two.stderr
    assert "Traceback" not in two.stderr
    # the agent takes the same task: a kernel of your own against a PyTorch module, no built-in task
    opt = argus("optimize", "mine.py:no_reference", "--reference", "problem.py:Model", "--budget", "2",
                "--store", str(work / "runs_module.db"), cwd=work)  # fmt: skip
    assert opt.returncode == 0, opt.stderr
    assert "nothing to try on mine.py:no_reference" in opt.stdout


def test_interpret_and_verify_refuse_sizes_the_kernel_excludes(work: Path) -> None:
    got = argus("interpret", "mine.py:bias_relu2", "--shape", "N=45", cwd=work)
    assert got.returncode == 2 and "INTERP_ASSUMPTION" in got.stderr and "N % 4" in got.stderr
    pinned = argus("verify", "mine.py:bias_relu2", "--shape", "N=45", cwd=work)
    assert pinned.returncode == 2 and "VERIFY_PINNED_SHAPE" in pinned.stderr


def test_verify_pinned_sizes_that_break_a_conjunction_are_refused(work: Path) -> None:
    """gemm_cp_async assumes K % 8 == 0 and N % 8 == 0: pinning K alone to 4097 leaves nothing to verify."""
    got = argus("verify", "gemm_cp_async", "--shape", "K=4097", cwd=work)
    assert got.returncode == 2 and "VERIFY_PINNED_SHAPE" in got.stderr and "K % 8" in got.stderr


def test_verify_and_compile_take_the_file_kernel(work: Path) -> None:
    verified = argus("verify", "mine.py:bias_relu2", "--json", cwd=work)
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["verdict"] == "verified"
    compiled = argus("compile", "mine.py:bias_relu2", cwd=work)
    assert compiled.returncode == 0, compiled.stderr
    assert "LDG" in compiled.stdout and "STG" in compiled.stdout


def test_optimize_searches_the_declared_policy_under_the_cost_model(work: Path) -> None:
    got = argus("optimize", "mine.py:bias_relu2", "--budget", "2", "--store", str(work / "runs.db"), cwd=work)
    assert got.returncode == 0, got.stderr
    assert "declared:tile_shape" in got.stdout  # the kernel's own policy, one step from where it stands
    assert "estimated by the static cost model" in got.stdout


def test_optimize_explains_when_there_is_nothing_to_try(work: Path) -> None:
    got = argus("optimize", "mine.py:no_reference", "--reference", "refs.py:triple", "--shape", "N=512",
                "--budget", "2", "--store", str(work / "runs.db"), cwd=work)  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert "nothing to try on mine.py:no_reference" in got.stdout
    assert "declares no policy" in got.stdout


def test_errors_in_the_users_file_show_the_line_not_a_traceback(work: Path) -> None:
    (work / "syntax.py").write_text("def broken(:\n    pass\n")
    got = argus("verify", "syntax.py:broken", cwd=work)
    assert got.returncode == 2 and "KERNEL_FILE_SYNTAX" in got.stderr and "syntax.py:1" in got.stderr
    assert "Traceback" not in got.stderr
    (work / "raises.py").write_text(
        textwrap.dedent(
            """
            import argus
            import argus.lang as T

            @argus.kernel
            def k(X: T.Tensor[("N",), T.f32], BLOCK: int = 128):
                with T.grid(T.cdiv(N, BLOCK)) as (bx,):
                    scale = 1 / 0
            """
        )
    )
    got = argus("verify", "raises.py:k", cwd=work)
    assert got.returncode == 2 and "DSL_KERNEL_RAISED" in got.stderr and "ZeroDivisionError" in got.stderr
    assert "raises.py:8" in got.stderr and "scale = 1 / 0" in got.stderr and "Traceback" not in got.stderr
    debug = argus("verify", "raises.py:k", "--debug", cwd=work)
    assert "Traceback" in debug.stderr  # --debug shows it
    unknown = argus("lineage", "walk", "no_such_kernel", cwd=work)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr and "KERNEL_UNKNOWN" in unknown.stderr
