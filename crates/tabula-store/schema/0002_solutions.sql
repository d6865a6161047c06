-- Migration 2: solved variants.
--
-- One row per solved variant (the canonical variant name includes every rule parameter, so
-- `cdc:PPPP` and `cdc:PPPP,no_progress=50` are different rows even where their values agree).
-- `hash` addresses the solution manifest object (kind 'solution/v1'), which lists the chunk
-- objects holding the sorted position keys and their values. Columns after `hash` copy facts
-- from the manifest for SQL; `seconds` and `created_at` describe the computation, are not
-- hashed, and may differ between machines.

CREATE TABLE solutions (
    variant        TEXT    PRIMARY KEY,               -- canonical variant name
    hash           BLOB    NOT NULL REFERENCES objects(hash),
    positions      INTEGER NOT NULL,                  -- non-terminal decision positions
    value          REAL    NOT NULL,                  -- start value on the [0, 1] scale
    engine_version TEXT    NOT NULL,                  -- tabula version that solved it
    seconds        REAL    NOT NULL,                  -- wall-clock solve time (not hashed)
    created_at     TEXT    NOT NULL                   -- UTC time of the solve (not hashed)
);

CREATE VIEW solutions_hex AS
    SELECT variant, lower(hex(hash)) AS hash, positions, value, engine_version, seconds,
           created_at
    FROM solutions;
