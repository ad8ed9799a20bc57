"""The adaptive grid's layout computed in blocks of coarse cells (bounded temporaries)
equals its definition cell by cell, for every block size."""
import itertools

import numpy as np
import pytest

import pydp_synopsis as ps

from pydp_synopsis.rectangles import grid
from pydp_synopsis.rectangles.grid import Layout, coarse_geometry


def brute(merge, shape, width, fine_shape):
    """owner, start, end by the definition: coarse cell i, row-major fine index j."""
    owner, start, end = [], [], []
    for i, q in enumerate(fine_shape.tolist()):
        cell = np.unravel_index(i, shape)
        for js in itertools.product(*[range(x) for x in q]):
            owner.append(i)
            w = width[i]
            start.append([cell[a] * merge[a] + -(-js[a] * int(w[a]) // q[a])
                          for a in range(len(shape))])
            end.append([cell[a] * merge[a] + -(-(js[a] + 1) * int(w[a]) // q[a])
                        for a in range(len(shape))])
    return np.array(owner), np.array(start), np.array(end)


@pytest.mark.parametrize("block", [1, 3, 7, 50, 1 << 18])
@pytest.mark.parametrize("sizes,merge", [((40, 33), (6, 5)), ((9, 11, 7), (3, 4, 2)), ((5,), (2,))])
def test_layout_in_blocks_is_the_definition(monkeypatch, block, sizes, merge):
    monkeypatch.setattr(grid, "_LAYOUT_BLOCK", block)
    monkeypatch.setattr(grid, "_PARALLEL_CELLS", 0 if block < 10 else 1 << 18)
    gen = np.random.default_rng(block + len(sizes))
    shape, width = coarse_geometry(sizes, merge)
    fine_shape = np.minimum(gen.integers(1, 6, width.shape), width)
    layout = Layout(merge, shape, width, fine_shape)
    owner, start, end = brute(merge, shape, width, fine_shape)
    assert layout.owner.tolist() == owner.tolist()
    assert layout.start.tolist() == start.tolist()
    assert layout.end.tolist() == end.tolist()
    assert layout.base.tolist() == np.concatenate([[0], np.cumsum(layout.fine_cells)[:-1]]).tolist()


def test_coarse_blocks_cover_every_cell_once():
    cells = np.array([5, 1, 1, 9, 2, 2, 2, 30, 1])
    for block in (1, 2, 4, 10, 100):
        b = grid._coarse_blocks(cells, block)
        assert b[0] == 0 and b[-1] == cells.size and b == sorted(set(b))
        sums = [int(cells[lo:hi].sum()) for lo, hi in zip(b[:-1], b[1:])]
        # a block ends at the first cell reaching its share: at most block + one cell
        assert all(s <= block + cells.max() for s in sums)


def test_release_and_grid_cells_do_not_depend_on_the_block(monkeypatch):
    gen = np.random.default_rng(3)
    pts = np.column_stack([gen.integers(0, 10**9, 20_000), gen.integers(0, 10**9, 20_000)])
    def build():
        s = ps.RectangleSynopsis.build(pts, domain=[(0, 10**9)] * 2, epsilon=1, rng=ps.Rng(seed=4))
        kind, meta, arrays, _ = s._to_record()
        coarse, fine = s.grid_cells()
        return (kind, meta, {k: v.tolist() for k, v in arrays.items()},
                {f: fine[f].tolist() for f in fine.dtype.names},
                np.asarray(s.error_bound(0.9)).tolist())

    default = build()
    monkeypatch.setattr(grid, "_LAYOUT_BLOCK", 5)
    monkeypatch.setattr(grid, "_PARALLEL_CELLS", 0)
    assert build() == default
