// A run's page (/runs/ID): status and progress, every declared metric against iteration
// (growing as the run writes; a branch's inherited iterations drawn dashed, as its parent's),
// every setting, provenance, lineage and children, and its games. Polls the run and its
// metrics.
"use strict";

(() => {
  const id = T.key;
  const main = document.getElementById("main");
  const title = T.el("h1", { id: "title" });
  const status = T.el("p", { id: "status" });
  const links = T.el("p", { id: "links" });
  const charts = T.el("div", { class: "charts", id: "charts" });
  const info = T.el("div", { id: "info" });
  const games = T.el("div", { id: "games" });
  main.append(title, status, links, T.el("h2", { text: "Metrics" }),
    T.el("p", { class: "note", text: "Hover for values; click a legend entry to hide its line; drag to zoom, double-click to zoom out." }),
    charts, T.el("h2", { text: "Games" }), games, info);
  let infoDrawn = false;

  function kv(obj, skip) {
    const t = T.el("table", { class: "kv" });
    for (const [k, v] of Object.entries(obj || {})) {
      if (skip && skip.includes(k)) continue;
      t.append(T.el("tr", {}, T.el("td", { text: k }), T.el("td", { text: v === null ? "–" : typeof v === "object" ? JSON.stringify(v) : String(v) })));
    }
    return t;
  }

  function drawInfo(j) {
    const r = j.run;
    title.textContent = `run ${r.id}: ${r.name}`;
    T.crumb(T.link("/runs/" + r.id, "run " + r.id));
    // The status cell says the ETA of a running run (once: not again after the iterations).
    status.replaceChildren(T.statusCell(r), ` — iteration `, T.el("span", { id: "iterations", text: String(r.iterations_done) }),
      ` of ${r.iterations_planned}; ${r.variant}, seed ${r.seed}, learner ${r.learner || "–"}; head ${r.head ? r.head.slice(0, 16) : "–"}`);
    status.dataset.iterations = String(r.iterations_done);
    if (infoDrawn) return;
    infoDrawn = true;
    const l = [];
    for (const s of j.sweeps) l.push("sweep ", T.link("/sweeps/" + encodeURIComponent(s.sweep), s.sweep), ` (point ${s.point}, seed ${s.seed}) `);
    if (j.branch) l.push("branch of ", T.link("/runs/" + j.branch.run, "run " + j.branch.run), ` at iteration ${j.branch.iteration}`,
      j.branch.overrides.length ? ` with ${j.branch.overrides.join(", ")} ` : " ");
    if (j.children.length) {
      l.push("branches: ");
      j.children.forEach((c) => l.push(T.link("/runs/" + c.id, `${c.id} (${c.name}, at ${c.parent_iteration})`), " "));
    }
    l.push(T.link("/compare?runs=" + r.id + (j.branch ? "," + j.branch.run : ""), j.branch ? "compare with its parent" : "compare"));
    links.replaceChildren(...l);
    info.replaceChildren(
      T.el("h2", { text: "Settings (as stored, defaults included)" }), kv(j.settings, ["run_id"]),
      T.el("details", {}, T.el("summary", { text: "the run spec as given" }), T.el("pre", { text: j.spec_toml || "" })),
      T.el("h2", { text: "Provenance" }), kv(j.provenance, ["run_id"]),
      T.el("h2", { text: "Sessions" }), sessions(j.sessions),
      T.el("h2", { text: "Lineage" }), lineage(j.lineage));
  }

  function sessions(list) {
    const t = T.el("table", {}, T.el("tr", {}, ...["started", "ended", "outcome", "host", "commit", "iterations", "command"].map((h) => T.el("th", { text: h }))));
    for (const s of list) t.append(T.el("tr", {}, T.el("td", { text: s.started_at }), T.el("td", { text: s.ended_at || "–" }),
      T.el("td", { text: s.outcome || "–" }), T.el("td", { text: s.host }), T.el("td", { text: s.engine_commit.slice(0, 10) + " " + s.engine_tree }),
      T.el("td", { text: `${s.iterations_from}→${s.iterations_to === null ? "…" : s.iterations_to}` }), T.el("td", { text: s.command_line })));
    return t;
  }

  function lineage(list) {
    const t = T.el("table", {}, T.el("tr", {}, ...["depth", "ancestor", "at iteration"].map((h) => T.el("th", { text: h }))));
    for (const a of list) t.append(T.el("tr", {}, T.el("td", { text: String(a.depth) }),
      T.el("td", {}, T.link("/runs/" + a.ancestor, `${a.ancestor} ${a.ancestor_name}`)), T.el("td", { text: String(a.at_iteration) })));
    return t;
  }

  // Charts of one metric family (ERR_p and its variants, ...) share a y-range.
  const metricCharts = T.metricCharts(charts);
  function drawMetrics(m) {
    const own = Number(id);
    for (const name of m.metrics) {
      const ys = m.values[name];
      const lines = [];
      const inherited = m.source_run.some((s) => s !== own);
      if (inherited) {
        const xsI = [], ysI = [], xsO = [], ysO = [];
        m.iterations.forEach((it, k) => {
          if (m.source_run[k] !== own) { xsI.push(it); ysI.push(ys[k]); }
          if (m.source_run[k] === own || m.source_run[k + 1] === own) { xsO.push(it); ysO.push(ys[k]); }
        });
        lines.push({ label: "this run", xs: xsO, ys: ysO, index: 0 });
        lines.push({ label: "inherited from its parent", xs: xsI, ys: ysI, index: 1, colour: "#888", dash: [5, 4] });
      } else {
        lines.push({ label: name, xs: m.iterations, ys, index: 0 });
      }
      metricCharts.add(name, lines);
    }
    metricCharts.draw();
  }

  let gamesIteration = null;
  async function drawGames(r) {
    if (r.iterations_done < 1) return;
    const it = 1;
    gamesIteration = it;
    const pick = T.el("input", { type: "number", min: 1, max: r.iterations_done, value: it, style: "width:6em" });
    const list = T.el("div");
    async function show() {
      const g = await T.get(`/api/runs/${id}/games?iteration=${pick.value}&per_page=40`);
      list.replaceChildren(T.el("p", { class: "note", text: `${g.total} games in iteration ${g.iteration}; the first ${g.games.length}:` }),
        ...g.games.map((x) => T.el("span", {}, T.link("/games/" + x.hash, `#${x.game} ${x.hash.slice(0, 8)}`), " ")));
    }
    pick.addEventListener("change", () => show().catch(T.showError));
    games.replaceChildren(T.el("label", {}, "iteration ", pick), list);
    await show();
  }

  T.poll(async () => {
    const [j, m] = await Promise.all([T.get("/api/runs/" + id), T.get(`/api/runs/${id}/metrics`)]);
    drawInfo(j);
    drawMetrics(m);
    if (gamesIteration === null) await drawGames(j.run);
  }, 2000);
})();
