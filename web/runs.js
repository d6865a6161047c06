// The runs page (/): every run with its status, progress, ETA and headline metrics, sorted
// and filtered in place; sweeps with "k of N"; runs picked for /compare. Polls /api/runs.
"use strict";

(() => {
  const main = document.getElementById("main");
  const state = { sort: "id", desc: false, picked: new Set(), filter: "", rows: [] };
  const filter = T.el("input", { type: "text", id: "filter", placeholder: "filter: text, column=value or setting=value (status=running simulations=12)", size: 60 });
  const compare = T.el("button", { id: "compare", disabled: true, text: "compare picked runs" });
  const count = T.el("span", { class: "note", id: "count" });
  const sweeps = T.el("div", { id: "sweeps" });
  main.append(T.el("h1", { text: "Runs" }), T.el("div", { class: "controls" }, filter, compare, count));

  const cols = [
    { label: "", render: (r) => {
      const c = T.el("input", { type: "checkbox", title: "pick for comparing" });
      c.checked = state.picked.has(r.id);
      c.addEventListener("change", () => { c.checked ? state.picked.add(r.id) : state.picked.delete(r.id); pickedChanged(); });
      return c;
    } },
    { key: "id", label: "id", num: true },
    { key: "name", label: "name", render: (r) => T.link("/runs/" + r.id, r.name) },
    { key: "sweep", label: "sweep", render: (r) => (r.sweep ? T.link("/sweeps/" + encodeURIComponent(r.sweep.split(", ")[0]), r.sweep) : "–") },
    { key: "learner", label: "learner" },
    { key: "start_policy", label: "start" },
    { key: "variant", label: "variant" },
    { key: "status", label: "status", render: T.statusCell },
    { key: "iterations_done", label: "iterations", num: true, cls: () => "iters", render: (r) => `${r.iterations_done}/${r.iterations_planned}` },
    { key: "wr_p", label: "WR_p", num: true, digits: 3, title: "latest WR_p (score vs the optimal player)" },
    { key: "err_p", label: "ERR_p", num: true, digits: 4 },
    { key: "mae_v", label: "MAE_v", num: true, digits: 4 },
    { key: "head", label: "head", render: (r) => (r.head ? r.head.slice(0, 12) : "–") },
  ];
  state.rowAttrs = (r) => ({ "data-run": r.id, "data-iterations": r.iterations_done, "data-status": r.status });
  state.redraw = draw;
  const table = T.sortable(cols, state);
  main.append(table.table, T.el("h2", { text: "Sweeps" }), sweeps);

  function pickedChanged() {
    compare.disabled = state.picked.size < 1;
    compare.textContent = `compare picked runs (${state.picked.size})`;
  }
  compare.addEventListener("click", () => {
    location.href = "/compare?runs=" + Array.from(state.picked).join(",");
  });
  filter.addEventListener("input", () => { state.filter = filter.value; draw(); });

  function matches(r) {
    const terms = state.filter.trim().split(/\s+/).filter(Boolean);
    return terms.every((t) => {
      const eq = t.indexOf("=");
      if (eq > 0) {
        const k = t.slice(0, eq), v = t.slice(eq + 1).toLowerCase();
        const x = r[k] !== undefined ? r[k] : r.settings ? r.settings[k] : undefined;
        return x !== undefined && x !== null && String(x).toLowerCase() === v;
      }
      t = t.toLowerCase();
      return cols.some((c) => c.key && r[c.key] !== null && r[c.key] !== undefined && String(r[c.key]).toLowerCase().includes(t));
    });
  }

  function draw() {
    const rows = state.rows.filter(matches);
    table.fill(rows);
    count.textContent = `${rows.length} of ${state.rows.length} runs shown`;
  }

  function drawSweeps(list) {
    if (!list.length) { sweeps.replaceChildren(T.el("p", { class: "note", text: "no sweeps in this store" })); return; }
    const t = T.el("table", {}, T.el("tr", {}, ...["sweep", "finished", "iterations"].map((h) => T.el("th", { text: h }))));
    for (const s of list) {
      t.append(T.el("tr", { "data-sweep": s.sweep },
        T.el("td", {}, T.link("/sweeps/" + encodeURIComponent(s.sweep), s.sweep)),
        T.el("td", { class: "num", text: `${s.done} of ${s.runs}` }),
        T.el("td", { class: "num", text: `${s.iterations_done}/${s.iterations_planned}` })));
    }
    sweeps.replaceChildren(t);
  }

  T.poll(async () => {
    const j = await T.get("/api/runs?per_page=1000&settings=1");
    state.rows = j.runs;
    if (j.total > j.runs.length) count.dataset.more = String(j.total - j.runs.length);
    draw();
    drawSweeps(j.sweeps);
  }, 2000);
})();
