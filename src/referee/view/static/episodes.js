// Simulated conversations in the case page: the episode as a chat transcript (tool calls and results inline),
// the reward breakdown, the state diff, and every try of the case side by side. It adds to the page app.js
// renders (its referee:case event) and builds everything as text nodes: case text never becomes markup.
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
  const show = (v) => (typeof v === "string" ? v : JSON.stringify(v));
  const mark = (r) => (r.passed === true ? ["pass", "pass"] : r.passed === false ? ["fail", "fail"] : [r.status, r.status]);

  function transcript(messages) {
    return messages.map((m) => {
      if (m.role === "tool") {
        const err = m.is_error && m.content && typeof m.content === "object" ? m.content.error : null;
        return node("div", "step" + (m.is_error ? " failed" : ""), node("b", null, "result of " + (m.name || m.tool_call_id)),
          node("div", err ? "fail" : null, node("code", null, err ? "error: " + err : show(m.content))));
      }
      const box = node("div", "turn ep-" + m.role, node("div", "role", m.role === "assistant" ? "agent" : m.role));
      if (m.content) box.append(node("div", "text", show(m.content)));
      for (const c of m.tool_calls || []) {
        box.append(node("div", "step", node("b", null, "calls " + c.name), " ", node("code", null, show(c.arguments))));
      }
      return box;
    });
  }

  function rewardTable(rw) {
    const rows = (rw.basis || []).map((b) => node("tr", null, node("td", null, b),
      node("td", "num", rw.parts && rw.parts[b] !== undefined && rw.parts[b] !== null ? String(rw.parts[b]) : "")));
    rows.push(node("tr", null, node("td", null, node("b", null, "reward (product)")),
      node("td", "num", node("b", null, rw.reward === null || rw.reward === undefined ? "none" : String(rw.reward)))));
    return node("table", "ep-reward", node("thead", null, node("tr", null, node("th", "nosort", "part"), node("th", "nosort num", "value"))),
      node("tbody", null, rows));
  }

  function diffTable(title, diff) {
    if (!diff || !diff.length) return null;
    return node("section", null, node("h3", null, title),
      node("table", "ep-diff", node("thead", null, node("tr", null, ["path", "expected", "got"].map((h) => node("th", "nosort", h)))),
        node("tbody", null, diff.map((d) => node("tr", null, node("td", null, d.path), node("td", null, node("code", null, show(d.expected))),
          node("td", null, node("code", null, show(d.got))))))));
  }

  function checks(rw) {
    const items = [];
    for (const o of rw.outputs || []) items.push(node("li", o.met ? "pass" : "fail", (o.met ? "said: " : "not said: ") + o.output));
    for (const a of rw.actions || []) items.push(node("li", a.matched ? "pass" : "fail", (a.matched ? "called: " : "not called: ") + a.tool + " " + show(a.args)));
    for (const a of rw.assertions || []) items.push(node("li", a.met ? "pass" : "fail", (a.met ? "holds: " : "does not hold: ") + a.assertion));
    return items.length ? node("ul", "ep-checks", items) : null;
  }

  function episodeView(c) {
    const ep = c.details.episode, rw = c.details.reward || {};
    const state = rw.state || {};
    return node("section", "card", node("h2", null, "Simulated conversation"),
      node("p", null, "ended: ", node("b", "ep-termination", ep.termination), ep.error ? " - " + ep.error : "",
        " - " + ep.user_turns + " user turns"),
      node("div", "cols",
        node("div", null, node("h3", null, "Transcript"), transcript(ep.messages || [])),
        node("div", null, node("h3", null, "Reward breakdown"), rewardTable(rw), checks(rw),
          state.match === false ? node("p", "fail", "the final state differs from the gold actions' state") : null,
          state.match === true ? node("p", "pass", "the final state equals the gold actions' state") : null,
          diffTable("Final state vs the gold state", state.diff),
          diffTable("What the episode changed", ep.state_diff))));
  }

  async function getJson(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(url + ": HTTP " + r.status);
    return r.json();
  }

  async function triesView(key, c) {
    const base = "/api/runs/" + encodeURIComponent(key);
    // The case's other rows: the list sorted by id holds them together; pages are read until they are passed
    // (at most 20 pages of 500 rows).
    let same = [];
    for (let page = 0, offset = 0; page < 20; page++, offset += 500) {
      const list = await getJson(base + "/cases?sort=id&limit=500&offset=" + offset);
      const hit = (list.rows || []).filter((r) => r.id === c.id);
      same = same.concat(hit);
      if ((same.length && !hit.length) || offset + 500 >= list.total) break;
    }
    same = same.filter((r) => r.repeat !== null && r.repeat !== undefined).sort((a, b) => a.repeat - b.repeat);
    if (same.length < 2) return null;
    const tries = await Promise.all(same.map((r) => getJson(base + "/cases/" + r.row)));
    const grid = node("div", "ep-tries");
    grid.style.display = "grid";
    grid.style.gridTemplateColumns = "repeat(" + tries.length + ", minmax(260px, 1fr))";
    grid.style.gap = "8px";
    grid.style.overflowX = "auto";
    for (const t of tries) {
      const ep = (t.details && t.details.episode) || {}, rw = (t.details && t.details.reward) || {};
      const [cls, word] = mark(t);
      grid.append(node("div", "side ep-try", node("h3", null, "try " + t.repeat + ": ", node("span", cls, word)),
        node("p", "muted", "reward " + (rw.reward === null || rw.reward === undefined ? "none" : rw.reward) + " - " + (ep.termination || "")),
        transcript(ep.messages || [])));
    }
    const passed = tries.filter((t) => t.passed === true).length;
    return node("section", "card", node("h2", null, "Tries side by side (" + passed + " of " + tries.length + " passed)"), grid);
  }

  // On each case page app.js draws (its data and title in the event): the episode, then its tries.
  async function addEpisode(detail) {
    const c = detail && detail.data, title = detail && detail.title;
    if (!c || !c.details || !c.details.episode || !title || !title.isConnected) return;
    if (title.parentNode.querySelector("#episode-view")) return;
    const box = node("div", null, episodeView(c));
    box.id = "episode-view";
    title.parentNode.insertBefore(box, title.nextSibling ? title.nextSibling.nextSibling : null);
    try {
      const tries = await triesView(detail.run, c);
      if (tries && box.isConnected) box.append(tries);
    } catch (e) {
      console.warn("episode view: " + e.message);
    }
  }

  document.addEventListener("referee:case", (ev) => { addEpisode(ev.detail); });
  addEpisode(window.refereeCase);  // a page drawn before this script ran
})();
