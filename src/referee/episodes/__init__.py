"""Simulated conversations with stateful tools: a simulated user and the agent under test alternate, the agent's
tool calls change an environment, and the episode is rewarded by what it changed (tau2-bench's rules).

A case with ``user:``, ``environment:`` and ``expected:`` is a scenario (:func:`scenario_of`); an
:class:`Agent` (:class:`ModelAgent`, :class:`PythonAgent`, :class:`HttpAgent`) and a :class:`Simulator` play it
(:func:`run_episode`), :func:`reward_of` grades it, :func:`run_episodes` runs many with tries and writes result
rows, :func:`reliability` gives pass^k and pass@k.
"""

from ._agents import Agent, AgentTurn, HttpAgent, ModelAgent, PythonAgent
from ._build import agent_from, model_agent, read_text, simulator
from ._code import CodeReference, ScenarioCheck, check_scenarios, is_cases_file
from ._environment import Environment, EnvironmentFailed, load_environment, state_diff, tool
from ._episode import AGENT_STOP_TOKEN, NORMAL_ENDS, TERMINATIONS, Episode, Limits, run_episode
from ._reliability import Reliability, pass_at_k, pass_hat_k, reliability
from ._reward import Reward, reward_of
from ._run import EpisodeRun, episode_case, run_episodes, run_episodes_async
from ._scenario import BASES, STOP_TOKEN, Scenario, scenario_of
from ._simulator import Simulator
from ._tau2 import tau2_cases, tau2_environment, tau2_messages, tau2_policy

__all__ = [
    "AGENT_STOP_TOKEN", "Agent", "AgentTurn", "BASES", "CodeReference", "Environment", "EnvironmentFailed",
    "Episode", "EpisodeRun", "HttpAgent", "Limits", "ModelAgent", "NORMAL_ENDS", "PythonAgent", "Reliability",
    "Reward", "STOP_TOKEN", "Scenario", "ScenarioCheck", "Simulator", "TERMINATIONS", "agent_from",
    "check_scenarios", "episode_case", "is_cases_file", "load_environment", "model_agent", "pass_at_k", "pass_hat_k",
    "read_text", "reliability", "reward_of", "run_episode", "run_episodes", "run_episodes_async",
    "scenario_of", "simulator", "state_diff", "tau2_cases", "tau2_environment", "tau2_messages", "tau2_policy",
    "tool",
]
