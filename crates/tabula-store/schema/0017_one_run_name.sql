-- Migration 17: a run's name is `name` in every view (issue 48). `sweep_runs` called it
-- `run_name` while `runs_hex`, `run_settings`, `metrics_wide`, `run_locks` and
-- `run_provenance` call it `name`. Nothing stored changes: the two views are recreated, the
-- same rows with one column renamed (`sweep_progress` reads `sweep_runs`, so it is dropped
-- first and recreated as migration 6 defined it).
DROP VIEW sweep_progress;
DROP VIEW sweep_runs;

-- Every run of every sweep with its grid point, seed and state: one join away from
-- `run_settings`, `metrics_wide` and `metrics_long` (join on run_id).
CREATE VIEW sweep_runs AS
    SELECT s.name AS sweep, lower(hex(s.hash)) AS sweep_hash, m.point, m.point_json,
           m.seed_index, m.seed, m.run_id, r.name AS name, r.status, r.iterations_done,
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
