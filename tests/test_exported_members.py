"""The public surface is curated: ``__all__`` is sorted and every name in it exists."""

import referee


def test_all_is_sorted_and_complete() -> None:
    names = referee.__all__
    assert names == sorted(names)
    missing = [n for n in names if not hasattr(referee, n)]
    assert missing == []


def test_no_private_module_leaks_into_all() -> None:
    assert not [n for n in referee.__all__ if n.startswith("_") and n != "__version__"]
