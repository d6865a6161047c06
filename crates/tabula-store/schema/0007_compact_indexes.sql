-- Migration 7: fewer and narrower indexes (issue 10). Lossless: every row is kept.
--
-- * `run_games` becomes a WITHOUT ROWID table clustered on its primary key
--   (run_id, iteration, game). Before, SQLite kept the rows in a rowid table AND a separate
--   automatic index on the primary key, storing the three key columns twice per game.
-- * `objects_kind` is dropped: nothing in the program looks objects up by kind (fsck scans by
--   rowid, every read is by hash through the UNIQUE index on `hash`). An ad-hoc SQL query on
--   `kind` still works; it scans.
--
-- Record bytes and hashes are untouched, so no run's head changes.

CREATE TABLE run_games_new (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,                             -- 1-based
    game      INTEGER NOT NULL,                             -- 0-based index within the iteration
    hash      BLOB    NOT NULL REFERENCES objects(hash),    -- the 'game/v1' record
    plies     INTEGER NOT NULL,                             -- decisions played
    score_p0  REAL    NOT NULL,                             -- final score of the first player (1, 0.5, 0)
    PRIMARY KEY (run_id, iteration, game)
) WITHOUT ROWID;

INSERT INTO run_games_new (run_id, iteration, game, hash, plies, score_p0)
    SELECT run_id, iteration, game, hash, plies, score_p0 FROM run_games;

-- The view on run_games is dropped around the swap (a rename checks every view) and
-- re-created as migration 3 defined it.
DROP VIEW games_per_iteration;
DROP TABLE run_games;
ALTER TABLE run_games_new RENAME TO run_games;

-- Self-play games per iteration: count, mean length, first player's mean score.
CREATE VIEW games_per_iteration AS
    SELECT run_id, iteration, count(*) AS games, avg(plies) AS mean_plies,
           avg(score_p0) AS p0_score, sum(score_p0 = 0.5) AS draws
    FROM run_games
    GROUP BY run_id, iteration;

DROP INDEX objects_kind;
