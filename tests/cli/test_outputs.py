"""An output path never overwrites an input, in every command (those added later too)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from referee.cli import cli, referee
from referee.cli._outputs import _GUARDED, OUTPUT_PARAMS

# A path option whose name says it writes must be declared an output (in OUTPUT_PARAMS).
_WRITES = re.compile(r"out|html|markdown|junit|xml|report|save|write|export|dump|log|labels|dir|^to_", re.IGNORECASE)
_READS = {"template", "criteria_file", "checks_file", "seeds_file", "templates_file", "target_file",
          "results_dir", "cases_path", "cases_file", "human", "baseline", "contexts", "outputs", "dataset",
          "gold", "generated", "cases"}


def _commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(referee)

    def walk(cmd: click.Command, name: str) -> Iterator[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group):
            for sub in cmd.list_commands(ctx):
                child = cmd.get_command(ctx, sub)
                assert child is not None
                yield from walk(child, f"{name} {sub}".strip())
        else:
            yield name, cmd

    yield from walk(referee, "")


def test_every_command_is_guarded_and_every_writing_option_is_declared() -> None:
    names = []
    for name, cmd in _commands():
        names.append(name)
        assert getattr(cmd, _GUARDED, False), f"referee {name} runs without the output guard"
        for p in cmd.params:
            if not isinstance(p, click.Option) or not isinstance(p.type, click.Path) or p.name is None:
                continue
            if p.name in OUTPUT_PARAMS:
                continue
            assert p.name in _READS or not _WRITES.search(p.name + " ".join(p.opts)), (
                f"referee {name} {p.opts[0]}: a path option that looks like an output is not in OUTPUT_PARAMS "
                "(cli/_outputs.py); declare it there (or here, in _READS, if it is read)")
    assert {"judge", "score", "report", "calibrate", "import", "run", "rank"} <= set(names)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"id": "a", "status": "scored", "score": 0.9}) + "\n")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "a", "score": 0.8}) + "\n")
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ncases: c.jsonl\nevaluators:\n  - contains: {value: x}\n")
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "x"}\n')
    traj = tmp_path / "t.json"
    traj.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
    return {"results": results, "labels": labels, "suite": suite, "traj": traj}


CASES = [
    ("report", ["report", "{results}", "--html", "{results}"], "results"),
    ("score json", ["score", "{results}", "--json-out", "{results}"], "results"),
    ("score junit", ["score", "{results}", "--junit-xml", "{results}"], "results"),
    ("score markdown", ["score", "{results}", "--markdown", "{results}"], "results"),
    ("calibrate json", ["calibrate", "{results}", "{labels}", "--json-out", "{labels}"], "labels"),
    ("calibrate log", ["calibrate", "{results}", "{labels}", "--update-log", "{labels}"], "labels"),
    ("import", ["import", "{traj}", "-o", "{traj}"], "traj"),
    ("run", ["run", "{suite}", "-o", "{suite}"], "suite"),
    ("rank", ["rank", "{results}", "--html", "{results}"], "results"),
    # --to-cases wrote the selected traces over the recorded traces it had replayed
    ("monitor to-cases", ["monitor", "{suite}", "--replay", "{results}", "--once", "--to-cases", "{results}",
                          "--below", "0.5"], "results"),
]


@pytest.mark.parametrize(("label", "argv", "victim"), CASES, ids=[c[0] for c in CASES])
def test_an_output_onto_an_input_is_refused_and_the_input_kept(
        label: str, argv: list[str], victim: str, files: dict[str, Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    before = files[victim].read_bytes()
    code = cli([a.format(**{k: str(v) for k, v in files.items()}) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "destroy the input" in err
    assert files[victim].read_bytes() == before


def test_a_hard_link_to_the_input_is_the_input(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    link = files["results"].with_name("alias.jsonl")
    link.hardlink_to(files["results"])
    assert cli(["score", str(files["results"]), "--json-out", str(link)]) == 2
    assert "destroy the input" in capsys.readouterr().err


def test_two_outputs_on_one_path_are_refused(files: dict[str, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    same = tmp_path / "both.out"
    assert cli(["score", str(files["results"]), "--json-out", str(same), "--markdown", str(same)]) == 2
    assert "same file" in capsys.readouterr().err and not same.exists()


def test_the_run_history_and_referees_folder_are_never_an_output(files: dict[str, Path], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The store is not a path parameter (--store takes a URL; the default file is named by no parameter at all), so
    # the rule above never saw it: `traces to-cases -o` onto the store wrote a case file over the database.
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # referee's folder: .referee/ at the repository's top level
    store = tmp_path / "h.sqlite"
    assert cli(["run", str(files["suite"]), "-o", str(tmp_path / "first.jsonl"), "--store", str(store)]) in (0, 1)
    before = store.read_bytes()
    refused = [(["traces", "to-cases", "-o", str(store), "--below", "0.5", "--store", f"sqlite:///{store}"],
                "destroy the history"),
               (["score", str(files["results"]), "--json-out", f"{store}-wal"], "destroy the history"),
               (["score", str(files["results"]), "--json-out", ".referee/s.json"], "referee's own folder"),
               (["run", str(files["suite"]), "-o", str(tmp_path / ".referee" / "r.jsonl")], "referee's own folder")]
    monkeypatch.setenv("REFEREE_STORE", str(store))  # the store in force, named by no parameter
    for argv, why in refused:
        code = cli(argv)
        err = capsys.readouterr().err
        assert code == 2 and why in err, (argv, err)
    assert store.read_bytes() == before and not (tmp_path / ".referee" / "s.json").exists()
    assert not (tmp_path / ".referee" / "r.jsonl").exists()
    assert cli(["score", str(files["results"]), "--json-out", str(tmp_path / "s.json")]) == 0  # elsewhere: written
