-- Migration 3: runs of tabular AlphaZero, their iterations, games and metrics.
--
-- The content-addressed records (kinds 'run/v1', 'settings/v1', 'game/v1', 'table-chunk/v1',
-- 'table-snapshot/v1', 'evaluation/v1', 'iteration/v1'; see src/runs/records.rs) live in
-- `objects` and are the source of truth. The tables below index them for SQL and keep, in
-- plain columns, what is not hashed because it varies between machines: wall-clock seconds,
-- times, engine version, thread counts, the lock holder. Hashes are 32-byte BLOBs (the views
-- ending in `_hex` and the flattened views show them as hex).

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY,                 -- the run's number, as `tabula ls` shows it
    hash               BLOB    NOT NULL REFERENCES objects(hash), -- the 'run/v1' record: the run's identity
    name               TEXT    NOT NULL,                    -- label from the spec (not hashed)
    variant            TEXT    NOT NULL,                    -- canonical variant name
    seed               TEXT    NOT NULL,                    -- the run seed (u64, decimal text)
    seed_drawn         INTEGER NOT NULL,                    -- 1 if the seed was drawn from the OS at creation
    settings           BLOB    NOT NULL REFERENCES objects(hash), -- the 'settings/v1' record at creation
    settings_json      TEXT    NOT NULL,                    -- the same settings as JSON (for run_settings)
    spec_toml          TEXT    NOT NULL,                    -- the spec text as given
    iterations_planned INTEGER NOT NULL,                    -- N
    iterations_done    INTEGER NOT NULL DEFAULT 0,          -- iterations committed so far
    status             TEXT    NOT NULL                     -- 'running', 'done' or 'failed'
                       CHECK (status IN ('running', 'done', 'failed')),
    head               BLOB,                                -- the last committed 'iteration/v1' hash (NULL before the first)
    parent_run         INTEGER REFERENCES runs(id),         -- branch: the parent run (NULL for a root run)
    parent_iteration   INTEGER,                             -- branch: the parent's iteration it continues from
    engine_version     TEXT    NOT NULL,                    -- tabula version that created the run
    threads            INTEGER,                             -- worker threads of the last process that ran it
    created_at         TEXT    NOT NULL,                    -- UTC, RFC 3339
    updated_at         TEXT    NOT NULL,                    -- UTC, RFC 3339, last commit
    lock_pid           INTEGER,                             -- run lock: holder's process id (NULL: unlocked)
    lock_host          TEXT,                                -- run lock: holder's host name
    lock_since         TEXT                                 -- run lock: when it was taken, UTC
);

CREATE INDEX runs_name ON runs(name);

-- One row per committed iteration (written in the same transaction as its records).
CREATE TABLE iterations (
    run_id             INTEGER NOT NULL REFERENCES runs(id),
    iteration          INTEGER NOT NULL,                    -- 1-based
    hash               BLOB    NOT NULL REFERENCES objects(hash), -- the 'iteration/v1' record
    snapshot           BLOB    NOT NULL REFERENCES objects(hash), -- the 'table-snapshot/v1' after training
    evaluation         BLOB    NOT NULL REFERENCES objects(hash), -- the 'evaluation/v1' record
    snapshot_full      INTEGER NOT NULL,                    -- 1 for a full checkpoint, 0 for changed rows only
    games              INTEGER NOT NULL,                    -- self-play games played (M)
    samples            INTEGER NOT NULL,                    -- training samples applied (window of K x M games)
    rows_trained       INTEGER NOT NULL,                    -- distinct positions the samples touched
    beta               REAL    NOT NULL,                    -- learning rate in force
    self_play_seconds  REAL    NOT NULL,                    -- wall clock (not hashed)
    training_seconds   REAL    NOT NULL,                    -- wall clock (not hashed)
    evaluation_seconds REAL    NOT NULL,                    -- wall clock (not hashed)
    store_seconds      REAL    NOT NULL,                    -- wall clock spent writing to the store (not hashed)
    snapshot_bytes     INTEGER NOT NULL,                    -- bytes of the snapshot's chunk objects
    games_bytes        INTEGER NOT NULL,                    -- bytes of the iteration's game objects
    created_at         TEXT    NOT NULL,                    -- UTC, RFC 3339
    PRIMARY KEY (run_id, iteration)
);

-- Every self-play game of a run, in order (committed in batches as games finish).
CREATE TABLE run_games (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,                             -- 1-based
    game      INTEGER NOT NULL,                             -- 0-based index within the iteration
    hash      BLOB    NOT NULL REFERENCES objects(hash),    -- the 'game/v1' record
    plies     INTEGER NOT NULL,                             -- decisions played
    score_p0  REAL    NOT NULL,                             -- final score of the first player (1, 0.5, 0)
    PRIMARY KEY (run_id, iteration, game)
);

-- The metrics of each iteration, one column each (iteration 0: the untrained table). NULL
-- where the run did not ask for a metric.
CREATE TABLE evaluations (
    run_id          INTEGER NOT NULL REFERENCES runs(id),
    iteration       INTEGER NOT NULL,                       -- 0 = before training
    hash            BLOB    NOT NULL REFERENCES objects(hash), -- the 'evaluation/v1' record
    wr_p            REAL,                                   -- table player's score vs the optimal player
    wr_p_ci95       REAL,                                   -- half-width of its 95% confidence interval
    wr_p_games      INTEGER,                                -- games played for wr_p
    wr_p_wins       INTEGER,                                -- table player's wins
    wr_p_draws      INTEGER,                                -- draws
    wr_p_losses     INTEGER,                                -- table player's losses
    err_p           REAL,                                   -- ERR_p over S_test ([0, 1] value scale)
    mae_v           REAL,                                   -- MAE_v over S_test
    updated_1       INTEGER NOT NULL,                       -- positions updated at least once
    updated_4       INTEGER NOT NULL,                       -- ... at least 4 times
    updated_16      INTEGER NOT NULL,                       -- ... at least 16 times
    seen            INTEGER NOT NULL,                       -- distinct decision positions in self-play games so far
    err_p_updated   REAL,                                   -- ERR_p over positions updated >= 1 time
    mae_v_updated   REAL,                                   -- MAE_v over positions updated >= 1 time
    err_p_updated_w REAL,                                   -- ERR_p over updated positions, weighted by update count
    mae_v_updated_w REAL,                                   -- MAE_v over updated positions, weighted by update count
    PRIMARY KEY (run_id, iteration)
);

-- Runs with hashes as hex, for people.
CREATE VIEW runs_hex AS
    SELECT id, name, variant, seed, iterations_done, iterations_planned, status,
           lower(hex(head)) AS head, lower(hex(hash)) AS run_hash, parent_run, parent_iteration,
           engine_version, created_at, updated_at
    FROM runs;

-- Run settings flattened, one column per setting.
CREATE VIEW run_settings AS
    SELECT r.id AS run_id, r.name, r.variant, r.seed, r.iterations_planned AS iterations,
           json_extract(r.settings_json, '$.games_per_iteration')        AS games_per_iteration,
           json_extract(r.settings_json, '$.window')                     AS window,
           json_extract(r.settings_json, '$.learning_rate')              AS learning_rate,
           json_extract(r.settings_json, '$.init_std')                   AS init_std,
           json_extract(r.settings_json, '$.checkpoint_every')           AS checkpoint_every,
           json_extract(r.settings_json, '$.search.simulations')         AS simulations,
           json_extract(r.settings_json, '$.search.c_puct')              AS c_puct,
           json_extract(r.settings_json, '$.search.dirichlet_alpha')     AS dirichlet_alpha,
           json_extract(r.settings_json, '$.search.dirichlet_epsilon')   AS dirichlet_epsilon,
           json_extract(r.settings_json, '$.search.temperature')         AS temperature,
           json_extract(r.settings_json, '$.search.sample_moves')        AS sample_moves,
           json_extract(r.settings_json, '$.search.init_q')              AS init_q,
           json_extract(r.settings_json, '$.search.playout_cap')         AS playout_cap,
           json_extract(r.settings_json, '$.search.forced_playouts')     AS forced_playouts,
           json_extract(r.settings_json, '$.search.policy_target_pruning') AS policy_target_pruning,
           json_extract(r.settings_json, '$.eval.games')                 AS eval_games,
           json_extract(r.settings_json, '$.eval.wr_p')                  AS eval_wr_p,
           json_extract(r.settings_json, '$.eval.errors')                AS eval_errors
    FROM runs r;

-- Metrics per iteration, wide: one row per (run, iteration), metrics and timings as columns.
-- Iteration 0 is the untrained table (no timings).
CREATE VIEW metrics_wide AS
    SELECT e.run_id, r.name, r.variant, e.iteration,
           e.wr_p, e.wr_p_ci95, e.wr_p_games, e.wr_p_wins, e.wr_p_draws, e.wr_p_losses,
           e.err_p, e.mae_v, e.updated_1, e.updated_4, e.updated_16, e.seen,
           e.err_p_updated, e.mae_v_updated, e.err_p_updated_w, e.mae_v_updated_w,
           i.games, i.samples, i.rows_trained, i.beta,
           i.self_play_seconds, i.training_seconds, i.evaluation_seconds, i.store_seconds,
           i.snapshot_bytes, i.games_bytes
    FROM evaluations e
    JOIN runs r ON r.id = e.run_id
    LEFT JOIN iterations i ON i.run_id = e.run_id AND i.iteration = e.iteration;

-- Metrics per iteration, long: one row per (run, iteration, metric); NULL metrics left out.
CREATE VIEW metrics_long AS
    SELECT run_id, iteration, metric, value FROM (
              SELECT run_id, iteration, 'wr_p' AS metric, wr_p AS value FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'wr_p_ci95', wr_p_ci95 FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'err_p', err_p FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'mae_v', mae_v FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'updated_1', updated_1 FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'updated_4', updated_4 FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'updated_16', updated_16 FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'seen', seen FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'err_p_updated', err_p_updated FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'mae_v_updated', mae_v_updated FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'err_p_updated_w', err_p_updated_w FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'mae_v_updated_w', mae_v_updated_w FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'games', games FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'self_play_seconds', self_play_seconds FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'training_seconds', training_seconds FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'evaluation_seconds', evaluation_seconds FROM metrics_wide
    UNION ALL SELECT run_id, iteration, 'store_seconds', store_seconds FROM metrics_wide
    ) WHERE value IS NOT NULL;

-- Self-play games per iteration: count, mean length, first player's mean score.
CREATE VIEW games_per_iteration AS
    SELECT run_id, iteration, count(*) AS games, avg(plies) AS mean_plies,
           avg(score_p0) AS p0_score, sum(score_p0 = 0.5) AS draws
    FROM run_games
    GROUP BY run_id, iteration;

-- Lineage: every (run, ancestor) pair with the iteration where the line leaves the ancestor;
-- depth 0 is the run itself (at its last iteration).
CREATE VIEW run_lineage AS
    WITH RECURSIVE up(run_id, ancestor, at_iteration, depth) AS (
        SELECT id, id, iterations_done, 0 FROM runs
        UNION ALL
        SELECT up.run_id, r.parent_run, r.parent_iteration, up.depth + 1
        FROM up JOIN runs r ON r.id = up.ancestor
        WHERE r.parent_run IS NOT NULL
    )
    SELECT up.run_id, up.ancestor, a.name AS ancestor_name, up.at_iteration, up.depth
    FROM up JOIN runs a ON a.id = up.ancestor;
