-- Migration 9: objects stored against other objects (codec 4; docs/store.md "Packs and
-- codecs", "Checkpoints against the previous one"). No table changes: a kept checkpoint's
-- chunks may now be kept as a zstd frame whose prefix is the previous kept checkpoint's
-- chunks, which builds before this one cannot decode. The version bump makes them refuse
-- such a store as newer than they are instead of calling its objects damaged.
--
-- `object_forms`: how the objects are kept, per codec: how many, their record bytes and the
-- bytes stored for them.

CREATE VIEW object_forms AS
    SELECT codec,
           CASE codec
               WHEN 0 THEN 'plain'
               WHEN 1 THEN 'zstd'
               WHEN 2 THEN 'elided'
               WHEN 3 THEN 'shuffled zstd'
               WHEN 4 THEN 'zstd against references'
               ELSE 'unknown'
           END AS form,
           count(*) AS objects,
           sum(size) AS bytes,
           sum(length(bytes)) AS stored
    FROM objects
    GROUP BY codec;
