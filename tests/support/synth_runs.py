"""A generation run with the stand-in (no key) and a suite run on its cases: the inputs of the coverage tests of
the table, the HTML report and the viewer. Names can be hostile (document names and personas are users' data)."""

from __future__ import annotations

from pathlib import Path

import referee
from referee.synth import Document, SynthResult, synth

TEXTS = [
    "Refunds for unopened items are issued within 14 days of the return reaching our warehouse. Gift cards cannot "
    "be refunded or exchanged for cash under any circumstances. Customers pay the return postage unless the "
    "parcel arrived visibly damaged.",
    "Standard delivery reaches mainland addresses within five business days. Express couriers charge twelve "
    "dollars and arrive the next business day. International parcels leave from Rotterdam and usually land "
    "within ten business days.",
]


def generate_and_run(tmp: Path, names: tuple[str, str] = ("refunds.md", "shipping.md"),
                     personas: tuple[str, ...] = ("new customer", "support agent"),
                     n: int = 8) -> tuple[SynthResult, Path]:
    """(the :class:`SynthResult`, the results file of a suite run on its cases, every case once per repeat)."""
    docs = [Document(name, text) for name, text in zip(names, TEXTS, strict=True)]
    result = synth(docs, n=n, judge="standin", out=tmp / "cases.jsonl", personas=list(personas), store=False)
    cases = [dict(c, output=c["reference"]) for c in result.cases]
    out = tmp / "results.jsonl"
    referee.evaluate(cases, [referee.as_evaluator(lambda output: bool(output))], out=out, progress=False)
    return result, out
