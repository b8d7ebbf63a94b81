"""AWS Bedrock through the Converse API, signed with SigV4 (extra ``bedrock``: botocore).

``POST {endpoint}/model/{modelId}/converse``. Structured output through tool use: one tool whose input schema is
the verdict schema, forced with ``toolChoice`` where the model allows it; models that reject a forced tool fall
back to ``any``, then to plain JSON in the text (step by step, remembered for the run, as for OpenAI servers).
Credentials and region come from the usual AWS chain (environment, ``AWS_PROFILE`` and ``~/.aws``, SSO, container
and instance roles), read by botocore; the request is signed by botocore and sent over referee's aiohttp layer.
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar
from urllib.parse import quote

from yarl import URL

from ..errors import MissingExtraError, ProviderAuthError, ProviderError, UserError
from ._base import Completion, JudgeRequest, Provider
from ._http import HttpClient
from ._vision import bedrock_part, content_list

_LOOKED_AT = ("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (+AWS_SESSION_TOKEN), AWS_PROFILE, ~/.aws/credentials, "
              "~/.aws/config (SSO, credential_process), container and instance roles")
_LEVELS = ("tool", "any", "none")


class BedrockProvider(Provider):
    name: ClassVar[str] = "bedrock"
    default_model: ClassVar[str] = "anthropic.claude-3-5-haiku-20241022-v1:0"
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    price_provider: ClassVar[str | None] = "aws"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        try:
            import botocore.session
            from botocore.exceptions import BotoCoreError
        except ImportError as exc:
            raise MissingExtraError("bedrock", "botocore", "AWS Bedrock") from exc
        session = botocore.session.Session()
        try:
            self._credentials = session.get_credentials()
        except BotoCoreError as exc:  # a broken profile: name it rather than show a traceback
            raise ProviderAuthError(f"AWS credentials for Bedrock could not be loaded: {exc}") from exc
        if self._credentials is None:
            raise ProviderAuthError(f"no AWS credentials for Bedrock: looked at {_LOOKED_AT}")
        region = os.environ.get("AWS_REGION") or session.get_config_variable("region")
        if not region:
            raise UserError("no AWS region for Bedrock: set AWS_REGION (or AWS_DEFAULT_REGION, or region in "
                            "~/.aws/config)")
        self.region = str(region)
        base = (base_url or os.environ.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or os.environ.get("AWS_ENDPOINT_URL")
                or f"https://bedrock-runtime.{self.region}.amazonaws.com").rstrip("/")
        super().__init__(model, base_url=base, api_key=None, timeout=timeout)
        self._http = HttpClient(timeout=timeout, label=f"AWS Bedrock {base}", headers={})
        self._signed_with: tuple[str, ...] = ()
        self._level = 0

    def _payload(self, request: JudgeRequest, level: str) -> dict[str, Any]:
        system = [{"text": m.content} for m in request.messages if m.role == "system"]
        payload: dict[str, Any] = {
            "messages": [{"role": m.role,
                          "content": content_list(request.parts(m), lambda t: {"text": t}, bedrock_part)
                          or [{"text": ""}]}
                         for m in request.messages if m.role != "system"],
            "inferenceConfig": {"maxTokens": request.max_tokens},
        }
        if system:
            payload["system"] = system
        if request.temperature is not None:
            payload["inferenceConfig"]["temperature"] = request.temperature
        if request.response_schema is not None and level != "none":
            payload["toolConfig"] = {
                "tools": [{"toolSpec": {
                    "name": request.schema_name,
                    "description": "Submit the verdict. Call this tool exactly once with every field filled in.",
                    "inputSchema": {"json": request.response_schema},
                }}],
                "toolChoice": {"tool": {"name": request.schema_name}} if level == "tool" else {"any": {}},
            }
        return payload

    def secrets(self) -> tuple[str, ...]:
        # The credentials of the last signature (reading them again could trigger a refresh on the hot path).
        return self._signed_with

    def _signed(self, url: str, body: bytes) -> dict[str, str]:
        """SigV4 headers for this exact request (botocore signs; credentials refresh themselves)."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        frozen = self._credentials.get_frozen_credentials()
        self._signed_with = tuple(s for s in (frozen.secret_key, frozen.token) if s)
        req = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
        SigV4Auth(frozen, "bedrock", self.region).add_auth(req)
        return dict(req.headers.items())

    async def complete(self, request: JudgeRequest) -> Completion:
        # The model id (``anthropic.claude-...-v1:0``) is percent-encoded in the path, and the URL is sent exactly
        # as signed (yarl must not re-quote it).
        url = f"{self.base_url}/model/{quote(self.model, safe='')}/converse"
        while True:
            level = _LEVELS[self._level]
            body = json.dumps(self._payload(request, level)).encode()
            try:
                text, latency = await self._http.request("POST", URL(url, encoded=True), data=body,
                                                         headers=self._signed(url, body))
                break
            except ProviderError as exc:
                if (exc.status == 400 and request.response_schema is not None
                        and self._level < len(_LEVELS) - 1 and _mentions_tools(str(exc))):
                    self._level += 1
                    continue
                raise
        return self.parse_reply(self._http.decode(text), latency)

    def parse_reply(self, data: dict[str, Any], latency: float = 0.0) -> Completion:
        try:
            blocks = data["output"]["message"]["content"]
            if not isinstance(blocks, list):
                raise TypeError
        except (KeyError, TypeError) as exc:
            raise ProviderError("AWS Bedrock: reply has no output.message.content", retryable=True) from exc
        text = ""
        for block in blocks:
            if isinstance(block, dict) and isinstance(block.get("toolUse"), dict):
                text = json.dumps(block["toolUse"].get("input"), ensure_ascii=False)
                break
        else:
            text = "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
        usage = data.get("usage") or {}
        cached = usage.get("cacheReadInputTokens")
        ins = usage.get("inputTokens")
        if isinstance(ins, int):  # Converse reports cache reads and writes apart from inputTokens
            ins += sum(v for k in ("cacheReadInputTokens", "cacheWriteInputTokens")
                       if isinstance(v := usage.get(k), int))
        return Completion(text=text, input_tokens=ins if isinstance(ins, int) else None,
                          output_tokens=usage.get("outputTokens"), model=self.model, latency_ms=latency, raw=data,
                          cache_read_tokens=cached if isinstance(cached, int) else None)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "region": self.region}

    async def aclose(self) -> None:
        await self._http.aclose()


def _mentions_tools(message: str) -> bool:
    m = message.lower()
    return any(w in m for w in ("toolchoice", "tool_choice", "tool choice", "tool use", "tooluse", "toolconfig",
                                "tool config", "doesn't support tool", "does not support tool"))
