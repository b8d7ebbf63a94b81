"""Meta-evaluation: replay recorded judge verdicts against gold or human labels, without calling a model.

- :mod:`.pairwise`: accuracy per order, positional agreement, kappa, position and length bias.
- :mod:`.llmbar`, :mod:`.judgebench`, :mod:`.hanna`: readers for the public data sets.
- :mod:`.results`: referee's own results files (pairwise rows, absolute scores against human raters).
"""

from ._pairwise import BiasReport, PairVerdict, PairwiseMeta, bias, llmbar_statistics, pairwise_meta

__all__ = ["BiasReport", "PairVerdict", "PairwiseMeta", "bias", "llmbar_statistics", "pairwise_meta"]
