//! Matches are pure functions of their inputs; game records store, load and re-play.

use tabula::game_record::GameRecord;
use tabula::games::Abilities;
use tabula::games::{AnyGame, ConnectFour, Ewn};
use tabula::matches::{MatchReport, rerun, run_match};
use tabula::players::{Player, PlayerSpec};
use tabula::store::Store;

fn game<G>(name: &str, pick: impl Fn(AnyGame) -> Option<G>) -> G {
    pick(name.parse().unwrap()).unwrap()
}

fn ewn() -> Ewn {
    game("ewn:3x3x3", |g| match g {
        AnyGame::Ewn(g) => Some(g),
        _ => None,
    })
}

fn c4() -> ConnectFour {
    game("c4:5x4", |g| match g {
        AnyGame::ConnectFour(g) => Some(g),
        _ => None,
    })
}

fn player<G: Abilities>(g: &G, spec: &str) -> Player<G> {
    Player::resolve(&spec.parse::<PlayerSpec>().unwrap(), g, None).unwrap()
}

fn on_threads<T: Send>(n: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(f)
}

fn run<G: Abilities>(
    g: &G,
    a: &str,
    b: &str,
    games: u32,
    seed: u64,
    threads: usize,
) -> MatchReport {
    let (a, b) = (player(g, a), player(g, b));
    on_threads(threads, || run_match(g, &a, &b, games, seed).unwrap())
}

/// The same seed gives identical results and identical game hashes on 1 and 2 threads, for
/// a chance game (EWN: placements and dice) and a deterministic one, with searching players
/// (noise, temperature and playout caps included) on both sides.
#[test]
fn a_match_is_a_pure_function_of_its_inputs() {
    let g = ewn();
    let a = "mcts:sims=40,eps=0.25,tau=1,sample_moves=4,p_full=0.5,n_fast=10,forced=2,prune=true";
    let one = run(&g, a, "mcts-solver:sims=40", 12, 7, 1);
    let two = run(&g, a, "mcts-solver:sims=40", 12, 7, 2);
    assert_eq!(one, two);
    assert_eq!(one.games, 12);
    assert_eq!(one.wins_a + one.draws + one.losses_a, 12);
    // Another seed plays other games.
    let other = run(&g, a, "mcts-solver:sims=40", 12, 8, 2);
    assert_ne!(one.hashes(), other.hashes());

    let g = c4();
    let one = run(&g, "mcts:sims=60,eval=uniform", "random", 10, 3, 1);
    let two = run(&g, "mcts:sims=60,eval=uniform", "random", 10, 3, 2);
    assert_eq!(one, two);
    // Half the games with each player first.
    assert_eq!(one.game_list.iter().filter(|m| m.a_seat == 0).count(), 5);
}

/// Searching players beat random ones, and the score is reported from A's side.
#[test]
fn scores_are_from_a_s_side() {
    let g = c4();
    let r = run(&g, "mcts:sims=200", "random", 20, 1, 2);
    assert!(r.score_a > 0.85, "{r:?}");
    assert!(r.ci95[0] <= r.score_a && r.score_a <= r.ci95[1]);
    let r = run(&g, "random", "mcts:sims=200", 20, 1, 2);
    assert!(r.score_a < 0.15, "{r:?}");
    assert_eq!(
        r.score_a,
        (f64::from(r.wins_a) + 0.5 * f64::from(r.draws)) / 20.0
    );
}

/// Records go into the store under their own hash, come back equal, re-apply legally and
/// re-play from their inputs to the same hash.
#[test]
fn records_store_load_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    let g = ewn();
    let (a, b) = (
        player(&g, "mcts:sims=30,eps=0.25,tau=1"),
        player(&g, "random"),
    );
    let report = run_match(&g, &a, &b, 4, 11).unwrap();
    let hashes = store
        .write(|w| {
            report
                .records()
                .map(|r| w.put(r))
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap();
    for (m, h) in report.game_list.iter().zip(&hashes) {
        assert_eq!(m.hash, h.to_hex());
        let back: GameRecord = store.get(h).unwrap();
        assert_eq!(back, m.record);
        let states = back.states(&g).unwrap();
        assert_eq!(states.len(), back.steps.len() + 1);
        // Re-play from the inputs: seats in recorded order.
        let seats = if m.a_seat == 0 { [&a, &b] } else { [&b, &a] };
        assert_eq!(rerun(&g, &back, seats).unwrap().hash(), *h);
        // Searched moves carry visit counts over the legal actions: 29 descents, the root's
        // expansion being the first of the 30 simulations (docs/search.md).
        assert!(back.steps.iter().any(|s| matches!(
            s,
            tabula::game_record::Step::Move { search: Some(st), .. } if st.visits.iter().sum::<u32>() == 29
        )));
    }
    // A tampered record no longer re-applies.
    let mut bad = report.game_list[0].record.clone();
    if let Some(tabula::game_record::Step::Move { action, .. }) = bad
        .steps
        .iter_mut()
        .find(|s| matches!(s, tabula::game_record::Step::Move { .. }))
    {
        *action = 99; // outside EWN's action space
    }
    let e = bad.states(&g).unwrap_err().to_string();
    assert!(e.contains("action 99 is not legal"), "{e}");
}

/// The greedy players exist for Chinese Checkers only, and beat a random player there.
#[test]
fn greedy_players_on_chinese_checkers() {
    let AnyGame::Checkers(g) = "checkers:5x5-3".parse().unwrap() else {
        unreachable!()
    };
    for spec in ["greedy", "greedy-stochastic"] {
        let r = run(&g, spec, "random", 20, 4, 2);
        assert!(r.score_a > 0.9, "{spec}: {r:?}");
    }
    let e = Player::resolve(&"greedy".parse().unwrap(), &ewn(), None).unwrap_err();
    assert!(e.to_string().contains("Chinese Checkers"), "{e}");
    let e = Player::resolve(&PlayerSpec::Optimal, &ewn(), None).unwrap_err();
    assert!(e.to_string().contains("store"), "{e}");
}

fn tabula(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

/// `tabula match --json --record` on 1 and 2 threads gives the same report; every recorded
/// game re-plays with `tabula replay`; bad player specs fail with a message naming the key.
#[test]
fn match_and_replay_commands() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let args = |threads: &'static str| {
        [
            "match",
            "ewn:3x3x3",
            "--a",
            "mcts:sims=30,eps=0.25,tau=1",
            "--b",
            "optimal",
            "--games",
            "6",
            "--seed",
            "3",
            "--json",
            "--record",
            "--threads",
            threads,
        ]
    };
    let reports: Vec<serde_json::Value> = ["1", "2"]
        .iter()
        .map(|t| {
            let out = tabula(&db, &args(t));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            v.as_object_mut().unwrap().remove("seconds");
            v
        })
        .collect();
    assert_eq!(reports[0], reports[1]);
    let r = &reports[0];
    for key in ["score_a", "wins_a", "draws", "losses_a", "games"] {
        assert!(r.get(key).is_some(), "--json lacks {key}: {r}");
    }
    assert_eq!(r["games"], 6);
    let hash = r["games_detail"][1]["hash"].as_str().unwrap();
    let out = tabula(&db, &["replay", hash, "--show"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("identical, hash checked"), "{text}");
    // 30 simulations, the first expanding the root.
    assert!(text.contains("search: 29 visits"), "{text}");

    let out = tabula(
        &db,
        &["match", "c4:4x4", "--a", "mcts:simz=3", "--b", "random"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("simz") && err.contains("sims"), "{err}");
}

/// A trained model is a player: `model:RUN@I` (the greedy policy) and `model:RUN@I,sims=N`
/// (PUCT guided by it) play matches, the same on 1 and 2 threads; their recorded games
/// re-play; a later model of a run scores better against the optimal player than the
/// untrained one; bad references fail naming what is allowed.
#[test]
fn trained_models_are_players() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let spec = dir.path().join("t.toml");
    std::fs::write(
        &spec,
        "name = \"t\"\nvariant = \"ewn:3x3x3\"\nseed = 4\niterations = 6\n\
         games_per_iteration = 300\ncheckpoint_every = 3\n[search]\nsimulations = 40\n\
         [eval]\ngames = 200\n",
    )
    .unwrap();
    let ok = |out: std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    };
    ok(tabula(&db, &["run", spec.to_str().unwrap()]));
    let score = |a: &str, threads: &str, record: bool| {
        let mut args = vec![
            "match",
            "ewn:3x3x3",
            "--a",
            a,
            "--b",
            "optimal",
            "--games",
            "400",
            "--seed",
            "1",
            "--json",
            "--threads",
            threads,
        ];
        if record {
            args.push("--record");
        }
        let mut v = ok(tabula(&db, &args));
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    let greedy = score("model:t@6", "1", false);
    assert_eq!(greedy, score("model:t@6", "2", false));
    let untrained = score("model:t@0", "2", false);
    let s = |v: &serde_json::Value| v["score_a"].as_f64().unwrap();
    assert!(s(&greedy) > s(&untrained), "{greedy} vs {untrained}");
    let searched = score("model:1@6,sims=20", "2", true);
    assert!(s(&searched) > 0.0, "{searched}");
    // A recorded game of the searching model re-plays.
    let hash = searched["games_detail"][0]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    ok(tabula(&db, &["replay", &hash]));
    for (bad, needle) in [
        ("model:t@99", "committed iterations"),
        ("model:t", "RUN@I"),
        ("model:nope@1", "no run"),
        ("model:t@1,sims=0", "sims"),
    ] {
        let out = tabula(
            &db,
            &[
                "match",
                "ewn:3x3x3",
                "--a",
                bad,
                "--b",
                "random",
                "--games",
                "2",
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle),
            "{bad}: {err}"
        );
    }
    let out = tabula(
        &db,
        &[
            "match",
            "ewn:3x3x4",
            "--a",
            "model:t@1",
            "--b",
            "random",
            "--games",
            "2",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("ewn:3x3x3"), "{err}");
}

/// The JSON of a successful `tabula rate`, without its time.
fn rated(db: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = tabula(db, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_object_mut().unwrap().remove("seconds");
    v
}

/// `tabula replay HASH` re-plays the stored game bit for bit.
fn assert_replays(db: &std::path::Path, hash: &str) {
    let out = tabula(db, &["replay", hash]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("identical, hash checked"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A pair's game hashes in a `tabula rate --json` report, by its two canonical specs.
fn pair_hashes(v: &serde_json::Value, a: &str, b: &str) -> Vec<String> {
    let pair = v["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| (p["a"] == a && p["b"] == b) || (p["a"] == b && p["b"] == a))
        .unwrap_or_else(|| panic!("no pair {a} / {b} in {v}"));
    pair["games_detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["hash"].as_str().unwrap().to_string())
        .collect()
}

/// `tabula rate`: the same report on 1 and 2 threads; a pair plays the same games whatever
/// the other players and their order; the anchor is at 0 and ratings follow strength;
/// every game is stored and re-plays bit for bit; a gauntlet plays the anchor's pairs only.
#[test]
fn rate_plays_stores_and_fits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let args = |players: &[&'static str], threads: &'static str| {
        let mut a = vec![
            "rate",
            "ewn:3x3x2",
            "--games",
            "16",
            "--seed",
            "5",
            "--json",
        ];
        for p in players {
            a.extend(["--player", p]);
        }
        a.extend(["--threads", threads]);
        a
    };
    let three = ["random", "mcts:sims=30", "optimal"];
    let one = rated(&db, &args(&three, "1"));
    assert_eq!(one, rated(&db, &args(&three, "2")));
    assert_eq!(one["anchor"], "random");
    let players = one["players"].as_array().unwrap();
    let elo = |i: usize| players[i]["elo"].as_f64().unwrap();
    assert_eq!(elo(0), 0.0);
    assert!(elo(2) > elo(0), "{one}");
    assert_eq!(one["recorded"], 48);
    let mcts = players[1]["player"].as_str().unwrap();
    assert!(mcts.starts_with("mcts:sims=30,"), "{mcts}");
    // Another order, another player: the pair random / optimal plays the same games.
    let other = rated(&db, &args(&["optimal", "mcts:sims=10", "random"], "2"));
    assert_eq!(other["anchor"], "optimal");
    assert_eq!(
        pair_hashes(&one, "random", "optimal"),
        pair_hashes(&other, "random", "optimal")
    );
    // Every game is stored; one of each pair re-plays from its inputs.
    for (a, b) in [("random", mcts), (mcts, "optimal")] {
        assert_replays(&db, &pair_hashes(&one, a, b)[3]);
    }
    // A gauntlet: the anchor's pairs only.
    let mut g = args(&three, "2");
    g.extend(["--gauntlet", "--anchor", "optimal"]);
    let gauntlet = rated(&db, &g);
    assert_eq!(gauntlet["pairs"].as_array().unwrap().len(), 2);
    assert_eq!(gauntlet["players"][2]["elo"], 0.0);
    // The text table names the players as given, ranked.
    let text_args: Vec<&str> = args(&three, "2")
        .into_iter()
        .filter(|a| *a != "--json")
        .collect();
    let out = tabula(&db, &text_args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("anchor random = 0") && text.contains("mcts:sims=30 "),
        "{text}"
    );
}

/// `tabula rate --openings N`: games 2j and 2j + 1 of a pair (one with each player first)
/// start from one random opening, another for the next two; the report is the same on 1 and
/// 2 threads; a game re-plays from its record (the opening is its start); an opening longer
/// than the game, or more than 100 moves, is refused with the flag named.
#[test]
fn rate_from_random_openings() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let args = |openings: &'static str, threads: &'static str| {
        vec![
            "rate",
            "ewn:3x3x3",
            "--player",
            "random",
            "--player",
            "mcts:sims=10",
            "--games",
            "8",
            "--openings",
            openings,
            "--threads",
            threads,
            "--json",
        ]
    };
    let one = rated(&db, &args("2", "1"));
    assert_eq!(one, rated(&db, &args("2", "2")));
    assert_eq!(one["openings"], 2);
    let games = one["pairs"][0]["games_detail"].as_array().unwrap();
    let opening = |i: usize| games[i]["opening"].as_str().unwrap().to_string();
    for j in 0..4 {
        assert_eq!(opening(2 * j), opening(2 * j + 1), "{one}");
    }
    let distinct: std::collections::BTreeSet<String> = (0..8).map(opening).collect();
    assert!(distinct.len() >= 3, "{distinct:?}");
    assert_replays(&db, games[5]["hash"].as_str().unwrap());
    // Without openings no game has one.
    let plain = rated(&db, &args("0", "2"));
    assert!(
        plain["pairs"][0]["games_detail"][0]
            .get("opening")
            .is_none()
    );
    for (n, want) in [("101", "--openings"), ("60", "give fewer --openings")] {
        let out = tabula(&db, &args(n, "2"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{n}: {err}");
    }
}

/// A run's checkpoints rate with `--run RUN --every K` (and the last), their ratings drawn
/// against iteration with `--svg`; bad input fails naming what is allowed.
#[test]
fn rate_checkpoints_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let spec = dir.path().join("t.toml");
    std::fs::write(
        &spec,
        "name = \"t\"\nvariant = \"ewn:3x3x2\"\nseed = 4\niterations = 5\n\
         games_per_iteration = 100\n[search]\nsimulations = 20\n[eval]\ngames = 20\n",
    )
    .unwrap();
    let out = tabula(&db, &["run", spec.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = dir.path().join("elo.svg");
    let v = rated(
        &db,
        &[
            "rate",
            "ewn:3x3x2",
            "--player",
            "random",
            "--run",
            "t",
            "--every",
            "2",
            "--games",
            "40",
            "--json",
            "--svg",
            svg.to_str().unwrap(),
        ],
    );
    let names: Vec<&str> = v["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["player"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["random", "model:t@0", "model:t@2", "model:t@4", "model:t@5"]
    );
    let elo = |i: usize| v["players"][i]["elo"].as_f64().unwrap();
    assert!(elo(4) > elo(1), "trained above untrained: {v}");
    let figure = std::fs::read_to_string(&svg).unwrap();
    assert!(
        figure.contains("<svg") && figure.contains("data-label=\"t\""),
        "{figure}"
    );
    assert!(
        figure.contains("class=\"band\""),
        "the 95% intervals: {figure}"
    );
    // A marker per checkpoint, and the legend's.
    assert_eq!(figure.matches("class=\"marker\"").count(), 5, "{figure}");
    // The caption says how the ratings were fitted and on which games (the 4 models and
    // `random` in a round robin: 10 pairs of 40).
    for needle in [
        "Elo: maximum likelihood",
        "over 400 games, 40 a pair, round robin",
        "anchor random at 0",
    ] {
        assert!(figure.contains(needle), "{needle}: {figure}");
    }

    for (args, needle) in [
        (&["--player", "random"][..], "at least 2 players"),
        (&["--player", "random", "--player", "random"], "given twice"),
        (
            &["--player", "random", "--player", "greedy"],
            "Chinese Checkers",
        ),
        (
            &["--player", "random", "--player", "optimal", "--games", "0"],
            "allowed: 1 to",
        ),
        (
            &[
                "--player", "random", "--player", "optimal", "--anchor", "mcts",
            ],
            "not one of the players",
        ),
        (
            &["--player", "random", "--player", "optimal", "--every", "2"],
            "needs --run",
        ),
        (
            &[
                "--player", "random", "--player", "optimal", "--svg", "x.svg",
            ],
            "model:RUN@I",
        ),
        (&["--player", "random", "--player", "mcts:sims=1"], "sims"),
        (&["--run", "nope"], "no run `nope`"),
    ] {
        let mut all = vec!["rate", "ewn:3x3x2"];
        all.extend(args);
        let out = tabula(&db, &all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle) && !err.contains("panicked"),
            "{all:?}: {err}"
        );
    }
    // A checkpoint of another variant's run cannot play this one.
    let out = tabula(
        &db,
        &["rate", "ewn:3x3x3", "--player", "random", "--run", "t"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("ewn:3x3x2"), "{err}");
}
