"""README.md and docs/*.md are tests: every fenced block is checked by tests/docs/pages.py (Sybil)."""

from tests.docs.pages import PAGES

pytest_collect_file = PAGES.pytest()
