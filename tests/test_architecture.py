"""The architecture as tests: layers import only downward, and a hardware fact is written once (`argus.atoms`).

The layers, bottom up (`docs/architecture.md`); a module may import its own package and any package of a lower
layer; the packages of layers 4, 8 and 9 are peers that do not import each other.

    0  _version, diagnostics, layout
    1  ir
    2  atoms
    2.5  ir.passes                    (the pass pipeline: reads the IR and the atoms; the tracer runs it)
    3  lang (and the package root `argus`, which re-exports the DSL)
    4  verify | interp | backend      (peers: each reads the IR, none reads another)
    5  runtime
    6  kernels
    7  tasks
    8  eval | kb
    9  lineage | frontend              (peers)
    10 agent
    11 cli, tour, __main__

Every import counts, at module level or inside a function. `DEBT` lists imports allowed to break the order, each with
its reason; it is empty, the test fails on any upward import, and on a listed one that is gone (so the list only
shrinks if it ever grows again).
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "argus"

LAYERS: dict[str, float] = {
    "_version": 0,
    "diagnostics": 0,
    "layout": 0,
    "ir": 1,
    "atoms": 2,
    "ir.passes": 2.5,
    "lang": 3,
    "argus": 3,
    "verify": 4,
    "interp": 4,
    "backend": 4,
    "runtime": 5,
    "kernels": 6,
    "tasks": 7,
    "eval": 8,
    "kb": 8,
    "lineage": 9,
    "frontend": 9,
    "agent": 10,
    "cli": 11,
    "tour": 11,
    "__main__": 11,
}

#: Layers whose packages are peers that must not import each other (the others are one package in several files).
PEER_LAYERS = (4, 8, 9)

#: (importing module, imported module) pairs that break the layer order today, and why.
DEBT: dict[tuple[str, str], str] = {}


def _module(path: pathlib.Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts)


#: Subpackages that are layers of their own, apart from their package's.
SUBPACKAGES = ("ir.passes",)


def _package(module: str) -> str:
    parts = module.split(".")
    for sub in SUBPACKAGES:
        if ".".join(parts[1:]).startswith(sub) and ".".join(parts[1:])[len(sub) :][:1] in ("", "."):
            return sub
    return parts[1] if len(parts) > 1 and parts[1] != "__init__" else "argus"


def imports() -> set[tuple[str, str]]:
    """Every (importing module, imported module) pair inside argus, module level and function level alike."""
    out = set()
    for path in SRC.rglob("*.py"):
        me = _module(path)
        package = me.rsplit(".", 1)[0] if path.name != "__init__.py" else me.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against this package
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, node.module] if node.module else base)
                else:
                    target = node.module or ""
                names = [target]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            out.update((me, n) for n in names if n == "argus" or n.startswith("argus."))
    return out


def violations() -> set[tuple[str, str]]:
    bad = set()
    for me, target in imports():
        mine, theirs = _package(me), _package(target)
        if mine == theirs:
            continue
        assert mine in LAYERS, f"{me}: package {mine!r} has no layer (add it to LAYERS and docs/architecture.md)"
        assert theirs in LAYERS, f"{target}: package {theirs!r} has no layer"
        if LAYERS[theirs] > LAYERS[mine] or (LAYERS[theirs] == LAYERS[mine] and LAYERS[mine] in PEER_LAYERS):
            bad.add((me, target))
    return bad


def test_layers_import_only_downward() -> None:
    found = violations()
    new = sorted(found - set(DEBT))
    assert not new, "imports against the layer order (move the code, or invert the dependency):\n" + "\n".join(
        f"  {a} -> {b} ({_package(a)} is layer {LAYERS[_package(a)]}, {_package(b)} is {LAYERS[_package(b)]})"
        for a, b in new
    )
    paid = sorted(set(DEBT) - found)
    assert not paid, "these imports are gone: remove them from DEBT\n" + "\n".join(f"  {a} -> {b}" for a, b in paid)


def test_an_upward_import_is_caught(tmp_path: pathlib.Path) -> None:
    """The check itself can fail: a lower layer reaching up is a violation, a higher one reaching down is not."""
    assert LAYERS["layout"] < LAYERS["agent"]
    probe = SRC / "layout" / "_probe_upward.py"
    try:
        probe.write_text("def f():\n    from argus.agent.loop import optimize\n    return optimize\n")
        assert ("argus.layout._probe_upward", "argus.agent.loop") in violations()
    finally:
        probe.unlink()
    assert not any(a.startswith("argus.cli.") and b.startswith("argus.layout") for a, b in violations())


#: Hardware facts that must come from `argus.atoms.target` (a literal elsewhere is a second source of truth).
HARDWARE_LITERALS = {
    r"\b132\b": "the SM count (Target.sms)",
    r"\b22[78] \* 1024\b": "shared memory per block / per SM (Target.shared_memory_per_*)",
    r"\b23(2448|3472)\b": "shared memory per block / per SM in bytes",
    r"\b65536\b": "the register file (Target.register_file)",
    r"\(32, 64, 128\)": "the swizzle widths (argus.atoms.swizzle.SWIZZLE_WIDTHS, Target.swizzles)",
    r"\b[123], 4, 3\)": "a byte-level swizzle of Hopper's modes (argus.atoms.swizzle.MODES)",
    r"CU_TENSOR_MAP_SWIZZLE_": "TMA's swizzle encoding (argus.atoms.swizzle.TENSOR_MAP_SWIZZLE)",
}


def test_hardware_facts_are_written_only_in_the_hardware_layer() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "atoms"):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, what in HARDWARE_LITERALS.items():
                if re.search(pattern, line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {what}: {line.strip()}")
    assert not found, "hardware facts outside argus.atoms (read them from argus.atoms.target):\n" + "\n".join(found)


#: Names of code that counts threads by warpgroups: a literal 128 beside one is the warpgroup size written again.
_WARPGROUP_WORDS = re.compile(r"(?i)^(warpgroups?|wgs?|\w+_wgs?|roles?|tids?|thread|lane|warp)$|warpgroup")


def warpgroup_literals(text: str) -> list[int]:
    """Lines of `text` whose code (not comments or strings) has the number 128 beside a warpgroup, role, thread or
    lane name, or a ``.threads`` attribute: the warpgroup size, which is `Target.warpgroup_size`
    (`argus.atoms.common.WARPGROUP_SIZE`)."""
    lines: dict[int, list[tokenize.TokenInfo]] = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        lines.setdefault(token.start[0], []).append(token)
    found = []
    for n, tokens in lines.items():
        numbers = [t.string for t in tokens if t.type == tokenize.NUMBER]
        names = [t.string for t in tokens if t.type == tokenize.NAME]
        pairs = zip(tokens, tokens[1:], strict=False)
        attributes = [b.string for a, b in pairs if a.string == "." and b.type == tokenize.NAME]
        if "128" in numbers and (any(_WARPGROUP_WORDS.search(x) for x in names) or "threads" in attributes):
            found.append(n)
    return found


def test_the_warpgroup_size_is_written_only_in_the_hardware_layer() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "atoms"):
            continue
        text = path.read_text()
        for n in warpgroup_literals(text):
            found.append(f"{path.relative_to(ROOT)}:{n}: {text.splitlines()[n - 1].strip()}")
    assert not found, "the warpgroup size written outside argus.atoms (use WARPGROUP_SIZE):\n" + "\n".join(found)


def test_a_warpgroup_literal_is_caught() -> None:
    """The scan can fail: the shapes the code had before it read the Target are caught; tile sizes and comments
    are not."""
    assert warpgroup_literals("tids = np.arange(128) + 128 * wg\n") == [1]
    assert warpgroup_literals("x = 1\nwarpgroups = max(1, kernel.threads // 128)\n") == [2]
    assert warpgroup_literals("first = 128 * role.warpgroups[0]\n") == [1]
    assert warpgroup_literals("total = (st.threads or 0) // 128\n") == [1]
    assert warpgroup_literals("BM = 128  # a warpgroup's rows\nwith T.grid(n, threads=128) as (bm,):\n    pass\n") == []
    assert warpgroup_literals('doc = "a warpgroup of 128 threads"\n') == []


def test_the_target_is_what_the_layers_read() -> None:
    from argus.atoms.common import SHARED_MEMORY_BUDGET, SMS, WARPGROUP_SIZE
    from argus.atoms.target import DEFAULT_TARGET
    from argus.eval.costmodel import GPUSpec
    from argus.kernels.registry import PERSISTENT_BLOCKS

    assert SMS == PERSISTENT_BLOCKS == GPUSpec("x").sms == DEFAULT_TARGET.sms
    assert SHARED_MEMORY_BUDGET == DEFAULT_TARGET.shared_memory_per_block
    assert WARPGROUP_SIZE == DEFAULT_TARGET.warpgroup_size
