//! Fuzzing of what reads a store made by a run (docs/store.md, "Fuzzing and failpoints"): the
//! dashboard's pages on a live `tabula serve`, the SQL console, and every record a run stores
//! decoded from mutated bytes; asserting no panic, no 500, a server that keeps serving, and no
//! change to the store's files. The parser targets that need no store are the library's
//! (src/serve/fuzz.rs); both draw their inputs from `common/mutate.rs`. These live here
//! because a run made from the library's own test build compiled every game's and learner's
//! run loop a second time (docs/conventions.md, "Tests").

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::binary::{ok, tabula};
use crate::mutate::{DASHBOARD_URLS, fuzz, mutated, mutated_bytes};
use tabula::store::{Record, Store};

/// A store with one finished run (ewn:3x3x2, 2 iterations), made once for the targets here
/// (they only read it).
fn store_with_run() -> &'static Path {
    static STORE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &STORE
        .get_or_init(|| {
            let tmp = tempfile::tempdir().unwrap();
            let spec = tmp.path().join("tiny.toml");
            std::fs::write(
                &spec,
                "name = \"tiny\"\nvariant = \"ewn:3x3x2\"\nseed = 5\niterations = 2\n\
                 games_per_iteration = 6\nwindow = 2\ncheckpoint_every = 2\n\
                 [search]\nsimulations = 6\n[eval]\ngames = 6\n",
            )
            .unwrap();
            let db = tmp.path().join("fuzz.db");
            ok(&tabula(&db, &["run", spec.to_str().unwrap()]));
            (tmp, db)
        })
        .1
}

/// Every file of the store `db` (itself and its side files), as bytes.
fn files_of(db: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| {
            let p = PathBuf::from(format!("{}{s}", db.display()));
            std::fs::read(&p).ok().map(|b| (s.to_string(), b))
        })
        .collect()
}

/// `url` as a browser sends it: what cannot stand in a request line (spaces, controls,
/// non-ASCII) percent-encoded, everything else (a stray `%` included) as it is.
fn request_target(url: &str) -> String {
    let mut out = String::new();
    for b in url.bytes() {
        if (0x21..0x7f).contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The dashboard's URLs, mutated, sent to a live server over a store with a run: never a 500
/// (a panic in a handler), always an answer, and the store's files unchanged; then the SQL
/// console's queries on the same store, which never write.
#[test]
fn http_targets_and_the_sql_console() {
    let db = store_with_run();
    let before = files_of(db);
    let (_server, port) = crate::serve::serve(db);
    let urls: Vec<String> = DASHBOARD_URLS.iter().map(|u| u.to_string()).collect();
    let seen = std::cell::RefCell::new(std::collections::BTreeMap::<u16, usize>::new());
    fuzz(mutated(urls), |url| {
        let (status, _) = crate::serve::request(port, "GET", &request_target(&url));
        assert!((200..500).contains(&status), "{url:?}: {status}");
        *seen.borrow_mut().entry(status).or_default() += 1;
    });
    // The server answered pages and refusals both (the inputs reach the handlers).
    let seen = seen.into_inner();
    assert!(
        seen.contains_key(&200) && seen.keys().any(|s| *s >= 400),
        "{seen:?}"
    );
    let queries: Vec<String> = [
        "SELECT * FROM runs",
        "SELECT count(*) FROM objects",
        "PRAGMA table_info(runs)",
        "DELETE FROM objects",
        "UPDATE runs SET name = 'x'",
        "DROP TABLE runs",
        "ATTACH 'x.db' AS x",
        "VACUUM",
        "PRAGMA user_version = 3",
        "INSERT INTO runs DEFAULT VALUES",
        "SELECT 1; DELETE FROM runs",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "CREATE TEMP TABLE t(x)",
        "PRAGMA journal_mode = DELETE",
        "REPLACE INTO runs(id) VALUES (9)",
        "SELECT writefile('x', 'y')",
        "SELECT load_extension('x')",
        "BEGIN; COMMIT",
    ]
    .map(String::from)
    .to_vec();
    let store = Store::open_read_only(db).unwrap();
    fuzz(mutated(queries), |sql| {
        let _ = store.query(&sql);
    });
    drop(store);
    assert!(files_of(db) == before, "a read changed the store's files");
}

/// One record type's decoder on `bytes`: an error or a record, never a panic.
fn decode<R: Record>(bytes: &[u8]) -> Option<R> {
    postcard::from_bytes::<R>(bytes).ok()
}

/// Every record a run stores, decoded from mutated bytes: the run and iteration records, the
/// games (replayed on their game, as a checkout reads them), the tabular learner's evaluation
/// and snapshot, the sweep record, the other learners' evaluations; from random bytes too.
#[test]
fn stored_record_decoders() {
    use tabula::runs::{IterationRecord, RunRecord};
    let store = Store::open_read_only(store_with_run()).unwrap();
    let run = store.runs().unwrap().remove(0);
    let iterations: Vec<IterationRecord> = store
        .iteration_hashes(run.id)
        .unwrap()
        .iter()
        .map(|(_, h)| store.get(h).unwrap())
        .collect();
    let mut seeds: Vec<Vec<u8>> =
        vec![postcard::to_stdvec(&store.get::<RunRecord>(&run.hash).unwrap()).unwrap()];
    for r in &iterations {
        seeds.push(postcard::to_stdvec(r).unwrap());
        let e: tabula::learners::tabular::records::EvaluationRecord =
            store.get(&r.evaluation).unwrap();
        seeds.push(postcard::to_stdvec(&e).unwrap());
        if let Ok(s) = store.get::<tabula::learners::tabular::records::SnapshotRecord>(&r.snapshot)
        {
            seeds.push(postcard::to_stdvec(&s).unwrap());
        }
        for g in r.games.iter().take(3) {
            let game: tabula::game_record::GameRecord = store.get(g).unwrap();
            seeds.push(postcard::to_stdvec(&game).unwrap());
        }
    }
    let g: tabula::games::AnyGame = "ewn:3x3x2".parse().unwrap();
    fuzz(mutated_bytes(seeds), |bytes| {
        let _ = decode::<RunRecord>(&bytes);
        let _ = decode::<IterationRecord>(&bytes);
        let _ = decode::<tabula::learners::tabular::records::EvaluationRecord>(&bytes);
        let _ = decode::<tabula::learners::tabular::records::SnapshotRecord>(&bytes);
        let _ = decode::<tabula::learners::network::NetworkEvaluation>(&bytes);
        let _ = decode::<tabula::learners::q::QEvaluation>(&bytes);
        let _ = decode::<tabula::experiments::sweep::SweepRecord>(&bytes);
        if let Some(game) = decode::<tabula::game_record::GameRecord>(&bytes) {
            let _ = tabula::with_game!(&g, |g| game.states(g).map(|s| s.len()));
        }
    });
}
