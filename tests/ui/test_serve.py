"""``python -m ui.serve`` (``make dashboard``'s start): what it imports before the server answers, in a fresh process.

The browser tests start the dashboard through it, so its hand-over to ``streamlit run app.py`` is exercised there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from ui import serve
names = serve.preload()
print(json.dumps({"names": names, "missing": [n for n in names if n not in sys.modules],
                  "heavy": sorted(m for m in ("torch", "transformers", "pyserini", "faiss") if m in sys.modules),
                  "pages_need": sorted(m for m in ("pandas", "numpy", "pyarrow", "rageval.store", "ui.data")
                                       if m not in sys.modules)}))
"""


def test_preload_imports_the_ui_package_and_the_lazy_modules_but_no_model_library():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    ui_modules = sorted(p.stem for p in (REPO / "ui").glob("*.py") if p.stem not in ("__init__", "serve"))
    assert sorted(n.removeprefix("ui.") for n in found["names"] if n.startswith("ui.")) == ui_modules
    assert found["missing"] == []
    assert found["pages_need"] == []
    assert found["heavy"] == []
    # The data layer's cache declarations log "No runtime found" outside a server; preload keeps them quiet.
    assert "No runtime found" not in done.stderr


def test_the_direct_run_check_is_skipped_with_this_streamlit():
    """ui.serve spares the first page Streamlit's one-time inspect.stack() check; the pinned Streamlit has the flag
    (if an upgrade drops it, this fails and the lever is gone, not the dashboard)."""
    from streamlit import delta_generator

    from ui import serve

    before = delta_generator._use_warning_has_been_displayed
    try:
        assert serve.skip_direct_run_check() is True
        assert delta_generator._use_warning_has_been_displayed is True
    finally:
        delta_generator._use_warning_has_been_displayed = before
