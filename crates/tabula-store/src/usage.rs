//! `tabula du`: what a store's bytes are spent on, by kind of record and by run
//! (docs/store.md, "What a store holds: du, rm and gc").

use super::{Result, Store};

/// The bytes of one kind of record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KindUsage {
    /// The kind tag (`game/v1` in packs is `game/v1 (packs)`).
    pub kind: String,
    pub count: u64,
    /// Bytes as stored (compressed, elided).
    pub stored_bytes: u64,
    /// The records' own bytes, decoded.
    pub record_bytes: u64,
}

/// What one run's rows name.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunUsage {
    pub id: i64,
    pub name: String,
    pub keep_games: String,
    pub iterations: u64,
    /// Iterations whose games are stored.
    pub iterations_with_games: u64,
    pub games: u64,
    /// The stored bytes of the packs holding its games (a pack shared with another run is
    /// counted for each).
    pub game_bytes: u64,
    /// The stored bytes of its kept checkpoints' objects, as written (`snapshot_bytes`).
    pub checkpoint_bytes: u64,
}

/// [`Store::usage`]'s answer.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Usage {
    /// The file's pages, in bytes (its write-ahead log aside).
    pub file_bytes: u64,
    /// Free pages inside the file (given back by `VACUUM`).
    pub free_bytes: u64,
    pub kinds: Vec<KindUsage>,
    pub runs: Vec<RunUsage>,
}

impl Store {
    /// What the store's bytes are spent on (one pass over `objects`, `packs` and
    /// `run_games`).
    pub fn usage(&self) -> Result<Usage> {
        let c = &self.conn;
        let one = |sql: &str| -> Result<u64> {
            c.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|v| v as u64)
                .map_err(|e| self.err(e))
        };
        let page = one("SELECT page_size FROM pragma_page_size")?;
        let file_bytes = one("SELECT page_count FROM pragma_page_count")? * page;
        let free_bytes = one("SELECT freelist_count FROM pragma_freelist_count")? * page;
        let mut kinds: Vec<KindUsage> = c
            .prepare(
                "SELECT kind, count(*), sum(length(bytes)), sum(size) FROM objects
                 GROUP BY kind
                 UNION ALL
                 SELECT kind || ' (packs)', sum(members), sum(length(bytes)), sum(size) FROM packs
                 GROUP BY kind",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(KindUsage {
                        kind: r.get(0)?,
                        count: r.get::<_, i64>(1)? as u64,
                        stored_bytes: r.get::<_, i64>(2)? as u64,
                        record_bytes: r.get::<_, i64>(3)? as u64,
                    })
                })?
                .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err(e))?;
        kinds.sort_by(|a, b| {
            b.stored_bytes
                .cmp(&a.stored_bytes)
                .then(a.kind.cmp(&b.kind))
        });
        let runs = c
            .prepare(
                "SELECT r.id, r.name, r.keep_games,
                    (SELECT count(*) FROM iterations i WHERE i.run_id = r.id),
                    (SELECT count(*) FROM iterations i WHERE i.run_id = r.id AND i.games_kept = 1),
                    coalesce(g.games, 0), coalesce(p.bytes, 0),
                    (SELECT coalesce(sum(snapshot_bytes), 0) FROM iterations i
                     WHERE i.run_id = r.id AND i.snapshot_kept = 1)
                 FROM runs r
                 LEFT JOIN (SELECT run_id, count(*) AS games FROM run_games GROUP BY run_id) g
                   ON g.run_id = r.id
                 LEFT JOIN (SELECT u.run_id, sum(length(k.bytes)) AS bytes
                            FROM (SELECT DISTINCT run_id, pack FROM run_games
                                  WHERE pack IS NOT NULL) u
                            JOIN packs k ON k.id = u.pack GROUP BY u.run_id) p
                   ON p.run_id = r.id
                 ORDER BY r.id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(RunUsage {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        keep_games: r.get(2)?,
                        iterations: r.get::<_, i64>(3)? as u64,
                        iterations_with_games: r.get::<_, i64>(4)? as u64,
                        games: r.get::<_, i64>(5)? as u64,
                        game_bytes: r.get::<_, i64>(6)? as u64,
                        checkpoint_bytes: r.get::<_, i64>(7)? as u64,
                    })
                })?
                .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err(e))?;
        Ok(Usage {
            file_bytes,
            free_bytes,
            kinds,
            runs,
        })
    }
}
