"""``validate`` and ``run --dry-run`` run no user code (no plugin module is imported)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from referee.cli import cli

PLUGIN = """\
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("a plugin module ran")

def shouty(case, output, **options):
    return str(output).isupper()
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    mod = "plug_" + re.sub(r"\W", "_", tmp_path.name)  # one module name per test: sys.path keeps old dirs
    (tmp_path / f"{mod}.py").write_text(PLUGIN)
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "HI"}\n')
    s = tmp_path / "s.yaml"
    s.write_text(f"name: s\ncases: c.jsonl\nplugins: [{mod}]\nevaluators:\n  - {mod}:shouty\n  - contains: {{value: H}}\n")
    return s


@pytest.mark.parametrize("argv", [["validate", "{s}"], ["run", "{s}", "--dry-run"]], ids=["validate", "dry-run"])
def test_no_plugin_module_is_imported(argv: list[str], suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli([a.format(s=suite) for a in argv])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert not (suite.parent / "IMPORTED").exists(), "user code ran"
    assert not (suite.parent / "results.jsonl").exists()


def test_validate_still_reports_missing_plugins_and_unknown_names(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "HI"}\n')
    s = tmp_path / "s.yaml"
    s.write_text("name: s\ncases: c.jsonl\nplugins: [no_such_mod]\nevaluators:\n  - nosuch.mod:fn\n")
    assert cli(["validate", str(s)]) == 2
    err = capsys.readouterr().err + capsys.readouterr().out
    s.write_text("name: s\ncases: c.jsonl\nevaluators:\n  - containz: {value: H}\n")
    assert cli(["validate", str(s)]) == 2
    err += capsys.readouterr().err + capsys.readouterr().out
    assert "no_such_mod" in err and "nosuch.mod" in err and "containz" in err


def test_a_real_run_does_import_the_plugin(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["run", str(suite), "-o", str(suite.parent / "r.jsonl")]) == 0
    capsys.readouterr()
    assert (suite.parent / "IMPORTED").exists()
