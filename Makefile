# The two commands of the README.
.PHONY: dashboard test check

# Install everything (a virtual environment with the pinned requirements) and open the dashboard on the
# shipped runs at http://127.0.0.1:8501. Bound to 127.0.0.1 only, no usage statistics: .streamlit/config.toml.
# `python -m ui.serve` is `streamlit run app.py` with the pages' modules imported before the server answers.
dashboard:
	scripts/setup_env.sh
	.venv/bin/python -m ui.serve --server.port 8501

# Install the test dependencies (Chromium from Debian for the browser tests), run the static checks (ruff on
# everything, mypy on the engine, import-linter's layer contract; settings in pyproject.toml), then the whole suite.
test:
	scripts/setup_env.sh --dev
	$(MAKE) check
	.venv/bin/python -m pytest -q

# The static checks (settings in pyproject.toml): the linter over everything, the type checker over the engine,
# and the layer contract of the package (import-linter: no module imports from a layer above its own).
check:
	.venv/bin/ruff check .
	.venv/bin/mypy rageval
	.venv/bin/lint-imports
