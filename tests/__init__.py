"""rageval's tests: a regular package, so that ``from tests.run_fixtures import ...`` finds these files and never a
top-level ``tests`` package some installed distribution ships."""
