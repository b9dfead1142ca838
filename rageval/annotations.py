"""Human labels: a person says whether a retrieved passage is useful for the question, or whether a statement of an
attributed answer is supported by the passages it cites, and how far those labels agree with the automatic ones.

The labels live in one SQLite file (default ``annotations.sqlite`` in the runs folder), kept by
:class:`rageval.store.annotations.AnnotationFile` (its rows, statuses and schema history are described there):
each row is one act of labelling, committed the moment it is saved; labelling an item again adds a row (the history
is kept) and the latest row of each (annotator, item) is the one that counts (:func:`latest_labels`).
:class:`AnnotationStore` is that file plus what the domain adds: a run's shared sample, drawn by
:func:`sample_passages`, and the run's annotation guideline, the default per task type (:data:`DEFAULT_GUIDELINES`)
until one is set.

Agreement is Cohen's kappa (:func:`cohen_kappa`) between one person's labels and each automatic label method of the
run (eRAG ``erag:*``, the LLM judges, ``contains_answer``, ``gold``; for statements the NLI verdicts of the
attribution run, :data:`STATEMENT_METHODS`), or between two annotators, over the items both labelled 0/1 ("unsure"
and "skipped" are left out); with more than two annotators, Fleiss' kappa (:func:`fleiss_kappa`) and Krippendorff's
alpha (:func:`krippendorff_alpha`) over all of them (:func:`multi_annotator_agreement`).

A statement that cites no passage is not judged, by the person or by the NLI methods: the question is "is it
supported by the passages it cites?", and the NLI verdicts stored for such a statement (0, AutoAIS' convention for
its answer-level mean) are left out of the statement labels (:func:`statement_method_labels`).

Exports: every row as CSV (:func:`labels_csv`), and passage labels as qrels rows (:func:`qrels_frame`: one
annotator's latest labels, or the majority across annotators) for :func:`rageval.trec.qrels_text`.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pandas as pd

from rageval.store.annotations import ITEM_COLUMNS, KINDS, LABELLED, AnnotationFile, normalise_annotator

ANNOTATIONS_FILE = "annotations.sqlite"
#: The run's guideline when none is set (:meth:`AnnotationStore.guideline`), by item kind and the run's task type
#: (:func:`task_type`). Multi-hop questions need two passages: "this passage alone lets the model answer" makes
#: almost every comparison paragraph "not useful" (kappa with eRAG about 0.07 on HotpotQA, issue 41).
SINGLE_HOP, MULTI_HOP = "single-hop", "multi-hop"
DEFAULT_GUIDELINES = {
    ("passage", SINGLE_HOP): "Useful means: this passage alone lets someone answer the question correctly (it states "
                             "a gold answer or an equivalent one). On topic without the answer is not useful. Mark "
                             "unsure when you cannot tell, and say why in the note.",
    ("passage", MULTI_HOP): "Useful means: this passage states a fact the answer needs: the bridge to the entity asked "
                            "about, or one side of a comparison, even when another passage is needed too. A passage "
                            "that contributes no needed fact is not useful. Mark unsure when you cannot tell, and "
                            "say why in the note.",
    ("statement", SINGLE_HOP): "Supported means: the passages the statement cites, read together, state what it says.",
    ("statement", MULTI_HOP): "Supported means: the passages the statement cites, read together, state what it says.",
}
#: Datasets whose questions need several passages (HotpotQA, 2WikiMultiHopQA, MuSiQue).
MULTI_HOP_DATASETS = ("hotpotqa", "2wikimultihopqa", "musique")
#: A graded automatic label (eRAG under token F1, ROUGE-L or BERTScore, in [0, 1]) counts as useful from here on;
#: 0/1 labels are unaffected.
USEFUL_THRESHOLD = 0.5
#: The automatic verdicts on a statement stored in an attribution run's ``statements`` table (its column -> the
#: method name used here): AutoAIS_cit (one cited passage entails it), ALCE citation recall (its cited passages
#: jointly entail it), and HAGRID's own annotators' sentence label.
STATEMENT_METHODS = {"supported": "nli:autoais", "alce_recall": "nli:alce", "human_attributable": "hagrid:human"}
#: The statement methods that judge a statement by the passages it cites: not judged on a statement citing none.
CITATION_METHODS = ("nli:autoais", "nli:alce")
DEFAULT_SAMPLE_SIZE = 50


def annotations_path(runs_folder: str | os.PathLike) -> Path:
    """The default annotation file of a runs folder: ``<folder>/annotations.sqlite``."""
    return Path(runs_folder) / ANNOTATIONS_FILE


#: Names the annotation file instead of the runs folder's (the dashboard and the commands read it).
ANNOTATIONS_ENV = "RAGEVAL_ANNOTATIONS"


def default_annotations_file() -> Path:
    """The annotation file the dashboard and ``rageval annotations`` / ``rageval trust`` use:
    ``$RAGEVAL_ANNOTATIONS``, else ``annotations.sqlite`` in the user's runs folder."""
    from rageval.paths import user_runs_dir

    explicit = os.environ.get(ANNOTATIONS_ENV)
    return Path(explicit) if explicit else annotations_path(user_runs_dir())


def task_type(settings: dict) -> str:
    """:data:`MULTI_HOP` for a run over a multi-hop dataset (its ``dataset`` setting), else :data:`SINGLE_HOP`."""
    dataset = str(settings.get("dataset") or "").lower()
    return MULTI_HOP if any(name in dataset for name in MULTI_HOP_DATASETS) else SINGLE_HOP


def default_guideline(kind: str, task: str = SINGLE_HOP) -> str:
    """The guideline of ``kind`` items for a run of ``task`` type when its team set none."""
    return DEFAULT_GUIDELINES[(kind, task if task in (SINGLE_HOP, MULTI_HOP) else SINGLE_HOP)]


class AnnotationStore(AnnotationFile):
    """The annotation file at ``path`` (:class:`~rageval.store.annotations.AnnotationFile`: labels appended and
    committed one by one, from any thread or process), with the run's shared sample drawn here and the default
    guideline when the run has none."""

    def guideline(self, run: str, kind: str, task: str = SINGLE_HOP) -> str:
        """The guideline of ``run``'s ``kind`` items: the latest one set, else the default for its ``task`` type
        (:func:`default_guideline`)."""
        stored = self.latest_guideline(run, kind)
        return stored if stored is not None else default_guideline(kind, task)

    def create_sample(self, run: str, population: pd.DataFrame, size: int, seed: int, created_by: str,
                      created_at: datetime | None = None) -> int:
        """Draw :func:`sample_passages` of ``population`` (a run's retrieved passages: query_id, passage_id, rank,
        in run order) and store it as the run's newest sample; return its id."""
        created_by = normalise_annotator(created_by)
        if not created_by:
            raise ValueError("an annotator name is required to draw a sample")
        if not run:
            raise ValueError("the run's name is required to draw a sample")
        items = sample_passages(population, size, seed)
        return self.save_sample(run, items, seed, len(population), created_by, created_at)


def sample_passages(population: pd.DataFrame, size: int, seed: int) -> pd.DataFrame:
    """A seeded random sample of ``size`` retrieved passages (all of them if fewer) of ``population`` (query_id,
    passage_id, rank; one row per retrieved passage, any order), as position, query_id, passage_id.

    The rows are put in a canonical order (query id, rank, passage id) and permuted by
    ``numpy.random.default_rng(seed)``; the first ``size`` are the sample, so the same population and seed give the
    same sample and a larger size a superset. They are listed query by query (queries in the order the permutation
    first reached them, passages by rank), so an annotator finishes a query's items together.
    """
    import numpy as np

    if size < 1:
        raise ValueError(f"a sample needs at least 1 item, got {size}")
    canonical = (population[["query_id", "passage_id", "rank"]].drop_duplicates(["query_id", "passage_id"])
                 .sort_values(["query_id", "rank", "passage_id"], kind="stable").reset_index(drop=True))
    order = np.random.default_rng(int(seed)).permutation(len(canonical))[:size]
    chosen = canonical.iloc[order].reset_index(drop=True)
    first_reached = {q: i for i, q in reversed(list(enumerate(chosen["query_id"])))}
    chosen = chosen.assign(_query_order=chosen["query_id"].map(first_reached))
    chosen = chosen.sort_values(["_query_order", "rank", "passage_id"], kind="stable").reset_index(drop=True)
    return pd.DataFrame({"position": range(len(chosen)), "query_id": chosen["query_id"].astype(object),
                         "passage_id": chosen["passage_id"].astype(object)})


def sample_status(sample: pd.DataFrame, latest: pd.DataFrame) -> pd.DataFrame:
    """The sample's items (position, query_id, passage_id) with one annotator's current decision on each:
    ``status`` (:data:`rageval.store.annotations.STATUSES`, or "pending"), ``label`` (Int64, missing unless
    labelled) and ``note``."""
    mine = latest.loc[latest["kind"] == "passage", ["query_id", "passage_id", "label", "status", "note"]]
    merged = sample.merge(mine, on=["query_id", "passage_id"], how="left")
    return merged.assign(status=merged["status"].fillna("pending"), note=merged["note"].fillna(""),
                         label=merged["label"].astype("Int64")).sort_values("position").reset_index(drop=True)


def labelled_only(latest: pd.DataFrame) -> pd.DataFrame:
    """The rows with a 0/1 label (status "labelled"), ``label`` as int64: what kappa and qrels count."""
    rows = latest[latest["status"] == LABELLED]
    return rows.assign(label=rows["label"].astype("int64"))


# --- the labels that count ---------------------------------------------------------------------------------

def latest_labels(history: pd.DataFrame, kind: str, annotator: str | None = None) -> pd.DataFrame:
    """The label that counts for each (run, annotator, item) of ``kind``: the latest (highest id) row, with
    ``times_labelled``, how many rows the annotator saved for it. Optionally of one annotator."""
    columns = ["run", "annotator", *ITEM_COLUMNS[kind]]
    rows = history[history["kind"] == kind]
    if annotator is not None:
        rows = rows[rows["annotator"] == normalise_annotator(annotator)]
    rows = rows.sort_values("id")
    counts = rows.groupby(columns, sort=False).size().rename("times_labelled").reset_index()
    latest = rows.drop_duplicates(subset=columns, keep="last")
    return latest.merge(counts, on=columns, how="left").sort_values("id").reset_index(drop=True)


# --- agreement (the rest: rageval/agreement.py) ---------------------------------------------------------

def _with_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frame`` that hold a 0/1 label (all of them when it has no ``status`` column)."""
    return labelled_only(frame) if "status" in frame.columns else frame


# --- export -----------------------------------------------------------------------------------------------

def labels_csv(history: pd.DataFrame) -> str:
    """Every label row as CSV, all columns of :data:`rageval.store.annotations.LABEL_COLUMNS` plus ``current`` (1
    for the row that counts for its annotator and item, 0 for a label later replaced), oldest first."""
    history = history.sort_values("id")
    current = pd.Series(0, index=history.index)
    for kind in KINDS:
        rows = history[history["kind"] == kind]
        keep = rows.drop_duplicates(subset=["run", "annotator", *ITEM_COLUMNS[kind]], keep="last").index
        current[keep] = 1
    return history.assign(current=current).to_csv(index=False, lineterminator="\n")


def qrels_frame(latest: pd.DataFrame, annotator: str | None = None) -> pd.DataFrame:
    """Passage labels as qrels rows (query_id, passage_id, label), sorted by query and passage.

    With ``annotator``: that person's current label of each passage. Without: the majority across annotators of
    their current labels, a passage is useful (1) only when more than half of the annotators who labelled it
    said so; a tie counts as not useful (0), so a qrels 1 always has a majority behind it.
    """
    rows = _with_labels(latest[latest["kind"] == "passage"])
    if annotator is not None:
        rows = rows[rows["annotator"] == normalise_annotator(annotator)]
    if rows.empty:
        return pd.DataFrame({"query_id": [], "passage_id": [], "label": []}).astype({"label": "int64"})
    votes = rows.groupby(["query_id", "passage_id"])["label"].agg(["sum", "count"]).reset_index()
    label = (2 * votes["sum"] > votes["count"]).astype(int)
    return (pd.DataFrame({"query_id": votes["query_id"], "passage_id": votes["passage_id"], "label": label})
            .sort_values(["query_id", "passage_id"]).reset_index(drop=True))

