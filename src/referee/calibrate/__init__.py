"""Calibration of a judge against human labels: ``read_labels``, ``judge_labels`` (a run's scores with the
verdicts ``referee score`` gives them: what ``referee calibrate`` and the viewer both compare), ``calibrate`` (deltas and agreement
statistics), ``update_log`` (the calibration table in the judge prompt), ``panel_agreement`` (a run's judge panel: agreement,
effective votes, the panel against each judge on human labels), ``choose_threshold`` and ``escalation_report``
(a confidence threshold that guarantees the kept verdicts' agreement with humans). Public through ``referee.metaeval``."""

from ._calibrate import (
    Calibration,
    Labels,
    calibrate,
    judge_labels,
    parse_scale,
    read_labels,
    update_log,
)
from ._escalation import EscalationReport, Threshold, choose_threshold, escalation_report, min_kept
from ._panel import PanelAgreement, panel_agreement

__all__ = ["Calibration", "EscalationReport", "Labels", "PanelAgreement", "Threshold",
           "calibrate", "choose_threshold", "escalation_report", "judge_labels", "min_kept", "panel_agreement",
           "parse_scale", "read_labels", "update_log"]
