"""``rageval evaluate``'s settings: one :class:`EvaluateConfig`, from flags and/or a TOML file, stored in the run.

A config file holds the same names as the flags (``--base-url`` is ``base_url``); flags given on the command line
win over the file. The resolved config is written into the run file (settings ``config``), and
``rageval info RUN --config`` prints it back as TOML, so a run can be rerun exactly::

    queries = "data/questions.jsonl"
    corpus = "data/corpus.jsonl"
    retriever = "bm25"           # or: run = "runs/bm25.trec"
    k = [1, 5, 10]
    methods = "all"
    measures = ["P(rel=2)@5", "AP(judged_only=True)"]   # optional: IR measures beyond the stored set
    model = "gemma-3-270m"       # a Hugging Face folder or id, or a served model with backend = "openai"
    # backend = "openai"; base_url = ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]   # replicas
    # max_requests_per_minute = 6000; max_tokens_per_minute = 5000000
    prompt_template = "qa.toml"  # optional: the QA prompt as a file (name, version, instruction, [[examples]])
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rageval.erag.labels import ALL_METRICS
from rageval.errors import DataError, RagevalError
from rageval.generation.base import DecodingSettings
from rageval.generation.factory import ModelSettings
from rageval.labelmethods import LabelMethodError, is_judge_file, judges, load_judge_file
from rageval.measures import parse_measure_list
from rageval.paths import not_a_file
from rageval.pipeline.evaluate import METHODS, EvaluationOptions, parse_ks, parse_methods
from rageval.pipeline.sources import RETRIEVERS, SHIPPED_RETRIEVERS, SourcePaths
from rageval.prompts import QA_FEW_SHOT, FewShotExample, PromptTemplate
from rageval.reteval import JUDGE_NAMES, RetEvalSettings, SemiGoldSettings

PATH_FIELDS = ("queries", "corpus", "run", "qrels", "prompt_template", "out", "cache", "labels")


@dataclass(frozen=True)
class EvaluateConfig:
    """Everything ``rageval evaluate`` needs; see the module docstring and ``rageval evaluate --help``."""

    queries: str | None = None
    corpus: str | None = None
    run: str | None = None
    retriever: str | None = None
    qrels: str | None = None
    answers_field: str | None = None
    dataset: str | None = None
    k: str = "1,5,10"
    methods: str = "all"
    metric: str = "em"
    label_metrics: str = ",".join(ALL_METRICS)
    measures: str = ""  # IR measures beyond the stored set, comma-separated (rageval.measures.MEASURE_SYNTAX)
    # One switch per built-in LLM judge (rageval.labelmethods.judges), named as the judge: the yes/no relevance on,
    # the graded 0-3 one off (one more LLM call a passage).
    llm_relevance: bool = True
    umbrela: bool = False
    labels: str | None = None  # a judge file (rageval.labelmethods.load_judge_file): one more judge
    judges: str = ",".join(JUDGE_NAMES)
    semi_gold_samples: int = 3
    reteval_ks: str = ""  # the ks LLM-retEval judges at, comma-separated, within k (default: every k)
    # The RAG LLM; in the file and the flags its fields are flat names (model, backend, base_url, ...: MODEL_FIELDS).
    # 32 prompts a forward batch: the rate of bench_generation.py's optimised path (benchmarks/bench_pipeline.py:
    # at 8 a batch the eRAG stage took 1.16x as long on the 2-core CPU); for a server, 32 concurrent requests.
    model_settings: ModelSettings = field(default_factory=lambda: ModelSettings(batch_size=32))
    max_new_tokens: int = 16
    em_early_stop: bool = False  # exact-match early stopping of the eRAG answers (label_metrics and metric em only)
    prompt_template: str | None = None
    cache: str | None = None
    out: str | None = None
    # A shipped dataset slice (``dataset`` nq_open or hotpotqa, without queries): its questions offset ..
    # offset + num_queries - 1 (None: all), ranked by ``retriever`` (or HotpotQA's own ``candidates``).
    offset: int = 0
    num_queries: int | None = None
    measure_cutoffs: str = ""  # IR measure cutoffs beyond k (up to the eRAG depth), comma-separated
    #: The re-ranking check: each top-k reversed goes through eRAG again; the cache counters (stored in the
    #: settings) must show no new LLM call.
    rerank_check: bool = False

    def __post_init__(self):
        if self.retriever is not None and self.retriever not in SHIPPED_RETRIEVERS:
            raise RagevalError(f"retriever {self.retriever!r}: expected one of {', '.join(RETRIEVERS)}")
        if self.offset < 0 or (self.num_queries is not None and self.num_queries < 1):
            raise RagevalError("offset: expected at least 0; num_queries: expected at least 1")
        parse_ks(self.k)
        for cutoffs in (self.measure_cutoffs, self.reteval_ks):
            if cutoffs:
                parse_ks(cutoffs)
        parse_methods(self.methods)
        self.extra_measures()
        if self.semi_gold_samples < 1 or self.max_new_tokens < 1:
            raise RagevalError("semi_gold_samples and max_new_tokens: expected at least 1")

    @classmethod
    def from_flat(cls, values: dict[str, Any]) -> EvaluateConfig:
        """The config of flat names (a config file's, the flags', a stored config's): the model fields become its
        :class:`ModelSettings` (a :class:`~rageval.generation.factory.ModelError` names a bad one)."""
        model = {name: values[name] for name in MODEL_FIELDS if name in values}
        rest = {name: value for name, value in values.items() if name not in MODEL_FIELDS}
        return cls(**rest, model_settings=ModelSettings(**{"batch_size": 32, **model}))

    @property
    def shipped(self) -> bool:
        """Whether the questions are a shipped dataset's (no questions, corpus or run file given)."""
        return not (self.queries or self.corpus or self.run)

    # ---- what the pipeline takes

    def sources(self) -> SourcePaths:
        def path(value):
            return Path(value).expanduser() if value else None

        return SourcePaths(queries=path(self.queries), corpus=path(self.corpus), run=path(self.run),
                           qrels=path(self.qrels), retriever=self.retriever, answers_field=self.answers_field)

    def extra_measures(self) -> tuple[str, ...]:
        """The ``measures`` setting as canonical measure strings."""
        try:
            return tuple(str(m) for m in parse_measure_list(self.measures))
        except ValueError as error:
            raise RagevalError(f"measures: {error}") from None

    def label_judges(self) -> tuple[str, ...]:
        """The LLM judges to run: the built-ins switched on (a field of the judge's name), then the judge file's."""
        switched = tuple(kind.name for kind in judges()
                         if kind.source == "built-in" and getattr(self, kind.name, None) is True)
        if not self.labels:
            return switched
        named = {kind.name for kind in judges()}
        if self.labels in named:  # a judge registered by an installed package
            return (*switched, self.labels)
        if not is_judge_file(self.labels):
            raise RagevalError(f"labels {self.labels!r}: expected a judge file (.toml) or one of {', '.join(named)}")
        try:
            return (*switched, load_judge_file(self.labels).name)
        except LabelMethodError as error:
            raise RagevalError(f"labels: {error}") from None

    def options(self) -> EvaluationOptions:
        ks = parse_ks(self.k)
        judges = tuple(x.strip() for x in self.judges.split(",") if x.strip())
        unknown = [j for j in judges if j not in JUDGE_NAMES]
        if unknown:
            raise RagevalError(f"judges: unknown {', '.join(unknown)}; expected some of {', '.join(JUDGE_NAMES)}")
        return EvaluationOptions(
            methods=parse_methods(self.methods), ks=ks,
            label_metrics=tuple(x.strip() for x in self.label_metrics.split(",") if x.strip()),
            metric=self.metric, label_judges=self.label_judges(), measures=self.extra_measures(),
            reteval=RetEvalSettings(ks=parse_ks(self.reteval_ks) if self.reteval_ks else ks, judges=judges,
                                    semi_gold=SemiGoldSettings(samples=self.semi_gold_samples,
                                                               max_new_tokens=self.max_new_tokens)),
            decoding=DecodingSettings(max_new_tokens=self.max_new_tokens), batch_size=self.model_settings.batch_size,
            measure_cutoffs=parse_ks(self.measure_cutoffs) if self.measure_cutoffs else (),
            prompt=load_prompt_template(Path(self.prompt_template)) if self.prompt_template else QA_FEW_SHOT,
            em_early_stop=self.em_early_stop)

    # ---- reading and writing

    def as_dict(self) -> dict[str, Any]:
        """The config as flat names, in :data:`FIELD_NAMES` order, with relative paths made absolute (so a stored
        config reruns from anywhere)."""
        nested = asdict(self)
        values = {name: nested["model_settings"][name] if name in MODEL_FIELDS else nested[name]
                  for name in FIELD_NAMES}
        for name in PATH_FIELDS:
            if values[name] and (name != "labels" or is_judge_file(values[name])):  # labels: a file or a judge
                values[name] = str(Path(values[name]).expanduser().resolve())
        return values

    def to_toml(self) -> str:
        lines = []
        for name, value in self.as_dict().items():
            if value is None:
                continue
            lines.append(f"{name} = {json.dumps(value)}" if not isinstance(value, bool)
                         else f"{name} = {'true' if value else 'false'}")
        return "\n".join(lines) + "\n"


#: The flat names of the model fields (:class:`ModelSettings`'), in the file and the flags.
MODEL_FIELDS = ("model", "backend", "base_url", "balance", "max_requests_per_minute", "max_tokens_per_minute", "api",
                "api_key_env", "device", "dtype", "batch_size")
_OWN = [f.name for f in fields(EvaluateConfig) if f.name != "model_settings"]
#: Every setting's flat name (a config file's keys, the flags' names), model fields after ``semi_gold_samples``.
FIELD_NAMES = (*_OWN[:_OWN.index("semi_gold_samples") + 1], *MODEL_FIELDS, *_OWN[_OWN.index("semi_gold_samples") + 1:])


def read_config_file(path: Path) -> dict[str, Any]:
    """A TOML config file's values (names as :class:`EvaluateConfig`'s; ``k`` may be a list). Relative paths are
    relative to the file's folder."""
    path = Path(path)
    reason = not_a_file(path)
    if reason:
        raise DataError(path, "no such config file" if reason == "no such file" else f"{reason}; expected a TOML "
                                                                                      "config file")
    from rageval.upload.fields import encoding_problem

    data = path.read_bytes()
    problem = encoding_problem(data)
    if problem:
        raise DataError(path, problem)
    try:
        values = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise DataError(path, f"not a valid TOML file: {error}") from error
    unknown = sorted(set(values) - set(FIELD_NAMES))
    if unknown:
        raise DataError(path, f"unknown setting {unknown[0]!r}; known: {', '.join(FIELD_NAMES)}", field=unknown[0])
    if isinstance(values.get("k"), list):
        values["k"] = ",".join(str(x) for x in values["k"])
    for name in ("measure_cutoffs", "reteval_ks"):
        if isinstance(values.get(name), list):
            values[name] = ",".join(str(x) for x in values[name])
    for name in ("methods", "label_metrics", "judges", "measures", "base_url"):
        if isinstance(values.get(name), list):
            values[name] = ",".join(map(str, values[name]))
    for name in PATH_FIELDS:
        if name == "labels" and not is_judge_file(str(values.get(name, ""))):
            continue
        if isinstance(values.get(name), str) and not Path(values[name]).expanduser().is_absolute():
            values[name] = str(path.parent / values[name])
    return values


def build_config(file_values: dict[str, Any], flag_values: dict[str, Any]) -> EvaluateConfig:
    """Defaults, then the config file, then the flags given (``None`` = not given)."""
    merged = {**file_values, **{k: v for k, v in flag_values.items() if v is not None and k in FIELD_NAMES}}
    try:
        return EvaluateConfig.from_flat(merged)
    except TypeError as error:
        raise RagevalError(f"config: {error}") from error


def load_prompt_template(path: Path) -> PromptTemplate:
    """A QA prompt template from a TOML or JSON file: ``name``, ``version``, ``instruction`` and ``examples``
    (a list of ``{title, passage, question, answer}``; may be empty for zero-shot)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "no such prompt template file")
    text = path.read_text(encoding="utf-8")
    try:
        values = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise DataError(path, f"not a valid {'JSON' if path.suffix == '.json' else 'TOML'} file: {error}") from error
    for name in ("name", "instruction"):
        if not isinstance(values.get(name), str) or not values[name].strip():
            raise DataError(path, "expected a non-empty string", field=name)
    examples = []
    for number, example in enumerate(values.get("examples", [])):
        try:
            examples.append(FewShotExample(**{k: str(example[k]) for k in ("title", "passage", "question", "answer")}))
        except (KeyError, TypeError):
            raise DataError(path, "expected title, passage, question and answer", field=f"examples[{number}]") \
                from None
    return PromptTemplate(name=values["name"], version=str(values.get("version", "1")),
                          instruction=values["instruction"], examples=tuple(examples))


__all__ = ["FIELD_NAMES", "METHODS", "MODEL_FIELDS", "EvaluateConfig", "build_config", "load_prompt_template",
           "read_config_file"]
