// referee view: the claims table of a case judged by the claim-level RAG metrics (docs/rag.md). It adds to the
// case page app.js renders (its referee:case event), from the case API's `claims`: each claim, its verdict,
// each quote with the chunk it names and whether it was found, and the chunk's text with the quote in a <mark>.
// Every string from the results file or the case is a text node: the highlight is text nodes around a <mark>.
"use strict";
(() => {
  function node(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }

  const VERDICT = { "supported": "pass", "relevant": "pass", "unsupported": "fail", "not relevant": "fail" };

  // The chunk's text as segments ({text, mark}); a marked segment is the found quote.
  function chunkText(segments) {
    const box = node("div", "text claim-chunk");
    for (const s of segments) box.append(s.mark ? node("mark", null, s.text) : document.createTextNode(String(s.text)));
    return box;
  }

  function chunkLabel(s) {
    return [s.passage, s.rank !== null && s.rank !== undefined ? " (rank " + s.rank + ")" : "",
      s.source ? " " + s.source : ""].join("");
  }

  function rowsOf(r) {
    const claimCells = () => [node("td", null, r.metric), node("td", null, node("b", null, r.id), " ", r.text),
      node("td", VERDICT[r.verdict] || "muted", r.verdict + (r.against && r.against !== "contexts" ? " (" + r.against + ")" : ""))];
    if (!r.supports.length) {
      return [node("tr", "claim-row", claimCells(), node("td", "muted", r.against === "question" ? "" : "no quote cited"),
        node("td", null, ""), node("td", null, ""), node("td", null, ""))];
    }
    return r.supports.map((s) => node("tr", "claim-row", claimCells(),
      node("td", "claim-quote", "\u201c" + s.quote + "\u201d"),
      node("td", null, chunkLabel(s)),
      node("td", s.found ? "pass claim-found" : "fail claim-notfound", s.found ? "found" : "not found",
        s.problem ? node("div", "muted", s.problem) : null),
      node("td", null, s.segments ? chunkText(s.segments)
        : node("span", "muted", "(the chunk's text is not in the cases given to the viewer)"))));
  }

  function claimsView(t) {
    const head = ["metric", "claim", "verdict", "quote", "chunk", "quote found", "the quote in its chunk"];
    return node("section", "card", node("h2", null, "Claims"),
      node("p", "muted", t.rows.length + " claim row(s)" + (t.total > t.rows.length ? " of " + t.total + " claims" : "") +
        (t.quotes > t.max_quotes ? "; the first " + t.max_quotes + " of " + t.quotes + " quotes shown" : "") +
        "; a claim is supported only when its quote is found in the chunk it names"),
      node("table", "claims-table", node("thead", null, node("tr", null, head.map((h) => node("th", "nosort", h)))),
        node("tbody", null, t.rows.map(rowsOf))));
  }

  // On each case page app.js draws (its data and title in the event): the claims table after the title.
  function addClaims(detail) {
    const c = detail && detail.data, title = detail && detail.title;
    if (!c || !c.claims || !c.claims.rows.length || !title || !title.isConnected) return;
    if (title.parentNode.querySelector("#claims-view")) return;
    const box = node("div", null, claimsView(c.claims));
    box.id = "claims-view";
    title.parentNode.insertBefore(box, title.nextSibling ? title.nextSibling.nextSibling : null);
  }

  document.addEventListener("referee:case", (ev) => addClaims(ev.detail));
  addClaims(window.refereeCase);  // a page drawn before this script ran
})();
