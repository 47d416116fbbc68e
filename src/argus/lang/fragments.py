"""Thread–value layouts of whole fragments, built from the atoms' layouts.

A fragment's TV layout maps ``(thread, value)`` to the column-major index of the element in the
fragment's tile. These functions tile an atom's layout over the threads of a block: the facts
about each instruction, and the tiled MMA's register-slot rule (`argus.atoms.mma.slot_element`),
come from `argus.atoms`; here they are written as layouts.
"""

from __future__ import annotations

from typing import Any

from argus.atoms import MmaAtom
from argus.atoms.mma import group_origin, group_subtile
from argus.layout import Layout, size
from argus.layout.int_tuple import is_tuple, product


def colmajor_index(coord: tuple[int, ...], shape: tuple[int, ...]) -> int:
    idx, mult = 0, 1
    for c, s in zip(coord, shape, strict=True):
        idx += c * mult
        mult *= s
    return idx


def blocked_tv(shape: tuple[int, ...], threads: int, vector: int) -> Layout | None:
    """The TV layout of a row-major tile spread over `threads` threads, each holding runs of
    `vector` contiguous elements of the last dimension (the layout a 16-byte vector load gives).

    Leading dimensions are treated as rows. Returns None when the tile does not divide evenly.
    """
    cols = shape[-1]
    rows = product(shape[:-1]) if len(shape) > 1 else 1
    vector = min(vector, cols)
    if cols % vector:
        return None
    groups = cols // vector  # vectors per row
    thread_cols = min(threads, groups)
    while groups % thread_cols or threads % thread_cols:
        thread_cols -= 1
    thread_rows = threads // thread_cols
    if thread_rows > rows or rows % thread_rows:
        if len(shape) == 1 and thread_rows > 1:
            return None
        if rows % thread_rows:
            return None
    col_repeats = groups // thread_cols
    row_repeats = rows // thread_rows
    # column-major tile index: r + rows * c for the (rows, cols) view
    return Layout(
        ((thread_cols, thread_rows), (vector, col_repeats, row_repeats)),
        ((vector * rows, 1), (rows, vector * thread_cols * rows, thread_rows)),
    )


def mma_tv(atom: MmaAtom, operand: str, tile: tuple[int, int], groups: tuple[int, int]) -> Layout:
    """The TV layout of an operand tile of a tiled MMA whose thread groups (of the atom's thread
    count each) form a ``groups = (GM, GN)`` grid over the ``(M, N)`` accumulator: slot ``(t, v)`` is the
    element the instruction reads or writes there (`argus.atoms.mma.slot_element`, in the sub-tile at
    `argus.atoms.mma.group_origin`), so the interpreter's and the verifier's MMA read it as laid out.

    Thread ``t = lane + atom_threads * (gm + GM * gn)``. Operand ``"C"`` (tile ``(M, N)``): group
    ``(gm, gn)`` holds the sub-tile at rows ``gm*M/GM``, columns ``gn*N/GN``. ``"A"`` (tile ``(M, K)``):
    rows ``gm*M/GM``, all of K, the same for every ``gn`` (replicated). ``"B"`` (tile ``(K, N)``):
    columns ``gn*N/GN``, all of K, replicated over ``gm``. Inside a sub-tile the atom repeats along
    rows, then columns; value ``v = atom_value + atom_values * (repeat_row + repeats_row * repeat_col)``.

    The rule is linear in the layout's coordinates, so each mode's stride is the tile index of the element
    one step along it: a step of the atom's layout lands where `MmaAtom.operand_element` puts that index,
    a step of the repeats one atom tile further, a step of the groups one sub-tile further.
    """
    rows, _ = tile
    gm, gn = groups
    atom_rows, atom_cols = atom.operand_tile(operand)
    sub = group_subtile(operand, tile, groups)
    rep_r, rep_c = sub[0] // atom_rows, sub[1] // atom_cols

    def index(element: tuple[int, int]) -> int:
        return element[0] + rows * element[1]

    def steps(stride: Any) -> Any:  # an atom-layout stride (an index of the atom's tile) as a step in the tile
        if is_tuple(stride):
            return tuple(steps(d) for d in stride)
        return index(atom.operand_element(operand, stride))

    atom_tv = atom.layout(operand)
    thr, val = atom_tv[0], atom_tv[1]
    group_steps = (index(group_origin(operand, sub, 1, 0)), index(group_origin(operand, sub, 0, 1)))
    return Layout(
        ((thr.shape, (gm, gn)), (val.shape, (rep_r, rep_c))),
        ((steps(thr.stride), group_steps), (steps(val.stride), (index((atom_rows, 0)), index((0, atom_cols))))),
    )


def check_mma_tiling(atom: MmaAtom, operand: str, tile: tuple[int, int], groups: tuple[int, int]) -> str | None:
    """Why `tile` cannot be tiled by `atom` over `groups`, or None when it can."""
    rows, cols = tile
    gm, gn = groups
    ar, ac = atom.operand_tile(operand)
    split = {"C": (gm, gn), "A": (gm, 1), "B": (1, gn)}[operand]
    if rows % split[0] or cols % split[1]:
        return f"the {operand} tile {tile} does not split over {gm}x{gn} thread groups"
    sub = group_subtile(operand, tile, groups)
    if sub[0] % ar or sub[1] % ac:
        return f"each group's {operand} sub-tile {sub} is not a multiple of the atom's {operand} tile {(ar, ac)}"
    return None


def owners(tv: Layout, threads: int) -> dict[int, list[tuple[int, int]]]:
    """For every tile index, the (thread, value) pairs that hold it."""
    out: dict[int, list[tuple[int, int]]] = {}
    values = size(tv[1])
    for t in range(threads):
        for v in range(values):
            out.setdefault(tv(t, v), []).append((t, v))
    return out


def reduced_tv(
    tv: Layout, shape: tuple[int, int], axis: int, threads: int, shuffles: bool = True
) -> tuple[Layout, tuple[int, ...]] | str:
    """The TV layout of the result of reducing a 2-D fragment along `axis`, and the XOR-shuffle
    lane offsets that combine the partial results of threads sharing a row (``axis=1``) or a column.

    Every stride of `tv` must move along rows only or along columns only. Returns a message saying
    why the reduction is not possible in registers and shuffles otherwise. With ``shuffles=False``
    only the layout is wanted (no reduction happens), so threads may span warps.
    """
    from argus.layout import flatten

    rows, _cols = shape

    def project(s: int, d: int) -> int | None:
        if d == 0:
            return 0
        along_rows = d * (s - 1) < rows
        along_cols = d % rows == 0
        if axis == 1:  # keep the row coordinate
            return d if along_rows else 0 if along_cols else None
        return d // rows if along_cols else 0 if along_rows else None

    t_shapes, t_strides = flatten(tv[0].shape), flatten(tv[0].stride)
    v_shapes, v_strides = flatten(tv[1].shape), flatten(tv[1].stride)
    new_t: list[int] = []
    lanes: list[int] = []
    step = 1
    for s, d in zip(t_shapes, t_strides, strict=True):
        p = project(s, d)
        if p is None:
            return f"thread stride {d} moves along both rows and columns of the {shape} tile"
        new_t.append(p)
        if p == 0 and d != 0 and s > 1 and shuffles:
            if s & (s - 1) or step * s > 32:
                return (
                    f"the threads that share a {'row' if axis == 1 else 'column'} span more than one warp "
                    f"(or a non-power-of-two group): combining them needs shared memory, which T.reduce does not do yet"
                )
            lanes += [step << j for j in range(s.bit_length() - 1)]
        step *= s
    kept_shapes: list[int] = []
    kept_strides: list[int] = []
    for s, d in zip(v_shapes, v_strides, strict=True):
        p = project(s, d)
        if p is None:
            return f"value stride {d} moves along both rows and columns of the {shape} tile"
        if p != 0 and s > 1:
            kept_shapes.append(s)
            kept_strides.append(p)
    value = (tuple(kept_shapes), tuple(kept_strides)) if kept_shapes else ((1,), (0,))
    return Layout((tuple(t_shapes), value[0]), (tuple(new_t), value[1])), tuple(lanes)
