//! The store's foundation: content addressing, deduplication, fsck, read-only SQL, schema
//! version checks.

use serde::{Deserialize, Serialize};
use tabula::store::{ObjectHash, Record, Store, StoreError, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Note {
    text: String,
    n: u32,
}

impl Record for Note {
    const KIND: &'static str = "test-note/v1";
}

fn note(n: u32) -> Note {
    Note {
        text: format!("note {n}"),
        n,
    }
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn put_get_dedup_and_address() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let mut store = Store::open(&path).unwrap();
    let h1 = store.put(&note(1)).unwrap();
    let h1again = store.put(&note(1)).unwrap();
    let h2 = store.write(|w| w.put(&note(2))).unwrap();
    assert_eq!(h1, h1again);
    assert_ne!(h1, h2);
    assert_eq!(store.get::<Note>(&h1).unwrap(), note(1));
    assert!(store.contains(&h2).unwrap());
    // The address is blake3(kind || 0 || postcard bytes): postcard of Note{ "note 1", 1 } is
    // [6, b"note 1", 1].
    let mut bytes = vec![6u8];
    bytes.extend_from_slice(b"note 1");
    bytes.push(1);
    assert_eq!(h1, ObjectHash::of("test-note/v1", &bytes));
    drop(store);
    assert_eq!(count(&path, "SELECT count(*) FROM objects"), 2);
}

#[test]
fn missing_object_and_wrong_kind_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db")).unwrap();
    let h = store.put(&note(1)).unwrap();
    #[derive(Debug, Serialize, Deserialize)]
    struct Other(u8);
    impl Record for Other {
        const KIND: &'static str = "test-other/v1";
    }
    assert!(matches!(
        store.get::<Other>(&h),
        Err(StoreError::WrongKind { .. })
    ));
    let absent = ObjectHash([7; 32]);
    assert!(matches!(
        store.get::<Note>(&absent),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn fsck_finds_a_byte_changed_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = Store::open(&path).unwrap();
    let hashes: Vec<ObjectHash> = (0..50).map(|i| store.put(&note(i)).unwrap()).collect();
    let clean = store.fsck(|_, _| {}).unwrap();
    assert_eq!(clean.objects, 50);
    assert!(clean.is_clean());
    drop(store);

    // Flip one byte of one object's bytes, behind the store's back.
    let victim = hashes[17];
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        let mut bytes: Vec<u8> = c
            .query_row(
                "SELECT bytes FROM objects WHERE hash = ?1",
                [&victim.0[..]],
                |r| r.get(0),
            )
            .unwrap();
        bytes[2] ^= 0x01;
        c.execute(
            "UPDATE objects SET bytes = ?1 WHERE hash = ?2",
            rusqlite::params![bytes, &victim.0[..]],
        )
        .unwrap();
    }
    let store = Store::open_read_only(&path).unwrap();
    let report = store.fsck(|_, _| {}).unwrap();
    assert_eq!(report.damaged.len(), 1);
    assert_eq!(report.damaged[0].0, victim);
    assert!(matches!(
        store.get::<Note>(&victim),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn sql_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = Store::open(&path).unwrap();
    store.put(&note(1)).unwrap();
    drop(store);
    let ro = Store::open_read_only(&path).unwrap();
    let r = ro.query("SELECT kind, size FROM objects").unwrap();
    assert_eq!(r.columns, vec!["kind", "size"]);
    assert_eq!(r.rows.len(), 1);
    for write in [
        "DELETE FROM objects",
        "INSERT INTO objects (hash, kind, size, bytes) VALUES (x'00', 'k', 0, x'')",
        "DROP TABLE objects",
        "CREATE TABLE evil (x)",
        "PRAGMA user_version = 99",
    ] {
        assert!(ro.query(write).is_err(), "{write} must fail");
    }
    drop(ro);
    assert_eq!(count(&path, "SELECT count(*) FROM objects"), 1);
    // Every migration of the store crate's schema/ applied, none more (the failed PRAGMA changed nothing).
    let migrations = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/tabula-store/schema"
    ))
    .unwrap()
    .filter(|e| e.as_ref().unwrap().path().extension() == Some("sql".as_ref()))
    .count() as i64;
    assert_eq!(count(&path, "PRAGMA user_version"), migrations);
    assert!(matches!(
        Store::open_read_only(&dir.path().join("absent.db")),
        Err(StoreError::Missing(_))
    ));
}

#[test]
fn a_newer_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    drop(Store::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 999)
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::TooNew { found: 999, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("newer"));
    assert!(matches!(
        Store::open_read_only(&path),
        Err(StoreError::TooNew { .. })
    ));
}

/// The names of the files in `dir`, with the bytes of those named in `content` (a reader may
/// update the `-shm` index of a live writer's log, which is not the store).
fn files(dir: &std::path::Path, content: &[&str]) -> Vec<(String, Option<Vec<u8>>)> {
    let mut v: Vec<(String, Option<Vec<u8>>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let bytes = content
                .contains(&name.as_str())
                .then(|| std::fs::read(dir.join(&name)).unwrap());
            (name, bytes)
        })
        .collect();
    v.sort();
    v
}

/// Two writers creating one store at once both open it (the switch of a new file to WAL
/// answers "database is locked" at once to the second; the open retries it). A race: tried
/// many times.
#[test]
fn two_writers_create_one_store_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // 32 pairs, each started together by a barrier (100 before; each pair makes two stores,
    // their migrations and fsyncs included: the test's whole cost).
    for i in 0..32 {
        let path = dir.path().join(format!("t{i}.db"));
        let barrier = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let open = || {
                barrier.wait();
                Store::open(&path).map(drop)
            };
            let a = s.spawn(open);
            let b = s.spawn(open);
            a.join().unwrap().unwrap();
            b.join().unwrap().unwrap();
        });
    }
}

/// A read-only open creates no `-wal`/`-shm` beside a store that has none (it reads the file
/// as immutable), and beside a live writer's log it reads the log's commits and leaves the
/// log alone. Checked by comparing the directory, so it holds when tests run as root.
#[test]
fn a_read_only_open_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = Store::open(&path).unwrap();
    store.put(&note(1)).unwrap();
    drop(store);
    let before = files(dir.path(), &["t.db"]);
    assert_eq!(before.len(), 1, "{before:?}");
    let ro = Store::open_read_only(&path).unwrap();
    assert_eq!(
        ro.query("SELECT count(*) FROM objects").unwrap().rows[0][0],
        Value::Integer(1)
    );
    assert!(ro.fsck(|_, _| {}).unwrap().is_clean());
    assert_eq!(ro.check_schema().unwrap(), vec![]);
    ro.check_unchanged().unwrap();
    drop(ro);
    assert_eq!(files(dir.path(), &["t.db"]), before);

    // A live writer with a commit still in its log.
    let writer = Store::open(&path).unwrap();
    writer.put(&note(2)).unwrap();
    let live = files(dir.path(), &["t.db", "t.db-wal"]);
    assert!(live.iter().any(|(n, _)| n == "t.db-wal"), "{live:?}");
    let ro = Store::open_read_only(&path).unwrap();
    assert_eq!(
        ro.query("SELECT count(*) FROM objects").unwrap().rows[0][0],
        Value::Integer(2)
    );
    // Writing through a read-only store is refused before SQLite is asked.
    let mut ro = ro;
    assert!(matches!(
        ro.write(|w| w.put(&note(3))),
        Err(StoreError::ReadOnly(_))
    ));
    drop(ro);
    assert_eq!(files(dir.path(), &["t.db", "t.db-wal"]), live);
    drop(writer);
}

/// A writer that starts while an immutable read is under way and reaches the file (a
/// checkpoint) is detected: the reader's answers cannot be trusted and it says so.
#[test]
fn a_writer_starting_during_an_immutable_read_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    drop(Store::open(&path).unwrap());
    let ro = Store::open_read_only(&path).unwrap();
    ro.query("SELECT count(*) FROM objects").unwrap();
    ro.check_unchanged().unwrap();
    // The writer's close checkpoints its log into the file.
    let writer = Store::open(&path).unwrap();
    for i in 0..20 {
        writer.put(&note(i)).unwrap();
    }
    drop(writer);
    assert!(matches!(
        ro.check_unchanged(),
        Err(StoreError::ChangedWhileReading(_))
    ));
    assert!(matches!(
        ro.query("SELECT count(*) FROM objects"),
        Err(StoreError::ChangedWhileReading(_))
    ));
}

/// Stores in a directory this process cannot write: run as an unprivileged user through
/// `setpriv` when the tests run as root (root ignores permissions), else with the directory
/// made read-only. The read-only commands work, with and without a live writer's log, and a
/// writing command is refused with a clear message.
#[test]
fn read_only_commands_work_in_a_read_only_directory() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    if root && setpriv.is_none() {
        eprintln!("skipped: running as root without setpriv, a read-only directory cannot be made");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ro");
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join("t.db");
    let store = Store::open(&path).unwrap();
    store.put(&note(1)).unwrap();
    drop(store);
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    // Owned by root, readable by all: an unprivileged user can read, not write.
    mode(tmp.path(), 0o755);
    mode(&dir, if root { 0o755 } else { 0o555 });
    mode(&path, 0o644);
    let tabula = |args: &[&str]| {
        let mut c = match (root, setpriv) {
            (true, Some(s)) => {
                let mut c = std::process::Command::new(s);
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(env!("CARGO_BIN_EXE_tabula"));
                c
            }
            _ => std::process::Command::new(env!("CARGO_BIN_EXE_tabula")),
        };
        c.arg("--db").arg(&path).args(args).output().unwrap()
    };
    let probe = tabula(&["ls"]);
    if root && matches!(probe.status.code(), Some(126 | 127) | None) {
        eprintln!("skipped: the binary cannot be run as an unprivileged user here");
        return;
    }
    let check = |live: bool| {
        for args in [
            &["ls"][..],
            &["fsck"],
            &["sql", "SELECT count(*) AS n FROM objects"],
        ] {
            let out = tabula(args);
            assert!(
                out.status.success(),
                "{args:?} (live writer: {live}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let out = tabula(&["sql", "SELECT count(*) AS n FROM objects", "--csv"]);
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(check(false), "n\n1\n");
    let out = tabula(&["solve", "cdc:PPPP"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    if !root || err.contains("cannot be written") {
        assert!(err.contains("cannot be written"), "{err}");
    }
    // A live writer (this process, as root or the owner) with a commit in its log.
    mode(&dir, 0o755);
    let writer = Store::open(&path).unwrap();
    writer.put(&note(2)).unwrap();
    for f in ["t.db-wal", "t.db-shm"] {
        mode(&dir.join(f), 0o644);
    }
    if !root {
        mode(&dir, 0o555);
    }
    assert_eq!(check(true), "n\n2\n");
    mode(&dir, 0o755);
    drop(writer);
}

/// A run created (not run) from `spec` in a new store at `path`; its id.
fn created(path: &std::path::Path, spec: &str) -> i64 {
    let cfg = tabula::runs::RunConfig::from_toml(spec, "s").unwrap();
    let mut store = Store::open(path).unwrap();
    tabula::experiments::run_specs::create(&mut store, &cfg, spec).unwrap()
}

/// The `run_settings` row of run `id`, column name to value (as SQLite returns it, text or
/// number, as text).
/// Run `id`'s settings record as stored (`runs.settings_json`).
fn stored_settings(path: &std::path::Path, id: i64) -> serde_json::Value {
    let c = rusqlite::Connection::open(path).unwrap();
    let json: String = c
        .query_row("SELECT settings_json FROM runs WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&json).unwrap()
}

fn settings_row(path: &std::path::Path, id: i64) -> Vec<(String, String)> {
    let c = rusqlite::Connection::open(path).unwrap();
    let mut st = c
        .prepare("SELECT * FROM run_settings WHERE run_id = ?1")
        .unwrap();
    let names: Vec<String> = st.column_names().map(|s| s.to_string()).collect();
    st.query_row([id], |r| {
        Ok(names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Integer(x) => x.to_string(),
                    rusqlite::types::ValueRef::Real(x) => x.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Blob(_) => "BLOB".to_string(),
                };
                (n.clone(), v)
            })
            .collect())
    })
    .unwrap()
}

/// The leaves of a settings record's JSON: (dotted path, value), lists as leaves.
fn leaves(v: &serde_json::Value, prefix: &str, out: &mut Vec<(String, serde_json::Value)>) {
    match v.as_object() {
        Some(o) if !o.is_empty() => {
            for (k, x) in o {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        _ => out.push((prefix.to_string(), v.clone())),
    }
}

/// The `run_settings` column of a settings key (docs/store.md, "Views").
fn column_of(path: &str) -> String {
    let p = path
        .replace("learner.network.reference.", "network_reference_")
        .replace("learner.network.", "network_");
    let p = if p == "learner.kind" {
        "learner".to_string()
    } else {
        p
    };
    let p = p.strip_prefix("search.").map_or(p.clone(), str::to_string);
    p.replace('.', "_")
}

/// The text the view shows for a JSON value: booleans `true` / `false`, null `none`, lists
/// and tables as compact JSON, names bare, numbers as SQLite prints them.
fn as_written(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "none".into(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => n.as_f64().unwrap().to_string(),
        },
        other => other.to_string(),
    }
}

/// `run_settings` has a column for every setting of a settings record, with the record's
/// value as written; a run of another learner shows `none` in the network's columns; a
/// record that predates a setting shows the value such runs mean.
#[test]
fn run_settings_has_a_column_per_setting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    // Every key away from its default (so that none is left out of the record).
    let full = r#"
name = "full"
variant = "ewn:3x3x3"
seed = 4
iterations = 3
window = 3
learning_rate = [[1, 0.5], [2, 0.05]]
init_std = 0.02
checkpoint_every = 2
[budget]
moves = 900
[search]
simulations = 30
c_puct = 1.25
dirichlet_alpha = 0.3
dirichlet_epsilon = 0.2
temperature = 0.5
sample_moves = 4
init_q = "draw"
playout_cap = { p_full = 0.25, n_fast = 8 }
forced_playouts = { k = 1.5 }
policy_target_pruning = true
count_expansion_visit = false
expansion_is_simulation = false
tie_break = "lowest"
[eval]
games = 100
wr_p = false
errors = false
[start]
policy = "go-exploit"
archive = "search-circular"
archive_prob = 0.8
archive_size = 500
[learner]
kind = "network"
[learner.network]
arch = "resnet"
hidden = [16]
blocks = 1
channels = 4
bottleneck = 2
batch_norm = true
head = "conv"
policy_channels = 3
value_channels = 2
value_hidden = 8
arithmetic = "separate"
value_head = "sigmoid"
optimizer = "adam"
lr = [[1, 0.01]]
momentum = 0.8
nesterov = false
weight_decay = 0.001
adam_beta1 = 0.8
adam_beta2 = 0.99
adam_eps = 1e-7
replay_games = 10
batch_size = 32
train_steps = 7
[learner.network.reference]
solver_games = 2
solver_multipliers = [1, 10]
c4_sets = ["L1_R1"]
c4_positions = 50
c4_search = true
"#;
    let id = created(&path, full);
    let row = settings_row(&path, id);
    let mut keys = Vec::new();
    leaves(&stored_settings(&path, id), "", &mut keys);
    assert!(keys.len() >= 54, "{} settings", keys.len());
    for (key, value) in &keys {
        let col = column_of(key);
        let got = row.iter().find(|(n, _)| *n == col);
        let got = got.unwrap_or_else(|| panic!("setting {key}: no column {col} in run_settings"));
        assert_eq!(got.1, as_written(value), "setting {key} (column {col})");
    }
    let get = |row: &[(String, String)], c: &str| {
        row.iter()
            .find(|(n, _)| n == c)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get(&row, "games_per_iteration"), "none");
    assert_eq!(get(&row, "playout_cap"), r#"{"p_full":0.25,"n_fast":8}"#);

    // The tabular defaults: the network's columns say none, absent options none.
    let id = created(
        &path,
        "name = \"plain\"\nvariant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n",
    );
    let plain = settings_row(&path, id);
    assert_eq!(get(&plain, "learner"), "tabular-az");
    assert_eq!(get(&plain, "games_per_iteration"), "1000");
    assert_eq!(get(&plain, "budget_moves"), "none");
    assert_eq!(get(&plain, "sample_moves"), "none");
    assert_eq!(get(&plain, "policy_target_pruning"), "false");
    for (n, v) in &plain {
        if n.starts_with("network_") {
            assert_eq!(v, "none", "{n}");
        }
    }
    // A network run at its defaults: the keys a record leaves out at their defaults show
    // them (the arithmetic of a new run is written: fused).
    let id = created(
        &path,
        "name = \"net\"\nvariant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n[learner]\nkind = \"network\"\n",
    );
    let net = settings_row(&path, id);
    for (c, want) in [
        ("network_arch", "mlp"),
        ("network_bottleneck", "0"),
        ("network_batch_norm", "false"),
        ("network_head", "dense"),
        ("network_policy_channels", "none"),
        ("network_arithmetic", "fused"),
        ("network_value_head", "tanh"),
        ("network_reference_solver_games", "20"),
    ] {
        assert_eq!(get(&net, c), want, "{c}");
    }
    // A record from before the search conventions, the learner and the start were settings.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute(
        "UPDATE runs SET settings_json = json_remove(settings_json, '$.search.tie_break',
             '$.search.count_expansion_visit', '$.search.expansion_is_simulation', '$.learner',
             '$.start') WHERE id = ?1",
        [id],
    )
    .unwrap();
    let old = settings_row(&path, id);
    for (c, want) in [
        ("tie_break", "lowest"),
        ("count_expansion_visit", "false"),
        ("expansion_is_simulation", "false"),
        ("learner", "tabular-az"),
        ("start_policy", "initial"),
        ("network_arch", "none"),
    ] {
        assert_eq!(get(&old, c), want, "{c}");
    }
    // Gumbel search (migration 12): every Gumbel key away from its default has its column;
    // a PUCT run's record leaves them out and the view shows the defaults.
    let gumbel = r#"
name = "gumbel"
variant = "ewn:3x3x3"
seed = 4
iterations = 3
[search]
simulations = 30
algorithm = "gumbel"
gumbel_actions = 4
c_visit = 30.0
c_scale = 0.1
gumbel_q_scale = "min_max"
gumbel_eval_noise = true
gumbel_scale = 0.5
chance = "proportional"
"#;
    let id = created(&path, gumbel);
    let row = settings_row(&path, id);
    let json = stored_settings(&path, id);
    let mut keys = Vec::new();
    leaves(&json, "", &mut keys);
    for key in [
        "search.algorithm",
        "search.c_visit",
        "search.gumbel_eval_noise",
        "search.gumbel_scale",
        "search.chance",
    ] {
        assert!(keys.iter().any(|(k, _)| k == key), "{key} in {json}");
    }
    for (key, value) in &keys {
        let col = column_of(key);
        let got = row.iter().find(|(n, _)| *n == col);
        let got = got.unwrap_or_else(|| panic!("setting {key}: no column {col} in run_settings"));
        assert_eq!(got.1, as_written(value), "setting {key} (column {col})");
    }
    for (c, want) in [
        ("algorithm", "puct"),
        ("gumbel_actions", "16"),
        ("c_visit", "50"),
        ("c_scale", "1"),
        ("gumbel_q_scale", "bounds"),
        ("gumbel_eval_noise", "false"),
        ("gumbel_scale", "none"),
        ("chance", "sample"),
    ] {
        assert_eq!(get(&plain, c), want, "{c}");
    }
}
