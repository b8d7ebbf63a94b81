"""``referee validate FILE ...``: report every problem of suite files, each with its line and path; read scenario
files (cases files) and list every reference to code they make."""

from __future__ import annotations

import json

import click

from ._common import echo_err


def _scenarios(path: str) -> bool:
    """List a cases file's problems and its code references; True when it has no problem."""
    from ..episodes import check_scenarios

    found = check_scenarios(path)
    for p in found.problems:
        echo_err(str(p))
    for r in found.references:
        click.echo(f"code: {r}")
    if found.problems:
        echo_err(f"{path}: {len(found.problems)} problem(s)")
        return False
    click.echo(f"ok: {path}: {found.describe()}")
    return True


@click.command("validate")
@click.argument("suites", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--print-schema", is_flag=True, help="Print the suite JSON Schema (for editors) and exit.")
def command(suites: tuple[str, ...], print_schema: bool) -> int:
    """Check suite files without running anything: unknown evaluators, wrong option types, invalid regexes or
    JSON schemas, missing files, bad cases. Every problem is listed as FILE:LINE PATH: MESSAGE (exit 2).
    A cases file (scenarios for `referee simulate`) is read too: its problems, and every reference to code it
    makes (environment.class), listed as FILE:LINE: case 'ID' FIELD: module:Class; nothing is imported."""
    from ..episodes import is_cases_file
    from ..suites import check_suite

    if print_schema:
        from ..suites.schema import suite_json_schema

        click.echo(json.dumps(suite_json_schema(), indent=2))
        return 0
    if not suites:
        raise click.UsageError("give at least one suite file (or --print-schema)")
    from ..runner import check_env

    check_env()  # the environment's number knobs, as a run would read them
    bad = 0
    for path in suites:
        if is_cases_file(path):
            bad += not _scenarios(path)
            continue
        # validate runs no user code; a suite with a monitor: section may have no cases (the traces are its cases)
        suite, problems = check_suite(path, run_user_code=False, monitor_only_ok=True)
        for p in problems:
            echo_err(str(p))
        if problems or suite is None:
            bad += 1
            echo_err(f"{path}: {len(problems)} problem(s)")
            continue
        monitor = _monitor(path)
        if monitor is False:
            bad += 1
            continue
        calls = None
        if suite.llm_specs:
            from .. import estimate_run

            # The count of `referee run --dry-run` (every target's outputs judged, a call per order or criterion
            # where a judge makes several); prices given so that no price database is read.
            calls = estimate_run(suite, provider="openai", input_price=0.0, output_price=0.0).judge.calls
        what = suite.describe(judge_calls=calls) if suite.cases else "no cases (a monitor suite)"
        click.echo(f"ok: {path}: {what}" + (f"; {monitor}" if monitor else ""))
    return 2 if bad else 0


def _monitor(path: str) -> str | bool | None:
    """A suite's ``monitor:`` section checked as ``referee monitor`` reads it (no user code): what it says, False
    when it has a problem (said), None when there is none."""
    from ..errors import UserError
    from ..traces import check_monitor

    try:
        config = check_monitor(path)
    except UserError as exc:
        echo_err(str(exc))
        echo_err(f"{path}: 1 problem(s)")
        return False
    if config is None:
        return None
    return f"monitor: {len(config.evaluators)} evaluator(s), sampling rate {config.sampler.rate:g}"
