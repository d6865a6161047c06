# The two set-up commands of the README do everything on a fresh machine:
#   make run   — runs the main job on the embedded default store (./tabula.db)
#   make test  — format check, clippy with warnings as errors, then every test
CARGO ?= cargo

.PHONY: run test bench build lint

build:
	$(CARGO) build --release

run: build
	./target/release/tabula games
	./target/release/tabula play cdc:PPPP --seed 1
	./target/release/tabula solve cdc:PPPP
	./target/release/tabula sql "SELECT variant, positions, round(value, 6) AS value, seconds FROM solutions"

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

test: lint
	$(CARGO) test --all-targets

bench:
	$(CARGO) bench
