"""Greedy decoding of many prompts that share one prefix, every row attending to one copy of the prefix.

eRAG asks the LLM once per retrieved passage (Salemi & Zamani, SIGIR 2024): a query's k prompts are one few-shot
prefix followed by k different suffixes (passage, question). The prefix's keys and values are computed once
(:mod:`rageval.generation.prefix`); here no row gets a copy of them. Attention of a row's query over
``[prefix ; row]`` is computed in two parts and merged exactly (the shared-prefix decomposition of Hydragen,
Juravsky et al. 2024): with o_i and l_i the output and log-sum-exp of the softmax over part i,

    o = e^(l_1 - l) o_1 + e^(l_2 - l) o_2,    l = log(e^(l_1) + e^(l_2)),

which is the softmax over the union of both key sets. The prefix part runs every row's query against the one
prefix copy as a single product.

- **Prefill.** A group's suffixes are packed into sequences without padding, at most ``chunk_tokens`` a pass: the
  model's linear layers see long sequences, each suffix attends to the prefix and to its own earlier tokens only,
  and the LM head runs on each row's last token only.
- **Decode.** The rows of a group step together; each row's new key and value are written into its own buffer,
  sized for its suffix and answer (no padding to the longest row, no concatenation per step), and a row leaves
  the batch, its buffers freed, as soon as it finishes.
- **Groups.** Rows (longest first) are split into groups whose key/value buffers and logits fit seven eighths of
  ``memory_bytes`` (:func:`plan_groups`), at most ``max_rows`` a group; the last eighth bounds a prefill pass.

Positions, causality and sliding windows are applied from each token's position (a key at position p is seen
from position q when p <= q, and p > q - window on a sliding-window layer), so rows of any length, inside a
sliding window or past it, decode in one batch. The model runs through transformers' attention interface
(:data:`ATTENTION_NAME`, switched on for these forward passes only) without a transformers cache; the switch is
the model's, so another thread must not run the same model meanwhile (it would fail, not answer wrongly).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

ATTENTION_NAME = "rageval_shared_prefix"
#: The fewest suffix tokens one prefill pass runs, whatever the budget (each pass reads all the weights).
MIN_CHUNK_TOKENS = 64
#: Bytes of prefill activations per token, in units of (hidden size x element size): residual, normed and projected
#: states, queries/keys/values and attention output, plus the MLP's gate, up and product (each ``intermediate /
#: hidden`` wide) and float32 norm temporaries. An estimate; the benchmark measures the real peak.
ACTIVATION_WIDTHS = 12


@dataclass(frozen=True)
class PrefixKV:
    """The shared prefix's keys and values per layer, referenced (never copied) from its computed cache.

    ``keys[l]``/``values[l]``: ``[1, kv heads, n_l, head dim]``; ``starts[l]``: the position of layer l's first
    stored token (a sliding-window layer keeps only the last ``window - 1`` prefix tokens, all that a later token
    can see). ``length``: the prefix's token count, the position of the first suffix token.
    """

    length: int
    keys: tuple[Any, ...]
    values: tuple[Any, ...]
    starts: tuple[int, ...]

    @classmethod
    def from_cache(cls, cache, length: int) -> PrefixKV:
        keys = tuple(layer.keys for layer in cache.layers)
        values = tuple(layer.values for layer in cache.layers)
        return cls(length, keys, values, tuple(length - k.shape[2] for k in keys))

    def bytes_per_token(self) -> int:
        """Key + value bytes one token takes over all layers."""
        return sum(2 * k.shape[1] * k.shape[3] * k.element_size() for k in self.keys)


def plan_groups(lengths: Sequence[int], max_new_tokens: int, bytes_per_token: int, logits_bytes: int,
                memory_bytes: int, max_rows: int) -> list[list[int]]:
    """Consecutive groups of row indices (in the given order) whose buffers fit ``memory_bytes``.

    A row of suffix length s costs ``(s + max_new_tokens) * bytes_per_token`` (its key/value buffer) +
    ``logits_bytes`` (its row of logits). A group holds at least one row whatever its cost, and at most
    ``max_rows``.
    """
    groups: list[list[int]] = []
    used = 0
    for index, length in enumerate(lengths):
        cost = (length + max_new_tokens) * bytes_per_token + logits_bytes
        if groups and len(groups[-1]) < max_rows and used + cost <= memory_bytes:
            groups[-1].append(index)
            used += cost
        else:
            groups.append([index])
            used = cost
    return groups


def _register() -> None:
    from transformers import AttentionInterface

    if ATTENTION_NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(ATTENTION_NAME, _attention)


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None,
               softcap=None, shared_prefix: RowBatch | None = None, **kwargs):
    """transformers' attention-function signature; the work is :meth:`RowBatch.attend`."""
    if shared_prefix is None:
        raise RuntimeError(f"the {ATTENTION_NAME} attention runs only inside SharedPrefixDecoder")
    if softcap is not None:
        raise NotImplementedError("shared-prefix attention: attention logit soft-capping is not supported")
    return shared_prefix.attend(module, query, key, value, scaling, sliding_window), None


def supports(model) -> bool:
    """Whether ``model``'s attention can run as shared-prefix attention: every attention layer is a transformers
    module with a ``layer_idx`` calling the attention interface, without logit soft-capping."""
    layers = [m for m in model.modules() if hasattr(m, "layer_idx") and type(m).__name__.endswith("Attention")]
    config = model.config.get_text_config()
    return bool(layers) and getattr(config, "attn_logit_softcapping", None) is None


@contextlib.contextmanager
def _shared_prefix_attention(model) -> Iterator[None]:
    """Switch ``model``'s attention layers to :data:`ATTENTION_NAME` for the block, then back."""
    _register()
    configs = {id(m.config): m.config for m in model.modules() if hasattr(m, "layer_idx") and hasattr(m, "config")}
    configs.setdefault(id(model.config), model.config)
    saved = {key: config._attn_implementation for key, config in configs.items()}
    try:
        for config in configs.values():
            config._attn_implementation = ATTENTION_NAME
        yield
    finally:
        for key, config in configs.items():
            config._attn_implementation = saved[key]


class RowBatch:
    """The key/value buffers of one group of rows after a shared prefix, and the attention over both.

    Each row has its own buffer per layer, ``[1, kv heads, capacity, head dim]`` sized for its own suffix and
    answer (no padding to the longest row): slot j holds the key/value at position ``prefix.length + j``, and
    ``lengths[b]`` slots of row b are filled. ``segments`` (prefill: ``(row, offset, first slot, length)`` of each
    run of one row's suffix in the packed sequence) or ``None`` (decode: one new token per row) says what the next
    forward pass is.
    """

    def __init__(self, prefix: PrefixKV, capacities: Sequence[int]):
        import torch

        self.prefix = prefix
        self.capacities = list(capacities)
        self.lengths = [0] * len(self.capacities)
        # Allocated up front, before any forward pass (allocated between a pass's temporaries, long-lived buffers
        # fragment the heap: a larger resident set for the same live memory).
        self.keys = [[torch.zeros((1, k.shape[1], capacity, k.shape[3]), dtype=k.dtype, device=k.device)
                      for k in prefix.keys] for capacity in self.capacities]
        self.values = [[torch.zeros((1, v.shape[1], capacity, v.shape[3]), dtype=v.dtype, device=v.device)
                        for v in prefix.values] for capacity in self.capacities]
        self.segments: list[tuple[int, int, int, int]] | None = None
        self.layers_run: set[int] = set()
        self._masks: dict[Any, Any] = {}

    def _visible(self, key_positions, query_positions, window):
        """``[queries, keys]`` booleans: key position p seen from query position q (p <= q, within the window)."""
        seen = key_positions[None, :] <= query_positions[:, None]
        if window is not None:
            seen &= key_positions[None, :] > query_positions[:, None] - window
        return seen

    def attend(self, module, query, key, value, scaling, window):
        """Store the new keys/values of layer ``module.layer_idx`` and return the attention output
        ``[batch, tokens, heads, head dim]`` (the layout transformers' attention functions return)."""
        layer = module.layer_idx
        self.layers_run.add(layer)
        if self.segments is not None:
            return self._prefill(module, layer, query, key, value, scaling, window)
        return self._decode(layer, query, key, value, scaling, window)

    def _prefill(self, module, layer, query, key, value, scaling, window):
        """Each packed segment (a run of one row's suffix) against ``[prefix ; the row's slots up to it]``, causal
        and windowed by position, with the same ``sdpa`` call transformers makes."""
        import torch
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        prefix_keys, prefix_values = self.prefix.keys[layer], self.prefix.values[layer]
        start = self.prefix.starts[layer]
        outputs = []
        for row, offset, first, length in self.segments or ():
            own, end = slice(offset, offset + length), first + length
            row_keys, row_values = self.keys[row][layer], self.values[row][layer]
            row_keys[0, :, first:end] = key[0, :, own]
            row_values[0, :, first:end] = value[0, :, own]
            mask_key = (first, length, window, start)
            mask = self._masks.get(mask_key)
            if mask is None:
                key_positions = torch.cat([torch.arange(start, self.prefix.length, device=query.device),
                                           self.prefix.length + torch.arange(end, device=query.device)])
                mask = self._masks[mask_key] = self._visible(key_positions, key_positions[-length:], window)[None, None]
            keys = torch.cat([prefix_keys, row_keys[:, :, :end]], dim=2)
            values = torch.cat([prefix_values, row_values[:, :, :end]], dim=2)
            output, _ = sdpa_attention_forward(module, query[:, :, own], keys, values, mask, scaling=scaling)
            outputs.append(output)
        return torch.cat(outputs, dim=1)

    def _decode(self, layer, query, key, value, scaling, window):
        """One new token per row: written into its slot, then attention over the prefix (all rows' queries as one
        product against the one prefix copy) and over the row's own visible slots, merged by log-sum-exp."""
        import torch

        flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
        rows, heads, _, dim = query.shape
        kv_heads = key.shape[1]
        group = heads // kv_heads
        grouped = query.reshape(rows, kv_heads, group, dim)

        # Each row's own slots: the visible ones are contiguous (the window's start .. the new token), no mask.
        own_outputs, own_lses = [], []
        for row, filled in enumerate(self.lengths):
            row_keys, row_values = self.keys[row][layer], self.values[row][layer]
            row_keys[0, :, filled] = key[row, :, 0]
            row_values[0, :, filled] = value[row, :, 0]
            first = 0 if window is None else max(0, filled + 1 - window)
            output, lse = flash(grouped[row:row + 1], row_keys[:, :, first:filled + 1],
                                row_values[:, :, first:filled + 1], 0.0, False, scale=scaling)
            own_outputs.append(output)
            own_lses.append(lse)
        own_out, own_lse = torch.cat(own_outputs), torch.cat(own_lses)

        # The prefix: every row's queries in one sequence, [1, kv heads, rows * group, dim], against one copy.
        prefix_keys, prefix_values = self.prefix.keys[layer], self.prefix.values[layer]
        stored, prefix_start = prefix_keys.shape[2], self.prefix.starts[layer]
        if not stored:
            return own_out.reshape(rows, heads, dim)[:, None]
        query_positions = self.prefix.length + torch.tensor(self.lengths, device=query.device)
        mask = sees_prefix = None
        if window is not None and int(query_positions.max()) - window >= prefix_start:
            seen = self._visible(prefix_start + torch.arange(stored, device=query.device), query_positions, window)
            sees_prefix = seen.any(dim=1)
            mask = torch.zeros(seen.shape, dtype=query.dtype, device=query.device).masked_fill_(~seen, float("-inf"))
            mask = mask.repeat_interleave(group, dim=0)[None, None]
        packed = grouped.transpose(0, 1).reshape(1, kv_heads, rows * group, dim)
        prefix_out, prefix_lse = flash(packed, prefix_keys, prefix_values, 0.0, False, attn_mask=mask, scale=scaling)
        prefix_out = prefix_out.view(kv_heads, rows, group, dim).transpose(0, 1)
        prefix_lse = prefix_lse.view(kv_heads, rows, group).transpose(0, 1)
        if sees_prefix is not None:  # a row whose window has left the whole prefix: that part is empty, weight 0
            prefix_lse = prefix_lse.masked_fill(~sees_prefix[:, None, None], float("-inf"))
        total = torch.logaddexp(prefix_lse, own_lse)
        merged = (prefix_out.float() * (prefix_lse - total).exp()[..., None]
                  + own_out.float() * (own_lse - total).exp()[..., None])
        return merged.to(query.dtype).reshape(rows, heads, dim)[:, None]

    def keep(self, rows: Sequence[int]) -> None:
        """Keep only ``rows`` (indices into the current batch), in that order; the others' buffers are freed."""
        self.keys = [self.keys[row] for row in rows]
        self.values = [self.values[row] for row in rows]
        self.capacities = [self.capacities[row] for row in rows]
        self.lengths = [self.lengths[row] for row in rows]


class SharedPrefixDecoder:
    """Greedy answers of suffixes after one shared prefix (see the module docstring).

    ``memory_bytes`` is split: seven eighths for one group's key/value buffers and logits (:func:`plan_groups`,
    at most ``max_rows`` rows), an eighth for the activations of one prefill pass (``chunk_tokens`` suffix tokens
    a pass).
    """

    def __init__(self, model, prefix: PrefixKV, memory_bytes: int, max_rows: int):
        self.model = model
        self.prefix = prefix
        self.memory_bytes = memory_bytes
        self.max_rows = max_rows
        config = model.config.get_text_config()
        element = prefix.keys[0].element_size() if prefix.keys else 4
        intermediate = getattr(config, "intermediate_size", None) or 4 * config.hidden_size
        self.activation_bytes = (ACTIVATION_WIDTHS * config.hidden_size + 3 * intermediate) * element
        self.logits_bytes = config.vocab_size * element
        self.chunk_tokens = max(MIN_CHUNK_TOKENS, memory_bytes // 8 // self.activation_bytes)
        self.groups_run = 0  # how many groups were decoded (tests and benchmarks read it)

    def plan(self, lengths: Sequence[int], max_new_tokens: int) -> list[list[int]]:
        return plan_groups(lengths, max_new_tokens, self.prefix.bytes_per_token(), self.logits_bytes,
                           self.memory_bytes * 7 // 8, self.max_rows)

    def generate(self, suffixes: Sequence[Sequence[int]], max_new_tokens: int,
                 finished: Callable[[int, list[int]], bool]) -> list[list[int]]:
        """The greedy new tokens of every suffix (each a non-empty token list); ``finished(i, tokens)`` says
        whether row i's answer so far is complete (end of sequence, a stop string) or may stop (exact-match early
        stopping). Groups are planned in the order given (pass the suffixes longest first, so a group's buffers
        waste little)."""
        generated: list[list[int]] = [[] for _ in suffixes]
        with _shared_prefix_attention(self.model):
            for group in self.plan([len(s) for s in suffixes], max_new_tokens):
                self._run_group([suffixes[i] for i in group], max_new_tokens,
                                lambda j, tokens, group=group: finished(group[j], tokens),
                                [generated[i] for i in group])
                self.groups_run += 1
        return generated

    def _forward(self, batch: RowBatch, input_ids, position_ids, logits_to_keep):
        return self.model(input_ids=input_ids, position_ids=position_ids, use_cache=False,
                          logits_to_keep=logits_to_keep, shared_prefix=batch).logits

    def _prefill(self, batch: RowBatch, suffixes: Sequence[Sequence[int]]) -> list[int]:
        """Run the suffixes packed, ``chunk_tokens`` a pass (a suffix may straddle two passes); the LM head only on
        each suffix's last token. Returns each row's first greedy token."""
        import torch

        device = self.model.device
        flat = [(row, slot, token) for row, suffix in enumerate(suffixes) for slot, token in enumerate(suffix)]
        first_tokens = [0] * len(suffixes)
        for begin in range(0, len(flat), self.chunk_tokens):
            chunk = flat[begin:begin + self.chunk_tokens]
            batch.segments = []
            for offset, (row, slot, _) in enumerate(chunk):
                if offset and chunk[offset - 1][0] == row:
                    last_row, last_offset, first, length = batch.segments[-1]
                    batch.segments[-1] = (last_row, last_offset, first, length + 1)
                else:
                    batch.segments.append((row, offset, slot, 1))
            ends = [(offset, row) for offset, (row, slot, _) in enumerate(chunk) if slot == len(suffixes[row]) - 1]
            logits = self._forward(batch, torch.tensor([[t for _, _, t in chunk]], device=device),
                                   torch.tensor([[self.prefix.length + slot for _, slot, _ in chunk]], device=device),
                                   torch.tensor([offset for offset, _ in ends], dtype=torch.long, device=device))
            for (_, row), token in zip(ends, logits[0].max(-1).indices.tolist()):  # max: argmax's first maximum
                first_tokens[row] = token
            for row, _, first, length in batch.segments:
                batch.lengths[row] = first + length
        batch.segments = None
        if len(batch.layers_run) != len(self.prefix.keys):
            raise RuntimeError(f"shared-prefix attention: {len(batch.layers_run)} of {len(self.prefix.keys)} layers "
                               "ran through it; this model cannot use it")
        return first_tokens

    def _run_group(self, suffixes: Sequence[Sequence[int]], max_new_tokens: int, finished,
                   generated: list[list[int]]) -> None:
        """Prefill then decode one group; ``generated[i]`` (row i's list, filled in place) gets its new tokens."""
        import torch

        device = self.model.device
        batch = RowBatch(self.prefix, [len(s) + max_new_tokens for s in suffixes])
        tokens = self._prefill(batch, suffixes)
        active = list(range(len(suffixes)))
        while True:
            keep = []
            for j, (row, token) in enumerate(zip(active, tokens)):
                generated[row].append(token)
                if len(generated[row]) < max_new_tokens and not finished(row, generated[row]):
                    keep.append(j)
            if not keep:
                return
            if len(keep) < len(active):
                batch.keep(keep)
                active = [active[j] for j in keep]
            ids = torch.tensor([[generated[row][-1]] for row in active], device=device)
            positions = torch.tensor([[self.prefix.length + length] for length in batch.lengths], device=device)
            logits = self._forward(batch, ids, positions, 1)[:, -1]
            batch.lengths = [length + 1 for length in batch.lengths]
            tokens = logits.max(-1).indices.tolist()  # the first maximum, as argmax; 3x faster on bfloat16
