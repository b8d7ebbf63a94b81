"""README.md and docs/*.md are tests: every fenced block is checked by tests/docs/pages.py (Sybil)."""

from pathlib import Path
from typing import Any

from tests.docs.pages import PAGES, ROOT

_collect = PAGES.pytest()


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    # Only the project's pages: a README.md elsewhere (tests/data/README.md) is not a doc page.
    if file_path == ROOT / "README.md" or file_path.parent == ROOT / "docs":
        return _collect(file_path, parent)
    return None
