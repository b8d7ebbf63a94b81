"""``referee report RESULTS --html OUT``: the self-contained HTML report of any results file(s)."""

from __future__ import annotations

from pathlib import Path

import click

from ..cases import load_cases, render_value
from ..errors import UserError
from ..results import ResultRow, RunManifest, read_results
from ._common import echo_err


def _leaderboard(rows: list[ResultRow]) -> list[str]:
    """The pairwise leaderboard section when rows compare named systems."""
    from ..metaeval import named_leaderboard

    lb = named_leaderboard(rows)
    if lb is None:
        return []
    from ..reports import leaderboard_fragment

    return [leaderboard_fragment(lb, title="Pairwise leaderboard")]


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--html", "html_out", required=True, type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option("--cases", "cases_path", type=click.Path(dir_okay=False), default=None,
              help="The cases file, so outputs can be shown (and evidence highlighted) for rows that do not "
                   "carry their text.")
@click.option("--title", default=None, help="Report title.")
@click.option("--human", "human_file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Human labels (as referee calibrate reads them): a judge panel's section then shows the panel's "
                   "agreement with them against each judge's.")
@click.option("--human-field", default=None, help="The labels file's field holding the label (as referee calibrate).")
def command(results: tuple[str, ...], html_out: str, cases_path: str | None, title: str | None,
            human_file: str | None, human_field: str | None) -> int:
    """Render RESULTS (JSONL rows of any evaluator, or agent-eval's {id, score} rows) as one offline HTML file."""
    rows: list[ResultRow] = []
    manifest = None
    for path in results:
        loaded = read_results(path)
        for w in loaded.warnings:
            echo_err(f"warning: {w}")
        rows.extend(loaded.rows)
        try:
            manifest = manifest or RunManifest.read(path)
        except (ValueError, OSError):
            echo_err(f"warning: the manifest beside {path} could not be read")
    if not rows:
        raise UserError(f"no result rows in {', '.join(results)}")
    texts: dict[str, str] = {}
    cases = list(load_cases(cases_path)) if cases_path else []
    for c in cases:
        if c.output is not None:
            texts[c.id] = render_value(c.output)
    from ..calibrate import panel_agreement, read_labels
    from ..reports import write_html

    labels = dict(read_labels(human_file, field_name=human_field).values) if human_file else None

    # A judge panel's figures, as `referee score` computes them (none when no panel judged these rows).
    write_html(rows, html_out, title=title or f"referee report: {', '.join(Path(r).name for r in results)}",
               source=", ".join(results), case_texts=texts, manifest=manifest,
               extra_sections=_leaderboard(rows), cases=cases, panels=panel_agreement(rows, labels))
    echo_err(f"wrote {html_out} ({len(rows)} rows)")
    return 0
