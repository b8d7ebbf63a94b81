"""Image tokens before any call, by each provider's published rule, and in ``referee run --dry-run``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee._util._image import Image, from_bytes
from referee.cli import cli
from referee.runner._image_tokens import image_tokens
from tests.support.images import png


def _sized(w: int, h: int) -> Image:
    return Image(media_type="image/png", sha256="0" * 64, data=b"x", width=w, height=h)


@pytest.mark.parametrize(("provider", "model", "size", "tokens"), [
    # OpenAI's worked examples: 1024 x 1024 -> 768 x 768, 4 tiles; 2048 x 4096 -> 768 x 1536, 6 tiles.
    ("openai", "gpt-4o", (1024, 1024), 85 + 170 * 4),
    ("openai", "gpt-4o", (2048, 4096), 85 + 170 * 6),
    ("openai", "gpt-4o", (4, 3), 85 + 170),  # small images are not scaled up
    ("openai", "gpt-4o-mini", (1024, 1024), 2833 + 5667 * 4),
    ("azure", "my-deployment", (512, 512), 85 + 170),
    # Anthropic's table: 200 x 200 ~ 54, 1000 x 1000 ~ 1334; over 1568 px on the long edge it is scaled first.
    ("anthropic", "claude-sonnet-4-6", (200, 200), 54),
    ("anthropic", "claude-sonnet-4-6", (1000, 1000), 1334),
    ("anthropic", "claude-sonnet-4-6", (3136, 3136), 3279),
    ("bedrock", "anthropic.claude-3-haiku-20240307-v1:0", (1000, 1000), 1334),
    # Gemini: 258 for an image within 384 x 384, else 258 per 768 x 768 tile.
    ("gemini", "gemini-2.5-flash", (384, 384), 258),
    ("gemini", "gemini-2.5-flash", (1920, 1080), 258 * 6),
    ("vertex", "gemini-2.5-pro", (800, 600), 258 * 2),
])
def test_published_rules(provider: str, model: str, size: tuple[int, int], tokens: int) -> None:
    assert image_tokens(provider, model, _sized(*size)) == tokens


def test_an_image_of_unknown_size_counts_as_1024_square() -> None:
    remote = Image(media_type="", sha256="0" * 64, url="https://example.com/a.png")
    assert image_tokens("anthropic", "claude-sonnet-4-6", remote) == 1399


def test_dry_run_counts_image_tokens_by_the_judges_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "shot.png").write_bytes(png(400, 300))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(
        {"id": f"c{i}", "input": "Describe the screenshot", "output": {"type": "image", "path": "shot.png"}}) + "\n"
        for i in range(3)))
    (tmp_path / "suite.yaml").write_text("name: shots\ncases: cases.jsonl\nevaluators:\n  - llm_judge: {}\n")
    per_image = {"gemini": 258 * 1, "anthropic": 160, "openai": 85 + 170}
    assert image_tokens("anthropic", None, from_bytes(png(400, 300))) == per_image["anthropic"]
    for provider, model in (("gemini", "gemini-2.5-flash"), ("anthropic", "claude-sonnet-4-6"),
                            ("openai", "gpt-4o")):
        assert cli(["run", str(tmp_path / "suite.yaml"), "--dry-run", "--provider", provider, "--model",
                    model]) == 0
        out = capsys.readouterr().out
        assert f"of which ~{3 * per_image[provider]:,} tokens for 3 image(s) sent" in out, out


def test_a_targets_generation_estimate_counts_the_case_images(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "shot.png").write_bytes(png(1000, 1000))
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {"type": "image", "path": "shot.png"},
                                                      "reference": "r"}) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: shots\ncases: cases.jsonl\ntargets:\n  - id: v1\n    provider: anthropic\n    model: claude-sonnet-4-6\n"
        "    template: '{input}'\n    input_price_per_mtok: 1\n    output_price_per_mtok: 1\n"
        "evaluators:\n  - contains: {value: r}\n")
    from referee.run._targets import estimate_generation
    from referee.suites import load_suite

    suite = load_suite(str(tmp_path / "suite.yaml"), run_user_code=False)
    (est,) = estimate_generation(suite.targets, suite.cases, suite.base_dir)
    assert est.input_tokens == 1334  # 1000 x 1000 / 750; the marker text itself is not counted
