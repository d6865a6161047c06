-- Migration 10: how each object is kept, readable without its bytes. `codec` was added to
-- `objects` after `bytes` (migration 8), and SQLite reaches a column behind a blob by walking
-- the blob's overflow pages: asking whether a 2 MB chunk is kept against references read all
-- of it. This index answers `hash -> (id, codec)` on its own (docs/store.md "Packs and
-- codecs"); reads that want the bytes as well ask for `bytes` before `codec`.

CREATE INDEX objects_codec ON objects(hash, codec);
