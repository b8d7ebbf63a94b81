"""Every target kind against a local server or a callable started by the test: what it sends, what it records,
and how each failure becomes an error (never an empty output)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.targets import generate_outputs, parse_targets
from referee.testing import FakeLLMServer, Reply

CASE = {"id": "c1", "input": "Where is my order?", "customer": "Ada", "output": "an old recorded answer"}


def _model(srv: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    return {"id": "v1", "provider": "openai", "model": "sut-model", "base_url": srv.openai_base_url,
            "template": "Customer {customer} asks: {input}", **extra}


def test_model_target_fills_the_template_and_records_its_own_cost_and_latency(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text="It ships tomorrow.", input_tokens=100, output_tokens=20, delay=0.05))
    spec = _model(fake_server, system="You are support for {customer}.", input_price_per_mtok=1.0,
                  output_price_per_mtok=2.0)
    [(case, gen)] = generate_outputs(spec, [CASE])
    assert gen.error is None and case.output == "It ships tomorrow."
    body = fake_server.requests[0].body
    assert body["model"] == "sut-model"
    assert body["messages"] == [{"role": "system", "content": "You are support for Ada."},
                                {"role": "user", "content": "Customer Ada asks: Where is my order?"}]
    assert gen.cost_usd == pytest.approx(100 / 1e6 * 1.0 + 20 / 1e6 * 2.0)
    assert gen.latency_ms is not None and gen.latency_ms >= 50
    assert gen.usage is not None and (gen.usage.input_tokens, gen.usage.output_tokens, gen.usage.calls) == (100, 20, 1)


def test_an_unchanged_rerun_is_served_by_the_response_cache_with_the_original_cost(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text="Answer one", delay=0.02))
    spec = _model(fake_server, input_price_per_mtok=1.0, output_price_per_mtok=1.0)
    [(_, first)] = generate_outputs(spec, [CASE])
    [(case, again)] = generate_outputs(spec, [CASE])
    assert len(fake_server.requests) == 1
    assert case.output == "Answer one"
    assert again.usage is not None and again.usage.cached_calls == 1 and again.usage.calls == 0
    # The output's cost and latency are what producing it cost, not what reading the cache cost.
    assert again.cost_usd == first.cost_usd and again.latency_ms == pytest.approx(first.latency_ms, abs=5)


def test_a_template_naming_a_missing_field_is_an_error_and_nothing_is_called(fake_server: FakeLLMServer) -> None:
    spec = _model(fake_server, template="Order {order_id}: {input}")
    [(case, gen)] = generate_outputs(spec, [CASE])
    assert gen.error is not None and "{order_id}" in gen.error and "'c1'" in gen.error
    assert case.output == "an old recorded answer"  # the case is left as it was, never given an empty output
    assert fake_server.requests == []


def test_the_recorded_output_is_never_shown_to_the_target(fake_server: FakeLLMServer) -> None:
    spec = _model(fake_server, template="{input} / {output}")
    [(_, gen)] = generate_outputs(spec, [CASE])
    assert gen.error is not None and "{output}" in gen.error


def test_a_server_error_after_retries_is_an_error_with_the_reason(fake_server: FakeLLMServer) -> None:
    fake_server.script(*[Reply(status=500)] * 3)
    [(_, gen)] = generate_outputs(_model(fake_server, max_retries=2), [CASE])
    assert gen.error is not None and "HTTP 500" in gen.error
    assert len(fake_server.requests) == 3


def test_an_unreachable_model_server_is_an_error_row_not_a_crash() -> None:
    spec = {"id": "v1", "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "template": "{input}",
            "max_retries": 1}
    [(_, gen)] = generate_outputs(spec, [CASE])
    assert gen.error is not None and "cannot connect" in gen.error


def test_python_targets_sync_async_input_or_case(tmp_path: Path, user_module: Any) -> None:
    mod = user_module(
        "import asyncio\n"
        "def by_input(text):\n    return text.upper()\n"
        "def by_case(case):\n    return {'output': case['customer'] + ': ' + case['input'], 'cost_usd': 0.5}\n"
        "async def both(text, case):\n    await asyncio.sleep(0)\n    return {'answer': text, 'id': case['id']}\n"
        "def boom(text):\n    raise RuntimeError('model overloaded')\n"
        "def nothing(text):\n    return None\n")
    out = {}
    for fn in ("by_input", "by_case", "both", "boom", "nothing"):
        [(case, gen)] = generate_outputs({"id": fn, "python": f"{mod}:{fn}"}, [CASE], base_dir=tmp_path)
        out[fn] = (case, gen)
    assert out["by_input"][0].output == "WHERE IS MY ORDER?"
    assert out["by_case"][0].output == "Ada: Where is my order?" and out["by_case"][1].cost_usd == 0.5
    assert out["both"][0].output == {"answer": "Where is my order?", "id": "c1"}  # a dict without 'output' is the output
    assert out["boom"][1].error == "RuntimeError: model overloaded"
    assert out["nothing"][1].error is not None and "None" in out["nothing"][1].error


def test_exec_target_gets_the_case_on_stdin(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text("import json, sys\ncase = json.load(sys.stdin)\n"
                      "if case['id'] == 'fail':\n    sys.stderr.write('token limit reached'); sys.exit(3)\n"
                      "if case['id'] == 'quiet':\n    sys.exit(0)\n"
                      "print(json.dumps({'output': 'echo: ' + case['input'], 'cost_usd': 0.25}))\n", encoding="utf-8")
    cases = [CASE, {"id": "fail", "input": "x"}, {"id": "quiet", "input": "x"}]
    res = {c.id: g for c, g in generate_outputs({"id": "cli", "exec": "python agent.py"}, cases, base_dir=tmp_path)}
    assert res["c1"].output == "echo: Where is my order?" and res["c1"].cost_usd == 0.25
    assert res["fail"].error == "the command exited 3: token limit reached"
    assert res["quiet"].error == "the command printed nothing on stdout"
    [(_, missing)] = generate_outputs({"id": "cli", "exec": ["./no-such-binary"]}, [CASE], base_dir=tmp_path)
    assert missing.error is not None and "cannot start" in missing.error


def test_http_target_body_template_output_path_and_failures(service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def handler(body: Any) -> tuple[int, Any]:
        if body["message"] == "crash":
            return 500, {"error": "internal"}
        if body["message"] == "odd":
            return 200, {"reply": {}}
        return 200, {"reply": {"text": f"re: {body['message']}", "tags": body["tags"]}}

    srv = service(handler)
    monkeypatch.setenv("SUT_TOKEN", "sekret-token-123")
    spec = {"id": "app", "http": {"url": srv.url + "/chat", "headers": {"Authorization": "Bearer ${SUT_TOKEN}"},
                                  "body": {"message": "{input}", "tags": "{tags}"}, "output": "reply.text",
                                  "max_retries": 1}}
    cases = [{"id": "a", "input": "hello", "tags": ["x", "y"]}, {"id": "b", "input": "crash", "tags": []},
             {"id": "c", "input": "odd", "tags": []}]
    res = {c.id: (c, g) for c, g in generate_outputs(spec, cases)}
    assert res["a"][0].output == "re: hello"
    assert srv.requests[0]["body"] == {"message": "hello", "tags": ["x", "y"]}  # a bare {field} keeps its JSON type
    assert srv.requests[0]["headers"]["Authorization"] == "Bearer sekret-token-123"
    assert res["b"][1].error is not None and "HTTP 500" in res["b"][1].error
    assert sum(1 for r in srv.requests if r["body"]["message"] == "crash") == 2  # one retry
    assert res["c"][1].error == "the reply has no 'reply.text' (reply has no 'text')"
    assert all("sekret" not in (g.error or "") for _, g in res.values())


def test_http_target_unreachable_is_an_error() -> None:
    spec = {"id": "app", "http": {"url": "http://127.0.0.1:9/chat", "body": {"m": "{input}"}, "max_retries": 0}}
    [(_, gen)] = generate_outputs(spec, [CASE])
    assert gen.error is not None and "cannot reach" in gen.error


TOOLS = [{"name": "lookup_order", "description": "Find an order",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
         {"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}}]
TOOL_CASE = {"id": "t1", "input": "Where is order A1?",
             "tool_results": {"lookup_order": [{"args": {"order_id": "A1"}, "result": {"status": "shipped"}},
                                               {"result": {"error": "unknown order"}}]}}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_tool_loop_records_the_trajectory_the_checks_read(fake_server: FakeLLMServer, provider: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.cases._case import Case
    from referee.evaluators._trajectory import ToolArgs, ToolUsed

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    fake_server.script(Reply(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "A1"}}]),
                       Reply(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "ZZ"}}]),
                       Reply(text="Order A1 has shipped."))
    base = fake_server.openai_base_url if provider == "openai" else fake_server.url
    spec = {"id": "agent", "provider": provider, "model": "m", "base_url": base, "template": "{input}",
            "tools": TOOLS}
    [(case, gen)] = generate_outputs(spec, [TOOL_CASE])
    assert gen.error is None and case.output == "Order A1 has shipped."
    assert [(s["tool"], s["args"], s.get("result"), s.get("error")) for s in gen.trajectory or []] == [
        ("lookup_order", {"order_id": "A1"}, {"status": "shipped"}, None),
        ("lookup_order", {"order_id": "ZZ"}, {"error": "unknown order"}, None)]
    assert gen.usage is not None and gen.usage.calls == 3
    first, second = fake_server.requests[0].body, fake_server.requests[1].body
    if provider == "openai":
        assert [t["function"]["name"] for t in first["tools"]] == ["lookup_order", "refund"]
        tool_msg = second["messages"][-1]
        assert tool_msg["role"] == "tool" and json.loads(tool_msg["content"]) == {"status": "shipped"}
        assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "lookup_order"
    else:
        assert [t["name"] for t in first["tools"]] == ["lookup_order", "refund"] and "tool_choice" not in first
        block = second["messages"][-1]["content"][0]
        assert block["type"] == "tool_result" and json.loads(block["content"]) == {"status": "shipped"}
    # The recorded trajectory is what the trajectory checks read, unchanged.
    c = Case(id=case.id, data=case.data)
    assert ToolUsed(tools=["lookup_order"]).evaluate(c, c.output).passed is True
    assert ToolUsed(tools=["refund"]).evaluate(c, c.output).passed is False
    assert ToolArgs(tool="lookup_order", args={"order_id": "A1"}).evaluate(c, c.output).passed is True
    # The run's own tokens are budgeted: 3 model calls x (120 + 40) tokens from the server.
    from referee.evaluators._trajectory import TrajectoryBudget

    assert TrajectoryBudget(max_tokens=400).evaluate(c, c.output).passed is False
    assert TrajectoryBudget(max_tokens=480, max_steps=2).evaluate(c, c.output).passed is True
    traj = gen.trajectory_model()
    assert traj is not None and traj.tools == ["lookup_order", "lookup_order"] and traj.total_tokens() == 480


def test_tool_results_from_a_python_function_and_the_loop_limit(fake_server: FakeLLMServer, tmp_path: Path,
                                                                 user_module: Any) -> None:
    mod = user_module("def tools(name, args, case):\n"
                      "    if name == 'refund':\n        raise PermissionError('refunds need approval')\n"
                      "    return {'order': args.get('order_id'), 'customer': case['id']}\n")
    fake_server.script(Reply(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "B2"}},
                                         {"name": "refund", "arguments": {"order_id": "B2"}}]),
                       Reply(text="Done."))
    spec = {"id": "agent", "provider": "openai", "model": "m", "base_url": fake_server.openai_base_url,
            "template": "{input}", "tools": TOOLS, "tool_results": f"{mod}:tools"}
    [(_, gen)] = generate_outputs(spec, [{"id": "k", "input": "refund B2"}], base_dir=tmp_path)
    steps = gen.trajectory or []
    assert steps[0]["result"] == {"order": "B2", "customer": "k"}
    assert steps[1]["error"] == "PermissionError: refunds need approval"
    tool_msgs = [m for m in fake_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert json.loads(tool_msgs[1]["content"]) == {"error": "PermissionError: refunds need approval"}
    # A model that never stops calling tools is cut off: an error, not an endless loop or an empty answer.
    fake_server.responder = lambda req: Reply(tool_calls=[{"name": "lookup_order", "arguments": {}}])
    [(_, looped)] = generate_outputs({**spec, "max_steps": 3}, [{"id": "k2", "input": "x"}], base_dir=tmp_path)
    assert looped.error is not None and "max_steps=3" in looped.error


def test_multi_turn_replay_sends_the_user_turns_with_the_targets_own_replies(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text="Hi Ada, how can I help?"), Reply(text="Your refund is on its way."))
    case = {"id": "conv", "input": "And my refund?", "turns": [
        {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "OLD REPLY"},
        {"role": "user", "content": "And my refund?"}]}
    [(out, gen)] = generate_outputs(_model(fake_server, template="{input}"), [case])
    assert out.output == "Your refund is on its way."
    assert out.turns == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi Ada, how can I help?"},
                         {"role": "user", "content": "And my refund?"},
                         {"role": "assistant", "content": "Your refund is on its way."}]
    second = fake_server.requests[1].body["messages"]
    assert [m["content"] for m in second] == ["Hello", "Hi Ada, how can I help?", "And my refund?"]
    assert "OLD REPLY" not in json.dumps(second)


def test_multi_turn_replay_with_a_python_target(tmp_path: Path, user_module: Any) -> None:
    mod = user_module("def bot(case):\n    return f\"turn {len(case['turns'])}: {case['input']}\"\n")
    case = {"id": "conv", "input": "b", "turns": [{"role": "user", "content": "a"},
                                                  {"role": "assistant", "content": "x"}, {"role": "user", "content": "b"}]}
    [(out, _)] = generate_outputs({"id": "fn", "python": f"{mod}:bot"}, [case], base_dir=tmp_path)
    assert out.output == "turn 3: b"
    assert [t["content"] for t in out.turns or []] == ["a", "turn 1: a", "b", "turn 3: b"]


def test_prompts_x_models_matrix_and_validation(tmp_path: Path) -> None:
    (tmp_path / "v1.md").write_text("{input}", encoding="utf-8")
    (tmp_path / "v2.md").write_text("Be brief. {input}", encoding="utf-8")
    specs, problems = parse_targets({"prompts": ["v1.md", {"id": "short", "prompt": "v2.md"}],
                                     "models": ["openai:gpt-4o-mini", {"provider": "anthropic", "model": "claude/x",
                                                                       "id": "claude"}]}, tmp_path)
    assert problems == []
    assert [s.id for s in specs] == ["v1@gpt-4o-mini", "v1@claude", "short@gpt-4o-mini", "short@claude"]
    assert specs[1].provider == "anthropic" and specs[1].model == "claude/x" and specs[2].prompt == "v2.md"
    _, problems = parse_targets({"targets": [
        {"id": "a", "provider": "openai", "prompt": "missing.md"},
        {"id": "a", "python": "m:f"},
        {"id": "b", "python": "m:f", "exec": "x"},
        {"id": "../escape", "python": "m:f"},
        {"id": "c", "python": "m:f", "colour": "red"},
        {"id": "d", "http": {"url": "ftp://x"}}]}, tmp_path)
    text = "\n".join(f"{loc}: {msg}" for loc, msg in problems)
    assert "prompt file not found" in text and "duplicate target id 'a'" in text
    assert "python, exec" in text and "('targets', 3, 'id')" in text and "unknown key" in text
    assert "http://" in text
    _, problems = parse_targets({"prompts": ["v1.md"]}, tmp_path)
    assert problems and "needs 'models:'" in problems[0][1]


def test_a_python_target_that_does_not_import_is_a_usage_error(tmp_path: Path) -> None:
    from referee.errors import UserError

    with pytest.raises(UserError, match="cannot import"):
        generate_outputs({"id": "x", "python": "no_such_module_xyz:fn"}, [CASE], base_dir=tmp_path)


def test_a_model_target_without_a_key_is_a_usage_error() -> None:
    from referee.errors import UserError

    with pytest.raises(UserError, match="target 'v1'.*OPENAI_API_KEY"):
        generate_outputs({"id": "v1", "provider": "openai", "template": "{input}"}, [CASE])


def test_sys_path_gets_the_base_dir(tmp_path: Path, user_module: Any) -> None:
    mod = user_module("def f(x):\n    return 'ok'\n")
    generate_outputs({"id": "x", "python": f"{mod}:f"}, [CASE], base_dir=tmp_path)
    assert str(tmp_path.resolve()) in sys.path


def test_a_command_target_adds_no_import_path(tmp_path: Path) -> None:
    # A command's own script (here `agent.py`) must not shadow a module of that name another suite imports later.
    (tmp_path / "agent.py").write_text("print('{\"output\": \"hi\"}')\n", encoding="utf-8")
    [(_, gen)] = generate_outputs({"id": "cli", "exec": "python agent.py"}, [CASE], base_dir=tmp_path)
    assert gen.output == "hi"
    assert str(tmp_path.resolve()) not in sys.path


def test_tool_calling_follows_the_wire_format_of_every_provider() -> None:
    from referee.errors import UserError
    from referee.providers import provider_class
    from referee.targets._wire import AnthropicToolProvider, OpenAIToolProvider, with_tools

    azure = with_tools(provider_class("azure"))
    assert issubclass(azure, OpenAIToolProvider) and issubclass(azure, provider_class("azure"))
    assert azure.name == "azure"  # Azure's own endpoint and credentials, the OpenAI tool payload
    assert issubclass(with_tools(provider_class("ollama")), OpenAIToolProvider)
    assert issubclass(with_tools(provider_class("anthropic")), AnthropicToolProvider)
    with pytest.raises(UserError, match="tools need the OpenAI or Anthropic wire format"):
        with_tools(provider_class("gemini"))


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_plain_model_targets_on_other_wire_formats(fake_server: FakeLLMServer, provider: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test-key")
    fake_server.script(Reply(text="Refunds take 5 days."))
    spec = {"id": "t", "provider": provider, "model": "m", "base_url": fake_server.url, "template": "Q: {input}",
            "system": "Be brief."}
    [(case, gen)] = generate_outputs(spec, [CASE])
    assert gen.error is None and case.output == "Refunds take 5 days."
    req = fake_server.requests[0]
    assert req.format == provider and req.last_user_text == "Q: Where is my order?" and "Be brief." in req.prompt_text


def test_a_python_agent_returning_its_own_openai_messages_is_checked_as_a_trajectory(tmp_path: Path,
                                                                                     user_module: Any) -> None:
    from referee.cases._case import Case
    from referee.evaluators._trajectory import ToolNotUsed, ToolUsed

    mod = user_module(
        "import json\n"
        "def agent(text):\n"
        "    return {'output': 'Refund issued.', 'messages': [\n"
        "        {'role': 'user', 'content': text},\n"
        "        {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function',\n"
        "            'function': {'name': 'issue_refund', 'arguments': json.dumps({'invoice': 'INV-1'})}}]},\n"
        "        {'role': 'tool', 'tool_call_id': 'c1', 'content': '{\"ok\": true}'},\n"
        "        {'role': 'assistant', 'content': 'Refund issued.'}]}\n")
    recorded = {"id": "r", "input": "refund INV-1", "trajectory": [{"step": 1, "tool": "stale_old_tool"}]}
    [(case, gen)] = generate_outputs({"id": "a", "python": f"{mod}:agent"}, [recorded], base_dir=tmp_path)
    c = Case(id=case.id, data=case.data)
    assert ToolUsed(tools=["issue_refund"]).evaluate(c, c.output).passed is True
    assert ToolNotUsed(tools=["stale_old_tool"]).evaluate(c, c.output).passed is True  # the old recording is gone
    traj = gen.trajectory_model()
    assert traj is not None and traj.source_format == "target" and traj.tools == ["issue_refund"]


@pytest.mark.parametrize(("first", "second", "shared"), [
    ("a", "a.outputs", "a.outputs.jsonl"), ("a", "a.prev", "a.prev.jsonl"), ("a", "a.prev3", "a.prev3.jsonl"),
    ("a", "a.labels", "a.labels.jsonl"), ("a.outputs", "a", "a.outputs.jsonl"),
    ("v1", "V1", "v1.jsonl"), ("x.outputs", "x.outputs.prev", "x.outputs.prev.jsonl")])
def test_target_ids_whose_files_collide_are_refused(tmp_path: Path, first: str, second: str, shared: str) -> None:
    _, problems = parse_targets({"targets": [{"id": first, "python": "m:f"}, {"id": second, "python": "m:f"}]},
                                tmp_path)
    ((loc, msg),) = problems
    assert loc == ("targets", 1, "id")
    assert f"target ids '{first}' and '{second}'" in msg and "rename one" in msg
    assert shared.casefold() in msg.casefold()


def test_target_ids_that_only_look_alike_are_kept(tmp_path: Path) -> None:
    ids = ["a", "a.b", "a.jsonl", "a.manifest", "a.lock", "a.outputsx", "a.prevx", "a-outputs", "ab"]
    _, problems = parse_targets({"targets": [{"id": i, "python": "m:f"} for i in ids]}, tmp_path)
    assert problems == []


def test_validate_refuses_colliding_target_ids_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.cli import cli

    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "q"}\n', encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\ntargets:\n  - {id: a, exec: 'cat'}\n  - {id: a.outputs, exec: 'cat'}\n"
                     "evaluators: [is_json]\n", encoding="utf-8")
    assert cli(["validate", str(suite)]) == 2
    err = capsys.readouterr().err
    assert "target ids 'a' and 'a.outputs' would share a.outputs.jsonl" in err
    assert cli(["run", str(suite), "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
