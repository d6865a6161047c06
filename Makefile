# The two set-up commands of the README do everything on a fresh machine:
#   make run   — runs the main job on the embedded default store (./tabula.db)
#   make test  — format check, clippy with warnings as errors, then every test
CARGO ?= cargo

.PHONY: run test bench build lint chromium gnugo python-venv slurm-check

# The example query `make run` ends with (README: "Asking the store questions").
QUERY = SELECT s.name, s.simulations, m.iteration, round(m.wr_p, 3) AS wr_p, round(m.err_p, 4) AS err_p, round(m.mae_v, 4) AS mae_v, m.updated_1 FROM metrics_wide m JOIN run_settings s USING (run_id) WHERE m.iteration % 5 = 0 ORDER BY m.run_id, m.iteration

build:
	$(CARGO) build --release

run: build
	./target/release/tabula games
	./target/release/tabula play cdc:PPPP --seed 1
	./target/release/tabula solve cdc:PPPP
	./target/release/tabula sql "SELECT variant, positions, round(value, 6) AS value, seconds FROM solutions"
	./target/release/tabula run runs/quick.toml
	./target/release/tabula show quick
	@echo
	@echo 'Ask the store: how did WR_p, ERR_p and MAE_v evolve, with which search settings?'
	@echo 'tabula sql "$(QUERY)"'
	@./target/release/tabula sql "$(QUERY)"

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The browser tests need Chromium and chromedriver: installed by the project's script when
# missing.
chromium:
	@(command -v chromium && command -v chromedriver) >/dev/null 2>&1 || ./scripts/install-chromium.sh || \
		echo '!!! chromium or chromedriver could not be installed: tests/report_browser.rs and tests/serve_browser.rs will SKIP !!!'

# tests/gtp.rs plays whole games against GNU Go (Debian's gnugo, in /usr/games): installed by
# the project's script when missing.
gnugo:
	@(command -v gnugo || test -x /usr/games/gnugo) >/dev/null 2>&1 || ./scripts/install-gnugo.sh || \
		echo '!!! gnugo could not be installed: tests/gtp.rs will SKIP its games against GNU Go !!!'

# The export test's Python checks (ONNX Runtime, NumPy) and the Python package's pytest suite
# (python/tests/pytest.rs) run in a venv the project's script makes (target/py-venv; pinned
# packages from PyPI).
python-venv:
	@./scripts/python-venv.sh || \
		echo '!!! the Python venv could not be made: tests/onnx_export.rs will SKIP its ONNX Runtime check !!!'

# Every target with tests: the libraries' unit tests and the integration tests (`--tests`
# takes the targets whose `test` flag is on, so the Python package's library, `test = false`,
# is not built a second time as an empty test harness). Benches and examples have no tests:
# clippy --all-targets above already checks that they compile, and building them again,
# optimised and linked, cost CI minutes for nothing.
test: lint chromium gnugo python-venv
	$(CARGO) test --workspace --tests --no-fail-fast

# A single-node Slurm cluster on this machine runs a small sweep as a job array, merges the
# shards and checks the heads against an unsharded run (needs root and the Debian mirrors).
slurm-check: build
	./scripts/slurm/check.sh

bench:
	$(CARGO) bench --workspace
