"""docs/ARCHITECTURE.md and .importlinter describe the tree as it is: every folder or file the map names exists,
every package is named, and every top-level package has its place in the layer contract."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "referee"
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _packages() -> list[str]:
    return sorted(str(p.parent.relative_to(PKG)) + "/" for p in PKG.rglob("__init__.py") if p.parent != PKG)


def _folder_table() -> list[str]:
    section = DOC.split("## The folders", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)


def test_every_folder_and_file_the_folder_table_names_exists() -> None:
    names = _folder_table()
    assert len(names) >= 20
    missing = [n for n in names if not (PKG / n).exists()]
    assert missing == []


def test_every_path_the_map_names_exists() -> None:
    # Backticked `a/`, `a/b/`, `a/_b.py` anywhere in the document (paths below src/referee, or the repo root).
    paths = set(re.findall(r"`((?:[\w.]+/)+(?:[\w.]+\.py)?)`", DOC))
    stale = sorted(p for p in paths if not (PKG / p).exists() and not (ROOT / p).exists())
    assert stale == []


def test_every_package_is_named_in_the_map() -> None:
    unnamed = [p for p in _packages() if f"`{p}`" not in DOC and not re.search(rf"`{re.escape(p)}[\w./]*`", DOC)]
    assert unnamed == []


def test_the_folder_table_lists_every_top_level_package() -> None:
    top = {p for p in _packages() if p.count("/") == 1}
    assert top - set(_folder_table()) == set()


def test_every_top_level_unit_has_a_layer_in_the_import_contract() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".importlinter")
    layers = cfg["importlinter:contract:layers"]["layers"]
    listed = {n.strip() for line in layers.splitlines() for n in re.split(r"[|:]", line) if n.strip()}
    units = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    units |= {p.stem for p in PKG.glob("*.py") if p.name != "__init__.py"}
    assert units - listed == set()
    assert listed - units == set()


def test_at_most_four_modules_sit_loose_at_the_top() -> None:
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 4, loose
