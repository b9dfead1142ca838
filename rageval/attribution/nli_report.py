"""How well a citation checker transfers: ``data/runs/nli/nli_test_report.json`` (issue 17).

Each evaluation scores one checker on one labelled set at its stored threshold (:mod:`rageval.attribution.nli_eval`:
accuracy, balanced accuracy, F1, ROC-AUC, 95% bootstrap intervals) and says under which protocol:

* ``in-distribution``: the held-out ``test`` rows of a source the checker was trained on;
* ``zero-shot``: the ``test`` rows of a source it never saw (SummEdits, VitaminC, ANLI and ConTRoL for the
  shipped model; every long-premise source for the issue-5 model);
* ``leave-one-source-out``: a model trained by the same recipe without that source (at a reduced budget, named in
  the checker's description), tested on it;
* ``hagrid-human``: HAGRID's human attributability label of each cited answer sentence against NLI(the cited quotes
  joined, the sentence), on the queries of one half (split by a hash of the query id, so no query is in both).

Test rows are a seeded sample of at most ``pairs_per_source`` per source. Evaluations already computed are kept in
a partial file and skipped when the report is built again (a killed run resumes).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rageval.attribution.checker_report import REPORT_FORMAT, REPORT_VERSION
from rageval.attribution.nli import EntailmentModel
from rageval.attribution.nli_data import entails, held_out_pairs
from rageval.attribution.nli_eval import evaluate_checker_scores
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR
from rageval.store.files import write_text_atomically

HAGRID_HALVES = ("dev", "test")
Log = Callable[[str], None]


@dataclass(frozen=True)
class LabelledPair:
    premise: str
    hypothesis: str
    gold: int


@dataclass(frozen=True)
class CheckerEntry:
    """A checker in the report: its model, the sources it learned from, and a description of how it was made."""

    checker_id: str
    model: EntailmentModel
    trained_on: tuple[str, ...]
    description: str


def sample_rows(source_pairs: Sequence, limit: int | None, seed: int = 0) -> list[LabelledPair]:
    """At most ``limit`` rows, a seeded sample (all when fewer), as labelled pairs."""
    rows = list(source_pairs)
    if limit is not None and len(rows) > limit:
        rows = random.Random(seed).sample(rows, limit)
    return [LabelledPair(p.premise, p.hypothesis, entails(p)) for p in rows]


def hagrid_half(query_id: str) -> str:
    """``dev`` or ``test``: the half of HAGRID a query belongs to (SHA-1 of its id, even = dev)."""
    return HAGRID_HALVES[hashlib.sha1(query_id.encode("utf-8")).digest()[0] % 2]


def hagrid_human_pairs(data_dir: Path = DATA_DIR, half: str = "test") -> list[LabelledPair]:
    """Every human-labelled, cited HAGRID answer sentence of ``half``: premise = its cited quotes joined (ALCE's
    joint premise), hypothesis = the sentence without its markers, gold = the human ``attributable`` label."""
    from rageval.attribution.experiment import quote_numbers, quote_passage_id
    from rageval.attribution.statements import parse_citations
    from rageval.data import HAGRID_FILE, read_hagrid

    pairs = []
    for record in read_hagrid(Path(data_dir) / HAGRID_FILE):
        if hagrid_half(record.query_id) != half:
            continue
        texts = {quote_passage_id(q.docid): q.text for q in record.quotes}
        numbers = quote_numbers(record)
        for answer in record.answers:
            for sentence in answer.sentences:
                text, cited = parse_citations(sentence.text)
                quotes = [texts[numbers[n]] for n in cited if n in numbers]
                if sentence.attributable is None or not text or not quotes:
                    continue
                pairs.append(LabelledPair("\n".join(quotes), text, int(sentence.attributable)))
    return pairs


def evaluate_pairs(model: EntailmentModel, pairs: Sequence[LabelledPair], resamples: int = 1000) -> dict:
    """One evaluation (pair level) of ``model`` on ``pairs`` at the model's threshold, as a JSON-ready dict."""
    probabilities = model.entailment_probabilities([(p.premise, p.hypothesis) for p in pairs])
    threshold = float(getattr(model, "threshold", 0.5))
    return evaluate_checker_scores([p.gold for p in pairs], probabilities, threshold, resamples=resamples).as_dict()


def protocol_for(source: str, trained_on: Sequence[str]) -> str:
    return "in-distribution" if source in trained_on else "zero-shot"


class PartialReport:
    """Evaluations already computed, keyed by (checker, data, protocol), in a JSON file rewritten atomically."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries: dict[str, dict] = {}
        if self.path.is_file():
            try:
                self.entries = json.loads(self.path.read_text(encoding="utf-8"))
            except ValueError as error:
                raise RagevalError(f"{self.path}: not a partial NLI report ({error})") from None

    @staticmethod
    def key(checker: str, data: str, protocol: str) -> str:
        return f"{checker}|{data}|{protocol}"

    def get(self, checker: str, data: str, protocol: str) -> dict | None:
        return self.entries.get(self.key(checker, data, protocol))

    def put(self, entry: dict) -> None:
        self.entries[self.key(entry["checker"], entry["data"], entry["protocol"])] = entry
        write_report(self.entries, self.path)


def evaluate_checker(entry: CheckerEntry, partial: PartialReport, data_dir: Path = DATA_DIR,
                     sources: Sequence[str] | None = None, pairs_per_source: int | None = 800,
                     hagrid: bool = True, protocol: str | None = None, log: Log = print) -> list[dict]:
    """Every evaluation of one checker (each test source, then HAGRID's test half), reusing computed ones."""
    results = []
    for source, rows in held_out_pairs(data_dir, sources).items():
        chosen = protocol or protocol_for(source, entry.trained_on)
        done = partial.get(entry.checker_id, source, chosen)
        if done is None:
            pairs = sample_rows(rows, pairs_per_source)
            log(f"{entry.checker_id}: {source} ({len(pairs)} test pairs, {chosen})")
            done = {"checker": entry.checker_id, "data": source, "split": "test", "protocol": chosen,
                    **evaluate_pairs(entry.model, pairs)}
            partial.put(done)
        results.append(done)
    if hagrid:
        done = partial.get(entry.checker_id, "hagrid", "hagrid-human")
        if done is None:
            pairs = hagrid_human_pairs(data_dir, "test")
            log(f"{entry.checker_id}: HAGRID human labels ({len(pairs)} sentences of the test half)")
            done = {"checker": entry.checker_id, "data": "hagrid", "split": "test half (by query)",
                    "protocol": "hagrid-human", **evaluate_pairs(entry.model, pairs)}
            partial.put(done)
        results.append(done)
    return results


def build_report(checkers: Mapping[str, Mapping], evaluations: Sequence[dict]) -> dict:
    """The report file's contents: ``checkers`` (id -> spec, threshold, description, trained_on, ...) and
    ``evaluations`` (each with ``checker``, ``data``, ``split``, ``protocol`` and the metrics)."""
    unknown = sorted({e["checker"] for e in evaluations} - set(checkers))
    if unknown:
        raise RagevalError(f"NLI report: evaluations of checkers {unknown} that the report does not describe")
    return {"format": REPORT_FORMAT, "version": REPORT_VERSION, "checkers": dict(checkers),
            "evaluations": list(evaluations)}


def write_report(report: Mapping, path: Path) -> Path:
    """Write ``report`` (or any JSON object) to ``path`` atomically: a temporary sibling renamed over it."""
    return write_text_atomically(path, json.dumps(report, indent=1))


def transfer_report_table(report: Mapping) -> list[str]:
    """The text table of a transfer report's evaluations (one line each, after a header): checker, data, protocol,
    n, balanced accuracy [95% interval], ROC-AUC ("–" where undefined)."""
    lines = [f"{'checker':<24} {'data':<14} {'protocol':<21} {'n':>5} {'BAcc':>6} {'95% interval':>15} {'AUC':>6}"]
    for entry in report["evaluations"]:
        low, high = entry["balanced_accuracy_interval"] or (float("nan"),) * 2
        auc = entry["roc_auc"]
        lines.append(f"{entry['checker']:<24} {entry['data']:<14} {entry['protocol']:<21} {entry['n']:>5} "
                     f"{entry['balanced_accuracy']:>6.3f} [{low:.3f}, {high:.3f}] "
                     f"{'–' if auc is None else f'{auc:.3f}':>6}")
    return lines


# ---------------------------------------------------------------------------------------------- the whole report

LOSO_SOURCES = ("fever_docnli", "mnli_docnli", "drop", "mctest")  # the long-premise sources the shipped model learns
LOSO_PAIRS_PER_SOURCE = 500  # the reduced budget of a leave-one-source-out model (each one ~6 CPU-minutes)


def loso_config(base, held_out: str, pairs_per_source: int = LOSO_PAIRS_PER_SOURCE):
    """``base``'s recipe without ``held_out`` (not trained on, not calibrated on), at most ``pairs_per_source`` each."""
    import dataclasses

    return dataclasses.replace(
        base, sources=tuple(s for s in base.sources if s != held_out), max_pairs_per_source=pairs_per_source,
        source_caps=(), calibration_sources=tuple(s for s in base.calibration_sources if s != held_out))


def _describe(config, model, kind: str) -> dict:
    import dataclasses

    return {"spec": "ours" if kind == "shipped" else f"cache:{model.model_id}", "threshold": model.threshold,
            "trained_on": list(config.sources), "description": kind, "recipe": dataclasses.asdict(config)}


def transfer_report(data_dir: Path = DATA_DIR, partial_path: Path | None = None, pairs_per_source: int | None = 800,
                    loso_sources: Sequence[str] = LOSO_SOURCES, legacy: bool = True, log: Log = print,
                    progress=None) -> dict:
    """Train what is missing (the shipped recipe, the issue-5 recipe, one reduced model per left-out source; each
    cached and resumable) and evaluate each as the module docstring says; returns the report."""
    from rageval.attribution import nli_training as training
    from rageval.paths import cache_dir

    partial = PartialReport(partial_path or cache_dir() / "nli_report.partial.json")
    checkers: dict[str, dict] = {}
    evaluations: list[dict] = []
    shipped_config = training.NliTrainingConfig()
    entries: list[tuple[training.NliTrainingConfig, str, str | None]] = [
        (shipped_config, "shipped recipe (the default checker)", None)]
    if legacy:
        entries.append((training.LEGACY_NLI_CONFIG, "issue-5 recipe (short premises only; the previous default)",
                        None))
    entries.extend((loso_config(shipped_config, source), f"shipped recipe without {source}, at most "
                    f"{LOSO_PAIRS_PER_SOURCE} pairs a source (leave-one-source-out)", source)
                   for source in loso_sources)
    for config, description, held_out in entries:
        log(f"model: {description}")
        model = training.load_or_train_nli(config, data_dir, progress=progress)
        checker_id = model.model_id
        checkers[checker_id] = {**_describe(config, model, "shipped" if config == shipped_config else "cached"),
                                "description": description}
        entry = CheckerEntry(checker_id, model, tuple(config.sources), description)
        if held_out is None:
            evaluations.extend(evaluate_checker(entry, partial, data_dir, pairs_per_source=pairs_per_source,
                                                log=log))
        else:
            evaluations.extend(evaluate_checker(entry, partial, data_dir, sources=(held_out,),
                                                pairs_per_source=pairs_per_source, hagrid=False,
                                                protocol="leave-one-source-out", log=log))
    return build_report(checkers, evaluations)
