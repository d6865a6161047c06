// The game viewer (/games/HASH): the board of each position as the game draws it, every chance
// outcome and move in a list, stepped with the arrow keys (Home/End: first/last); for a
// solved variant each position's exact value, each legal move's exact value, the best
// move(s) and the value the played move lost; the search's visit counts per move.
"use strict";

(() => {
  const main = document.getElementById("main");
  let g = null;
  let at = 0; // the position shown: 0 = the start, k = after step k

  const head = T.el("div", { id: "head" });
  const board = T.el("pre", { class: "board", id: "board" });
  // The chance outcomes that led to the position shown (a die roll, a revealed piece).
  const chance = T.el("p", { class: "chance", id: "chance" });
  const where = T.el("p", { id: "where" });
  const exact = T.el("p", { id: "exact" });
  const moves = T.el("div", { id: "moves" });
  const steps = T.el("ol", { class: "steps", id: "steps", start: 1 });
  const nav = T.el("div", { class: "controls" },
    T.el("button", { text: "«", title: "first (Home)", on: { click: () => go(0) } }),
    T.el("button", { text: "◀", title: "back (←)", on: { click: () => go(at - 1) } }),
    T.el("button", { text: "▶", title: "forward (→)", on: { click: () => go(at + 1) } }),
    T.el("button", { text: "»", title: "last (End)", on: { click: () => go(g ? g.steps.length : 0) } }),
    T.el("span", { class: "note", text: "arrow keys step; click a step to jump" }));
  main.append(head, T.el("div", { class: "game" },
    T.el("div", {}, nav, chance, board, where, exact, moves),
    T.el("div", {}, T.el("h2", { text: "Steps" }), steps)));

  const v = (x) => (x === null || x === undefined ? "–" : (x >= 0 ? "+" : "") + x.toFixed(4));

  function go(k) {
    if (!g) return;
    at = Math.max(0, Math.min(g.steps.length, k));
    const p = g.positions[at];
    board.textContent = p.board;
    const outcomes = [];
    for (let j = at - 1; j >= 0 && g.steps[j].kind === "chance"; j--) outcomes.unshift(g.steps[j].text);
    chance.textContent = outcomes.length ? "chance: " + outcomes.join(", ") : "";
    chance.dataset.outcomes = String(outcomes.length);
    main.dataset.step = String(at);
    where.textContent = at === 0 ? `start: ${p.turn}` : `after step ${at} (${g.steps[at - 1].kind}: ${g.steps[at - 1].text}); next: ${p.turn}`;
    exact.textContent = g.solved
      ? `exact value for player 0: ${v(p.value_p0)} (the solver's, in [-1, 1])`
      : `${g.variant} is not solved in this store: no exact values (tabula solve ${g.variant})`;
    exact.dataset.value = p.value_p0 === null ? "" : String(p.value_p0);
    steps.querySelectorAll("li").forEach((li, i) => li.classList.toggle("current", i === at - 1));
    const cur = steps.children[at - 1];
    if (cur) cur.scrollIntoView({ block: "nearest" });
    drawMoves();
  }

  // The move made from the position shown (the next move step), with every legal move.
  function drawMoves() {
    let k = at;
    while (k < g.steps.length && g.steps[k].kind !== "move") k++;
    if (k >= g.steps.length) { moves.replaceChildren(T.el("p", { class: "note", text: "no move follows: " + g.end })); return; }
    const s = g.steps[k];
    const t = T.el("table", {}, T.el("tr", {}, ...["move", "visits", "exact value", "best"].map((h) => T.el("th", { text: h }))));
    for (const m of s.moves) {
      t.append(T.el("tr", { class: m.played ? "played" : null },
        T.el("td", { text: m.name + (m.played ? "  ← played" : "") }),
        T.el("td", { class: "num", text: m.visits === null || m.visits === undefined ? "–" : String(m.visits) }),
        T.el("td", { class: "num" + (m.best ? " best" : ""), text: v(m.value) }),
        T.el("td", { text: m.best ? "✓" : "" })));
    }
    const lost = s.lost === null ? "" : s.lost > 1e-9 ? ` — lost ${s.lost.toFixed(4)} against the best` : " — a best move";
    moves.replaceChildren(T.el("h3", { text: `ply ${s.ply}, player ${s.player} to move${k > at ? " (after the chance steps)" : ""}: played ${s.text}${lost}` }), t);
  }

  document.addEventListener("keydown", (e) => {
    if (e.key === "ArrowRight" || e.key === "ArrowDown") { go(at + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp") { go(at - 1); e.preventDefault(); }
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(g.steps.length);
  });

  T.get("/api/games/" + T.key).then((j) => {
    g = j;
    T.crumb(T.link("/games/" + j.hash, "game " + j.hash.slice(0, 12)));
    const owner = j.owner ? [" — self-play game ", String(j.owner.game), " of iteration ", String(j.owner.iteration), " of ", T.link("/runs/" + j.owner.run, "run " + j.owner.run)] : [];
    head.replaceChildren(T.el("h1", { text: `${j.variant} game ${j.hash.slice(0, 12)}` }),
      T.el("p", {}, `${j.plies} plies, ${j.end}; players ${j.players.join(" vs ")}; seed ${j.seed}, stream ${j.stream}`, ...owner));
    j.steps.forEach((s, i) => {
      const text = s.kind === "chance" ? `chance: ${s.text}` : `ply ${s.ply} (player ${s.player}): ${s.text}` + (s.lost > 1e-9 ? ` (lost ${s.lost.toFixed(3)})` : "");
      steps.append(T.el("li", { class: s.lost > 1e-9 ? "lost" : null, text, on: { click: () => go(i + 1) } }));
    });
    // Open at the position of the first move (after the chance steps that set the game up,
    // EWN's first roll): the board shown is the one the move table beside it is about.
    const first = j.steps.findIndex((s) => s.kind === "move");
    go(first < 0 ? 0 : first);
    document.getElementById("live").textContent = "a stored game (fixed)";
  }).catch(T.showError);
})();
