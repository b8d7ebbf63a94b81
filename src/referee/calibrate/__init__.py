"""Calibration of a judge against human labels: ``read_labels``, ``calibrate`` (deltas and agreement
statistics), ``update_log`` (the calibration table in the judge prompt). Public through ``referee.metaeval``."""

from ._calibrate import Calibration, Labels, calibrate, parse_scale, read_labels, update_log

__all__ = ["Calibration", "Labels", "calibrate", "parse_scale", "read_labels", "update_log"]
