-- Migration 8: objects stored in another encoding (issue 10; docs/store.md, "Aliases").
--
-- An alias says: the object at address `hash` (of kind `kind`) is not stored as itself; its
-- bytes are derived from the stored object `stored_as`. The address stays the hash of the
-- canonical bytes, so records that name it (and every run's head) are unchanged; whoever
-- reads it decodes `stored_as` and checks the result against `hash`. Tabular AlphaZero
-- stores the chunks of its full checkpoints this way: `table-sparse/v1` keeps only the
-- entries that differ from their seeded initial values.
--
-- Lossless: a new, empty table; objects stored before stay as they are.

CREATE TABLE object_aliases (
    hash      BLOB NOT NULL PRIMARY KEY,                 -- the canonical object's address
    kind      TEXT NOT NULL,                             -- its kind (e.g. 'table-chunk/v1')
    stored_as BLOB NOT NULL REFERENCES objects(hash)     -- the stored object it derives from
) WITHOUT ROWID;

-- Aliases with the hashes in hex, the stored object's kind and size.
CREATE VIEW object_aliases_hex AS
    SELECT hex(a.hash) AS hash, a.kind, hex(a.stored_as) AS stored_as, o.kind AS stored_kind,
           o.size AS stored_size
    FROM object_aliases a LEFT JOIN objects o ON o.hash = a.stored_as;
