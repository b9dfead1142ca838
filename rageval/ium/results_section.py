"""The IUM section of ``docs/results.md``: our Table 3 (per agent and macro average, McNemar), the offline
iteration curve personalised vs not (Figure 2a), the online batch-size sweep (Figure 2b) and personalisation
(Figure 5), next to the paper's numbers (Salemi & Zamani, ICTIR 2025)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from rageval.ium.experiment import (
    MAIN_METHODS,
    batch_size_curve,
    iteration_curve,
    macro_interval,
    macro_interval_table,
    personalisation_summary,
    summary_table,
)
from rageval.stats.intervals import MeanInterval
from rageval.store.ium import read_ium_run

# The paper's Table 3 macro average over its 18 agents (KILT, BM25 top 100 + reranker), in percent.
PAPER_MACRO = {"BM25": 55.38, "dense": 45.15, "reranker-individual": 59.86, "reranker-dataset": 60.43,
               "uRAG": 60.85, "offline-IUM": 61.34, "online-IUM": 61.59}
PAPER_NQ_HOTPOTQA = {  # its NQ (M1-M3) and HotPotQA (M7-M9) agents, EM
    "NQ M1": (28.05, 22.55, 36.76, 37.39, 37.82, 38.42, 38.84),
    "HotPotQA M7": (27.51, 18.80, 29.92, 30.91, 31.33, 31.41, 31.16),
}
#: The column name of each engine in the tables (the paper's names).
HEADERS = {"BM25": "BM25", "first-stage": "first stage", "dense": "dense", "reranker-individual": "reranker/agent",
           "reranker-dataset": "reranker/dataset", "uRAG": "uRAG", "offline-IUM": "offline IUM",
           "online-IUM": "online IUM"}
PAPER_METHODS = tuple(PAPER_MACRO)


def _cell(value, digits: int = 1) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def ium_sections(path: Path) -> list[str]:
    """The results.md section of one IUM run file (or a note on how to build it)."""
    out = ["## Iterative Utility Maximization (Salemi & Zamani, ICTIR 2025)", ""]
    if not path.is_file():
        return out + [f"_No IUM run at `{path}`: build it with `rageval ium`._", ""]
    settings, tables = read_ium_run(path)
    plan, config = settings["plan"], settings["plan"]["config"]
    agents, outcomes = tables["agents"], tables["outcomes"]
    from_runs = settings.get("source") == "runs"
    split = (f"{plan['num_train']} training and {plan['num_test']} test queries per agent (each run's questions split "
             f"by a seeded hash, test share {plan.get('split', {}).get('test_share')}: a question is tested for every "
             "agent of its task or for none)" if from_runs else
             f"{plan['num_train']} training and {plan['num_test']} test queries per dataset (disjoint; the agents of a "
             "dataset share them)")
    start = f"`{Path(config['init']).name}` (a warm start)" if config.get("init") else "an untrained head"
    out += [f"Run `{path.name}` built by `{settings.get('command') or 'rageval ium'}` in {settings['seconds']:.0f} s "
            f"on the 2-core CPU. Agents (task, model, k, utility" + (", run file" if from_runs else "") + "): "
            + "; ".join(f"`{r.name}` ({r.dataset}, {r.generator}, k={r.k}, {r.utility}"
                        + (f", `{getattr(r, 'run', '')}`" if from_runs else "") + ")" for r in agents.itertuples())
            + f". {split}. First stage {settings['first_stage']}; the engine is a MiniLM cross-encoder with "
            f"task/model id tokens, starting from {start}; offline IUM: T = {config['iterations']}, top "
            f"{config['train_k']} served per training query, epochs {config['epochs']}, lr {config['lr']}, 10% unk; "
            f"online IUM from the last offline checkpoint, b in {config['online_batch_sizes']} (the table uses b = "
            f"{settings['online_default_batch_size']}). Paper scale: 18 agents, KILT training sets, BM25 top 100, "
            "k = 32, T = 3, b = 256, T5/FiD agents fine-tuned per dataset.", "",
            "### Table 3: downstream score on each agent's test queries", "",
            "Mean utility of the agent's answer from its top k (EM, answer-contained or token F1), percent. McNemar "
            "(exact, outcome = score ≥ 0.5) p-values of offline IUM against each baseline are in the last table.", ""]
    table = summary_table(outcomes)
    methods = [m for m in MAIN_METHODS if m in table.columns]
    rows = [[agent, *(_cell(100 * table.loc[agent].get(m, math.nan)) for m in methods)] for agent in table.index]
    out += _table(("agent", *(HEADERS[m] for m in methods)), rows) + ["", "The paper (percent):", ""]
    out += _table(("paper", *(HEADERS[m] for m in PAPER_METHODS)),
                  [["macro average (18 agents)", *(_cell(PAPER_MACRO[m], 2) for m in PAPER_METHODS)],
                   *([name, *(_cell(v, 2) for v in values)] for name, values in PAPER_NQ_HOTPOTQA.items())]) + [""]
    intervals = macro_interval_table(outcomes, agents, methods)  # against the first stage (BM25 or the runs')
    out += macro_interval_section(intervals)
    out += _reading(table, tables["feedback"], tables["significance"], config, from_runs)
    if "offline-IUM" in intervals.index:
        gap = intervals.loc["offline-IUM"]
        out += [direction_sentence(MeanInterval(gap.difference, gap.difference_low, gap.difference_high, 0),
                                   "each run's own ranking" if from_runs else "BM25"), ""]
    significance = tables["significance"]
    wanted = significance[(significance.method_a.isin(["offline-IUM", "online-IUM"]))
                          | (significance.method_b.isin(["offline-IUM", "online-IUM"]))]
    rows = [[r.agent, f"{r.method_a} vs {r.method_b}", str(r.n), f"{r.only_a} / {r.only_b}", f"{r.p_value:.3f}"]
            for r in wanted.itertuples() if r.agent == "all agents"]
    out += ["McNemar over all agents' test queries pooled (only A right / only B right):", ""]
    out += _table(("pool", "methods", "queries", "discordant", "p"), rows) + [""]
    personalised = iteration_curve(outcomes, "offline-IUM")
    plain = iteration_curve(outcomes, "offline-IUM-nonpersonalised")
    out += ["### Offline iterations, personalised vs not (Figure 2a)", "",
            "Macro-average downstream score (percent) after each iteration; t = 0 is "
            + ("each run's own ranking" if from_runs else "BM25") + ".", ""]
    out += _table(("t", "personalised (task/model ids)", "non-personalised"),
                  [[str(t), _cell(100 * personalised.get(t, math.nan)), _cell(100 * plain.get(t, math.nan))]
                   for t in sorted(set(personalised.index) | set(plain.index))]) + [""]
    out += ["### Online batch size (Figure 2b)", ""]
    out += _table(("b", "macro average %"), [[str(b), _cell(100 * v)] for b, v in batch_size_curve(outcomes).items()])
    out += [""]
    personalisation = tables["personalisation"]
    if len(personalisation):
        grouped = personalisation_summary(personalisation, agents)
        out += ["### Personalisation (Figure 5)", "",
                "Between the lists two agents of one dataset are served for the same test query (top min(k) of "
                "each): mean Kendall's tau (absent items tied last) and Jaccard. The paper: about 20% of the "
                "documents differ between agents, with low tau.", ""]
        out += _table(("engine", "agent A", "agent B", "Kendall tau", "Jaccard"),
                      [[r.method, r.agent_a, r.agent_b, _cell(r.kendall_tau, 3), _cell(r.jaccard, 3)]
                       for r in grouped.itertuples()])
        out += [""]
    return out


def format_interval(value: float, low: float, high: float, signed: bool = False) -> str:
    """A fraction and its interval in percent, ``12.3 [10.1, 14.5]`` (points with a sign, ``+1.2 [-0.4, +2.9]``,
    when ``signed``); the value alone without an interval, an en dash without a value."""
    if math.isnan(value):
        return "–"
    form = "+.1f" if signed else ".1f"
    if math.isnan(low):
        return f"{100 * value:{form}}"
    return f"{100 * value:{form}} [{100 * low:{form}}, {100 * high:{form}}]"


def _interval(result: MeanInterval, signed: bool = False) -> str:
    return format_interval(result.mean, result.low, result.high, signed)


def macro_interval_section(table) -> list[str]:
    """Markdown of :func:`rageval.ium.experiment.macro_interval_table`: each engine's macro average with its 95%
    interval and its difference from the first stage (the row without one) on the same test questions."""
    base = next(method for method, r in table.iterrows() if math.isnan(r.difference))
    rows = [[HEADERS.get(method, method), format_interval(r.macro, r.low, r.high),
             "–" if method == base else format_interval(r.difference, r.difference_low, r.difference_high, True)]
            for method, r in table.iterrows()]
    header = HEADERS.get(base, base)
    return ([f"Macro average (percent) with a 95% bootstrap interval (2,000 resamples of the test questions within "
             f"each task, one draw shared by the agents of a task), and each engine minus {header} on the same "
             "questions (points):", ""]
            + _table(("engine", "macro average %", f"minus {header}"), rows) + [""])


def ablation_section(arms: Sequence[tuple[str, Path]], base: str = "first-stage") -> list[str]:
    """Markdown: one row per arm of a label ablation (``arms``: label and the JSON file ``rageval ium --runs ...
    --label-ablation`` wrote): its warm start, its iteration-1 feedback, the macro average of offline IUM after
    iteration 1 and after the last (T), of ``base`` (each the mean eRAG label of the served top k), and T minus
    ``base``, each with its interval; arms whose file is missing are listed as not built."""
    from rageval.ium.run_file_agents import read_label_ablation

    rows = []
    for label, path in arms:
        if not path.is_file():
            rows.append([label, f"_not built: `{path.name}`_", "", "", "", "", ""])
            continue
        arm = read_label_ablation(path)
        settings, outcomes, agents = arm.settings, arm.outcomes, arm.agents
        last = f"offline-IUM@t{settings['config']['iterations']}"
        init = settings["config"].get("init")
        rows.append([label, f"`{Path(init).name}`" if init else "untrained head",
                     f"{settings['first_feedback_rows']:,} ({settings['first_feedback_positive']:,} positive)",
                     _interval(macro_interval(outcomes, agents, "offline-IUM@t1")),
                     _interval(macro_interval(outcomes, agents, last)),
                     _interval(macro_interval(outcomes, agents, base)),
                     _interval(macro_interval(outcomes, agents, last, base), signed=True)])
    return _table(("arm", "engine starts from", "iteration-1 feedback rows", "offline IUM t=1 %",
                   "offline IUM t=T %", f"{HEADERS.get(base, base)} %", "t=T minus first stage (points)"),
                  rows) + [""]


def direction_sentence(difference, base_name: str) -> str:
    """One honest sentence on the paper's claim (offline IUM above the first stage) from the difference's interval:
    it holds when the whole interval is above 0, is contradicted when the whole interval is below 0, and is not
    decided otherwise."""
    if math.isnan(difference.mean) or math.isnan(difference.low):
        return "**The paper's direction** cannot be read from this run (no interval on the difference)."
    span = f"offline IUM minus {base_name}: {_interval(difference, signed=True)} points"
    if difference.low > 0:
        return f"**The paper's direction holds here**: {span}, the whole 95% interval above zero."
    if difference.high < 0:
        return f"**The paper's direction does not hold here**: {span}, the whole 95% interval below zero."
    return (f"**The paper's direction is neither shown nor refuted here**: {span}; the 95% interval contains zero "
            f"({'above' if difference.mean > 0 else 'at or below'} it on the point estimate).")


def _reading(table, feedback, significance, config, from_runs: bool = False) -> list[str]:
    """What the run says, in numbers read from it: where offline IUM stands against the first stage (BM25, or each
    run's own ranking), and how much signal the engine had to learn from (the share of positive feedback of offline
    iteration 1)."""
    macro = table.loc["macro average"]
    base, base_name = ("first-stage", "the first stage") if from_runs else ("BM25", "BM25")
    first = feedback[feedback.phase == "offline-IUM@t1"]
    positive = first.groupby("agent").utility.apply(lambda u: (u > 0).mean())
    pooled = significance[(significance.agent == "all agents") & (significance.method_a == base)
                          & (significance.method_b == "offline-IUM")]
    p_value = f", McNemar p = {pooled.p_value.iloc[0]:.3f}" if len(pooled) else ""
    verdict = "above" if macro.get("offline-IUM", math.nan) > macro.get(base, math.nan) else "not above"
    rows = ("every eRAG label the runs hold on the training questions' candidates" if from_runs else
            f"each agent's BM25 top {config['train_k']} of each training query")
    text = (f"**Reading.** Offline IUM is {verdict} {base_name} on this run (macro average "
            f"{_cell(100 * macro.get('offline-IUM', math.nan))} vs {_cell(100 * macro.get(base, math.nan))}"
            f"{p_value}). {'Of' if from_runs else 'The engine learns from little signal: of'} the {len(first):,} "
            f"feedback rows of offline iteration 1 ({rows}), "
            f"{(first.utility > 0).mean():.1%} are positive ("
            + ", ".join(f"{agent} {share:.0%}" for agent, share in positive.items()) + ")")
    if from_runs:
        return [text + "."]
    return [text + f", and its head starts untrained, so with {int((first.utility > 0).sum())} positive rows it "
            "reorders BM25's candidates by little more than noise; the paper trains on KILT training sets with 32 "
            "passages of feedback per query. The GPU preset (`rageval ium --preset full`: 300 training queries per "
            "dataset, k = 32, T = 3, all layers) is the configuration that can test the paper's claim; this CPU run "
            "shows the machinery end to end."]


def power_scenarios(base_rates: Sequence[float], psi: float | None = None
                    ) -> list[tuple[str, float, float, float | None]]:
    """McNemar power scenarios (:func:`rageval.stats.power.power_table`) for differences of the paper's size
    over each base accuracy: its macro gain of offline IUM over BM25 in points (61.34 - 55.38) and as a ratio
    (x 1.108), each with independent outcomes and, where possible, the discordant proportion ``psi`` measured on a
    run (the share of test queries on which the two engines disagree)."""
    gain = PAPER_MACRO["offline-IUM"] - PAPER_MACRO["BM25"]
    ratio = PAPER_MACRO["offline-IUM"] / PAPER_MACRO["BM25"]
    scenarios: list[tuple[str, float, float, float | None]] = []
    for base in base_rates:
        for label, better in ((f"+{gain:.2f} points", base + gain / 100), (f"x {ratio:.3f}", base * ratio)):
            scenarios.append((f"{base:.0%} -> {better:.1%} ({label}), independent outcomes", better, base, None))
            if psi is not None and abs(better - base) <= psi <= min(1.0, better + base, 2 - better - base):
                scenarios.append((f"{base:.0%} -> {better:.1%} ({label}), discordance {psi:.3f}", better, base, psi))
    return scenarios


def power_section(base_rates: Sequence[float], psi: float | None = None) -> list[str]:
    """Markdown: the paired test queries an exact McNemar test needs (alpha 0.05, power 0.8) to see a difference
    of the paper's size at each base accuracy (:func:`power_scenarios`)."""
    from rageval.stats.power import ALPHA, POWER, power_table

    rows = power_table(power_scenarios(base_rates, psi))
    out = [f"Paired test queries a McNemar test needs to detect the difference (two-sided alpha {ALPHA}, power "
           f"{POWER}; Connor 1987's formula and the exact test rageval reports, rageval.stats.power):", ""]
    return out + _table(("scenario", "p10", "p01", "n (Connor)", "n (exact test)"),
                        [[r.scenario, f"{r.p10:.4f}", f"{r.p01:.4f}", f"{r.n_connor:,}", f"{r.n_exact:,}"]
                         for r in rows]) + [""]


#: The shipped IUM run over the shipped demo runs (one agent per run) and the arms of its label ablation, as
#: (label, file under the runs folder's ``ium/``); ``rageval results`` reads them (DEVELOPERS.md has the commands).
DEMO_RUNS_IUM = "ium-demo-runs.sqlite"
ABLATION_ARMS = (
    ("recipe: NQ reranker start, every stored label", "ablation/recipe.json"),
    ("untrained head, every stored label", "ablation/untrained-head.json"),
    ("NQ reranker start, first 5 stored labels a question", "ablation/first5.json"),
    ("NQ reranker start, every stored label, id tokens trained", "ablation/id-tokens.json"),
)


def ium_report(ium_dir: Path) -> list[str]:
    """The IUM part of docs/results.md from the run files under ``ium_dir``: the runs-based demo run (Table 3,
    intervals, Figures 2 and 5), its ablation, the McNemar sample size, and the four shipped agents' run; just the
    four agents' run while the demo run is not built; nothing when neither exists."""
    from rageval.ium.experiment import IumPlan

    main, four = ium_dir / DEMO_RUNS_IUM, ium_dir / IumPlan().file_name
    if not main.is_file():
        return ium_sections(four) if four.is_file() else []
    out = ium_sections(main)
    out += ["### Ablation: what moves the score", "",
            "The same agents, split and training settings, one choice changed per arm: where the engine starts (the "
            "NQ cross-encoder `rageval train-reranker` trained, or an untrained head over MiniLM), how much stored "
            "feedback offline iteration 1 reads (every eRAG label the runs hold, or those of each training "
            "question's first 5 candidates), and whether the task/model id tokens' embeddings train (the recipe "
            "trains the top 2 layers and the head only, so the ids keep their random start vectors). Each arm "
            "trains offline IUM only and scores each test question's served top k by the runs' stored eRAG labels "
            "of its passages (the mean label: the per-passage utility IUM learns from, eRAG's precision@k), so an "
            "arm costs its training and no answer; macro averages in percent with 95% intervals as above.", ""]
    out += ablation_section([(label, ium_dir / name) for label, name in ABLATION_ARMS])
    outcomes = read_ium_run(main)[1]["outcomes"]
    wide = outcomes[outcomes.method.isin(["first-stage", "offline-IUM"])].pivot_table(
        index=["agent", "query_id"], columns="method", values="score", aggfunc="first").dropna()
    if len(wide):
        right_first, right_ium = wide["first-stage"] >= 0.5, wide["offline-IUM"] >= 0.5
        psi = float((right_first != right_ium).mean())
        out += ["### Test size", "",
                f"This run pools {len(wide):,} paired test answers; the first stage answers {right_first.mean():.1%} "
                f"right and the two engines disagree on {psi:.1%} of them (the discordance below).", ""]
        out += power_section([round(float(right_first.mean()), 2)], psi=psi)
    if four.is_file():
        four_settings, four_tables = read_ium_run(four)
        table = summary_table(four_tables["outcomes"])
        macro = table.loc["macro average"]
        gain = macro_interval(four_tables["outcomes"], four_tables["agents"], "offline-IUM", "BM25")
        out += ["### The four shipped agents", "",
                f"Run `{four.name}` (NQ / HotpotQA x Gemma-3-270M / SmolLM2-135M, {four_settings['plan']['num_train']} "
                f"training and {four_settings['plan']['num_test']} test queries per dataset, an untrained head, BM25 "
                f"first stage; `{four_settings.get('command') or 'rageval ium'}`): offline IUM "
                f"{_cell(100 * macro.get('offline-IUM', math.nan))}% against BM25 "
                f"{_cell(100 * macro.get('BM25', math.nan))}% macro average (offline IUM minus BM25: "
                f"{_interval(gain, signed=True)}"
                " points). The Agents page shows every table of it.", ""]
    return out
