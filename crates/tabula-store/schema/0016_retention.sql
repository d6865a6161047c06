-- Migration 16: which self-play games a run keeps (docs/store.md, "Keeping fewer games").
-- Nothing hashed changes: a run's records and head are the same whatever it keeps.

-- The run's retention, as its spec's `[store] keep_games` says: 'all' (every game, the
-- default and what every run before this migration kept), 'every:K' (the games of every K-th
-- iteration) or 'none'.
ALTER TABLE runs ADD COLUMN keep_games TEXT NOT NULL DEFAULT 'all';

-- 1 while the iteration's games are stored (its `run_games` rows and their packs); 0 once
-- retention removed them (its iteration record is then stored whole, with its games'
-- addresses, and it has no `run_games` rows).
ALTER TABLE iterations ADD COLUMN games_kept INTEGER NOT NULL DEFAULT 1;

-- The coverage set (the distinct positions of every self-play game up to an iteration: the
-- metric `seen` counts it) stored where retention removed the games it was built from, so a
-- run can be resumed and branched there without them: one row per stored checkpoint of a
-- run whose earlier games are not all kept.
CREATE TABLE run_coverage (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,                             -- the iteration it is the coverage after
    record    BLOB    NOT NULL REFERENCES objects(hash),    -- that iteration's 'iteration/v1' record
    hash      BLOB    NOT NULL REFERENCES objects(hash),    -- the 'coverage/v1' object
    PRIMARY KEY (run_id, iteration)
);

CREATE INDEX run_coverage_record ON run_coverage(record);
