"""A store read from Python: runs, metrics and SQL as data frames (lists of dicts without
pandas), a checked-out model whose outputs equal `checkout --export`'s ONNX outputs, and
players that pick actions from a seed."""

import random
import sys

import numpy as np
import pytest

import tabula
from conftest import run_cli

SPEC = """name = "net"
variant = "c4:7x6"
seed = 5
iterations = 2
games_per_iteration = 8
window = 2
[search]
simulations = 8
[eval]
wr_p = false
errors = false
[learner]
kind = "network"
[learner.network]
batch_size = 16
train_steps = 5
[learner.network.reference]
solver_games = 0
c4_sets = []
"""


@pytest.fixture(scope="module")
def store_path(tabula_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("store")
    (d / "net.toml").write_text(SPEC)
    db = str(d / "s.db")
    run_cli(tabula_bin, "--db", db, "run", str(d / "net.toml"), "--threads", "1")
    run_cli(tabula_bin, "--db", db, "checkout", "net@2", "--export", str(d / "net.onnx"))
    run_cli(tabula_bin, "--db", db, "branch", "net", "--at", "1", "--threads", "1")
    return d


def c4_states(n):
    game = tabula.load_game("c4:7x6")
    rng = random.Random(3)
    out = []
    while len(out) < n:
        state = game.new_initial_state()
        while not state.is_terminal() and len(out) < n:
            out.append(state.clone())
            state.apply_action(rng.choice(state.legal_actions()))
    return out


def test_runs_metrics_and_sql(store_path, monkeypatch):
    store = tabula.Store(str(store_path / "s.db"))
    runs = store.runs()
    assert list(runs["name"])[0] == "net" and list(runs["iterations_done"]) == [2, 2]
    metrics = store.metrics("net")
    assert list(metrics["iteration"]) == [0, 1, 2]
    # A branch at iteration 1: its own row is iteration 2; inherited, 0 and 1 are its parent's.
    net_id, b_id = store.sql("SELECT id FROM runs ORDER BY id")["id"]
    assert list(store.metrics(b_id)["iteration"]) == [2]
    whole = store.metrics(b_id, inherited=True)
    assert list(whole["iteration"]) == [0, 1, 2]
    assert list(whole["run_id"]) == [net_id, net_id, b_id]
    assert whole.iloc[:2].reset_index(drop=True).equals(metrics.iloc[:2].reset_index(drop=True))
    assert store.sql("SELECT count(*) AS n FROM runs_hex")["n"][0] == 2
    with pytest.raises(ValueError, match="no run `nope` in the store"):
        store.metrics("nope")
    with pytest.raises(ValueError):
        store.sql("DELETE FROM runs")
    monkeypatch.setitem(sys.modules, "pandas", None)
    assert store.runs()[0]["name"] == "net"
    assert store.sql("SELECT 1 AS one, NULL AS none, 'x' AS t") == [{"one": 1, "none": None, "t": "x"}]


def test_checked_out_model_equals_the_onnx_export(store_path):
    ort = pytest.importorskip("onnxruntime")
    store = tabula.Store(str(store_path / "s.db"))
    model = store.checkout("net@2")
    states = c4_states(50)
    policy, value = model.evaluate(states)
    assert policy.shape == (50, 7) and value.shape == (50,)
    planes = np.stack([s.observation_tensor() for s in states])
    sess = ort.InferenceSession(str(store_path / "net.onnx"), providers=["CPUExecutionProvider"])
    logits, onnx_value = sess.run(["policy_logits", "value"], {"planes": planes})
    for i, s in enumerate(states):
        legal = s.legal_actions()
        z = logits[i, legal].astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        assert np.abs(policy[i, legal] - p).max() < 1e-6
        assert policy[i].sum() == pytest.approx(1.0, abs=1e-12)
        assert set(np.flatnonzero(policy[i])) <= set(legal)
    assert np.abs(value - (onnx_value.reshape(-1).astype(np.float64) + 1) / 2).max() < 1e-6
    # One state at a time gives the same bits as the batch.
    p1, v1 = model.evaluate(states[7:8])
    assert (p1[0] == policy[7]).all() and v1[0] == value[7]


def test_checkout_errors_carry_the_cli_message(store_path, tabula_bin):
    store = tabula.Store(str(store_path / "s.db"))
    for bad in ["net@x", "net", "ghost@1"]:
        with pytest.raises(ValueError) as err:
            store.checkout(bad)
        _, stderr = run_cli(tabula_bin, "--db", str(store_path / "s.db"), "checkout", bad, ok=False)
        assert str(err.value) in stderr, (str(err.value), stderr)
    with pytest.raises(ValueError, match="not of c4:7x6"):
        store.checkout("net@1").evaluate([tabula.load_game("c4:4x4").new_initial_state()])


def test_players_pick_from_a_seed(store_path):
    game = tabula.load_game("c4:7x6")
    state = c4_states(5)[4]
    mcts = tabula.Player("mcts:sims=50", game)
    picks = [mcts.act(state, seed=s) for s in range(4)]
    assert picks == [mcts.act(state, seed=s) for s in range(4)]
    assert set(picks) <= set(state.legal_actions())
    store = tabula.Store(str(store_path / "s.db"))
    model = tabula.Player("model:net@2", game, store=store)
    assert model.act(state) in state.legal_actions()
    small = tabula.load_game("c4:4x4")
    small.solve()
    optimal = tabula.Player("optimal", small)
    s = small.new_initial_state()
    while not s.is_terminal():
        values = dict(s.action_values())
        a = optimal.act(s, seed=len(s.history()))
        assert values[a] == max(values.values())
        s.apply_action(a)
    with pytest.raises(ValueError, match="unknown player"):
        tabula.Player("alphabeta", game)
