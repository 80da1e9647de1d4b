"""NestedGrid: the Java N5 NestedGridTest cases, plus edge handling."""

import numpy as np
import pytest

from altarr.dataset.grid import NestedGrid
from altarr.errors import GridError


def test_absolute_positions_1d():
    for scale in (1, 10):  # only the ratios matter
        g = NestedGrid((48 * scale,), [(1 * scale,), (3 * scale,), (6 * scale,), (24 * scale,)])
        assert [g.position((38,), level)[0] for level in range(4)] == [38, 12, 6, 1]


def test_positions_2d():
    g = NestedGrid((30, 28), [(5, 7), (15, 14)])
    assert g.position((0, 1), 1) == (0, 0)
    assert g.position((0, 2), 1) == (0, 1)
    assert g.position((3, 2), 1) == (1, 1)
    assert g.flat_index((1, 1), 1) == 3


@pytest.mark.parametrize(
    "levels, message",
    [
        ([(3,), (7,), (11,)], "not a multiple of previous level"),
        ([(4,), (2,)], "is smaller than previous"),
        ([(4,), (8, 8)], "different length"),
        ([(0,)], "negative or zero"),
    ],
)
def test_invalid_nesting(levels, message):
    with pytest.raises(GridError, match=message):
        NestedGrid((100,), levels)


def test_edge_chunks_and_children():
    g = NestedGrid((10, 7), [(4, 3), (8, 6)])
    assert g.grid_shape(0) == (3, 3)
    assert g.grid_shape(1) == (2, 2)
    assert g.block_clipped_shape((2, 2)) == (2, 1)
    # the edge shard (1, 1) holds only the in-bounds chunk (2, 2)
    assert g.chunks_in((1, 1), 1) == [(2, 2)]
    assert g.n_chunks_in((1, 1), 1) == 1
    assert g.n_chunks_in((0, 0), 1) == 4
    with pytest.raises(GridError):
        g.check_chunk((3, 0))


def test_positions_of_another_rank_are_refused():
    g = NestedGrid((10, 7), [(4, 3), (8, 6)])
    for call in (
        lambda: g.chunks_in((0,), 1),
        lambda: g.position((0,), 1),
        lambda: g.n_chunks_in((0,), 1),
        lambda: g.flat_index((0,), 1),
        lambda: g.first_chunk((0,), 1),
        lambda: g.block_clipped_shape((2,)),
    ):
        with pytest.raises(ValueError):
            call()


def test_repr_names_shape_and_levels():
    assert repr(NestedGrid((10, 7), [(4, 3), (8, 6)])) == "NestedGrid(shape=(10, 7), levels=[(4, 3), (8, 6)])"


def test_group_by_block_groups_like_position_in_first_seen_order():
    g = NestedGrid((50, 40, 30), [(2, 3, 5), (4, 6, 10), (8, 12, 30)])
    rng = np.random.default_rng(0)
    chunks = [tuple(int(v) for v in c) for c in rng.integers(0, (25, 14, 6), size=(200, 3))]
    for level in range(3):
        want: dict = {}
        for c in chunks:
            want.setdefault(g.position(c, level), []).append(c)
        got = g.group_by_block(chunks, level)
        assert got == want
        assert list(got) == list(want)  # the same (first-seen) order


def test_a_grid_needs_a_level_and_no_negative_size_but_may_be_empty():
    with pytest.raises(GridError) as info:
        NestedGrid((10,), [])
    assert info.value.message == "a grid needs at least one level (the chunk shape)"
    with pytest.raises(GridError) as info:
        NestedGrid((10, -1), [(2, 2)])
    assert info.value.message == "array shape (10, -1) has a negative size"
    g = NestedGrid((0, 5), [(2, 2), (4, 4)])  # a zero-size axis: no chunks along it
    assert g.grid_shape(0) == (0, 3) and g.n_chunks_in((0, 0), 1) == 0


def test_grid_shape_is_the_chunk_grid_by_default_and_a_block_past_the_edge_holds_no_chunk():
    g = NestedGrid((10, 7), [(4, 3), (8, 6)])
    assert g.grid_shape() == (3, 3) and g.grid_shape(1) == (2, 2)
    assert g.n_chunks_in((2, 0), 1) == 0 and g.chunks_in((2, 0), 1) == []


def test_check_chunk_names_what_is_wrong():
    g = NestedGrid((10, 7), [(4, 3), (8, 6)])
    assert g.check_chunk([2, 1]) == (2, 1)
    with pytest.raises(GridError) as info:
        g.check_chunk(("a", 1))
    assert info.value.message == "chunk coordinates must be a sequence of integers, got ('a', 1)"
    assert info.value.chunk is None
    with pytest.raises(GridError) as info:
        g.check_chunk((3, 0))
    assert info.value.message == "chunk coordinates (3, 0) are outside the chunk grid (3, 3)"
    assert info.value.chunk == (3, 0)


_G = NestedGrid((10, 7), [(4, 3), (8, 6)])  # chunk grid (3, 3), level-1 grid (2, 2)
_G0 = NestedGrid((), [()])  # a 0-d array: one chunk, ()


@pytest.mark.parametrize(
    "grid, coords, level, want",
    [
        (_G, [], 0, np.zeros((0, 2))),
        (_G, np.zeros((0, 2), np.int32), 0, np.zeros((0, 2))),
        (_G, lambda: iter([]), 0, np.zeros((0, 2))),  # an iterator: through the scalar path
        (_G0, [(), (), ()], 0, np.zeros((3, 0))),  # the one chunk of a 0-d array, asked three times
        (_G, np.array([(1, 2), (2, 0)], np.int32), 0, [(1, 2), (2, 0)]),
        (_G, [(1.0, 2.0), (2.0, 0.0)], 0, [(1, 2), (2, 0)]),  # not integers: the scalar path
        (_G, lambda: iter([(1, 2)]), 0, [(1, 2)]),
        (_G, [(1.0, 1.0)], 1, [(1, 1)]),
    ],
)
def test_check_chunks_returns_int64_rows(grid, coords, level, want):
    got = grid.check_chunks(coords() if callable(coords) else coords, level)
    want = np.asarray(want, np.int64)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "coords, level, message, chunk",
    [
        ([(0, 0), (3, 1)], 0, "chunk coordinates (3, 1) are outside the chunk grid (3, 3)", (3, 1)),
        (
            np.array([(0, 0), (0, -1)]),
            0,
            "chunk coordinates (0, -1) are outside the chunk grid (3, 3)",
            (0, -1),
        ),
        ([(0, 3)], 0, "chunk coordinates (0, 3) are outside the chunk grid (3, 3)", (0, 3)),
        ([(1, 1), (2, 0)], 1, "chunk coordinates (2, 0) are outside the chunk grid (2, 2)", (2, 0)),
        ([(1.0, 1.0), (2.0, 0.0)], 1, "chunk coordinates (2, 0) are outside the chunk grid (2, 2)", (2, 0)),
        ([(1, 2, 3)], 0, "chunk coordinates (1, 2, 3) are outside the chunk grid (3, 3)", (1, 2, 3)),
        (  # named as given, not as the int64 a uint64 past 2**63 - 1 wraps to
            np.array([(0, 0), (2**63, 0)], np.uint64),
            0,
            "chunk coordinates (9223372036854775808, 0) are outside the chunk grid (3, 3)",
            (2**63, 0),
        ),
        ([1, 2], 0, "chunk coordinates must be a sequence of integers, got 1", None),
        (
            [[[0, 0], [0, 0]]],
            0,
            "chunk coordinates must be a sequence of integers, got [[0, 0], [0, 0]]",
            None,
        ),
        ([("a", "b")], 0, "chunk coordinates must be a sequence of integers, got ('a', 'b')", None),
        ([(float("nan"), 0.0)], 0, "chunk coordinates must be a sequence of integers, got (nan, 0.0)", None),
    ],
)
def test_check_chunks_names_the_first_bad_coordinates(coords, level, message, chunk):
    with pytest.raises(GridError) as info:
        _G.check_chunks(coords, level)
    assert (info.value.message, info.value.chunk) == (message, chunk)


def test_check_chunks_takes_an_int64_array_as_it_is():
    coords = np.array([(0, 1), (2, 2)], np.int64)
    assert _G.check_chunks(coords) is coords  # no copy of a large batch's coordinates


@pytest.mark.parametrize("coords", [[()], [[], []], [(), ()], np.empty((3, 0), np.int64)])
def test_check_chunks_refuses_empty_coordinates_of_another_rank(coords):
    """Empty tuples for a 2-d grid are coordinates of the wrong rank, not "no coordinates" (read_chunks
    answered ``[]`` to two requests) and not chunk (0, 0)."""
    with pytest.raises(GridError) as info:
        _G.check_chunks(coords)
    assert (info.value.message, info.value.chunk) == (
        "chunk coordinates () are outside the chunk grid (3, 3)",
        (),
    )


@pytest.mark.parametrize(
    ("coords", "rows"), [([], 0), (np.empty((0, 2), np.int64), 0), (np.empty((0, 5)), 0)]
)
def test_check_chunks_of_no_coordinates_is_empty(coords, rows):
    got = _G.check_chunks(coords)
    assert got.shape == (rows, 2) and got.dtype == np.int64


def test_empty_tuples_are_the_one_chunk_of_a_0d_grid():
    got = NestedGrid((), [()]).check_chunks([(), (), ()])
    assert got.shape == (3, 0) and got.dtype == np.int64


@pytest.mark.parametrize(
    ("position", "level", "first"), [((1, 1), 1, (2, 5)), ((0, 3), 1, (0, 15)), ((4, 2), 0, (4, 2))]
)
def test_first_chunk_of_a_block_is_in_chunk_coordinates(position, level, first):
    got = NestedGrid((100, 70), [(10, 7), (20, 35)]).first_chunk(position, level)
    assert got == first and all(type(c) is int for c in got)
