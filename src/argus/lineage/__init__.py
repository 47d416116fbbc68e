"""KLineage: walk an expert kernel backward through simplifications that each remove exactly one mechanism
(checked on the IR and the generated code, gated for compile, verify and correctness, profiled), and turn
every accepted step, reversed, into a skill in the knowledge base's schema.

    from argus.lineage import walk, mine_skills, write_skills
    lineage = walk("gemm_warp_specialized")     # gemm_warp_specialized -> ... -> gemm_naive
    print(lineage.table())
    lineage.write("gemm.lineage.json")
    write_skills(mine_skills(lineage), "skills/")   # TOML entries, source = "mined"

Parts: `mechanisms` (the one vocabulary of mechanisms: what a kernel has, read off its features; each level's
meaning, the change that makes it and its curated entry; dependencies; code markers; the steps ``mechanism@level``
and the library's lineage rungs), `operators` (policy, IR and structural simplifications; the mechanism check),
`bridges` (kernels splitting a lineage rung that adds two mechanisms), `walk` (the backward walk and the
`Lineage`), `skills` (reversed steps as kb entries, from the specs in ``skill_specs.toml``, with preconditions probed
by applying the step where they fail). The curriculum comparison (no KB / curated / curated + mined), which runs the
agent, is `argus.agent.curriculum`. See docs/lineage.md.
"""

from argus.lineage.errors import LineageError
from argus.lineage.mechanisms import MECHANISMS, RUNGS, STEPS, state
from argus.lineage.operators import Check, Operator, check, edges, library_variant, operators
from argus.lineage.variants import DerivedKernel, Variant
from argus.lineage.walk import Lineage, Step, load_lineage, walk

__all__ = [
    "MECHANISMS",
    "RUNGS",
    "STEPS",
    "Check",
    "DerivedKernel",
    "Lineage",
    "LineageError",
    "Operator",
    "Step",
    "Variant",
    "check",
    "edges",
    "library_variant",
    "load_lineage",
    "operators",
    "state",
    "walk",
]
