"""Renderers: terminal, JSON, HTML, Markdown, JUnit. They compute nothing; they show result rows.

Each renderer is imported on first use (rich, jinja2 and the templates cost start-up time).
"""

from typing import Any

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
    "echo_err": "._safe", "fit_columns": "._safe", "pad_columns": "._safe", "gold_case_text": "._gold", "gold_run_notes": "._gold", "log_gold_runs": "._mlflow",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
