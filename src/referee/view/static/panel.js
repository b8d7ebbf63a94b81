// referee view: the judge panel's disagreements (docs/panels.md), under a run's page. Standalone: it watches
// for the run page (app.js swaps in a new <main> on every navigation), asks /api/runs/<run>/panel and appends
// the cases where the panel's judges split, each judge's vote and rationale side by side, and the cases
// escalated to a stronger judge or left for a human. Every string from the results file is a text node.
"use strict";

(function () {
  function node(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v; else e.setAttribute(k, String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }

  function runKey() {
    const parts = (location.hash.replace(/^#/, "") || "/").split("?")[0].split("/").filter(Boolean)
      .map(decodeURIComponent);
    if (parts.length === 0) return "";  // the first run's page
    return parts[0] === "run" && parts.length === 2 ? parts[1] : null;
  }

  function num(v) { return v === null || v === undefined ? "" : Number(v).toFixed(2); }

  function voteCell(m) {
    if (!m) return node("td", {}, "");
    const v = m.vote || m.status || "?";
    return node("td", { class: "panel-vote" },
      node("b", { class: v === "pass" ? "pass" : v === "fail" ? "fail" : "" }, v),
      m.score === null || m.score === undefined ? "" : " " + num(m.score),
      node("div", { class: "muted" }, m.reason || m.error || ""));
  }

  function table(key, judges, cases, withStronger) {
    const head = ["case", "panel"].concat(judges).concat(withStronger ? ["stronger judge"] : []);
    const rows = cases.map((c) => node("tr", {},
      node("td", {}, node("a", { href: "#/run/" + encodeURIComponent(key) + "/case/" + c.row }, c.id)),
      node("td", {}, c.needs_human ? "needs a human" : (c.status !== "scored" ? c.status
        : (c.winner || (c.passed === true ? "pass" : c.passed === false ? "fail" : ""))),
        c.agreement === null || c.agreement === undefined ? "" : " (agreement " + num(c.agreement) + ")"),
      judges.map((j) => voteCell((c.members || []).find((m) => m.judge === j))),
      withStronger ? voteCell(c.escalated) : null));
    return node("table", { class: "panel-table" },
      node("thead", {}, node("tr", {}, head.map((h) => node("th", {}, h)))), node("tbody", {}, rows));
  }

  async function show(main) {
    let key = runKey();
    // Only a page app.js has rendered: the placeholder <main> is replaced as soon as the page is ready, and a
    // section added to it would vanish a moment after it appeared.
    if (key === null || !main.dataset.rendered || main.dataset.panel) return;
    main.dataset.panel = "1";
    try {
      if (key === "") {
        const idx = await (await fetch("/api/runs", { headers: { "Accept": "application/json" } })).json();
        if (!idx.runs || !idx.runs.length) return;
        key = idx.runs[0].run;
      }
      const r = await fetch("/api/runs/" + encodeURIComponent(key) + "/panel", { headers: { "Accept": "application/json" } });
      if (!r.ok) return;
      const d = await r.json();
      if (!d.split.length && !d.escalated.length) return;
      const box = node("div", { class: "card", id: "panel" },
        node("h2", {}, "Judge panel: where the judges disagreed"),
        node("p", { class: "muted" }, d.counts.split + " case(s) split, " + d.counts.escalated +
          " escalated; label them here and the next referee calibrate uses the labels"));
      if (d.split.length) box.append(table(key, d.judges, d.split, false));
      if (d.escalated.length) {
        box.append(node("h3", {}, "Escalated (to a stronger judge, or for a human)"));
        box.append(table(key, d.judges, d.escalated, true));
      }
      if (document.getElementById("main") === main) main.append(box);
    } catch (e) {
      // The run page stands without this section; the API error is in the server's answer.
    }
  }

  function current() {
    const main = document.getElementById("main");
    if (main) show(main);
  }

  // The run page may already be in place when this script runs (deferred scripts run in order).
  new MutationObserver(current).observe(document.body, { childList: true, subtree: false });
  current();
})();
