"""Batch mode and prices: the support answers judged through an OpenAI-compatible batch API at half price (the
local stand-in server, no key), a rerun answered from the cache, and a dry run priced from genai-prices
(docs/scale.md)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from . import ExampleContext

TITLE = "Batch mode and prices: half-price batch jobs (against a local stand-in server), nothing paid twice"

PRICES = ["--input-price-per-mtok", "0.15", "--output-price-per-mtok", "0.6"]
"""gpt-4o-mini's standard prices, given by hand: a local server has no price of its own."""
SERVER_WAIT_S = 30.0
POLL_S = "0.2"
"""The first wait between polls of a job (default 5 s): the local server ends each job at its second poll."""


@contextlib.contextmanager
def standin_server() -> Iterator[str]:
    """``python -m referee.testing --standin`` on a free loopback port, in its own process group: its URL, and
    the server stopped on the way out."""
    proc = subprocess.Popen([sys.executable, "-m", "referee.testing", "--standin", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + SERVER_WAIT_S
        line = b""
        while not line.endswith(b"\n") and time.monotonic() < deadline and proc.poll() is None:
            if sel.select(timeout=max(0.0, deadline - time.monotonic())):
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
        sel.close()
        m = re.match(rb"http://127\.0\.0\.1:\d+", line)
        if m is None:
            raise RuntimeError(f"the local stand-in server did not start within {SERVER_WAIT_S:.0f} s")
        yield m.group(0).decode()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.contextmanager
def _poll_quickly() -> Iterator[None]:
    """REFEREE_BATCH_POLL_S for the example's jobs, unless the user set it; restored after."""
    before = os.environ.get("REFEREE_BATCH_POLL_S")
    if before is None:
        os.environ["REFEREE_BATCH_POLL_S"] = POLL_S
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("REFEREE_BATCH_POLL_S", None)


def _cost(path: str) -> float:
    total = 0.0
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            total += float(json.loads(line).get("cost_usd") or 0.0)
    return total


def run(ctx: ExampleContext) -> str | None:
    if not ctx.judge:
        ctx.judge_skipped("the batch-mode demonstration")
        return "batch mode skipped (no judge configured)"
    cases, template = ctx.path("before.jsonl"), ctx.path("judge_prompt.md")
    batch, live = ctx.path("batch_judged.jsonl"), ctx.path("batch_live.jsonl")
    ctx.echo("A batch job needs a provider account and may take hours, so this step sends its jobs to the local "
             "stand-in server (python -m referee.testing --standin: the stand-in judge behind the OpenAI wire "
             f"format, batch API included, no key), priced at gpt-4o-mini's prices; REFEREE_BATCH_POLL_S={POLL_S} "
             "as its jobs end at once. With an account: --provider openai --model gpt-4o-mini --batch.")
    with standin_server() as url, _poll_quickly():
        wire = ["--provider", "openai", "--base-url", url + "/v1", "--model", "standin", *PRICES]
        ctx.run("judge", cases, "--template", template, "--out", batch, *wire, "--batch")
        ctx.run("judge", cases, "--template", template, "--out", live, *wire, "--no-cache")
        ctx.echo("The same command again (into another file): every answer comes from the cache, nothing is paid "
                 "twice:")
        ctx.run("judge", cases, "--template", template, "--out", ctx.path("batch_again.jsonl"), *wire, "--batch")
    ctx.echo("Priced before any call, from genai-prices (batch rate), for a real model:")
    ctx.run("run", ctx.path("suite.yaml"), "--dry-run", "--provider", "openai", "--model", "gpt-4o-mini", "--batch")
    return (f"the batch job's rows in {batch}: ${_cost(batch):.6f} in batch vs ${_cost(live):.6f} live "
            f"({live}) for the same 12 calls")
