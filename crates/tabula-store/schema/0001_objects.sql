-- Migration 1: the content-addressed object table.
--
-- Every record (a solution chunk, a game, a table snapshot chunk, an evaluation, an iteration)
-- is a versioned Rust struct serialised with postcard. Its address is
--     hash = blake3(kind tag || 0x00 || postcard bytes)
-- so identical records are stored once. The bytes are the source of truth; every relational
-- table below indexes them for SQL. `tabula fsck` recomputes each hash from kind and bytes.

CREATE TABLE objects (
    id    INTEGER PRIMARY KEY,      -- rowid; beats WITHOUT ROWID for random 32-byte keys
    hash  BLOB    NOT NULL UNIQUE,  -- 32-byte blake3 address (see above)
    kind  TEXT    NOT NULL,         -- record kind tag with its version, e.g. 'solution-chunk/v1'
    size  INTEGER NOT NULL,         -- length of bytes, for SQL
    bytes BLOB    NOT NULL          -- postcard encoding of the record
);

CREATE INDEX objects_kind ON objects(kind);

-- The hash as lowercase hex, the form the command line prints and accepts.
CREATE VIEW objects_hex AS
    SELECT lower(hex(hash)) AS hash, kind, size FROM objects;
