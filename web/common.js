// tabula serve: what every page shares (docs/dashboard.md). Plain browser JavaScript, no
// build step; charts are uPlot's (web/vendor/uplot).
"use strict";

const T = (() => {
  const body = document.body;
  const palette = JSON.parse(body.dataset.palette || '{"colours":["#0072B2"],"dashes":[""]}');
  const key = body.dataset.key || "";

  // An element: el("td", {class: "num", text: "3"}, child, ...).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  // GET a JSON API; an error reply's message becomes the thrown Error's.
  async function get(url) {
    const r = await fetch(url, { cache: "no-store" });
    const j = await r.json().catch(() => null);
    if (!r.ok) throw new Error((j && j.error && j.error.message) || `${url}: HTTP ${r.status}`);
    return j;
  }

  // Calls `f` now and then every `ms` milliseconds (waiting for each call to end); the header
  // says when the last call failed.
  function poll(f, ms) {
    const live = document.getElementById("live");
    async function tick() {
      try {
        await f();
        live.classList.remove("stale");
        live.textContent = "live";
        live.dataset.polls = String(Number(live.dataset.polls || 0) + 1);
      } catch (e) {
        live.classList.add("stale");
        live.textContent = "stale: " + e.message;
      }
      setTimeout(tick, ms);
    }
    return tick();
  }

  function showError(e) {
    const main = document.getElementById("main");
    main.prepend(el("p", { class: "error", text: String(e.message || e) }));
  }

  function fmt(v, digits) {
    if (v === null || v === undefined) return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v) && digits === undefined) return String(v);
    return v.toFixed(digits === undefined ? 3 : digits);
  }

  // A mean over seeds with its 95% interval, as the report and `tabula plot` write it: one
  // seed has no interval, so none is shown (not "[0.087, 0.087]").
  function stat(s, digits) {
    if (!s) return "–";
    if (!(s.n > 1)) return `${fmt(s.mean, digits)} (n=${s.n}, no interval)`;
    return `${fmt(s.mean, digits)} [${fmt(s.lo, digits)}, ${fmt(s.hi, digits)}] n=${s.n}`;
  }

  // The decimals that tell ticks `step` apart: 3 for 0.001, 4 for 0.0005 and 0.0025.
  function decimalsOf(step) {
    if (!(step > 0) || !isFinite(step)) return 0;
    let d = Math.max(0, Math.ceil(-Math.log10(step) - 1e-9));
    while (d < 12 && Math.abs(step * 10 ** d - Math.round(step * 10 ** d)) > 1e-6) d++;
    return d;
  }

  // An axis's tick labels, ticks `step` apart, with the decimals the step needs. (uPlot's
  // default keeps 3 significant decimals whatever the range: ticks 0.0055, 0.006 and 0.0065
  // all read "0.006".)
  function tickLabels(ticks, step) {
    const d = decimalsOf(step);
    return ticks.map((t) => (t === null || t === undefined ? "" : (Math.abs(t) < step / 1e6 ? 0 : t).toFixed(d)));
  }

  function hms(s) {
    if (s === null || s === undefined || !isFinite(s)) return "–";
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), x = s % 60;
    return (h ? h + ":" + String(m).padStart(2, "0") : String(m)) + ":" + String(x).padStart(2, "0");
  }

  function colour(k) { return palette.colours[k % palette.colours.length]; }
  function dash(k) {
    const d = palette.dashes[k % palette.dashes.length];
    return d ? d.split(" ").map(Number) : undefined;
  }
  function fade(hex, alpha) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha})`;
  }

  // Lines on one x axis: [{label, xs, ys, lo, hi, dash}], aligned into uPlot's columns (x
  // values the union of every line's, missing points null).
  function align(lines) {
    const xs = Array.from(new Set(lines.flatMap((l) => l.xs))).sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    const cols = [xs];
    const spec = [];
    lines.forEach((l, k) => {
      const col = (vals) => {
        const c = new Array(xs.length).fill(null);
        l.xs.forEach((x, i) => { c[at.get(x)] = vals[i] === undefined ? null : vals[i]; });
        return c;
      };
      cols.push(col(l.ys));
      spec.push({ line: k, kind: "mean" });
      if (l.lo && l.hi) {
        cols.push(col(l.lo));
        cols.push(col(l.hi));
        spec.push({ line: k, kind: "lo" }, { line: k, kind: "hi" });
      }
    });
    return { cols, spec };
  }

  // A line chart that can be fed new data: hover values (uPlot's cursor and legend), a line
  // toggled by clicking its legend entry, zoom by dragging (double-click: back), 95% bands,
  // a shared y-range (`range`: {min, max}, an object the caller may update), a dashed
  // reference line. `opts`: {title, x, y, width, height, reference, range, xValues (labels
  // for categorical x), points}.
  function chart(parent, opts) {
    const box = el("div", { class: "chart" }, el("h3", { text: opts.title }));
    parent.append(box);
    let u = null, specKey = "", zoomed = false;
    function build(lines) {
      const { cols, spec } = align(lines);
      const series = [{ label: opts.x || "iteration", value: (u, v) => (v === null ? "–" : opts.xValues ? opts.xValues[v] : v) }];
      const bands = [];
      spec.forEach((s, i) => {
        const l = lines[s.line];
        const c = l.colour || colour(l.index === undefined ? s.line : l.index);
        if (s.kind === "mean") {
          series.push({
            label: l.label, stroke: c, width: 1.6, dash: l.dash || dash(l.index === undefined ? s.line : l.index),
            points: { show: opts.points !== undefined ? opts.points : lines.length <= 6, size: 5 },
            value: (u, v) => fmt(v, opts.digits),
            spanGaps: true,
          });
        } else {
          series.push({ label: l.label + (s.kind === "lo" ? " (95% low)" : " (95% high)"), stroke: fade(c, 0.0), width: 0, points: { show: false }, value: (u, v) => fmt(v, opts.digits), spanGaps: true });
          if (s.kind === "hi") bands.push({ series: [i + 1, i], fill: fade(c, 0.15) });
        }
      });
      // Without a shared range, the reference line (WR_p 0.5) is kept inside the auto range.
      const ref = opts.reference;
      const withRef = (lo, hi) => (ref === null || ref === undefined || lo === null || hi === null ? pad(lo, hi) : pad(Math.min(lo, ref), Math.max(hi, ref)));
      const width = opts.width || 460, height = opts.height || 260;
      const range = opts.range;
      const o = {
        width, height, series, bands,
        scales: {
          x: { time: false },
          y: { range: (u, lo, hi) => (range && range.min !== undefined ? [range.min, range.max] : withRef(lo, hi)) },
        },
        axes: [
          { label: opts.x || "iteration", values: opts.xValues ? (u, ticks) => ticks.map((t) => (Number.isInteger(t) && opts.xValues[t] !== undefined ? opts.xValues[t] : "")) : (u, ticks, axis, space, step) => tickLabels(ticks, step) },
          { label: opts.y || "", size: 60, values: (u, ticks, axis, space, step) => {
            const labels = tickLabels(ticks, step);
            box.dataset.yTicks = labels.join("|");
            return labels;
          } },
        ],
        cursor: { drag: { x: true, y: true, uni: 20 } },
        legend: { live: true },
        hooks: {
          setSelect: [() => { zoomed = true; }],
          draw: [(u) => {
            if (opts.reference === undefined || opts.reference === null) return;
            const y = u.valToPos(opts.reference, "y", true);
            const ctx = u.ctx;
            ctx.save();
            ctx.strokeStyle = "#888";
            ctx.setLineDash([4, 4]);
            ctx.lineWidth = 1;
            ctx.beginPath();
            ctx.moveTo(u.bbox.left, y);
            ctx.lineTo(u.bbox.left + u.bbox.width, y);
            ctx.stroke();
            ctx.restore();
          }],
        },
      };
      if (u) u.destroy();
      u = new uPlot(o, cols, box);
      // The band edges are data, not lines: their legend rows are hidden.
      const rows = box.querySelectorAll(".u-legend .u-series");
      spec.forEach((s, i) => { if (s.kind !== "mean" && rows[i + 1]) rows[i + 1].style.display = "none"; });
      u.over.addEventListener("dblclick", () => { zoomed = false; });
      return cols;
    }
    function update(lines) {
      const k = JSON.stringify(lines.map((l) => [l.label, !!l.lo]));
      const { cols } = align(lines);
      if (!u || k !== specKey) { specKey = k; build(lines); }
      else u.setData(cols, !zoomed);
      if (zoomed) u.redraw();
      box.dataset.points = String(lines.length ? lines[0].ys.filter((v) => v !== null && v !== undefined).length : 0);
      box.dataset.lines = String(lines.length);
      box.dataset.lastX = String(cols[0].length ? cols[0][cols[0].length - 1] : "");
    }
    return { box, update };
  }

  // A y-range around [lo, hi] (a constant line, or none, gets a span too: a zero span has no
  // ticks).
  function pad(lo, hi) {
    if (lo === null || hi === null || !isFinite(lo) || !isFinite(hi)) return [0, 1];
    if (lo === hi) { const d = Math.abs(lo) * 0.1 || 1; return [lo - d, hi + d]; }
    const p = (hi - lo) * 0.05;
    return [lo - p, hi + p];
  }

  // The y-range of a metric over several charts' lines (bands included), padded a little,
  // with the reference line inside it.
  function rangeOf(lineSets, reference) {
    let min = Infinity, max = -Infinity;
    for (const lines of lineSets) for (const l of lines) for (const arr of [l.ys, l.lo || [], l.hi || []])
      for (const v of arr) if (v !== null && v !== undefined && isFinite(v)) { min = Math.min(min, v); max = Math.max(max, v); }
    if (reference !== null && reference !== undefined) { min = Math.min(min, reference); max = Math.max(max, reference); }
    if (!isFinite(min)) return {};
    if (min === max) { min -= 0.5; max += 0.5; }
    const pad = (max - min) * 0.05;
    return { min: min - pad, max: max + pad };
  }

  // The family of a metric: metrics on one scale share a y-range on a page (ERR_p and its
  // variants over other position sets, MAE_v and its, the coverage counts, WR_p's game
  // counts); any other metric is its own family.
  function family(name) {
    if (/^updated_\d+$/.test(name) || name === "seen") return "coverage";
    if (/^wr_p_(games|wins|draws|losses)$/.test(name)) return "wr_p_counts";
    const m = name.match(/^(err_p|mae_v)(_updated(_w)?)?$/);
    return m ? m[1] : name;
  }

  // Shared y-ranges by family: `set(name, lines, reference)` gathers a chart's lines, then
  // `fix()` sets every family's range (objects the charts hold) before they draw.
  function sharedRanges() {
    const ranges = new Map(), sets = new Map(), refs = new Map();
    return {
      of(name) {
        const f = family(name);
        if (!ranges.has(f)) ranges.set(f, {});
        return ranges.get(f);
      },
      add(name, lines, reference) {
        const f = family(name);
        if (!sets.has(f)) sets.set(f, []);
        sets.get(f).push(lines);
        if (reference !== null && reference !== undefined) refs.set(f, reference);
      },
      fix() {
        for (const [f, s] of sets) Object.assign(this.of(f), rangeOf(s, refs.get(f)));
        sets.clear();
      },
    };
  }

  // One chart per metric in `container`, made on first use, charts of one metric family
  // sharing a y-range (WR_p with its reference line at 0.5): add(name, lines) per metric, then
  // draw() once the ranges have seen every metric's lines.
  function metricCharts(container) {
    const byMetric = new Map(), ranges = sharedRanges();
    let todo = [];
    return {
      add(name, lines) {
        const reference = name === "wr_p" ? 0.5 : null;
        ranges.add(name, lines, reference);
        let c = byMetric.get(name);
        if (!c) {
          c = chart(container, { title: name, y: name, reference, digits: 4, range: ranges.of(name) });
          c.box.dataset.metric = name;
          byMetric.set(name, c);
        }
        todo.push([c, lines]);
      },
      draw() {
        ranges.fix();
        for (const [c, lines] of todo) c.update(lines);
        todo = [];
      },
    };
  }

  // A sortable table: columns [{key, label, num, render(row) -> node|string}], rows objects.
  function sortable(cols, state) {
    const table = el("table");
    const head = el("tr");
    cols.forEach((c) => {
      const th = el("th", { class: c.num ? "num" : null, text: c.label, title: c.title || "click to sort" });
      th.addEventListener("click", () => {
        if (c.key === undefined) return;
        state.desc = state.sort === c.key ? !state.desc : false;
        state.sort = c.key;
        state.redraw();
      });
      head.append(th);
    });
    table.append(el("thead", {}, head));
    const tbody = el("tbody");
    table.append(tbody);
    function fill(rows) {
      if (state.sort !== undefined) {
        const k = state.sort, d = state.desc ? -1 : 1;
        rows = rows.slice().sort((a, b) => {
          const x = a[k], y = b[k];
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * d;
        });
      }
      tbody.replaceChildren(...rows.map((r) => {
        const tr = el("tr", state.rowAttrs ? state.rowAttrs(r) : {});
        cols.forEach((c) => {
          const v = c.render ? c.render(r) : fmt(r[c.key], c.digits);
          tr.append(el("td", { class: (c.num ? "num " : "") + (c.cls ? c.cls(r) : "") }, v));
        });
        return tr;
      }));
    }
    return { table, fill };
  }

  function statusCell(r) {
    const s = el("span", { class: "status-" + r.status, text: r.status });
    if (r.status !== "running") return s;
    const pct = r.iterations_planned ? (100 * r.iterations_done) / r.iterations_planned : 0;
    return el("span", {}, el("span", { class: "bar", title: pct.toFixed(0) + "%" }, el("span", { style: `width:${pct}%` })), s,
      r.eta_seconds !== null && r.eta_seconds !== undefined ? " ETA " + hms(r.eta_seconds) : "");
  }

  function link(href, text) { return el("a", { href, text }); }

  function crumb(...nodes) { document.getElementById("crumb").replaceChildren(...nodes); }

  return { el, get, poll, fmt, stat, tickLabels, hms, chart, rangeOf, family, sharedRanges, metricCharts, sortable, statusCell, link, crumb, colour, dash, key, showError };
})();
