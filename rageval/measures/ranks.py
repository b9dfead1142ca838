"""Where judged passages rank in their query's ranking, for every query at once.

trec_eval ranks a query's passages by score descending, ties by passage id descending. The measures only need
the ranks of the positively labelled passages, so rather than sorting every ranking, each such passage (an
*entry*) counts the scores of its row that are greater than its own; the few ties are left to the caller, who
compares ids. The scores sit in a ``[n_queries x width]`` matrix. Rows are taken in blocks of rows holding the
same number of entries, drawn from consecutive stretches of the matrix, so each row is read once for all its
entries and a block's rows lie near each other in memory (a gathered copy of the row per entry, from anywhere in
the matrix, made the count 2-3 times slower per passage at a million queries than at a hundred thousand).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_BLOCK_CELLS = 2**22  # comparisons per block: bounds every temporary to a few MB
_STRETCH_CELLS = 2**22  # matrix cells (32 MB of scores) whose rows are grouped into blocks together


@dataclass(frozen=True)
class EntryRanks:
    """Per entry: whether its passage is in its row (``found``), its column there (-1 if not found), how many
    scores of the row are greater (``above``), and the pairs (entry, column) of the other columns holding an
    equal score (``tie_entries``, ``tie_columns``; the entry's own column may be among them)."""

    found: np.ndarray
    columns: np.ndarray
    above: np.ndarray
    tie_entries: np.ndarray
    tie_columns: np.ndarray


def rank_entries(score_matrix: np.ndarray, rows: np.ndarray, *, scores: np.ndarray | None = None,
                 code_matrix: np.ndarray | None = None, codes: np.ndarray | None = None) -> EntryRanks:
    """Count, for each entry, the greater scores of its row.

    An entry is given either by its score (``scores``: the dict path knows it) or by its passage code
    (``codes``, found in ``code_matrix``, laid out as ``score_matrix``). Padding cells must hold a score that no
    entry's score equals or is below (-inf) and a code that no entry has (-1).
    """
    by_code = scores is None
    if by_code and (code_matrix is None or codes is None):
        raise ValueError("give each entry's score, or its code and the code matrix")
    n_entries = len(rows)
    found = np.ones(n_entries, dtype=bool) if not by_code else np.zeros(n_entries, dtype=bool)
    columns = np.full(n_entries, -1, dtype=np.int64)
    above = np.zeros(n_entries, dtype=np.int64)
    tie_entries: list[np.ndarray] = []
    tie_columns: list[np.ndarray] = []
    if n_entries == 0:
        return EntryRanks(found, columns, above, np.empty(0, np.int64), np.empty(0, np.int64))

    order = np.argsort(rows, kind="stable")  # the entries of one row side by side
    counts = np.bincount(rows, minlength=score_matrix.shape[0])
    starts = np.cumsum(counts) - counts
    width = max(score_matrix.shape[1], 1)
    for block_rows in _blocks(counts, width):
        per_row = int(counts[block_rows[0]])
        entries = order[starts[block_rows][:, None] + np.arange(per_row)]  # [rows x per_row]
        row_scores = score_matrix[block_rows]
        if by_code:
            hit = code_matrix[block_rows][:, None, :] == codes[entries][:, :, None]  # type: ignore[index]
            column = hit.argmax(axis=2)
            inside = np.take_along_axis(hit, column[:, :, None], axis=2)[:, :, 0]
            own = np.take_along_axis(row_scores, column, axis=1)
            found[entries] = inside
            columns[entries] = np.where(inside, column, -1)
        else:
            own = scores[entries]  # type: ignore[index]
            inside = np.ones(entries.shape, dtype=bool)
        compared = row_scores[:, None, :]
        above[entries] = (compared > own[:, :, None]).sum(axis=2, dtype=np.int64)
        equal = compared == own[:, :, None]
        tied = (equal.sum(axis=2, dtype=np.int64) > 1) & inside
        if tied.any():
            entry_position, column_position = np.nonzero(equal[tied])
            tie_entries.append(entries[tied][entry_position])
            tie_columns.append(column_position)
    if not tie_entries:
        return EntryRanks(found, columns, above, np.empty(0, np.int64), np.empty(0, np.int64))
    return EntryRanks(found, columns, above, np.concatenate(tie_entries).astype(np.int64),
                      np.concatenate(tie_columns).astype(np.int64))


def _blocks(counts: np.ndarray, width: int):
    """Blocks of rows with the same number of entries, at most :data:`_BLOCK_CELLS` comparisons each, taken from
    consecutive stretches of :data:`_STRETCH_CELLS` cells of the matrix, so that the rows a block reads are near
    each other in memory."""
    stretch = max(1, _STRETCH_CELLS // width)
    for first in range(0, len(counts), stretch):
        stretch_counts = counts[first:first + stretch]
        row_order = np.argsort(stretch_counts, kind="stable")
        boundaries = np.flatnonzero(np.diff(stretch_counts[row_order])) + 1
        for group in np.split(row_order + first, boundaries):
            per_row = int(counts[group[0]])
            if per_row == 0:
                continue
            step = max(1, _BLOCK_CELLS // (per_row * width))
            for start in range(0, len(group), step):
                yield group[start:start + step]
