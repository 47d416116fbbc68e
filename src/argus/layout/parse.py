"""Parsing of layouts from the text CuTe prints.

Owns `parse_layout` (``(4,8):(8,1)``, ``((2,2),4):((1,4),2)``, a shape alone ``(4,8)``, CuTe's
static ints ``(_4,_8):(_8,_1)``, swizzled layouts ``Sw<3,4,3> o 0 o (8,64):(64,1)``),
`parse_int_tuple` and `parse_tile_shape` (an ``M,N`` pair as given on a command line), and the
parse error `LayoutParseError`. Every layout's ``str`` parses back to an equal layout::

    str(parse_layout(str(L))) == str(L)

Grammar (whitespace is allowed between any two tokens)::

    text     := layout | inner 'o' [offset 'o'] layout
    inner    := swizzle | layout
    swizzle  := 'Sw' '<' int ',' int ',' int '>'
    layout   := tuple [':' tuple]          # no stride: column-major, as Layout(shape)
    tuple    := int | '(' [tuple (',' tuple)*] ')'
    int      := ['_'] ['-' | '+'] digit+   # '_' is how CuTe prints a static int
    offset   := int

Malformed text raises `LayoutParseError` (a `LayoutError` with code ``LAYOUT_PARSE``) whose
message names what was expected at which position and shows the text with a caret under the
offending character.
"""

from __future__ import annotations

from typing import Any

from argus.layout.errors import LayoutError
from argus.layout.int_tuple import is_tuple
from argus.layout.layout import Layout
from argus.layout.swizzle import ComposedLayout, Swizzle

__all__ = ["LayoutParseError", "parse_int_tuple", "parse_layout", "parse_tile_shape"]


class LayoutParseError(LayoutError):
    """Text that is not a layout. Code ``LAYOUT_PARSE``.

    Attributes:
        text: the whole input.
        position: 0-based index into `text` of the offending character (``len(text)`` at the end).
        expected: what the parser expected there, in words (``"',' or ')'"``).
    """

    def __init__(self, text: str, position: int, expected: str, hint: str | None = None) -> None:
        self.text = text
        self.position = position
        self.expected = expected
        found = "end of input" if position >= len(text) else repr(text[position])
        shown = "".join(" " if c.isspace() else c for c in text)  # keep one column per character
        message = (
            f"cannot parse {text!r}: expected {expected} at position {position}, found {found}\n"
            f"    {shown}\n"
            f"    {' ' * position}^"
        )
        super().__init__("LAYOUT_PARSE", message, hint)


class _Parser:
    """A recursive-descent parser over one string; `pos` is the next unread character."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # --- low level -------------------------------------------------------------------------
    def peek(self) -> str:
        """Skip whitespace; the next character, or ``""`` at the end."""
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def fail(self, expected: str, position: int | None = None, hint: str | None = None) -> LayoutParseError:
        return LayoutParseError(self.text, self.pos if position is None else position, expected, hint)

    def expect(self, token: str, expected: str) -> None:
        self.peek()
        if not self.text.startswith(token, self.pos):
            raise self.fail(expected)
        self.pos += len(token)

    def expect_end(self, expected: str) -> None:
        if self.peek() != "":
            raise self.fail(expected)

    def wrap(self, error: LayoutError, start: int) -> LayoutError:
        """`error` from a constructor, with the part of the text it came from added."""
        part = self.text[start : self.pos].strip()
        where = f"parsing {self.text!r}" if part == self.text.strip() else f"at {part!r} while parsing {self.text!r}"
        return LayoutError(error.code, f"{error.message} ({where})", error.hint)

    # --- grammar ---------------------------------------------------------------------------
    def integer(self) -> int:
        """``['_'] ['-' | '+'] digit+``."""
        self.peek()
        text, i = self.text, self.pos
        if i < len(text) and text[i] == "_":
            i += 1
        negative = i < len(text) and text[i] == "-"
        if i < len(text) and text[i] in "+-":
            i += 1
        digits = i
        while i < len(text) and text[i] in "0123456789":
            i += 1
        if i == digits:
            expected = "an integer" if digits == self.pos else "a digit"
            self.pos = digits
            raise self.fail(expected)
        value = int(text[digits:i])
        self.pos = i
        return -value if negative else value

    def int_tuple(self) -> Any:
        """``int | '(' [tuple (',' tuple)*] ')'``."""
        c = self.peek()
        if c == "(":
            self.pos += 1
            if self.peek() == ")":
                self.pos += 1
                return ()
            items: list[Any] = []
            while True:
                items.append(self.int_tuple())
                c = self.peek()
                self.pos += 1
                if c == ",":
                    continue
                if c == ")":
                    return tuple(items)
                self.pos -= 1
                raise self.fail("',' or ')'")
        if c and (c in "_+-" or c in "0123456789"):
            return self.integer()
        raise self.fail("an integer or '('")

    def layout_rest(self, shape: Any, start: int) -> tuple[Layout, bool]:
        """The optional ``':' stride`` after `shape` (which began at `start`); returns the layout
        and whether a stride was given."""
        stride = None
        if self.peek() == ":":
            self.pos += 1
            stride = self.int_tuple()
        try:
            layout = Layout(shape, stride)
        except LayoutError as e:
            raise self.wrap(e, start) from e
        return layout, stride is not None

    def layout(self) -> tuple[Layout, bool]:
        """``tuple [':' tuple]``; returns the layout and whether a stride was given."""
        self.peek()
        start = self.pos
        return self.layout_rest(self.int_tuple(), start)

    def swizzle(self) -> Swizzle:
        """``'Sw' '<' int ',' int ',' int '>'``."""
        self.peek()
        start = self.pos
        self.expect("Sw", "'Sw<' or a layout")
        self.expect("<", "'<'")
        b = self.integer()
        self.expect(",", "','")
        m = self.integer()
        self.expect(",", "','")
        s = self.integer()
        self.expect(">", "'>'")
        try:
            return Swizzle(b, m, s)
        except LayoutError as e:
            raise self.wrap(e, start) from e

    def compose_operator(self) -> bool:
        """Consume the composition operator ``o`` when it comes next."""
        if self.peek() == "o":
            self.pos += 1
            return True
        return False

    def top(self) -> Layout | ComposedLayout:
        """``layout | inner 'o' [offset 'o'] layout``, to the end of the text."""
        if self.peek() == "":
            raise self.fail("a layout", hint="write a layout as CuTe prints it, e.g. '(4,8):(8,1)'")
        inner: Swizzle | Layout
        if self.peek() == "S":
            inner = self.swizzle()
            if not self.compose_operator():
                raise self.fail(
                    "'o'", hint="a swizzle is printed composed with a layout: 'Sw<B,M,S> o 0 o (8,64):(64,1)'"
                )
        else:
            inner, has_stride = self.layout()
            if not self.compose_operator():
                self.expect_end("'o' or end of input" if has_stride else "':', 'o' or end of input")
                return inner
        # After the first 'o': an offset followed by 'o', or the outer layout.
        self.peek()
        start = self.pos
        first = self.int_tuple()
        offset, has_offset = 0, False
        if self.compose_operator():
            if is_tuple(first):
                raise self.fail("an integer offset", start, "the form is 'inner o offset o layout'")
            offset, has_offset = first, True
            self.peek()
            start = self.pos
            first = self.int_tuple()
        outer, has_stride = self.layout_rest(first, start)
        if has_stride:
            self.expect_end("end of input")
        else:
            self.expect_end("':' or end of input" if has_offset else "':', 'o' or end of input")
        return ComposedLayout(inner, offset, outer)


def parse_layout(text: str) -> Layout | ComposedLayout:
    """The layout that `text` prints: ``parse_layout(str(L)) == L`` for every `Layout` and every
    `ComposedLayout` of a `Swizzle` or `Layout`, an integer offset and a `Layout`.

    Accepts CuTe's printed forms: ``8:1``, ``(4,8):(8,1)``, a shape alone (``(4,8)`` means
    ``Layout((4, 8))``, column-major), static ints with a leading ``_``, negative strides,
    whitespace anywhere, and ``Sw<B,M,S> o [offset o] layout``. Raises `LayoutParseError`
    (code ``LAYOUT_PARSE``) on malformed text, and the `Layout` constructor's `LayoutError`
    (e.g. ``LAYOUT_INCONGRUENT``, ``LAYOUT_BAD_SHAPE``) with the text added on well-formed text
    that is not a layout.
    """
    if not isinstance(text, str):
        raise LayoutError("LAYOUT_PARSE", f"parse_layout takes a string, got {text!r} ({type(text).__name__})")
    return _Parser(text).top()


def parse_int_tuple(text: str) -> int | tuple:
    """The int tuple that `text` prints: ``8``, ``(4,8)``, ``((2,2),_4)``, ``()``.

    ``parse_int_tuple(fmt(t)) == t`` for every int tuple `t`. Raises `LayoutParseError`
    (code ``LAYOUT_PARSE``) on anything else.
    """
    if not isinstance(text, str):
        raise LayoutError("LAYOUT_PARSE", f"parse_int_tuple takes a string, got {text!r} ({type(text).__name__})")
    parser = _Parser(text)
    value = parser.int_tuple()
    parser.expect_end("end of input")
    return value


def parse_tile_shape(text: str) -> tuple[int, int]:
    """An ``M x N`` tile shape written ``M,N`` or ``(M,N)``, as `argus layout show --tv` takes it.

    Returns ``(M, N)``, both at least 1. Raises `LayoutParseError` (``LAYOUT_PARSE``) on malformed
    text and `LayoutError` ``LAYOUT_BAD_SHAPE`` when it is not two positive integers.
    """
    if not isinstance(text, str):
        raise LayoutError("LAYOUT_PARSE", f"parse_tile_shape takes a string, got {text!r} ({type(text).__name__})")
    parser = _Parser(text)
    parenthesized = parser.peek() == "("
    if parenthesized:
        value = parser.int_tuple()
    else:
        items = [parser.int_tuple()]
        while parser.peek() == ",":
            parser.pos += 1
            items.append(parser.int_tuple())
        value = tuple(items)
    parser.expect_end("end of input" if parenthesized else "',' or end of input")
    if not (is_tuple(value) and len(value) == 2 and all(isinstance(v, int) and v >= 1 for v in value)):
        raise LayoutError(
            "LAYOUT_BAD_SHAPE",
            f"tile shape {text.strip()!r} is not two positive integers M,N",
            "write the tile as M,N or (M,N), e.g. 16,8",
        )
    return value
