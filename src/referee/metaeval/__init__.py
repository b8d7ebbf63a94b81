"""Meta-evaluation: replay recorded judge verdicts against gold or human labels, without calling a model.

- pairwise figures (:func:`pairwise_meta`, :func:`bias`): accuracy per order, positional agreement, kappa,
  position and length bias.
- one call per data set or file kind (what ``referee metaeval`` prints): :func:`llmbar_meta`,
  :func:`check_published`, :func:`verdicts_meta`, :func:`judgebench_meta`, :func:`hanna_meta`,
  :func:`results_meta` (referee's pairwise results against gold), :func:`absolute_meta` (absolute scores
  against several human raters), :func:`replay_completions` (recorded completions through the reply parser),
  :func:`ragchecker_meta` (RAGChecker's Table 2 from its recorded scores, and referee's claim precision /
  recall / F1 results on the same 280 answer pairs; :func:`read_ragchecker`, :func:`write_ragchecker_cases`).
- calibration (:func:`calibrate`, ``referee calibrate``): a judge's scores against human labels, read by
  :func:`read_labels`; :func:`update_log` records a check in the judge prompt's calibration table.
- panels (:func:`panel_meta`, ``referee metaeval panel``): every panel of recorded judges under each aggregation
  rule, against the best single judge, with alpha, effective votes and a cross-validated choice
  (:func:`judgebench_panel_data`, :func:`llmbar_panel_data`, :func:`panel_data`).
- :func:`rank_results`: referee's pairwise results as a leaderboard with the judge's bias (``referee rank``).
"""

from ..calibrate._calibrate import Calibration, Labels, calibrate, parse_scale, read_labels, update_log
from ._hanna import JUDGES as HANNA_JUDGES
from ._hanna import hanna_meta
from ._pairwise import BiasReport, PairVerdict, PairwiseMeta, bias, llmbar_statistics, pairwise_meta
from ._panel import (
    PanelData,
    PanelMeta,
    judgebench_panel_data,
    llmbar_panel_data,
    panel_data,
    panel_meta,
)
from ._ragchecker import (
    RagCheckerData,
    RagCheckerMeta,
    metric_map,
    ragchecker_meta,
    read_ragchecker,
)
from ._ragchecker import write_cases as write_ragchecker_cases
from ._rank import PairwiseTally, Ranking, named_leaderboard, pairwise_tally, rank_results
from ._replay import (
    JudgeBenchMeta,
    ParseReplay,
    PublishedCheck,
    check_published,
    judgebench_meta,
    llmbar_meta,
    replay_completions,
    results_meta,
    verdicts_meta,
)
from ._results import AbsoluteMeta, absolute_meta, judge_scores, read_human_ratings

__all__ = [
    "AbsoluteMeta",
    "BiasReport",
    "Calibration",
    "HANNA_JUDGES",
    "JudgeBenchMeta",
    "Labels",
    "PairVerdict",
    "PairwiseMeta",
    "PairwiseTally",
    "PanelData",
    "PanelMeta",
    "ParseReplay",
    "PublishedCheck",
    "RagCheckerData",
    "RagCheckerMeta",
    "Ranking",
    "absolute_meta",
    "bias",
    "calibrate",
    "check_published",
    "hanna_meta",
    "judge_scores",
    "judgebench_meta",
    "judgebench_panel_data",
    "llmbar_meta",
    "llmbar_panel_data",
    "llmbar_statistics",
    "metric_map",
    "named_leaderboard",
    "pairwise_meta",
    "pairwise_tally",
    "panel_data",
    "panel_meta",
    "parse_scale",
    "ragchecker_meta",
    "rank_results",
    "read_human_ratings",
    "read_labels",
    "read_ragchecker",
    "replay_completions",
    "results_meta",
    "update_log",
    "verdicts_meta",
    "write_ragchecker_cases",
]
