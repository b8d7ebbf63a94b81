"""Production traces: OTLP/HTTP in (``referee collect``), online evaluation by the one runner
(``referee monitor``), ``gen_ai.evaluation.result`` events out, drift alerts (docs/monitoring.md).

The span -> case mapping is :mod:`referee.trajectories`' (one mapping, shared with ``referee import``); this
package decodes, receives, samples, schedules and exports, and scores nothing itself: scoring is the runner's.
"""

from ._drift import Alert, DriftDetector, Simulation, simulate
from ._export import EvaluationExporter, evaluation_attributes
from ._files import load_monitor, replay, traces_to_cases, write_cases
from ._monitor import MetricSummary, Monitor, MonitorConfig, StepReport, metric_name, summarize
from ._otlp import OTLPDecodeError, SpanRecord, decode_traces
from ._receiver import Collector, CollectorConfig, CollectorStats
from ._redact import Redactor
from ._sampler import Decision, Rule, Sampler, trace_fraction
from ._sink import Added, MemorySink, Score, TraceSink
from ._store_sink import StoreSink, open_sink

__all__ = [
    "Added", "Alert", "Collector", "CollectorConfig", "CollectorStats", "Decision", "DriftDetector",
    "EvaluationExporter", "MemorySink", "MetricSummary", "Monitor", "MonitorConfig", "OTLPDecodeError", "Redactor", "Rule",
    "Sampler", "Score", "Simulation", "SpanRecord", "StepReport", "StoreSink", "TraceSink", "decode_traces",
    "evaluation_attributes", "load_monitor", "metric_name", "open_sink", "replay", "simulate", "summarize", "trace_fraction",
    "traces_to_cases", "write_cases",
]
