"""The dashboard's jargon, one line each with where it comes from: the Glossary page (``app_pages/11_Glossary.py``)
shows every :func:`terms` entry under a heading whose anchor is the entry's ``anchor``, so help texts can link to
one term (:func:`ui.navigation.glossary_url`, ``Glossary#ndcg``). Pure data: no streamlit import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rageval.labelmethods import registered
from rageval.reteval import CATEGORY_NAMES, RECALL_FAILURES


@dataclass(frozen=True)
class Term:
    """One glossary entry: its anchor (lower case, URL-safe), its name, a one-line definition and its source."""

    anchor: str
    name: str
    definition: str
    source: str
    section: str


_EVAL = "Evaluating retrieval"
_MEASURES = "Ranking measures"
_STATS = "Statistics"
_CITE = "Citations"
_AGENTS = "Agents"
_METHODS = "Label methods"
_HUMAN = "Human labels and trust"

_CATEGORY_RULES = {
    "A": "a retrieved passage that is not labelled gold contains a gold answer: the labels miss correct passages",
    "B": "the retrieved passage is another version of a gold passage (same page, other text)",
    "C": "the gold passages are retrieved, yet the answer from the top-k is wrong: other passages distracted the LLM",
    "D": "even from its gold passages the LLM gives no answer that passes the gold-answer check",
    "E": "the semi-gold answers match only some of the gold answers, so a right answer can be judged wrong",
    "F": "the judge's Yes/No (top-k answer against the semi-gold answers) disagrees with the gold-answer check of "
         "both against the dataset's gold answers",
}

_TERMS_BEFORE_METHODS: tuple[Term, ...] = (
    Term("erag", "eRAG",
         "Each retrieved passage is given to the LLM on its own; its answer, scored against the gold answers "
         "(EM, F1, ...), is that passage's relevance label, and the ranking is scored with IR measures on them.",
         "Salemi & Zamani, Evaluating Retrieval Quality in Retrieval-Augmented Generation, SIGIR 2024", _EVAL),
    Term("e2e", "E2E (end-to-end)",
         "The score of the answer the LLM gives from the top-k passages together (exact match with a gold answer "
         "unless the run says otherwise): what the retrieval is for.",
         "Salemi & Zamani, SIGIR 2024 (the downstream performance eRAG correlates with)", _EVAL),
    Term("gold", "Gold labels",
         "A passage is relevant when the dataset marks it as a source of the answer (gold page: any passage of that "
         "page); the classic qrels.", "Kwiatkowski et al., Natural Questions, TACL 2019; KILT (Petroni et al. 2021)",
         _EVAL),
    Term("contains-answer", "Contains-answer",
         "A passage is relevant when its text contains one of the gold answers (normalised string match).",
         "Karpukhin et al., Dense Passage Retrieval, EMNLP 2020 (top-k answer accuracy)", _EVAL),
    Term("llm-relevance", "LLM relevance",
         "The LLM is asked whether the passage is relevant to the question (Yes/No); Yes is relevant.",
         "Salemi & Zamani, SIGIR 2024 (baseline); Thomas et al., SIGIR 2024", _EVAL),
    Term("llm-reteval", "LLM-retEval",
         "The answer from the top-k passages is judged (Yes/No) against the answer from the gold passages "
         "instead of against labels of each passage.",
         "Alinejad et al., Evaluating the Retrieval Component in LLM-Based Question Answering Systems, 2024", _EVAL),
    Term("semi-gold", "Semi-gold answer",
         "The answer the LLM gives from the question's gold passages; LLM-retEval compares the top-k answer with it.",
         "Alinejad et al. 2024, §3", _EVAL),
    Term("refined", "Refined (LLM-retEval)",
         "The questions without a recall failure (A-C) at that k; LLM-retEval's correlation with Recall@k is "
         "recomputed on them.", "Alinejad et al. 2024, Table 2", _EVAL),
    Term("failure-categories", "Failure categories A-F",
         "Why a question fails: A-C are failures of recall as measured by the labels, D-F failures of "
         "LLM-retEval itself; each question is sorted by fixed rules.", "Alinejad et al. 2024, §4", _EVAL),
    Term("gold-answer-check", "Gold-answer check (yes/no answers)",
         "How the failure rules decide that an answer gets a gold answer right: equal after SQuAD normalisation, "
         "or the gold answer contained in it as whole words; for a yes/no gold answer, the answer's first word "
         "(\"Yes, both are women's magazines.\" answers \"yes\"). LLM-retEval's em judge applies the same yes/no "
         "rule. Both in runs built by this rageval: a stored run keeps the verdicts and cases it was built with. "
         "The E2E exact-match score and eRAG labels stay strict SQuAD exact match.",
         "rageval.reteval.failures, rageval.text_metrics.yes_no_answers", _EVAL),
    *(Term(f"category-{c.lower()}", f"{c} · {name}",
           f"{_CATEGORY_RULES[c]} ({'a recall failure' if c in RECALL_FAILURES else 'an LLM-retEval failure'}).",
           "Alinejad et al. 2024, §4; rules in rageval.reteval.failures", _EVAL)
      for c, name in CATEGORY_NAMES.items()),
    Term("rr", "RR (reciprocal rank)", "1 / the rank of the first relevant passage; 0 when none is retrieved.",
         "Voorhees, The TREC-8 Question Answering Track, TREC 1999", _MEASURES),
    Term("rprec", "Rprec (R-precision)",
         "Precision at R, the number of relevant passages the question has.",
         "Buckley & Voorhees, Evaluating Evaluation Measure Stability, SIGIR 2000", _MEASURES),
    Term("ndcg", "nDCG@k", "Discounted cumulative gain of the top k (gain / log2(rank + 1)), divided by that of the "
         "ideal ranking; graded labels count by their grade.",
         "Järvelin & Kekäläinen, Cumulated Gain-Based Evaluation of IR Techniques, TOIS 2002", _MEASURES),
    Term("p-at-k", "P@k (precision at k)", "The share of the top k passages that are relevant.",
         "Manning, Raghavan & Schütze, Introduction to Information Retrieval, 2008, §8.4", _MEASURES),
    Term("hit", "Hit@k / Success@k", "1 when at least one of the top k passages is relevant, else 0.",
         "ir_measures (MacAvaney et al., ECIR 2022): Success@k", _MEASURES),
    Term("recall", "Recall@k", "The share of the question's relevant passages that are in the top k.",
         "Manning, Raghavan & Schütze 2008, §8.3", _MEASURES),
    Term("kendall-tau", "Kendall's tau-b",
         "Rank correlation in [-1, 1]: (concordant - discordant pairs) / pairs, corrected for ties; eRAG's main "
         "statistic of how well a measure predicts the E2E score across queries.",
         "Kendall, The Treatment of Ties in Ranking Problems, Biometrika 1945", _STATS),
    Term("spearman-rho", "Spearman's rho",
         "Pearson's correlation of the ranks of the two variables, in [-1, 1].",
         "Spearman, The Proof and Measurement of Association between Two Things, 1904", _STATS),
    Term("bootstrap-interval", "Bootstrap interval",
         "Resample the queries with replacement, recompute the statistic each time, and take the 2.5th and "
         "97.5th percentiles (the percentile bootstrap): the 95% intervals of the correlations.",
         "Efron & Tibshirani, An Introduction to the Bootstrap, 1993", _STATS),
    Term("student-t-interval", "Student-t interval",
         "mean ± t · s / √n: the 95% interval of a mean of graded per-query scores (nDCG, F1).",
         "Sakai, Statistical Reform in Information Retrieval?, SIGIR Forum 2014", _STATS),
    Term("wilson-interval", "Wilson interval",
         "The 95% interval of a share of 0/1 outcomes (exact match, Yes, a hit); never outside [0, 1], unlike "
         "mean ± t · s / √n.", "Wilson, JASA 1927; Newcombe, Statistics in Medicine 1998", _STATS),
    Term("mcnemar", "McNemar test",
         "Exact paired test of two systems on the same questions with 0/1 outcomes: only the questions exactly one "
         "system gets right count, against Binomial(m, 1/2).",
         "McNemar, Psychometrika 1947", _STATS),
    Term("randomization-test", "Paired randomization test",
         "Each query's difference A - B keeps its size and takes either sign at random; p is the share of sign "
         "assignments whose mean is as far from 0 as the observed one.",
         "Smucker, Allan & Carterette, A Comparison of Statistical Significance Tests for IR Evaluation, CIKM 2007",
         _STATS),
    Term("kappa", "Cohen's kappa",
         "Agreement of two labellers beyond chance: (observed - chance agreement) / (1 - chance agreement); "
         "1 perfect, 0 chance.", "Cohen, A Coefficient of Agreement for Nominal Scales, 1960", _STATS),
    Term("autoais", "AutoAIS",
         "The share of an answer's statements that an NLI model finds entailed by a passage they cite "
         "(automatic 'attributable to identified sources').",
         "Rashkin et al., Measuring Attribution in NLG Models, CL 2023; Bohnet et al., Attributed QA, 2022", _CITE),
    Term("alce", "ALCE citation recall / precision",
         "Recall: a statement is supported when its citations together entail it; precision: a citation counts "
         "when it is needed for that support.",
         "Gao et al., Enabling Large Language Models to Generate Text with Citations, EMNLP 2023", _CITE),
    Term("ium", "IUM (Iterative Utility Maximization)",
         "One reranker serves several RAG agents and is trained, round after round, on the utility each agent's "
         "answer gets from the passages it was served.",
         "Salemi & Zamani, Learning to Rank for Multiple Retrieval-Augmented Models through Iterative Utility "
         "Maximization, ICTIR 2025", _AGENTS),
    Term("urag", "uRAG",
         "A unified reranker trained on the feedback of all agents at once (one round), the baseline IUM iterates on.",
         "Salemi & Zamani, Towards a Search Engine for Machines: Unified Ranking for Multiple Retrieval-Augmented "
         "Large Language Models, SIGIR 2024", _AGENTS),
)
_TERMS_AFTER_METHODS: tuple[Term, ...] = (
    Term("ppi", "PPI (prediction-powered inference)",
         "A share of relevant passages from every passage's automatic label, corrected by the mean difference "
         "between people and the method on a random human sample; its interval is valid however poor the method "
         "(a poor one only widens it).",
         "Angelopoulos et al., Prediction-Powered Inference, Science 2023; Saad-Falcon et al., ARES, NAACL 2024",
         _HUMAN),
    Term("ppi-plus-plus", "PPI++",
         "PPI with the automatic labels weighted by a tuned λ in [0, 1] that minimises the interval's width: λ = 0 "
         "is the human labels alone, λ = 1 plain PPI; never wider than either, up to sampling noise.",
         "Angelopoulos, Duchi & Zrnic, PPI++: Efficient Prediction-Powered Inference, 2023", _HUMAN),
    Term("rogan-gladen", "Rogan–Gladen share",
         "The true share of relevant passages a method's own share implies once its recall (sensitivity) and "
         "specificity against people are known: (observed + specificity - 1) / (recall + specificity - 1).",
         "Rogan & Gladen, Estimating Prevalence from the Results of a Screening Test, Am. J. Epidemiology 1978",
         _HUMAN),
    Term("fleiss-kappa", "Fleiss' kappa",
         "Cohen's kappa for more than two labellers: the agreement beyond chance over items each labelled by the "
         "same number of people (not necessarily the same people).",
         "Fleiss, Measuring Nominal Scale Agreement Among Many Raters, Psychological Bulletin 1971", _HUMAN),
    Term("krippendorff-alpha", "Krippendorff's alpha",
         "1 - observed disagreement / disagreement expected by chance, over every item with two or more labels; "
         "any number of labellers, missing labels allowed.",
         "Krippendorff, Content Analysis, 2004 (chapter 11)", _HUMAN),
    Term("stratified-sample", "Stratified sample",
         "The passages split into groups (strata: by a method's label, or by how far the methods disagree) and a "
         "random sample drawn in each; each labelled passage then stands for population / sampled passages of its "
         "stratum, which the estimates weigh by.",
         "Cochran, Sampling Techniques, 3rd ed., 1977 (chapter 5)", _HUMAN),
    Term("neyman-allocation", "Neyman allocation",
         "How many labels each stratum gets so the estimate's variance is smallest for a total: in proportion to "
         "the stratum's size times the spread of the people's labels in it (the 'Label next' plan).",
         "Neyman, On the Two Different Aspects of the Representative Method, JRSS 1934; Cochran 1977, 5.5", _HUMAN),
    Term("adjudication", "Adjudication",
         "A decision on an item its annotators disagree on, kept apart from their labels: it becomes the item's "
         "label; without one the majority of the item's own annotators counts, and a tie is left out (listed).",
         "rageval.queues (QUEUE_LABEL_RULE)", _HUMAN),
)



def method_terms() -> tuple[Term, ...]:
    """Every label method registered now, as its kind describes it (rageval.labelmethods: one object a method): read
    at each call, so a judge file loaded or a run's stored judge read after the server started is listed too."""
    return tuple(Term(f"method-{re.sub(r'[^a-z0-9]+', '-', kind.name.lower())}", f"{kind.display} ({kind.name})",
                      kind.description, f"label method {kind.name}: {kind.source}", _METHODS)
                 for kind in registered())


def terms() -> tuple[Term, ...]:
    """Every glossary entry, in the page's order (the label methods among them as registered now)."""
    return (*_TERMS_BEFORE_METHODS, *method_terms(), *_TERMS_AFTER_METHODS)


def by_anchor() -> dict[str, Term]:
    """The entries by anchor (:func:`terms`)."""
    return {term.anchor: term for term in terms()}


#: The page's sections in order (the label methods' section included).
SECTIONS = tuple(dict.fromkeys(term.section for term in terms()))

#: Header help of the table columns whose meaning is not obvious, by their displayed name (render.render_table adds
#: it to any column so named that has no help of its own; the Glossary page explains the terms).
#: Header help of an nDCG@c column when the table holds graded label methods (``{methods}``: their names).
GRADED_NDCG_NOTE = ("Graded labels ({methods}): nDCG@c divides the DCG of the top c by the DCG of the ideal order of "
                    "the same graded labels, so it is 1.000 whenever the list is already in the order of its own "
                    "labels, however low they are; P@c (the mean label of the top c) can then be far lower")
#: Header help of an nDCG@c column when the table holds a method graded on levels (``{methods}``: each one's name,
#: levels and threshold, :func:`rageval.labelmethods.levels_text`).
SCALE_NDCG_NOTE = ("Graded levels ({methods}): nDCG@c uses the grades as gains; every other measure counts a grade "
                   "at or above the method's threshold as relevant (TREC RAG 2024's convention)")
#: Header help of an R@c column when the table holds list-bound label methods (``{methods}``: their names).
LIST_BOUND_RECALL_NOTE = ("List-bound labels ({methods}): they exist only for the retrieved passages, and at cutoff c "
                          "only the top c count, so R@c divides by the relevant passages among the top c: it equals "
                          "Hit@c and can be the same at every c (eRAG's definition, Salemi & Zamani 2024)")

COLUMN_HELP = {
    "k": "How many of the top-ranked passages the LLM was given",
    "Judge": "What compared the top-k answer with the semi-gold answers (exact match, token F1, MiniLM cosine, "
             "an LLM)",
    "Category": "LLM-retEval failure category: A-C a recall failure, D-F a failure of LLM-retEval (Glossary: "
                "failure categories)",
    "What failed": "recall (categories A-C) or LLM-retEval itself (D-F)",
    "Meaning": "What the category means (Alinejad et al. 2024, §4)",
    "Reason": "Why the rule put this query in this category, from the facts stored in the run",
    "Labels": "The relevance labels the measure is computed from (eRAG, LLM relevance, contains-answer, gold)",
    "Best measure": "The measure of these labels whose per-query values agree best with the E2E score (Kendall's "
                    "tau-b)",
    "Kendall's tau-b": "Rank correlation across queries with the E2E score, with its 95% bootstrap interval",
    "Spearman's rho": "Correlation of the ranks across queries with the E2E score, with its 95% bootstrap interval",
    "Kendall's tau": "Mean rank agreement of the two served lists (1: same order, -1: reversed)",
    "Jaccard": "Mean overlap of the two served lists: shared passages / all passages (1: the same passages)",
    "n": "How many queries (or items) the row is computed over",
    "p-value": "Two-sided exact McNemar p-value: how likely so uneven a split of the discordant queries is "
               "if both methods were equally good",
    "Only A right": "Test queries method A answers right and method B wrong (discordant, what McNemar counts)",
    "Only B right": "Test queries method B answers right and method A wrong",
    "AutoAIS cit": "Share of statements that a passage they cite entails (NLI), percent",
    "AutoAIS pssg": "Share of statements that any of the answer's passages entails (NLI), percent",
    "ALCE P": "ALCE citation precision: share of citations needed to support their statement, percent",
    "ALCE R": "ALCE citation recall: share of statements their citations jointly entail, percent",
    "Overlap P": "Share of the answer's citations that are among the gold quotes' passages, percent",
    "Overlap R": "Share of the gold quotes' passages that the answer cites, percent",
    "BLEU": "BLEU of the answer against the gold answers (0-100)",
    "ROUGE-L P": "ROUGE-L precision against the gold answers, percent",
    "ROUGE-L R": "ROUGE-L recall against the gold answers, percent",
    "ROUGE-L F": "ROUGE-L F1 against the gold answers, percent",
    "BERTScore P": "BERTScore precision (MiniLM) against the gold answers, percent",
    "BERTScore R": "BERTScore recall (MiniLM) against the gold answers, percent",
    "BERTScore F": "BERTScore F1 (MiniLM) against the gold answers, percent",
    "Pearson": "Pearson correlation of the automatic score with the human label",
    "Spearman": "Spearman correlation of the automatic score with the human label",
    "Accuracy %": "Share of items where the automatic score (≥ 0.5 as yes) equals the human label",
    "Human yes %": "Share of items the annotators labelled attributable",
    "Model yes %": "Share of items the automatic score says yes to (≥ 0.5)",
    "Cites": "The passages the statement cites, by their number in the answer's list",
    "Score %": "The agent's downstream utility of this answer, percent",
    "Utility": "How an agent's answer is scored: em exact match, contains the answer, f1 token F1",
    "Task id": "The task token the personalised engines read ([task:..] before the query)",
    "BM25": "BM25's top k, no reranking (percent)",
    "dense": "The dense retriever's top k (MiniLM), no reranking (percent)",
    "reranker-individual": "A reranker trained on this agent's feedback only (percent)",
    "reranker-dataset": "A reranker trained on the feedback of the agents of this dataset (percent)",
    "uRAG": "One reranker trained once on every agent's feedback (Glossary: uRAG; percent)",
    "offline-IUM": "The unified reranker after the offline IUM iterations (Glossary: IUM; percent)",
    "online-IUM": "The unified reranker updated online in batches (Glossary: IUM; percent)",
}
