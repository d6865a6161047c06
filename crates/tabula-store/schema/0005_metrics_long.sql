-- Metrics in long form (issue 9): a learner or evaluation declares its metrics once
-- (`metric_defs`: name, description, declaration order); every measured value is a row of
-- `metrics` (run, iteration, name, value). The wide view `metrics_wide` pivots the declared
-- metrics into one column each; the program re-creates it when a new metric is declared, so
-- adding a metric is a change in one place (the learner's declaration).
--
-- This migration moves the metric columns of `evaluations` into `metrics` losslessly (a NULL
-- column, "not measured", becomes no row) and leaves `evaluations` with (run, iteration,
-- record). `value` has NUMERIC affinity: counts read back as integers, as before.

CREATE TABLE metric_defs (
    name        TEXT    PRIMARY KEY,                        -- the metric's name (a column of metrics_wide)
    description TEXT    NOT NULL,                           -- what it measures (docs/metrics.md)
    position    INTEGER NOT NULL                            -- declaration order (column order of metrics_wide)
);

CREATE TABLE metrics (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,                             -- 0 = before training
    name      TEXT    NOT NULL REFERENCES metric_defs(name),
    value     NUMERIC NOT NULL,                             -- integers stay integers
    PRIMARY KEY (run_id, iteration, name)
);

INSERT INTO metric_defs (name, description, position) VALUES
    ('wr_p', '', 1),
    ('wr_p_ci95', '', 2),
    ('wr_p_games', '', 3),
    ('wr_p_wins', '', 4),
    ('wr_p_draws', '', 5),
    ('wr_p_losses', '', 6),
    ('err_p', '', 7),
    ('mae_v', '', 8),
    ('updated_1', '', 9),
    ('updated_4', '', 10),
    ('updated_16', '', 11),
    ('seen', '', 12),
    ('err_p_updated', '', 13),
    ('mae_v_updated', '', 14),
    ('err_p_updated_w', '', 15),
    ('mae_v_updated_w', '', 16);

INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'wr_p', wr_p FROM evaluations WHERE wr_p IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'wr_p_ci95', wr_p_ci95 FROM evaluations WHERE wr_p_ci95 IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'wr_p_games', wr_p_games FROM evaluations WHERE wr_p_games IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'wr_p_wins', wr_p_wins FROM evaluations WHERE wr_p_wins IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'wr_p_draws', wr_p_draws FROM evaluations WHERE wr_p_draws IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'wr_p_losses', wr_p_losses FROM evaluations WHERE wr_p_losses IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'err_p', err_p FROM evaluations WHERE err_p IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'mae_v', mae_v FROM evaluations WHERE mae_v IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'updated_1', updated_1 FROM evaluations WHERE updated_1 IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'updated_4', updated_4 FROM evaluations WHERE updated_4 IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'updated_16', updated_16 FROM evaluations WHERE updated_16 IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'seen', seen FROM evaluations WHERE seen IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'err_p_updated', err_p_updated FROM evaluations WHERE err_p_updated IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'mae_v_updated', mae_v_updated FROM evaluations WHERE mae_v_updated IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'err_p_updated_w', err_p_updated_w FROM evaluations WHERE err_p_updated_w IS NOT NULL;
INSERT INTO metrics (run_id, iteration, name, value)
    SELECT run_id, iteration, 'mae_v_updated_w', mae_v_updated_w FROM evaluations WHERE mae_v_updated_w IS NOT NULL;

DROP VIEW metrics_long;
DROP VIEW metrics_wide;

CREATE TABLE evaluations_v5 (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,                             -- 0 = before training
    hash      BLOB    NOT NULL REFERENCES objects(hash),    -- the learner's evaluation record
    PRIMARY KEY (run_id, iteration)
);
INSERT INTO evaluations_v5 (run_id, iteration, hash)
    SELECT run_id, iteration, hash FROM evaluations;
DROP TABLE evaluations;
ALTER TABLE evaluations_v5 RENAME TO evaluations;

-- As the program writes it for the metrics declared so far (src/store/runs.rs).
CREATE VIEW metrics_wide AS
    SELECT e.run_id, r.name, r.variant, e.iteration,
           max(CASE WHEN m.name = 'wr_p' THEN m.value END) AS wr_p,
           max(CASE WHEN m.name = 'wr_p_ci95' THEN m.value END) AS wr_p_ci95,
           max(CASE WHEN m.name = 'wr_p_games' THEN m.value END) AS wr_p_games,
           max(CASE WHEN m.name = 'wr_p_wins' THEN m.value END) AS wr_p_wins,
           max(CASE WHEN m.name = 'wr_p_draws' THEN m.value END) AS wr_p_draws,
           max(CASE WHEN m.name = 'wr_p_losses' THEN m.value END) AS wr_p_losses,
           max(CASE WHEN m.name = 'err_p' THEN m.value END) AS err_p,
           max(CASE WHEN m.name = 'mae_v' THEN m.value END) AS mae_v,
           max(CASE WHEN m.name = 'updated_1' THEN m.value END) AS updated_1,
           max(CASE WHEN m.name = 'updated_4' THEN m.value END) AS updated_4,
           max(CASE WHEN m.name = 'updated_16' THEN m.value END) AS updated_16,
           max(CASE WHEN m.name = 'seen' THEN m.value END) AS seen,
           max(CASE WHEN m.name = 'err_p_updated' THEN m.value END) AS err_p_updated,
           max(CASE WHEN m.name = 'mae_v_updated' THEN m.value END) AS mae_v_updated,
           max(CASE WHEN m.name = 'err_p_updated_w' THEN m.value END) AS err_p_updated_w,
           max(CASE WHEN m.name = 'mae_v_updated_w' THEN m.value END) AS mae_v_updated_w,
           i.games, i.samples, i.rows_trained, i.beta,
           i.self_play_seconds, i.training_seconds, i.evaluation_seconds, i.store_seconds,
           i.snapshot_bytes, i.games_bytes
    FROM evaluations e
    JOIN runs r ON r.id = e.run_id
    LEFT JOIN metrics m ON m.run_id = e.run_id AND m.iteration = e.iteration
    LEFT JOIN iterations i ON i.run_id = e.run_id AND i.iteration = e.iteration
    GROUP BY e.run_id, e.iteration;

CREATE VIEW metrics_long AS
    SELECT run_id, iteration, metric, value FROM (
              SELECT run_id, iteration, name AS metric, value FROM metrics
    UNION ALL SELECT e.run_id, e.iteration, 'games', i.games
              FROM evaluations e JOIN iterations i USING (run_id, iteration)
    UNION ALL SELECT e.run_id, e.iteration, 'self_play_seconds', i.self_play_seconds
              FROM evaluations e JOIN iterations i USING (run_id, iteration)
    UNION ALL SELECT e.run_id, e.iteration, 'training_seconds', i.training_seconds
              FROM evaluations e JOIN iterations i USING (run_id, iteration)
    UNION ALL SELECT e.run_id, e.iteration, 'evaluation_seconds', i.evaluation_seconds
              FROM evaluations e JOIN iterations i USING (run_id, iteration)
    UNION ALL SELECT e.run_id, e.iteration, 'store_seconds', i.store_seconds
              FROM evaluations e JOIN iterations i USING (run_id, iteration)
    ) WHERE value IS NOT NULL;
