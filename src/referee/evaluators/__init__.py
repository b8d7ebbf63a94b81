"""Evaluators: everything that turns a case into result rows (judges, checks, pairwise, trajectories)."""
