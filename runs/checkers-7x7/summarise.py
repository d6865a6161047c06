#!/usr/bin/env python3
"""What docs/checkers.md reports of a 7x7 run: iterations done and their seconds (self-play,
training, evaluation), and the score against the deterministic greedy player at every
measured iteration with its 95% half-width, wins, draws and losses.

    python3 runs/checkers-7x7/summarise.py STORE.db [RUN_NAME]
"""
import sqlite3
import sys


def main():
    db = sys.argv[1]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    name = sys.argv[2] if len(sys.argv) > 2 else None
    q = "SELECT id, name FROM runs" + (" WHERE name = ?" if name else "") + " ORDER BY id"
    for rid, rname in con.execute(q, (name,) if name else ()).fetchall():
        rows = con.execute(
            "SELECT count(*), sum(games), sum(self_play_seconds), sum(training_seconds), "
            "sum(evaluation_seconds), max(iteration) FROM iterations WHERE run_id = ?",
            (rid,)).fetchone()
        n, games, sp, tr, ev, last = rows
        total = (sp or 0) + (tr or 0) + (ev or 0)
        print(f"{rname}: {n} iterations (last {last}), {games} games; self-play {sp:.0f} s, "
              f"training {tr:.0f} s, evaluation {ev:.0f} s, {total / 3600:.2f} h in all")
        m = {}
        for it, key, v in con.execute(
                "SELECT iteration, name, value FROM metrics WHERE run_id = ? AND name IN "
                "('wr_greedy', 'wr_greedy_ci95', 'greedy_win_share', 'greedy_draw_share', "
                "'loss_policy', 'loss_value', 'gate_score', 'gate_promoted')", (rid,)):
            m.setdefault(it, {})[key] = v
        print("| iteration | W / D / L (share) | score | 95% half-width | policy loss | value loss |")
        print("|---|---|---|---|---|---|")
        for it in sorted(m):
            r = m[it]
            w, d = r.get("greedy_win_share", 0), r.get("greedy_draw_share", 0)
            print(f"| {it} | {w:.2f} / {d:.2f} / {1 - w - d:.2f} | {r['wr_greedy']:.3f} | "
                  f"{r['wr_greedy_ci95']:.3f} | {r.get('loss_policy', 0):.3f} | "
                  f"{r.get('loss_value', 0):.3f} |")
        gates = con.execute(
            "SELECT count(*), sum(CASE WHEN name = 'gate_promoted' THEN value END), "
            "avg(CASE WHEN name = 'gate_score' THEN value END) FROM metrics "
            "WHERE run_id = ? AND name IN ('gate_promoted', 'gate_score')", (rid,)).fetchone()
        print(f"gating: {gates[1]} promotions, mean gate score {gates[2]}")


if __name__ == "__main__":
    main()
