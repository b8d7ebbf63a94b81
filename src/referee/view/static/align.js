// referee view: several reviewers' agreement, and the judge aligned to the labels given so far (docs/view.md).
// As in app.js, every string from a labels or results file (reviewer names, ids, the prompt diff) goes into the
// page as a text node through el(); nothing here builds HTML.
"use strict";

const ALIGN_METRICS = { alpha: "Krippendorff's alpha (interval)", kappa: "Cohen's kappa", exact: "exact agreement",
  mae: "mean absolute delta (lower is better)", spearman: "Spearman rho" };

function ivText(x) { return x && x.estimate !== null && x.estimate !== undefined ? fmt.ci(x) : "n/a"; }

// With K > 1 reviewers per case the page shows each reviewer only their own labels (a convention of the page:
// the API returns every label).
function blindReview() { return !!(state.index && state.index.reviewers_per_case > 1); }
function visibleLabels(labels) {
  return blindReview() ? (labels || []).filter((l) => (l.reviewer || "anonymous") === currentReviewer()) : (labels || []);
}

async function renderReviewers(key, box) {
  let d;
  try { d = await api("/api/runs/" + key + "/reviewers"); } catch (e) { clear(box, el("p", { class: "fail" }, "reviewers: " + e.message)); return; }
  if (!d.criteria || !d.criteria.length) { clear(box); return; }
  const rows = d.criteria.map((c) => el("tr", { class: "reviewers-row", "data-criterion": c.criterion },
    el("td", {}, c.criterion),
    el("td", { class: "num" }, String(c.reviewers.length)),
    el("td", { class: "num" }, String(c.cases_shared)),
    el("td", { class: "num rev-alpha" }, c.reviewers.length > 1 ? ivText(c.reviewers_alpha) : "one reviewer"),
    el("td", { class: "num judge-alpha" }, c.judge_alpha ? ivText(c.judge_alpha) : "n/a"),
    el("td", { class: "num" }, c.no_consensus === null || c.no_consensus === undefined ? "" : String(c.no_consensus))));
  const overall = d.criteria.find((c) => (c.judge_per_reviewer || []).length);
  const per = overall ? el("ul", { id: "judge-per-reviewer" }, overall.judge_per_reviewer.map((p) =>
    el("li", {}, "judge vs ", el("b", { class: "reviewer-name" }, p.reviewer), ": alpha " + ivText(p.alpha) + " on " + p.cases + " case(s)"))) : null;
  clear(box, el("div", { class: "card", id: "reviewers-card" },
    el("b", {}, "Reviewers (" + d.reviewers.length + ", " + (d.reviewers_per_case || 1) + " asked per case): their agreement with each other is the ceiling the judge is measured against"),
    el("table", {}, el("thead", {}, el("tr", {}, ["criterion", "reviewers", "cases labelled twice or more", "reviewers' alpha", "judge vs consensus alpha", "cases without consensus"].map((h, i) => el("th", { class: "nosort" + (i ? " num" : "") }, h)))),
      el("tbody", {}, rows)),
    per,
    (d.warnings || []).length ? el("ul", { class: "warn-list", id: "reviewers-warnings" }, d.warnings.map((w) => el("li", {}, w))) : null,
    el("p", { class: "muted" }, "Krippendorff's alpha (nominal for pass/fail, interval for scores) with 95% bootstrap intervals.")));
}

async function viewAlign(key) {
  const main = state.ctx.box;
  const back = el("a", { href: "#/run/" + key }, "\u2190 all cases");
  const title = el("h1", {}, "Align the judge to these labels");
  clear(main, back, title, el("p", { class: "muted" }, "fitting the score map on half the labels and measuring it on the others..."));
  let d;
  try { d = await api("/api/runs/" + key + "/align"); } catch (e) {
    clear(main, back, title, el("p", { class: "fail", id: "align-error" }, e.message),
      el("a", { href: "#/run/" + key + "/review?kind=uncertain" }, "label more cases"));
    return;
  }
  const h = d.heldout;
  const rows = [];
  for (const m of Object.keys(h.values.aligned || {})) {
    const name = ALIGN_METRICS[m] || m;
    rows.push(el("tr", { class: "align-metric", "data-metric": m },
      el("td", {}, el("b", {}, name), m === h.metric ? " (decides)" : ""),
      el("td", { class: "num raw" }, ivText(h.values.raw[m])),
      el("td", { class: "num aligned" }, ivText(h.values.aligned[m])),
      el("td", { class: "num baseline" }, ivText(h.values.baseline[m])),
      el("td", { class: "num gain-raw" }, h.gains.raw[m] ? ivText(h.gains.raw[m]) : ""),
      el("td", { class: "num gain-baseline" }, h.gains.baseline[m] ? ivText(h.gains.baseline[m]) : "")));
  }
  // Pass/fail labels are 1/0 on the human scale: shown as the words.
  const level = (v) => d.kind === "binary" ? (v >= 0.5 ? "pass" : "fail") : fmt.num(v, 2);
  const className = (c) => d.kind === "binary" ? ({ "0": "fail", "1": "pass" }[c] || c) : c;
  const changed = (d.changed || []).map((c) => el("tr", { class: "changed-row", "data-id": c.id },
    el("td", {}, c.row === null || c.row === undefined ? c.id : el("a", { href: "#/run/" + key + "/case/" + c.row }, c.id)),
    el("td", { class: "num" }, level(c.raw)), el("td", { class: "num" }, level(c.aligned)), el("td", { class: "num" }, level(c.human))));
  const more = d.more_labels ? Object.entries(d.more_labels).filter(([, k]) => k > 0) : [];
  clear(main, back, title,
    el("p", { id: "align-split" }, "Score map on " + d.n_labels + " labelled case(s): " + d.split.train + " to fit, " + d.split.heldout_ids.length + " held out; "
      + d.reviewers.length + " reviewer(s) (", d.reviewers.map((r, i) => [i ? ", " : "", el("b", { class: "reviewer-name" }, r)]), "), "
      + d.no_consensus + " case(s) without consensus left out."),
    el("div", { class: "card", id: "align-decision" },
      el("b", { class: d.written ? "pass" : "fail" }, d.written ? "The aligned judge helps on the held-out cases: referee align would write it." : "No aligned judge: the original judge is kept."),
      el("ul", {}, (d.reasons || []).map((r) => el("li", {}, r)))),
    el("table", { class: "card", id: "align-figures" },
      el("thead", {}, el("tr", {}, ["held-out agreement", "raw judge", "aligned", "no judge (baseline)", "gain over raw (+: better)", "gain over baseline"].map((x, i) => el("th", { class: "nosort" + (i ? " num" : "") }, x)))),
      el("tbody", {}, rows)),
    more.length ? el("p", { class: "muted" }, "To narrow the gain's interval to +-" + d.target_width + ": about " + more.map(([c, k]) => k + " more " + className(c) + " label(s)").join(", ") + ".") : null,
    section("Held-out cases whose verdict the map changed (" + changed.length + ")",
      changed.length ? el("table", { id: "align-changed" }, el("thead", {}, el("tr", {}, ["case", "raw judge", "aligned", "human"].map((x, i) => el("th", { class: "nosort" + (i ? " num" : "") }, x)))), el("tbody", {}, changed))
        : el("p", { class: "muted", id: "align-changed-none" }, "none")),
    section("Prompt diff", d.prompt_diff ? el("pre", { id: "prompt-diff" }, d.prompt_diff)
      : el("p", { class: "muted", id: "prompt-diff-empty" }, "none: the score map changes the judge's score, not its prompt")),
    (d.notes || []).length ? el("ul", { class: "warn-list", id: "align-notes" }, d.notes.map((n) => el("li", {}, n))) : null,
    el("p", { class: "muted" }, "Write the aligned judge with ", el("code", { id: "align-command" }, d.command)));
}
