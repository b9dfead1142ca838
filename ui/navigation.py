"""The dashboard's pages, in one table: file, title, Material icon, URL path and sidebar section.

``app.py`` (the entry point) turns it into ``st.navigation``; links between pages (``st.page_link``) name a page by
its file (:data:`HOME`, :data:`INSPECTOR`, ...), and link columns by its URL path (:func:`page_url`). URL paths are
the ones the dashboard has always had (``/Query_inspector``), so shared links keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from rageval.team import roles


@dataclass(frozen=True)
class PageEntry:
    """One page: the script, its title in the sidebar and the browser tab, its icon, URL path and section."""

    file: str
    title: str
    icon: str
    url_path: str
    section: str
    question: str  # the one question the page answers, shown under its title
    action: str = roles.VIEW  # what a role must be allowed (rageval.team.roles) for the page to be listed and run


HOME = "app_pages/0_Home.py"
INSPECTOR = "app_pages/1_Query_inspector.py"
RETEVAL = "app_pages/2_LLM_retEval.py"
CITATIONS = "app_pages/3_Citations.py"
AGENTS = "app_pages/4_Agents_IUM.py"
CORRELATIONS = "app_pages/5_Correlations.py"
COMPARE = "app_pages/6_Compare_runs.py"
FAILURES = "app_pages/7_Failure_cases.py"
RESCORE = "app_pages/8_Re_score.py"
ANNOTATE = "app_pages/9_Annotate.py"
UPLOAD = "app_pages/10_Upload.py"
GLOSSARY = "app_pages/11_Glossary.py"
QUEUES = "app_pages/12_Queues.py"

PAGES = (
    PageEntry(HOME, "Findings", ":material/insights:", "", "Overview",
              "What does this run say about its retrieval, and how do all runs compare?"),
    PageEntry(GLOSSARY, "Glossary", ":material/menu_book:", "Glossary", "Overview",
              "What do eRAG, E2E, semi-gold, nDCG, tau or kappa mean here, and which paper defines them?"),
    PageEntry(INSPECTOR, "Query inspector", ":material/search:", "Query_inspector", "Inspect",
              "Why did this question get the answer it got: which passages helped, which misled?"),
    PageEntry(FAILURES, "Failure cases", ":material/report:", "Failure_cases", "Inspect",
              "Which queries fail, and is it the retriever or the evaluation that fails?"),
    PageEntry(RETEVAL, "LLM-retEval", ":material/gavel:", "LLM_retEval", "Inspect",
              "Does the answer from the retrieved passages match the answer from the gold passages?"),
    PageEntry(CITATIONS, "Citations", ":material/format_quote:", "Citations", "Inspect",
              "Are the statements of an attributed answer supported by the passages they cite?"),
    PageEntry(CORRELATIONS, "Correlations", ":material/scatter_plot:", "Correlations", "Analyse",
              "Which relevance labels predict whether the RAG answer is right?"),
    PageEntry(COMPARE, "Compare runs", ":material/compare_arrows:", "Compare_runs", "Analyse",
              "Is run A better than run B on the same queries, and where do they differ?"),
    PageEntry(AGENTS, "Agents (IUM)", ":material/groups:", "Agents_IUM", "Analyse",
              "Does one reranker trained on every agent's feedback beat BM25 for each agent?"),
    PageEntry(ANNOTATE, "Annotate", ":material/edit_note:", "Annotate", "Work",
              "Do people agree with the model's labels?", roles.LABEL),
    PageEntry(QUEUES, "Queues", ":material/assignment_ind:", "Queues", "Work",
              "Who labels what: sampled, overlapping annotation work, its agreement and adjudication.",
              roles.MANAGE_QUEUES),
    PageEntry(RESCORE, "Re-score", ":material/autorenew:", "Re_score", "Work",
              "Recompute a run's labels with another model or metric, in the background.", roles.RUN_JOBS),
    PageEntry(UPLOAD, "Upload", ":material/upload_file:", "Upload", "Work",
              "Bring your own questions, passages and retriever output as a run.", roles.UPLOAD),
)

#: Pages listed only on a dashboard served for a team (``rageval serve --team``): local mode keeps no audit log.
AUDIT_LOG = "app_pages/12_Audit_log.py"
TEAM_PAGES = (
    PageEntry(AUDIT_LOG, "Audit log", ":material/policy:", "Audit_log", "Work",
              "Who signed in, started or cancelled jobs, uploaded runs, created queues or adjudicated, and when?",
              roles.READ_AUDIT),
)

BY_FILE = {page.file: page for page in PAGES + TEAM_PAGES}


def page_url(file: str, **params: str) -> str:
    """The relative URL of the page ``file`` with ``params`` as its query string (for link columns)."""
    path = BY_FILE[file].url_path
    return path + ("?" + urlencode(params) if params else "")

def glossary_url(anchor: str) -> str:
    """The relative URL of one glossary term (``Glossary#ndcg``; the anchors are :func:`ui.glossary.terms`')."""
    return f"{BY_FILE[GLOSSARY].url_path}#{anchor}"


#: The browser tab's icon (a magnifier over bars, drawn for rageval), a local file so that no font server is asked.
FAVICON = Path(__file__).resolve().parent.parent / "assets" / "favicon.png"
