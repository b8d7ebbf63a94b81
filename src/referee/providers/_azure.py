"""Azure OpenAI: the OpenAI chat-completions wire format at a deployment URL.

``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``; the ``--model`` is the deployment
name. Credentials, in order: ``AZURE_OPENAI_API_KEY`` (the ``api-key`` header), ``AZURE_OPENAI_AD_TOKEN`` (a
Microsoft Entra ID bearer token), then Entra ID through ``azure-identity``'s ``DefaultAzureCredential`` (extra
``azure``: service principal variables, managed identity, ``az login``), refreshed before it expires.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, ClassVar
from urllib.parse import quote

from ..errors import MissingExtraError, ProviderAuthError, UserError, setting, setting_with
from ._http import HttpClient
from ._openai_compat import OpenAICompatProvider

DEFAULT_API_VERSION = "2024-10-21"
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
_LOOKED_AT = ("AZURE_OPENAI_API_KEY, AZURE_OPENAI_AD_TOKEN, then Entra ID through azure-identity "
              "(AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, managed identity, az login)")


class AzureOpenAIProvider(OpenAICompatProvider):
    name: ClassVar[str] = "azure"
    default_model: ClassVar[str] = ""
    key_env_vars: ClassVar[tuple[str, ...]] = ("AZURE_OPENAI_API_KEY",)
    price_provider: ClassVar[str | None] = "azure"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        endpoint = (base_url or os.environ.get("AZURE_OPENAI_ENDPOINT") or "").rstrip("/")
        if not endpoint:
            raise UserError("no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT "
                            f"(https://<resource>.openai.azure.com) or pass {setting('base_url')}")
        deployment = model or os.environ.get("AZURE_OPENAI_DEPLOYMENT")
        if not deployment:
            raise UserError(f"no Azure OpenAI deployment: pass {setting_with('model', '<deployment name>')} "
                            "(or set AZURE_OPENAI_DEPLOYMENT)")
        self.api_version = os.environ.get("AZURE_OPENAI_API_VERSION") or DEFAULT_API_VERSION
        # The OpenAI base class wants an OpenAI-style base URL; Azure's routing lives in _chat_url.
        super().__init__(deployment, base_url=endpoint, api_key=None, timeout=timeout)
        self._official = False  # Azure is not api.openai.com: no key check of the parent, its own below
        ad_token = os.environ.get("AZURE_OPENAI_AD_TOKEN")
        self._credential: Any = None
        self._token: tuple[str, float] | None = None
        self._token_lock = asyncio.Lock()
        headers: dict[str, str] = {}
        self._sent_secret = api_key or ad_token
        if api_key:
            headers["api-key"] = api_key
        elif ad_token:
            headers["Authorization"] = f"Bearer {ad_token}"
        else:
            try:
                from azure.identity import DefaultAzureCredential
            except ImportError as exc:
                raise ProviderAuthError(f"no Azure OpenAI credentials: looked at {_LOOKED_AT}; "
                                        f"{MissingExtraError('azure', 'azure-identity', 'Entra ID sign-in')}"
                                        ) from exc
            self._credential = DefaultAzureCredential()
        self._http = HttpClient(timeout=timeout, headers=headers, label=f"Azure OpenAI {endpoint}")
        # max_tokens is rejected by reasoning deployments from the 2024-12-01 API on; older versions lack the
        # new name.
        self._max_tokens_field = ("max_completion_tokens" if self.api_version[:10] >= "2024-12-01"
                                  else "max_tokens")

    def price_id(self) -> str | None:
        return self.price_provider

    def secrets(self) -> tuple[str, ...]:
        token = self._token[0] if self._token else None
        return tuple(s for s in (self._sent_secret, token) if s)

    def _chat_url(self) -> str:
        return (f"{self.base_url}/openai/deployments/{quote(self.model, safe='')}/chat/completions"
                f"?api-version={quote(self.api_version, safe='')}")

    async def _auth_headers(self) -> dict[str, str] | None:
        if self._credential is None:
            return None
        async with self._token_lock:
            if self._token is None or self._token[1] - time.time() < 300:
                self._token = await asyncio.to_thread(self._fetch_token)
        return {"Authorization": f"Bearer {self._token[0]}"}

    def _fetch_token(self) -> tuple[str, float]:
        try:
            tok = self._credential.get_token(ENTRA_SCOPE)
        except Exception as exc:  # noqa: BLE001 - azure-identity raises several unrelated classes
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ProviderAuthError(f"no Azure OpenAI credentials: looked at {_LOOKED_AT} ({first})") from exc
        return tok.token, float(tok.expires_on)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "api_version": self.api_version}
