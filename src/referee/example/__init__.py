"""The built-in example: a support agent's answers before and after a prompt change, evaluated end to end.

``referee example`` copies the example files into a work folder and runs each step through the real CLI.
Steps live in ``step_<NN>_<name>.py`` modules (run in name order), each exposing ``TITLE`` and
``run(ctx) -> str | None`` (a one-line outcome). Model-graded steps use the configured judge; without one,
the local stand-in judge (``--provider standin``, not a model) grades them, or with ``--no-standin`` they say how
to configure one and the rest still runs.
"""

from __future__ import annotations

import pkgutil
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Protocol, cast

import click

from ._scaffold import FILES as INIT_FILES
from ._scaffold import SWITCH as INIT_SWITCH
from ._scaffold import scaffold

__all__ = ["DATA", "ExampleContext", "INIT_FILES", "INIT_SWITCH", "STANDIN_NOTICE", "STANDIN_PROVIDER", "Step",
           "prepare", "scaffold", "selected_steps", "step_name", "step_names", "steps"]

DATA = Path(__file__).parent / "data"


HOW_TO_CONFIGURE = (
    "no judge is configured, so the model-graded step was skipped. To configure one, either\n"
    "  export ANTHROPIC_API_KEY=...                        (Anthropic; add --provider anthropic)\n"
    "  export OPENAI_API_KEY=...; export REFEREE_PROVIDER=openai     (OpenAI)\n"
    "  export GEMINI_API_KEY=...; export REFEREE_PROVIDER=gemini     (Gemini)\n"
    "  export REFEREE_PROVIDER=ollama REFEREE_MODEL=llama3.1          (local Ollama at localhost:11434)\n"
    "  export REFEREE_PROVIDER=openai REFEREE_BASE_URL=http://localhost:8000/v1 REFEREE_MODEL=<m>\n"
    "                                                      (vLLM, LM Studio, llama.cpp server, any gateway)"
    "\n  export REFEREE_PROVIDER=azure|bedrock|vertex ...     (Azure OpenAI, AWS Bedrock, Vertex AI: docs/scale.md)"
)

STANDIN_PROVIDER = "standin"
STANDIN_NOTICE = (
    "No judge is configured, so the model-graded steps use the local STAND-IN judge (--provider standin): it is\n"
    "not a model. Its verdicts come from token overlap with each case's reference (0 for refusals and \"I don't\n"
    "know\"), and every rationale says \"stand-in judge\". To grade with a real model, set a provider's key and\n"
    "run again, for example\n"
    "  export ANTHROPIC_API_KEY=...                        (Anthropic)\n"
    "  export OPENAI_API_KEY=...; export REFEREE_PROVIDER=openai     (OpenAI)\n"
    "  export REFEREE_PROVIDER=ollama REFEREE_MODEL=llama3.1          (a local Ollama)\n"
    "or pass --provider/--model/--base-url (see docs/judge.md); --no-standin skips the model-graded steps instead."
)


@dataclass
class ExampleContext:
    """What every step of the built-in example gets: its folder, whether a judge is configured, and how to
    run commands and print."""

    dir: Path
    judge: bool
    """Whether a judge is configured (key or local server)."""
    judge_args: list[str] = field(default_factory=list)
    """Provider flags passed through from ``referee example`` to the judging commands."""
    echo: Callable[[str], None] = click.echo
    run_cli: Callable[[list[str]], int] | None = None
    """Runs one ``referee`` command line and returns its exit code: ``referee.cli.cli``, given by the command
    that runs the example (the example sits below the CLI and does not import it)."""
    standin: bool = False
    """Whether the judge is the local stand-in (no key configured)."""
    _told_how: bool = False

    def judge_skipped(self, what: str) -> None:
        """Say that a model-graded part was skipped: how to configure a judge the first time, briefly after."""
        if self._told_how:
            self.echo(f"skipped {what}: no judge is configured (see above for how to configure one).")
        else:
            self.echo(f"skipped {what}: {HOW_TO_CONFIGURE}")
            self._told_how = True

    def path(self, name: str) -> str:
        return str(self.dir / name)

    @property
    def store_path(self) -> Path:
        """The example's own run history (``referee example`` records its runs here)."""
        return self.dir / "history.sqlite"

    @property
    def store_url(self) -> str:
        return f"sqlite:///{self.store_path.resolve()}"

    def run(self, *args: str, expect: tuple[int, ...] = (0,)) -> int:
        """Run one referee command as a user would, showing it first."""
        if self.run_cli is None:
            raise TypeError("ExampleContext.run_cli is not set: pass referee.cli.cli")
        self.echo(click.style("$ referee " + " ".join(args), fg="cyan"))
        code = self.run_cli(list(args))
        if code not in expect:
            raise click.ClickException(f"example step failed: 'referee {' '.join(args)}' exited {code}")
        return code


class Step(Protocol):
    """What a ``step_<NN>_<name>`` module provides."""

    TITLE: str

    def run(self, ctx: ExampleContext) -> str | None: ...


def steps() -> list[tuple[str, Step]]:
    """The example's steps in order: the ``step_<NN>_<name>`` modules of this package."""
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("step_"))
    return [(n, cast(Step, import_module(f"{__name__}.{n}"))) for n in names]


def step_name(module: str) -> str:
    """``step_45_grounded`` -> ``grounded``."""
    return module.split("_", 2)[2]


def step_names() -> list[str]:
    """The example's step names, in order (what ``referee example --step NAME`` takes)."""
    here = Path(__file__).parent
    return [step_name(m.name) for m in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name)
            if m.name.startswith("step_")]


def selected_steps(names: list[str]) -> list[tuple[str, Step]]:
    """The steps named (``--step grounded``), each after the steps it reads from (a step's ``NEEDS``), in the
    example's order; an unknown name is a UserError naming the known ones."""
    from ..errors import UserError

    every = steps()
    by_name = {step_name(n): (n, mod) for n, mod in every}
    want: set[str] = set()

    def add(name: str) -> None:
        if name not in by_name:
            raise UserError(f"--step {name}: no such step (steps: {', '.join(by_name)})")
        want.add(name)
        for need in getattr(by_name[name][1], "NEEDS", ()):
            add(need)

    for n in names:
        add(n)
    return [(n, mod) for n, mod in every if step_name(n) in want]


def prepare(target: Path) -> None:
    """Copy the example's data files into ``target`` (created if needed)."""
    target.mkdir(parents=True, exist_ok=True)
    for src in DATA.rglob("*"):
        if src.is_file():
            dest = target / src.relative_to(DATA)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
