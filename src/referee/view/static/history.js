// referee view: the run history (docs/view.md "The run history"): the stored runs with filters, a trend per metric
// across commits, a point or a row opens its run, two runs compared. Every text from the store (suite names, tags,
// branches) is data: put in the page as text nodes by el(); the charts are the server's escaped SVG (chartCard).
"use strict";

const HISTORY_FILTERS = ["suite", "branch", "tag", "status", "since", "until"];

async function openStored(ids) {
  const data = await api("/api/history/open", { method: "POST",
    headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: JSON.stringify({ runs: ids }) });
  state.index = null;  // the new runs join the viewer's list
  return data.runs;
}

async function viewHistory(parts, params) {
  const ctx = state.ctx;
  const main = ctx.box;
  if (parts[1] === "open" && parts[2]) {
    const [key] = await openStored([parts[2]]);
    location.replace("#/run/" + encodeURIComponent(key));
    return;
  }
  if (parts[1] === "compare" && parts[2] && parts[3]) {
    const [a, b] = await openStored([parts[2], parts[3]]);
    location.replace("#/compare/" + encodeURIComponent(a) + "/" + encodeURIComponent(b));
    return;
  }
  const q = new URLSearchParams();
  for (const k of HISTORY_FILTERS) if (params.get(k)) q.set(k, params.get(k));
  const [d, tr, al] = await Promise.all([api("/api/history?" + q.toString()),
    api("/api/history/trend?" + new URLSearchParams(["suite", "branch", "tag"].filter((k) => params.get(k)).map((k) => [k, params.get(k)])).toString()),
    api("/api/history/alignments").catch((e) => ({ alignments: [], error: e.message }))]);

  const choose = (name, values, label) => el("label", {}, label + " ",
    el("select", { id: "h-" + name, name },
      el("option", { value: "" }, "any"),
      values.map((v) => el("option", { value: v, selected: params.get(name) === v }, v))));
  const date = (name, label) => el("label", {}, label + " ", el("input", { type: "date", id: "h-" + name, name, value: params.get(name) || "" }));
  const form = el("form", { id: "history-filters", class: "filters" },
    choose("suite", d.facets.suites, "suite"), choose("branch", d.facets.branches, "branch"),
    choose("tag", d.facets.tags, "tag"), choose("status", d.facets.statuses, "status"),
    date("since", "from"), date("until", "to"), el("button", { type: "submit" }, "apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const k of HISTORY_FILTERS) { const v = form.elements[k].value; if (v) p.set(k, v); }
    go(["history"], p);
  });

  const picked = [];
  const compareBtn = el("button", { id: "history-compare", disabled: true }, "compare the two chosen runs");
  compareBtn.addEventListener("click", () => {
    // The older run is the baseline, the newer the candidate (as `referee runs compare OLD NEW`).
    const rows = d.runs.filter((r) => picked.includes(r.id)).sort((a, b) => (a.started_at < b.started_at ? -1 : 1));
    if (rows.length === 2) go(["history", "compare", rows[0].id, rows[1].id]);
  });
  const pick = (id) => {
    const box = el("input", { type: "checkbox", class: "pick", title: "choose for comparison" });
    box.addEventListener("change", () => {
      const i = picked.indexOf(id);
      if (box.checked && i < 0) picked.push(id); else if (!box.checked && i >= 0) picked.splice(i, 1);
      compareBtn.disabled = picked.length !== 2;
    });
    return box;
  };
  const when = (s) => (s || "").slice(0, 16).replace("T", " ");
  const iv = (x, pct) => fmt.ci({ estimate: x[0], lo: x[1], hi: x[2] }, pct);
  const table = el("table", { id: "history-runs", class: "cases" },
    el("thead", {}, el("tr", {}, ["", "started", "suite", "branch", "commit", "tags", "status", "pass rate", "mean", "rows", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, d.runs.map((r) => el("tr", { "data-run": r.id },
      el("td", {}, pick(r.id)), el("td", {}, when(r.started_at)), el("td", { class: "suite" }, r.suite || ""),
      el("td", { class: "branch" }, r.branch || ""),
      el("td", { title: r.commit || "" }, (r.commit || "").slice(0, 7) + (r.dirty ? " (dirty)" : "")),
      el("td", { class: "tags" }, r.tags.map((t) => el("span", { class: "flag" }, t))),
      el("td", { class: r.status === "complete" ? null : "fail" }, r.status),
      el("td", {}, iv(r.pass_rate, true)), el("td", {}, iv(r.mean, false)), el("td", {}, String(r.rows)),
      el("td", {}, el("a", { href: "#/history/open/" + encodeURIComponent(r.id), class: "open-run" }, "open"))))));

  const trendBox = el("section", { id: "history-trend" },
    el("h2", {}, "Trend", tr.suite ? el("span", { class: "muted" }, " of ", tr.suite) : ""),
    tr.note ? el("p", { class: "muted" }, tr.note) : null,
    tr.charts.length ? el("p", { class: "muted" }, "One point per commit (its newest complete run), oldest left; the band is each run's interval"
      + (tr.gate !== null && tr.gate !== undefined ? ", the dashed line the suite's gate" : "") + "; red points are regressions (below the previous run's interval or the gate). Click a point to open its run.") : null,
    el("div", { class: "charts" }, tr.charts.map(chartCard)));

  // The aligned judges `referee align` wrote: the gain on held-out labels, over the raw judge and over a judge
  // that knows nothing, each with its interval (docs/judge.md "Aligning the judge to your labels").
  const gain = (g) => (g ? fmt.ci(g, false) : "n/a");
  const alignBox = al.alignments.length ? el("section", { id: "history-alignments" },
    el("h2", {}, "Aligned judges"),
    el("p", { class: "muted" }, "Written only when the held-out gain over both references is above 0; the gains are on the labels they were not fitted on."),
    el("table", { class: "cases" },
      el("thead", {}, el("tr", {}, ["created", "method", "judge", "labels", "held out", "decided on", "gain over raw judge", "gain over no judge", "file hash"].map((h) => el("th", {}, h)))),
      el("tbody", {}, al.alignments.map((a) => el("tr", { "data-alignment": a.id },
        el("td", {}, when(a.created_at)), el("td", {}, a.method.join(" + ")), el("td", { class: "judge" }, a.judge || ""),
        el("td", {}, String(a.n_labels ?? a.labels)), el("td", {}, String(a.heldout ?? "")), el("td", {}, a.metric || ""),
        el("td", {}, gain(a.gain_raw)), el("td", {}, gain(a.gain_baseline)),
        el("td", { title: a.id }, String(a.id).slice(0, 12)))))),
    al.alignments.filter((a) => a.prompt_diff || (a.examples || []).length).map((a) =>
      el("details", { class: "alignment-prompt", "data-alignment": a.id },
        el("summary", {}, "prompt of " + String(a.id).slice(0, 12) + ": " + (a.examples || []).length + " example(s)"
          + (a.prompt_diff ? ", a rewritten " + "rubric or template" : "")),
        (a.examples || []).length ? el("p", {}, "examples: ", a.examples.join(", ")) : null,
        a.prompt_diff ? el("pre", { class: "diff" }, a.prompt_diff) : null))) : null;

  clear(main, el("h1", {}, "Run history"),
    el("p", { class: "muted", id: "history-store" }, d.total + " run(s) in ", d.store),
    form, trendBox,
    el("h2", {}, "Runs"),
    d.runs.length ? [el("p", {}, compareBtn), table] : el("p", { id: "history-empty" }, d.total ? "No run matches these filters." :
      "No run is stored yet: `referee run evals/suite.yaml` records one."),
    d.more ? el("p", { class: "muted" }, "More runs match: narrow the filters to see older ones.") : null,
    alignBox);
}
