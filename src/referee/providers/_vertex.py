"""Gemini on Vertex AI: the Gemini generateContent wire format at a Vertex endpoint, signed in with
Application Default Credentials (extra ``vertex``: ``google-auth``).

``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/google/
models/{model}:generateContent`` (``aiplatform.googleapis.com`` for the ``global`` location). The project comes
from ``GOOGLE_CLOUD_PROJECT`` or the credentials; the location from ``GOOGLE_CLOUD_LOCATION`` (default
``global``). The bearer token is refreshed before it expires and is never recorded.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from ..errors import MissingExtraError, ProviderAuthError, UserError
from ._gemini import GeminiProvider
from ._http import HttpClient

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_LOCATION = "global"
_LOOKED_AT = ("GOOGLE_APPLICATION_CREDENTIALS, ~/.config/gcloud/application_default_credentials.json "
              "(gcloud auth application-default login) and the GCE metadata server")


def _load_adc() -> tuple[Any, str | None]:
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError as exc:
        raise MissingExtraError("vertex", "google-auth", "Vertex AI") from exc
    try:
        creds, project = google.auth.default(scopes=[SCOPE])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise ProviderAuthError(f"no Google Cloud credentials for Vertex AI: looked at {_LOOKED_AT}") from exc
    return creds, project


class VertexProvider(GeminiProvider):
    name: ClassVar[str] = "vertex"
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    price_provider: ClassVar[str | None] = "google"
    label: str = "Vertex AI"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        self._creds, adc_project = _load_adc()
        project = os.environ.get("GOOGLE_CLOUD_PROJECT") or adc_project
        if not project:
            raise UserError("no Google Cloud project for Vertex AI: set GOOGLE_CLOUD_PROJECT")
        self.project = project
        self.location = os.environ.get("GOOGLE_CLOUD_LOCATION") or DEFAULT_LOCATION
        host = ("https://aiplatform.googleapis.com" if self.location == "global"
                else f"https://{self.location}-aiplatform.googleapis.com")
        base = (base_url or host).rstrip("/")
        # Skip GeminiProvider.__init__ (API keys); keep the Provider bookkeeping.
        super(GeminiProvider, self).__init__(model, base_url=base, api_key=None, timeout=timeout)
        self._http = HttpClient(timeout=timeout, label=f"Vertex AI {base}", headers={})
        self._lock = asyncio.Lock()

    def secrets(self) -> tuple[str, ...]:
        token = self._creds.token  # None until the first call fetches one
        return (token,) if token else ()

    def _model_url(self, action: str) -> str:
        return (f"{self.base_url}/v1/projects/{self.project}/locations/{self.location}/publishers/google/models/"
                f"{self.model}:{action}")

    async def _auth_headers(self) -> dict[str, str] | None:
        async with self._lock:
            if not self._creds.valid:
                await asyncio.to_thread(self._refresh)
        return {"Authorization": f"Bearer {self._creds.token}"}

    def _refresh(self) -> None:
        import google.auth.exceptions
        from google.auth.transport.requests import Request

        try:
            self._creds.refresh(Request())
        except google.auth.exceptions.GoogleAuthError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise ProviderAuthError(f"Vertex AI: could not get an access token from the Application Default "
                                    f"Credentials ({first})") from exc

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "project": self.project, "location": self.location}
