// Runs side by side (/compare?runs=A,B,...): the settings that differ (all of them on request)
// and each declared metric's curves overlaid, one line per run. Any runs: other sweeps,
// branches, other specs. Polls the runs' metrics.
"use strict";

(() => {
  const ids = T.key.split(",").filter(Boolean);
  const main = document.getElementById("main");
  const diff = T.el("div", { id: "diff" });
  const all = T.el("input", { type: "checkbox", id: "all" });
  const charts = T.el("div", { class: "charts", id: "charts" });
  main.append(T.el("h1", { text: `Comparing ${ids.length} runs` }),
    T.el("h2", { text: "Settings" }), T.el("label", {}, all, " show the settings that are the same too"), diff,
    T.el("h2", { text: "Metrics" }), charts);
  T.crumb("compare " + ids.join(", "));
  // Charts of one metric family (ERR_p and its variants, ...) share a y-range.
  const metricCharts = T.metricCharts(charts);
  let runs = [];

  // A setting's value as text: an object or a list as JSON, not "[object Object]".
  function asText(v) {
    return v !== null && typeof v === "object" ? JSON.stringify(v) : String(v);
  }

  function drawDiff() {
    const keys = [];
    for (const r of runs) for (const k of Object.keys(r.settings || {})) if (!keys.includes(k) && k !== "run_id") keys.push(k);
    const t = T.el("table", { class: "settings-diff" }, T.el("tr", {}, T.el("th", { text: "setting" }),
      ...runs.map((r) => T.el("th", {}, T.link("/runs/" + r.run.id, `${r.run.id} ${r.run.name}`)))));
    let shown = 0;
    for (const k of keys) {
      const vals = runs.map((r) => JSON.stringify((r.settings || {})[k]));
      const same = vals.every((x) => x === vals[0]);
      if (same && !all.checked) continue;
      shown++;
      t.append(T.el("tr", { class: same ? null : "differs" }, T.el("td", { text: k }),
        ...runs.map((r) => T.el("td", { text: asText((r.settings || {})[k]) }))));
    }
    diff.replaceChildren(shown ? t : T.el("p", { class: "note", text: "every setting is the same" }));
    diff.dataset.differing = String(keys.filter((k) => !runs.every((r) => JSON.stringify((r.settings || {})[k]) === JSON.stringify((runs[0].settings || {})[k]))).length);
  }
  all.addEventListener("change", drawDiff);

  async function start() {
    runs = await Promise.all(ids.map((id) => T.get("/api/runs/" + id)));
    drawDiff();
    T.poll(async () => {
      const ms = await Promise.all(ids.map((id) => T.get(`/api/runs/${id}/metrics`)));
      const names = [];
      for (const m of ms) for (const n of m.metrics) if (!names.includes(n)) names.push(n);
      for (const name of names) {
        const lines = ms.map((m, k) => ({ label: `${runs[k].run.id} ${runs[k].run.name}`, index: k, xs: m.iterations, ys: m.values[name] || m.iterations.map(() => null) }));
        metricCharts.add(name, lines);
      }
      metricCharts.draw();
    }, 2000);
  }
  start().catch(T.showError);
})();
