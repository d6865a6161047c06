-- Migration 8: compressed objects, packs of small objects, and which full checkpoints keep
-- their bytes (issue 10; docs/store.md "Packs and codecs", "Derived snapshots"). Lossless:
-- every object and row is kept as it was; addresses, record bytes and run heads do not
-- change. Objects written before keep codec 0.
--
-- * `objects.codec` says how `bytes` hold the record's postcard bytes (the address is always
--   over the decoded bytes):
--     0  the bytes themselves;
--     1  zstd-compressed;
--     2  elided: postcard of (offset, pack addresses, the bytes without the elided range);
--        the range is the member addresses of those packs, in order, so they are stored
--        once, in the packs (an iteration record's list of its games).
--     3  zstd-compressed after a byte-plane shuffle of stride 8 (table chunks: f64 rows);
--   `size` stays the decoded length.
-- * `packs` holds many small objects of one kind (the self-play games of one committed batch)
--   as one zstd blob. A member's address is computed from its bytes when read; the pack's
--   own address is over its members' addresses, so a pack can be checked without the objects
--   that name its members. `prefixes` (each member's first 4 address bytes, in slot order)
--   finds a member by address without decompressing every pack.
-- * `run_games` gains the place of a packed game (`pack`, `slot`); `hash` is NULL for a packed
--   game (its address is in its iteration record, and computed from the pack), and keeps its
--   value for games stored as objects (stores written before this migration).

ALTER TABLE objects ADD COLUMN codec INTEGER NOT NULL DEFAULT 0;

-- Whether an iteration's snapshot objects are all stored. A learner may keep only some of
-- its full checkpoints' bytes (the others derived like deltas, rebuilt by re-training);
-- fsck reads this rather than re-deriving the rule. Earlier builds kept every full one: 1.
ALTER TABLE iterations ADD COLUMN snapshot_kept INTEGER NOT NULL DEFAULT 1;  -- 0 plain, 1 zstd, 2 elided, 3 shuffled zstd (above)

CREATE TABLE packs (
    id       INTEGER PRIMARY KEY,
    hash     BLOB    NOT NULL UNIQUE,  -- blake3('pack' || 0x00 || kind || 0x00 || member addresses)
    kind     TEXT    NOT NULL,         -- the members' kind tag, e.g. 'game/v1'
    members  INTEGER NOT NULL,         -- number of members
    size     INTEGER NOT NULL,         -- the members' postcard bytes, summed (decoded)
    prefixes BLOB    NOT NULL,         -- 4 bytes per member: the start of its address
    bytes    BLOB    NOT NULL          -- zstd of, per member in slot order: varint length, bytes
);

CREATE VIEW packs_hex AS
    SELECT id, lower(hex(hash)) AS hash, kind, members, size, length(bytes) AS stored FROM packs;

CREATE TABLE run_games_new (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,                             -- 1-based
    game      INTEGER NOT NULL,                             -- 0-based index within the iteration
    hash      BLOB    REFERENCES objects(hash),             -- the 'game/v1' record when stored as an object; NULL when packed
    pack      INTEGER REFERENCES packs(id),                 -- the pack holding the game (NULL: an object)
    slot      INTEGER,                                      -- its place in the pack, 0-based
    plies     INTEGER NOT NULL,                             -- decisions played
    score_p0  REAL    NOT NULL,                             -- final score of the first player (1, 0.5, 0)
    PRIMARY KEY (run_id, iteration, game)
) WITHOUT ROWID;

INSERT INTO run_games_new (run_id, iteration, game, hash, pack, slot, plies, score_p0)
    SELECT run_id, iteration, game, hash, NULL, NULL, plies, score_p0 FROM run_games;

DROP VIEW games_per_iteration;
DROP TABLE run_games;
ALTER TABLE run_games_new RENAME TO run_games;

-- Self-play games per iteration: count, mean length, first player's mean score.
CREATE VIEW games_per_iteration AS
    SELECT run_id, iteration, count(*) AS games, avg(plies) AS mean_plies,
           avg(score_p0) AS p0_score, sum(score_p0 = 0.5) AS draws
    FROM run_games
    GROUP BY run_id, iteration;
