// referee view: the page over the viewer's JSON API (docs/view.md).
// Case text is data: every string from a results or cases file is put in the page as a text node
// (el() below); the only HTML inserted is the output's Markdown, rendered on the server by markdown-it with
// raw HTML disabled. The Content-Security-Policy allows no inline script and nothing from elsewhere.
"use strict";

// Each navigation renders into a fresh <main>, swapped in only if it is still the latest one, so a slow answer
// for a page the user already left can never replace the page they are on (nor its keyboard shortcuts).
const state = { index: null, reviewer: localStorage.getItem("referee.reviewer") || "", ctx: null };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

function clear(node, ...kids) { node.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined)); }

function toast(msg, bad) {
  const t = document.getElementById("toast");
  t.textContent = msg;
  t.className = "show" + (bad ? " bad" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.className = ""; }, bad ? 6000 : 2500);
}

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ headers: { "Accept": "application/json" } }, opts || {}));
  let data = null;
  try { data = await r.json(); } catch (e) { data = { error: "bad response (" + r.status + ")" }; }
  if (!r.ok) { const err = new Error(data.error || ("HTTP " + r.status)); err.status = r.status; throw err; }
  return data;
}

const fmt = {
  num(v, d) { return v === null || v === undefined ? "" : Number(v).toFixed(d === undefined ? 3 : d); },
  pct(v) { return v === null || v === undefined ? "n/a" : (100 * v).toFixed(1) + "%"; },
  ci(iv, pct) {
    if (!iv || iv.estimate === null || iv.estimate === undefined) return "n/a";
    const f = pct ? fmt.pct : (x) => fmt.num(x);
    return f(iv.estimate) + (iv.lo === null || iv.lo === undefined ? "" : " [" + f(iv.lo) + ", " + f(iv.hi) + "]");
  },
  cost(v) { return v === null || v === undefined ? "" : "$" + Number(v).toFixed(5); },
  ms(v) { return v === null || v === undefined ? "" : Math.round(v) + " ms"; },
};

function verdict(row) {
  if (row.status !== "scored") return el("span", { class: row.status }, row.status);
  if (row.passed === true) return el("span", { class: "pass" }, "pass");
  if (row.passed === false) return el("span", { class: "fail" }, "fail");
  return "";
}

function flagsOf(flags) { return (flags || []).map((f) => el("span", { class: "flag" }, f)); }

function labelChips(labels) {
  return visibleLabels(labels).map((l) => el("span", { class: "label-chip", title: "human label by " + (l.reviewer || "?") },
    "human: " + labelText(l)));
}

function labelText(l) {
  if (l.winner) return l.winner === "tie" ? "tie" : l.winner.toUpperCase() + " is better";
  if (l.passed === true) return "pass";
  if (l.passed === false) return "fail";
  if (l.raw_score !== undefined && l.scale) return l.raw_score + " (" + l.scale + ")";
  return fmt.num(l.score, 2);
}

// ---- routing -------------------------------------------------------------------------------------------

function parseHash() {
  const h = location.hash.replace(/^#/, "") || "/";
  const [path, query] = h.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}

function go(parts, params) {
  const q = params && params.toString();
  location.hash = "#/" + parts.map(encodeURIComponent).join("/") + (q ? "?" + q : "");
}

async function route() {
  const ctx = { box: el("main", { id: "main" }, el("p", { class: "muted" }, "loading...")), keys: null };
  state.ctx = ctx;
  // A sign of work at once: the page being left is dimmed and the bar says "working..." until the next one is
  // on screen (a large comparison takes a moment; the old page must not look like the answer).
  busy(true);
  if (!state.index) {
    const first = state.index === null && !state.indexLoaded;
    state.index = await api("/api/runs");
    state.indexLoaded = true;
    // `referee view --reviewer NAME`: the name given on the command line is the one labels carry.
    if (first && state.index.reviewer) document.getElementById("reviewer").value = state.index.reviewer;
  }
  renderNav();
  const { parts, params } = parseHash();
  const main = ctx.box;
  try {
    if (parts[0] === "history") await viewHistory(parts, params);
    else if (parts[0] === "traces") await viewTraces(parts, params);
    else if (!parts.length && state.index.history && !state.index.runs.length) await viewHistory(["history"], params);
    else if (parts[0] === "run" && parts[2] === "case") await viewCase(parts[1], Number(parts[3]), params);
    else if (parts[0] === "run" && parts[2] === "review") await viewReview(parts[1], params);
    else if (parts[0] === "run" && parts[2] === "align") await viewAlign(parts[1]);
    else if (parts[0] === "compare" && parts[3] === "rows") await viewSideBySide(parts[1], parts[2], parts[4], parts[5], params);
    else if (parts[0] === "compare") await viewCompare(parts[1], parts[2], params);
    else if (parts[0] === "run") await viewRun(parts[1], params);
    else if (parts[0] === "grid" || state.index.runs.length > 1) await viewGrid(params);
    else await viewRun(state.index.runs[0].run, params);
  } catch (e) {
    clear(main, el("div", { class: "card" }, el("b", {}, "Error: "), e.message));
  }
  if (state.ctx === ctx) {
    busy(false);
    // Marked as rendered: the extensions (panel.js) add to this page, never to the placeholder it replaces.
    ctx.box.dataset.rendered = "1";
    document.getElementById("main").replaceWith(ctx.box);
    document.onkeydown = ctx.keys;
    // A case page is on screen: the extensions (claims.js, episodes.js) add to it from the same data, with no
    // second request; a script that loads after this reads window.refereeCase.
    window.refereeCase = ctx.shownCase || null;
    if (ctx.shownCase) document.dispatchEvent(new CustomEvent("referee:case", { detail: ctx.shownCase }));
  }
}

function busy(on) {
  document.body.classList.toggle("busy", on);
  const b = document.getElementById("busy");
  if (b) b.hidden = !on;
}

function renderNav() {
  const nav = document.getElementById("runs-nav");
  const { parts } = parseHash();
  const cur = parts[0] === "run" ? parts[1] : null;
  const links = state.index.runs.map((r) => el("a", { href: "#/run/" + r.run, class: cur === r.run ? "active" : null,
    title: r.path }, r.stored_run ? runName(r) : (r.label || r.name)));
  if (state.index.history) {
    links.unshift(el("a", { href: "#/history", id: "nav-history", class: parts[0] === "history" || (!parts.length && !state.index.runs.length) ? "active" : null }, "history"),
      el("a", { href: "#/traces", id: "nav-traces", class: parts[0] === "traces" ? "active" : null }, "traces"));
  }
  if (state.index.runs.length > 1) {
    links.splice(state.index.history ? 2 : 0, 0, el("a", { href: "#/grid", id: "nav-grid", class: parts[0] === "grid" || !parts.length ? "active" : null }, "grid"));
    links.push(el("a", { href: "#/compare/" + state.index.runs[0].run + "/" + state.index.runs[1].run,
      class: parts[0] === "compare" ? "active" : null }, "compare"));
  }
  clear(nav, links);
}

// A stored run opened from the history is named by its run id, not by the file it was exported to.
function runName(r) { return r.stored_run ? "run " + r.stored_run.slice(0, 8) : r.name; }

function runInfo(key) {
  const r = state.index.runs.find((x) => x.run === key);
  if (!r) throw new Error("no run " + key);
  return r;
}

// ---- one run: summary, filters, table --------------------------------------------------------------

async function viewRun(key, params) {
  const ctx = state.ctx;
  const main = ctx.box;
  const info = runInfo(key);
  const summaryBox = el("div", { id: "summary" }, el("p", { class: "muted" }, "computing the summary..."));
  const agreementBox = el("div", { id: "agreement" });
  const reviewersBox = el("div", { id: "reviewers" });
  const chartsBox = el("div", { id: "charts", class: "charts" });
  const coverageBox = el("div", { id: "coverage" });
  const tableBox = el("div", { id: "cases" });
  clear(main,
    el("h1", {}, info.name),
    el("p", { class: "muted" }, info.path, " - ", info.rows + " rows, " + info.cases + " cases",
      info.manifest && info.manifest.judge ? " - judge " + info.manifest.judge : ""),
    el("p", {},
      el("a", { href: "#/run/" + key + "/review?kind=uncertain", id: "start-review" }, "Review the cases the judge was least sure about"),
      " | ", el("a", { href: "#/run/" + key + "/review?kind=random" }, "review a random sample"),
      " | ", el("a", { href: "#/run/" + key + "/align", id: "start-align" }, "align the judge to these labels"),
      " | labels go to ", el("code", {}, info.labels)),
    warningsBox(), summaryBox, chartsBox, coverageBox, agreementBox, reviewersBox, tableBox);
  renderTable(key, params, tableBox);
  api("/api/runs/" + key + "/charts").then((d) => clear(chartsBox, d.charts.map(chartCard)))
    .catch((e) => clear(chartsBox, el("p", { class: "fail" }, "charts: " + e.message)));
  renderCoverage(key, coverageBox);
  ctx.keys = tableKeys;
  api("/api/runs/" + key + "/summary").then((s) => renderSummary(summaryBox, s.summary, s.n_boot))
    .catch((e) => clear(summaryBox, el("p", { class: "fail" }, "summary: " + e.message)));
  renderAgreement(key, agreementBox);
  renderReviewers(key, reviewersBox);
}

function renderSummary(box, s, nBoot) {
  const o = s.overall;
  const stat = (label, value, id) => el("div", { class: "card stat", id }, el("span", { class: "muted" }, label), el("b", {}, value));
  const cats = (s.categories || []).map((g) => el("tr", {},
    el("td", {}, g.name), el("td", { class: "num" }, g.cases), el("td", { class: "num" }, fmt.ci(g.pass_rate, true)),
    el("td", { class: "num" }, fmt.ci(g.mean)), el("td", { class: "num" }, g.unscored + g.errors)));
  const lowest = (s.lowest || []).map((c) => el("li", {}, el("b", {}, c.id), " (" + fmt.num(c.score) + "): ", c.rationale || ""));
  clear(box, el("h2", {}, "Summary (as referee score)"),
    el("div", { class: "grid" },
      stat("pass rate (95% CI)", fmt.ci(o.pass_rate, true), "stat-pass-rate"),
      stat("mean score", fmt.ci(o.mean), "stat-mean"),
      stat("scored cases", String(o.cases), "stat-cases"),
      stat("unscored + error rows", String(o.unscored + o.errors), "stat-unscored"),
      stat("mean cost", o.mean_cost === null ? "n/a" : fmt.cost(o.mean_cost)),
      stat("mean latency", o.mean_latency_ms === null ? "n/a" : fmt.ms(o.mean_latency_ms))),
    cats.length ? el("table", { class: "card" }, el("thead", {}, el("tr", {}, ["category", "cases", "pass rate", "mean", "unscored"].map((h, i) => el("th", { class: "nosort" + (i ? " num" : "") }, h)))), el("tbody", {}, cats)) : null,
    lowest.length ? el("div", { class: "card" }, el("b", {}, "Lowest cases"), el("ul", {}, lowest)) : null,
    (s.warnings || []).length ? el("ul", { class: "warn-list" }, s.warnings.slice(0, 10).map((w) => el("li", {}, w))) : null,
    el("p", { class: "muted" }, "threshold " + s.threshold + ", pass rule " + s.pass_rule + ", " + nBoot + " bootstrap resamples"));
}

// The table by keyboard: j/k move, Enter opens, / searches.
function tableKeys(e) {
  if (e.target && ["INPUT", "TEXTAREA", "SELECT"].includes(e.target.tagName)) return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const rowsEls = [...document.querySelectorAll("#case-table tr.case-row")];
  const cur = rowsEls.findIndex((r) => r.classList.contains("selected"));
  if (e.key === "/") { e.preventDefault(); document.getElementById("search").focus(); return; }
  if (e.key === "Enter" && cur >= 0) { e.preventDefault(); rowsEls[cur].click(); return; }
  const step = e.key === "j" || e.key === "ArrowDown" ? 1 : e.key === "k" || e.key === "ArrowUp" ? -1 : 0;
  if (!step || !rowsEls.length) return;
  e.preventDefault();
  const next = Math.min(Math.max(cur + step, 0), rowsEls.length - 1);
  if (cur >= 0) rowsEls[cur].classList.remove("selected");
  rowsEls[next].classList.add("selected");
  rowsEls[next].scrollIntoView({ block: "nearest" });
}

async function renderAgreement(key, box) {
  let a;
  try { a = await api("/api/runs/" + key + "/agreement"); } catch (e) { clear(box); return; }
  if (!a.n) { clear(box, el("p", { class: "muted", id: "agreement-note" }, "Judge-human agreement: " + (a.message || "no labels yet"))); return; }
  const st = a.agreement || {};
  const iv = (x) => x && x.estimate !== null && x.estimate !== undefined ? fmt.ci(x) : "n/a";
  clear(box, el("div", { class: "card", id: "agreement-card" }, el("b", {}, "Judge-human agreement (referee calibrate) on " + a.n + " case(s): "),
    "mean absolute delta " + fmt.num(a.mean_abs_delta), "; exact agreement " + iv(st.exact_agreement),
    "; Cohen's kappa " + iv(st.kappa), el("div", { class: "muted" }, el("code", {}, a.command))));
}

const COLUMNS = [
  ["id", "id"], ["status", "status"], ["score", "score", "num"], ["passed", "pass"], ["category", "category"],
  ["evaluator", "evaluator"], [null, "flags"], ["cost", "cost", "num"], ["latency", "latency", "num"], [null, "human"],
];

async function renderTable(key, params, box) {
  const info = runInfo(key);
  const p = new URLSearchParams(params);
  const limit = Number(p.get("limit") || 50);
  const offset = Number(p.get("offset") || 0);
  const setParam = (k, v) => { const q = new URLSearchParams(p); if (v === "" || v === null) q.delete(k); else q.set(k, v); q.delete("offset"); go(["run", key], q); };
  const select = (name, options, label) => el("label", {}, label + " ",
    el("select", { name, id: "filter-" + name, onchange: (e) => setParam(name, e.target.value) },
      el("option", { value: "" }, "any"), options.map((o) => el("option", { value: o, selected: p.get(name) === o ? "selected" : null }, o))));
  const search = el("input", { type: "search", id: "search", placeholder: "search input, output, rationale", value: p.get("q") || "" });
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") setParam("q", search.value.trim()); });
  const filters = el("div", { class: "filters" },
    search, el("button", { onclick: () => setParam("q", search.value.trim()) }, "search"),
    select("status", ["scored", "unscored", "error"], "status"),
    select("passed", ["true", "false"], "pass"),
    select("category", info.categories, "category"),
    select("evaluator", info.evaluators || [], "evaluator"),
    select("flag", state.index.flags, "flag"),
    select("labelled", ["true", "false"], "labelled"),
    rangeBox("score", "score", "0.01"), rangeBox("cost", "cost $", "any"), rangeBox("latency", "latency ms", "any"));
  function rangeBox(name, label, step) {
    const box = (side) => {
      const inp = el("input", { type: "number", step, id: side + "-" + name, class: "range", placeholder: side, value: p.get(side + "_" + name) || "" });
      inp.addEventListener("change", () => setParam(side + "_" + name, inp.value.trim()));
      return inp;
    };
    return el("span", { class: "range-box" }, label + " ", box("min"), "\u2013", box("max"));
  }
  const body = el("tbody", {}, el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "loading...")));
  const sort = p.get("sort") || "row";
  const desc = p.get("order") === "desc";
  const head = el("tr", {}, COLUMNS.map(([k, label, cls]) => el("th", {
    class: (cls || "") + (k ? "" : " nosort"), "data-sort": k,
    onclick: k ? () => { const q = new URLSearchParams(p); q.set("sort", k); q.set("order", sort === k && !desc ? "desc" : "asc"); go(["run", key], q); } : null,
  }, label + (sort === k ? (desc ? " \u25bc" : " \u25b2") : ""))));
  const pager = el("div", { class: "pager" });
  clear(box, el("h2", {}, "Cases"), filters, pager, el("table", { id: "case-table" }, el("thead", {}, head), body));
  const q = new URLSearchParams(p);
  q.set("limit", String(limit)); q.set("offset", String(offset));
  const data = await api("/api/runs/" + key + "/cases?" + q.toString());
  clear(body, data.rows.length ? data.rows.map((r) => el("tr", {
    class: "case-row", "data-row": r.row, "data-id": r.id,
    onclick: () => go(["run", key, "case", String(r.row)], p),
  },
  el("td", {}, r.id, r.repeat !== null ? el("span", { class: "muted" }, " #" + r.repeat) : null, r.turn !== null ? el("span", { class: "muted" }, " turn " + r.turn) : null),
  el("td", {}, r.status), el("td", { class: "num" }, fmt.num(r.score)), el("td", {}, verdict(r)),
  el("td", {}, r.category), el("td", {}, r.evaluator), el("td", {}, flagsOf(r.flags)),
  el("td", { class: "num" }, fmt.cost(r.cost_usd)), el("td", { class: "num" }, fmt.ms(r.latency_ms)),
  el("td", {}, labelChips(r.labels)))) : el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "no case matches")));
  const page = (o) => { const q2 = new URLSearchParams(p); q2.set("offset", String(Math.max(0, o))); go(["run", key], q2); };
  clear(pager, el("span", { id: "total" }, data.total + " matching"),
    el("button", { disabled: offset <= 0 ? "disabled" : null, onclick: () => page(offset - limit) }, "previous"),
    el("span", {}, data.total ? (offset + 1) + "-" + Math.min(offset + limit, data.total) : "0"),
    el("button", { disabled: offset + limit >= data.total ? "disabled" : null, onclick: () => page(offset + limit) }, "next"));
}

// ---- one case ---------------------------------------------------------------------------------------

function textBlock(v) {
  if (v === null || v === undefined) return el("p", { class: "muted" }, "(none)");
  if (window.refereeMedia && window.refereeMedia.has(v)) return window.refereeMedia.block(v);  // media.js
  return el("div", { class: "text" }, typeof v === "string" ? v : JSON.stringify(v, null, 2));
}

function section(title, ...kids) { return el("section", {}, el("h3", {}, title), kids); }

function markdownBlock(html) {
  // Server-rendered by markdown-it with raw HTML disabled (case HTML arrives escaped); see app.py.
  const box = el("div", { class: "md" });
  box.innerHTML = html;
  for (const a of box.querySelectorAll("a")) { a.setAttribute("rel", "noopener noreferrer nofollow"); a.setAttribute("target", "_blank"); }
  return box;
}

function renderCaseBody(c) {
  const cs = c.case;
  const parts = [];
  const judged = (c.judged_text || []).length ? el("div", { class: "text", id: "judged-text" }, c.judged_text.map((s) =>
    s.labels.length ? el("mark", { class: s.ungrounded ? "ungrounded" : null, title: s.labels.join(", ") + (s.ungrounded ? " (ungrounded)" : "") }, s.text) : s.text)) : null;
  if (cs) {
    parts.push(el("div", { class: "cols" },
      section("Input", textBlock(cs.input)),
      cs.reference !== undefined ? section("Reference", textBlock(cs.reference)) : section("Reference", el("p", { class: "muted" }, "(none)"))));
    if (cs.output !== undefined) {
      parts.push(el("div", { class: "cols" },
        section("Output (Markdown)", cs.output_html !== undefined ? markdownBlock(cs.output_html) : textBlock(cs.output)),
        section("Judged text with evidence highlighted", judged || textBlock(cs.output))));
    }
    if (cs.contexts !== undefined || cs.context !== undefined) parts.push(section("Contexts", textBlock(cs.contexts ?? cs.context)));
    if (cs.turns) {
      parts.push(section("Conversation", cs.turns.map((t) => el("div", { class: "turn" + (t.judged ? " judged" : "") },
        el("div", { class: "role" }, t.role, t.judged ? " \u2014 the turn this row judges" : ""),
        textBlock(t.content)))));
    }
    if (cs.trajectory) {
      parts.push(section("Trajectory (" + cs.trajectory.length + " steps)", cs.trajectory.map((s) => el("div", { class: "step" + (s.error ? " failed" : "") },
        el("b", {}, "step " + s.index + ": " + s.tool),
        el("div", {}, el("span", { class: "muted" }, "arguments "), el("code", {}, JSON.stringify(s.args))),
        s.result !== null && s.result !== undefined ? el("div", {}, el("span", { class: "muted" }, "result "), (window.refereeMedia && window.refereeMedia.has(s.result)) ? textBlock(s.result) : el("code", {}, typeof s.result === "string" ? s.result : JSON.stringify(s.result))) : null,
        s.error ? el("div", { class: "fail" }, "error: " + s.error) : null))));
    }
    if (cs.trajectory_error) parts.push(el("p", { class: "fail" }, cs.trajectory_error));
    if (cs.output_a !== undefined) {
      parts.push(el("div", { class: "cols" }, section("Output A" + (cs.system_a ? " (" + cs.system_a + ")" : ""), textBlock(cs.output_a)),
        section("Output B" + (cs.system_b ? " (" + cs.system_b + ")" : ""), textBlock(cs.output_b))));
    }
  } else if (judged) {
    parts.push(section("Judged text with evidence highlighted", judged));
  } else {
    parts.push(el("p", { class: "muted", id: "no-case" }, "Inputs and outputs are not in the results file: start the viewer with --cases CASES.jsonl to show them."));
  }
  const orders = c.details && Array.isArray(c.details.orders) ? c.details.orders : null;
  if (orders) {
    parts.push(section("Pairwise verdicts in both orders" + (c.position_bias_detected ? " (position bias detected)" : ""),
      el("table", {}, el("thead", {}, el("tr", {}, ["shown first", "status", "picked", "winner", "rationale"].map((h) => el("th", { class: "nosort" }, h)))),
        el("tbody", {}, orders.map((o) => el("tr", {}, el("td", {}, o.shown_first), el("td", {}, o.status), el("td", {}, o.verdict || ""),
          el("td", {}, o.winner || ""), el("td", {}, o.rationale || o.error || "")))))),
    el("p", {}, "reconciled winner: ", el("b", {}, c.winner || "none")));
  }
  if (c.criteria.length) {
    parts.push(section("Criteria", el("table", { id: "criteria" }, el("thead", {}, el("tr", {}, ["criterion", "status", "score", "raw", "pass", "rationale", "evidence"].map((h) => el("th", { class: "nosort" }, h)))),
      el("tbody", {}, c.criteria.map((k) => el("tr", {},
        el("td", {}, k.id || k.name, k.name && k.id && k.name !== k.id ? el("span", { class: "muted" }, " (" + k.name + ")") : null, k.critical ? el("span", { class: "flag" }, "critical") : null),
        el("td", {}, k.status || ""), el("td", { class: "num" }, fmt.num(k.score)),
        el("td", { class: "num" }, k.raw_score === null ? "" : k.raw_score + (k.scale ? " (" + k.scale + ")" : "")),
        el("td", {}, k.passed === true ? "pass" : k.passed === false ? "fail" : ""),
        el("td", {}, k.rationale || k.error || ""),
        el("td", {}, k.grounded === false ? el("span", { class: "flag" }, "ungrounded") : null,
          el("ul", {}, k.evidence.map((e) => el("li", { class: e.found ? null : "quote-missing", title: e.found ? "found in the judged text" : "not found in the judged text" }, "\u201c" + e.quote + "\u201d"))))))))));
  }
  for (const cc of c.check_criteria || []) {
    parts.push(section("Criteria of " + cc.check, el("table", { class: "check-criteria", "data-check": cc.check },
      el("thead", {}, el("tr", {}, ["criterion", "score", "raw", "pass", "rationale"].map((h) => el("th", { class: "nosort" }, h)))),
      el("tbody", {}, cc.criteria.map((k) => el("tr", {}, el("td", {}, k.name || k.id), el("td", { class: "num" }, k.status && k.status !== "scored" ? k.status : fmt.num(k.score)),
        el("td", { class: "num" }, k.raw_score === null || k.raw_score === undefined ? "" : k.raw_score + (k.scale ? " (" + k.scale + ")" : "")),
        el("td", {}, k.passed === true ? "pass" : k.passed === false ? "fail" : ""), el("td", {}, k.rationale || k.error || "")))))));
  }
  parts.push(el("div", { class: "cols" },
    section("Rationale", textBlock(c.rationale)),
    section("Raw judge reply" + (c.error ? " / error" : ""), textBlock(c.raw_reply || c.error))));
  parts.push(el("details", {}, el("summary", {}, "row as stored (line " + c.line + ")"), el("pre", {}, JSON.stringify(c.row_json, null, 2))));
  return parts;
}

async function viewCase(key, row, params) {
  const ctx = state.ctx;
  const main = ctx.box;
  const c = await api("/api/runs/" + key + "/cases/" + row);
  const back = el("a", { href: "#/run/" + key + (params.toString() ? "?" + params.toString() : "") }, "\u2190 all cases");
  const panel = reviewPanel(key, c, null);
  clear(main, back,
    el("h1", { id: "case-title" }, c.id),
    el("p", {}, el("b", {}, c.status), c.score !== null ? " score " + fmt.num(c.score) : "", " ", verdict(c), " - ", c.category, " - ", c.evaluator,
      " ", flagsOf(c.flags), c.cost_usd !== null && c.cost_usd !== undefined ? " - " + fmt.cost(c.cost_usd) : "",
      c.latency_ms !== null && c.latency_ms !== undefined ? " - " + fmt.ms(c.latency_ms) : "",
      c.judge ? " - judge " + c.judge.provider + "/" + c.judge.model : ""),
    renderCaseBody(c), panel.node);
  ctx.keys = panel.keys;
  ctx.shownCase = { run: key, row: Number(row), data: c, title: main.querySelector("#case-title") };
}

// ---- human review ---------------------------------------------------------------------------------

function currentReviewer() {
  const v = document.getElementById("reviewer").value.trim();
  return v || "anonymous";
}

async function postLabel(body) {
  const data = await api("/api/labels", { method: "POST", headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: JSON.stringify(body) });
  toast((data.replaced ? "label replaced: " : "label saved: ") + data.label.id + " \u2192 " + labelText(data.label));
  return data;
}

function reviewPanel(key, c, onDone, blind) {
  const comment = el("textarea", { id: "comment", placeholder: "comment (optional)", maxlength: "5000" });
  const mine = (c.labels || []).filter((l) => (l.reviewer || "anonymous") === currentReviewer());
  if (mine.length && mine[0].comment) comment.value = mine[0].comment;
  const others = new Set((c.labels || []).map((l) => l.reviewer || "anonymous").filter((r) => r !== currentReviewer())).size;
  const status = el("span", { id: "label-status", class: "muted" }, mine.length ? "your label: " + labelText(mine[0])
    : others ? "labelled by " + others + " other reviewer(s)" + (blindReview() ? " (their labels are not shown)" : "") : "not labelled yet");
  // The value of this reviewer's label, so a comment written after it is saved with it.
  let given = mine.length ? ["passed", "score", "winner"].reduce((o, k) => {
    if (mine[0][k] !== undefined && (k !== "score" || mine[0].passed === undefined && mine[0].winner === undefined)) {
      o[k] = k === "score" && mine[0].raw_score !== undefined ? mine[0].raw_score : mine[0][k];
      if (k === "score" && mine[0].scale) o.scale = mine[0].scale;
    }
    return o;
  }, {}) : null;
  async function send(extra, advance) {
    const body = Object.assign({ run: key, id: c.id, reviewer: currentReviewer(), comment: comment.value }, extra);
    try {
      const data = await postLabel(body);
      given = extra;
      status.textContent = "your label: " + labelText(data.label);
      status.className = "pass";
      if (onDone && advance !== false) onDone(data);
    } catch (e) { toast(e.message, true); status.textContent = e.message; status.className = "fail"; }
  }
  comment.addEventListener("change", () => { if (given) send(given, false); });
  const buttons = [];
  const keys = {};
  if (!blind && c.pairwise && c.case && c.case.output_a !== undefined) blind = ["a", "b"];
  const names = blind && blind.shown ? ["left", "right"] : ["A", "B"];
  if (blind) {
    buttons.push(el("button", { id: "pick-left", onclick: () => send({ winner: blind[0] }) }, names[0] + " is better ", el("kbd", {}, "1")),
      el("button", { id: "pick-right", onclick: () => send({ winner: blind[1] }) }, names[1] + " is better ", el("kbd", {}, "2")),
      el("button", { id: "pick-tie", onclick: () => send({ winner: "tie" }) }, "tie ", el("kbd", {}, "t")));
    keys["1"] = () => send({ winner: blind[0] }); keys["2"] = () => send({ winner: blind[1] }); keys["t"] = () => send({ winner: "tie" });
  } else {
    buttons.push(el("button", { id: "label-pass", class: "passbtn", onclick: () => send({ passed: true }) }, "pass ", el("kbd", {}, "p")),
      el("button", { id: "label-fail", class: "failbtn", onclick: () => send({ passed: false }) }, "fail ", el("kbd", {}, "f")));
    keys["p"] = () => send({ passed: true }); keys["f"] = () => send({ passed: false });
    if (c.label_scale) {
      const [lo, hi] = c.label_scale.split("-").map(Number);
      const scoreBtns = [];
      for (let v = lo; v <= hi; v++) {
        scoreBtns.push(el("button", { class: "scorebtn", "data-score": v, onclick: () => send({ score: v, scale: c.label_scale }) }, String(v), " ", el("kbd", {}, String(v))));
        keys[String(v)] = ((x) => () => send({ score: x, scale: c.label_scale }))(v);
      }
      buttons.push(el("span", { class: "muted" }, " or score on the rubric's scale " + c.label_scale + ": "), scoreBtns);
    }
  }
  const node = el("div", { class: "review-panel", id: "review-panel" },
    el("div", {}, el("b", {}, "Your label: "), buttons, " ", status),
    comment,
    el("div", { class: "muted" }, "keys: ", blind ? [el("kbd", {}, "1"), " " + names[0] + ", ", el("kbd", {}, "2"), " " + names[1] + ", ", el("kbd", {}, "t"), " tie"] : [el("kbd", {}, "p"), " pass, ", el("kbd", {}, "f"), " fail"],
      ", ", el("kbd", {}, "j"), " next, ", el("kbd", {}, "k"), " previous, ", el("kbd", {}, "c"), " comment, ", el("kbd", {}, "Esc"), " leave the comment box"));
  function onKey(e) {
    if (e.target && (e.target.tagName === "TEXTAREA" || e.target.tagName === "INPUT" || e.target.tagName === "SELECT")) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "c") { e.preventDefault(); comment.focus(); return; }
    const f = keys[e.key];
    if (f) { e.preventDefault(); f(); return; }
    if (onKey.nav && onKey.nav[e.key]) { e.preventDefault(); onKey.nav[e.key](); }
  }
  return { node, keys: onKey };
}

async function viewReview(key, params) {
  const ctx = state.ctx;
  const main = ctx.box;
  const kind = params.get("kind") || "uncertain";
  const pos = Number(params.get("i") || 0);
  let seed = params.get("seed");
  const q = new URLSearchParams({ kind, n: params.get("n") || "50", reviewer: currentReviewer() });
  if (seed) q.set("seed", seed);
  // The queue is fixed when the review starts (row numbers in the URL), so labelling does not reshuffle it.
  let rows = params.get("rows") ? params.get("rows").split(",").map(Number) : null;
  if (!rows) {
    const queue = await api("/api/runs/" + key + "/queue?" + q.toString());
    rows = queue.rows;
    const p2 = new URLSearchParams(params);
    p2.set("rows", rows.join(","));
    if (queue.seed !== null) p2.set("seed", String(queue.seed));
    history.replaceState(null, "", "#/run/" + key + "/review?" + p2.toString());
  }
  const title = (kind === "random" ? "Review: a random sample" : "Review: the cases the judge was least sure about")
    + (blindReview() ? " (" + state.index.reviewers_per_case + " reviewers per case; you: " + currentReviewer() + ")" : "");
  if (!rows.length) { clear(main, el("h1", {}, title), el("p", { id: "queue-empty" }, "Nothing to review: every case in this queue is labelled."), el("a", { href: "#/run/" + key }, "back to the run")); return; }
  const i = Math.min(Math.max(pos, 0), rows.length - 1);
  const move = (to) => { const p2 = new URLSearchParams(location.hash.split("?")[1] || ""); p2.set("i", String(Math.min(Math.max(to, 0), rows.length - 1))); go(["run", key, "review"], p2); };
  const c = await api("/api/runs/" + key + "/cases/" + rows[i]);
  let body;
  let panel;
  const next = () => { if (i + 1 < rows.length) setTimeout(() => move(i + 1), 250); else toast("end of the queue"); };
  if (c.pairwise && c.case && c.case.output_a !== undefined) {
    const rv = await api("/api/runs/" + key + "/review/" + rows[i]);
    const order = rv.sides.map((s) => s.side);
    order.shown = true;  // left/right on screen, mapped back to a/b when posted
    body = [section("Input", textBlock(rv.input)), el("p", { class: "muted" }, "Blind review: the two outputs in a random order, without the judge's verdict."),
      el("div", { class: "cols" }, section("Left", textBlock(rv.sides[0].text)), section("Right", textBlock(rv.sides[1].text)))];
    panel = reviewPanel(key, c, next, order);
  } else {
    body = renderCaseBody(c);
    panel = reviewPanel(key, c, next);
  }
  panel.keys.nav = { j: () => move(i + 1), k: () => move(i - 1), ArrowRight: () => move(i + 1), ArrowLeft: () => move(i - 1) };
  clear(main, el("a", { href: "#/run/" + key }, "\u2190 all cases"), " | ",
    el("a", { href: "#/run/" + key + "/align", id: "review-align" }, "align the judge to the labels so far"),
    el("h1", {}, title),
    el("p", {}, el("b", { id: "review-pos" }, (i + 1) + " of " + rows.length), ": ", el("b", { id: "case-title" }, c.id),
      c.pairwise ? "" : [" - ", c.status, c.score !== null ? " score " + fmt.num(c.score) : "", " ", flagsOf(c.flags)],
      " ", el("button", { onclick: () => move(i - 1) }, "previous"), el("button", { onclick: () => move(i + 1) }, "next")),
    body, panel.node);
  ctx.keys = panel.keys;
}

// ---- compare two runs ---------------------------------------------------------------------------------

async function viewCompare(base, cand, params) {
  const ctx = state.ctx;
  const main = ctx.box;
  const filter = params.get("filter") || "changed";
  const runs = state.index.runs;
  const pick = (name, cur) => el("select", { id: "compare-" + name, onchange: (e) => { const b = name === "base" ? e.target.value : base; const c = name === "cand" ? e.target.value : cand; go(["compare", b, c], params); } },
    runs.map((r) => el("option", { value: r.run, selected: r.run === cur ? "selected" : null }, runName(r))));
  clear(main, el("h1", {}, "Compare two runs"),
    el("p", {}, "baseline ", pick("base", base), " candidate ", pick("cand", cand)), el("p", { class: "muted" }, "computing..."));
  const q = new URLSearchParams({ filter, offset: params.get("offset") || "0", limit: "100" });
  const d = await api("/api/compare/" + base + "/" + cand + "?" + q.toString());
  const s = d.summary;
  const cmp = s.comparison;
  const tests = (cmp.tests || []).map((t) => el("tr", {}, el("td", {}, t.scope), el("td", {}, t.metric), el("td", { class: "num" }, t.n),
    el("td", { class: "num" }, (t.diff >= 0 ? "+" : "") + fmt.num(t.diff)), el("td", { class: "num" }, t.lo === null ? "" : "[" + fmt.num(t.lo) + ", " + fmt.num(t.hi) + "]"),
    el("td", { class: "num" }, t.p_value === 0 ? "<" + (1 / s.n_boot).toPrecision(2) : fmt.num(t.p_value)), el("td", { class: "num" }, fmt.num(t.p_adjusted)),
    el("td", {}, t.significant ? el("b", {}, t.direction) : t.direction)));
  const tabs = ["changed", "regressions", "improvements", "all"].map((f) => el("button", { class: f === filter ? "primary" : null, id: "cmp-" + f,
    onclick: () => { const p2 = new URLSearchParams(params); p2.set("filter", f); p2.delete("offset"); go(["compare", base, cand], p2); } }, f));
  const side = (run, x) => x ? el("span", {}, el("a", { href: "#/run/" + run + "/case/" + x.row }, x.status === "scored" ? fmt.num(x.score) : x.status), " ", x.passed === true ? el("span", { class: "pass" }, "pass") : x.passed === false ? el("span", { class: "fail" }, "fail") : "") : el("span", { class: "muted" }, "absent");
  const bi = runInfo(base), ci = runInfo(cand);
  clear(main, el("h1", {}, "Compare two runs"),
    el("p", {}, "baseline ", pick("base", base), " candidate ", pick("cand", cand)),
    el("div", { class: "card", id: "compare-verdict" }, el("b", {}, cmp.verdict), ": ", cmp.verdict_reason),
    el("div", { class: "grid" },
      el("div", { class: "card stat" }, el("span", { class: "muted" }, "baseline pass rate"), el("b", {}, fmt.ci(cmp.baseline_overall.pass_rate, true))),
      el("div", { class: "card stat" }, el("span", { class: "muted" }, "candidate pass rate"), el("b", {}, fmt.ci(s.overall.pass_rate, true))),
      el("div", { class: "card stat" }, el("span", { class: "muted" }, "regressions / improvements"), el("b", { id: "reg-count" }, cmp.regression_count + " / " + cmp.fixed)),
      el("div", { class: "card stat" }, el("span", { class: "muted" }, "McNemar exact p"), el("b", {}, fmt.num(cmp.mcnemar_p))),
      el("div", { class: "card stat" }, el("span", { class: "muted" }, "shared cases"), el("b", {}, String(cmp.shared)))),
    d.chart ? el("div", { class: "charts", id: "compare-chart" }, chartCard(d.chart)) : null,
    el("h2", {}, "Paired tests (as referee score --baseline)"),
    el("table", {}, el("thead", {}, el("tr", {}, ["scope", "metric", "n", "diff", "95% CI", "p", "p (BH)", "direction"].map((h) => el("th", { class: "nosort" }, h)))), el("tbody", {}, tests)),
    (cmp.skipped || []).length ? el("p", { class: "muted" }, cmp.skipped.join("; ")) : null,
    (s.warnings || []).length ? el("ul", { class: "warn-list" }, s.warnings.slice(0, 8).map((w) => el("li", {}, w))) : null,
    el("h2", {}, "Per case"), el("div", { class: "filters" }, tabs, el("span", { class: "muted", id: "cmp-total" }, d.total + " case(s)")),
    el("table", { id: "compare-table" }, el("thead", {}, el("tr", {}, ["id", "change", "baseline (" + bi.name + ")", "candidate (" + ci.name + ")"].map((h) => el("th", { class: "nosort" }, h)))),
      el("tbody", {}, d.cases.map((c) => el("tr", { "data-id": c.id }, el("td", {}, c.baseline && c.candidate
        ? el("a", { href: "#/compare/" + base + "/" + cand + "/rows/" + c.baseline.row + "/" + c.candidate.row, title: "side by side" }, c.id) : c.id),
      el("td", { class: "change-" + c.change }, c.change),
        el("td", {}, side(base, c.baseline)), el("td", {}, side(cand, c.candidate)))))));
}

async function viewSideBySide(base, cand, rowB, rowC, params) {
  const ctx = state.ctx;
  const main = ctx.box;
  const [b, c] = await Promise.all([api("/api/runs/" + base + "/cases/" + rowB), api("/api/runs/" + cand + "/cases/" + rowC)]);
  const column = (run, x) => {
    const info = runInfo(run);
    return el("div", { class: "side" },
      el("h2", {}, info.name),
      el("p", {}, el("b", {}, x.status), x.score !== null ? " score " + fmt.num(x.score) : "", " ", verdict(x), " ", flagsOf(x.flags),
        " ", el("a", { href: "#/run/" + run + "/case/" + x.row }, "open")),
      x.case && x.case.output !== undefined ? section("Output", x.case.output_html !== undefined ? markdownBlock(x.case.output_html) : textBlock(x.case.output)) : null,
      section("Rationale", textBlock(x.rationale || x.error)),
      x.criteria.length ? section("Criteria", el("table", {}, el("tbody", {}, x.criteria.map((k) => el("tr", {},
        el("td", {}, k.name || k.id), el("td", { class: "num" }, fmt.num(k.score)), el("td", {}, k.rationale || k.error || "")))))) : null);
  };
  clear(main, el("a", { href: "#/compare/" + base + "/" + cand + (params.toString() ? "?" + params.toString() : "") }, "\u2190 comparison"),
    el("h1", { id: "case-title" }, c.id),
    c.case || b.case ? section("Input", textBlock((c.case || b.case).input)) : null,
    el("div", { class: "cols", id: "side-by-side" }, column(base, b), column(cand, c)));
}

// ---- coverage of generated cases (referee synth's provenance): shown only when the run's cases were generated ----

function renderCoverage(key, box) {
  api("/api/runs/" + key + "/coverage").then((d) => {
    if (!d.cases) return;
    clear(box, el("h2", {}, "Generated cases: coverage"),
      el("p", { class: "muted", id: "coverage-count" }, d.cases + " generated case" + (d.cases === 1 ? "" : "s") +
        " (referee synth); a two-chunk case counts for each of its documents"),
      el("div", { class: "charts" }, d.charts.map(chartCard)));
  }).catch((e) => clear(box, el("p", { class: "fail" }, "coverage: " + e.message)));
}

// ---- charts: SVG drawn by the server (reports/_charts.py, escaped there), parsed as SVG, never as HTML -------

function chartCard(c) {
  const doc = new DOMParser().parseFromString(c.svg, "image/svg+xml");
  const svg = doc.documentElement;
  const ok = svg && svg.nodeName === "svg" && !doc.querySelector("parsererror, script, foreignObject");
  return el("figure", { class: "card chart-card", id: "chart-" + c.id }, el("figcaption", {}, c.title),
    ok ? document.importNode(svg, true) : el("p", { class: "muted" }, "(chart not shown)"));
}

function warningsBox() {
  const w = (state.index && state.index.warnings) || [];
  return w.length ? el("ul", { class: "warn-list card", id: "input-warnings" }, w.map((x) => el("li", {}, x))) : null;
}

// ---- the grid: cases x runs, each run's own output with its verdict (the first screen of several runs) ------

async function viewGrid(params) {
  const ctx = state.ctx;
  const main = ctx.box;
  const show = params.get("show") || "all";
  const offset = Number(params.get("offset") || 0);
  const limit = 50;
  const q = new URLSearchParams({ show, offset: String(offset), limit: String(limit) });
  if (params.get("q")) q.set("q", params.get("q"));
  const d = await api("/api/grid?" + q.toString());
  const search = el("input", { type: "search", id: "grid-q", placeholder: "id, input or output words", value: params.get("q") || "",
    onkeydown: (e) => { if (e.key === "Enter") { const p2 = new URLSearchParams(params); p2.set("q", e.target.value); p2.delete("offset"); go(["grid"], p2); } } });
  const shows = [["all", "all cases"], ["failing", "failing in a run"], ["differ", "runs disagree"]].map(([v, label]) =>
    el("button", { id: "grid-show-" + v, class: v === show ? "primary" : null, onclick: () => { const p2 = new URLSearchParams(params); p2.set("show", v); p2.delete("offset"); go(["grid"], p2); } }, label));
  const cell = (c) => {
    if (!c) return el("td", { class: "grid-cell absent muted" }, "(not in this run)");
    const cls = c.status !== "scored" ? "unscored" : c.passed === true ? "pass" : c.passed === false ? "fail" : "";
    return el("td", { class: "grid-cell cell-" + cls, "data-run": c.run, "data-passed": c.passed === null ? "" : String(c.passed) },
      el("div", { class: "cell-head" }, el("a", { href: "#/run/" + c.run + "/case/" + c.row }, verdict(c), c.status === "scored" ? " " + fmt.num(c.score) : "")),
      c.has_output ? el("div", { class: "cell-output" }, c.output + (c.cut ? " \u2026" : ""))
        : el("div", { class: "muted" }, c.loading ? "(reading the outputs...)" : "(no output shown: pass --cases RUN=FILE)"));
  };
  const page = (delta) => { const p2 = new URLSearchParams(params); p2.set("offset", String(Math.max(0, offset + delta))); go(["grid"], p2); };
  if (d.outputs_pending) setTimeout(() => { if (state.ctx === ctx && parseHash().parts[0] !== "run") route(); }, 1500);
  clear(main, el("h1", {}, "Cases x runs"),
    warningsBox(),
    el("div", { class: "filters" }, search, shows, el("span", { class: "muted", id: "grid-total" }, d.total + " case(s)")),
    el("table", { id: "grid" },
      el("thead", {}, el("tr", {}, el("th", { class: "nosort" }, "case"), d.names.map((n, i) => el("th", { class: "nosort", title: d.files ? d.files[i] : n },
        el("a", { href: "#/run/" + d.runs[i] }, n))))),
      el("tbody", {}, d.rows.map((r) => el("tr", { class: "grid-row", "data-id": r.id },
        el("td", { class: "grid-case" }, el("b", {}, r.id), r.input ? el("div", { class: "muted cell-input" }, r.input) : null),
        r.cells.map(cell))))),
    el("div", { class: "pager" },
      offset > 0 ? el("button", { id: "grid-prev", onclick: () => page(-limit) }, "previous") : null,
      el("span", { class: "muted" }, d.total ? (offset + 1) + "-" + Math.min(offset + limit, d.total) + " of " + d.total : ""),
      offset + limit < d.total ? el("button", { id: "grid-next", onclick: () => page(limit) }, "next") : null));
}

// A run still being written: reload the table when its file changed on disk.
async function poll() {
  try {
    const fresh = await api("/api/runs");
    const changed = fresh.runs.some((r, i) => !state.index.runs[i] || state.index.runs[i].generation !== r.generation);
    if (changed) {
      state.index = fresh;
      const { parts } = parseHash();
      const onTable = (parts[0] === "run" && parts.length === 2) || parts.length === 0;
      const typing = document.activeElement && ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
      if (onTable && !typing) route(); else toast("a results file changed on disk: reload to see the new rows");
    }
  } catch (e) { /* the viewer stopped: nothing to refresh */ }
}

// ---- start -----------------------------------------------------------------------------------------

const reviewerInput = document.getElementById("reviewer");
reviewerInput.value = state.reviewer;
reviewerInput.addEventListener("change", () => { localStorage.setItem("referee.reviewer", reviewerInput.value.trim()); });
window.addEventListener("hashchange", route);
route();
setInterval(poll, 3000);
