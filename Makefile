# The two commands of the README.
.PHONY: dashboard test

# Install everything (a virtual environment with the pinned requirements) and open the dashboard on the
# shipped runs at http://127.0.0.1:8501. Bound to 127.0.0.1 only, no usage statistics: .streamlit/config.toml.
dashboard:
	scripts/setup_env.sh
	.venv/bin/streamlit run app.py --server.port 8501

# Install the test dependencies (Chromium from Debian for the browser tests), run the static checks (ruff on
# everything, mypy on the engine; settings in pyproject.toml), then the whole suite.
test:
	scripts/setup_env.sh --dev
	.venv/bin/ruff check .
	.venv/bin/mypy rageval
	.venv/bin/python -m pytest -q
