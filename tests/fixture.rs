//! A store written by the build of commit 64434fb (tests/data/fixtures/store-64434fb.*): a
//! later build refuses it in commands that only read (changing nothing), migrates it on
//! `tabula migrate`, verifies its finished runs against the heads that build wrote, resumes
//! its unrun branch to the head that build reached, and lists and shows it.

use std::path::Path;

use crate::binary;
use binary::{ok, tabula};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/fixtures/store-64434fb.db"
);

/// A `run_games` row: run, iteration, game, address (NULL when packed), plies, score.
type GameRow = (i64, i64, i64, Option<Vec<u8>>, i64, f64);

fn show(db: &Path, run: &str) -> serde_json::Value {
    serde_json::from_str(&ok(&tabula(db, &["show", "--json", run]))).unwrap()
}

#[test]
fn the_64434fb_store_opens_verifies_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    std::fs::copy(FIXTURE, &db).unwrap();
    // Commands that only read refuse the older store and leave it as it was; `migrate`
    // brings it to this build's schema.
    let before = std::fs::read(&db).unwrap();
    for args in [
        &["ls"][..],
        &["show", "1"],
        &["sql", "SELECT 1"],
        &["fsck"],
        &["verify", "1"],
    ] {
        let out = tabula(&db, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("this store needs `tabula --db"),
            "{args:?}: {err}"
        );
    }
    assert!(
        std::fs::read(&db).unwrap() == before,
        "a read-only command changed the store"
    );
    assert!(ok(&tabula(&db, &["migrate"])).contains("schema version"));
    let ls: serde_json::Value = serde_json::from_str(&ok(&tabula(&db, &["ls", "--json"]))).unwrap();
    assert_eq!(ls.as_array().unwrap().len(), 3, "{ls}");
    let heads = [
        (
            "1",
            "29fe47ee0d7b83c1ae9d2a59984f0b37268e84145ca5d67845604c48aaa49c7b",
        ),
        (
            "2",
            "3d8202589e4ecaa6520e8ebc9a83c18286df7a8016ede9da1fb4946d16fb1511",
        ),
        (
            "3",
            "5d1f026b9104cdc83d4db2d07f6453302400d16edb7d2ed557d28cadf163cadf",
        ),
    ];
    for (run, head) in heads {
        assert_eq!(show(&db, run)["head"], head, "run {run}");
    }
    // The finished runs re-execute to their stored records.
    for run in ["1", "2"] {
        let out = ok(&tabula(&db, &["verify", run]));
        assert!(out.contains("identical") || out.contains("ok"), "{out}");
    }
    // The unrun branch resumes to the head the old build reached.
    ok(&tabula(&db, &["resume", "3", "--threads", "2"]));
    let v = show(&db, "3");
    assert_eq!(
        v["head"],
        "fc3b2934c269d15bb8e327cd5f71a5a01c12a013080745760667e5945d9eb222"
    );
    // show prints the metrics table.
    let text = ok(&tabula(&db, &["show", "tiny"]));
    assert!(text.contains("wr_p") || text.contains("WR_p"), "{text}");
    // The metric columns of the old `evaluations` moved into `metrics` losslessly: every
    // non-NULL value of the original file is a row of the same value, and the wide view
    // (and the README's query) reads them back as they were.
    let old =
        rusqlite::Connection::open_with_flags(FIXTURE, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let new = rusqlite::Connection::open(&db).unwrap();
    let columns = [
        "wr_p",
        "wr_p_ci95",
        "wr_p_games",
        "wr_p_wins",
        "wr_p_draws",
        "wr_p_losses",
        "err_p",
        "mae_v",
        "updated_1",
        "updated_4",
        "updated_16",
        "seen",
        "err_p_updated",
        "mae_v_updated",
        "err_p_updated_w",
        "mae_v_updated_w",
    ];
    let mut moved = 0;
    for c in columns {
        let rows: Vec<(i64, i64, rusqlite::types::Value)> = old
            .prepare(&format!(
                "SELECT run_id, iteration, {c} FROM evaluations WHERE {c} IS NOT NULL"
            ))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (run, it, v) in rows {
            let got: rusqlite::types::Value = new
                .query_row(
                    "SELECT value FROM metrics WHERE run_id = ?1 AND iteration = ?2 AND name = ?3",
                    rusqlite::params![run, it, c],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(got, v, "run {run} iteration {it} {c}");
            let wide: rusqlite::types::Value = new
                .query_row(
                    &format!("SELECT {c} FROM metrics_wide WHERE run_id = ?1 AND iteration = ?2"),
                    rusqlite::params![run, it],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(wide, v, "metrics_wide: run {run} iteration {it} {c}");
            moved += 1;
        }
    }
    assert!(moved > 100, "{moved}");
    // The README's query (the one `make run` ends with) still runs.
    let makefile = include_str!("../Makefile");
    let query = makefile
        .lines()
        .find_map(|l| l.strip_prefix("QUERY = "))
        .unwrap();
    let out = ok(&tabula(&db, &["sql", query]));
    assert!(out.contains("tiny") && out.contains("updated_1"), "{out}");
    // Migration 0007 rebuilt `run_games` WITHOUT ROWID losslessly: every row of the original
    // file is there unchanged, the table has no separate primary-key index, and the
    // `objects_kind` index is gone.
    let games = |c: &rusqlite::Connection, filter: &str| -> Vec<GameRow> {
        c.prepare(&format!(
            "SELECT run_id, iteration, game, hash, plies, score_p0 FROM run_games {filter}
             ORDER BY run_id, iteration, game"
        ))
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let before = games(&old, "");
    assert!(before.len() > 100, "{}", before.len());
    assert_eq!(
        games(&new, "WHERE run_id IN (1, 2)"),
        games(&old, "WHERE run_id IN (1, 2)")
    );
    let after = games(&new, "");
    assert!(before.iter().all(|g| g.3.is_some() && after.contains(g)));
    // Migration 0008 kept every old game an object (its row keeps its address, no pack);
    // the games the resumed branch played since are packed, with no address column.
    let (packed, plain): (i64, i64) = new
        .query_row(
            "SELECT sum(pack IS NOT NULL AND hash IS NULL), sum(pack IS NULL AND hash IS NOT NULL)
             FROM run_games",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(plain as usize, before.len());
    assert_eq!(packed as usize + before.len(), after.len());
    assert!(packed > 0, "the resumed branch's games are packed");
    let schema = |name: &str| -> Option<String> {
        new.query_row(
            "SELECT sql FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .ok()
    };
    assert!(schema("run_games").unwrap().contains("WITHOUT ROWID"));
    assert_eq!(schema("sqlite_autoindex_run_games_1"), None);
    assert_eq!(schema("objects_kind"), None);
    // fsck finds nothing damaged.
    ok(&tabula(&db, &["fsck"]));
}
