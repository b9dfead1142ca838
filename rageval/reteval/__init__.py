"""LLM-retEval: judge a retriever by whether its top-k yields the answer the gold passages yield.

Alinejad et al., "Evaluating the Retrieval Component in LLM-Based Question Answering Systems" (2024):

1. the RAG LLM answers the question from the retrieved top-k passages;
2. the same LLM answers it from the gold passages alone, ``n`` times at temperature > 0 (the paper: 3 times at
   0.5) so that several correct answers of a multi-answer question are covered: the *semi-gold* answers;
3. a judge says **Yes** when the top-k answer matches the semi-gold answers, else **No**.

The LLM-retEval score at k is the mean of the Yes verdicts over queries. Next to it the paper reports Recall@k,
Precision@k and F1@k against the gold passages and the QA accuracy of the top-k answer against the dataset's
gold answers (the same judge, references = gold answers).

The pieces: the semi-gold answers of step 2 (``semi_gold``), the judges of step 3 (``judges``: an LLM, exact
match, token F1, embedding cosine, each with its evidence), the failure cases A-F decided by explicit rules over
stored facts (``failures``: A-C failures of the classic recall metric, D-F of LLM-retEval), the paper's Tables
1-2 (``tables``) and a run's settings (``settings``).
"""

from rageval.reteval.failures import (
                                      CATEGORY_NAMES,
                                      NEAR_DUPLICATE_OVERLAP,
                                      RECALL_FAILURES,
                                      RETEVAL_FAILURES,
                                      QueryFacts,
                                      classify_failures,
                                      find_failure_cases,
                                      matched_gold_answers,
                                      text_overlap,
)
from rageval.reteval.judges import (
                                      GOLD_ANSWERS,
                                      JUDGE_NAMES,
                                      SEMI_GOLD,
                                      SHORT_REPLY,
                                      EmbeddingJudge,
                                      ExactMatchJudge,
                                      Judge,
                                      JudgeResult,
                                      LLMJudge,
                                      TokenF1Judge,
                                      judge_answers,
                                      make_judge,
)
from rageval.reteval.semi_gold import SemiGoldSettings, distinct_answers, sample_semi_gold
from rageval.reteval.settings import RetEvalSettings
from rageval.reteval.tables import recall_precision_f1, reteval_table

__all__ = [
    "CATEGORY_NAMES", "GOLD_ANSWERS", "JUDGE_NAMES", "NEAR_DUPLICATE_OVERLAP", "RECALL_FAILURES", "RETEVAL_FAILURES",
    "SEMI_GOLD", "SHORT_REPLY", "EmbeddingJudge", "ExactMatchJudge", "Judge", "JudgeResult", "LLMJudge",
    "QueryFacts", "RetEvalSettings", "SemiGoldSettings", "TokenF1Judge", "classify_failures", "distinct_answers",
    "find_failure_cases", "judge_answers", "make_judge", "matched_gold_answers", "recall_precision_f1",
    "reteval_table", "sample_semi_gold", "text_overlap",
]
