"""JUnit XML for CI systems: one testcase per case; a failing case carries its rationale."""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from ..aggregate._summary import CaseLine
from ._safe import xml_text


def _failure(c: CaseLine, threshold: float, pass_rule: str) -> tuple[str, str]:
    """(message, type) of a failing case: it names what decided the failure, the evaluator or the threshold."""
    score = "n/a" if c.score is None else f"{c.score:.3f}"
    by_evaluator = c.verdict_source == "evaluator"
    if c.repeats > 1 and c.pass_share is not None:
        # With repeats a case fails when under half its scored repeats pass; its mean may be above.
        rule = "by the evaluator's verdict" if by_evaluator else f"at threshold {threshold:g}"
        if by_evaluator and pass_rule == "evaluator":
            rule += f" (threshold {threshold:g} where a repeat has none)"
        msg = f"passes in {c.pass_share:.0%} of its repeats (under half) {rule}; mean score {score}"
    elif by_evaluator:
        msg = f"the evaluator's verdict is FAIL (score {score}; --pass-rule evaluator)"
    else:
        msg = f"score {score} < threshold {threshold:g}"
    return msg, "evaluator_verdict" if by_evaluator else "below_threshold"


def _suite(root: ET.Element, name: str, cases: Sequence[CaseLine], threshold: float, pass_rule: str) -> None:
    failures = sum(1 for c in cases if c.status == "scored" and not c.passed)
    skipped = sum(1 for c in cases if c.status != "scored")
    suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(cases)), failures=str(failures),
                          errors="0", skipped=str(skipped))
    for c in cases:
        tc = ET.SubElement(suite, "testcase", classname=f"{name}.{c.category}", name=c.id)
        if c.status != "scored":
            # Unscored is neither a pass nor a fail: CI systems show it as skipped.
            ET.SubElement(tc, "skipped", message=f"{c.status}: {c.rationale or 'no usable judge reply'}")
        elif not c.passed:
            msg, kind = _failure(c, threshold, pass_rule)
            el = ET.SubElement(tc, "failure", message=msg, type=kind)
            el.text = c.rationale or "(no rationale)"
        if c.repeats > 1 and c.pass_share is not None:
            props = ET.SubElement(tc, "properties")
            ET.SubElement(props, "property", name="pass_share", value=f"{c.pass_share:.3f}")
            ET.SubElement(props, "property", name="repeats", value=str(c.repeats))
            # The per-case spread over repeats, so every case's mean and SD is available to CI tooling.
            for key, val in (("mean_score", c.score), ("sd", c.sd), ("min", c.min), ("max", c.max)):
                if val is not None:
                    ET.SubElement(props, "property", name=key, value=f"{val:.3f}")


def write_junit(path: str, cases: Sequence[CaseLine], adversarial: Sequence[CaseLine], threshold: float, *,
                pass_rule: str = "threshold") -> None:
    """Write one JUnit test case per case (``--junit-xml``; unscored ones as skipped), adversarial cases in
    a suite of their own."""
    root = ET.Element("testsuites", name="referee score")
    _suite(root, "referee", cases, threshold, pass_rule)
    if adversarial:
        _suite(root, "referee.adversarial", adversarial, threshold, pass_rule)
    for el in root.iter():  # every field, those added later too: XML 1.0 forbids most control characters
        if el.text:
            el.text = xml_text(el.text)
        for k, v in list(el.attrib.items()):
            el.attrib[k] = xml_text(v)
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
