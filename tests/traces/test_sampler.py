"""The sampler: the realised fraction over 100,000 trace ids, reruns, always-rules and the per-minute cap."""

from __future__ import annotations

import random

import pytest

from referee import UserError
from referee.traces import Rule, Sampler, trace_fraction


def _ids(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(n)]


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.25, 0.5, 0.9])
def test_the_realised_fraction_is_within_one_point_over_100000_ids(rate: float) -> None:
    ids = _ids(100_000, seed=int(rate * 1000))
    s = Sampler(rate)
    sampled = [t for t in ids if s.decide(t).sampled]
    assert abs(len(sampled) / len(ids) - rate) < 0.01
    assert sampled == [t for t in ids if Sampler(rate).decide(t).sampled]  # a rerun samples the same traces


def test_sequential_ids_are_sampled_at_the_rate_too() -> None:
    # Ids that are not random (a counter) would fool a sampler reading the id's own bits.
    ids = [f"{i:032x}" for i in range(100_000)]
    assert abs(sum(Sampler(0.2).rate_sampled(t) for t in ids) / 1e5 - 0.2) < 0.01


def test_the_decision_is_the_hash_of_the_id_and_auditable() -> None:
    t = "5b8efff798038103d269b633813fc60c"
    assert Sampler(0.3).rate_sampled(t) is (trace_fraction(t) < 0.3)
    assert trace_fraction(t) == trace_fraction(t.upper())


def test_always_rules_sample_at_any_rate() -> None:
    s = Sampler(0.0, always=[Rule(status="error"), Rule(attributes={"user.feedback": "*"})])
    err = [{"status": {"code": 2}, "attributes": {}}]
    fb = [{"status": {"code": 0}, "attributes": {"user.feedback": "thumbs_down"}}]
    plain = [{"status": {"code": 0}, "attributes": {}}]
    assert s.decide("a" * 32, err).reason == "always"
    assert s.decide("b" * 32, fb).reason == "always"
    assert s.decide("c" * 32, plain).reason == "sampled_out"


def test_the_cap_per_minute_counts_with_the_injected_clock() -> None:
    now = [600.0]
    s = Sampler(1.0, per_minute=3, clock=lambda: now[0])
    first = [s.decide(f"{i:032x}").reason for i in range(5)]
    assert first == ["rate", "rate", "rate", "over_cap", "over_cap"]
    now[0] += 60
    assert s.decide(f"{9:032x}").reason == "rate"


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan"), "half", True])
def test_a_rate_outside_0_1_is_refused(rate: object) -> None:
    with pytest.raises(UserError, match="rate"):
        Sampler(rate)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="per_minute"):  # YAML's `true` is no count either
        Sampler(0.5, per_minute=True)


def test_an_unknown_rule_field_is_named() -> None:
    with pytest.raises(UserError, match="spanname"):
        Rule.parse({"spanname": "x"}, "monitor.traces[0]")


def test_a_lowered_rate_keeps_a_subset_of_the_full_rate_and_names_the_rest() -> None:
    ids = _ids(20_000, seed=7)
    s = Sampler(0.4)
    full = {t for t in ids if s.decide(t).sampled}
    decisions = {t: s.decide(t, factor=0.25) for t in ids}
    low = {t for t, d in decisions.items() if d.sampled}
    assert low < full and abs(len(low) / len(ids) - 0.1) < 0.01
    assert {t for t, d in decisions.items() if d.reason == "budget_lowered_rate"} == full - low
    assert {t for t, d in decisions.items() if d.reason == "sampled_out"} == set(ids) - full
