-- Migration 6: sweeps (src/experiments/, docs/experiments.md).
--
-- Numbering: migration 5 belongs to the runs restructuring (learner-agnostic driver, long-form
-- metrics); sweeps take number 6 so the two can land in either order of development. The list
-- in src/store/schema.rs applies them by position, 0005 before 0006.
--
-- A sweep is a base run spec, axes (settings keys with lists of values) and seeds; their
-- product is its runs. The 'sweep/v1' record (in `objects`) holds the resolved base spec, the
-- axes, the fixed overrides, the seeds and the 'run/v1' hash of every grid point and seed, in
-- grid order, so the sweep's hash names exactly which runs it is made of. The tables below
-- index it for SQL; `tabula merge` copies them by address like every other record.

CREATE TABLE sweeps (
    hash       BLOB    PRIMARY KEY REFERENCES objects(hash), -- the 'sweep/v1' record
    name       TEXT    NOT NULL,                             -- label from the sweep file (hashed too)
    points     INTEGER NOT NULL,                             -- grid points (product of the axes' lengths)
    seeds      INTEGER NOT NULL,                             -- seeds per point
    sweep_toml TEXT    NOT NULL,                             -- the sweep file as given (not hashed)
    created_at TEXT    NOT NULL                              -- UTC, RFC 3339 (not hashed)
);

CREATE INDEX sweeps_name ON sweeps(name);

-- One row per run of a sweep present in this store (a shard's store holds its share).
CREATE TABLE sweep_members (
    sweep      BLOB    NOT NULL REFERENCES sweeps(hash),
    point      INTEGER NOT NULL,                             -- 0-based grid point, in grid order
    seed_index INTEGER NOT NULL,                             -- 0-based position in the sweep's seeds
    seed       TEXT    NOT NULL,                             -- the run seed (u64, decimal text)
    point_json TEXT    NOT NULL,                             -- the point's axis values, {"key": value, ...}
    run_id     INTEGER NOT NULL REFERENCES runs(id),
    PRIMARY KEY (sweep, point, seed_index)
);

CREATE INDEX sweep_members_run ON sweep_members(run_id);

-- Every run of every sweep with its grid point, seed and state: one join away from
-- `run_settings`, `metrics_wide` and `metrics_long` (join on run_id).
CREATE VIEW sweep_runs AS
    SELECT s.name AS sweep, lower(hex(s.hash)) AS sweep_hash, m.point, m.point_json,
           m.seed_index, m.seed, m.run_id, r.name AS run_name, r.status, r.iterations_done,
           r.iterations_planned, lower(hex(r.head)) AS head
    FROM sweep_members m
    JOIN sweeps s ON s.hash = m.sweep
    JOIN runs r ON r.id = m.run_id;

-- Each sweep's progress: runs present, done, and iterations committed of those planned.
CREATE VIEW sweep_progress AS
    SELECT sweep, sweep_hash, count(*) AS runs, sum(status = 'done') AS done,
           sum(iterations_done) AS iterations_done, sum(iterations_planned) AS iterations_planned
    FROM sweep_runs
    GROUP BY sweep_hash;
