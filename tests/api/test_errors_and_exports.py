"""Every error class referee defines is a RefereeError; the public surfaces are curated."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import referee


def _modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(referee.__path__, "referee.")
            if ".example.step_" not in m.name and not m.name.endswith("__main__")]


def test_every_error_class_is_a_referee_error() -> None:
    offenders = []
    checked = 0
    for name in _modules():
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue  # an optional extra that is not installed here
        for cname, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name
                    and not cname.startswith("_")):
                checked += 1
                if not issubclass(obj, referee.RefereeError):
                    offenders.append(f"{name}.{cname}")
    assert checked >= 15
    assert offenders == []


def test_value_errors_stay_value_errors_for_existing_except_clauses() -> None:
    from referee.evaluators.reply import ReplyInvalid
    from referee.trajectories import TrajectoryError

    assert issubclass(ReplyInvalid, ValueError) and issubclass(TrajectoryError, ValueError)


def test_the_api_names_are_exported() -> None:
    for name in ("evaluate", "evaluate_async", "Judge", "EvalResult", "summarize", "cases_from", "judges",
                 "as_evaluator"):
        assert name in referee.__all__
    assert referee.judges.__all__ == sorted(referee.judges.__all__)
    assert all(hasattr(referee.judges, n) for n in referee.judges.__all__)


def test_every_subpackage_curates_a_sorted_complete_all() -> None:
    checked = []
    for info in pkgutil.walk_packages(referee.__path__, "referee."):
        if not info.ispkg:
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:
            continue  # an optional extra that is not installed here
        names = getattr(mod, "__all__", None)
        assert names is not None, f"{info.name} has no __all__"
        assert list(names) == sorted(names), f"{info.name}.__all__ is not sorted"
        assert len(set(names)) == len(names), f"{info.name}.__all__ repeats a name"
        assert [n for n in names if not hasattr(mod, n)] == [], f"{info.name}.__all__ names what it lacks"
        checked.append(info.name)
    assert {"referee.evaluators", "referee.reports", "referee.runner", "referee.cli"} <= set(checked)


def test_public_import_paths_kept_after_the_splits() -> None:
    from referee.evaluators.trajectory import ToolUsed, TrajectoryCheck, combine  # noqa: F401
    from referee.reports import render_terminal, write_html
    from referee.trajectories.importers import detect_format, float_or_none, from_otel  # noqa: F401

    assert callable(render_terminal) and callable(write_html)
