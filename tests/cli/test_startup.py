"""`referee --help` loads every command module to list them: none of them may pull in scipy.stats (~0.5 s) at
import time, which only the agreement statistics need (a fresh interpreter, so other tests' imports hide nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
import click
from referee.cli import referee as group
ctx = click.Context(group)
names = group.list_commands(ctx)
for name in names:
    assert group.get_command(ctx, name) is not None, name
print(json.dumps({"commands": names, "scipy": sorted(m for m in sys.modules if m.split(".")[0] == "scipy")}))
"""


def test_listing_every_command_imports_no_scipy() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout)
    assert {"calibrate", "metaeval", "rank", "judge", "score"} <= set(seen["commands"])
    assert seen["scipy"] == []


def test_agreement_statistics_still_use_scipy() -> None:
    from referee.stats import correlation

    assert abs(correlation([1, 2, 3, 4], [1, 3, 2, 4], "spearman") - 0.8) < 1e-12
    assert abs(correlation([1, 2, 3, 4], [1, 3, 2, 4], "kendall") - 2 / 3) < 1e-12


def test_dash_v_prints_the_version_like_dash_dash_version() -> None:
    import subprocess
    import sys

    import referee

    for flag in ("-V", "--version"):
        out = subprocess.run([sys.executable, "-m", "referee", flag], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == f"referee, version {referee.__version__}", out


def test_shell_completion_works_as_the_readme_says() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "_REFEREE_COMPLETE": "bash_source"}
    out = subprocess.run([sys.executable, "-c", "from referee.cli import main; main()"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert "_referee_completion()" in out.stdout and "complete " in out.stdout, out
    env = {**os.environ, "_REFEREE_COMPLETE": "bash_complete", "COMP_WORDS": "referee sco", "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-c", "from referee.cli import main; main()"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert "plain,score" in out.stdout, out


REPLAY_PROBE = """
import json, sys
from referee.cli import cli
from referee.example import DATA
code = cli(["monitor", str(DATA / "production" / "monitor.yaml"), "--replay",
            str(DATA / "production" / "traces.otlp.jsonl"), "--once", "--provider", "standin", "--store", sys.argv[1]])
print(json.dumps({"code": code, "loaded": sorted(m for m in ("http.server", "socketserver", "referee.traces._receiver")
                                                 if m in sys.modules)}))
"""


def test_replaying_recorded_traces_loads_no_http_server(tmp_path: Path) -> None:
    """`referee monitor --replay ... --once` evaluates files: the receiver (an HTTP server) is for live traces."""
    store = f"sqlite:///{tmp_path / 'history.sqlite'}"
    done = subprocess.run([sys.executable, "-c", REPLAY_PROBE, store], capture_output=True, text=True, check=True,
                          cwd=tmp_path)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"code": 0, "loaded": []}, done.stderr[-2000:]
