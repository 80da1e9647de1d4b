"""NestedGrid: the Java N5 NestedGridTest cases, plus edge handling."""

import numpy as np
import pytest

from altarr.dataset.grid import NestedGrid, clipped_shape
from altarr.errors import GridError


def test_absolute_and_relative_positions_1d():
    for scale in (1, 10):  # only the ratios matter
        g = NestedGrid((48 * scale,), [(1 * scale,), (3 * scale,), (6 * scale,), (24 * scale,)])
        assert [g.position((38,), level)[0] for level in range(4)] == [38, 12, 6, 1]
        assert [g.relative((38,), level, level + 1)[0] for level in range(3)] == [2, 0, 2]


def test_positions_2d():
    g = NestedGrid((30, 28), [(5, 7), (15, 14)])
    assert g.position((0, 1), 1) == (0, 0)
    assert g.position((0, 2), 1) == (0, 1)
    assert g.position((3, 2), 1) == (1, 1)
    assert g.relative((3, 2), 0, 1) == (0, 0)
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
    assert clipped_shape((10, 7), (4, 3), (2, 2)) == (2, 1)
    # the edge shard (1, 1) holds only the in-bounds chunk (2, 2)
    assert g.chunks_in((1, 1), 1) == [(2, 2)]
    assert g.n_chunks_in((1, 1), 1) == 1
    assert g.n_chunks_in((0, 0), 1) == 4
    with pytest.raises(GridError):
        g.check_chunk((3, 0))


def test_children_are_the_in_bounds_blocks_one_level_down():
    g = NestedGrid((10, 7), [(2, 1), (4, 3), (8, 6)])
    # shard (0, 0) of level 2 holds 2 x 2 level-1 blocks, all in bounds
    assert g.children((0, 0), 2) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # the edge shard (1, 1): level-1 grid is (3, 3), so only (2, 2) is left of its 2 x 2
    assert g.children((1, 1), 2) == [(2, 2)]
    # level-1 block (2, 2) holds level-0 chunks (4..4, 6..6): 1 x 1 in bounds of the (5, 7) chunk grid
    assert g.children((2, 2), 1) == [(4, 6)]
    assert g.children((0, 1), 1) == [(0, 3), (0, 4), (0, 5), (1, 3), (1, 4), (1, 5)]


def test_positions_of_another_rank_are_refused():
    g = NestedGrid((10, 7), [(4, 3), (8, 6)])
    with pytest.raises(ValueError):
        g.chunks_in((0,), 1)
    with pytest.raises(ValueError):
        g.children((0, 0, 0), 1)


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
