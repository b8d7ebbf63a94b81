"""The ``targets:`` file format: what referee runs to produce the outputs under test.

Four kinds, told apart by their keys: a model and a prompt template (``provider``/``model``/``prompt``), an HTTP
service (``http``), a Python callable (``python: module:attr``) and a command (``exec``). A suite may also give
``prompts:`` x ``models:``; each pair becomes a model target with a derived id (``<prompt>@<model>``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TargetKind = Literal["model", "http", "python", "exec"]
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$"
"""Target ids name result files (``out/<id>.jsonl``): no path separators, no leading dot."""


class _M(BaseModel):
    # NaN / Infinity (YAML's .nan, .inf) are refused in every number: a NaN temperature or an infinite price
    # must not pass validate and reach a provider or a total.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class HttpSpec(_M):
    """An HTTP service under test: the request body is a template filled from the case (``{input}``, any case
    field, in every string of ``body``); ``output`` is the dotted path of the answer in the JSON reply."""

    url: str = Field(..., description="Endpoint; {placeholders} are filled from the case too.")
    method: Literal["POST", "PUT", "GET"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict, description="Request headers; values may name "
                                    "environment variables as ${VAR} (never written to results or manifests).")
    body: Any = Field(default=None, description="JSON body; every string in it is a template.")
    output: str = Field(default="", description="Dotted path of the answer in the JSON reply (e.g. reply.text, "
                                                "choices.0.message.content); empty = the whole body.")
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, description="Retries on 429/5xx/timeouts/dropped connections.")

    @field_validator("url")
    @classmethod
    def _scheme(cls, v: str) -> str:
        if not re.match(r"^https?://", v):
            raise ValueError("must start with http:// or https://")
        return v


class ToolSpec(_M):
    """A tool the model may call. OpenAI's ``{type: function, function: {...}}`` and Anthropic's
    ``input_schema`` spellings are accepted too."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @model_validator(mode="before")
    @classmethod
    def _other_spellings(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if data.get("type") == "function" and isinstance(data.get("function"), dict):
                data = dict(data["function"])
            if "input_schema" in data:
                data = {**data, "parameters": data["input_schema"]}
                data.pop("input_schema")
            data = {k: v for k, v in data.items() if k not in ("type", "strict", "cache_control")}
        return data


class TargetSpec(_M):
    """One system under test."""

    id: str = Field(..., pattern=ID_PATTERN, description="Names the target in results and on the command line "
                                                        "(--targets); its results go to <out>/<id>.jsonl.")
    description: str | None = None
    # -- a model and a prompt template
    provider: str | None = Field(default=None, description="openai, anthropic, gemini, or a local server name.")
    model: str | None = None
    base_url: str | None = None
    prompt: str | None = Field(default=None, description="Prompt template file (relative to the suite): "
                                                         "{input} and any case field.")
    template: str | None = Field(default=None, description="The prompt template inline, instead of a file.")
    system: str | None = Field(default=None, description="System prompt (text; {placeholders} filled).")
    system_file: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list, description="Tools: the model runs the tool loop.")
    tool_results: str | None = Field(default=None, description="module:attr of a function (tool, arguments, case) "
                                                               "-> result; default: the case's tool_results.")
    max_steps: int = Field(default=8, ge=1, le=100, description="Model calls in one tool loop at most.")
    max_tokens: int = Field(default=1024, ge=1)
    temperature: float | None = None
    seed: int | None = None
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    input_price_per_mtok: float | None = Field(default=None, ge=0)
    output_price_per_mtok: float | None = Field(default=None, ge=0)
    # -- other kinds
    http: HttpSpec | None = None
    python: str | None = Field(default=None, description="module:attr of a callable (input or case) -> str | dict, "
                                                         "sync or async.")
    exec: str | list[str] | None = Field(default=None, description="A command: the case as JSON on stdin, the "
                                                                   "output on stdout.")
    # -- pacing, per target
    concurrency: int | None = Field(default=None, ge=1, description="Generations in flight at once (default: "
                                                                     "the run's concurrency).")
    rate_limit: float | None = Field(default=None, gt=0, description="Generations started per second at most.")

    @property
    def kind(self) -> TargetKind:
        if self.http is not None:
            return "http"
        if self.python is not None:
            return "python"
        if self.exec is not None:
            return "exec"
        return "model"

    @model_validator(mode="after")
    def _one_kind(self) -> TargetSpec:
        kinds = [k for k, v in (("http", self.http), ("python", self.python), ("exec", self.exec)) if v is not None]
        model_keys = [k for k in ("provider", "model", "prompt", "template", "system", "system_file")
                      if getattr(self, k) is not None] + (["tools"] if self.tools else [])
        if len(kinds) > 1 or (kinds and model_keys):
            raise ValueError(f"a target is one of: a model with a prompt, http, python or exec; this one has "
                             f"{', '.join(kinds + model_keys)}")
        if not kinds:
            if self.provider is None:
                raise ValueError("a model target needs 'provider' (or use http, python or exec)")
            if (self.prompt is None) == (self.template is None):
                raise ValueError("a model target needs exactly one of 'prompt' (a template file) or 'template'")
            if self.system is not None and self.system_file is not None:
                raise ValueError("give 'system' or 'system_file', not both")
        if self.python is not None and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", self.python):
            raise ValueError(f"python: expected module:attr, got {self.python!r}")
        if self.tool_results is not None and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*",
                                                               self.tool_results):
            raise ValueError(f"tool_results: expected module:attr, got {self.tool_results!r}")
        if isinstance(self.exec, list) and not self.exec or self.exec == "":
            raise ValueError("exec: empty command")
        return self


class PromptEntry(_M):
    """One prompt of a ``prompts:`` x ``models:`` matrix."""

    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,49}$",
                           description="Default: the file's stem.")
    prompt: str
    system: str | None = None
    system_file: str | None = None


class ModelEntry(_M):
    """One model of a ``prompts:`` x ``models:`` matrix (``provider:model`` as a string works too)."""

    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,49}$",
                           description="Default: the model name.")
    provider: str
    model: str | None = None
    base_url: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    seed: int | None = None
    input_price_per_mtok: float | None = Field(default=None, ge=0)
    output_price_per_mtok: float | None = Field(default=None, ge=0)
    concurrency: int | None = Field(default=None, ge=1)
    rate_limit: float | None = Field(default=None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            provider, sep, model = data.partition(":")
            return {"provider": provider, "model": model or None} if sep else {"provider": data}
        return data


def safe_id(text: str) -> str:
    """A fragment usable in a target id (and so in a file name)."""
    out = re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-.")
    return out[:50] or "x"


def matrix(prompts: list[PromptEntry], models: list[ModelEntry]) -> list[dict[str, Any]]:
    """Every prompt x model pair as a target mapping with a derived id ``<prompt id>@<model id>``."""
    from pathlib import PurePath

    out = []
    for p in prompts:
        pid = p.id or safe_id(PurePath(p.prompt).stem)
        for m in models:
            mid = m.id or safe_id(m.model or m.provider)
            t: dict[str, Any] = {"id": f"{pid}@{mid}", "prompt": p.prompt}
            if p.system is not None:
                t["system"] = p.system
            if p.system_file is not None:
                t["system_file"] = p.system_file
            t.update(m.model_dump(exclude_none=True, exclude={"id"}))
            out.append(t)
    return out
