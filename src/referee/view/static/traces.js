// referee view: the production traces page (docs/monitoring.md "The viewer"): stored traces with filters (service,
// arrival time, state, with an error span), each monitored metric over time with drift alerts marked, and a trace
// opened as the case the monitor judged (app.js's case rendering) beside its spans, its scores and the alerts naming
// it. Span names, attributes and messages are data: every string goes in as a text node through el(); charts are
// the server's escaped SVG (chartCard).
"use strict";

const TRACE_FILTERS = ["service", "state", "since", "until", "error"];

function traceScoreCell(scores) {
  return (scores || []).map((s) => el("span", { class: "flag " + (s.status !== "scored" ? s.status : s.passed === false ? "fail" : "pass"),
    title: s.evaluator + ": " + (s.explanation || s.error_type || s.status) }, s.evaluator + " " + (s.status === "scored" ? fmt.num(s.score, 2) : s.status)));
}

// An offline run of the suite beside the production windows: context, never what the alert compared against.
function offlineNote(o) {
  if (!o || o.mean === null) return null;
  const where = [o.branch, o.commit ? o.commit.slice(0, 8) : null, o.started_at ? o.started_at.slice(0, 10) : null].filter(Boolean).join(", ");
  return el("span", { class: "offline-note muted" }, "offline run ", o.run ? el("a", { href: "#/history/open/" + encodeURIComponent(o.run), class: "offline-run" }, o.run.slice(0, 12)) : "?",
    where ? " (" + where + ")" : "", ": ", fmt.num(o.mean), o.low !== null && o.high !== null ? " [" + fmt.num(o.low) + ", " + fmt.num(o.high) + "]" : "",
    " over " + (o.n === null ? "?" : String(o.n)) + " case(s), for context, not the reference");
}

function alertItem(a) {
  const off = offlineNote(a.offline);
  return el("li", { class: "trace-alert fail" }, el("b", {}, a.metric), " fell from ", fmt.num(a.reference_mean), " (reference, ",
    String(a.reference_n), " traces) to ", fmt.num(a.window_mean), " (last ", String(a.window_n), "); effect ", fmt.num(a.effect),
    " [", fmt.num(a.low), ", ", fmt.num(a.high), "]", a.at ? " at " + a.at : "", "; examples: ",
    (a.examples || []).map((x, i) => [i ? ", " : "", el("a", { href: "#/traces/" + encodeURIComponent(x), class: "alert-example" }, x.slice(0, 12))]),
    off ? ["; ", off] : null);
}

function traceChart(c) {
  const card = chartCard(c);
  const off = offlineNote(c.offline);
  if (off) card.appendChild(el("p", { class: "chart-offline" }, off));
  return card;
}

async function viewTraces(parts, params) {
  const main = state.ctx.box;
  if (parts[1]) return viewTrace(parts[1]);
  const q = new URLSearchParams();
  for (const k of TRACE_FILTERS) if (params.get(k)) q.set(k, params.get(k));
  if (params.get("offset")) q.set("offset", params.get("offset"));
  const d = await api("/api/traces?" + q.toString());
  const choose = (name, values, label) => el("label", {}, label + " ",
    el("select", { id: "t-" + name, name }, el("option", { value: "" }, "any"),
      values.map((v) => el("option", { value: v, selected: params.get(name) === v }, v))));
  const date = (name, label) => el("label", {}, label + " ", el("input", { type: "date", id: "t-" + name, name, value: params.get(name) || "" }));
  // Only the traces with a span whose status is ERROR (the API's error=1).
  const errorBox = el("label", {}, el("input", { type: "checkbox", id: "t-error", name: "error", value: "1", checked: params.get("error") === "1" }),
    " with an error span");
  const form = el("form", { id: "trace-filters", class: "filters" },
    choose("service", d.facets.services, "service"), choose("state", d.facets.states, "state"),
    date("since", "from"), date("until", "to"), errorBox, el("button", { type: "submit" }, "apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const k of TRACE_FILTERS) {
      const f = form.elements[k];
      const v = f.type === "checkbox" ? (f.checked ? f.value : "") : f.value;
      if (v) p.set(k, v);
    }
    go(["traces"], p);
  });
  const table = el("table", { id: "trace-list", class: "cases" },
    el("thead", {}, el("tr", {}, ["last span", "trace", "service", "state", "spans", "scores"].map((h) => el("th", { class: "nosort" }, h)))),
    el("tbody", {}, d.traces.map((t) => el("tr", { "data-trace": t.id, class: t.error ? "failed" : null },
      el("td", {}, (t.last_at || "").replace("T", " ").slice(0, 19)),
      el("td", {}, el("a", { href: "#/traces/" + encodeURIComponent(t.id), class: "open-trace" }, t.id.slice(0, 16))),
      el("td", { class: "service" }, t.service || ""),
      el("td", { class: "state" }, t.state, t.error ? [" ", el("span", { class: "flag fail trace-error", title: "a span of this trace has the status ERROR" }, "error")] : null),
      el("td", { class: "num" }, String(t.spans) + (t.truncated ? " (cut)" : "")),
      el("td", { class: "trace-scores" }, traceScoreCell(t.scores))))));
  const counts = Object.entries(d.counts);
  const next = new URLSearchParams(q); next.set("offset", String(d.offset + d.traces.length));
  clear(main, el("h1", {}, "Production traces"),
    el("p", { class: "muted", id: "traces-store" }, d.total + " trace(s) in ", d.store),
    d.alerts.length ? el("section", { class: "card", id: "trace-alerts" }, el("h2", {}, "Drift alerts"), el("ul", {}, d.alerts.map(alertItem))) : null,
    d.charts.length ? el("section", { id: "trace-charts" }, el("h2", {}, "Scores over time"),
      el("p", { class: "muted" }, "Each point is the mean of consecutive scores in the order they were scored, the band their range; red points hold a drift alert, and the dashed line is the reference level the newest alert compared against."),
      el("div", { class: "charts" }, d.charts.map(traceChart))) : null,
    form,
    d.traces.length ? table : el("p", { id: "traces-empty" }, d.total ? "No trace matches these filters." :
      "No trace is stored yet: `referee collect` receives them."),
    d.more ? el("p", {}, el("a", { href: "#/traces?" + next.toString(), id: "traces-more" }, "older traces")) : null,
    counts.length ? el("section", { id: "trace-counts" }, el("h2", {}, "Not stored or not evaluated, by reason"),
      el("table", {}, el("tbody", {}, counts.map(([k, n]) => el("tr", {}, el("td", {}, k), el("td", { class: "num" }, String(n))))))) : null);
}

async function viewTrace(id) {
  const main = state.ctx.box;
  const d = await api("/api/traces/" + encodeURIComponent(id));
  const t = d.trace;
  const scores = el("table", { id: "trace-score-table" },
    el("thead", {}, el("tr", {}, ["evaluator", "unit", "status", "score", "pass", "explanation"].map((h) => el("th", { class: "nosort" }, h)))),
    el("tbody", {}, d.scores.map((s) => el("tr", { "data-evaluator": s.evaluator },
      el("td", {}, s.evaluator), el("td", {}, s.unit ? "span " + s.unit : "trace"), el("td", {}, s.status),
      el("td", { class: "num" }, s.score === null ? "" : fmt.num(s.score)),
      el("td", { class: s.passed === true ? "pass" : s.passed === false ? "fail" : null }, s.passed === true ? "pass" : s.passed === false ? "fail" : ""),
      el("td", { class: "explanation" }, s.explanation || s.error_type || "")))));
  const spans = el("table", { id: "trace-spans" },
    el("thead", {}, el("tr", {}, ["start", "span", "kind", "service", "status", "duration", "attributes"].map((h) => el("th", { class: "nosort" }, h)))),
    el("tbody", {}, d.spans.map((s) => el("tr", { "data-span": s.span_id, class: s.status === "error" ? "failed" : null },
      el("td", {}, (s.start || "").replace("T", " ").slice(11, 19)),
      el("td", { class: "span-name", title: "span " + s.span_id + (s.parent_id ? ", parent " + s.parent_id : "") }, s.name),
      el("td", {}, s.kind || ""), el("td", {}, s.service || ""),
      el("td", { class: s.status === "error" ? "fail" : null }, s.status + (s.status_message ? ": " + s.status_message : "")),
      el("td", { class: "num" }, fmt.ms(s.duration_ms)),
      el("td", {}, el("details", {}, el("summary", {}, "attributes" + (s.attributes_cut ? " (cut)" : "")),
        el("pre", { class: "span-attrs" }, s.attributes)))))));
  const judged = d.case ? renderCaseBody({ case: d.case, criteria: [] }) : [el("p", { class: "fail", id: "trace-case-error" }, d.case_error || "no case")];
  clear(main, el("p", {}, el("a", { href: "#/traces" }, "\u2190 all traces")),
    el("h1", {}, "Trace ", el("code", { id: "trace-id" }, t.id)),
    el("p", { class: "muted" }, (t.service || "(no service)") + " \u2014 " + t.state + (t.error ? " \u2014 has an error span" : "") + " \u2014 " + t.spans + " span(s)" + (t.truncated ? ", cut at the cap" : "")
      + (t.last_at ? " \u2014 last span " + t.last_at.replace("T", " ") : "")),
    el("div", { class: "cols" },
      el("div", { id: "trace-case" }, el("h2", {}, "As the monitor judged it"), judged),
      el("div", {}, el("h2", {}, "Monitor scores"), d.scores.length ? scores : el("p", { class: "muted", id: "trace-unscored" }, "not scored (yet)"),
        d.alerts.length ? el("section", { id: "trace-own-alerts" }, el("h3", {}, "Drift alerts naming this trace"), el("ul", {}, d.alerts.map(alertItem))) : null)),
    el("h2", {}, "Spans"), spans, d.spans_cut ? el("p", { class: "muted" }, "More spans than shown.") : null);
}
