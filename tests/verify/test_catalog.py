"""The catalog is the one source of truth for codes: every code the verifier can emit is in it,
stable and well formed."""

from __future__ import annotations

import pathlib
import re

import pytest

from argus.verify import CATALOG, Severity, entry
from argus.verify.catalog import CatalogError, codes

SRC = pathlib.Path(__file__).parents[2] / "src" / "argus" / "verify"
CATEGORIES = (
    "MMA",
    "RACE",
    "PIPELINE",
    "MBARRIER",
    "FENCE",
    "OOB",
    "COVERAGE",
    "ALIGN",
    "LAYOUT",
    "BUDGET",
    "PERF",
    "TAG",
    "VALUE",
    "UNKNOWN",
)


def test_codes_are_category_detail() -> None:
    for code, e in CATALOG.items():
        assert re.fullmatch(r"[A-Z]+(_[A-Z]+)+", code), code
        assert e.category in CATEGORIES
        assert e.title and e.description and e.hint
        assert (e.severity == Severity.UNKNOWN) == code.startswith("UNKNOWN_")


def test_performance_codes_are_warnings() -> None:
    assert {c for c in CATALOG if c.startswith("PERF_")} <= set(codes(Severity.WARNING))


def test_every_code_the_verifier_emits_is_in_the_catalog() -> None:
    pattern = re.compile(r'"((?:' + "|".join(CATEGORIES) + r')_[A-Z_]+)"')
    used = set()
    for path in SRC.rglob("*.py"):
        if path.name == "catalog.py":
            continue
        used |= set(pattern.findall(path.read_text()))
    assert used, "the scan found no codes"
    missing = used - set(CATALOG)
    assert not missing, f"codes used but not in the catalog: {sorted(missing)}"


def test_unknown_code_is_an_error() -> None:
    with pytest.raises(CatalogError):
        entry("MMA_NOT_A_CODE")
