//! The store's foundation: content addressing, deduplication, fsck, read-only SQL, schema
//! version checks.

use serde::{Deserialize, Serialize};
use tabula::store::{ObjectHash, Record, Store, StoreError};

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
    assert_eq!(count(&path, "PRAGMA user_version"), 4);
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
