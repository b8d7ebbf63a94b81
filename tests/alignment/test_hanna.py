"""The score map on real labels no one here wrote: HANNA's recorded LLM ratings against its human ratings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from referee.alignment import align_values
from referee.metaeval._hanna import CRITERIA, read_hanna


@pytest.fixture(scope="module")
def hanna() -> tuple[list[str], dict[str, str], dict[str, np.ndarray]]:
    from tests.conftest import SHARED_DATA

    path = SHARED_DATA / "hanna" / "hanna_metric_scores_llm.csv"
    if not Path(path).exists():
        pytest.skip(f"shared evaluation data not found at {path} (HANNA)")
    cols = ["Coherence", "Relevance", "ChatGPT CH 1", "Beluga-13B RE 1"]
    table = read_hanna(path, columns=cols)
    ids = [f"s{i}" for i in range(len(table.systems))]
    groups = {c: f"prompt-{i % 96}" for i, c in enumerate(ids)}
    return ids, groups, {c: table.column(c) for c in cols}


def test_a_judge_on_the_wrong_scale_is_mapped_and_kept(hanna) -> None:  # type: ignore[no-untyped-def]
    ids, groups, cols = hanna
    judge = dict(zip(ids, cols["ChatGPT CH 1"].tolist(), strict=True))
    human = dict(zip(ids, cols[CRITERIA["CH"]].tolist(), strict=True))
    al, final, _ = align_values(judge, human, groups=groups, n_boot=500)
    assert al.kind == "continuous" and len(al.split.heldout) == 480
    held = {groups[c] for c in al.split.heldout}
    assert held.isdisjoint({groups[c] for c in al.split.train})  # one story prompt, one side
    f = al.figures
    raw, mapped, base = (f.values[p]["mae"].estimate for p in ("raw", "aligned", "baseline"))
    assert raw is not None and mapped is not None and base is not None
    assert mapped < raw - 0.5  # ChatGPT rates coherence far from the humans' scale
    assert abs(mapped - base) < 0.1  # ... and most of that error cut a constant also makes
    assert al.written and final is not None


def test_a_judge_already_on_the_scale_is_refused(hanna) -> None:  # type: ignore[no-untyped-def]
    ids, groups, cols = hanna
    judge = dict(zip(ids, cols["Beluga-13B RE 1"].tolist(), strict=True))
    human = dict(zip(ids, cols[CRITERIA["RE"]].tolist(), strict=True))
    al, final, _ = align_values(judge, human, groups=groups, n_boot=500)
    g = al.figures.decision_gain("raw")
    assert g.hi is not None and g.hi < 0  # the map lowers alpha here
    assert not al.written and final is None
    assert any("raw judge" in r and "not above 0" in r for r in al.reasons)
