"""What a job is: its :class:`JobSpec` (run file, label kind, model, passages), the jobs database that reads its
rows with it (:class:`JobStore`; the row :class:`rageval.store.jobs.Job`), the label method it writes, and its
status and progress as the dashboard and ``rageval rescore list`` show them."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.erag.labels import ALL_METRICS
from rageval.errors import JobError
from rageval.generation import factory
from rageval.labelmethods import LabelMethod, LabelMethodError, erag_method, is_judge_file, judges, load_judge_file
from rageval.store.jobs import CANCELLED, QUEUED, RUNNING, Job, JobsDatabase, worker_alive

ERAG = "erag"
COMPLETE = "complete"


def label_kinds() -> tuple[str, ...]:
    """The per-passage label kinds a job can write: ``erag`` and every registered LLM judge
    (:func:`rageval.labelmethods.judges`: the built-ins, installed packages', judge files already loaded)."""
    return (ERAG, *(kind.name for kind in judges()))

#: What a complete job can compute (:data:`rageval.pipeline.summary.PIECES`), in pipeline order.
PIECES = ("erag", "e2e", "baselines", "reteval")
BACKENDS = ("transformers", "openai")
DTYPES = factory.DTYPES
#: Besides the statuses stored in the jobs database (:data:`rageval.store.jobs.QUEUED` ...), :func:`job_status`
#: gives ``interrupted``: active, but its worker is gone.
INTERRUPTED = "interrupted"
ACTIVE = (QUEUED, RUNNING)
HEARTBEAT_S = 2.0


class JobCancelled(BaseException):
    """Raised in the worker by SIGTERM: stop at once, keeping what is committed. A BaseException, like
    KeyboardInterrupt, so no ``except Exception`` on the way (a retry loop, a thread pool) swallows it."""


#: A job's model when it names none: the in-process backend under its older name (``transformers``: kept, since it
#: is part of :func:`model_identity` and of the stored jobs) at the device's default precision (no check).
JOB_MODEL_DEFAULTS: dict[str, Any] = {"backend": "transformers", "dtype": None}
#: The model fields, flat in a job's stored JSON and in :meth:`JobSpec.from_flat`.
MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(factory.ModelSettings))


@dataclass(frozen=True)
class JobSpec:
    """What one re-scoring job labels and with what. ``k=None``: the run's own k; ``query_ids=None``: every query;
    ``max_new_tokens=None``: the run's decoding (eRAG) or 3 tokens (yes/no relevance); ``llm_cache=None``: the
    user's LLM-call cache. ``model_settings``: the model (``device="auto"`` runs on CUDA when present; with
    ``backend="openai"``, ``base_url`` may name several servers, shared by ``balance``, under the optional rate
    limits); :meth:`from_flat` takes its fields flat, as the stored JSON holds them.
    ``label_kind="complete"``: compute the run's missing pieces (``pieces``, None: all it lacks); ``metric``,
    ``k``, ``query_ids`` and ``max_new_tokens`` do not apply to it."""

    run_path: str
    model_settings: factory.ModelSettings = field(
        default_factory=lambda: factory.ModelSettings(**JOB_MODEL_DEFAULTS))
    label_kind: str = "erag"
    metric: str = "em"
    k: int | None = None
    query_ids: tuple[str, ...] | None = None
    max_new_tokens: int | None = None
    llm_cache: str | None = None
    pieces: tuple[str, ...] | None = None
    #: A judge file (:func:`rageval.labelmethods.load_judge_file`): ``label_kind`` is the judge it defines.
    judge_file: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "run_path", str(Path(self.run_path).expanduser().resolve()))
        if self.judge_file is not None:
            try:
                judge = load_judge_file(self.judge_file)
            except LabelMethodError as error:
                raise JobError(str(error)) from error
            object.__setattr__(self, "judge_file", judge.source)
            object.__setattr__(self, "label_kind", judge.name)
        if self.query_ids is not None:
            object.__setattr__(self, "query_ids", tuple(str(q) for q in self.query_ids))
        if self.pieces is not None:
            unknown = [p for p in self.pieces if p not in PIECES]
            if unknown:
                raise JobError(f"pieces {', '.join(map(str, unknown))}: expected some of {', '.join(PIECES)}")
            object.__setattr__(self, "pieces", tuple(p for p in PIECES if p in self.pieces))
        checks = [
            (self.model_settings.backend in BACKENDS,
             f"backend {self.model_settings.backend!r}: expected one of {', '.join(BACKENDS)}"),
            (self.label_kind in (*label_kinds(), COMPLETE),
             f"label kind {self.label_kind!r}: expected one of {', '.join((*label_kinds(), COMPLETE))} "
             f"or a judge file (.toml)"),
            (self.metric in ALL_METRICS,
             f"label metric {self.metric!r}: expected one of {', '.join(ALL_METRICS)}"),
            (self.k is None or self.k >= 1, f"k: expected at least 1, got {self.k}"),
            (self.max_new_tokens is None or self.max_new_tokens >= 1,
             f"max new tokens: expected at least 1, got {self.max_new_tokens}"),
            (self.query_ids is None or len(self.query_ids) > 0, "queries: expected at least one query id"),
            (self.pieces is None or len(self.pieces) > 0,
             f"pieces: expected at least one of {', '.join(PIECES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise JobError(message)

    @classmethod
    def from_flat(cls, run_path: str, **values) -> JobSpec:
        """The spec of flat names (the model's fields beside the job's, as flags, forms and the stored JSON give
        them); model fields not given take :data:`JOB_MODEL_DEFAULTS`, then ModelSettings' defaults. A bad model
        field is a :class:`JobError`."""
        model = {name: values.pop(name) for name in MODEL_FIELDS if name in values}
        if is_judge_file(str(values.get("label_kind", ""))):  # --labels FILE.toml
            values["judge_file"] = values["label_kind"]
        try:
            settings = factory.ModelSettings(**{**JOB_MODEL_DEFAULTS, **model})
        except factory.ModelError as error:
            raise JobError(str(error)) from error
        return cls(run_path, settings, **values)

    @property
    def base_method(self) -> str:
        """The run builders' name of this kind of label (``erag:em``, or the judge's name): what the measure code
        keys its rules on (its kind in :mod:`rageval.labelmethods`)."""
        return erag_method(self.metric) if self.label_kind == ERAG else self.label_kind

    def to_json(self) -> str:
        """The stored form: one flat JSON object, the model's fields beside the job's (as jobs were always
        stored, so older records read)."""
        values = dataclasses.asdict(self)
        if values["judge_file"] is None:  # as jobs were stored before judge files
            del values["judge_file"]
        return json.dumps({**values.pop("model_settings"), **values}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        fields = json.loads(text)
        for name in ("query_ids", "pieces"):
            if fields.get(name) is not None:
                fields[name] = tuple(fields[name])
        return cls.from_flat(**fields)

    @property
    def is_complete(self) -> bool:
        """Whether this is a "compute what the run lacks" job rather than a per-passage labelling job."""
        return self.label_kind == COMPLETE


def model_short_name(model: str, dtype: str | None = None) -> str:
    """A short, file-name-safe name of a model: the last part of its path or hub id (``/m/tiny-gemma3`` ->
    ``tiny-gemma3``, ``google/gemma-3-270m`` -> ``gemma-3-270m``), with the precision when one is forced."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]).strip("-")
    name = name or "model"
    return f"{name}-{dtype}" if dtype else name


def method_name(spec: JobSpec) -> str:
    """The label method a job writes: ``erag:<metric>@<model>`` or ``<judge>@<model>``; a complete job's name is
    ``complete@<model>`` (it writes the run's standard methods)."""
    base = COMPLETE if spec.is_complete else spec.base_method
    return LabelMethod(base, model_short_name(spec.model_settings.model, spec.model_settings.dtype)).name


def model_identity(spec: JobSpec) -> str:
    """What makes two jobs' labels the same model's: backend, model, precision and (for a server) its API; not the
    server's URL, so the same served model behind another replica or port keeps its method name (the LLM-call
    cache keys on the served model id alike)."""
    model = spec.model_settings
    return f"{model.backend}|{model.model}|{model.dtype or ''}|{model.api if model.backend == 'openai' else ''}"


class JobStore(JobsDatabase[JobSpec]):
    """The jobs database (:class:`rageval.store.jobs.JobsDatabase`), its jobs' specs read as :class:`JobSpec`."""

    def _read_spec(self, text: str) -> JobSpec:
        return JobSpec.from_json(text)


@dataclass(frozen=True)
class Progress:
    """Where a job stands: ``status`` as :func:`job_status` gives it, the share of items done, the labelling rate
    of the current attempt (items per second) and the estimated seconds left (None until a rate is known)."""

    status: str
    fraction: float
    rate_per_s: float | None
    eta_s: float | None


def job_status(job: Job[JobSpec], now: float | None = None) -> str:
    """The stored status, except that an active job whose worker is gone is ``interrupted`` (or ``cancelled``
    when a cancel had been asked for)."""
    if job.status in ACTIVE and job.pid is not None and not worker_alive(job, now):
        return CANCELLED if job.cancel_requested else INTERRUPTED
    return job.status


def job_progress(job: Job[JobSpec], now: float | None = None) -> Progress:
    """Share done and ETA. The rate is that of the current attempt, items done by it (``done - done_at_start``:
    not the items an earlier attempt labelled, nor a complete job's LLM calls answered from the cache) over the
    time from its start to its last committed batch: ETA = (total - done) / rate, the items left taken as new.
    Both stay None until the attempt has done a new item."""
    now = time.time() if now is None else now
    status = job_status(job, now)
    fraction = job.done / job.total if job.total else 1.0
    rate = eta = None
    new_items = job.done - job.done_at_start
    if job.items_started is not None and job.updated is not None and new_items > 0 and job.updated > job.items_started:
        rate = new_items / (job.updated - job.items_started)
        if status in ACTIVE:
            eta = (job.total - job.done) / rate
    return Progress(status, fraction, rate, eta)


@dataclass(frozen=True)
class JobEstimate:
    """A complete job's progress over all its stages (its plan: :attr:`rageval.store.jobs.Job.plan`): the stage in
    progress is the ``stage_number``-th of ``stages``; ``calls_done`` of ``calls`` LLM calls made (cache hits
    included), ``new_left`` new calls still to make (each later stage's planned new calls, and the current one's
    rest); ``rate_per_s``: new calls per second since the attempt's model was ready, over every stage so far;
    ``eta_s``: ``new_left`` at that rate (None until a new call was made, or once the job ended)."""

    stage_number: int
    stages: int
    calls_done: int
    calls: int
    new_left: int
    rate_per_s: float | None
    eta_s: float | None

    @property
    def fraction(self) -> float:
        return min(self.calls_done / self.calls, 1.0) if self.calls else 1.0


def job_estimate(job: Job[JobSpec], now: float | None = None) -> JobEstimate | None:
    """The whole job's share, rate and ETA (:class:`JobEstimate`) from its plan and the stage in progress; None
    for a job without a plan (a labelling job, or one started before plans were stored) or whose stage is not in
    it. The stages before the current one are taken as done as planned (their new calls made by this attempt: the
    plan is counted at each attempt's start, so what an earlier attempt made is counted as cached); the current
    stage's new calls left are its planned new calls less those made, at most its calls left."""
    if not job.plan or job.stage is None:
        return None
    names = [stage for stage, _, _ in job.plan]
    if job.stage not in names:
        return None
    index = names.index(job.stage)
    new = [calls - cached for _, calls, cached in job.plan]
    made_here = job.done - min(job.done_at_start, job.done)
    left_here = max(min(job.total - job.done, new[index] - made_here), 0)
    made = sum(new[:index]) + made_here
    rate = eta = None
    if job.llm_started is not None and job.updated is not None and made > 0 and job.updated > job.llm_started:
        rate = made / (job.updated - job.llm_started)
        if job_status(job, now) in ACTIVE:
            eta = (left_here + sum(new[index + 1:])) / rate
    calls = [c for _, c, _ in job.plan]
    return JobEstimate(index + 1, len(job.plan), sum(calls[:index]) + job.done,
                       sum(calls[:index]) + max(job.total, job.done) + sum(calls[index + 1:]),
                       left_here + sum(new[index + 1:]), rate, eta)
