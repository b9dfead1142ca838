"""Typed, validating readers for the shipped data files (``data/``, see ``data/README.md``).

The constants give each file's path relative to the data folder (``rageval.paths.DATA_DIR``).
"""

from rageval.data.loaders import (
    HagridAnswer,
    HagridQuote,
    HagridRecord,
    HagridRetrieved,
    HagridRunRecord,
    HagridSentence,
    HotpotContext,
    HotpotRecord,
    KiltProvenance,
    KiltRecord,
    NliPair,
    NqGoldRecord,
    NqOracleRecord,
    iter_jsonl_gz,
    parse_title_contents,
    read_corpus_2wiki,
    read_corpus_wiki18,
    read_hagrid,
    read_hagrid_run,
    read_hotpotqa,
    read_json_gz,
    read_kilt,
    read_nli_pairs,
    read_nq_open_gold,
    read_nq_open_oracle,
)

NQ_GOLD_FILE = "nq_open/nq_open_gold_test_2889.json.gz"
NQ_ORACLE_FILE = "nq_open/nq_open_oracle_psgs_w100.jsonl.gz"
HOTPOTQA_FILE = "hotpotqa/hotpotqa_dev400_distractor.jsonl.gz"
HAGRID_FILE = "hagrid/hagrid_dev.jsonl.gz"
HAGRID_RUN_FILE = "hagrid/hagrid_dev_run_bm25_monot5_top2.jsonl.gz"
KILT_HOTPOTQA_FILE = "kilt/hotpotqa-dev-kilt.jsonl.gz"
KILT_WOW_FILE = "kilt/wow-dev-kilt.jsonl.gz"
CORPUS_2WIKI_FILE = "corpus/2wikimultihopqa_corpus.json.gz"
CORPUS_WIKI18_FILE = "corpus/wiki18_100w_sample1000.jsonl.gz"
NLI_FILES = {
    "snli": "nli/snli_dev_test.jsonl.gz",
    "fever": "nli/fever_nli_dev_2way.jsonl.gz",
    "climate_fever": "nli/climate_fever.jsonl.gz",
    "covidfact": "nli/covidfact_rte.jsonl.gz",
    "healthver": "nli/healthver.jsonl.gz",
    "glue_rte": "nli/glue_rte.jsonl.gz",
    # Longer premises and more domains (issue 17; provenance and licences in data/README.md).
    "fever_docnli": "nli/fever_docnli_2way.jsonl.gz",
    "mnli_docnli": "nli/mnli_docnli_2way.jsonl.gz",
    "mctest": "nli/mctest_nli_2way.jsonl.gz",
    "drop": "nli/drop_nli_2way.jsonl.gz",
    "control": "nli/control_nli.jsonl.gz",  # CC BY-NC-SA 4.0: evaluation only for a shipped model
    "summedits": "nli/summedits_2way.jsonl.gz",  # dev and test only
    "vitaminc": "nli/vitaminc_test.jsonl.gz",  # test only
    "anli": "nli/anli_test.jsonl.gz",  # test only; CC BY-NC 4.0
}
#: Sources whose licence is non-commercial: a model that ships with the product never learns from them.
NON_COMMERCIAL_NLI_SOURCES = frozenset({"control", "anli"})

__all__ = [
    "CORPUS_2WIKI_FILE", "CORPUS_WIKI18_FILE", "HAGRID_FILE", "HAGRID_RUN_FILE", "HOTPOTQA_FILE",
    "KILT_HOTPOTQA_FILE", "KILT_WOW_FILE", "NLI_FILES", "NON_COMMERCIAL_NLI_SOURCES", "NQ_GOLD_FILE", "NQ_ORACLE_FILE",
    "HagridAnswer", "HagridQuote", "HagridRecord", "HagridRetrieved", "HagridRunRecord", "HagridSentence",
    "HotpotContext", "HotpotRecord", "KiltProvenance", "KiltRecord", "NliPair", "NqGoldRecord", "NqOracleRecord",
    "iter_jsonl_gz", "parse_title_contents", "read_corpus_2wiki", "read_corpus_wiki18", "read_hagrid",
    "read_hagrid_run", "read_hotpotqa", "read_json_gz", "read_kilt", "read_nli_pairs", "read_nq_open_gold",
    "read_nq_open_oracle",
]
