"""Image parts in cases: from files beside the cases file, base64, data URLs, DataFrames and Python objects;
every refusal names the case, the file, the line and the field."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from referee._util import _image
from referee.cases import cases_from, load_cases
from referee.errors import InputError
from tests.support.images import SVG_WITH_SCRIPT, b64, part, png


def _write(tmp: Path, *cases: dict[str, Any]) -> Path:
    p = tmp / "cases.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return p


def _refused(tmp: Path, case: dict[str, Any], *, line: int = 1) -> InputError:
    with pytest.raises(InputError) as info:
        load_cases(_write(tmp, {"id": "ok", "input": "text only"}, case) if line == 2 else _write(tmp, case))
    return info.value


def test_a_path_beside_the_cases_file_becomes_a_checked_inline_image(tmp_path: Path) -> None:
    data = png(5, 7)
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "chart.png").write_bytes(data)
    cases = load_cases(_write(tmp_path, {"id": "a", "input": [{"type": "text", "text": "What does it show?"},
                                                               {"type": "image", "path": "img/chart.png"}]}))
    got = cases.cases[0].input[1]
    assert got["media_type"] == "image/png" and base64.b64decode(got["data"]) == data
    assert got["sha256"] == hashlib.sha256(data).hexdigest() and (got["width"], got["height"]) == (5, 7)
    assert got["name"] == "img/chart.png" and "path" not in got
    assert cases.cases[0].input[0] == {"type": "text", "text": "What does it show?"}


def test_images_in_output_contexts_turns_and_tool_results_are_all_checked(tmp_path: Path) -> None:
    img = part(png())
    case = {"id": "a", "output": img, "contexts": [{"type": "image", "data": b64(png(2, 2)),
                                                     "media_type": "image/png"}],
            "turns": [{"role": "user", "content": [img]}, {"role": "assistant", "content": "ok"}],
            "trajectory": [{"step": 1, "tool": "screenshot", "result": img}]}
    c = load_cases(_write(tmp_path, case)).cases[0]
    assert c.turns is not None and c.trajectory is not None
    for value in (c.output, c.get("contexts")[0], c.turns[0]["content"][0], c.trajectory[0]["result"]):
        assert value["sha256"] and value["media_type"] == "image/png"
    bad = {**case, "trajectory": [{"step": 1, "tool": "screenshot", "result": part(b"\x89PNG\r\n\x1a\n")}]}
    err = _refused(tmp_path, bad)
    assert err.field == "trajectory[0].result" and "case 'a'" in str(err)


def test_a_path_outside_the_cases_folder_is_refused_unless_its_folder_is_allowed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases_dir = tmp_path / "suite"
    cases_dir.mkdir()
    err = _refused(cases_dir, {"id": "x", "input": {"type": "image", "path": "../../etc/passwd"}})
    assert "outside the cases folder" in str(err) and err.field == "input" and err.line == 1
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "logo.png").write_bytes(png())
    (cases_dir / "link.png").symlink_to(outside / "logo.png")  # a symlink out is outside too
    for raw in (str(outside / "logo.png"), "../shared/logo.png", "link.png"):
        assert "outside" in str(_refused(cases_dir, {"id": "x", "input": {"type": "image", "path": raw}}))
    monkeypatch.setenv("REFEREE_IMAGE_DIRS", str(outside))
    c = load_cases(_write(cases_dir, {"id": "x", "input": {"type": "image", "path": "../shared/logo.png"}}))
    assert c.cases[0].input["media_type"] == "image/png"


def test_a_50_mb_image_is_refused_before_it_is_read_or_decoded(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    with big.open("wb") as fh:  # sparse: 50 MB on paper
        fh.write(png())
        fh.truncate(50 * 1024 * 1024)
    err = _refused(tmp_path, {"id": "big", "input": {"type": "image", "path": "big.png"}}, line=2)
    assert "over the 20,971,520-byte limit" in str(err) and err.line == 2 and "case 'big'" in str(err)
    err = _refused(tmp_path, {"id": "big", "output": {"type": "image", "media_type": "image/png",
                                                       "data": "A" * (28 * 1024 * 1024)}})
    assert "over the" in str(err) and err.field == "output"


def test_the_size_and_count_limits_come_from_the_environment(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_MAX_IMAGES_PER_CASE", "2")
    err = _refused(tmp_path, {"id": "many", "input": [part(png()), part(png()), part(png())]})
    assert "more than 2 images" in str(err) and err.field == "input[2]"
    monkeypatch.setenv("REFEREE_MAX_IMAGE_BYTES", "50")
    assert "over the 50-byte limit" in str(_refused(tmp_path, {"id": "s", "input": part(png(8, 8))}))
    monkeypatch.setenv("REFEREE_MAX_IMAGE_BYTES", "nan")
    assert "REFEREE_MAX_IMAGE_BYTES" in str(_refused(tmp_path, {"id": "s", "input": part(png())}))


@pytest.mark.parametrize(("bad", "why"), [
    (part(png()[:-20]), "truncated PNG"),
    (part(png()[:30]), "truncated"),
    (part(png(), media_type="image/jpeg"), "declared as image/jpeg but its bytes are image/png"),
    ({"type": "image", "data": "data:image/gif;base64," + b64(png())}, "declared as image/gif"),
    ({"type": "image", "url": "data:image/webp;base64," + b64(png())}, "declared as image/webp"),
    (part(SVG_WITH_SCRIPT, media_type="image/png"), "SVG image is refused"),
    (part(SVG_WITH_SCRIPT, media_type="image/svg+xml"), "SVG image is refused"),
    ({"type": "image", "data": "not base64!!", "media_type": "image/png"}, "not valid base64"),
    ({"type": "image", "data": b64(b"hello world, plain text")}, "needs a 'media_type'"),
    (part(b"hello world, plain text"), "not a PNG, JPEG, GIF or WebP"),
    ({"type": "image", "url": "file:///etc/passwd"}, "must be an http(s) URL"),
    ({"type": "image", "path": "a.png", "url": "https://x/a.png"}, "exactly one of"),
    ({"type": "image"}, "exactly one of"),
])
def test_bad_image_parts_are_refused_naming_case_and_field(tmp_path: Path, bad: dict[str, Any], why: str) -> None:
    err = _refused(tmp_path, {"id": "img-1", "reference": "r", "output": bad}, line=2)
    assert why in str(err), str(err)
    assert err.field == "output" and err.line == 2 and "case 'img-1'" in str(err)
    assert str(err).startswith(str(tmp_path / "cases.jsonl") + ":2")


def test_a_remote_url_is_kept_as_a_link_and_never_fetched(tmp_path: Path) -> None:
    c = load_cases(_write(tmp_path, {"id": "u", "input": {"type": "image", "url": "https://example.com/a.png"}}))
    got = c.cases[0].input
    assert got["url"] == "https://example.com/a.png" and "data" not in got
    assert got["sha256"] == hashlib.sha256(b"https://example.com/a.png").hexdigest()


def test_a_data_url_that_tells_the_truth_is_accepted(tmp_path: Path) -> None:
    c = load_cases(_write(tmp_path, {"id": "d", "input": {"type": "image", "url": "data:image/png;base64,"
                                                                                 + b64(png(3, 3))}}))
    assert c.cases[0].input["width"] == 3


def test_python_bytes_and_dataframe_bytes_columns_become_images() -> None:
    data = png(6, 2)
    cs = cases_from([{"input": "describe", "output": data}, {"input": "text", "output": b"plain bytes"}])
    assert cs.cases[0].output["sha256"] == hashlib.sha256(data).hexdigest()
    assert cs.cases[1].output == b"plain bytes"  # bytes that are no image are left as they were
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"id": ["a", "b"], "input": ["q1", "q2"], "screenshot": [data, None]})
    rows = cases_from(df).cases
    assert rows[0].get("screenshot")["width"] == 6 and rows[1].get("screenshot") is None
    bad = pd.DataFrame({"id": ["a"], "screenshot": [data[:-12]]})
    with pytest.raises(InputError, match="truncated PNG") as info:
        cases_from(bad)
    assert info.value.field == "screenshot" and info.value.line == 1


def test_pil_images_from_python_become_png_parts() -> None:
    pil = pytest.importorskip("PIL.Image")
    img = pil.new("RGB", (9, 4), (0, 128, 255))
    c = cases_from([{"input": "what colour?", "output": img}]).cases[0]
    assert c.output["media_type"] == "image/png" and (c.output["width"], c.output["height"]) == (9, 4)


def test_cases_without_images_are_the_same_objects() -> None:
    data = {"id": "t", "input": "q", "turns": [{"role": "user", "content": "hi"}], "metadata": {"k": [1]}}
    case = cases_from([data]).cases[0]
    assert case.turns is data["turns"] and case.metadata is data["metadata"]


def test_an_image_is_checked_from_its_bytes_whatever_its_name() -> None:
    img = _image.from_bytes(png(4, 3), name="looks.jpg")
    assert img.media_type == "image/png" and img.label == "image looks.jpg (png, 4x3)"
    with pytest.raises(_image.ImageError, match="truncated JPEG"):
        _image.from_bytes(b"\xff\xd8\xff\xe0" + b"\x00" * 40)


def _big_png(size: int) -> bytes:
    """A PNG of about ``size`` bytes (one large IDAT chunk; the reader walks the chunks, never inflates them)."""
    import struct
    import zlib

    small = png()
    body = b"\x00" * size
    idat = struct.pack(">I", len(body)) + b"IDAT" + body + struct.pack(">I", zlib.crc32(b"IDAT" + body))
    return small[:33] + idat + small[33:]


def test_an_image_named_by_many_parts_is_read_once_and_held_once(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png(2, 2))
    (tmp_path / "b.png").write_bytes(png(3, 3))
    cases = [{"id": f"c{i}", "input": [{"type": "image", "path": "a.png"}, {"type": "image", "path": "./a.png",
                                                                           "name": f"n{i}"},
                                       part(png(3, 3)), {"type": "image", "path": "b.png"}]} for i in range(5)]
    loaded = load_cases(_write(tmp_path, *cases)).cases
    texts = {id(p["data"]) for c in loaded for p in c.input}
    assert len(texts) == 2  # two distinct images, each one base64 text shared by every part naming it
    assert loaded[4].input[1]["name"] == "n4" and loaded[0].input[0]["name"] == "a.png"  # names stay per part
    assert loaded[0].input[3]["sha256"] == hashlib.sha256(png(3, 3)).hexdigest()
    # A lying media type is refused for a file already read as well.
    bad: list[dict[str, Any]] = [*cases[:1], {"id": "x", "input": {"type": "image", "path": "a.png",
                                                                     "media_type": "image/gif"}}]
    with pytest.raises(InputError, match="declared as image/gif but its bytes are image/png"):
        load_cases(_write(tmp_path, *bad))


def test_the_distinct_image_bytes_of_one_load_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    images = [png(4, 4, (i, 0, 0)) for i in range(4)]
    monkeypatch.setenv("REFEREE_MAX_RUN_IMAGE_BYTES", str(sum(len(i) for i in images[:3])))
    ok = [{"id": f"c{i}", "input": [part(images[i % 3])] * 3} for i in range(9)]  # 27 parts, 3 images: fits
    assert len(load_cases(_write(tmp_path, *ok)).cases) == 9
    err = _refused(tmp_path, {"id": "four", "input": [part(i) for i in images]})
    assert "REFEREE_MAX_RUN_IMAGE_BYTES" in str(err) and err.field == "input[3]"
    # Cases given in Python share one store too.
    with pytest.raises(InputError, match="REFEREE_MAX_RUN_IMAGE_BYTES"):
        cases_from([{"id": str(i), "input": part(images[i])} for i in range(4)])


_MANY_PARTS_UNDER_A_CAP = """\
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from referee.cases import load_cases
cases = load_cases(sys.argv[1]).cases
print(len(cases), sum(len(c.input) for c in cases), len({{id(p["data"]) for c in cases for p in c.input}}))
"""


@pytest.mark.slow
def test_a_50_kb_cases_file_naming_one_19_mb_image_1200_times_loads_under_a_memory_cap(tmp_path: Path) -> None:
    """60 cases x 20 parts, one 19 MB PNG: one copy held (~25 MB of base64), where a copy per part would be
    ~32 GB. Run under an address-space limit, so a regression fails here instead of taking the machine."""
    import os
    import subprocess
    import sys

    (tmp_path / "big.png").write_bytes(_big_png(19 * 1024 * 1024))
    cases = [{"id": f"c{i}", "input": [{"type": "image", "path": "big.png"}] * 20} for i in range(60)]
    path = _write(tmp_path, *cases)
    assert path.stat().st_size < 60_000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cap = 1 << 30  # referee fits with room for a few copies; 1,200 copies of 25 MB do not
    proc = subprocess.run([sys.executable, "-c", _MANY_PARTS_UNDER_A_CAP.format(cap=cap), str(path)],
                          capture_output=True, text=True, timeout=300, env=env, start_new_session=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["60", "1200", "1"]


def test_a_misspelt_image_type_warns_with_the_right_spelling(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    rows = [{"id": "typo", "input": [{"type": "text", "text": "What is shown?"}, {"type": "imag", "path": "a.png"}]},
            {"id": "text", "input": [{"type": "text", "text": "plain"}, {"type": "note", "url": "http://x"}]}]
    f = tmp_path / "cases.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with caplog.at_level("WARNING", logger="referee"):
        cases = load_cases(f)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1, warned  # the unrelated type 'note' is no typo of 'image'
    assert f"{f}:1" in warned[0] and "'typo'" in warned[0] and "input[1]" in warned[0]
    assert "did you mean 'image'?" in warned[0] and "read as text" in warned[0]
    assert list(cases)[0].data["input"][1] == {"type": "imag", "path": "a.png"}  # kept as written, nothing invented
