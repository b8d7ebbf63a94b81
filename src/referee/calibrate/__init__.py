"""Calibration of a judge against human labels: ``read_labels``, ``calibrate`` (deltas and agreement
statistics), ``update_log`` (the calibration table in the judge prompt), ``panel_agreement`` (a run's judge panel: agreement,
effective votes, the panel against each judge on human labels). Public through ``referee.metaeval``."""

from ._calibrate import Calibration, Labels, calibrate, parse_scale, read_labels, update_log
from ._panel import PanelAgreement, panel_agreement

__all__ = ["Calibration", "Labels", "PanelAgreement", "calibrate", "panel_agreement", "parse_scale", "read_labels",
           "update_log"]
