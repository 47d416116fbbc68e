"""The verifier: data-flow invariants (tags) propagated by abstract interpretation over the layout
algebra, built-in checks and user tag assertions proved with Z3, with concrete counterexamples.

    from argus.verify import verify
    result = verify(get_kernel("gemm_cp_async"))
    print(result.render_text())

Owns: the catalog of its findings (`argus.verify.catalog`: each code's title, description, severity
and hint; the codes are entries of `argus.diagnostics.Code` too), findings and counterexamples and
their renderings (`argus.verify.report`), what a finding blames (`argus.verify.blame`), tag propagation
(`argus.verify.model`), warp roles and their
mbarrier protocol (`argus.verify.roles`), the checks (`argus.verify.checks`) and the entry point that
runs them (`argus.verify.engine`). Needs no GPU. See `docs/verify.md`.
"""

from argus.verify.catalog import CATALOG, CatalogEntry, Severity, entry
from argus.verify.engine import CHECKS, verify, verify_kernel
from argus.verify.report import (
    Access,
    Blame,
    ChainStep,
    Counterexample,
    Element,
    Finding,
    Result,
    TagValue,
    ThreadPoint,
    Verdict,
)

__all__ = [
    "CATALOG",
    "CHECKS",
    "Access",
    "Blame",
    "CatalogEntry",
    "ChainStep",
    "Counterexample",
    "Element",
    "Finding",
    "Result",
    "Severity",
    "TagValue",
    "ThreadPoint",
    "Verdict",
    "entry",
    "verify",
    "verify_kernel",
]
