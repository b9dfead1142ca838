"""An end-to-end answer cut off by the token limit is marked as such on the query inspector (issue 34, item 9)."""

from __future__ import annotations

import pandas as pd

from ui.render_evidence import e2e_outputs_view
from ui.render_inspector import cut_off, estimated_tokens, with_cut_off

CUT = "Colonel Charles Hastings Judd (September 8, 1835 – April"  # the issue's answer, at a limit of 16


def test_the_issues_answer_is_cut_off_and_short_answers_are_not():
    # Colonel Charles Hastings Judd ( September 8 , 1 8 3 5 – April: 14 pieces, within 2 of 16
    assert estimated_tokens(CUT) == 14 and cut_off(CUT, 16)
    assert not cut_off("Charles Hastings Judd", 16) and not cut_off(CUT, 32) and not cut_off(CUT, None)
    outputs = pd.DataFrame({"k": [1, 5], "output": ["Judd", CUT], "score": [1.0, 0.0]})
    view = with_cut_off(e2e_outputs_view(outputs), outputs, 16)
    assert list(view["Cut off"]) == ["", "probably: about 14 of the 16-token limit"]
    assert list(view["EM"]) == list(e2e_outputs_view(outputs)["EM"])  # the score itself is unchanged
