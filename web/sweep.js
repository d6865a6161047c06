// A sweep's page (/sweeps/NAME): "k of N" finished; per metric the final value against an axis
// (a line per value of another, mean and 95% interval over the seeds: the 2023 study's
// Fig. 20 form; unfinished runs left out and counted), the same as a pivoted table, and the
// curves against iteration grouped by the x axis with 95% bands; then the member runs. All
// charts of one metric share one y-range. Polls /api/sweeps/HASH.
"use strict";

(() => {
  const hash = T.key;
  const main = document.getElementById("main");
  const title = T.el("h1", { id: "title" });
  const progress = T.el("p", { id: "progress" });
  const finals = T.el("div", { id: "finals" });
  const curves = T.el("div", { id: "curves" });
  const members = T.el("div", { id: "members" });
  main.append(title, progress,
    T.el("h2", { text: "Final values (finished runs only)" }), finals,
    T.el("h2", { text: "Curves against iteration (mean over seeds, 95% band)" }), curves,
    T.el("h2", { text: "Runs" }), members);
  const charts = new Map();
  const ranges = new Map();
  const tables = new Map();

  function section(parent, id, text) {
    let s = document.getElementById(id);
    if (!s) {
      s = T.el("div", { id }, T.el("h3", { text }), T.el("div", { class: "charts" }));
      parent.append(s);
    }
    return s.querySelector(".charts");
  }

  function chartFor(key, parent, opts) {
    let c = charts.get(key);
    if (!c) { c = T.chart(parent, opts); charts.set(key, c); }
    return c;
  }

  function finalLines(f) {
    return f.lines.map(([label, pts], k) => ({
      label: f.by ? label : "all runs", index: k,
      xs: pts.map((p) => p[0]), ys: pts.map((p) => p[1].mean), lo: pts.map((p) => p[1].lo), hi: pts.map((p) => p[1].hi),
    }));
  }

  function pivot(metric, fig, f, facetText) {
    const key = metric + "|" + facetText;
    const t = T.el("table", { class: "pivot" });
    t.append(T.el("tr", {}, T.el("th", { text: (f.by || "") + " \\ " + f.x }), ...f.x_values.map((v) => T.el("th", { class: "num", text: v }))));
    for (const [label, pts] of f.lines) {
      const at = new Map(pts.map((p) => [p[0], p[1]]));
      t.append(T.el("tr", {}, T.el("td", { text: label || "all runs" }), ...f.x_values.map((_, i) => {
        const s = at.get(i);
        return T.el("td", { class: "num", text: T.stat(s, fig.digits) });
      })));
    }
    let holder = tables.get(key);
    if (!holder) { holder = T.el("div", { class: "pivot-holder" }); tables.set(key, holder); }
    holder.replaceChildren(T.el("p", { class: "note", text: `final ${metric}${facetText ? " at " + facetText : ""}: mean [95% interval] over the seeds (one seed: no interval)` }), t);
    return holder;
  }

  function draw(j) {
    title.textContent = `sweep ${j.name}`;
    T.crumb(T.link("/sweeps/" + encodeURIComponent(j.name), "sweep " + j.name));
    const planned = j.planned_runs !== j.runs ? ` (${j.planned_runs} planned)` : "";
    progress.textContent = `${j.finished} of ${j.runs} runs finished${planned}; axes: ${j.axes.map((a) => a.key + " ∈ {" + a.values.join(", ") + "}").join("; ")}; ${j.seeds} seeds`;
    progress.dataset.finished = String(j.finished);
    progress.dataset.runs = String(j.runs);
    const pointAxes = new Map(j.members.map((m) => [m.point, m.axes]));
    for (const metric of j.order) {
      const fig = j.figures[metric];
      // Every line of this metric, for one shared y-range.
      const sets = [];
      const finalSets = fig.finals.map((ff) => finalLines(ff.finals));
      sets.push(...finalSets);
      const groups = new Map();
      for (const c of fig.curves) {
        const axes = pointAxes.get(c.point) || {};
        const g = j.x ? `${j.x.split(".").pop()}=${JSON.stringify(axes[j.x])}` : "all";
        if (!groups.has(g)) groups.set(g, []);
        groups.get(g).push({
          label: c.label, index: groups.get(g).length,
          xs: c.points.map((p) => p[0]), ys: c.points.map((p) => p[1].mean), lo: c.points.map((p) => p[1].lo), hi: c.points.map((p) => p[1].hi),
        });
      }
      sets.push(...groups.values());
      let range = ranges.get(metric);
      if (!range) { range = {}; ranges.set(metric, range); }
      Object.assign(range, T.rangeOf(sets, fig.reference));
      const fParent = section(finals, "finals-" + metric, fig.title);
      fig.finals.forEach((ff, i) => {
        const f = ff.finals;
        const facetText = ff.facet.map(([k, v]) => `${k.split(".").pop()}=${v}`).join(", ");
        const c = chartFor(`final|${metric}|${i}`, fParent, {
          title: `final ${metric} against ${f.x.split(".").pop()}${facetText ? " (" + facetText + ")" : ""}`,
          x: f.x.split(".").pop(), y: metric, xValues: f.x_values, range, reference: fig.reference, digits: fig.digits, points: true,
        });
        c.box.classList.add("final-figure");
        c.box.dataset.unfinished = String(f.unfinished);
        c.update(finalSets[i]);
        let note = c.box.querySelector(".note");
        if (!note) { note = T.el("p", { class: "note" }); c.box.append(note); }
        note.textContent = f.unfinished ? `${f.unfinished} unfinished runs left out` : "every run finished";
        fParent.parentNode.append(pivot(metric, fig, f, facetText));
      });
      const cParent = section(curves, "curves-" + metric, fig.title);
      for (const [g, lines] of groups) {
        const c = chartFor(`curve|${metric}|${g}`, cParent, { title: `${metric}, ${g}`, y: metric, range, reference: fig.reference, digits: fig.digits });
        c.update(lines);
      }
    }
    drawMembers(j);
  }

  function drawMembers(j) {
    const keys = j.axes.map((a) => a.key);
    const t = T.el("table", {}, T.el("tr", {}, ...["run", ...keys.map((k) => k.split(".").pop()), "seed", "status", "iterations", "WR_p"].map((h) => T.el("th", { text: h }))));
    for (const m of j.members) {
      const r = m.run || {};
      t.append(T.el("tr", { "data-run": r.id },
        T.el("td", {}, r.id ? T.link("/runs/" + r.id, String(r.id)) : "–"),
        ...keys.map((k) => T.el("td", { text: JSON.stringify(m.axes[k]) })),
        T.el("td", { text: m.seed }),
        T.el("td", {}, r.status ? T.statusCell(r) : "–"),
        T.el("td", { class: "num", text: `${r.iterations_done}/${r.iterations_planned}` }),
        T.el("td", { class: "num", text: T.fmt(r.wr_p, 3) })));
    }
    members.replaceChildren(t);
  }

  T.poll(async () => draw(await T.get("/api/sweeps/" + hash)), 2500);
})();
