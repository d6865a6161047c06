//! Every phase of an iteration gives the same bits at any thread count (docs/scaling.md):
//! network runs whose iterations have every phase that runs in parallel (self-play, training
//! in chunks, gating, the games against MCTS-Solver and the greedy player, the Connect Four
//! test sets scored by the network and by its search) have the same head and metrics at 1, 2
//! and 3 threads.

use tabula::runs::{Quiet, RunConfig, RunOutcome, start};
use tabula::store::Store;

/// Runs `text` at `threads` threads in `store` (under a fresh name).
fn run_at(store: &mut Store, text: &str, threads: usize) -> RunOutcome {
    let mut cfg = RunConfig::from_toml(text, "t").unwrap();
    cfg.name = store.unused_run_name(&cfg.name).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| start(store, &cfg, text, threads as u32, &mut Quiet))
        .unwrap()
}

/// The same head and last metrics at 1, 2 and 3 threads.
fn same_at_any_thread_count(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let one = run_at(&mut store, text, 1);
    assert!(one.head.is_some());
    for threads in [2, 3] {
        let other = run_at(&mut store, text, threads);
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
