//! Provenance, notes and tags (schema/0011_provenance.sql; docs/store.md, "Provenance"):
//! which build, on which machine and with which command line each process worked on a run,
//! and what people wrote about runs and sweeps. None of it enters a hash: a note or a tag
//! never changes a run's records.

use rusqlite::{Connection, OptionalExtension, params};

use super::Store;
use super::runs::host_name;
use super::{Result, StoreError, error::sqlite};

/// The build a process runs: the binary captures it at compile time (the tabula crate's
/// build.rs) and hands it to [`Store::begin_session`], so the store itself is not rebuilt
/// at every commit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Build {
    pub version: &'static str,
    /// The git commit (40 hex digits), or "unknown" outside a checkout.
    pub commit: &'static str,
    /// "clean", "dirty" (uncommitted changes when it was built) or "unknown".
    pub tree: &'static str,
    /// The cargo profile ("release", "debug").
    pub profile: &'static str,
}

/// This process's arguments, each quoted for a POSIX shell where it needs to be (so the
/// line can be pasted back).
pub fn command_line() -> String {
    std::env::args_os()
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// How a process's work on a run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The run reached its planned iterations.
    Done,
    /// The process stopped before (an interrupt, or `--iterations`).
    Stopped,
    Failed,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Stopped => "stopped",
            Outcome::Failed => "failed",
        }
    }
}

/// A process's session on a run, as [`Store::begin_session`] started it.
#[derive(Clone, Debug)]
pub struct Session {
    run_id: i64,
    started_at: String,
    host: String,
    pid: i64,
}

/// What a note or a tag is attached to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    Run(i64),
    /// A sweep by name (its record changes as it grows; its name does not).
    Sweep(String),
}

impl Subject {
    /// The table of its `what` ("notes" or "tags"), its key column and its key.
    fn keyed(&self, what: &str) -> (String, &'static str, rusqlite::types::Value) {
        match self {
            Subject::Run(id) => (format!("run_{what}"), "run_id", (*id).into()),
            Subject::Sweep(name) => (format!("sweep_{what}"), "sweep", name.clone().into()),
        }
    }
}

/// A run's or sweep's note and tags.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Annotations {
    pub note: Option<String>,
    pub tags: Vec<String>,
}

/// One row of `run_sessions`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SessionRow {
    pub started_at: String,
    pub ended_at: Option<String>,
    pub host: String,
    pub pid: i64,
    pub engine_version: String,
    pub engine_commit: String,
    pub engine_tree: String,
    pub build_profile: String,
    pub command_line: String,
    pub threads: i64,
    pub iterations_from: i64,
    pub iterations_to: Option<i64>,
    pub outcome: Option<String>,
}

/// The most characters of a note, and of a tag (tags: letters, digits and `-_.:/+=@`).
pub(crate) const MAX_NOTE: usize = 10_000;
pub(crate) const MAX_TAG: usize = 64;

/// Checks a note's text: at most [`MAX_NOTE`] characters, no control characters other than
/// newlines and tabs.
pub fn check_note(text: &str) -> std::result::Result<(), String> {
    if text.chars().count() > MAX_NOTE {
        return Err(format!("a note has at most {MAX_NOTE} characters"));
    }
    if let Some(c) = text
        .chars()
        .find(|&c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(format!(
            "a note may not hold the control character {c:?} (newlines and tabs are fine)"
        ));
    }
    Ok(())
}

/// Checks a tag: 1 to [`MAX_TAG`] characters, letters, digits and `-_.:/+=@`.
pub fn check_tag(tag: &str) -> std::result::Result<(), String> {
    let ok = |c: char| c.is_alphanumeric() || "-_.:/+=@".contains(c);
    if tag.is_empty() || tag.chars().count() > MAX_TAG || !tag.chars().all(ok) {
        return Err(format!(
            "tag {tag:?}: a tag is 1 to {MAX_TAG} letters, digits or -_.:/+=@ (no spaces)"
        ));
    }
    Ok(())
}

impl Store {
    /// Records that this process, built as `b`, starts working on run `run_id` at
    /// `iterations_from` iterations done, with `threads` workers.
    pub fn begin_session(
        &mut self,
        b: &Build,
        run_id: i64,
        iterations_from: u32,
        threads: usize,
    ) -> Result<Session> {
        let s = Session {
            run_id,
            started_at: super::utc_now_rfc3339(),
            host: host_name(),
            pid: i64::from(std::process::id()),
        };
        let line = command_line();
        self.write(|w| {
            w.tx.prepare_cached(
                "INSERT INTO run_sessions (run_id, started_at, host, pid, engine_version,
                     engine_commit, engine_tree, build_profile, command_line, threads,
                     iterations_from)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT DO NOTHING",
            )
            .and_then(|mut st| {
                st.execute(params![
                    s.run_id,
                    s.started_at,
                    s.host,
                    s.pid,
                    b.version,
                    b.commit,
                    b.tree,
                    b.profile,
                    line,
                    threads as i64,
                    iterations_from,
                ])
            })
            .map_err(|e| sqlite(w.path, e))?;
            Ok(())
        })?;
        Ok(s)
    }

    /// Records the end of a session: the iterations done and how it ended.
    pub fn end_session(&mut self, s: &Session, iterations_to: u32, outcome: Outcome) -> Result<()> {
        self.write(|w| {
            w.tx.prepare_cached(
                "UPDATE run_sessions SET ended_at = ?5, iterations_to = ?6, outcome = ?7
                 WHERE run_id = ?1 AND started_at = ?2 AND host = ?3 AND pid = ?4",
            )
            .and_then(|mut st| {
                st.execute(params![
                    s.run_id,
                    s.started_at,
                    s.host,
                    s.pid,
                    super::utc_now_rfc3339(),
                    iterations_to,
                    outcome.as_str(),
                ])
            })
            .map_err(|e| sqlite(w.path, e))?;
            Ok(())
        })
    }

    /// The sessions of a run, oldest first.
    pub fn run_sessions(&self, run_id: i64) -> Result<Vec<SessionRow>> {
        sessions(&self.conn, run_id).map_err(|e| self.err(e))
    }

    /// Sets (`Some`) or clears (`None`) the note of a run or sweep.
    pub fn set_note(&mut self, on: &Subject, note: Option<&str>) -> Result<()> {
        if let Some(n) = note {
            check_note(n).map_err(StoreError::Annotation)?;
        }
        self.write(|w| {
            put_note(w.tx, on, note, &super::utc_now_rfc3339()).map_err(|e| sqlite(w.path, e))
        })
    }

    /// Adds (`add`) or removes tags of a run or sweep (adding one it has, or removing one
    /// it lacks, changes nothing).
    pub fn set_tags(&mut self, on: &Subject, tags: &[String], add: bool) -> Result<()> {
        for t in tags {
            check_tag(t).map_err(StoreError::Annotation)?;
        }
        self.write(|w| put_tags(w.tx, on, tags, add).map_err(|e| sqlite(w.path, e)))
    }

    /// The note and tags (sorted) of a run or sweep.
    pub fn annotations(&self, on: &Subject) -> Result<Annotations> {
        annotations(&self.conn, on).map_err(|e| self.err(e))
    }
}

/// Sets (`Some`) or clears (`None`) a note on `conn` (inside the caller's transaction; the
/// text already checked), stamped `now`.
pub(super) fn put_note(
    conn: &Connection,
    on: &Subject,
    note: Option<&str>,
    now: &str,
) -> rusqlite::Result<()> {
    let (table, key, id) = on.keyed("notes");
    match note {
        Some(n) => conn.execute(
            &format!(
                "INSERT INTO {table} ({key}, note, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT({key}) DO UPDATE SET note = ?2, updated_at = ?3"
            ),
            params![id, n, now],
        ),
        None => conn.execute(&format!("DELETE FROM {table} WHERE {key} = ?1"), [&id]),
    }
    .map(|_| ())
}

/// Adds (`add`) or removes tags on `conn` (inside the caller's transaction; already checked).
pub(super) fn put_tags(
    conn: &Connection,
    on: &Subject,
    tags: &[String],
    add: bool,
) -> rusqlite::Result<()> {
    let (table, key, id) = on.keyed("tags");
    let sql = if add {
        format!("INSERT INTO {table} ({key}, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING")
    } else {
        format!("DELETE FROM {table} WHERE {key} = ?1 AND tag = ?2")
    };
    for t in tags {
        conn.execute(&sql, params![id, t])?;
    }
    Ok(())
}

fn sessions(conn: &Connection, run_id: i64) -> rusqlite::Result<Vec<SessionRow>> {
    conn.prepare_cached(
        "SELECT started_at, ended_at, host, pid, engine_version, engine_commit, engine_tree,
             build_profile, command_line, threads, iterations_from, iterations_to, outcome
         FROM run_sessions WHERE run_id = ?1 ORDER BY started_at, host, pid",
    )?
    .query_map([run_id], |r| {
        Ok(SessionRow {
            started_at: r.get(0)?,
            ended_at: r.get(1)?,
            host: r.get(2)?,
            pid: r.get(3)?,
            engine_version: r.get(4)?,
            engine_commit: r.get(5)?,
            engine_tree: r.get(6)?,
            build_profile: r.get(7)?,
            command_line: r.get(8)?,
            threads: r.get(9)?,
            iterations_from: r.get(10)?,
            iterations_to: r.get(11)?,
            outcome: r.get(12)?,
        })
    })?
    .collect()
}

fn annotations(conn: &Connection, on: &Subject) -> rusqlite::Result<Annotations> {
    let ((notes, key, id), (tags, _, _)) = (on.keyed("notes"), on.keyed("tags"));
    let note = conn
        .query_row(
            &format!("SELECT note FROM {notes} WHERE {key} = ?1"),
            [&id],
            |r| r.get(0),
        )
        .optional()?;
    let tags = conn
        .prepare_cached(&format!(
            "SELECT tag FROM {tags} WHERE {key} = ?1 ORDER BY tag"
        ))?
        .query_map([&id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(Annotations { note, tags })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_for_a_shell() {
        assert_eq!(shell_quote("run"), "run");
        assert_eq!(shell_quote("runs/quick.toml"), "runs/quick.toml");
        assert_eq!(shell_quote("--set=c_puct=1.5"), "--set=c_puct=1.5");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn notes_and_tags_are_checked() {
        assert!(check_note("a first try\nwith two lines\tand a tab").is_ok());
        assert!(check_note("clears the screen \u{1b}[2J").is_err());
        assert!(check_note(&"x".repeat(MAX_NOTE + 1)).is_err());
        assert!(check_tag("paper-fig20").is_ok());
        assert!(check_tag("init_q=loss").is_ok());
        for bad in ["", "two words", "a\nb", &"t".repeat(MAX_TAG + 1)] {
            assert!(check_tag(bad).is_err(), "{bad:?}");
        }
    }
}
