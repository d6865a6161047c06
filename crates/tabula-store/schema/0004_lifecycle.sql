-- Migration 4: the run lifecycle (resume, branch, verify; src/runs/life.rs).
--
-- No new tables or columns: resume uses what migration 3 made (games committed in batches,
-- an iteration's rows in one transaction, the lock columns `runs.lock_pid`, `lock_host`,
-- `lock_since`: set while a process works on the run, cleared when it stops, taken over
-- when the holder is a dead process of the same host).
--
-- Branches (`tabula branch RUN --at I`): the branch's `runs` row has `parent_run` and
-- `parent_iteration` = I, and it starts with `iterations_done` = I and `head` = the parent's
-- 'iteration/v1' record of iteration I. Its first I iterations are NOT copied: they are the
-- parent's (or an older ancestor's) rows in `iterations`, `run_games` and `evaluations`; the
-- branch's own rows start at I + 1. The branch's 'run/v1' record names the parent (run hash,
-- I, the parent's iteration record, the canonical overrides); the `run` field of its
-- iteration records is its run record with the parent left out (also stored), so a branch
-- with no overrides and the parent's seed has the parent's records and head.

-- Every iteration of every run, shared ones included: one row per (run, iteration) with the
-- run whose row it is (`source_run`: the run itself, or the ancestor it was shared from) and
-- how far up the lineage that is (`depth`, 0 = the run's own).
CREATE VIEW run_iterations AS
    WITH RECURSIVE src(run_id, source_run, upto, depth) AS (
        SELECT id, id, iterations_done, 0 FROM runs
        UNION ALL
        SELECT src.run_id, r.parent_run, min(src.upto, r.parent_iteration), src.depth + 1
        FROM src JOIN runs r ON r.id = src.source_run
        WHERE r.parent_run IS NOT NULL
    )
    SELECT src.run_id, i.iteration, i.run_id AS source_run, src.depth,
           i.hash, i.snapshot, i.evaluation, lower(hex(i.hash)) AS hash_hex
    FROM src JOIN iterations i ON i.run_id = src.source_run AND i.iteration <= src.upto;

-- Who is working on which run now (the lock columns of `runs`, for people).
CREATE VIEW run_locks AS
    SELECT id AS run_id, name, status, iterations_done, iterations_planned,
           lock_pid, lock_host, lock_since
    FROM runs WHERE lock_pid IS NOT NULL;
