"""Label methods: one registered object each, and the names a run file's ``labels.method`` column holds.

A :class:`MethodKind` says everything the engine, the pages, the HTML report, trust and export know about a method:
its display name, description (the Glossary and ``--help`` read it), colour, its scale (0/1, graded in [0, 1], or
levels with a relevance threshold), whether it labels only the retrieved list, what it needs (gold answers, gold
passages, a model, a corpus), the LLM calls a passage costs, and, for an LLM judge, its prompt and parser
(:class:`Judge`). :func:`method_kind` finds the kind of any stored name; nothing else parses a name for a property.

Adding a method is one file: a module that calls :func:`register` (the built-ins below do), a Python package that
names a :class:`MethodKind` under the entry point group ``rageval.label_methods``, or a TOML judge
(:func:`load_judge_file`: ``name``, ``description``, ``prompt``, ``[parse]``).

A stored name is ``<base>[@<model>]``:

- base ``erag:<metric>``: eRAG labels under a downstream metric (``erag:em``, ``erag:f1``; :mod:`rageval.erag.labels`);
- the classic baselines, the LLM's relevance judgements, the given ``qrels``: the kinds registered below;
- any other base: a user's own method, named in an upload or an import (kind :data:`GIVEN`);
- ``@<model>``: labels re-scored with another model than the run's own (``erag:em@gemma-3-270m``; written by
  :mod:`rageval.jobs`). The base decides the kind (and so the measure rules); the model only tells labels apart.

``qrels`` and ``gold`` are one concept seen twice: relevance *given* with the data, not computed by a model, and
global (an unretrieved relevant passage counts for recall). ``qrels`` keeps the judgments as given (possibly graded);
``gold`` is the binary view, 1 for each of a query's gold passages (``Query.gold_passage_ids``). When qrels are
given, a query's gold passages are its passages with a positive qrels value, so ``gold`` = ``qrels`` > 0.
"""

from __future__ import annotations

import re
import tomllib
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rageval.errors import RagevalError
from rageval.prompts import (
    RELEVANCE_FEW_SHOT,
    UMBRELA_GRADES,
    UMBRELA_RELEVANT_GRADE,
    UMBRELA_ZERO_SHOT,
    PromptTemplate,
    build_relevance_prompt,
    build_umbrela_prompt,
    parse_umbrela,
    parse_yes_no,
)
from rageval.types import Passage, Query

ERAG_PREFIX = "erag:"
GOLD = "gold"
GOLD_PAGE = "gold_page"
CONTAINS_ANSWER = "contains_answer"
LLM_RELEVANCE = "llm_relevance"
UMBRELA = "umbrela"
QRELS = "qrels"
HUMAN = "human"
MODEL_SEPARATOR = "@"
ENTRY_POINT_GROUP = "rageval.label_methods"

#: What a method may need of a run's inputs (:attr:`MethodKind.needs`).
GOLD_ANSWERS, GOLD_PASSAGES, MODEL, CORPUS = "gold answers", "gold passages", "a model", "a corpus"
#: A method's scale (:attr:`MethodKind.scale`): 0/1 labels; values in [0, 1]; grades on levels with a threshold;
#: whatever was given (qrels, uploads: a run records its fractional ones in ``graded_label_methods``).
BINARY, GRADED, LEVELS, AS_GIVEN = "binary", "graded", "levels", "as given"


class LabelMethodError(RagevalError):
    """A label method that cannot be defined or found; the message names the file or the method."""


@dataclass(frozen=True)
class Judge:
    """How an LLM judges one passage: its prompt (stored with the run: ``template.identifier`` is name, version and
    hash), how a (question, passage) becomes the prompt, how a reply becomes a label (None: unparsed, no label),
    the tokens a reply needs, and the words the evidence uses for a reply it cannot read."""

    template: PromptTemplate
    build_prompt: Callable[[Query, Passage], str] = field(compare=False)  # the template's text decides (hashed)
    parse: Callable[[str], float | None] = field(compare=False)
    max_new_tokens: int = 8
    expected: str = "no reply the parser reads"


@dataclass(frozen=True)
class MethodKind:
    """One label method (see the module docstring). ``levels`` and ``relevant_from`` apply to ``scale == LEVELS``:
    nDCG reads the grades, every other measure "grade >= relevant_from". ``llm_calls`` is per judged passage.
    ``computed``: rageval makes the labels from a model or the answers (else they are given with the data or
    brought: gold, qrels, uploaded, imported, human). ``listed``: the method has a place in the display order.
    ``source``: where it was defined (``built-in``, an entry point, a judge file)."""

    name: str
    display: str
    description: str
    colour: str | None = None
    scale: str = BINARY
    levels: tuple[int, ...] = ()
    relevant_from: int | None = None
    list_bound: bool = False
    needs: tuple[str, ...] = ()
    llm_calls: int = 0
    judge: Judge | None = None
    computed: bool = True
    listed: bool = True
    source: str = "built-in"
    origin: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not self.name or MODEL_SEPARATOR in self.name:
            raise LabelMethodError(f"label method {self.name!r}: expected a non-empty name without "
                                   f"'{MODEL_SEPARATOR}'")
        if self.scale not in (BINARY, GRADED, LEVELS, AS_GIVEN):
            raise LabelMethodError(f"label method {self.name!r}: scale {self.scale!r}: expected one of "
                                   f"{BINARY}, {GRADED}, {LEVELS}, {AS_GIVEN}")
        if self.scale == LEVELS and (not self.levels or self.relevant_from is None):
            raise LabelMethodError(f"label method {self.name!r}: graded levels need 'levels' and 'relevant_from'")

    @property
    def graded(self) -> bool:
        """Whether labels other than 0/1 are in [0, 1] by nature (only the graded measures apply)."""
        return self.scale == GRADED

    def stored(self) -> dict[str, Any]:
        """What a run file keeps of a kind that is not built in (settings ``label_kinds``), so every later reader
        of the run, in any process, scores and shows its labels by the same rules (:func:`remember_stored_kinds`)."""
        return {**{k: v for k, v in self.as_dict().items() if k != "name"},
                **({"prompt_text": self.judge.template.instruction} if self.judge else {})}

    def as_dict(self) -> dict[str, Any]:
        """The properties ``rageval methods --json`` prints."""
        return {"name": self.name, "display": self.display, "description": self.description, "colour": self.colour,
                "scale": self.scale, "levels": list(self.levels), "relevant_from": self.relevant_from,
                "list_bound": self.list_bound, "needs": list(self.needs), "llm_calls_per_passage": self.llm_calls,
                "computed": self.computed, "listed": self.listed, "source": self.source,
                "prompt": self.judge.template.identifier if self.judge else None}


_REGISTRY: dict[str, MethodKind] = {}
_entry_points_loaded = False
#: Entry points that could not be loaded (their methods are left out), for ``rageval methods``.
ENTRY_POINT_ERRORS: list[str] = []


def register(kind: MethodKind) -> MethodKind:
    """Add ``kind`` to the registry (the order of registration is the display order). The same definition again
    is a no-op, and a judge file read again replaces its older version; another definition under a taken name is
    refused."""
    known = _REGISTRY.get(kind.name)
    replaceable = known is not None and (known.origin.get("stored") or (known.origin.get("file")
                                         and known.source == kind.source))
    if known is not None and known != kind and not replaceable:
        raise LabelMethodError(f"label method {kind.name!r} is already defined ({known.source}); pick another name")
    _REGISTRY[kind.name] = kind
    return kind


def _load_entry_points() -> None:
    """Register the methods of installed packages (entry point group ``rageval.label_methods``: each names a
    :class:`MethodKind`, or a callable returning one or several), once."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:  # a broken package costs its own methods, never rageval's (named in a warning, and in `rageval methods`)
            loaded = point.load()
            found = loaded() if callable(loaded) and not isinstance(loaded, MethodKind) else loaded
            for kind in (found if isinstance(found, (list, tuple)) else [found]):
                if not isinstance(kind, MethodKind):
                    raise LabelMethodError(f"expected a MethodKind, got {type(kind).__name__}")
                register(replace(kind, source=f"entry point {point.value}") if kind.source == "built-in" else kind)
        except Exception as error:
            message = f"entry point {point.name} ({point.value}) of {ENTRY_POINT_GROUP} left out: {error}"
            ENTRY_POINT_ERRORS.append(message)
            warnings.warn(message, stacklevel=2)


def remember_stored_kinds(kinds: Any) -> None:
    """Register the kinds a run file keeps (its settings' ``label_kinds``, :meth:`MethodKind.stored`) that this
    process does not know yet: their properties only (no judge: re-scoring needs the judge file again). A malformed
    entry is left out (its method then reads as given)."""
    if not isinstance(kinds, Mapping):
        return
    known = {kind.name for kind in registered()}
    for name, values in kinds.items():
        if name in known or not isinstance(values, Mapping):
            continue
        try:
            register(MethodKind(
                str(name), str(values.get("display", name)), str(values.get("description", "")), None,
                str(values.get("scale", BINARY)), tuple(int(v) for v in values.get("levels") or ()),
                values.get("relevant_from"), bool(values.get("list_bound", False)),
                tuple(str(v) for v in values.get("needs") or ()), int(values.get("llm_calls_per_passage", 0) or 0),
                None, bool(values.get("computed", True)), True, f"stored in a run ({values.get('source', '')})",
                {"stored": True, "prompt": values.get("prompt_text")}))
        except (LabelMethodError, TypeError, ValueError):
            continue


def registered() -> list[MethodKind]:
    """Every registered method, in display order (built-ins, then installed packages', then loaded files')."""
    _load_entry_points()
    return list(_REGISTRY.values())


def judges() -> list[MethodKind]:
    """The registered methods that are LLM judges of one passage (re-scoring and "complete" may run them)."""
    return [kind for kind in registered() if kind.judge is not None]


# -- the built-ins -------------------------------------------------------------------------------------------------

_ERAG_METRICS = (("em", "EM", "exact match", BINARY, "#1f77b4"), ("accuracy", "accuracy", "answer accuracy",
                 BINARY, "#9467bd"), ("f1", "F1", "token F1", GRADED, "#17becf"),
                 ("rougeL", "ROUGE-L", "ROUGE-L", GRADED, "#8c564b"),
                 ("bertscore", "BERTScore", "BERTScore (MiniLM)", GRADED, "#e377c2"))
for _metric, _short, _long, _scale, _colour in _ERAG_METRICS:
    register(MethodKind(
        f"{ERAG_PREFIX}{_metric}", f"eRAG {_short}",
        f"eRAG: the RAG model answers from each retrieved passage alone; the label is the {_long} of that answer "
        f"against the gold answers (Salemi & Zamani, SIGIR 2024)", _colour, _scale, list_bound=True,
        needs=(GOLD_ANSWERS, MODEL), llm_calls=1))


def _yes_no(reply: str) -> float | None:
    parsed = parse_yes_no(reply)
    return None if parsed is None else float(parsed)


def _grade(reply: str) -> float | None:
    grade = parse_umbrela(reply)
    return None if grade is None else float(grade)


register(MethodKind(CONTAINS_ANSWER, "contains-answer",
                    "a normalised gold answer occurs in the retrieved passage's text (eRAG's baseline a)",
                    "#2ca02c", list_bound=True, needs=(GOLD_ANSWERS,)))
register(MethodKind(GOLD, "gold", "the dataset's gold passages (KILT provenance or qrels > 0), retrieved or not",
                    "#7f7f7f", needs=(GOLD_PASSAGES,), computed=False))
register(MethodKind(GOLD_PAGE, "gold page",
                    "page-level provenance: a retrieved passage of a gold passage's page (same title) counts",
                    "#bcbd22", list_bound=True, needs=(GOLD_PASSAGES,), computed=False))
#: eRAG's baseline (c): "is this passage relevant?", Yes (1) or No (0); three tokens are enough.
register(MethodKind(LLM_RELEVANCE, "LLM relevance",
                    "the model is asked whether each passage is relevant (yes/no; Thomas et al. 2023)", "#ff7f0e",
                    list_bound=True, needs=(MODEL,), llm_calls=1,
                    judge=Judge(RELEVANCE_FEW_SHOT, lambda q, p: build_relevance_prompt(q.text, p, RELEVANCE_FEW_SHOT),
                                _yes_no, 3, "neither Yes nor No")))
#: UMBRELA: the grade of the "##final score: N" line, 0-3. The prompt asks for the line alone; 24 tokens leave room
#: for a model that says a few words first (``parse_umbrela`` finds the line anywhere in the reply).
register(MethodKind(UMBRELA, "UMBRELA",
                    "the model grades each passage's relevance 0-3 with UMBRELA's prompt (Upadhyay et al. 2024; "
                    "TREC RAG 2024), relevant from grade 2", "#c49c94", LEVELS, UMBRELA_GRADES,
                    UMBRELA_RELEVANT_GRADE, list_bound=True, needs=(MODEL,), llm_calls=1,
                    judge=Judge(UMBRELA_ZERO_SHOT, lambda q, p: build_umbrela_prompt(q.text, p, UMBRELA_ZERO_SHOT),
                                _grade, 24, "no '##final score: 0-3' line")))
register(MethodKind(QRELS, "qrels", "the relevance judgments given with the data (a TREC qrels file), as given",
                    None, AS_GIVEN, computed=False, listed=False))
register(MethodKind(HUMAN, "human", "labels given by people on the Annotate page or imported", "#d62728",
                    computed=False, listed=False))
#: The judges the baselines stage runs unless told otherwise (the others cost one more LLM call a passage each).
DEFAULT_JUDGES = (LLM_RELEVANCE,)
#: Any other name: a user's own method, given in an upload or an import (global, as given).
GIVEN = MethodKind("given", "given", "labels the user brought (an upload or an import), scored as given",
                   None, AS_GIVEN, computed=False, listed=False)
#: eRAG under a metric of no registered kind (graded in [0, 1], like every non-binary downstream metric).
_OTHER_ERAG = MethodKind("erag:other", "eRAG", "eRAG labels under another downstream metric", None, GRADED,
                         list_bound=True, needs=(GOLD_ANSWERS, MODEL), llm_calls=1)


def describe_methods(judge_files: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Every registered method's properties (:meth:`MethodKind.as_dict`), after loading ``judge_files``
    (``rageval methods``)."""
    for path in judge_files:
        load_judge_file(path)
    return [kind.as_dict() for kind in registered()]


# -- names ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LabelMethod:
    """A parsed label-method name: ``base`` (``erag:em``, ``gold``) and the ``model`` of re-scored labels (or None).

    ``str(LabelMethod("erag:em", "gemma-3-270m"))`` is ``"erag:em@gemma-3-270m"``, and :func:`parse_label_method`
    of that string gives the same object back.
    """

    base: str
    model: str | None = None

    def __post_init__(self):
        if not self.base or MODEL_SEPARATOR in self.base:
            raise ValueError(f"label method base {self.base!r}: expected a non-empty name without "
                             f"'{MODEL_SEPARATOR}'")
        if self.base.startswith(ERAG_PREFIX) and not self.metric:
            raise ValueError(f"label method {self.base!r}: expected a metric after '{ERAG_PREFIX}', e.g. 'erag:em'")
        if self.model is not None and (not self.model or MODEL_SEPARATOR in self.model):
            raise ValueError(f"label method model {self.model!r}: expected a non-empty name without "
                             f"'{MODEL_SEPARATOR}'")

    @property
    def metric(self) -> str | None:
        """The downstream metric of eRAG labels (``em`` of ``erag:em@gemma``); None for other methods."""
        return self.base[len(ERAG_PREFIX):] if self.is_erag else None

    @property
    def is_erag(self) -> bool:
        return self.base.startswith(ERAG_PREFIX)

    @property
    def name(self) -> str:
        return f"{self.base}{MODEL_SEPARATOR}{self.model}" if self.model is not None else self.base

    def __str__(self) -> str:
        return self.name


def parse_label_method(name: str) -> LabelMethod:
    """``"erag:em@gemma-3-270m"`` -> ``LabelMethod("erag:em", "gemma-3-270m")``; ``"gold"`` -> ``LabelMethod("gold")``.

    Raises ``ValueError`` for a name that is not ``<base>[@<model>]`` (empty, ``erag:`` without a metric, an empty
    or second ``@`` part).
    """
    base, separator, model = name.partition(MODEL_SEPARATOR)
    return LabelMethod(base, model if separator else None)


def method_kind(method: str) -> MethodKind:
    """The kind of a stored method name, whichever model made it (``umbrela@gemma`` -> the UMBRELA kind); a name
    of no registered kind (a user's own, or not ``<base>[@<model>]``) is :data:`GIVEN`."""
    try:
        base = parse_label_method(method).base
    except ValueError:
        return GIVEN
    kinds = {kind.name: kind for kind in registered()}
    if base in kinds:
        return kinds[base]
    return _OTHER_ERAG if base.startswith(ERAG_PREFIX) else GIVEN


def display_name(method: str) -> str:
    """How pages, reports and export show a method: a registered base name's display name (``erag:em`` -> ``eRAG
    EM``); any other name (a re-scored ``erag:em@gemma``, a user's own method) as stored."""
    kinds = {kind.name: kind for kind in registered()}
    return kinds[method].display if method in kinds and kinds[method] is not GIVEN else method


def method_colours() -> dict[str, str]:
    """Base name -> colour of every registered method that has one."""
    return {kind.name: kind.colour for kind in registered() if kind.colour}


def method_order() -> tuple[str, ...]:
    """The order label methods are listed in (docs/results.md's tables, the dashboard's tables, selectors and
    legends): registration order, so eRAG by downstream metric, then the baselines of eRAG's Table 1, the LLM's
    relevance judgements last; given kinds are not listed."""
    return tuple(kind.name for kind in registered() if kind.listed)


#: The built-in display order (before any file or package adds a method).
METHOD_ORDER = tuple(kind.name for kind in _REGISTRY.values() if kind.listed)


def relevant_grade(method: str) -> int | None:
    """The lowest grade that counts as relevant when ``method`` (whichever model made it) labels on levels; None
    for 0/1 and [0, 1]-graded methods, and for a name that is not ``<base>[@<model>]``."""
    kind = method_kind(method)
    return kind.relevant_from if kind.scale == LEVELS else None


def levels_text(method: str) -> str:
    """``"0-3, relevant from 2"`` for a method on levels (its kind's), ``""`` for any other."""
    kind = method_kind(method)
    if kind.scale != LEVELS:
        return ""
    return f"{kind.levels[0]}-{kind.levels[-1]}, relevant from {kind.relevant_from}"


def is_computed(method: str) -> bool:
    """Whether rageval computes ``method``'s labels itself (so a run's other methods were brought by the user)."""
    return method_kind(method).computed


def erag_method(metric: str, model: str | None = None) -> str:
    """The label-method name of eRAG labels made with ``metric`` (and re-scored with ``model``): ``"erag:em"``,
    ``"erag:em@gemma-3-270m"``."""
    return LabelMethod(f"{ERAG_PREFIX}{metric}", model).name


def method_sort_key(method: str) -> tuple[int, int, str]:
    """Sort key of a label method: those of :func:`method_order` in that order, then any other eRAG method (a
    re-scored ``erag:em@model``, ``erag:<metric>``), then the rest, each alphabetically."""
    order = method_order()
    if method in order:
        return 0, order.index(method), method
    return (1 if method.startswith(ERAG_PREFIX) else 2), 0, method


def order_label_methods(methods: Iterable[str]) -> list[str]:
    """``methods`` sorted by :func:`method_sort_key`."""
    return sorted(methods, key=method_sort_key)


# -- a judge in one TOML file --------------------------------------------------------------------------------------

_PLACEHOLDERS = ("{question}", "{passage}", "{title}", "{answers}")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


def is_judge_file(value: str) -> bool:
    """Whether a ``--labels`` value names a TOML judge file rather than a label kind."""
    return value.endswith(".toml")


def load_judge_file(path: str | Path) -> MethodKind:
    """Read and register the LLM judge a TOML file defines::

        name = "helpful"                       # the label method's name (letters, digits, _ . -)
        description = "..."                    # shown by the Glossary, --help and `rageval methods`
        prompt = "Question: {question}\\nPassage: {title}\\n{passage}\\nAnswers: {answers}\\nHelpful? Yes or No."
        max_new_tokens = 8                     # optional (default 8)
        [parse]
        pattern = "(yes|no)"                   # searched in the reply (case-insensitive); group 1 if any
        labels = {yes = 1, no = 0}             # the matched text -> label; or:
        # levels = [0, 1, 2, 3]                # the match is a grade on these levels...
        # relevant_from = 2                    # ...relevant from this one

    A reply the pattern does not match, or whose match is not a key of ``labels`` / one of ``levels``, is
    unparsed: no label, counted as for the built-in judges. Every problem is a :class:`LabelMethodError` naming
    the file and the field."""
    path = Path(path).expanduser().resolve()
    where = str(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise LabelMethodError(f"{where}: cannot read the judge file ({error.strerror or error})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise LabelMethodError(f"{where}: not valid TOML ({error})") from None
    kind = judge_from_document(document, where)
    return register(kind)


def _field(document: Mapping[str, Any], name: str, kind: type, where: str, default: Any = ...) -> Any:
    if name not in document:
        if default is ...:
            raise LabelMethodError(f"{where}: field '{name}' is missing")
        return default
    value = document[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise LabelMethodError(f"{where}: field '{name}': expected {kind.__name__}, got {value!r}")
    return value


def judge_from_document(document: Mapping[str, Any], where: str) -> MethodKind:
    """The :class:`MethodKind` of a judge file's parsed TOML (:func:`load_judge_file`); ``where`` names it in
    errors."""
    unknown = sorted(set(document) - {"name", "description", "prompt", "parse", "max_new_tokens", "display"})
    if unknown:
        raise LabelMethodError(f"{where}: unknown field(s) {', '.join(unknown)}; expected name, description, prompt, "
                               f"max_new_tokens, [parse]")
    name = _field(document, "name", str, where)
    if not _NAME.match(name) or name.startswith("erag") or name in (kind.name for kind in _BUILT_IN):
        raise LabelMethodError(f"{where}: field 'name' {name!r}: expected letters, digits, '_', '.' or '-', starting "
                               f"with a letter, and not a built-in method's name")
    description = _field(document, "description", str, where)
    prompt = _field(document, "prompt", str, where)
    if "{question}" not in prompt or "{passage}" not in prompt:
        raise LabelMethodError(f"{where}: field 'prompt': expected the placeholders {{question}} and {{passage}} "
                               f"(also available: {{title}}, {{answers}})")
    max_new_tokens = _field(document, "max_new_tokens", int, where, 8)
    if max_new_tokens < 1:
        raise LabelMethodError(f"{where}: field 'max_new_tokens': expected at least 1, got {max_new_tokens}")
    parse = _field(document, "parse", dict, where)
    where_parse = f"{where} [parse]"
    unknown = sorted(set(parse) - {"pattern", "labels", "levels", "relevant_from"})
    if unknown:
        raise LabelMethodError(f"{where_parse}: unknown field(s) {', '.join(unknown)}; expected pattern and labels, "
                               f"or pattern, levels and relevant_from")
    pattern_text = _field(parse, "pattern", str, where_parse)
    try:
        pattern = re.compile(pattern_text, re.IGNORECASE | re.DOTALL)
    except re.error as error:
        raise LabelMethodError(f"{where_parse}: field 'pattern' {pattern_text!r}: not a regular expression "
                               f"({error})") from None
    if ("labels" in parse) == ("levels" in parse):
        raise LabelMethodError(f"{where_parse}: expected either 'labels' (reply -> label) or 'levels' (grades)")
    levels: tuple[int, ...] = ()
    relevant_from = None
    if "labels" in parse:
        table = _field(parse, "labels", dict, where_parse)
        if not table or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1
                            for v in table.values()):
            raise LabelMethodError(f"{where_parse}: field 'labels': expected a table of reply -> label in [0, 1], "
                                   f"e.g. {{yes = 1, no = 0}}")
        mapping = {str(k).strip().lower(): float(v) for k, v in table.items()}
        scale = BINARY if set(mapping.values()) <= {0.0, 1.0} else GRADED
        expected = f"no match of {pattern_text!r} among {', '.join(sorted(mapping))}"

        def read(text: str) -> float | None:
            return mapping.get(text.strip().lower())
    else:
        raw = _field(parse, "levels", list, where_parse)
        if not raw or any(isinstance(v, bool) or not isinstance(v, int) for v in raw):
            raise LabelMethodError(f"{where_parse}: field 'levels': expected a list of integer grades, e.g. [0, 1, 2]")
        levels = tuple(sorted(set(raw)))
        relevant_from = _field(parse, "relevant_from", int, where_parse)
        if relevant_from not in levels:
            raise LabelMethodError(f"{where_parse}: field 'relevant_from' {relevant_from}: expected one of the levels "
                                   f"{list(levels)}")
        scale = LEVELS
        expected = f"no grade among {list(levels)} matching {pattern_text!r}"

        def read(text: str) -> float | None:
            text = text.strip()
            return float(text) if text.lstrip("-").isdigit() and int(text) in levels else None

    def parse_reply(reply: str) -> float | None:
        match = pattern.search(reply)
        if match is None:
            return None
        return read(match.group(1) if pattern.groups else match.group(0))

    def build(query: Query, passage: Passage) -> str:
        values = {"{question}": query.text.strip(), "{passage}": passage.text.strip(),
                  "{title}": passage.title.strip(), "{answers}": "; ".join(query.answers)}
        return re.sub("|".join(re.escape(p) for p in _PLACEHOLDERS), lambda m: values[m.group(0)], prompt)

    # The stored prompt: the template and how its replies are read, so the hash changes when either does.
    template = PromptTemplate(name=f"judge-{name}", version="1",
                              instruction=f"{prompt}\n[parse] {pattern_text} -> "
                                          f"{dict(sorted(parse.get('labels', {}).items())) or list(levels)}",
                              examples=())
    return MethodKind(name, str(document.get("display", name)), description, None, scale, levels, relevant_from,
                      list_bound=True, needs=(MODEL, *((GOLD_ANSWERS,) if "{answers}" in prompt else ())),
                      llm_calls=1, judge=Judge(template, build, parse_reply, max_new_tokens, expected), source=where,
                      origin={"file": where, "prompt": prompt})


_BUILT_IN = tuple(_REGISTRY.values())
