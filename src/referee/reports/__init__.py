"""Renderers: terminal, JSON, HTML, Markdown, JUnit. They compute nothing; they show result rows.

Each renderer is imported on first use (rich, jinja2 and the templates cost start-up time).
"""

from typing import Any

_LAZY = {
    "render_html": ".html", "write_html": ".html", "summary_dict": ".json_summary", "write_json": ".json_summary",
    "write_junit": ".junit", "leaderboard_fragment": ".leaderboard", "leaderboard_page": ".leaderboard",
    "render_markdown": ".markdown_summary", "render_pairwise_meta": ".metaeval", "render_terminal": ".score_terminal", "render_verdict": ".verdict_md",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
