"""Worklists carried in the URL: an ordered list of a run's queries (a 2 x 2 cell, failure cases, a correlation
selection) that the query inspector walks with Prev/Next ("case 3 of 130").

A list is stored in the link itself, so it can be shared and survives a reload: ``?run=R&query=Q&list=TOKEN&
list_name=NAME``. ``TOKEN`` encodes the positions of the queries in the run's query order (``queries.query_id``, the
order of :func:`ui.data.load_query_table`), as zigzag deltas in LEB128 varints, zlib-compressed, base64url without
padding: a sorted list of 50,000 positions of 100,000 takes a few kB; a short list a few characters. Positions, not
ids, because ids can be long and need escaping. The token ends with ``.`` and a CRC-32 of the run's query order, so a
token read against another run (the sidebar switched run, a rebuilt run) is an error, never another list of queries.
Links carry at most :data:`MAX_QUERIES` queries (a URL past some 64 kB is refused by the server). Pure functions: no
streamlit import.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from rageval.findings import GoldAnswerTable

#: Query parameters of a worklist link.
LIST_PARAM, NAME_PARAM = "list", "list_name"
#: The most queries one link carries (the first ones): a few kB of URL even in random order over 100k queries.
MAX_QUERIES = 2_000
#: The most queries a per-row link (one link in each row of a table) carries: every row repeats the token (300
#: rows of 300 random positions of 100k were 347 kB of links; 100 of 100, 47 kB).
ROW_LINK_MAX_QUERIES = 100


class WorklistError(ValueError):
    """A ``list`` token that is not one this module wrote (truncated or edited link)."""


def encode_positions(positions: Iterable[int]) -> str:
    """The URL token of ``positions`` (non-negative ints, any order, kept as given)."""
    out = bytearray()
    previous = 0
    for position in positions:
        if position < 0:
            raise ValueError(f"negative position {position}")
        delta = position - previous
        previous = position
        value = (delta << 1) ^ (delta >> 63)  # zigzag: small negative deltas stay small
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                break
    return base64.urlsafe_b64encode(zlib.compress(bytes(out), 9)).decode("ascii").rstrip("=")


def decode_positions(token: str) -> list[int]:
    """The positions of a token from :func:`encode_positions`; :class:`WorklistError` for anything else."""
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, zlib.error) as error:
        raise WorklistError(f"not a worklist token ({error})") from None
    positions, value, shift, previous = [], 0, 0, 0
    for byte in raw:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        previous += (value >> 1) ^ -(value & 1)
        if previous < 0:
            raise WorklistError("not a worklist token (negative position)")
        positions.append(previous)
        value, shift = 0, 0
    if shift:
        raise WorklistError("not a worklist token (truncated)")
    return positions


def order_tag(run_order: Sequence[str]) -> str:
    """8 hex digits naming a query order: CRC-32 of the ids joined by the unit separator."""
    return f"{zlib.crc32(chr(31).join(run_order).encode('utf-8')):08x}"


def encode_worklist(query_ids: Iterable[str], run_order: Sequence[str]) -> str:
    """The token of ``query_ids`` (in the order given) against the run's query order ``run_order``; ids not in the
    run are left out. It ends with ``.`` + :func:`order_tag` of ``run_order``."""
    index = {query_id: i for i, query_id in enumerate(run_order)}
    return encode_positions(index[q] for q in query_ids if q in index) + "." + order_tag(run_order)


def decode_worklist(token: str, run_order: Sequence[str]) -> list[str]:
    """The query ids of a token against ``run_order``; :class:`WorklistError` when the token was made for another
    query order (another run, or another version of this one) or a position is past the run. A token without the
    order tag is read by positions alone."""
    token, _, tag = token.partition(".")
    if tag and tag != order_tag(run_order):
        raise WorklistError("the list was made for another run (or another version of this run): its query order "
                            "differs")
    positions = decode_positions(token)
    if positions and max(positions) >= len(run_order):
        raise WorklistError(f"the list names query position {max(positions)}, but the run has {len(run_order)} "
                            "queries")
    return [run_order[p] for p in positions]


def worklist_params(run: str, query_ids: Sequence[str], run_order: Sequence[str], name: str,
                    **extra: str) -> dict[str, str]:
    """The query parameters of an inspector link that opens the first of ``query_ids`` and walks them all."""
    params = {"run": run, LIST_PARAM: encode_worklist(query_ids, run_order), NAME_PARAM: name, **extra}
    if query_ids:
        params["query"] = query_ids[0]
    return params


def worklist_links(page_path: str, run: str, query_ids: Sequence[str], run_order: Sequence[str], name: str,
                   limit: int = ROW_LINK_MAX_QUERIES) -> list[str]:
    """One relative link per query of ``query_ids`` (for a link column): each opens that query and walks the whole
    list, the token encoded once. Past ``limit`` queries the links open the query alone (no list): every row would
    repeat a long token."""
    unique = list(dict.fromkeys(query_ids))  # a row per (query, category) names its query once in the list
    if len(unique) > limit:
        return [page_path + "?" + urlencode({"run": run, "query": q}) for q in query_ids]
    base = page_path + "?" + urlencode({"run": run, LIST_PARAM: encode_worklist(unique, run_order),
                                        NAME_PARAM: name})
    return [f"{base}&query={quote(str(q), safe='')}" for q in query_ids]


def capped(query_ids: Sequence[str], name: str, limit: int = MAX_QUERIES) -> tuple[list[str], str]:
    """``query_ids`` cut to their first ``limit`` (a link's size) and the list's name, saying so when cut."""
    ids = list(dict.fromkeys(query_ids))  # a list names each query once
    if len(ids) <= limit:
        return ids, name
    return ids[:limit], f"{name} (first {limit:,} of {len(ids):,})"


def worklist_url(page_path: str, run: str, query_ids: Sequence[str], run_order: Sequence[str], name: str,
                 **extra: str) -> str:
    """A relative link (for link columns) to ``page_path`` (the inspector's URL path) with the worklist."""
    return page_path + "?" + urlencode(worklist_params(run, query_ids, run_order, name, **extra))


def cell_params(table: GoldAnswerTable, gold: bool, right: bool, run: str) -> dict[str, str]:
    """The query parameters of the inspector link that walks one cell's queries (a worklist named after it): as
    :func:`ui.worklist_params`, from the positions the cell holds (the table is in the run's query order,
    so the page needs no 100,000-row query table to look them up)."""
    cell = table.cell(gold, right)
    params = {"run": run, LIST_PARAM: encode_positions(cell.positions),
              NAME_PARAM: cell.name(table.k)}
    if cell.query_ids:
        params["query"] = cell.query_ids[0]
    return params
