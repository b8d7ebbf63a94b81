"""The result schema, reading/writing rows (seed rows load unchanged), the manifest."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from referee.errors import InputError, UserError
from referee.results import (
    JudgeConfig,
    ResultRow,
    ResultWriter,
    RunManifest,
    Usage,
    manifest_path,
    read_results,
)


def test_score_range_and_status_consistency() -> None:
    assert ResultRow(id="a", score=0.0).status == "scored"
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ValidationError):
            ResultRow(id="a", score=bad)
    with pytest.raises(ValidationError, match="needs a score"):
        ResultRow(id="a", status="scored")
    with pytest.raises(ValidationError, match="must not carry a score"):
        ResultRow(id="a", status="unscored", score=0.0)  # an unscored case is never a 0
    with pytest.raises(ValidationError):
        ResultRow(id="a", score=1.0, surprise=1)  # type: ignore[call-arg]


def test_compact_json_form_round_trips() -> None:
    row = ResultRow(id="a", score=0.5, usage=Usage(input_tokens=3, output_tokens=2, calls=1), cost_usd=0.001)
    data = row.to_json_dict()
    assert data["schema_version"] == 1 and "criteria" not in data and "flags" not in data
    assert ResultRow.model_validate(data) == row


def _varied_rows() -> list[ResultRow]:
    from referee.results import CriterionScore, JudgeInfo

    return [
        ResultRow(id="plain", score=0.5),
        ResultRow(id="é ☃ \u2028 \x00 \"q\" </script>", score=1.0, rationale="line\nbreak\ttab", category="c",
                  cost_usd=1e-7, latency_ms=1e16, repeat=0, turn=3, flags=["cached"],
                  criteria=[CriterionScore(id="a", score=0.25, raw_score=2.0, weight=0.5, rationale="r"),
                            CriterionScore(id="b", status="unscored", error="no reply")],
                  judge=JudgeInfo(provider="openai", model="m", template_hash="ab"),
                  usage=Usage(input_tokens=3, output_tokens=2, calls=1),
                  metadata={"n": 1, "big": 2**70, "f": 0.1, "nested": {"t": (1, 2), "none": None}},
                  details={"nan": float("nan"), "list": [float("inf"), True], "inner": {7: "int key"}}),
        ResultRow(id="err", status="error", error="boom", raw_reply="{}"),
    ]


def test_json_text_is_the_dicts_json() -> None:
    # The fast encoder gives the same JSON value as the dict's, for every kind of field.
    for row in _varied_rows():
        assert json.loads(row.to_json_text()) == json.loads(json.dumps(row.to_json_dict(), allow_nan=False))
        assert row.to_json_text().startswith('{"schema_version":1,"id":')


def test_json_text_keeps_the_dicts_refusals() -> None:
    # A typed float that is not finite is refused, as before; a lone surrogate becomes U+FFFD in the file.
    with pytest.raises(ValueError, match="not JSON compliant"):
        ResultRow(id="a", score=0.5, latency_ms=float("nan")).to_json_text()
    from referee.results import CriterionScore

    with pytest.raises(ValueError, match="not JSON compliant"):
        ResultRow(id="a", score=0.5, criteria=[CriterionScore(id="c", score=0.5, weight=float("inf"))]).to_json_text()
    assert json.loads(ResultRow(id="a", score=0.5, rationale="x\ud800y").to_json_text())["rationale"] == "x\ufffdy"


def test_writer_replaces_a_lone_surrogate(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with ResultWriter(out) as w:
        w.write(ResultRow(id="a", score=0.5, rationale="x\ud800y"))
    assert json.loads(out.read_text(encoding="utf-8"))["rationale"] == "x\ufffdy"


def test_seed_rows_load_unchanged(tmp_path: Path) -> None:
    p = tmp_path / "seed.jsonl"
    seed = [
        {"id": "a", "score": 0.75, "category": "billing", "rationale": "ok", "cost_usd": 0.0012, "latency_ms": 812},
        {"id": 2, "score": True},
        {"id": "c", "score": False, "note": "kept"},
        {"id": "d"},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in seed), encoding="utf-8")
    loaded = read_results(p, strict=True)
    rows = {r.id: r for r in loaded.rows}
    a = rows["a"]
    assert (a.score, a.category, a.rationale, a.cost_usd, a.latency_ms) == (0.75, "billing", "ok", 0.0012, 812)
    assert rows["2"].score == 1.0 and rows["c"].score == 0.0
    assert rows["c"].metadata == {"note": "kept"}
    assert rows["d"].status == "unscored" and rows["d"].score is None
    assert not loaded.warnings


def test_malformed_lines_become_warnings_or_errors(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"id": "a", "score": 0.5}\nnot json\n{"id": "b", "score": 7}\n\xff\xfe\n[1]\n'
                  b'{"id": "c", "score": NaN}\n')
    loaded = read_results(p)
    assert [r.id for r in loaded.rows] == ["a"]
    assert len(loaded.warnings) == 5
    assert any(f"{p}:3" in w and "score" in w for w in loaded.warnings)
    with pytest.raises(InputError) as ei:
        read_results(p, strict=True)
    assert ei.value.line == 2


def test_a_byte_order_mark_is_not_part_of_row_1(tmp_path: Path) -> None:
    # `referee score` read row 1 past a Windows editor's BOM; this reader skipped it as malformed, so `runs import`
    # stored the run a row short.
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "a", "score": 0.5}\n{"id": "b", "score": 1}\n')
    loaded = read_results(p)
    assert [r.id for r in loaded.rows] == ["a", "b"] and loaded.warnings == []


def test_writer_appends_and_flushes_each_row(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "r.jsonl"
    with ResultWriter(p) as w:
        w.write(ResultRow(id="a", score=1.0))
        # Visible to another reader before close: a crash now keeps the row.
        assert [r.id for r in read_results(p).rows] == ["a"]
        w.write(ResultRow(id="b", status="error", error="boom"))
    with ResultWriter(p) as w:
        w.write(ResultRow(id="c", score=0.0))
    assert [r.id for r in read_results(p).rows] == ["a", "b", "c"]


class _FullDisk:
    """A file object that accepts ``n`` lines, then fails like a full disk."""

    def __init__(self, real: Any, n: int) -> None:
        self.real = real
        self.n = n
        self.closed = False

    def write(self, s: str) -> int:
        if self.n <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.n -= 1
        return int(self.real.write(s))

    def flush(self) -> None:
        self.real.flush()

    def fileno(self) -> int:
        return int(self.real.fileno())

    def close(self) -> None:
        self.closed = True
        self.real.close()


def test_disk_full_is_a_user_error_and_keeps_rows(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    w = ResultWriter(p)
    w._f = _FullDisk(w._f, 1)  # type: ignore[assignment]
    w.write(ResultRow(id="a", score=1.0))
    with pytest.raises(UserError, match="disk full") as ei:
        w.write(ResultRow(id="b", score=1.0))
    assert "1 rows already written are kept" in str(ei.value)
    w.close()
    assert [r.id for r in read_results(p).rows] == ["a"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_dev_full_write_and_close_do_not_crash() -> None:
    w = ResultWriter("/dev/full")
    with pytest.raises(UserError, match="disk full"):
        w.write(ResultRow(id="a", score=1.0))
    w.close()  # the failed line is still buffered; closing must not raise a second error


def test_manifest_path_and_round_trip(tmp_path: Path) -> None:
    assert manifest_path(tmp_path / "r.jsonl") == tmp_path / "r.manifest.json"
    assert manifest_path("x/run.ndjson").name == "run.manifest.json"
    m = RunManifest(kind="judge", judge=JudgeConfig(provider="openai", model="m"))
    m.write(tmp_path / "r.jsonl")
    back = RunManifest.read(tmp_path / "r.jsonl")
    assert back is not None and back.judge == m.judge and back.status == "running"
    assert RunManifest.read(tmp_path / "other.jsonl") is None


def test_a_manifest_is_read_within_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A results folder imported from elsewhere (`referee runs import`) is not trusted: its manifest was read whole,
    # so a huge one, or a link to a device, took every byte into memory. The bound is 16 MiB (4 KiB here).
    monkeypatch.setattr("referee.results._manifest.MAX_MANIFEST_BYTES", 4096)
    m = RunManifest(kind="judge", judge=JudgeConfig(provider="openai", model="m"))
    m.write(tmp_path / "r.jsonl")
    assert RunManifest.read(tmp_path / "r.jsonl") is not None
    manifest_path(tmp_path / "big.jsonl").write_text(json.dumps({"kind": "judge", "command": ["x" * 5000]}))
    with pytest.raises(ValueError, match="larger than a run manifest can be"):
        RunManifest.read(tmp_path / "big.jsonl")
    if Path("/dev/zero").exists():
        manifest_path(tmp_path / "dev.jsonl").symlink_to("/dev/zero")
        with pytest.raises(ValueError, match="larger than a run manifest can be"):
            RunManifest.read(tmp_path / "dev.jsonl")


def test_manifest_redacts_credentials_in_command_and_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plain-env-value-123456")
    m = RunManifest(
        command=["referee", "judge", "--base-url", "https://bob:hunter2@gw.example/v1?api_key=abc123&x=1",
                 "--token=tok-9999", "--api-key", "zzzzzzzzzz", "sk-proj-abcdefghijklmnop",
                 "note-plain-env-value-123456", "--max-tokens", "512"],
        judge=JudgeConfig(provider="openai", model="m", base_url="https://bob:hunter2@gw.example/v1"),
    )
    dumped = m.model_dump_json()
    for secret in ("hunter2", "abc123", "tok-9999", "zzzzzzzzzz", "sk-proj-abcdefghijklmnop",
                   "plain-env-value-123456"):
        assert secret not in dumped
    assert "gw.example" in dumped and "512" in m.command and "x=1" in dumped
