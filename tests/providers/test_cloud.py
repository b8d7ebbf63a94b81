"""Azure OpenAI, AWS Bedrock and Vertex AI wire formats, through the real HTTP client against the local server
(and the real sign-in libraries: botocore signs, google-auth fetches its token from the local token endpoint)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from referee.errors import ProviderAuthError, UserError
from referee.evaluators._judge import TEMPLATE_REPLY_SCHEMA
from referee.providers import Completion, JudgeRequest, Message, Provider, get_provider
from referee.runner import JudgeClient
from referee.testing import FakeLLMServer, Reply
from referee.testing._server import WireRequest
from tests.support.judging import judge_args, read_rows, run, verdict

REQ = JudgeRequest(messages=(Message("system", "SYS"), Message("user", "grade this")),
                   response_schema=TEMPLATE_REPLY_SCHEMA, max_tokens=300, temperature=0.0)
AZURE_KEY = "azure-key-0123456789abcdefSECRET"
AWS_ID = "AKIAFAKEFAKEFAKE1234"
AWS_SECRET = "fake/secret/KEY0123456789abcdefghijSECRET"
AWS_TOKEN = "FwoGZXIvYXdzEFAKESESSIONTOKEN0123456789"
BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
_CLOUD_ENV = ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT",
              "AZURE_OPENAI_API_VERSION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
              "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
              "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


@pytest.fixture(autouse=True)
def _no_cloud_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only the credentials a test sets: no ~/.aws, no gcloud folder, no metadata servers."""
    for var in _CLOUD_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("HOME", str(tmp_path))


async def complete_once(p: Provider, request: JudgeRequest = REQ) -> Completion:
    try:
        return await p.complete(request)
    finally:
        await p.aclose()


# -- Azure OpenAI --------------------------------------------------------------------------------------------
async def test_azure_deployment_url_api_version_and_api_key_header(fake_server: FakeLLMServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    fake_server.script(Reply(text=verdict(0.7), input_tokens=21, output_tokens=6))
    p = get_provider("azure", "my-gpt4o", base_url=fake_server.url)
    c = await complete_once(p)
    assert json.loads(c.text)["overall_score"] == 0.7 and (c.input_tokens, c.output_tokens) == (21, 6)
    (req,) = fake_server.requests
    assert req.path == "/openai/deployments/my-gpt4o/chat/completions"
    assert req.query == {"api-version": "2024-10-21"}
    assert req.headers["api-key"] == AZURE_KEY and "Authorization" not in req.headers
    assert req.body["max_tokens"] == 300 and req.body["response_format"]["type"] == "json_schema"
    assert AZURE_KEY not in json.dumps(p.describe()) and AZURE_KEY not in repr(p)


async def test_azure_entra_token_and_newer_api_version(fake_server: FakeLLMServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "eyJ0eXAiOiJKV1Qi.entra-token-SECRET")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", fake_server.url + "/")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "o4-mini-dep")
    fake_server.script(verdict(0.5))
    await complete_once(get_provider("azure", None))
    (req,) = fake_server.requests
    assert req.path == "/openai/deployments/o4-mini-dep/chat/completions"
    assert req.query == {"api-version": "2025-04-01-preview"}
    assert req.headers["Authorization"] == "Bearer eyJ0eXAiOiJKV1Qi.entra-token-SECRET"
    assert "api-key" not in req.headers
    # Reasoning deployments reject max_tokens from this API version on.
    assert req.body["max_completion_tokens"] == 300 and "max_tokens" not in req.body


async def test_azure_entra_id_through_azure_identity(fake_server: FakeLLMServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    identity = pytest.importorskip("azure.identity")
    calls: list[tuple[str, ...]] = []

    class FakeCredential:  # the one seam: DefaultAzureCredential would reach login.microsoftonline.com
        def get_token(self, *scopes: str) -> object:
            calls.append(scopes)
            from azure.core.credentials import AccessToken
            return AccessToken("entra-from-identity-SECRET", 4102444800)

    monkeypatch.setattr(identity, "DefaultAzureCredential", FakeCredential)
    fake_server.script(verdict(0.5), verdict(0.6))
    p = get_provider("azure", "dep", base_url=fake_server.url)
    try:
        await p.complete(REQ)
        await p.complete(REQ)
    finally:
        await p.aclose()
    assert calls == [("https://cognitiveservices.azure.com/.default",)]  # fetched once, reused until expiry
    assert [r.headers["Authorization"] for r in fake_server.requests] == ["Bearer entra-from-identity-SECRET"] * 2


def test_azure_missing_endpoint_deployment_or_credentials_are_one_line_errors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="AZURE_OPENAI_ENDPOINT"):
        get_provider("azure", "dep")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
    with pytest.raises(UserError, match="AZURE_OPENAI_DEPLOYMENT"):
        get_provider("azure", None)


def test_azure_without_key_token_or_azure_identity_names_what_it_looked_at(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_identity(name: str, *a: object, **k: object) -> object:
        if name.startswith("azure.identity"):
            raise ImportError(name)
        return real_import(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_identity)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
    with pytest.raises(ProviderAuthError) as ei:
        get_provider("azure", "dep")
    msg = str(ei.value)
    assert "\n" not in msg
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "referee[azure]"):
        assert name in msg


# -- AWS Bedrock ------------------------------------------------------------------------------------------------
def _aws_env(monkeypatch: pytest.MonkeyPatch, srv: FakeLLMServer, *, token: bool = True) -> None:
    pytest.importorskip("botocore")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    if token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_TOKEN)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.url)


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def verify_sigv4(req: WireRequest, *, secret: str, region: str, service: str = "bedrock") -> str:
    """An independent SigV4 check (AWS's published algorithm) of what arrived: returns the access key id."""
    auth = req.headers["Authorization"]
    m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=(\w+)/(\d{8})/([\w-]+)/([\w-]+)/aws4_request, "
                     r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})", auth)
    assert m, auth
    key_id, day, reg, svc, signed, signature = m.groups()
    assert (reg, svc) == (region, service)
    amz_date = req.headers["X-Amz-Date"]
    assert amz_date.startswith(day)
    lower = {k.lower(): v for k, v in req.headers.items()}
    names = signed.split(";")
    assert "host" in names and "x-amz-date" in names
    path, _, query = req.raw_path.partition("?")
    canonical = "\n".join([
        req.method, quote(path, safe="/~"), query,
        "".join(f"{n}:{' '.join(lower[n].split())}\n" for n in names), signed,
        hashlib.sha256(req.raw_body).hexdigest(),
    ])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, f"{day}/{region}/{service}/aws4_request",
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), region), service), "aws4_request")
    assert hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest() == signature, "SigV4 signature mismatch"
    return key_id


async def test_bedrock_converse_with_forced_tool_and_a_valid_sigv4_signature(
        fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _aws_env(monkeypatch, fake_server)
    fake_server.script(Reply(text=verdict(0.9), input_tokens=33, output_tokens=8))
    p = get_provider("bedrock", BEDROCK_MODEL)
    c = await complete_once(p)
    assert json.loads(c.text)["overall_score"] == 0.9 and (c.input_tokens, c.output_tokens) == (33, 8)
    (req,) = fake_server.requests
    # The model id's ':' is percent-encoded in the path, exactly as signed.
    assert req.raw_path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    assert verify_sigv4(req, secret=AWS_SECRET, region="eu-west-3") == AWS_ID
    assert req.headers["X-Amz-Security-Token"] == AWS_TOKEN
    b = req.body
    assert b["system"] == [{"text": "SYS"}]
    assert b["messages"] == [{"role": "user", "content": [{"text": "grade this"}]}]
    assert b["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.0}
    tool = b["toolConfig"]["tools"][0]["toolSpec"]
    assert tool["name"] == "verdict" and tool["inputSchema"]["json"] == TEMPLATE_REPLY_SCHEMA
    assert b["toolConfig"]["toolChoice"] == {"tool": {"name": "verdict"}}
    assert AWS_SECRET not in json.dumps(dict(req.headers)) and AWS_SECRET not in json.dumps(p.describe())


async def test_bedrock_degrades_from_forced_tool_to_any_then_plain_json(
        fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _aws_env(monkeypatch, fake_server, token=False)
    bad_choice = Reply(status=400, body={"message": "This model doesn't support the toolChoice.tool field."})
    no_tools = Reply(status=400, body={"message": "This model doesn't support tool use."})
    fake_server.script(bad_choice, no_tools, Reply(text=verdict(0.4)))
    p = get_provider("bedrock", "meta.llama3-70b-instruct-v1:0")
    c = await complete_once(p)
    assert json.loads(c.text)["overall_score"] == 0.4
    sent = [r.body.get("toolConfig", {}).get("toolChoice") for r in fake_server.requests]
    assert sent == [{"tool": {"name": "verdict"}}, {"any": {}}, None]
    assert "X-Amz-Security-Token" not in fake_server.requests[0].headers


def test_bedrock_missing_credentials_and_region(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("botocore")
    with pytest.raises(ProviderAuthError) as ei:
        get_provider("bedrock", BEDROCK_MODEL)
    msg = str(ei.value)
    assert "\n" not in msg and "AWS_ACCESS_KEY_ID" in msg and "AWS_PROFILE" in msg and "~/.aws/credentials" in msg
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    with pytest.raises(UserError, match="AWS_REGION"):
        get_provider("bedrock", BEDROCK_MODEL)


def test_bedrock_judge_run_end_to_end_priced_and_nothing_secret_recorded(
        fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _aws_env(monkeypatch, fake_server)
    fake_server.script(*[Reply(text=verdict(0.8), input_tokens=1000, output_tokens=100)] * 3)
    args = judge_args(tmp_path, fake_server, provider="bedrock")
    args[args.index("--base-url"):args.index("--base-url") + 2] = []
    args[args.index("--model") + 1] = BEDROCK_MODEL
    code, _, err = run(args, capsys)
    assert code == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert [r.get("status", "scored") for r in rows] == ["scored"] * 3 and len(rows) == 3
    # Claude 3 Haiku on Bedrock: $0.25 / $1.25 per MTok in genai-prices.
    assert all(r["cost_usd"] == pytest.approx(1000 / 1e6 * 0.25 + 100 / 1e6 * 1.25) for r in rows)
    manifest = json.loads((tmp_path / "results.manifest.json").read_text())
    assert manifest["judge"]["provider"] == "bedrock"
    assert manifest["judge"]["price_source"].startswith("genai-prices ")
    recorded = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".sqlite")
    recorded += err + "".join(p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*.sqlite*"))
    for secret in (AWS_SECRET, AWS_TOKEN):
        assert secret not in recorded


# -- Vertex AI ------------------------------------------------------------------------------------------------
def _adc_file(tmp: Path, srv: FakeLLMServer) -> Path:
    """Application Default Credentials of a service account whose token endpoint is the local server (google-auth
    signs a JWT with the key and trades it there for an access token, as it would at oauth2.googleapis.com)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path = tmp / "adc.json"
    path.write_text(json.dumps({"type": "service_account", "project_id": "adc-proj", "private_key_id": "kid1",
                                "private_key": pem, "client_email": "judge@adc-proj.iam.gserviceaccount.com",
                                "client_id": "1234", "token_uri": f"{srv.url}/token"}))
    return path


async def test_vertex_gemini_endpoint_with_an_adc_bearer_token(fake_server: FakeLLMServer,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    pytest.importorskip("google.auth")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_adc_file(tmp_path, fake_server)))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    fake_server.script(Reply(text=verdict(0.6), input_tokens=50, output_tokens=9), verdict(0.7))
    p = get_provider("vertex", "gemini-2.5-flash", base_url=fake_server.url)
    try:
        c = await p.complete(REQ)
        await p.complete(REQ)
    finally:
        await p.aclose()
    assert json.loads(c.text)["overall_score"] == 0.6 and (c.input_tokens, c.output_tokens) == (50, 9)
    assert len(fake_server.token_requests) == 1  # one token, reused while valid
    assert fake_server.token_requests[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    req = fake_server.requests[0]
    assert req.path == ("/v1/projects/my-proj/locations/europe-west4/publishers/google/models/"
                        "gemini-2.5-flash:generateContent")
    assert req.headers["Authorization"] == f"Bearer {fake_server.access_token}"
    assert "x-goog-api-key" not in req.headers and not req.query
    assert req.body["generationConfig"]["responseMimeType"] == "application/json"
    assert req.body["systemInstruction"] == {"parts": [{"text": "SYS"}]}


def test_vertex_missing_adc_names_the_places_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("google.auth")
    with pytest.raises(ProviderAuthError) as ei:
        get_provider("vertex", "gemini-2.5-flash")
    msg = str(ei.value)
    assert "\n" not in msg and "GOOGLE_APPLICATION_CREDENTIALS" in msg
    assert "application_default_credentials.json" in msg


def test_cloud_credentials_missing_exit_2_from_the_cli(fake_server: FakeLLMServer, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("botocore")
    code, _, err = run(judge_args(tmp_path, fake_server, provider="bedrock"), capsys)
    assert code == 2 and "no AWS credentials" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("provider", "module", "extra"), [("bedrock", "botocore", "referee[bedrock]"),
                                                           ("vertex", "google.auth", "referee[vertex]")])
def test_a_missing_sign_in_library_names_the_extra(monkeypatch: pytest.MonkeyPatch, provider: str, module: str,
                                                   extra: str) -> None:
    import builtins

    real_import = builtins.__import__

    def without(name: str, *a: object, **k: object) -> object:
        if name == module or name.startswith(module + "."):
            raise ImportError(name)
        return real_import(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", without)
    with pytest.raises(UserError) as ei:
        get_provider(provider, "m")
    assert extra in str(ei.value) and "\n" not in str(ei.value)


async def test_a_server_echoing_the_token_or_key_never_gets_it_into_an_error(
        fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from referee.errors import ProviderError

    pytest.importorskip("google.auth")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_adc_file(tmp_path, fake_server)))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    token = fake_server.access_token
    fake_server.script(Reply(status=400, body={"error": {"message": f"bad request from Bearer {token}"}}))
    p = get_provider("vertex", "gemini-2.5-flash", base_url=fake_server.url)
    with pytest.raises(ProviderError) as ei:
        await complete_once(p)
    assert token not in str(ei.value) and "***" in str(ei.value)

    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    fake_server.script(Reply(status=400, body={"error": {"message": f"api-key {AZURE_KEY} is not valid here"}}))
    with pytest.raises(ProviderError) as ei:
        await complete_once(get_provider("azure", "dep", base_url=fake_server.url))
    assert AZURE_KEY not in str(ei.value)


# -- A judge echoing the credentials ------------------------------------------------------------------------------
async def _echoed_reply(p: Provider, srv: FakeLLMServer, secret: str) -> str:
    """The text a judge client hands on when the judge's reply quotes the provider's credential."""
    srv.script(f"my credential is {secret}\n" + verdict(0.5))
    client = JudgeClient(p)
    try:
        return (await client.complete(REQ)).text
    finally:
        await client.aclose()


async def test_an_azure_key_given_in_code_is_masked_in_an_echoing_reply(fake_server: FakeLLMServer) -> None:
    """Not in the environment (whose key variables are masked anyway) and not key-shaped: only the provider
    knows it is a secret."""
    from referee.providers._azure import AzureOpenAIProvider

    p = AzureOpenAIProvider("dep", base_url=fake_server.url, api_key=AZURE_KEY)
    text = await _echoed_reply(p, fake_server, AZURE_KEY)
    assert AZURE_KEY not in text and "my credential is ***" in text


async def test_an_azure_entra_token_is_masked_in_an_echoing_reply(fake_server: FakeLLMServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    identity = pytest.importorskip("azure.identity")

    class FakeCredential:
        def get_token(self, *scopes: str) -> object:
            from azure.core.credentials import AccessToken
            return AccessToken("entra-from-identity-SECRET", 4102444800)

    monkeypatch.setattr(identity, "DefaultAzureCredential", FakeCredential)
    p = get_provider("azure", "dep", base_url=fake_server.url)
    text = await _echoed_reply(p, fake_server, "entra-from-identity-SECRET")
    assert "entra-from-identity-SECRET" not in text and "my credential is ***" in text


async def test_a_vertex_access_token_is_masked_in_an_echoing_reply(fake_server: FakeLLMServer,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    pytest.importorskip("google.auth")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_adc_file(tmp_path, fake_server)))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    p = get_provider("vertex", "gemini-2.5-flash", base_url=fake_server.url)
    text = await _echoed_reply(p, fake_server, fake_server.access_token)
    assert fake_server.access_token not in text and "my credential is ***" in text


async def test_aws_credentials_from_a_profile_file_are_masked_in_an_echoing_reply(
        fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("botocore")
    (tmp_path / "aws-credentials").write_text(f"[default]\naws_access_key_id = {AWS_ID}\n"
                                              f"aws_secret_access_key = {AWS_SECRET}\n"
                                              f"aws_session_token = {AWS_TOKEN}\n")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake_server.url)
    p = get_provider("bedrock", BEDROCK_MODEL)
    text = await _echoed_reply(p, fake_server, f"{AWS_SECRET} {AWS_TOKEN}")
    assert AWS_SECRET not in text and AWS_TOKEN not in text and "my credential is *** ***" in text
