-- Migration 19: `run_games` by pack (issue 48; docs/store.md, "What a store holds: du, rm and
-- gc"). Nothing stored changes.
--
-- `run_games.pack` references `packs(id)` and the store runs with foreign keys on: deleting a
-- pack (rm, gc, retention) made SQLite look for the `run_games` rows naming it, and with no
-- index by pack that was a scan of the whole table per pack deleted (`tabula rm` of one run
-- of a 60-run sweep's store, 400 packs: 16 minutes). The index costs about 14 bytes a game.

CREATE INDEX run_games_pack ON run_games(pack);
