"""Trajectory importers: the seed shape, OpenAI, Anthropic and OTel GenAI spans, and every kind of bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from referee.cases._case import Case
from referee.trajectories import (
    TrajectoryError,
    detect_format,
    from_anthropic,
    from_openai,
    from_otel,
    from_seed,
    import_trajectory,
    trajectory_of,
)


def _case(**data: Any) -> Case:
    return Case(id=str(data.get("id", "c1")), data={"id": "c1", **data}, source="cases.jsonl", line=3)


# -- seed shape -----------------------------------------------------------------------------------------

def test_seed_steps_keep_tool_args_result_error_and_costs() -> None:
    t = from_seed([
        {"step": 1, "tool": "lookup_invoice", "args": {"invoice_id": "INV-1"}, "result": {"status": "paid"},
         "cost_usd": 0.002, "latency_ms": 120, "tokens": {"input": 100, "output": 7}},
        {"step": 2, "tool": "issue_refund", "args": '{"invoice_id": "INV-1", "amount": 30}', "error": "declined"},
        {"step": 4, "tool": "send_email", "result": {"error": "smtp down"}},
    ], case_id="c1")
    assert t.tools == ["lookup_invoice", "issue_refund", "send_email"]
    assert t.steps[1].args == {"invoice_id": "INV-1", "amount": 30}  # JSON text is parsed
    assert t.steps[1].error == "declined"
    assert t.steps[2].args == {} and t.steps[2].error == "smtp down"  # {"error": ...} results are failures
    assert t.steps[0].failed is False
    assert t.total_cost() == pytest.approx(0.002)
    assert t.total_tokens() == 107
    assert [s.index for s in t.steps] == [1, 2, 3]


@pytest.mark.parametrize(("steps", "fragment", "step_named"), [
    ([{"step": 1, "args": {}}], "tool name is missing", "step 1"),
    ([{"step": 1, "tool": ""}], "tool name is missing", "step 1"),
    ([{"step": 1, "tool": 5}], "not a string", "step 1"),
    ([{"step": 1, "tool": "a", "args": "{invoice: 1"}], "arguments are not JSON", "step 1"),
    ([{"step": 1, "tool": "a", "args": "[1, 2]"}], "must be a JSON object", "step 1"),
    ([{"step": 2, "tool": "a"}, {"step": 1, "tool": "b"}], "out of order", "step 1"),
    ([{"step": 1, "tool": "a"}, {"step": 1, "tool": "b"}], "duplicate step number 1", "step 1"),
    ([{"step": "one", "tool": "a"}], "must be an integer", "trajectory[0]"),
])
def test_seed_bad_input_names_case_and_step(steps: list[Any], fragment: str, step_named: str) -> None:
    with pytest.raises(TrajectoryError) as info:
        from_seed(steps, case_id="refund-7")
    msg = str(info.value)
    assert fragment in msg
    assert "case 'refund-7'" in msg and step_named in msg


def test_trajectory_of_names_the_file_and_line() -> None:
    case = _case(trajectory=[{"step": 1}])
    with pytest.raises(TrajectoryError, match=r"^cases.jsonl:3: case 'c1', step 1: tool name is missing"):
        trajectory_of(case)


def test_trajectory_of_without_any_trajectory_is_an_error() -> None:
    with pytest.raises(TrajectoryError, match="no trajectory"):
        trajectory_of(_case(input="hi", output="hello"))


def test_case_output_wins_over_recorded_final_answer() -> None:
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "recorded"}]
    assert trajectory_of(_case(messages=msgs)).final_output == "recorded"
    assert trajectory_of(_case(messages=msgs, final_output="given")).final_output == "given"


# -- OpenAI ---------------------------------------------------------------------------------------------

def _openai_run() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Refund INV-1"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup_invoice", "arguments": '{"invoice_id": "INV-1"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_policy", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c2", "content": "refunds within 30 days"},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "paid", "amount": 30}'},
        {"role": "assistant", "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "issue_refund", "arguments": '{"invoice_id": "INV-1"}'}}]},
        {"role": "tool", "tool_call_id": "c3", "content": '{"error": "gateway timeout"}'},
        {"role": "assistant", "content": "The refund failed; I'll retry later."},
    ]


def test_openai_tool_calls_are_matched_to_results_by_id() -> None:
    t = from_openai(_openai_run())
    assert t.tools == ["lookup_invoice", "get_policy", "issue_refund"]
    assert t.steps[0].result == {"status": "paid", "amount": 30}  # JSON content parsed
    assert t.steps[1].result == "refunds within 30 days"
    assert t.steps[2].error == "gateway timeout"
    assert t.final_output == "The refund failed; I'll retry later."
    assert t.source_format == "openai"
    assert detect_format(_openai_run()) == "openai"


@pytest.mark.parametrize(("mutate", "fragment", "where"), [
    (lambda m: m[2]["tool_calls"][0]["function"].pop("name"), "tool name is missing", "messages[2].tool_calls[0]"),
    (lambda m: m[2]["tool_calls"][1]["function"].update(arguments="{'a': 1}"), "arguments are not JSON",
     "messages[2].tool_calls[1]"),
    (lambda m: m[1].update(role="customer"), "unknown role 'customer'", "messages[1]"),
    (lambda m: m[3].update(tool_call_id="zzz"), "unknown tool_call_id 'zzz'", "messages[3]"),
])
def test_openai_bad_input(mutate: Any, fragment: str, where: str) -> None:
    msgs = _openai_run()
    mutate(msgs)
    with pytest.raises(TrajectoryError) as info:
        from_openai(msgs, case_id="oa")
    assert fragment in str(info.value) and where in str(info.value) and "case 'oa'" in str(info.value)


# -- Anthropic ------------------------------------------------------------------------------------------

def _anthropic_run() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Is INV-9 paid?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "tu1", "name": "lookup_invoice", "input": {"invoice_id": "INV-9"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu1", "is_error": True,
             "content": [{"type": "text", "text": "database unavailable"}]}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "tu2", "name": "lookup_invoice", "input": {"invoice_id": "INV-9"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu2", "content": '{"status": "paid"}'}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Yes, INV-9 is paid."}]},
    ]


def test_anthropic_tool_use_and_results_with_is_error() -> None:
    t = from_anthropic(_anthropic_run())
    assert t.tools == ["lookup_invoice", "lookup_invoice"]
    assert t.steps[0].error == "database unavailable" and t.steps[0].failed
    assert t.steps[1].result == {"status": "paid"} and not t.steps[1].failed
    assert t.final_output == "Yes, INV-9 is paid."
    assert detect_format(_anthropic_run()) == "anthropic"


@pytest.mark.parametrize(("mutate", "fragment", "where"), [
    (lambda m: m[1]["content"][1].pop("name"), "tool name is missing", "messages[1].content[1]"),
    (lambda m: m[1]["content"][1].update(input="not json"), "arguments are not JSON", "messages[1].content[1]"),
    (lambda m: m[0].update(role="bot"), "unknown role 'bot'", "messages[0]"),
    (lambda m: m[2]["content"][0].update(tool_use_id="nope"), "unknown tool_use_id", "messages[2].content[0]"),
])
def test_anthropic_bad_input(mutate: Any, fragment: str, where: str) -> None:
    msgs = _anthropic_run()
    mutate(msgs)
    with pytest.raises(TrajectoryError) as info:
        from_anthropic(msgs, case_id="an")
    assert fragment in str(info.value) and where in str(info.value)


# -- OpenTelemetry GenAI spans --------------------------------------------------------------------------

def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "agent"}, "spans": spans}]}]}


def _tool_span(name: str, start: int, args: str | None, result: str | None = None, **extra: Any) -> dict[str, Any]:
    attrs = [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", name)]
    if args is not None:
        attrs.append(_attr("gen_ai.tool.call.arguments", args))
    if result is not None:
        attrs.append(_attr("gen_ai.tool.call.result", result))
    return {"name": f"execute_tool {name}", "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 250_000_000),
            "attributes": attrs, **extra}


def test_otel_spans_are_ordered_by_start_time_and_usage_is_summed() -> None:
    chat = {"name": "chat m", "startTimeUnixNano": "100", "endTimeUnixNano": "200",
            "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.usage.input_tokens", 50),
                           _attr("gen_ai.usage.output_tokens", 5),
                           _attr("gen_ai.output.messages", json.dumps(
                               [{"role": "assistant", "parts": [{"type": "text", "content": "All paid."}]}]))]}
    data = _otlp([
        _tool_span("issue_refund", 3_000_000_000, '{"invoice_id": "INV-1"}', None,
                   status={"code": 2, "message": "card declined"}),
        _tool_span("lookup_invoice", 1_000_000_000, '{"invoice_id": "INV-1"}', '{"status": "paid"}'),
        {**chat, "startTimeUnixNano": "4000000000"},
    ])
    t = from_otel(data)
    assert t.tools == ["lookup_invoice", "issue_refund"]
    assert t.steps[0].result == {"status": "paid"}
    assert t.steps[0].latency_ms == pytest.approx(250.0)
    assert t.steps[1].error == "card declined"
    assert t.input_tokens == 50 and t.output_tokens == 5
    assert t.final_output == "All paid."
    assert detect_format(data) == "otel"


def test_otel_console_exporter_shape_with_plain_attributes() -> None:
    spans = [{"name": "execute_tool a", "start_time": "2024-05-01T10:00:02Z", "end_time": "2024-05-01T10:00:03Z",
              "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "b",
                             "gen_ai.tool.call.arguments": "{}"}, "status": {"status_code": "ERROR"}},
             {"name": "execute_tool a", "start_time": "2024-05-01T10:00:01Z", "end_time": "2024-05-01T10:00:01.5Z",
              "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "a"}}]
    t = import_trajectory(spans, "otel")
    assert t.tools == ["a", "b"]
    assert t.steps[0].extra == {"args_recorded": False}  # argument capture is opt-in in the convention
    assert t.steps[1].failed


def test_otel_spans_without_genai_attributes_are_rejected() -> None:
    data = _otlp([{"name": "GET /invoices", "attributes": [_attr("http.method", "GET")]}])
    with pytest.raises(TrajectoryError, match="no span has OpenTelemetry GenAI attributes") as info:
        from_otel(data, case_id="tr-1")
    assert "case 'tr-1'" in str(info.value)


def test_otel_tool_span_without_tool_name_names_the_span() -> None:
    bad = {"name": "execute_tool", "startTimeUnixNano": "5", "attributes": [_attr("gen_ai.operation.name", "execute_tool")]}
    with pytest.raises(TrajectoryError, match=r"span 'execute_tool' \(spans\[1\]\).*without gen_ai.tool.name"):
        from_otel(_otlp([_tool_span("a", 1, "{}"), bad]), case_id="x")


def test_otel_arguments_that_are_not_json() -> None:
    with pytest.raises(TrajectoryError, match="arguments are not JSON"):
        from_otel(_otlp([_tool_span("a", 1, "invoice=1")]))


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(TrajectoryError, match="unknown trajectory format 'langchain'"):
        import_trajectory([], "langchain")


def test_trajectory_format_field_selects_the_importer_for_a_case() -> None:
    case = _case(trajectory_format="anthropic", messages=_anthropic_run())
    assert trajectory_of(case).source_format == "anthropic"
    spans_case = _case(spans=_otlp([_tool_span("a", 1, "{}")])["resourceSpans"][0]["scopeSpans"][0]["spans"])
    assert trajectory_of(spans_case).tools == ["a"]


def test_a_case_that_is_an_otlp_export_itself() -> None:
    data = _otlp([_tool_span("lookup_invoice", 1, '{"invoice_id": "INV-1"}', '{"status": "paid"}')])
    case = _case(input="Is INV-1 paid?", final_output="yes", **data)
    t = trajectory_of(case)
    assert t.tools == ["lookup_invoice"] and t.source_format == "otel" and t.final_output == "yes"


@pytest.mark.parametrize("importer", [from_openai, from_anthropic])
def test_a_role_that_is_not_a_string_is_an_unknown_role_not_a_crash(importer: Any) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": ["assistant"], "content": "hello"}]
    with pytest.raises(TrajectoryError, match="unknown role"):
        importer(messages, case_id="c1")
