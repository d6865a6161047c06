// The runs page (/): every run with its status, progress, ETA, headline metrics, tags and
// note, sorted and filtered in place, shown by tag or grouped by tag; sweeps with "k of N";
// runs picked for /compare. The filter, the tag and the grouping are the page's URL
// (`/?q=TEXT&tag=T&group=tag`), so a filtered view can be linked. Polls /api/runs.
"use strict";

(() => {
  const main = document.getElementById("main");
  const asked = new URLSearchParams(location.search);
  const state = { sort: "id", desc: false, picked: new Set(), filter: asked.get("q") || "", tag: asked.get("tag") || "", group: asked.get("group") === "tag", rows: [] };
  const filter = T.el("input", { type: "text", id: "filter", placeholder: "filter: text, column=value or setting=value (status=running simulations=12)", size: 60 });
  const compare = T.el("button", { id: "compare", disabled: true, text: "compare picked runs" });
  filter.value = state.filter;
  const tagPick = T.el("select", { id: "tag", title: "show only the runs with this tag" }, T.el("option", { value: "", text: "every tag" }));
  const groupBox = T.el("input", { type: "checkbox", id: "group" });
  groupBox.checked = state.group;
  const count = T.el("span", { class: "note", id: "count" });
  const sweeps = T.el("div", { id: "sweeps" });
  const tables = T.el("div", { id: "tables" });
  main.append(T.el("h1", { text: "Runs" }), T.el("div", { class: "controls" }, filter, tagPick,
    T.el("label", {}, groupBox, " group by tag"), compare, count));

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
    { key: "tags", label: "tags", cls: () => "tags", render: (r) => T.el("span", {}, ...(r.tags || []).map((t) => T.el("a", { class: "tag", href: "/?tag=" + encodeURIComponent(t), text: t }))) },
    { key: "note", label: "note", cls: () => "note-cell", render: (r) => (r.note ? T.el("span", { title: r.note, text: r.note }) : "–") },
    { key: "head", label: "head", render: (r) => (r.head ? r.head.slice(0, 12) : "–") },
  ];
  state.rowAttrs = (r) => ({ "data-run": r.id, "data-iterations": r.iterations_done, "data-status": r.status });
  state.redraw = draw;
  main.append(tables, T.el("h2", { text: "Sweeps" }), sweeps);
  // One sortable table per group (one group when not grouped), kept by its name.
  const byGroup = new Map();
  function tableFor(name) {
    if (!byGroup.has(name)) byGroup.set(name, T.sortable(cols, state));
    return byGroup.get(name);
  }

  function pickedChanged() {
    compare.disabled = state.picked.size < 1;
    compare.textContent = `compare picked runs (${state.picked.size})`;
  }
  compare.addEventListener("click", () => {
    location.href = "/compare?runs=" + Array.from(state.picked).join(",");
  });
  // The view is the URL: a filtered or grouped list can be linked (and reloaded).
  function remember() {
    const q = new URLSearchParams();
    if (state.filter.trim()) q.set("q", state.filter.trim());
    if (state.tag) q.set("tag", state.tag);
    if (state.group) q.set("group", "tag");
    const search = q.toString();
    history.replaceState(null, "", search ? "/?" + search : "/");
  }
  filter.addEventListener("input", () => { state.filter = filter.value; remember(); draw(); });
  tagPick.addEventListener("change", () => { state.tag = tagPick.value; remember(); draw(); });
  groupBox.addEventListener("change", () => { state.group = groupBox.checked; remember(); draw(); });

  function drawTags(list) {
    const want = [["", "every tag"], ...list.map((t) => [t.tag, `tag ${t.tag} (${t.runs})`])];
    if (state.tag && !list.some((t) => t.tag === state.tag)) want.push([state.tag, `tag ${state.tag} (0)`]);
    const have = [...tagPick.options].map((o) => o.value + "|" + o.text).join("\n");
    if (have !== want.map((w) => w.join("|")).join("\n"))
      tagPick.replaceChildren(...want.map(([v, text]) => T.el("option", { value: v, text })));
    tagPick.value = state.tag;
  }

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
    const rows = state.rows.filter((r) => matches(r) && (!state.tag || (r.tags || []).includes(state.tag)));
    // Grouped: a table per tag (a run with two tags in both), then the untagged runs.
    const groups = new Map();
    if (state.group) {
      for (const t of [...new Set(rows.flatMap((r) => r.tags || []))].sort()) groups.set("tag " + t, rows.filter((r) => (r.tags || []).includes(t)));
      const untagged = rows.filter((r) => !(r.tags || []).length);
      if (untagged.length) groups.set("no tag", untagged);
    } else {
      groups.set("", rows);
    }
    const parts = [];
    for (const [name, list] of groups) {
      const t = tableFor(name);
      t.fill(list);
      t.table.dataset.group = name;
      if (name) parts.push(T.el("h3", { class: "group", text: `${name} (${list.length})` }));
      parts.push(t.table);
    }
    tables.replaceChildren(...parts);
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
    drawTags(j.tags || []);
    draw();
    drawSweeps(j.sweeps);
  }, 2000);
})();
