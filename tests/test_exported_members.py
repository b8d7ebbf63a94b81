"""The public surface is curated: ``__all__`` is sorted and every name in it exists."""

import referee


def test_all_is_sorted_and_complete() -> None:
    names = referee.__all__
    assert names == sorted(names)
    missing = [n for n in names if not hasattr(referee, n)]
    assert missing == []


def test_no_private_module_leaks_into_all() -> None:
    assert not [n for n in referee.__all__ if n.startswith("_") and n != "__version__"]


def test_every_exported_name_is_documented_and_every_public_attribute_exported() -> None:
    """As httpx's test: what ``referee`` offers is exactly ``__all__`` (no stray public attribute of the
    module), and each exported name is written up in the reference table of docs/python.md."""
    import re
    import subprocess
    import sys
    import types
    from pathlib import Path

    # A fresh interpreter: loading every name must leave no public attribute that __all__ lacks.
    code = ("import types, referee\n"
            "[getattr(referee, n) for n in referee.__all__]\n"
            "print(sorted(n for n, v in vars(referee).items() if not n.startswith('_')"
            " and not isinstance(v, types.ModuleType) and n not in referee.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

    doc = (Path(__file__).resolve().parents[1] / "docs" / "python.md").read_text(encoding="utf-8")
    table = doc.split("## Reference: what `referee` exports", 1)[1]
    documented = re.findall(r"^\| `([^`]+)` \| (.+) \|$", table, flags=re.M)
    names = [n for n, _ in documented]
    assert names == referee.__all__  # in the same (sorted) order: nothing missing, nothing extra
    assert all(len(what) > 10 for _, what in documented)
    assert [n for n in referee.__all__ if not isinstance(getattr(referee, n), types.ModuleType)
            and not (getattr(referee, n).__doc__ or "").strip()] == []
