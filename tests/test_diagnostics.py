"""All typed errors share one shape and one base, so the CLI and the agent can handle them alike."""

from __future__ import annotations

import pickle

import pytest

from argus.atoms.errors import AtomError
from argus.diagnostics import ArgusError
from argus.ir.types import DTypeError, dtype_from_name
from argus.layout import Layout, LayoutError


def test_every_typed_error_is_an_argus_error() -> None:
    with pytest.raises(ArgusError) as e:
        Layout((4, 8), (1,))
    assert isinstance(e.value, LayoutError) and e.value.code == "LAYOUT_INCONGRUENT"
    with pytest.raises(ArgusError) as e:
        dtype_from_name("bfloat17")
    assert isinstance(e.value, DTypeError) and isinstance(e.value, TypeError) and e.value.code == "DTYPE_UNKNOWN"


def test_rendering_and_pickling() -> None:
    err = AtomError("ATOM_TMA_BOX", "box too large", requirement="each box dim <= 256", actual=512, hint="split it")
    assert str(err) == "[ATOM_TMA_BOX] box too large\n  requires: each box dim <= 256\n  actual: 512\n  hint: split it"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is AtomError and str(back) == str(err) and back.actual == 512
    d = DTypeError("DTYPE_UNKNOWN", "no such dtype 'x'", "use bf16")
    assert pickle.loads(pickle.dumps(d)).hint == "use bf16"
