//! Self-play budgets per iteration (docs/budgets.md) through the library: `moves` and
//! `simulations` keep the shortest prefix of games reaching the budget, the same at any
//! thread count and on verify; `seconds` (T_self) records the games each iteration kept, and
//! verify re-executes exactly those. Kill -9 and resume are in tests/lifecycle.rs.

use tabula::game_record::{GameRecord, Step};
use tabula::runs::{IterationRecord, Quiet, RunConfig, RunOutcome, chain, start, verify};
use tabula::search::SearchConfig;
use tabula::store::Store;

/// EWN 3x3x3, 3 iterations of a `[budget]` given as `budget` (TOML lines), 12 simulations.
fn spec(name: &str, budget: &str, extra: &str) -> String {
    format!(
        r#"
name = "{name}"
variant = "ewn:3x3x3"
seed = 11
iterations = 3
window = 2
checkpoint_every = 2
{extra}
[search]
simulations = 12

[eval]
games = 200

[budget]
{budget}
"#
    )
}

fn run_spec(store: &mut Store, text: &str, threads: usize) -> (RunOutcome, RunConfig) {
    let mut cfg = RunConfig::from_toml(text, "t").unwrap();
    cfg.name = store.unused_run_name(&cfg.name).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let out = pool
        .install(|| start(store, &cfg, text, threads as u32, &mut Quiet))
        .unwrap();
    (out, cfg)
}

fn records(store: &Store, out: &RunOutcome) -> Vec<IterationRecord> {
    chain(store, out.head).unwrap()
}

fn games(store: &Store, r: &IterationRecord) -> Vec<GameRecord> {
    r.games.iter().map(|h| store.get(h).unwrap()).collect()
}

/// Simulations of a game's searches as the budget counts them: `simulations` per full
/// search, the playout cap's `n_fast` per fast one.
fn simulations(r: &GameRecord, s: &SearchConfig) -> u64 {
    r.steps
        .iter()
        .filter_map(|st| match st {
            Step::Move {
                search: Some(x), ..
            } => Some(u64::from(match x.full {
                true => s.simulations.first(),
                false => s.playout_cap.unwrap().n_fast,
            })),
            _ => None,
        })
        .sum()
}

/// Every iteration kept the shortest prefix whose `cost` reaches `budget`: all its games
/// but the last cost less than the budget, and all of them reach it.
fn assert_shortest_prefix(costs: &[u64], budget: u64, what: &str) {
    let total: u64 = costs.iter().sum();
    let but_last: u64 = costs[..costs.len() - 1].iter().sum();
    assert!(
        but_last < budget && total >= budget,
        "{what}: {} games, {but_last} before the last, {total} in all, budget {budget}",
        costs.len()
    );
}

/// The iterations table's `games` column, per iteration.
fn games_column(db: &std::path::Path, run_id: i64) -> Vec<u32> {
    let q = Store::open_read_only(db)
        .unwrap()
        .query(&format!(
            "SELECT games FROM iterations WHERE run_id = {run_id} ORDER BY iteration"
        ))
        .unwrap();
    q.rows
        .iter()
        .map(|r| r[0].to_json().as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn a_moves_budget_keeps_the_shortest_prefix_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let text = spec("moves", "moves = 900", "");
    let (one, _) = run_spec(&mut store, &text, 1);
    let (two, _) = run_spec(&mut store, &text, 2);
    assert!(one.head.is_some());
    assert_eq!(one.head, two.head, "the same head at 1 and 2 threads");
    let chain = records(&store, &one);
    assert_eq!(chain.len(), 3);
    let mut counts = Vec::new();
    for r in &chain {
        let costs: Vec<u64> = games(&store, r).iter().map(|g| g.plies() as u64).collect();
        assert_shortest_prefix(&costs, 900, &format!("iteration {}", r.iteration));
        counts.push(r.games.len() as u32);
        // Nothing past the prefix was stored.
        let stored = store.run_games(one.run_id, r.iteration).unwrap();
        assert_eq!(stored.len(), r.games.len());
    }
    // The count is what the iterations table and the summary report.
    assert_eq!(games_column(&dir.path().join("t.db"), one.run_id), counts);
    assert_eq!(one.last.as_ref().unwrap().games, counts[2]);
    let v = verify(&mut store, &one.run_id.to_string(), None, &mut Quiet).unwrap();
    assert_eq!(v.differs, None);
    assert!(v.records > 0);
}

#[test]
fn a_simulations_budget_counts_fast_searches_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    // Playout cap randomisation: a quarter of the searches full (12), the rest fast (4).
    let cap = "[search.playout_cap]\np_full = 0.25\nn_fast = 4\n\n[eval]";
    let text = spec("sims", "simulations = 5000", "").replace("[eval]", cap);
    let (one, cfg) = run_spec(&mut store, &text, 1);
    let (two, _) = run_spec(&mut store, &text, 2);
    assert_eq!(one.head, two.head, "the same head at 1 and 2 threads");
    let s = cfg.settings.search;
    assert!(s.playout_cap.is_some());
    let mut fast = 0;
    for r in records(&store, &one) {
        let played = games(&store, &r);
        fast += played
            .iter()
            .flat_map(|g| &g.steps)
            .filter(|st| matches!(st, Step::Move { search: Some(x), .. } if !x.full))
            .count();
        let costs: Vec<u64> = played.iter().map(|g| simulations(g, &s)).collect();
        assert_shortest_prefix(&costs, 5000, &format!("iteration {}", r.iteration));
    }
    assert!(fast > 0, "the playout cap drew fast searches");
    let v = verify(&mut store, &one.run_id.to_string(), None, &mut Quiet).unwrap();
    assert_eq!(v.differs, None);
}

/// T_self: the iteration keeps what wall time allowed (at least one game); the count is
/// recorded, and verify, at another thread count, re-executes exactly those games.
#[test]
fn a_seconds_budget_records_its_games_and_verifies_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let text = spec("timed", "seconds = 0.05", "");
    let (out, cfg) = run_spec(&mut store, &text, 2);
    let chain = records(&store, &out);
    let counts: Vec<u32> = chain.iter().map(|r| r.games.len() as u32).collect();
    assert!(counts.iter().all(|&k| k >= 1), "{counts:?}");
    assert_eq!(games_column(&dir.path().join("t.db"), out.run_id), counts);
    for r in &chain {
        let stored = store.run_games(out.run_id, r.iteration).unwrap();
        let listed: Vec<_> = stored.iter().map(|(_, h)| *h).collect();
        assert_eq!(
            listed, r.games,
            "iteration {}: stored = recorded",
            r.iteration
        );
    }
    assert!(cfg.settings.budget_kind().unwrap().is_timed());
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let v = pool
            .install(|| verify(&mut store, &out.run_id.to_string(), None, &mut Quiet))
            .unwrap();
        assert_eq!(v.differs, None, "verify at {threads} threads");
        assert_eq!((v.first, v.last), (1, 3));
    }
}

/// An override sets a budget in place of M (a sweep's axis, `run --set`): the spec it gives
/// is a budget run, and M with a budget is refused by name.
#[test]
fn overrides_switch_between_m_and_a_budget() {
    let base = "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\ngames_per_iteration = 50\n";
    let set = |k: &str, v: toml::Value| vec![(k.to_string(), v)];
    let (cfg, text) = tabula::runs::overrides::spec_with_overrides(
        tabula::runs::overrides::Place::Run,
        base,
        &set("budget.moves", toml::Value::Integer(300)),
        None,
        "x",
        "--set",
    )
    .unwrap();
    assert_eq!(cfg.settings.games_per_iteration, None);
    assert_eq!(
        cfg.settings.budget_kind(),
        Some(tabula::runs::BudgetKind::Moves(300))
    );
    assert!(!text.contains("games_per_iteration"), "{text}");
    let (back, _) = tabula::runs::overrides::spec_with_overrides(
        tabula::runs::overrides::Place::Run,
        &text,
        &set("games_per_iteration", toml::Value::Integer(7)),
        None,
        "x",
        "--set",
    )
    .unwrap();
    assert_eq!(
        (back.settings.games_per_iteration, back.settings.budget),
        (Some(7), None)
    );
    let both = vec![
        ("budget.moves".to_string(), toml::Value::Integer(3)),
        ("budget.seconds".to_string(), toml::Value::Float(1.0)),
    ];
    let e = tabula::runs::overrides::spec_with_overrides(
        tabula::runs::overrides::Place::Run,
        base,
        &both,
        None,
        "x",
        "--set",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("are alternatives"), "{e}");
}

/// Progressive simulation (`search.simulations` as a schedule): every search of iteration i
/// runs the schedule's count at i (PUCT and Gumbel; with the root's expansion as one
/// simulation, the root's visits sum to one less), a `simulations` budget counts each
/// iteration's own count, the head is the same at 1 and 2 threads, and verify re-executes it.
#[test]
fn a_simulation_schedule_gives_each_iteration_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    for algorithm in ["puct", "gumbel"] {
        let text = spec("prog", "simulations = 2000", "").replace(
            "simulations = 12\n",
            &format!("simulations = [[1, 3], [3, 9]]\nalgorithm = \"{algorithm}\"\n"),
        );
        let (one, cfg) = run_spec(&mut store, &text, 1);
        let (two, _) = run_spec(&mut store, &text, 2);
        assert_eq!(
            one.head, two.head,
            "{algorithm}: the same head at 1 and 2 threads"
        );
        for (i, r) in records(&store, &one).iter().enumerate() {
            let want = if i < 2 { 3 } else { 9 };
            let s = cfg.settings.search.at_iteration(i as u32 + 1);
            assert_eq!(s.simulations.first(), want);
            let gs = games(&store, r);
            for g in &gs {
                for st in &g.steps {
                    if let Step::Move {
                        search: Some(x), ..
                    } = st
                    {
                        assert_eq!(x.visits.iter().sum::<u32>(), want - 1, "{algorithm} {i}");
                    }
                }
            }
            let costs: Vec<u64> = gs.iter().map(|g| simulations(g, &s)).collect();
            assert_shortest_prefix(&costs, 2000, algorithm);
        }
        let v = verify(&mut store, &one.run_id.to_string(), None, &mut Quiet).unwrap();
        assert_eq!(v.differs, None, "{algorithm}");
    }
}
