"""Renderers: terminal, JSON, HTML, Markdown, JUnit. They compute nothing; they show result rows.

Each renderer is imported on first use (rich, jinja2 and the templates cost start-up time).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy names below, typed for type checkers and editors
    from ._agents import render_tally
    from ._calibrate import render_calibration, seed_calibration_lines
    from ._gold import gold_case_text, gold_run_notes
    from ._html import render_html, write_html
    from ._json_summary import summary_dict, write_json
    from ._junit import write_junit
    from ._leaderboard import leaderboard_fragment, leaderboard_page
    from ._markdown_summary import image_refs, render_markdown, write_markdown
    from ._metaeval import (
        render_absolute,
        render_hanna,
        render_judgebench,
        render_pairwise_meta,
        render_ragchecker,
        render_ranking,
    )
    from ._mlflow import log_gold_runs
    from ._panel import render_panel, render_panel_agreement
    from ._safe import columns, display_text, echo_err, fit_columns, pad_columns, terminal_width
    from ._score_images import score_image_refs
    from ._score_terminal import render_terminal
    from ._synth import coverage_charts, coverage_fragment, render_synth_html
    from ._verdict_md import render_verdict

_LAZY = {
    "render_html": "._html", "write_html": "._html", "summary_dict": "._json_summary", "write_json": "._json_summary",
    "write_junit": "._junit", "leaderboard_fragment": "._leaderboard", "leaderboard_page": "._leaderboard",
    "render_markdown": "._markdown_summary", "write_markdown": "._markdown_summary", "image_refs": "._markdown_summary",
    "score_image_refs": "._score_images",
    "render_pairwise_meta": "._metaeval", "render_absolute": "._metaeval", "render_hanna": "._metaeval",
    "render_ragchecker": "._metaeval", "render_panel": "._panel", "render_panel_agreement": "._panel",
    "render_judgebench": "._metaeval", "render_ranking": "._metaeval", "render_calibration": "._calibrate",
    "seed_calibration_lines": "._calibrate", "display_text": "._safe",
    "render_synth_html": "._synth", "coverage_fragment": "._synth", "coverage_charts": "._synth", "render_tally": "._agents", "render_terminal": "._score_terminal", "render_verdict": "._verdict_md",
    "echo_err": "._safe", "fit_columns": "._safe", "pad_columns": "._safe", "columns": "._safe",
    "terminal_width": "._safe", "gold_case_text": "._gold", "gold_run_notes": "._gold", "log_gold_runs": "._mlflow",
}

__all__ = [
    "columns", "coverage_charts", "coverage_fragment", "display_text", "echo_err", "fit_columns", "gold_case_text",
    "gold_run_notes", "image_refs", "leaderboard_fragment", "leaderboard_page", "log_gold_runs", "pad_columns",
    "render_absolute", "render_calibration", "render_hanna", "render_html", "render_judgebench", "render_markdown",
    "render_pairwise_meta", "render_panel", "render_panel_agreement", "render_ragchecker", "render_ranking",
    "render_synth_html", "render_tally", "render_terminal", "render_verdict", "score_image_refs",
    "seed_calibration_lines", "summary_dict", "terminal_width", "write_html", "write_json", "write_junit",
    "write_markdown",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
