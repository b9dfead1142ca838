"""eRAG label metrics (EM, F1, accuracy, ROUGE-L, MiniLM BERTScore), the LLM-relevance baseline, graded measures
and the E2E k sweep (rageval.erag, rageval.text_metrics, rageval.bertscore) on real NQ-open records."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rageval.bertscore import BertScorer, greedy_match_f1
from rageval.erag.baselines import compute_judge_labels, compute_reference_labels
from rageval.erag.e2e import compute_e2e
from rageval.erag.labels import ALL_METRICS, BINARY_METRICS, EragSettings, metric_labels, score_outputs
from rageval.erag.measures import compute_measure_values, is_graded_method, measure_names
from rageval.labelmethods import GOLD, GOLD_PAGE, LLM_RELEVANCE, erag_method
from rageval.store import DocOutput, Label
from rageval.text_metrics import answer_accuracy, contains_answer, exact_match, rouge_l, token_f1
from rageval.types import Ranking, ScoredPassage
from tests.run_fixtures import RecordingGenerator

NOBEL = "who got the first nobel prize in physics"    # answer: Wilhelm Conrad Röntgen; gold passage nq-dpr:1
READING = "who is the owner of reading football club"  # answers: Dai Xiuli / Xiu Li Dai / Dai Yongge / Yongge Dai
BEAST = "who does the voice of the beast in the new movie"  # answer: Dan Stevens; gold passage nq-dpr:328


@pytest.fixture(scope="module")
def nq(corpus):
    by_text = {q.text: q for q in corpus.nq_queries}
    return by_text.__getitem__


@pytest.fixture(scope="module")
def encoder():
    from rageval.retrieval.dense import MiniLMEncoder

    return MiniLMEncoder()


@pytest.fixture(scope="module")
def bert_scorer(encoder):
    return BertScorer(encoder)


def ranking(query_id, ids):
    return Ranking(query_id, tuple(ScoredPassage(pid, 10.0 - rank) for rank, pid in enumerate(ids)))


# ------------------------------------------------------------------------------------------ label metrics


@pytest.fixture(scope="module")
def doc_outputs(nq):
    """Single-passage outputs as a RAG LLM might give them, on real passages of the two questions."""
    nobel, reading = nq(NOBEL), nq(READING)
    return [
        DocOutput(nobel.query_id, "nq-dpr:1", "Wilhelm Conrad Röntgen"),                       # exact
        DocOutput(nobel.query_id, nobel.gold_passage_ids[0], "in 1901 to Wilhelm Conrad Röntgen"),  # verbose
        DocOutput(nobel.query_id, "nq-dpr:2", "Deadpool 2"),                                   # wrong
        DocOutput(reading.query_id, "nq-dpr:6", "owned by Xiu Li Dai and Yongge Dai"),        # verbose, two owners
        DocOutput(reading.query_id, "nq-dpr:1", ""),                                           # empty
    ]


@pytest.fixture(scope="module")
def metric_label_values(doc_outputs, nq):
    queries = {q.query_id: q for q in (nq(NOBEL), nq(READING))}
    labels = metric_labels(doc_outputs, queries, ALL_METRICS)
    return labels, queries


def test_metric_labels_one_label_per_output_and_metric(metric_label_values, doc_outputs):
    labels, _ = metric_label_values
    assert len(labels) == len(doc_outputs) * len(ALL_METRICS)
    assert {x.method for x in labels} == {f"erag:{m}" for m in ("em", "f1", "accuracy", "rougeL", "bertscore")}
    for metric in ALL_METRICS:
        mine = [x for x in labels if x.method == erag_method(metric)]
        assert [(x.query_id, x.passage_id) for x in mine] == [(o.query_id, o.passage_id) for o in doc_outputs]
        assert all(0.0 <= x.value <= 1.0 for x in mine)
        if metric in BINARY_METRICS:
            assert {x.value for x in mine} <= {0.0, 1.0}


def test_metric_labels_match_the_text_metrics(metric_label_values, doc_outputs):
    labels, queries = metric_label_values
    value = {(x.method, x.passage_id, x.query_id): x.value for x in labels}
    for o in doc_outputs:
        answers = queries[o.query_id].answers
        for metric, function in (("em", exact_match), ("f1", token_f1), ("accuracy", answer_accuracy),
                                 ("rougeL", rouge_l)):
            assert value[(f"erag:{metric}", o.passage_id, o.query_id)] == pytest.approx(function(o.output, answers))


def test_metric_labels_worked_values(metric_label_values, nq):
    labels, _ = metric_label_values
    nobel, reading = nq(NOBEL), nq(READING)
    value = {(x.method, x.query_id, x.passage_id): x.value for x in labels}
    exact, verbose = (nobel.query_id, "nq-dpr:1"), (nobel.query_id, nobel.gold_passage_ids[0])
    owners, empty = (reading.query_id, "nq-dpr:6"), (reading.query_id, "nq-dpr:1")
    assert value[("erag:em", *exact)] == 1.0 and value[("erag:em", *verbose)] == 0.0
    assert value[("erag:accuracy", *verbose)] == 1.0  # the verbose answer contains the gold answer
    # verbose: [in, 1901, to, wilhelm, conrad, röntgen] vs [wilhelm, conrad, röntgen]: P = 3/6, R = 1, F1 = 2/3.
    assert value[("erag:f1", *verbose)] == pytest.approx(2 / 3)
    # owners vs "Xiu Li Dai": 8 tokens (owned by xiu li dai and yongge dai), LCS = overlap = 3, P = 3/8, R = 1:
    # F = 2 * (3/8) / (11/8) = 6/11 for both ROUGE-L and token F1 (the best of the four answers).
    assert value[("erag:rougeL", *owners)] == pytest.approx(6 / 11)
    assert value[("erag:f1", *owners)] == pytest.approx(6 / 11)
    # BERTScore: the exact answer scores 1, the verbose one less but more than the wrong one.
    assert value[("erag:bertscore", *exact)] == pytest.approx(1.0, abs=1e-5)
    wrong = (nobel.query_id, "nq-dpr:2")
    assert value[("erag:bertscore", *exact)] > value[("erag:bertscore", *verbose)] > value[("erag:bertscore", *wrong)]
    # An empty output scores 0 under every metric.
    assert all(value[(f"erag:{m}", *empty)] == 0.0 for m in ALL_METRICS)


def test_unknown_metric_is_refused_with_the_choices(nq):
    with pytest.raises(ValueError, match="unknown downstream metric 'bleu'; choose one of em, f1, accuracy, rougeL, "
                                         "bertscore"):
        score_outputs("bleu", ["Wilhelm Conrad Röntgen"], [nq(NOBEL).answers])
    with pytest.raises(ValueError, match="unknown downstream metric 'bleu'"):
        EragSettings(metric="bleu")
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        EragSettings(k=0)


@pytest.mark.model
def test_score_outputs_bertscore_equals_a_scorer_on_the_same_model(nq, bert_scorer):
    outputs = ["Wilhelm Conrad Röntgen", "Röntgen", "Stockholm"]
    answers = [nq(NOBEL).answers] * 3
    assert score_outputs("bertscore", outputs, answers) == pytest.approx(
        bert_scorer.score_many(outputs, answers), abs=1e-5)


# -------------------------------------------------------------------------------------- text metrics


def test_rouge_l_worked_examples(nq):
    reading = nq(READING)
    # "Xiu Li Dai" vs "Dai Xiuli": LCS {dai} = 1, P = 1/3, R = 1/2, F = 0.4; vs "Xiu Li Dai" itself: 1.
    assert rouge_l("Xiu Li Dai", ["Dai Xiuli"]) == pytest.approx(0.4)
    assert rouge_l("Xiu Li Dai", reading.answers) == 1.0
    # Order matters for the LCS: "Dai Li Xiu" vs "Xiu Li Dai" shares only one in-order token, F = 1/3.
    assert rouge_l("Dai Li Xiu", ["Xiu Li Dai"]) == pytest.approx(1 / 3)
    assert rouge_l("Xiu Li Dai", []) == 0.0


def test_rouge_l_of_an_identical_non_latin_answer_is_1(corpus):
    # A real NQ-open question whose gold answers are Japanese titles.
    (query,) = [q for q in corpus.nq_queries if "異世界はスマートフォンとともに" in q.answers]
    assert exact_match("異世界はスマートフォンとともに", query.answers) == 1.0
    assert rouge_l("異世界はスマートフォンとともに", query.answers) == 1.0


def test_answer_accuracy_on_token_bounds(nq):
    nobel = nq(NOBEL)
    assert answer_accuracy("It went to Wilhelm Conrad Röntgen, of Germany.", nobel.answers) == 1.0
    assert answer_accuracy("Röntgen", nobel.answers) == 0.0  # only part of the answer
    assert answer_accuracy("Wilhelm Conrad Röntgenium", nobel.answers) == 0.0  # not on a token bound
    assert answer_accuracy("Wilhelm Conrad Röntgen", []) == 0.0


# ---------------------------------------------------------------------------------------------- BERTScore


def test_greedy_match_f1_on_hand_made_unit_vectors():
    e1, e2 = np.eye(2)
    # candidate [e1, e2] vs reference [e1]: P = mean(1, 0) = 1/2, R = max(1, 0) = 1, F = 2 * 0.5 / 1.5 = 2/3.
    assert greedy_match_f1(np.stack([e1, e2]), np.stack([e1])) == pytest.approx(2 / 3)
    # and the other way round: P = 1, R = 1/2, same F.
    assert greedy_match_f1(np.stack([e1]), np.stack([e1, e2])) == pytest.approx(2 / 3)
    # one token each at 45 degrees: P = R = cos 45° = 1/sqrt(2) = F.
    diagonal = (e1 + e2) / math.sqrt(2)
    assert greedy_match_f1(np.stack([e1]), np.stack([diagonal])) == pytest.approx(1 / math.sqrt(2))
    assert greedy_match_f1(np.stack([e1, e2]), np.stack([e2, e1])) == pytest.approx(1.0)  # order-free matching
    assert greedy_match_f1(np.stack([e1]), np.stack([-e1])) == 0.0  # P + R <= 0
    assert greedy_match_f1(np.empty((0, 2)), np.stack([e1])) == 0.0
    assert greedy_match_f1(np.stack([e1 * (1 + 1e-7)]), np.stack([e1])) == 1.0  # clipped at 1


class CountingEncoder:
    """Forwards to the MiniLM encoder and counts which texts were turned into token vectors."""

    def __init__(self, encoder):
        self.encoder, self.model_id, self.texts = encoder, encoder.model_id, []

    def token_vectors(self, texts):
        self.texts.extend(texts)
        return self.encoder.token_vectors(texts)


@pytest.mark.model
def test_bert_scorer_on_real_answers(nq, encoder):
    nobel, beast = nq(NOBEL), nq(BEAST)
    counting = CountingEncoder(encoder)
    scorer = BertScorer(counting)
    assert scorer.model_id == f"bertscore-f1:{encoder.model_id}:last-layer:no-idf"
    identical, partial, other = scorer.score_many(["Wilhelm Conrad Röntgen", "Röntgen", "Dan Stevens"],
                                                  [nobel.answers] * 3)
    assert identical == pytest.approx(1.0, abs=1e-5) and 1.0 > partial > other >= 0.0
    # The maximum over the gold answers: adding the right answer to a wrong list lifts the score to 1.
    assert scorer("Dan Stevens", ["Robby Benson", *beast.answers]) == pytest.approx(1.0, abs=1e-5)
    assert scorer("Dan Stevens", ["Robby Benson"]) < 0.9
    assert scorer("", nobel.answers) == 0.0
    # Each distinct text is encoded once, whitespace-stripped, however often it is scored.
    assert counting.texts.count("Wilhelm Conrad Röntgen") == 1 and counting.texts.count("Dan Stevens") == 1
    with pytest.raises(ValueError, match="2 predictions but 1 answer lists"):
        scorer.score_many(["a", "b"], [nobel.answers])


# ------------------------------------------------------------------------------------ LLM relevance labels


def relevance_reply(prompt: str) -> str:
    """A stub relevance judge: Yes when the passage names Röntgen or Dan Stevens, a rambling non-answer for the
    Robby Benson page, else No."""
    final = prompt.rsplit("\n\n", 1)[-1]
    if "Title: Robby Benson" in final:
        return "Robby Benson voiced the Beast in 1991"
    return "Yes, it does." if ("Röntgen" in final or "Dan Stevens" in final) else "No"


def test_llm_relevance_labels_with_evidence(corpus, nq, passages):
    nobel, beast = nq(NOBEL), nq(BEAST)
    benson = next(p.passage_id for p in corpus.passages if p.title == "Robby Benson")
    rankings = {nobel.query_id: ranking(nobel.query_id, ["nq-dpr:1", "nq-dpr:2", "nq-dpr:6"]),
                beast.query_id: ranking(beast.query_id, [benson, "nq-dpr:328", "nq-dpr:2"])}
    generator = RecordingGenerator(relevance_reply, model_id="stub:relevance/v1")
    progress = []
    labels, evidence, unparsed = compute_judge_labels([nobel, beast], rankings, passages, generator, k=2,
                                                              batch_size=3, on_progress=lambda *a: progress.append(a))
    # Only the top k=2 of each ranking are judged; the reply about Robby Benson is neither Yes nor No: no label.
    assert [(x.query_id, x.passage_id, x.value) for x in labels] == [
        (nobel.query_id, "nq-dpr:1", 1.0), (nobel.query_id, "nq-dpr:2", 0.0),
        (beast.query_id, "nq-dpr:328", 1.0)]
    assert {x.method for x in labels} == {x.method for x in evidence} == {LLM_RELEVANCE}
    notes = {e.passage_id: e.evidence for e in evidence}
    assert notes["nq-dpr:1"] == "stub:relevance/v1 replied 'Yes, it does.'"
    assert notes["nq-dpr:2"] == "stub:relevance/v1 replied 'No'"
    # The reply is cut at 3 words (max_new_tokens=3) and, being neither Yes nor No, is unparsed, never "not relevant".
    assert benson not in notes
    assert [(u.judge, u.model, u.query_id, u.item, u.answer) for u in unparsed] == [
        (LLM_RELEVANCE, "stub:relevance/v1", beast.query_id, benson, "Robby Benson voiced")]
    assert [len(p) for p, _ in generator.requests] == [3, 1] and progress == [(3, 4), (4, 4)]
    assert all(settings.max_new_tokens == 3 for _, settings in generator.requests)
    final = generator.prompts[0].rsplit("\n\n", 1)[-1]
    assert final.startswith(f"Question: {NOBEL}\nTitle: List of Nobel laureates in Physics\nPassage: The first")
    assert final.endswith("\nRelevant:")


# ------------------------------------------------------------------------------------ graded measures


def test_measure_names_graded_and_binary():
    assert measure_names((1, 5)) == ["P@1", "R@1", "AP@1", "RR@1", "nDCG@1", "Hit@1",
                                     "P@5", "R@5", "AP@5", "RR@5", "nDCG@5", "Hit@5", "Rprec"]
    assert measure_names((1, 5), graded=True) == ["P@1", "nDCG@1", "Hit@1", "P@5", "nDCG@5", "Hit@5"]


@pytest.mark.parametrize(("method", "graded"), [
    ("erag:em", False), ("erag:accuracy", False), ("erag:f1", True), ("erag:rougeL", True),
    ("erag:bertscore", True), ("gold", False), ("contains_answer", False), ("llm_relevance", False)])
def test_is_graded_method(method, graded):
    assert is_graded_method(method) is graded


def test_graded_methods_get_only_p_ndcg_hit(nq):
    nobel = nq(NOBEL)
    ids = ["nq-dpr:2", "nq-dpr:1", "nq-dpr:6"]
    rankings = {nobel.query_id: ranking(nobel.query_id, ids)}
    graded = [0.5, 1.0, 0.0]  # e.g. token F1 of each passage's single-passage answer
    labels = [Label("erag:f1", nobel.query_id, pid, v) for pid, v in zip(ids, graded)]
    labels += [Label("erag:em", nobel.query_id, pid, v) for pid, v in zip(ids, [0.0, 1.0, 0.0])]
    values = compute_measure_values(labels, rankings, (1, 3))
    by_method: dict[str, dict[str, float]] = {}
    for v in values:
        by_method.setdefault(v.method, {})[v.measure] = v.value
    assert set(by_method["erag:f1"]) == {"P@1", "nDCG@1", "Hit@1", "P@3", "nDCG@3", "Hit@3"}
    assert set(by_method["erag:em"]) == set(measure_names((1, 3)))
    f1 = by_method["erag:f1"]
    # P@k = mean label, Hit@k = max label, nDCG with graded gains over the ideal order (1.0, 0.5, 0).
    assert f1["P@1"] == 0.5 and f1["P@3"] == pytest.approx(0.5) and f1["Hit@1"] == 0.5 and f1["Hit@3"] == 1.0
    dcg, ideal = 0.5 + 1.0 / math.log2(3), 1.0 + 0.5 / math.log2(3)
    # At cutoff 1 only the top passage's label exists (eRAG defines G_q on R_1): the ideal order is (0.5,).
    assert f1["nDCG@3"] == pytest.approx(dcg / ideal) and f1["nDCG@1"] == pytest.approx(1.0)
    em = by_method["erag:em"]
    assert em["RR@3"] == 0.5 and em["AP@3"] == 0.5 and em["R@1"] == 0.0 and em["Rprec"] == 0.0
    assert em["R@3"] == em["Hit@3"] == 1.0  # R = Hit for list-bound binary labels, as in eRAG's Table 1


def test_users_extra_measures_follow_the_same_rules(nq):
    nobel = nq(NOBEL)
    ids = ["nq-dpr:2", "nq-dpr:1", "nq-dpr:6"]
    rankings = {nobel.query_id: ranking(nobel.query_id, ids)}
    labels = [Label("erag:f1", nobel.query_id, pid, v) for pid, v in zip(ids, [0.5, 1.0, 0.0])]
    labels += [Label("erag:em", nobel.query_id, pid, v) for pid, v in zip(ids, [0.0, 1.0, 0.0])]
    extras = ["P(rel=0.5)@3", "AP(rel=1)", "DCG@3", "nDCG@3", "Bpref", "P@1"]
    values = compute_measure_values(labels, rankings, (1, 3), extra_measures=extras)
    by_method: dict[str, dict[str, float]] = {}
    for v in values:
        assert v.measure not in by_method.get(v.method, {}), "a measure stored twice"
        by_method.setdefault(v.method, {})[v.measure] = v.value
    # Graded labels get the extras defined for them (rel= makes any measure binary); Bpref needs 0/1 labels.
    assert set(by_method["erag:f1"]) == set(measure_names((1, 3), graded=True)) | {
        "P(rel=0.5)@3", "AP(rel=1)", "DCG@3"}
    assert set(by_method["erag:em"]) == set(measure_names((1, 3))) | {"P(rel=0.5)@3", "AP(rel=1)", "DCG@3",
                                                                      "Bpref"}
    f1, em = by_method["erag:f1"], by_method["erag:em"]
    assert f1["P(rel=0.5)@3"] == pytest.approx(2 / 3) and f1["AP(rel=1)"] == 0.5
    assert f1["DCG@3"] == pytest.approx(0.5 + 1 / math.log2(3))
    assert em["Bpref"] == 0.0  # the relevant passage has one of the two judged non-relevant ones above it
    with pytest.raises(ValueError, match="unknown measure 'Prec'"):
        compute_measure_values(labels, rankings, (1,), extra_measures=["Prec@5"])


# ------------------------------------------------------------------------------------------- E2E sweep


def test_compute_e2e_at_a_chosen_k(nq, passages):
    nobel, beast = nq(NOBEL), nq(BEAST)
    rankings = {nobel.query_id: ranking(nobel.query_id, ["nq-dpr:1", "nq-dpr:2", "nq-dpr:6"]),
                beast.query_id: ranking(beast.query_id, ["nq-dpr:2", "nq-dpr:328", "nq-dpr:6"])}
    # The fake LLM answers with the first gold answer shown anywhere in the prompt's last block, else "unknown".
    answers = [*nobel.answers, *beast.answers]

    def reader(prompt):
        final = prompt.rsplit("\n\n", 1)[-1]
        return next((a for a in answers if contains_answer(final, [a])), "unknown")

    generator = RecordingGenerator(reader)
    settings = EragSettings(k=3)
    at_1 = compute_e2e([nobel, beast], rankings, passages, generator, settings, k=1)
    at_default = compute_e2e([nobel, beast], rankings, passages, generator, settings)
    assert [o.k for o in at_1] == [1, 1] and [o.k for o in at_default] == [3, 3]
    finals = [p.rsplit("\n\n", 1)[-1] for p in generator.prompts]
    assert [f.count("Passage:") for f in finals] == [1, 1, 3, 3]
    # Beast: the gold passage is at rank 2, so only the top-3 prompt shows Dan Stevens.
    assert [(o.output, o.score) for o in at_1] == [("Wilhelm Conrad Röntgen", 1.0), ("unknown", 0.0)]
    assert [(o.output, o.score) for o in at_default] == [("Wilhelm Conrad Röntgen", 1.0), ("Dan Stevens", 1.0)]
    # The score is the settings' metric.
    f1 = compute_e2e([nobel], rankings, passages, RecordingGenerator(lambda p: "Röntgen"),
                     EragSettings(k=3, metric="f1"), k=2)
    assert f1[0].k == 2 and f1[0].score == pytest.approx(0.5)  # P = 1, R = 1/3


# ------------------------------------------------------------------------------------- reference labels


def test_gold_page_labels_count_other_versions_of_the_gold_page(corpus, nq, passages):
    song = nq("who sings got my mind set on you")
    (gold_id,) = song.gold_passage_ids
    # wiki18:89 is the DPR wiki-18 copy of the gold paragraph: same page title, another id.
    assert passages["wiki18:89"].title == passages[gold_id].title
    flash = nq("what is the most current adobe flash player version")
    (flash_gold,) = flash.gold_passage_ids
    untitled = next(p.passage_id for p in corpus.passages if p.title == "" and p.passage_id != flash_gold)
    assert passages[flash_gold].title == ""  # the NQ long answer of this question has no page title
    rankings = {song.query_id: ranking(song.query_id, ["nq-dpr:1", "wiki18:89", "nq-dpr:2"]),
                flash.query_id: ranking(flash.query_id, [untitled, "nq-dpr:1"])}
    labels = compute_reference_labels([song, flash], rankings, passages, k=3)
    page = {(x.query_id, x.passage_id): x.value for x in labels if x.method == GOLD_PAGE}
    assert page == {(song.query_id, gold_id): 1.0, (song.query_id, "nq-dpr:1"): 0.0,
                    (song.query_id, "wiki18:89"): 1.0, (song.query_id, "nq-dpr:2"): 0.0,
                    # an empty title is no page: the untitled passage is not the untitled gold passage's page
                    (flash.query_id, flash_gold): 1.0, (flash.query_id, untitled): 0.0,
                    (flash.query_id, "nq-dpr:1"): 0.0}
    gold = {(x.query_id, x.passage_id) for x in labels if x.method == GOLD}
    assert gold == {(song.query_id, gold_id), (flash.query_id, flash_gold)}
    assert not is_graded_method(GOLD_PAGE)
