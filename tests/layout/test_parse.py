"""Tests of `argus.layout.parse`: round trips of printed layouts and the caret errors on bad text."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle
from argus.layout.int_tuple import fmt
from argus.layout.parse import LayoutParseError, parse_int_tuple, parse_layout, parse_tile_shape

# --- strategies ------------------------------------------------------------------------------


def _tuples(leaf: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    return st.recursive(leaf, lambda inner: st.lists(inner, min_size=0, max_size=4).map(tuple), max_leaves=10)


def _like(draw: st.DrawFn, shape: Any, leaf: st.SearchStrategy[int]) -> Any:
    if isinstance(shape, tuple):
        return tuple(_like(draw, s, leaf) for s in shape)
    return draw(leaf)


@st.composite
def layouts(draw: st.DrawFn) -> Layout:
    shape = draw(_tuples(st.integers(1, 64)))
    stride = _like(draw, shape, st.integers(-4096, 4096))
    return Layout(shape, stride)


@st.composite
def swizzles(draw: st.DrawFn) -> Swizzle:
    bits = draw(st.integers(0, 4))
    base = draw(st.integers(0, 6))
    magnitude = draw(st.integers(bits, 6))
    return Swizzle(bits, base, draw(st.sampled_from([magnitude, -magnitude])))


@st.composite
def composed_layouts(draw: st.DrawFn) -> ComposedLayout:
    inner = draw(st.one_of(swizzles(), layouts()))
    return ComposedLayout(inner, draw(st.integers(-1024, 1024)), draw(layouts()))


def _cute_static(text: str) -> str:
    """`text` with every integer written as CuTe prints a static one: ``_4``, ``_-1``."""
    return re.sub(r"-?\d+", lambda m: "_" + m.group(0), text)


def _spaced(text: str, gaps: list[str]) -> str:
    """`text` with whitespace from `gaps` put between every two tokens (never inside a number or 'Sw')."""
    tokens = re.findall(r"_?-?\d+|Sw|.", text)
    out = []
    for i, tok in enumerate(tokens):
        out.append(tok)
        out.append(gaps[i % len(gaps)] if gaps else "")
    return "".join(out)


# --- round trips -----------------------------------------------------------------------------

PRINTED = [
    "8:1",
    "1:0",
    "8:-1",
    "(4,8):(8,1)",
    "(4,8):(1,4)",
    "((2,2),4):((1,4),2)",
    "((2,2),(2,4)):((1,4),(2,8))",
    "((4,8),(2,2)):((32,1),(16,8))",
    "(4):(2)",
    "():()",
    "((),4):((),1)",
    "(2,(3,(5,7))):(0,(-1,(3,-1000)))",
    "Sw<3,4,3> o 0 o (8,64):(64,1)",
    "Sw<3,3,3> o 0 o (8,64):(64,1)",
    "Sw<2,4,-3> o -4 o 8:1",
    "Sw<0,4,3> o 16 o ((8,2),64):((64,512),1)",
    "(4,8):(8,1) o 3 o 16:2",
]


@pytest.mark.parametrize("text", PRINTED)
def test_printed_layouts_round_trip(text: str) -> None:
    parsed = parse_layout(text)
    assert str(parsed) == text
    assert parse_layout(str(parsed)) == parsed


def test_parsed_layout_has_the_written_shape_and_stride() -> None:
    layout = parse_layout("((2,2),4):((1,4),2)")
    assert isinstance(layout, Layout)
    assert layout.shape == ((2, 2), 4)
    assert layout.stride == ((1, 4), 2)
    assert parse_layout("8:-3") == Layout(8, -3)


def test_swizzled_layout_parses_to_its_parts() -> None:
    composed = parse_layout("Sw<3,4,3> o 0 o (8,64):(64,1)")
    assert composed == ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))
    with_offset = parse_layout("Sw<2,4,-3> o -4 o 8:1")
    assert isinstance(with_offset, ComposedLayout)
    assert with_offset.inner == Swizzle(2, 4, -3)
    assert with_offset.offset == -4
    assert with_offset.outer == Layout(8, 1)


def test_swizzle_without_offset_means_offset_zero() -> None:
    composed = parse_layout("Sw<3,4,3> o (8,64):(64,1)")
    assert composed == ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))
    assert str(composed) == "Sw<3,4,3> o 0 o (8,64):(64,1)"


def test_shape_alone_is_column_major() -> None:
    assert parse_layout("(4,8)") == Layout((4, 8), (1, 4))
    assert parse_layout("((2,2),4)") == Layout(((2, 2), 4), ((1, 2), 4))
    assert parse_layout("16") == Layout(16, 1)
    assert parse_layout("Sw<3,4,3> o 0 o (8,64)") == ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (1, 8)))


def test_cute_static_ints() -> None:
    assert parse_layout("(_4,_8):(_8,_1)") == Layout((4, 8), (8, 1))
    assert parse_layout("((_2,_2),_4):((_1,_4),_2)") == Layout(((2, 2), 4), ((1, 4), 2))
    assert parse_layout("(_4,8):(_-8,1)") == Layout((4, 8), (-8, 1))
    assert parse_layout("Sw<_3,_4,_3> o _0 o (_8,_64):(_64,_1)") == ComposedLayout(
        Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1))
    )


def test_whitespace_anywhere_between_tokens() -> None:
    expected = Layout(((2, 2), 4), ((1, 4), -2))
    assert parse_layout(" ( ( 2 , 2 ) , 4 ) : ( ( 1 , 4 ) , -2 ) ") == expected
    assert parse_layout("((2,2),4)\n:\t((1,4),-2)") == expected
    assert parse_layout("Sw<3,4,3>o 0 o(8,64):(64,1)") == parse_layout("Sw < 3 , 4 , 3 > o 0 o (8,64):(64,1)")


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_random_layouts_round_trip(layout: Layout) -> None:
    text = str(layout)
    parsed = parse_layout(text)
    assert parsed == layout
    assert str(parsed) == text


@settings(max_examples=200, deadline=None)
@given(layouts(), st.lists(st.sampled_from(["", " ", "  ", "\t", "\n"]), min_size=1, max_size=5))
def test_random_layouts_parse_in_cute_static_form_with_whitespace(layout: Layout, gaps: list[str]) -> None:
    assert parse_layout(_cute_static(str(layout))) == layout
    assert parse_layout(_spaced(str(layout), gaps)) == layout
    assert parse_layout(_spaced(_cute_static(str(layout)), gaps)) == layout


@settings(max_examples=200, deadline=None)
@given(composed_layouts())
def test_random_composed_layouts_round_trip(composed: ComposedLayout) -> None:
    text = str(composed)
    parsed = parse_layout(text)
    assert parsed == composed
    assert str(parsed) == text
    assert parse_layout(_cute_static(text)) == composed


@settings(max_examples=200, deadline=None)
@given(_tuples(st.integers(-(10**6), 10**6)))
def test_int_tuples_round_trip(value: Any) -> None:
    assert parse_int_tuple(fmt(value)) == value
    assert parse_int_tuple(_cute_static(fmt(value))) == value


def test_parse_int_tuple_examples() -> None:
    assert parse_int_tuple("8") == 8
    assert parse_int_tuple("_8") == 8
    assert parse_int_tuple("(4,8)") == (4, 8)
    assert parse_int_tuple(" ( (2, 2) , _4 ) ") == ((2, 2), 4)
    assert parse_int_tuple("()") == ()
    assert parse_int_tuple("(-1)") == (-1,)


def test_parse_tile_shape() -> None:
    assert parse_tile_shape("16,8") == (16, 8)
    assert parse_tile_shape("(16,8)") == (16, 8)
    assert parse_tile_shape(" 4 , _2 ") == (4, 2)
    for bad in ("8", "8,8,8", "0,4", "4,-1", "(8,(2,2))", "()"):
        with pytest.raises(LayoutError) as info:
            parse_tile_shape(bad)
        assert info.value.code == "LAYOUT_BAD_SHAPE", bad


# --- errors ----------------------------------------------------------------------------------

MALFORMED = [
    # (text, 0-based position of the offending character, what the message says was expected there)
    ("(4,8:(8,1)", 4, "expected ',' or ')'"),
    ("(4,8):(8,1", 10, "expected ',' or ')'"),
    ("(4,8)::(8,1)", 6, "expected an integer or '('"),
    ("(4,,8):(8,1)", 3, "expected an integer or '('"),
    ("(4,8,):(8,1)", 5, "expected an integer or '('"),
    ("[4,8]:[8,1]", 0, "expected an integer or '('"),
    ("", 0, "expected a layout"),
    ("   ", 3, "expected a layout"),
    ("4:1)", 3, "expected 'o' or end of input"),
    ("(4,8) x", 6, "expected ':', 'o' or end of input"),
    ("4.0:1", 1, "expected ':', 'o' or end of input"),
    ("(_a,8)", 2, "expected a digit"),
    ("(4,-):(1,4)", 4, "expected a digit"),
    ("(4,8)\t:\n(8,x)", 11, "expected an integer or '('"),
    ("Sw3,4,3> o 8:1", 2, "expected '<'"),
    ("Sw<3,4> o 8:1", 6, "expected ','"),
    ("Sw<3,4,3 o 8:1", 9, "expected '>'"),
    ("Sw<3,4,x> o 8:1", 7, "expected an integer"),
    ("Sw<3,4,3>", 9, "expected 'o'"),
    ("Sw<3,4,3> (8,64):(64,1)", 10, "expected 'o'"),
    ("Sw<3,4,3> o", 11, "expected an integer or '('"),
    ("Sw<3,4,3> o (2,2) o 8:1", 12, "expected an integer offset"),
    ("Sw<3,4,3> o 0 o (8,64):(64,1) o 8", 30, "expected end of input"),
    ("Sw<3,4,3> o 0 o 8 o 4", 18, "expected ':' or end of input"),
]


def _caret_column(error: LayoutError, text: str) -> int:
    """Column under the shown text that the caret line points at."""
    lines = error.message.splitlines()
    assert len(lines) >= 3, error.message
    shown, caret = lines[-2], lines[-1]
    displayed = "".join(" " if c.isspace() else c for c in text)
    assert shown.endswith(displayed), (shown, displayed)
    assert caret.strip() == "^", caret
    indent = len(shown) - len(displayed)
    return caret.index("^") - indent


@pytest.mark.parametrize(("text", "position", "expected"), MALFORMED)
def test_malformed_input_points_at_the_offending_character(text: str, position: int, expected: str) -> None:
    with pytest.raises(LayoutError) as info:
        parse_layout(text)
    error = info.value
    assert isinstance(error, LayoutParseError)
    assert error.code == "LAYOUT_PARSE"
    assert error.position == position
    assert f"{expected} at position {position}" in error.message
    assert repr(text) in error.message.splitlines()[0]
    assert _caret_column(error, text) == position
    if position < len(text):
        assert f"found {text[position]!r}" in error.message
    else:
        assert "found end of input" in error.message
    assert "[LAYOUT_PARSE]" in str(error)


def test_parse_int_tuple_rejects_trailing_text_with_a_caret() -> None:
    with pytest.raises(LayoutParseError) as info:
        parse_int_tuple("(4,8):(8,1)")
    assert info.value.position == 5
    assert "expected end of input at position 5" in info.value.message
    assert _caret_column(info.value, "(4,8):(8,1)") == 5


def test_parse_tile_shape_syntax_error_has_a_caret() -> None:
    with pytest.raises(LayoutParseError) as info:
        parse_tile_shape("8x8")
    assert info.value.position == 1
    assert _caret_column(info.value, "8x8") == 1


def test_incongruent_shape_and_stride_is_a_clear_error() -> None:
    with pytest.raises(LayoutError) as info:
        parse_layout("(4,8):(8,(1,1))")
    assert info.value.code == "LAYOUT_INCONGRUENT"
    assert "(4,8):(8,(1,1))" in info.value.message
    assert info.value.hint
    with pytest.raises(LayoutError) as info:
        parse_layout("(4,8):8")
    assert info.value.code == "LAYOUT_INCONGRUENT"


def test_zero_extent_and_bad_swizzle_keep_their_codes_and_name_the_text() -> None:
    with pytest.raises(LayoutError) as info:
        parse_layout("(0,4):(1,0)")
    assert info.value.code == "LAYOUT_BAD_SHAPE"
    assert "(0,4):(1,0)" in info.value.message
    with pytest.raises(LayoutError) as info:
        parse_layout("Sw<3,4,1> o 0 o 8:1")
    assert info.value.code == "LAYOUT_BAD_SWIZZLE"
    assert "Sw<3,4,1>" in info.value.message


def test_non_string_input_is_a_parse_error() -> None:
    with pytest.raises(LayoutError) as info:
        parse_layout(Layout(8))  # type: ignore[arg-type]
    assert info.value.code == "LAYOUT_PARSE"
