"""Production traces: OTLP/HTTP in (``referee collect``), online evaluation by the one runner
(``referee monitor``), ``gen_ai.evaluation.result`` events out, drift alerts (docs/monitoring.md).

The span -> case mapping is :mod:`referee.trajectories`' (one mapping, shared with ``referee import``); this
package decodes, receives, samples, schedules and exports, and scores nothing itself: scoring is the runner's.
The receiver, the store sink and the monitor are loaded on first use (they bring the store's SQLAlchemy and the
runner); the sampler, the drift detector and the span records load with the package.
"""

from typing import TYPE_CHECKING

from .._util._moved import forward
from ._drift import Alert, DriftDetector, Simulation, offline_note, simulate
from ._open import open_sink
from ._otlp import OTLPDecodeError, SpanRecord, decode_traces
from ._redact import Redactor
from ._sampler import Decision, Rule, Sampler, trace_fraction
from ._sink import Added, MemorySink, Score, TraceSink

if TYPE_CHECKING:
    from ._export import EvaluationExporter, evaluation_attributes
    from ._files import check_monitor, load_monitor, replay, traces_to_cases, write_cases
    from ._monitor import (
        MetricSummary,
        Monitor,
        MonitorConfig,
        SpanFilter,
        StepReport,
        metric_name,
        summarize,
    )
    from ._receiver import Collector, CollectorConfig, CollectorStats
    from ._store_sink import StoreSink

_LAZY = {
    **dict.fromkeys(("EvaluationExporter", "evaluation_attributes"), "referee.traces._export"),
    **dict.fromkeys(("check_monitor", "load_monitor", "replay", "traces_to_cases", "write_cases"),
                    "referee.traces._files"),
    **dict.fromkeys(("MetricSummary", "Monitor", "MonitorConfig", "SpanFilter", "StepReport", "metric_name",
                     "summarize"), "referee.traces._monitor"),
    **dict.fromkeys(("Collector", "CollectorConfig", "CollectorStats"), "referee.traces._receiver"),
    "StoreSink": "referee.traces._store_sink",
}
__getattr__ = forward(__name__, _LAZY)

__all__ = [
    "Added", "Alert", "Collector", "CollectorConfig", "CollectorStats", "Decision", "DriftDetector",
    "EvaluationExporter", "MemorySink", "MetricSummary", "Monitor", "MonitorConfig", "OTLPDecodeError", "Redactor",
    "Rule", "Sampler", "Score", "Simulation", "SpanFilter", "SpanRecord", "StepReport", "StoreSink", "TraceSink",
    "check_monitor", "decode_traces", "evaluation_attributes", "load_monitor", "metric_name", "offline_note", "open_sink", "replay",
    "simulate", "summarize", "trace_fraction", "traces_to_cases", "write_cases",
]
