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
