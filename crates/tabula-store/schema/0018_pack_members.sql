-- Migration 18: packed objects found by address through an index (issue 48; docs/store.md
-- "Packs and codecs"). Nothing stored changes: addresses, records, packs and heads are as
-- they were; this adds an index derived from `packs.prefixes`.
--
-- Before, a store found a packed game by its address through a map of every pack's
-- `prefixes` built in memory on the first lookup: its cost grew with the store (a 60-run
-- sweep's 6 million games took most of a `replay`), not with the game looked up.
--
-- `pack_members` holds one row per pack and distinct 4-byte address prefix of its members: a
-- lookup by address, or by an address range (a hash prefix of `replay`), reads the packs of
-- the matching rows and confirms each member by its bytes. About 13 bytes a game (the packs
-- themselves hold about 20 in a literature EWN run). Kept by the transaction that stores or
-- deletes the pack. No foreign key to `packs`: deleting a pack would then scan this table
-- for rows naming it (there is no index by pack; the deleting code removes its rows by key).

CREATE TABLE pack_members (
    prefix BLOB    NOT NULL,   -- the first 4 bytes of a member's address
    pack   INTEGER NOT NULL,   -- the pack (packs.id) holding it
    PRIMARY KEY (prefix, pack)
) WITHOUT ROWID;

-- Every existing pack's rows, inserted in key order (a sorted insert fills the b-tree's
-- pages; in pack order they would land at random places). The slots 0 .. max(members) - 1.
WITH RECURSIVE
    most(n) AS MATERIALIZED (SELECT max(members) FROM packs),
    slot(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM slot, most WHERE i + 1 < most.n)
INSERT OR IGNORE INTO pack_members (prefix, pack)
    SELECT substr(p.prefixes, 4 * slot.i + 1, 4), p.id
    FROM packs p CROSS JOIN slot
    WHERE slot.i < p.members
    ORDER BY 1, 2;
