"""Before an UMBRELA job: "this model answered N of 5 in UMBRELA's format" (issue 41, item 8). A model that writes
the '##final score: N' line on some passages and not others is counted passage by passage, with UMBRELA's own
prompt and parser."""

from __future__ import annotations

from rageval.erag.format_probe import probe_judge
from rageval.generation.base import FakeGenerator
from rageval.labelmethods import UMBRELA
from rageval.store import RunReader
from tests.run_fixtures import make_small_run


def test_the_probe_counts_the_replies_in_umbrela_format(tmp_path):
    path = make_small_run(tmp_path / "small.sqlite")
    asked: list[str] = []

    def reply(prompt: str) -> str:
        asked.append(prompt)
        return "##final score: 2" if len(asked) % 2 else "The passage is somewhat relevant."

    probe = probe_judge(path, FakeGenerator(reply, model_id="fake:alternating"), UMBRELA, n=5)
    assert (probe.asked, probe.answered) == (5, 3)
    assert probe.sentence.startswith("this model (fake:alternating) answered 3 of 5 in UMBRELA's format")
    assert [r[3] for r in probe.replies] == [2.0, None, 2.0, None, 2.0]
    with RunReader(path) as reader:
        first = reader.query_ids()[0]
        top = reader.rankings()[first].passage_ids[0]
    assert probe.replies[0][:2] == (first, top) and "##final score" in asked[0]  # UMBRELA's own prompt


def test_rescore_start_says_the_probe_before_an_umbrela_job(tmp_path, monkeypatch, capsys):
    from rageval.cli import main
    from rageval.generation import factory

    path = make_small_run(tmp_path / "small.sqlite")
    monkeypatch.setattr(factory, "load_generator",
                        lambda settings: FakeGenerator(lambda prompt: "##final score: 1", model_id="fake:always"))
    assert main(["rescore", "start", str(path), "--labels", "umbrela", "--jobs-db", str(tmp_path / "jobs.sqlite"),
                 "--model", str(tmp_path), "--probe", "4"]) in (0, 1, 2)
    out = capsys.readouterr().out
    assert "this model (fake:always) answered 4 of 4 in UMBRELA's format" in out
