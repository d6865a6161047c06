-- Migration 11: provenance, notes and tags, and every setting as a column (docs/store.md,
-- "Provenance"; docs/experiments.md). Nothing here enters a hash: the tables say which code,
-- where and how, and what people wrote about runs and sweeps.

-- One row per process that worked on a run (`run`, `resume`, `branch`, a sweep's worker):
-- the build, the machine, the command line, and the iterations it took the run from and to.
-- `ended_at` NULL: the process is still working, or was killed.
CREATE TABLE run_sessions (
    run_id           INTEGER NOT NULL REFERENCES runs(id),
    started_at       TEXT    NOT NULL,                    -- UTC, RFC 3339
    host             TEXT    NOT NULL,
    pid              INTEGER NOT NULL,
    engine_version   TEXT    NOT NULL,                    -- the package version
    engine_commit    TEXT    NOT NULL,                    -- git commit of the build ('unknown' outside a checkout)
    engine_tree      TEXT    NOT NULL                     -- the build's tree: 'clean', 'dirty' or 'unknown'
                     CHECK (engine_tree IN ('clean', 'dirty', 'unknown')),
    build_profile    TEXT    NOT NULL,                    -- cargo profile: 'release', 'debug'
    command_line     TEXT    NOT NULL,                    -- the process's arguments, shell-quoted
    threads          INTEGER NOT NULL,                    -- worker threads
    iterations_from  INTEGER NOT NULL,                    -- iterations done when it began
    ended_at         TEXT,                                -- UTC, RFC 3339 (NULL: running or killed)
    iterations_to    INTEGER,                             -- iterations done when it ended
    outcome          TEXT                                 -- 'done', 'stopped' or 'failed' (NULL: running or killed)
                     CHECK (outcome IN ('done', 'stopped', 'failed')),
    PRIMARY KEY (run_id, started_at, host, pid)
);

-- A note per run or sweep (free text, replaced by `tabula note`), and tags.
CREATE TABLE run_notes (
    run_id     INTEGER PRIMARY KEY REFERENCES runs(id),
    note       TEXT    NOT NULL,
    updated_at TEXT    NOT NULL
);

CREATE TABLE run_tags (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    tag    TEXT    NOT NULL,
    PRIMARY KEY (run_id, tag)
);

-- Sweeps by name (a sweep's record changes as it grows; its name does not).
CREATE TABLE sweep_notes (
    sweep      TEXT PRIMARY KEY,
    note       TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE sweep_tags (
    sweep TEXT NOT NULL,
    tag   TEXT NOT NULL,
    PRIMARY KEY (sweep, tag)
);

-- Each run's provenance in one row: its first session's build, host and command line, its
-- latest end, how many processes worked on it and with how many distinct commits, its note
-- and tags (comma-separated, sorted).
CREATE VIEW run_provenance AS
    SELECT r.id AS run_id, r.name, r.status, r.created_at,
           f.engine_version, f.engine_commit, f.engine_tree, f.build_profile, f.host,
           f.command_line,
           (SELECT max(ended_at) FROM run_sessions s WHERE s.run_id = r.id) AS ended_at,
           (SELECT count(*) FROM run_sessions s WHERE s.run_id = r.id) AS sessions,
           (SELECT count(DISTINCT engine_commit) FROM run_sessions s WHERE s.run_id = r.id)
               AS commits,
           n.note,
           (SELECT group_concat(tag, ',') FROM (SELECT tag FROM run_tags t
                WHERE t.run_id = r.id ORDER BY tag)) AS tags
    FROM runs r
    LEFT JOIN run_sessions f ON f.run_id = r.id AND f.started_at =
        (SELECT min(started_at) FROM run_sessions s WHERE s.run_id = r.id)
    LEFT JOIN run_notes n ON n.run_id = r.id;

-- Each sweep's provenance, from its runs' sessions: first start, last end, the commits and
-- hosts that worked on it, its note and tags.
CREATE VIEW sweep_provenance AS
    SELECT sw.name AS sweep,
           (SELECT min(s.started_at) FROM run_sessions s JOIN sweep_members m
                ON m.run_id = s.run_id JOIN sweeps x ON x.hash = m.sweep
                WHERE x.name = sw.name) AS started_at,
           (SELECT max(s.ended_at) FROM run_sessions s JOIN sweep_members m
                ON m.run_id = s.run_id JOIN sweeps x ON x.hash = m.sweep
                WHERE x.name = sw.name) AS ended_at,
           (SELECT group_concat(c, ',') FROM (SELECT DISTINCT s.engine_commit AS c
                FROM run_sessions s JOIN sweep_members m ON m.run_id = s.run_id
                JOIN sweeps x ON x.hash = m.sweep WHERE x.name = sw.name ORDER BY c))
               AS engine_commits,
           (SELECT group_concat(h, ',') FROM (SELECT DISTINCT s.host AS h
                FROM run_sessions s JOIN sweep_members m ON m.run_id = s.run_id
                JOIN sweeps x ON x.hash = m.sweep WHERE x.name = sw.name ORDER BY h)) AS hosts,
           n.note,
           (SELECT group_concat(tag, ',') FROM (SELECT tag FROM sweep_tags t
                WHERE t.sweep = sw.name ORDER BY tag)) AS tags
    FROM (SELECT DISTINCT name FROM sweeps) sw
    LEFT JOIN sweep_notes n ON n.sweep = sw.name;

-- Every setting of a run's settings record as a column (the settings record is the truth;
-- this flattens its JSON form). Values as written: numbers as numbers, names as text,
-- booleans 'true' / 'false', an absent option 'none', lists and tables as JSON text. A key
-- the record lacks (it predates the setting) shows the value such runs mean: the legacy
-- search conventions (`count_expansion_visit` and `expansion_is_simulation` false,
-- `tie_break` lowest), the tabular learner, the game's start, the separate arithmetic. The
-- `network_*` columns are 'none' for runs of other learners. Replaces migration 3's view,
-- whose columns keep their names.
DROP VIEW run_settings;

CREATE VIEW run_settings AS
    SELECT r.id AS run_id, r.name, r.variant, r.seed, r.iterations_planned AS iterations,
        CASE json_type(r.settings_json, '$.learner.kind') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.kind' WHEN 'array' THEN r.settings_json -> '$.learner.kind' ELSE coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') END
            AS learner,
        CASE json_type(r.settings_json, '$.games_per_iteration') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.games_per_iteration' WHEN 'array' THEN r.settings_json -> '$.games_per_iteration' ELSE coalesce(r.settings_json ->> '$.games_per_iteration', 'none') END
            AS games_per_iteration,
        CASE json_type(r.settings_json, '$.window') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.window' WHEN 'array' THEN r.settings_json -> '$.window' ELSE coalesce(r.settings_json ->> '$.window', 'none') END
            AS window,
        CASE json_type(r.settings_json, '$.learning_rate') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learning_rate' WHEN 'array' THEN r.settings_json -> '$.learning_rate' ELSE coalesce(r.settings_json ->> '$.learning_rate', 'none') END
            AS learning_rate,
        CASE json_type(r.settings_json, '$.init_std') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.init_std' WHEN 'array' THEN r.settings_json -> '$.init_std' ELSE coalesce(r.settings_json ->> '$.init_std', 'none') END
            AS init_std,
        CASE json_type(r.settings_json, '$.checkpoint_every') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.checkpoint_every' WHEN 'array' THEN r.settings_json -> '$.checkpoint_every' ELSE coalesce(r.settings_json ->> '$.checkpoint_every', 'none') END
            AS checkpoint_every,
        CASE json_type(r.settings_json, '$.search.simulations') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.simulations' WHEN 'array' THEN r.settings_json -> '$.search.simulations' ELSE coalesce(r.settings_json ->> '$.search.simulations', 'none') END
            AS simulations,
        CASE json_type(r.settings_json, '$.search.c_puct') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.c_puct' WHEN 'array' THEN r.settings_json -> '$.search.c_puct' ELSE coalesce(r.settings_json ->> '$.search.c_puct', 'none') END
            AS c_puct,
        CASE json_type(r.settings_json, '$.search.dirichlet_alpha') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.dirichlet_alpha' WHEN 'array' THEN r.settings_json -> '$.search.dirichlet_alpha' ELSE coalesce(r.settings_json ->> '$.search.dirichlet_alpha', 'none') END
            AS dirichlet_alpha,
        CASE json_type(r.settings_json, '$.search.dirichlet_epsilon') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.dirichlet_epsilon' WHEN 'array' THEN r.settings_json -> '$.search.dirichlet_epsilon' ELSE coalesce(r.settings_json ->> '$.search.dirichlet_epsilon', 'none') END
            AS dirichlet_epsilon,
        CASE json_type(r.settings_json, '$.search.temperature') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.temperature' WHEN 'array' THEN r.settings_json -> '$.search.temperature' ELSE coalesce(r.settings_json ->> '$.search.temperature', 'none') END
            AS temperature,
        CASE json_type(r.settings_json, '$.search.sample_moves') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.sample_moves' WHEN 'array' THEN r.settings_json -> '$.search.sample_moves' ELSE coalesce(r.settings_json ->> '$.search.sample_moves', 'none') END
            AS sample_moves,
        CASE json_type(r.settings_json, '$.search.init_q') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.init_q' WHEN 'array' THEN r.settings_json -> '$.search.init_q' ELSE coalesce(r.settings_json ->> '$.search.init_q', 'none') END
            AS init_q,
        CASE json_type(r.settings_json, '$.search.playout_cap') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.playout_cap' WHEN 'array' THEN r.settings_json -> '$.search.playout_cap' ELSE coalesce(r.settings_json ->> '$.search.playout_cap', 'none') END
            AS playout_cap,
        CASE json_type(r.settings_json, '$.search.playout_cap.p_full') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.playout_cap.p_full' WHEN 'array' THEN r.settings_json -> '$.search.playout_cap.p_full' ELSE coalesce(r.settings_json ->> '$.search.playout_cap.p_full', 'none') END
            AS playout_cap_p_full,
        CASE json_type(r.settings_json, '$.search.playout_cap.n_fast') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.playout_cap.n_fast' WHEN 'array' THEN r.settings_json -> '$.search.playout_cap.n_fast' ELSE coalesce(r.settings_json ->> '$.search.playout_cap.n_fast', 'none') END
            AS playout_cap_n_fast,
        CASE json_type(r.settings_json, '$.search.forced_playouts') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.forced_playouts' WHEN 'array' THEN r.settings_json -> '$.search.forced_playouts' ELSE coalesce(r.settings_json ->> '$.search.forced_playouts', 'none') END
            AS forced_playouts,
        CASE json_type(r.settings_json, '$.search.forced_playouts.k') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.forced_playouts.k' WHEN 'array' THEN r.settings_json -> '$.search.forced_playouts.k' ELSE coalesce(r.settings_json ->> '$.search.forced_playouts.k', 'none') END
            AS forced_playouts_k,
        CASE json_type(r.settings_json, '$.search.policy_target_pruning') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.policy_target_pruning' WHEN 'array' THEN r.settings_json -> '$.search.policy_target_pruning' ELSE coalesce(r.settings_json ->> '$.search.policy_target_pruning', 'none') END
            AS policy_target_pruning,
        CASE json_type(r.settings_json, '$.search.count_expansion_visit') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.count_expansion_visit' WHEN 'array' THEN r.settings_json -> '$.search.count_expansion_visit' ELSE coalesce(r.settings_json ->> '$.search.count_expansion_visit', 'false') END
            AS count_expansion_visit,
        CASE json_type(r.settings_json, '$.search.expansion_is_simulation') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.expansion_is_simulation' WHEN 'array' THEN r.settings_json -> '$.search.expansion_is_simulation' ELSE coalesce(r.settings_json ->> '$.search.expansion_is_simulation', 'false') END
            AS expansion_is_simulation,
        CASE json_type(r.settings_json, '$.search.tie_break') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.search.tie_break' WHEN 'array' THEN r.settings_json -> '$.search.tie_break' ELSE coalesce(r.settings_json ->> '$.search.tie_break', 'lowest') END
            AS tie_break,
        CASE json_type(r.settings_json, '$.eval.games') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.eval.games' WHEN 'array' THEN r.settings_json -> '$.eval.games' ELSE coalesce(r.settings_json ->> '$.eval.games', 'none') END
            AS eval_games,
        CASE json_type(r.settings_json, '$.eval.wr_p') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.eval.wr_p' WHEN 'array' THEN r.settings_json -> '$.eval.wr_p' ELSE coalesce(r.settings_json ->> '$.eval.wr_p', 'none') END
            AS eval_wr_p,
        CASE json_type(r.settings_json, '$.eval.errors') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.eval.errors' WHEN 'array' THEN r.settings_json -> '$.eval.errors' ELSE coalesce(r.settings_json ->> '$.eval.errors', 'none') END
            AS eval_errors,
        CASE json_type(r.settings_json, '$.start.policy') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.start.policy' WHEN 'array' THEN r.settings_json -> '$.start.policy' ELSE coalesce(r.settings_json ->> '$.start.policy', 'initial') END
            AS start_policy,
        CASE json_type(r.settings_json, '$.start.archive') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.start.archive' WHEN 'array' THEN r.settings_json -> '$.start.archive' ELSE coalesce(r.settings_json ->> '$.start.archive', 'visited-expanding') END
            AS start_archive,
        CASE json_type(r.settings_json, '$.start.archive_prob') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.start.archive_prob' WHEN 'array' THEN r.settings_json -> '$.start.archive_prob' ELSE coalesce(r.settings_json ->> '$.start.archive_prob', 0.9) END
            AS start_archive_prob,
        CASE json_type(r.settings_json, '$.start.archive_size') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.start.archive_size' WHEN 'array' THEN r.settings_json -> '$.start.archive_size' ELSE coalesce(r.settings_json ->> '$.start.archive_size', 1000000) END
            AS start_archive_size,
        CASE json_type(r.settings_json, '$.budget.moves') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.budget.moves' WHEN 'array' THEN r.settings_json -> '$.budget.moves' ELSE coalesce(r.settings_json ->> '$.budget.moves', 'none') END
            AS budget_moves,
        CASE json_type(r.settings_json, '$.budget.simulations') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.budget.simulations' WHEN 'array' THEN r.settings_json -> '$.budget.simulations' ELSE coalesce(r.settings_json ->> '$.budget.simulations', 'none') END
            AS budget_simulations,
        CASE json_type(r.settings_json, '$.budget.seconds') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.budget.seconds' WHEN 'array' THEN r.settings_json -> '$.budget.seconds' ELSE coalesce(r.settings_json ->> '$.budget.seconds', 'none') END
            AS budget_seconds,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.arch') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.arch' WHEN 'array' THEN r.settings_json -> '$.learner.network.arch' ELSE coalesce(r.settings_json ->> '$.learner.network.arch', 'mlp') END ELSE 'none' END
            AS network_arch,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.hidden') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.hidden' WHEN 'array' THEN r.settings_json -> '$.learner.network.hidden' ELSE coalesce(r.settings_json ->> '$.learner.network.hidden', '[64,64]') END ELSE 'none' END
            AS network_hidden,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.blocks') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.blocks' WHEN 'array' THEN r.settings_json -> '$.learner.network.blocks' ELSE coalesce(r.settings_json ->> '$.learner.network.blocks', 2) END ELSE 'none' END
            AS network_blocks,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.channels') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.channels' WHEN 'array' THEN r.settings_json -> '$.learner.network.channels' ELSE coalesce(r.settings_json ->> '$.learner.network.channels', 32) END ELSE 'none' END
            AS network_channels,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.bottleneck') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.bottleneck' WHEN 'array' THEN r.settings_json -> '$.learner.network.bottleneck' ELSE coalesce(r.settings_json ->> '$.learner.network.bottleneck', 0) END ELSE 'none' END
            AS network_bottleneck,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.batch_norm') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.batch_norm' WHEN 'array' THEN r.settings_json -> '$.learner.network.batch_norm' ELSE coalesce(r.settings_json ->> '$.learner.network.batch_norm', 'false') END ELSE 'none' END
            AS network_batch_norm,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.head') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.head' WHEN 'array' THEN r.settings_json -> '$.learner.network.head' ELSE coalesce(r.settings_json ->> '$.learner.network.head', 'dense') END ELSE 'none' END
            AS network_head,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.policy_channels') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.policy_channels' WHEN 'array' THEN r.settings_json -> '$.learner.network.policy_channels' ELSE coalesce(r.settings_json ->> '$.learner.network.policy_channels', CASE WHEN coalesce(r.settings_json ->> '$.learner.network.head', 'dense') = 'conv' THEN 2 ELSE 'none' END) END ELSE 'none' END
            AS network_policy_channels,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.value_channels') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.value_channels' WHEN 'array' THEN r.settings_json -> '$.learner.network.value_channels' ELSE coalesce(r.settings_json ->> '$.learner.network.value_channels', CASE WHEN coalesce(r.settings_json ->> '$.learner.network.head', 'dense') = 'conv' THEN 1 ELSE 'none' END) END ELSE 'none' END
            AS network_value_channels,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.value_hidden') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.value_hidden' WHEN 'array' THEN r.settings_json -> '$.learner.network.value_hidden' ELSE coalesce(r.settings_json ->> '$.learner.network.value_hidden', CASE WHEN coalesce(r.settings_json ->> '$.learner.network.head', 'dense') = 'conv' THEN 256 ELSE 'none' END) END ELSE 'none' END
            AS network_value_hidden,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.arithmetic') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.arithmetic' WHEN 'array' THEN r.settings_json -> '$.learner.network.arithmetic' ELSE coalesce(r.settings_json ->> '$.learner.network.arithmetic', 'separate') END ELSE 'none' END
            AS network_arithmetic,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.value_head') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.value_head' WHEN 'array' THEN r.settings_json -> '$.learner.network.value_head' ELSE coalesce(r.settings_json ->> '$.learner.network.value_head', 'tanh') END ELSE 'none' END
            AS network_value_head,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.optimizer') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.optimizer' WHEN 'array' THEN r.settings_json -> '$.learner.network.optimizer' ELSE coalesce(r.settings_json ->> '$.learner.network.optimizer', 'sgd') END ELSE 'none' END
            AS network_optimizer,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.lr') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.lr' WHEN 'array' THEN r.settings_json -> '$.learner.network.lr' ELSE coalesce(r.settings_json ->> '$.learner.network.lr', '[[1,0.1]]') END ELSE 'none' END
            AS network_lr,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.momentum') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.momentum' WHEN 'array' THEN r.settings_json -> '$.learner.network.momentum' ELSE coalesce(r.settings_json ->> '$.learner.network.momentum', 0.9) END ELSE 'none' END
            AS network_momentum,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.nesterov') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.nesterov' WHEN 'array' THEN r.settings_json -> '$.learner.network.nesterov' ELSE coalesce(r.settings_json ->> '$.learner.network.nesterov', 'true') END ELSE 'none' END
            AS network_nesterov,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.weight_decay') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.weight_decay' WHEN 'array' THEN r.settings_json -> '$.learner.network.weight_decay' ELSE coalesce(r.settings_json ->> '$.learner.network.weight_decay', 0.0001) END ELSE 'none' END
            AS network_weight_decay,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.adam_beta1') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.adam_beta1' WHEN 'array' THEN r.settings_json -> '$.learner.network.adam_beta1' ELSE coalesce(r.settings_json ->> '$.learner.network.adam_beta1', 0.9) END ELSE 'none' END
            AS network_adam_beta1,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.adam_beta2') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.adam_beta2' WHEN 'array' THEN r.settings_json -> '$.learner.network.adam_beta2' ELSE coalesce(r.settings_json ->> '$.learner.network.adam_beta2', 0.999) END ELSE 'none' END
            AS network_adam_beta2,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.adam_eps') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.adam_eps' WHEN 'array' THEN r.settings_json -> '$.learner.network.adam_eps' ELSE coalesce(r.settings_json ->> '$.learner.network.adam_eps', 1e-08) END ELSE 'none' END
            AS network_adam_eps,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.replay_games') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.replay_games' WHEN 'array' THEN r.settings_json -> '$.learner.network.replay_games' ELSE coalesce(r.settings_json ->> '$.learner.network.replay_games', 'none') END ELSE 'none' END
            AS network_replay_games,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.batch_size') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.batch_size' WHEN 'array' THEN r.settings_json -> '$.learner.network.batch_size' ELSE coalesce(r.settings_json ->> '$.learner.network.batch_size', 256) END ELSE 'none' END
            AS network_batch_size,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.train_steps') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.train_steps' WHEN 'array' THEN r.settings_json -> '$.learner.network.train_steps' ELSE coalesce(r.settings_json ->> '$.learner.network.train_steps', 100) END ELSE 'none' END
            AS network_train_steps,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.reference.solver_games') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.reference.solver_games' WHEN 'array' THEN r.settings_json -> '$.learner.network.reference.solver_games' ELSE coalesce(r.settings_json ->> '$.learner.network.reference.solver_games', 20) END ELSE 'none' END
            AS network_reference_solver_games,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.reference.solver_multipliers') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.reference.solver_multipliers' WHEN 'array' THEN r.settings_json -> '$.learner.network.reference.solver_multipliers' ELSE coalesce(r.settings_json ->> '$.learner.network.reference.solver_multipliers', '[1,10,100]') END ELSE 'none' END
            AS network_reference_solver_multipliers,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.reference.c4_sets') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.reference.c4_sets' WHEN 'array' THEN r.settings_json -> '$.learner.network.reference.c4_sets' ELSE coalesce(r.settings_json ->> '$.learner.network.reference.c4_sets', '["L3_R1","L2_R1"]') END ELSE 'none' END
            AS network_reference_c4_sets,
        CASE WHEN coalesce(r.settings_json ->> '$.learner.kind', 'tabular-az') = 'network' THEN CASE json_type(r.settings_json, '$.learner.network.reference.c4_positions') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'none' WHEN 'object' THEN r.settings_json -> '$.learner.network.reference.c4_positions' WHEN 'array' THEN r.settings_json -> '$.learner.network.reference.c4_positions' ELSE coalesce(r.settings_json ->> '$.learner.network.reference.c4_positions', 1000) END ELSE 'none' END
            AS network_reference_c4_positions
    FROM runs r;
