//! Runs end to end through the library: determinism of the head across thread counts and
//! seeds, a pinned golden head, the iteration chain and table checkout against the stored
//! records, and learning on `runs/quick.toml`.

use std::sync::Arc;

use tabula::eval::metric;
use tabula::eval::{MetricsPlan, Truth};
use tabula::games::{AnyGame, Ewn};
use tabula::learners::tabular::metrics;
use tabula::learners::tabular::records::table_at;
use tabula::learners::tabular::{EvaluationRecord, SnapshotRecord, TabularAz};
use tabula::runs::{IterationRecord, Quiet, RunConfig, RunOutcome, RunRecord, start};
use tabula::store::{Store, Value};

use crate::counting_alloc::allocations;

/// Self-play's search with the table as evaluator does not allocate per simulation: a search
/// of 20,000 simulations on CDC PPPP allocates its result vectors and a few growths of the
/// arenas and of the evaluator's cache of initial entries (deriving a position's stream
/// allocates nothing).
#[test]
fn table_search_does_not_allocate_per_simulation() {
    use tabula::game::Game;
    use tabula::learners::tabular::{Table, TableEval};
    use tabula::search::{Search, SearchConfig};
    let g = match "cdc:PPPP".parse::<AnyGame>().unwrap() {
        AnyGame::Cdc(g) => g,
        _ => unreachable!(),
    };
    let mut rng = tabula::rng::stream(1, "alloc");
    let mut s = g.initial_state();
    let mut a = Vec::new();
    // A few plies in, so the root is a decision state.
    g.legal_actions(&s, &mut a);
    s = g.apply(&s, a[0]);
    let mut outcomes = Vec::new();
    g.chance_outcomes(&s, &mut outcomes);
    s = g.apply_chance(&s, outcomes[0].outcome);
    let table: Table<u64> = Table::new(g.num_actions(), 5, 0.01);
    let mut eval = TableEval::new(&table);
    let mut search = Search::new(SearchConfig {
        simulations: 20_000.into(),
        ..SearchConfig::default()
    })
    .unwrap();
    search.run(&g, &s, &[], 1, &mut eval, &mut rng).unwrap();
    search.run(&g, &s, &[], 1, &mut eval, &mut rng).unwrap();
    let before = allocations();
    search.run(&g, &s, &[], 1, &mut eval, &mut rng).unwrap();
    let n = allocations() - before;
    assert!(n <= 40, "{n} allocations in a search of 20,000 simulations");
}

/// A tiny spec: EWN 3x3x3, M = 20, N = 3, 16 simulations, 200 evaluation games, the search's
/// legacy conventions (the golden head predates them).
fn tiny(seed: u64) -> String {
    format!(
        r#"
name = "tiny"
variant = "ewn:3x3x3"
seed = {seed}
iterations = 3
games_per_iteration = 20
window = 2
learning_rate = [[1, 1.0], [3, 0.1]]
checkpoint_every = 2

[search]
simulations = 16
count_expansion_visit = false
expansion_is_simulation = false
tie_break = "lowest"

[eval]
games = 200
"#
    )
}

fn run_spec(store: &mut Store, text: &str, threads: usize) -> RunOutcome {
    let mut cfg = RunConfig::from_toml(text, "t").unwrap();
    // Run names are unique in a store: a second run of one spec gets `NAME-2`.
    cfg.name = store.unused_run_name(&cfg.name).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| start(store, &cfg, text, threads as u32, &mut Quiet))
        .unwrap()
}

fn ewn() -> Ewn {
    match "ewn:3x3x3".parse::<AnyGame>().unwrap() {
        AnyGame::Ewn(g) => g,
        _ => unreachable!(),
    }
}

#[test]
fn same_spec_and_seed_give_the_same_head_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let one = run_spec(&mut store, &tiny(7), 1);
    let two = run_spec(&mut store, &tiny(7), 2);
    let other = run_spec(&mut store, &tiny(8), 2);
    assert!(one.head.is_some());
    assert_eq!(one.head, two.head);
    assert_eq!(one.run_hash, two.run_hash);
    assert_ne!(one.run_id, two.run_id);
    assert_eq!(
        one.last.as_ref().unwrap().metrics,
        two.last.unwrap().metrics
    );
    assert_ne!(one.head, other.head);
    assert_ne!(one.run_hash, other.run_hash);
    // The encoding is a contract: a change to any record, stream or update must be deliberate.
    assert_eq!(
        one.head.unwrap().to_hex(),
        "81985524490c35b6917ccbeac2b17cfa9317cc8c6886af3d0dd6acf90ac3a71f",
        "golden head of the tiny run"
    );
}

#[test]
fn records_chain_and_checkout_match_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let mut store = Store::open(&path).unwrap();
    let out = run_spec(&mut store, &tiny(3), 2);
    let head = out.head.unwrap();
    let run: RunRecord = store.get(&out.run_hash).unwrap();
    assert_eq!((run.variant.as_str(), run.seed), ("ewn:3x3x3", 3));

    // Walk the chain from the head back to the first iteration.
    let mut cur = Some(head);
    let mut seen = Vec::new();
    let mut last: Option<IterationRecord> = None;
    while let Some(h) = cur {
        let it: IterationRecord = store.get(&h).unwrap();
        assert_eq!(it.run, out.run_hash);
        assert_eq!(it.settings, run.settings);
        assert_eq!(it.games.len(), 20);
        for (i, g) in it.games.iter().enumerate() {
            let rec: tabula::game_record::GameRecord = store.get(g).unwrap();
            assert_eq!(rec.stream, format!("self-play({},{i})", it.iteration));
            rec.states(&ewn()).unwrap();
        }
        seen.push(it.iteration);
        cur = it.previous;
        if last.is_none() {
            last = Some(it);
        }
    }
    assert_eq!(seen, [3, 2, 1]);

    // Iteration 2 is a full checkpoint, iteration 3 a delta on it.
    let last = last.unwrap();
    let snap: SnapshotRecord = store.get(&last.snapshot).unwrap();
    assert!(!snap.full);
    let base: SnapshotRecord = store.get(&snap.base.unwrap()).unwrap();
    assert!(base.full && base.iteration == 2);

    // A delta's chunks are derived (docs/store.md): the snapshot alone cannot be checked
    // out. So are those of the full checkpoint at 2: the table learner keeps every second
    // full checkpoint's bytes (2 / checkpoint_every = 1 is odd) and the last planned
    // iteration's; the run's table at iteration 3 is rebuilt from the untrained table and
    // the games.
    assert!(table_at::<u64>(&store, &last.snapshot, 3, 0.01).is_err());
    assert!(table_at::<u64>(&store, &snap.base.unwrap(), 3, 0.01).is_err());
    // The table gives back the stored metrics exactly.
    let g = ewn();
    let model: TabularAz<u64> = tabula::runs::model_at(&g, &store, "1", 3).unwrap();
    let table = model.table();
    assert_eq!(table.len() as u64, snap.entries);
    let sol = tabula::solver::load_or_solve(&g, &mut store).unwrap();
    let truth = Truth::new(&g, Arc::new(sol), &g.test_positions()).unwrap();
    let stored: EvaluationRecord = store.get(&last.evaluation).unwrap();
    let plan = MetricsPlan {
        wr_p_games: 200,
        errors: true,
    };
    let again = metrics::measure(&g, table, Some(&truth), plan, 3, stored.metrics.seen);
    assert_eq!(again, stored.metrics);
    drop(store);

    // SQL: games per iteration, metrics in both forms, flattened settings, lineage.
    let ro = Store::open_read_only(&path).unwrap();
    let q = |sql: &str| ro.query(sql).unwrap().rows;
    let rows = q("SELECT iteration, games FROM games_per_iteration ORDER BY iteration");
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r[1] == Value::Integer(20)));
    let rows = q("SELECT count(*) FROM metrics_wide WHERE run_id = 1");
    assert_eq!(rows[0][0], Value::Integer(4)); // iterations 0..=3
    let rows = q(
        "SELECT value FROM metrics_long WHERE run_id = 1 AND iteration = 3 \
                  AND metric = 'wr_p'",
    );
    assert_eq!(rows[0][0], Value::Real(stored.metrics.wr_p.unwrap().score));
    let rows = q("SELECT simulations, c_puct, games_per_iteration, eval_games FROM run_settings");
    assert_eq!(
        rows[0],
        [
            Value::Integer(16),
            Value::Real(1.0),
            Value::Integer(20),
            Value::Integer(200)
        ]
    );
    let rows = q("SELECT lower(hex(head)), status, iterations_done FROM runs");
    assert_eq!(rows[0][0], Value::Text(head.to_hex()));
    assert_eq!(rows[0][1], Value::Text("done".into()));
    let rows = q("SELECT ancestor, depth FROM run_lineage WHERE run_id = 1");
    assert_eq!(rows, [[Value::Integer(1), Value::Integer(0)]]);
}

/// `[eval] every = 3` (docs/metrics.md, "The evaluation interval"): a run of 7 iterations
/// measures iterations 0, 3, 6 and 7 (the last) only; the others name the one
/// `not-measured/v1` record and have no `evaluations` or `metrics` rows, so `metrics_wide`,
/// `metrics_long` (the plots' source) and the tidy export hold the measured iterations only.
/// The head is the same at 1 and 2 threads; training is untouched (the same snapshots and
/// last metrics as with every iteration measured); `verify` re-executes the run, whole and
/// from after an unmeasured iteration; the references resolve; `every = 1` written out keeps
/// the settings and head of the spec without it.
#[test]
fn eval_every_measures_every_kth_iteration_and_the_last() {
    let spec = |every: &str| {
        tiny(5)
            .replace("iterations = 3", "iterations = 7")
            .replace("[eval]\n", &format!("[eval]\n{every}"))
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let mut store = Store::open(&path).unwrap();
    let one = run_spec(&mut store, &spec("every = 3\n"), 1);
    let two = run_spec(&mut store, &spec("every = 3\n"), 2);
    assert_eq!(one.head, two.head, "1 and 2 threads");
    let all = run_spec(&mut store, &spec(""), 2);
    let ones = run_spec(&mut store, &spec("every = 1\n"), 1);
    assert_eq!((all.run_hash, all.head), (ones.run_hash, ones.head));
    assert_ne!(
        all.head, one.head,
        "the records say which iterations were measured"
    );
    assert_eq!(
        one.last.as_ref().unwrap().metrics,
        all.last.as_ref().unwrap().metrics,
        "the same model, measured at the last iteration"
    );

    let ro = Store::open_read_only(&path).unwrap();
    let q = |sql: &str| ro.query(sql).unwrap().rows;
    let ints = |sql: &str| -> Vec<i64> {
        q(sql)
            .iter()
            .map(|r| match r[0] {
                Value::Integer(i) => i,
                _ => panic!("{sql}: {r:?}"),
            })
            .collect()
    };
    let id = one.run_id;
    let measured = [0, 3, 6, 7];
    for view in ["evaluations", "metrics", "metrics_wide", "metrics_long"] {
        let sql = format!("SELECT DISTINCT iteration FROM {view} WHERE run_id = {id} ORDER BY 1");
        assert_eq!(ints(&sql), measured, "{view}");
    }
    let skipped = ints(&format!(
        "SELECT i.iteration FROM iterations i JOIN objects o ON o.hash = i.evaluation \
         WHERE i.run_id = {id} AND o.kind = 'not-measured/v1' ORDER BY 1"
    ));
    assert_eq!(skipped, [1, 2, 4, 5]);
    assert_eq!(
        ints("SELECT count(*) FROM objects WHERE kind = 'not-measured/v1'"),
        [1]
    );
    // Training does not depend on the interval: the same checkpoints every iteration.
    let snapshots = |run: i64| {
        q(&format!(
            "SELECT snapshot FROM iterations WHERE run_id = {run} ORDER BY iteration"
        ))
    };
    assert_eq!(snapshots(id), snapshots(all.run_id));
    assert_eq!(snapshots(id).len(), 7);
    let target = tabula::experiments::tidy::Target::Run(id.to_string());
    let sql = tabula::experiments::tidy::tidy_sql(&ro, &target).unwrap();
    let rows = q(&sql);
    let its: Vec<&Value> = rows.iter().map(|r| &r[1]).collect();
    assert_eq!(its, measured.map(Value::Integer).iter().collect::<Vec<_>>());

    let refs = tabula::runs::check_references(&store).unwrap();
    assert!(refs.dangling.is_empty(), "{:?}", refs.dangling);
    assert!(tabula::runs::check_run_rows(&store).unwrap().is_empty());
    for range in [None, Some((5, 7)), Some((2, 4))] {
        let v = tabula::runs::verify(&mut store, &id.to_string(), range, &mut Quiet).unwrap();
        assert_eq!(v.differs, None, "{range:?}");
        assert!(v.records > 0);
    }
}

#[test]
fn quick_run_learns() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/runs/quick.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let out = run_spec(&mut store, &text, 2);
    let before = out.baseline.clone().unwrap();
    let after = out.last.unwrap().metrics;
    let m = |v: &tabula::eval::MetricValues, name: &str| metric(v, name).unwrap();
    let (wr, ci) = (m(&after, "wr_p"), m(&after, "wr_p_ci95"));
    let (wr0, ci0) = (m(&before, "wr_p"), m(&before, "wr_p_ci95"));
    // Clearly above: the confidence intervals do not overlap.
    assert!(
        wr - ci > wr0 + ci0,
        "WR_p {wr} ± {ci} after, {wr0} ± {ci0} untrained"
    );
    assert!(m(&after, "err_p") < m(&before, "err_p"));
    assert!(m(&after, "mae_v") < m(&before, "mae_v"));
}

/// The binary: `run --json` at 1 and 2 threads, `ls --json`, `show`, a bad spec.
#[test]
fn cli_run_ls_show() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let spec = dir.path().join("tiny.toml");
    std::fs::write(&spec, tiny(7)).unwrap();
    let tabula = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tabula"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .unwrap()
    };
    let json = |out: std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let spec_path = spec.to_str().unwrap();
    let a = json(tabula(&["run", spec_path, "--json", "--threads", "1"]));
    // Run names are unique: the same spec again needs another name.
    let b = json(tabula(&[
        "run",
        spec_path,
        "--json",
        "--threads",
        "2",
        "--set",
        "name=tiny-2",
    ]));
    assert_eq!(a["head"], b["head"]);
    assert_eq!(
        a["head"].as_str().unwrap(),
        "81985524490c35b6917ccbeac2b17cfa9317cc8c6886af3d0dd6acf90ac3a71f"
    );
    assert_eq!((a["run"].as_i64(), b["run"].as_i64()), (Some(1), Some(2)));
    assert_eq!(a["iterations"], 3);

    let ls = json(tabula(&["ls", "--json"]));
    let runs = ls.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["status"], "done");
    assert_eq!(runs[1]["iterations_done"], 3);
    assert_eq!(runs[1]["head"], a["head"]);

    // Names are unique: `tiny` is run 1, the second run is `tiny-2`.
    let show = tabula(&["show", "tiny-2"]);
    assert!(show.status.success());
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("run 2") && text.contains("(4 rows)"),
        "{text}"
    );
    let show = json(tabula(&["show", "1", "--json"]));
    assert_eq!(show["metrics"].as_array().unwrap().len(), 4);

    std::fs::write(&spec, tiny(7).replace("[search]", "[search]\nc_puct = 0.0")).unwrap();
    let bad = tabula(&["run", spec_path]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("search.c_puct") && err.contains("> 0"),
        "{err}"
    );
    let missing = tabula(&["show", "nope"]);
    assert!(!missing.status.success());
}

// Every phase of an iteration gives the same bits at any thread count (docs/scaling.md):
// network runs whose iterations have every phase that runs in parallel (self-play, training
// in chunks, gating, the games against MCTS-Solver and the greedy player, the Connect Four
// test sets scored by the network and by its search) have the same head and metrics at 1, 2
// and 3 threads.

/// The same head and last metrics at 1, 2 and 3 threads.
fn same_at_any_thread_count(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let one = run_spec(&mut store, text, 1);
    assert!(one.head.is_some());
    for threads in [2, 3] {
        let other = run_spec(&mut store, text, threads);
        assert_eq!(one.head, other.head, "{threads} threads");
        assert_eq!(
            one.last.as_ref().unwrap().metrics,
            other.last.unwrap().metrics,
            "{threads} threads"
        );
    }
}

/// Connect Four with a small MLP: the test sets scored by the network's greedy move and by its
/// search, the games against MCTS-Solver, and gating.
#[test]
fn a_connect_four_network_run_is_the_same_at_any_thread_count() {
    let base = std::fs::read_to_string("runs/network-c4-tiny.toml").unwrap();
    let text = base.replace("iterations = 3", "iterations = 2").replace(
        "c4_positions = 100",
        "c4_positions = 40\nc4_search = true\n\n[learner.network.gate]\ngames = 4\nsimulations = 4",
    );
    assert!(text.contains("c4_search = true"), "{text}");
    same_at_any_thread_count(&text);
}

/// The Chinese Checkers pipeline in small: greedy self-play, then MCTS self-play with
/// training in passes, gating, and the games against the greedy player.
#[test]
fn a_checkers_pipeline_is_the_same_at_any_thread_count() {
    let text = std::fs::read_to_string("runs/checkers-tiny-pipeline.toml").unwrap();
    same_at_any_thread_count(&text);
}

/// The pipeline in small with Liu et al.'s input, which reads the game's last three states.
#[test]
fn a_checkers_pipeline_with_history_is_the_same_at_any_thread_count() {
    let text = std::fs::read_to_string("runs/checkers-tiny-liu.toml").unwrap();
    same_at_any_thread_count(&text);
    // Deep Q-Learning with it: transitions keep the past of both their states.
    let dqn = std::fs::read_to_string("runs/checkers-tiny-dqn.toml").unwrap();
    let dqn = dqn.replace("arch = \"mlp\"", "input = \"liu\"\narch = \"mlp\"");
    assert!(dqn.contains("input = \"liu\""), "{dqn}");
    same_at_any_thread_count(&dqn.replace("iterations = 10", "iterations = 3"));
}

/// With an input that reads the game's past, a model player sees the history self-play saw:
/// at every decision of a stored self-play game (a search without root noise or sampling,
/// ties to the lowest action), the `model:` player handed the record's past picks the move
/// the record holds; handed no past, it picks another one somewhere.
#[test]
fn a_model_player_sees_the_history_self_play_saw() {
    use tabula::game::{Game, Turn};
    use tabula::game_record::{GameRecord, Step};
    use tabula::games::Checkers;
    use tabula::play::Decision;
    use tabula::players::{Player, PlayerSpec};
    let text = std::fs::read_to_string("runs/checkers-tiny-liu.toml").unwrap();
    let cut = text.find("[[stage]]").unwrap();
    let text = text[..cut]
        .replace("window = 1", "window = 1\niterations = 2")
        .replace(
            "dirichlet_epsilon = 0.25",
            "dirichlet_epsilon = 0.0\ntemperature = 0.0\ntie_break = \"lowest\"",
        )
        .replace("greedy_games = 4", "greedy_games = 0");
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let out = run_spec(&mut store, &text, 2);
    let chain = tabula::runs::chain(&store, out.head).unwrap();
    let g: Checkers = match "checkers:5x5-3,max_plies=60".parse::<AnyGame>().unwrap() {
        AnyGame::Checkers(g) => g,
        _ => unreachable!(),
    };
    // Iteration 2's games were played by the model of iteration 1.
    let spec: PlayerSpec = "model:checkers-tiny-liu@1,sims=8".parse().unwrap();
    let player = Player::resolve(&spec, &g, Some(&mut store)).unwrap();
    let (mut agreed, mut blind_differs) = (0, 0);
    for h in &chain[1].games {
        let record: GameRecord = store.get(h).unwrap();
        let states = record.states(&g).unwrap();
        let mut past = Vec::new();
        let mut agent = player.agent();
        for (ply, (s, step)) in states.iter().zip(&record.steps).enumerate() {
            let (Turn::Player(_), Step::Move { action, .. }) = (g.turn(s), step) else {
                continue;
            };
            let mut rng = tabula::rng::stream(ply as u64, "model-player");
            let chosen = |d: Decision| match d {
                Decision::Play { action, .. } => action,
                other => panic!("{other:?}"),
            };
            let with = agent.decide(&g, s, &past, ply as u32, &mut rng).unwrap();
            assert_eq!(chosen(with), *action, "ply {ply}");
            agreed += 1;
            let blind = agent.decide(&g, s, &[], ply as u32, &mut rng).unwrap();
            blind_differs += usize::from(chosen(blind) != *action);
            past.push(*s);
        }
    }
    assert!(agreed > 100, "{agreed} decisions");
    assert!(blind_differs > 0, "the past changed no move in {agreed}");
}
