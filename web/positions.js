// One position across a run's iterations (/positions?run=ID&position=P; the 2023 study's
// Fig. 22): the model's policy over the legal moves and its value at each stored checkpoint,
// against the position's exact values. Without a position, the default list (the start's
// decision positions and the first test positions). Polls /api/positions while the run runs.
"use strict";

(() => {
  const run = T.key;
  const asked = new URLSearchParams(location.search).get("position");
  const main = document.getElementById("main");
  const title = T.el("h1", { id: "title" });
  const about = T.el("p", { id: "about", class: "note" });
  const input = T.el("input", { type: "text", id: "position", size: 40, value: asked || "", placeholder: "a position in the game's notation" });
  const pick = T.el("select", { id: "defaults" });
  const form = T.el("form", { class: "controls" }, T.el("label", {}, "position ", input), " ", T.el("button", { type: "submit", text: "show" }),
    " or ", pick);
  const list = T.el("div", { id: "positions" });
  main.append(title, about, form, list);
  const go = (p) => { location.href = `/positions?run=${encodeURIComponent(run)}` + (p ? `&position=${encodeURIComponent(p)}` : ""); };
  form.addEventListener("submit", (e) => { e.preventDefault(); go(input.value.trim()); });
  pick.addEventListener("change", () => go(pick.value));
  const charts = new Map();
  const pct = (x) => (x === null || x === undefined ? "–" : x.toFixed(3));

  function section(p, k) {
    let s = document.getElementById("pos-" + k);
    if (s) return s;
    s = T.el("section", { id: "pos-" + k, class: "position", "data-notation": p.notation },
      T.el("h2", {}, T.link(`/positions?run=${encodeURIComponent(run)}&position=${encodeURIComponent(p.notation)}`, p.notation)),
      T.el("div", { class: "game" },
        T.el("div", {}, T.el("pre", { class: "board", text: p.board }), T.el("div", { class: "exact" })),
        T.el("div", { class: "charts" })));
    list.append(s);
    return s;
  }

  function draw(j) {
    title.textContent = `run ${j.run_id} (${j.name}): positions across iterations`;
    T.crumb(T.link("/runs/" + j.run_id, "run " + j.run_id), " / positions");
    about.textContent = `${j.variant}, learner ${j.learner}; ${j.iterations.length} models evaluated (iterations ${j.iterations.length ? j.iterations[0] + "…" + j.iterations[j.iterations.length - 1] : "–"}) of ${j.stored} stored checkpoints, at most ${j.max_models} spread evenly; ${j.derived} iterations have derived checkpoints (rebuilt only by re-training: left out). Values on the [0, 1] scale for the side to move (1: a certain win)` +
      (j.solved ? "; exact values are the solver's." : `; ${j.variant} is not solved in this store: no exact values (tabula solve ${j.variant}).`);
    if (!pick.options.length) {
      pick.append(T.el("option", { value: "", text: "the default positions" }), ...j.defaults.map((d) => T.el("option", { value: d, text: d })));
      pick.value = asked && j.defaults.includes(asked) ? asked : "";
    }
    j.positions.forEach((p, k) => {
      const s = section(p, k);
      const t = T.el("table", {}, T.el("tr", {}, ...["move", "exact value", "best", "policy now"].map((h) => T.el("th", { text: h }))));
      for (const a of p.actions) {
        const now = a.policy.length ? a.policy[a.policy.length - 1] : null;
        t.append(T.el("tr", {}, T.el("td", { text: a.name }), T.el("td", { class: "num" + (a.best ? " best" : ""), text: pct(a.value) }),
          T.el("td", { text: a.best ? "✓" : "" }), T.el("td", { class: "num", text: pct(now) })));
      }
      const ex = s.querySelector(".exact");
      ex.replaceChildren(T.el("p", { text: `player ${p.player} to move; exact value ${pct(p.value)}` }), t);
      ex.dataset.value = p.value === null ? "" : String(p.value);
      const holder = s.querySelector(".charts");
      let pc = charts.get("p" + k);
      if (!pc) {
        pc = T.chart(holder, { title: "policy (prior) per move", y: "probability", range: { min: 0, max: 1 }, digits: 3 });
        pc.box.classList.add("policy-chart");
        charts.set("p" + k, pc);
      }
      pc.update(p.actions.map((a, i) => ({
        label: `${a.name}${a.value === null ? "" : " (v* " + a.value.toFixed(3) + (a.best ? ", best" : "") + ")"}`,
        index: i, xs: j.iterations, ys: a.policy,
      })));
      let vc = charts.get("v" + k);
      if (!vc) {
        vc = T.chart(holder, { title: "value against the exact value (dashed)", y: "value", range: { min: 0, max: 1 }, reference: p.value, digits: 3 });
        vc.box.classList.add("value-chart");
        charts.set("v" + k, vc);
      }
      vc.update([{ label: "model value", index: 0, xs: j.iterations, ys: p.model_value }]);
    });
    list.dataset.models = String(j.iterations.length);
    list.dataset.positions = String(j.positions.length);
    return j.status === "running";
  }

  const url = `/api/positions?run=${encodeURIComponent(run)}` + (asked ? `&position=${encodeURIComponent(asked)}` : "");
  let running = true;
  T.poll(async () => {
    if (!running) return;
    running = draw(await T.get(url));
  }, 5000).catch(T.showError);
})();
