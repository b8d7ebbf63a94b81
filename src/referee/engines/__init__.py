"""Moved to :mod:`referee.run.engines`; this name stays importable for one release."""

from ..run.engines import Engine, EngineRun, Limiter, LocalEngine, get_engine

__all__ = ["Engine", "EngineRun", "Limiter", "LocalEngine", "RayEngine", "get_engine"]


def __getattr__(name: str) -> object:
    if name == "RayEngine":  # importing the class does not import Ray; starting it does
        from ..run.engines import RayEngine

        return RayEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
