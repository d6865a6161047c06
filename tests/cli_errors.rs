//! Bad input at the command line, as a table: (arguments, expected exit code, a fragment the
//! error must contain). Every row runs the real binary against fixtures made once, under a
//! deadline (a refused FIFO must not hang), and afterwards the fixture directory must be
//! exactly as it was: no file created, removed or changed (this is how read-only-ness is
//! tested, since tests may run as root, whom file permissions do not stop).
//!
//! To cover a new command, add rows to [`CASES`]; placeholders in `{braces}` name fixtures
//! (see [`Fixtures::expand`]). Rows that must write (a successful `run`) belong elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One row: `tabula ARGS...` exits with `code` and its stderr contains `stderr` (for code 0,
/// stderr is not checked when the fragment is empty).
struct Case {
    args: &'static [&'static str],
    code: i32,
    stderr: &'static str,
}

const fn case(args: &'static [&'static str], code: i32, stderr: &'static str) -> Case {
    Case { args, code, stderr }
}

/// A query that never ends on its own.
const ENDLESS: &str = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) ";

#[rustfmt::skip]
const CASES: &[Case] = &[
    // --- store files: only a SQLite file that is a tabula store is opened -----------------
    case(&["--db", "{dir}", "ls"], 1, "is a directory, not a store file"),
    case(&["--db", "{fifo}", "ls"], 1, "is a FIFO (named pipe), not a store file"),
    case(&["--db", "{fifo}", "sql", "SELECT 1"], 1, "is a FIFO"),
    case(&["--db", "{fifo}", "solve", "cdc:PPPP"], 1, "is a FIFO"),
    case(&["--db", "/dev/null", "fsck"], 1, "is a device, not a store file"),
    case(&["--db", "/dev/null", "solve", "cdc:PPPP"], 1, "is a device"),
    case(&["--db", "{missing}", "ls"], 1, "no store at"),
    case(&["--db", "{missing}", "sql", "SELECT 1"], 1, "no store at"),
    case(&["--db", "{nodir}", "solve", "cdc:PPPP"], 1, "does not exist (create it first)"),
    case(&["--db", "{text}", "show", "1"], 1, "is not a SQLite database"),
    case(&["--db", "{text}", "solve", "cdc:PPPP"], 1, "is not a SQLite database"),
    case(&["--db", "{empty}", "ls"], 1, "the file is empty"),
    case(&["--db", "{foreign}", "ls"], 1, "no tabula schema version"),
    case(&["--db", "{foreign}", "solve", "cdc:PPPP"], 1, "no tabula schema version"),
    case(&["--db", "{blank}", "fsck"], 1, "an empty SQLite database"),
    // --- fsck checks the schema the migrations create -------------------------------------
    case(&["--db", "{dropped}", "fsck"], 1, "table `solutions`: missing (migration 0002"),
    case(&["--db", "{dropped}", "fsck", "--json"], 1, "schema is not the one"),
    case(&["--db", "{db}", "fsck"], 0, ""),
    case(&["--db", "{db}", "migrate"], 0, ""),
    // --- merge opens every source by the same read-only path -----------------------------
    case(&["merge", "{fifo}", "--into", "{dir}/m.db"], 1, "is a FIFO (named pipe), not a store file"),
    case(&["merge", "{empty}", "--into", "{dir}/m.db"], 1, "the file is empty"),
    case(&["merge", "{foreign}", "--into", "{dir}/m.db"], 1, "no tabula schema version"),
    case(&["merge", "{dir}", "--into", "{dir}/m.db"], 1, "is a directory, not a store file"),
    case(&["--db", "{missing}", "migrate"], 1, "no store at"),
    case(&["--db", "{empty}", "migrate"], 1, "the file is empty"),
    case(&["--db", "{foreign}", "migrate"], 1, "no tabula schema version"),
    // --- read-only commands on a good store write nothing ---------------------------------
    case(&["--db", "{db}", "ls"], 0, ""),
    case(&["--db", "{db}", "show", "tiny"], 0, ""),
    case(&["--db", "{db}", "checkout", "tiny@2"], 0, ""),
    case(&["--db", "{db}", "verify", "tiny"], 0, ""),
    case(&["--db", "{db}", "replay", "{game}"], 0, ""),
    case(&["--db", "{db}", "sql", "SELECT count(*) FROM run_games"], 0, ""),
    // --- the SQL console only reads ---------------------------------------------------------
    case(&["--db", "{db}", "sql", ""], 1, "empty query"),
    case(&["--db", "{db}", "sql", "  ;  "], 1, "empty query"),
    case(&["--db", "{db}", "sql", "/* nothing */"], 1, "empty query"),
    case(&["--db", "{db}", "sql", "ATTACH '{dir}/other.db' AS o"], 1, "`ATTACH` is not allowed"),
    case(&["--db", "{db}", "sql", "VACUUM INTO '{dir}/copy.db'"], 1, "`VACUUM` is not allowed"),
    case(&["--db", "{db}", "sql", "VACUUM"], 1, "`VACUUM` is not allowed"),
    case(&["--db", "{db}", "sql", "PRAGMA journal_mode = DELETE"], 1, "`PRAGMA journal_mode = DELETE` is not allowed"),
    case(&["--db", "{db}", "sql", "PRAGMA user_version = 7"], 1, "`PRAGMA user_version = 7` is not allowed"),
    case(&["--db", "{db}", "sql", "PRAGMA query_only = 0"], 1, "`PRAGMA query_only = 0` is not allowed"),
    case(&["--db", "{db}", "sql", "PRAGMA wal_checkpoint(TRUNCATE)"], 1, "`PRAGMA wal_checkpoint` is not allowed"),
    case(&["--db", "{db}", "sql", "PRAGMA writable_schema = 1"], 1, "is not allowed"),
    case(&["--db", "{db}", "sql", "DROP TABLE solutions"], 1, "`DROP` is not allowed"),
    case(&["--db", "{db}", "sql", "DELETE FROM objects"], 1, "`DELETE from objects` is not allowed"),
    case(&["--db", "{db}", "sql", "UPDATE runs SET name = 'x'"], 1, "`UPDATE of runs` is not allowed"),
    case(&["--db", "{db}", "sql", "CREATE TEMP TABLE t (x)"], 1, "`CREATE` is not allowed"),
    case(&["--db", "{db}", "sql", "BEGIN"], 1, "`a transaction statement` is not allowed"),
    case(&["--db", "{db}", "sql", "SELECT 1; SELECT 2"], 1, "one statement at a time"),
    case(&["--db", "{db}", "sql", "SELEC 1"], 1, "syntax error"),
    case(&["--db", "{db}", "sql", "SELECT * FROM nowhere"], 1, "no such table: nowhere"),
    case(&["--db", "{db}", "sql", "PRAGMA table_info(runs)"], 0, ""),
    case(&["--db", "{db}", "sql", "SELECT name FROM pragma_table_info('runs')"], 0, ""),
    case(&["--db", "{db}", "sql", "PRAGMA integrity_check"], 0, ""),
    // --- and stops a runaway query ----------------------------------------------------------
    case(&["--db", "{db}", "sql", "{endless} SELECT x FROM c", "--max-rows", "5"], 1, "more than 5 rows"),
    case(&["--db", "{db}", "sql", "{endless} SELECT x FROM c", "--max-rows", "5", "--json"], 1, "more than 5 rows"),
    case(&["--db", "{db}", "sql", "{endless} SELECT count(*) FROM c", "--timeout", "0.3"], 1, "stopped after 0.3 s of work"),
    case(&["--db", "{db}", "sql", "SELECT 1", "--max-rows", "many"], 2, "invalid value 'many'"),
    case(&["--db", "{db}", "sql", "SELECT 1", "--timeout=-1"], 2, "not a number of seconds >= 0"),
    case(&["--db", "{db}", "sql", "SELECT 1", "--timeout", "inf"], 2, "not a number of seconds"),
    // --- sizes that cannot run are refused before any work, naming the limit ----------------
    case(&["--db", "{db}", "run", "{dir}/huge-m.toml"], 1, "`games_per_iteration` = 4294967295 is out of range; allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "run", "{dir}/huge-sims.toml"], 1, "`search.simulations` = 4294967295 is out of range; allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "run", "{dir}/huge-eval.toml"], 1, "`eval.games` = 4294967295 is out of range; allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "eval.games=4294967295"], 1, "`eval.games` = 4294967295 is out of range"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--threads", "100000"], 1, "--threads 100000 is out of range; allowed: 1 to 256"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "learning_rate=[[1,0.5,7]]"], 1, "`learning_rate[0]` = [1, 0.5, 7] is out of range; allowed: a list of 2 items"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "games_per_iteration=4294967295"], 1, "allowed: an integer from 1 to 1000000"),
    // --- a self-play budget: exactly one, instead of M (docs/budgets.md) ------------------
    case(&["--db", "{db}", "run", "{dir}/two-budgets.toml"], 1, "`budget` = {moves = 5, seconds = 2} is out of range; allowed: exactly one of `moves`, `simulations` or `seconds`"),
    case(&["--db", "{db}", "run", "{dir}/m-and-budget.toml"], 1, "`games_per_iteration` = 20 is out of range; allowed: absent when [budget] is given"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "budget.moves=0"], 1, "`budget.moves` = 0 is out of range; allowed: an integer from 1 to"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "budget.seconds=-1.0"], 1, "`budget.seconds` = -1 is out of range"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "budget.moves=5", "--set", "budget.seconds=1.0"], 1, "are alternatives"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "budget.simulations=0"], 1, "`budget.simulations` = 0 is out of range"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "budget.moves=5", "--set", "games_per_iteration=3"], 1, "are alternatives"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "search.simulations=4294967295"], 1, "allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "resume", "tiny", "--threads", "100000"], 1, "--threads 100000 is out of range"),
    case(&["--db", "{db}", "keep", "tiny", "sometimes"], 2, "store.keep_games = \"sometimes\" is not one; allowed: \"all\" (every game)"),
    case(&["--db", "{db}", "keep", "no-such-run", "none"], 1, "no run `no-such-run` in the store"),
    case(&["--db", "{db}", "verify", "tiny", "--threads", "100000"], 1, "--threads 100000 is out of range"),
    case(&["match", "ewn:3x3x2", "--a", "random", "--b", "random", "--games", "4294967295"], 1, "--games 4294967295 is out of range; allowed: 1 to 1000000"),
    case(&["match", "ewn:3x3x2", "--a", "random", "--b", "random", "--threads", "100000"], 1, "--threads 100000 is out of range"),
    // --- names are unique; an empty or numeric name is refused ---------------------------
    // (the same spec again is no conflict: `make run` twice; other settings under the name are)
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "window=1"], 1, "a run named `tiny` is already in the store (run 1, done"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "window=1"], 1, "`tabula resume 1`, or give the new run another name"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "name=\"\""], 1, "`name` = \"\" is out of range"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "name=\"12\""], 1, "not a number (numbers name runs by id)"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "name="], 1, "--set name=: run spec: `name` = \"\" is out of range"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "name=tiny2"], 1, "a run named `tiny2` is already in the store (run 2"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "0", "--set", "name=tiny2"], 1, "a run named `tiny2` is already in the store (run 2"),
    // --- one prefix rule: 4+ hex digits; an ambiguous one lists the candidates --------------
    // (runs 1 `tiny` and 2 `tiny2` ran the same spec: one run hash, one head)
    case(&["--db", "{db}", "show", "{head4}"], 1, "`{head4}` names more than one run:\n  run 1  tiny  done  run record"),
    case(&["--db", "{db}", "show", "{head4}"], 1, "run 2  tiny2  done"),
    case(&["--db", "{db}", "show", "{head4}"], 1, "give more hex digits of the hash, or the run's id or name"),
    case(&["--db", "{db}", "show", "{run4}"], 1, "names more than one run"),
    case(&["--db", "{db}", "checkout", "{head4}@1"], 1, "names more than one run"),
    case(&["--db", "{db}", "verify", "{head4}"], 1, "names more than one run"),
    case(&["--db", "{db}", "resume", "{head4}"], 1, "names more than one run"),
    case(&["--db", "{db}", "branch", "{head4}", "--at", "1"], 1, "names more than one run"),
    case(&["--db", "{db}", "match", "ewn:3x3x2", "--a", "model:{head4}@1", "--b", "random", "--games", "2"], 1, "names more than one run"),
    case(&["--db", "{db}", "show", "{head3}"], 1, "at least 4 hex digits of its run hash or head"),
    case(&["--db", "{db}", "show", "tiny"], 0, ""),
    case(&["--db", "{db}", "show", "2"], 0, ""),
    case(&["--db", "{db}", "checkout", "tiny2@1"], 0, ""),
    case(&["--db", "{db}", "replay", "{game4}"], 0, ""),
    case(&["--db", "{db}", "replay", "{GAME6}"], 0, ""),
    case(&["--db", "{db}", "replay", "{game3}"], 1, "no game record `{game3}` in the store (give at least 4 hex digits"),
    case(&["--db", "{amb}", "replay", "{game4}"], 1, "`{game4}` names more than one game:\n  "),
    case(&["--db", "{amb}", "replay", "{game4}"], 1, "  {game}  (run 1, iteration"),
    case(&["--db", "{db}", "plot", "{game4}"], 1, "give its name or at least 4 hex digits"),
    // --- every count has a range (docs/limits.md) --------------------------------------------
    case(&["match", "ewn:3x3x2", "--a", "mcts:sims=4294967295", "--b", "random"], 1, "sims=4294967295 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["gtp", "random", "--variant", "c4:7x6"], 1, "`tabula gtp` plays Go: `c4:7x6` is not a Go variant (give go:NxN[,komi=K])"),
    case(&["gtp", "random", "--variant", "go:4x4"], 1, "go:4x4"),
    case(&["gtp", "gtp:"], 1, "give gtp:COMMAND, the engine's command line"),
    case(&["--db", "{db}", "gtp", "model:tiny@99"], 1, "tiny"),
    case(&["match", "ewn:3x3x2", "--a", "gtp:gnugo --mode gtp", "--b", "random"], 1, "player `gtp:gnugo --mode gtp` cannot play ewn:3x3x2: a GTP engine plays Go only"),
    case(&["match", "ewn:3x3x2", "--a", "mcts:sims=8,rollouts=4294967295", "--b", "random"], 1, "rollouts=4294967295 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["match", "ewn:3x3x2", "--a", "mcts-solver:sims=4294967295", "--b", "random"], 1, "sims=4294967295 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "match", "ewn:3x3x2", "--a", "model:tiny@1,sims=4294967295", "--b", "random"], 1, "sims=4294967295 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "match", "ewn:3x3x2", "--a", "model:tiny@1,sims=4,tree=table", "--b", "random"], 1, "tree=table: allowed: model (the learner's own search"),
    case(&["--db", "{db}", "match", "ewn:3x3x2", "--a", "model:tiny@1,tree=rules", "--b", "random"], 1, "tree=rules goes with sims=N"),
    case(&["--db", "{db}", "sweep", "{dir}/sw.toml", "--jobs", "1000"], 1, "--jobs 1000 is out of range; allowed: 1 to 256"),
    case(&["--db", "{db}", "sweep", "{dir}/sw.toml", "--jobs", "0", "--dry-run"], 1, "--jobs 0 is out of range; allowed: 1 to 256"),
    case(&["--db", "{db}", "sweep", "{dir}/sw.toml", "--threads", "0", "--dry-run"], 1, "--threads 0: give at least one thread"),
    case(&["--db", "{db}", "sweep", "{dir}/sw-huge.toml", "--dry-run"], 1, "is more than 100000 runs; allowed: at most 100000 runs in one sweep"),
    case(&["--db", "{db}", "run", "/dev/zero"], 1, "/dev/zero: larger than 1048576 bytes"),
    case(&["--db", "{db}", "sweep", "/dev/zero", "--dry-run"], 1, "/dev/zero: larger than 1048576 bytes"),
    case(&["--db", "{db}", "run", "{dir}"], 1, "that is a directory; give a TOML file"),
    case(&["--db", "{db}", "sql", "SELECT zeroblob(20000000) AS a, zeroblob(20000000) AS b", "--max-memory", "16"], 1, "the query needs more than 16 MiB of memory"),
    case(&["--db", "{db}", "sql", "SELECT 1", "--max-memory", "0"], 2, "--max-memory"),
    // --- lenient input: what serde would read some way is refused, naming the key ------------
    case(&["--db", "{db}", "run", "{dir}/list-search.toml"], 1, "`search` = [1] is out of range; allowed: a table (`[search]` or `search = { ... }`), not a list"),
    case(&["--db", "{db}", "run", "{dir}/list-eval.toml"], 1, "`eval` = [1] is out of range; allowed: a table"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "search=[1]"], 1, "--set search=[1]: no setting `search`; allowed: "),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "eval=[1]"], 1, "--set eval=[1]: no setting `eval`; allowed: "),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "learning_rate=[[1, 1.0, 5]]"], 1, "`learning_rate[0]` = [1, 1.0, 5] is out of range; allowed: a list of 2 items"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "search.c_puct=nan"], 1, "`search.c_puct` = nan is out of range; allowed: a finite number"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "search.c_puct=nan"], 1, "`search.c_puct` = nan is out of range; allowed: a finite number"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "init_std=1e308"], 1, "`init_std` = 1e308 is out of range; allowed: a finite number, 0 or of magnitude 1e-12 to 1e12"),
    case(&["--db", "{db}", "run", "{dir}/net-eps.toml"], 1, "`learner.network.adam_eps` = 5e-324 is out of range"),
    case(&["--db", "{db}", "run", "{dir}/net-lr.toml"], 1, "`learner.network.lr[0][1]` = 1e300 is out of range"),
    case(&["--db", "{db}", "run", "{dir}/net-wd.toml"], 1, "`learner.network.weight_decay` = 1e300 is out of range"),
    case(&["--db", "{db}", "run", "{dir}/net-retain.toml"], 1, "`learner.network.retain` = 0 is out of range; allowed: a number in (0, 1]"),
    case(&["--db", "{db}", "run", "{dir}/net-mirror.toml"], 1, "`learner.network.augment` = mirror is out of range; allowed: \"none\" for Ewn: the game has no mirror image"),
    case(&["--db", "{db}", "run", "{dir}/net-epochs.toml"], 1, "`learner.network.train_steps` = 10 is out of range; allowed: absent when learner.network.train_epochs is given"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "start.policy=\"mixed\"", "--set", "start.weights=[0, 0, 0]"], 1, "`start.weights` = [0.0, 0.0, 0.0] is out of range; allowed: three finite numbers >= 0, not all 0"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "start.policy=\"mixed\"", "--set", "start.weights=[5, 3, 2]"], 1, "a first weight (random placements) of 0 for ewn:3x3x2"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "selfplay.mover=\"greedy\""], 1, "`selfplay.mover` = \"greedy\" is out of range; allowed: \"search\" for ewn:3x3x2: only games with a greedy heuristic"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "name=\"a\\u001b[2Jb\""], 1, "without spaces at either end, control characters"),
    // --- names refuse invisible characters wherever a name is taken (issue 49, cause 2) ------
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "name=\"a\\u2029b\""], 1, "invisible format characters"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "name=\"\\ufeffb\""], 1, "invisible format characters"),
    case(&["--db", "{db}", "run", "{dir}/name-isolate.toml"], 1, "`name` = \"ti\\u{2066}ny\" is out of range"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "name=\"x\\u200dy\""], 1, "invisible format characters"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "name=x\u{2028}y"], 1, "invisible format characters"),
    // --- every number out of range in one form (issue 49, cause 3) ------------------------------
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "search.dirichlet_alpha=NaN"], 1, "`search.dirichlet_alpha` = NaN is out of range; allowed: a finite number"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "search.c_puct=-1e999"], 1, "`search.c_puct` = -1e999 is out of range; allowed: a finite number"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "games_per_iteration=99999999999999999999"], 1, "`games_per_iteration` = 99999999999999999999 is out of range; allowed: an integer from"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "search.temperature=Infinity"], 1, "`search.temperature` = Infinity is out of range; allowed: a finite number"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "eval.games=1e20"], 1, "`eval.games` = 1e20 is out of range"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "seed=-1"], 1, "`seed` = -1 is out of range; allowed: an integer from 0 to 18446744073709551615"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "seed=18446744073709551616"], 1, "`seed` = 18446744073709551616 is out of range; allowed: an integer from 0 to 18446744073709551615"),
    case(&["match", "ewn:3x3x2", "--a", "mcts:sims=8,rollouts=99999999999", "--b", "random"], 1, "rollouts=99999999999 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["match", "ewn:3x3x2", "--a", "mcts:sims=8,n_fast=-3", "--b", "random"], 1, "n_fast=-3 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["match", "ewn:3x3x2", "--a", "mcts-solver:sims=1e3", "--b", "random"], 1, "sims=1e3 is not allowed; allowed: an integer from 1 to 1000000"),
    case(&["--db", "{db}", "match", "ewn:3x3x2", "--a", "model:tiny@99999999999", "--b", "random"], 1, "@=99999999999 is not allowed; allowed: an iteration from 0 to 4294967295"),
    // --- a setting the architecture does not use is refused (issue 49, cause 10) ---------------
    case(&["--db", "{db}", "run", "{dir}/net-mlp-channels.toml"], 1, "`learner.network.channels` = 16 is out of range; allowed: only with arch = \"resnet\""),
    // --- migrate updates a store; it makes none (issue 49, cause 9) ---------------------------
    case(&["--db", "{blank}", "migrate"], 1, "an empty SQLite database (no tabula schema yet); `migrate` updates a tabula store"),
    case(&["--db", "{blank}", "migrate", "--json"], 1, "an empty SQLite database"),
    // --- every output path is checked before any work (issue 49, cause 8) ---------------------
    case(&["--db", "{db}", "rate", "ewn:3x3x2", "--player", "random", "--run", "tiny", "--svg", "{dir}/no-such-dir/r.svg"], 1, "--svg {dir}/no-such-dir/r.svg: the directory {dir}/no-such-dir cannot be used"),
    case(&["--db", "{db}", "rate", "ewn:3x3x2", "--player", "random", "--run", "tiny", "--svg", "{text}/r.svg"], 1, "is not a directory; give a file path in an existing directory"),
    case(&["--db", "{db}", "checkout", "tiny@2", "--export", "{dir}/no-such-dir/m.bin"], 1, "create it first"),
    case(&["--db", "{db}", "plot", "some-sweep", "--out", "{dir}/no-such-dir/p.svg"], 1, "create it first"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "name=\"a\\nb\""], 1, "control characters"),
    case(&["--db", "{db}", "branch", "tiny", "--at", "1", "--set", "name=\"a\\u0000b\""], 1, "control characters"),
    case(&["--db", "{db}", "sweep", "{dir}/sw-dup.toml", "--dry-run"], 1, "axis `search.c_puct`: value 1.0 is listed twice"),
    // --- messages name the bad value and what is allowed ---------------------------------------
    case(&["--db", "{db}", "checkout", "tiny@99999999999"], 1, "the iteration 99999999999 is out of range; allowed: 0 to 4294967295"),
    case(&["--db", "{db}", "show", "tiny", "--games", "3"], 1, "run 1 has iterations 1..=2; --games 3 is not one of them"),
    case(&["--db", "{db}", "run", "{dir}/tiny.toml", "--set", "seed=9223372036854775808", "--set", "eval.games=0"], 1, "`eval.games` = 0 is out of range"),
    case(&["--db", "{db}", "report", "some-sweep", "--out", "{text}"], 1, "--out {text}: that is a file, not a directory"),
    // --- encode names the bad variant, position or input ------------------------------------
    case(&["encode", "ewn:9x9x9", "x"], 1, "ewn:9x9x9"),
    case(&["encode", "ewn:3x3x3", "R1R2./R3.B3 red 2"], 1, "POSITION `R1R2./R3.B3 red 2` is not a position of ewn:3x3x3"),
    case(&["encode", "c4:7x6", "48"], 1, "move 2 (column 8) is not legal there"),
    case(&["encode", "ewn:3x3x3", "R1R2./R3.B3/.B1B2 red 2", "--input", "liu"], 1, "ewn:3x3x3 has no input `liu`; it has: position"),
    case(&["encode", "ewn:3x3x3", "R1R2./R3.B3/.B1B2 red 2", "--past", "x"], 1, "--past position 1 `x` is not a position of ewn:3x3x3"),
];

/// The fixtures, made once in one directory.
struct Fixtures {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    game: String,
    run: String,
    head: String,
}

fn tabula() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tabula"))
}

impl Fixtures {
    fn new() -> Fixtures {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        // A store with a finished two-iteration run.
        let spec = dir.join("tiny.toml");
        std::fs::write(
            &spec,
            r#"name = "tiny"
variant = "ewn:3x3x2"
seed = 7
iterations = 2
games_per_iteration = 20
window = 2
learning_rate = [[1, 1.0]]
checkpoint_every = 2

[search]
simulations = 10

[eval]
games = 20
"#,
        )
        .unwrap();
        let db = dir.join("t.db");
        // Run 2 `tiny2`: the same spec under another name (one run hash, one head).
        for name in ["tiny", "tiny2"] {
            let out = tabula()
                .arg("--db")
                .arg(&db)
                .arg("run")
                .arg(&spec)
                .args(["--set", &format!("name={name}")])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Specs with sizes that cannot run.
        let tiny = std::fs::read_to_string(&spec).unwrap();
        for (file, from, to) in [
            (
                "huge-m.toml",
                "games_per_iteration = 20",
                "games_per_iteration = 4294967295",
            ),
            (
                "huge-sims.toml",
                "simulations = 10",
                "simulations = 4294967295",
            ),
            ("huge-eval.toml", "games = 20\n", "games = 4294967295\n"),
        ] {
            assert!(tiny.contains(from));
            std::fs::write(dir.join(file), tiny.replace(from, to)).unwrap();
        }
        // A budget with two keys, and M beside a budget.
        let two = tiny.replace("games_per_iteration = 20\n", "");
        std::fs::write(
            dir.join("two-budgets.toml"),
            format!("{two}\n[budget]\nmoves = 5\nseconds = 2.0\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("m-and-budget.toml"),
            format!("{tiny}\n[budget]\nmoves = 5\n"),
        )
        .unwrap();
        // Sweeps over `tiny`: one run; a value listed twice as 1 and 1.0; a grid too large.
        let sweep = |name: &str, axes: &str| {
            std::fs::write(
                dir.join(format!("{name}.toml")),
                format!("name = \"{name}\"\nbase = \"tiny.toml\"\nseeds = [1]\n\n[axes]\n{axes}\n"),
            )
            .unwrap();
        };
        sweep("sw", "\"search.simulations\" = [10]");
        sweep("sw-dup", "\"search.c_puct\" = [1, 1.0]");
        let many = |n: u32| {
            (1..=n)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        sweep(
            "sw-huge",
            &format!(
                "\"search.simulations\" = [{}]\n\"eval.games\" = [{}]",
                many(400),
                many(300)
            ),
        );
        // A list where a table belongs.
        for key in ["search", "eval"] {
            std::fs::write(
                dir.join(format!("list-{key}.toml")),
                format!("variant = \"ewn:3x3x2\"\niterations = 1\ngames_per_iteration = 2\n{key} = [1]\n"),
            )
            .unwrap();
        }
        // Network rates that are finite but cannot train.
        for (file, line) in [
            ("net-eps.toml", "adam_eps = 5e-324"),
            ("net-lr.toml", "lr = [[1, 1e300]]"),
            ("net-wd.toml", "weight_decay = 1e300"),
            ("net-retain.toml", "retain = 0.0"),
            ("net-mirror.toml", "augment = \"mirror\""),
            ("net-epochs.toml", "train_epochs = 2\ntrain_steps = 10"),
            ("net-mlp-channels.toml", "channels = 16"),
        ] {
            std::fs::write(
                dir.join(file),
                format!("{tiny}\n[learner]\nkind = \"network\"\n\n[learner.network]\n{line}\n"),
            )
            .unwrap();
        }
        // A spec whose name holds an invisible character (U+2066, a bidirectional isolate).
        std::fs::write(
            dir.join("name-isolate.toml"),
            tiny.replace("name = \"tiny\"", "name = \"ti\u{2066}ny\""),
        )
        .unwrap();
        // A game's address, as `show --games` lists it (packed games have none in SQL).
        let out = tabula()
            .args([
                "--db",
                db.to_str().unwrap(),
                "show",
                "1",
                "--games",
                "1",
                "--json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let game = listed["games"][0]["hash"].as_str().unwrap().to_string();
        let (run, head): (String, String) = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(
                "SELECT lower(hex(hash)), lower(hex(head)) FROM runs WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        // The same store with a second game object whose hash differs from the game's in the
        // last bit (its bytes are not a game: only the lookup by prefix is asked of it).
        std::fs::copy(&db, dir.join("amb.db")).unwrap();
        let mut twin: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&game[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        twin[31] ^= 1;
        rusqlite::Connection::open(dir.join("amb.db"))
            .unwrap()
            .execute(
                "INSERT INTO objects (hash, kind, size, bytes) VALUES (?1, 'game/v1', 1, x'00')",
                rusqlite::params![twin],
            )
            .unwrap();
        // The same store with a table dropped behind tabula's back.
        std::fs::copy(&db, dir.join("dropped.db")).unwrap();
        rusqlite::Connection::open(dir.join("dropped.db"))
            .unwrap()
            .execute_batch("DROP VIEW solutions_hex; DROP TABLE solutions;")
            .unwrap();
        // Files that are not tabula stores.
        std::fs::create_dir(dir.join("a-directory")).unwrap();
        let fifo = std::ffi::CString::new(dir.join("a-fifo").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        std::fs::write(dir.join("notes.txt"), "not a database\n").unwrap();
        std::fs::write(dir.join("empty.db"), "").unwrap();
        rusqlite::Connection::open(dir.join("foreign.db"))
            .unwrap()
            .execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")
            .unwrap();
        // A SQLite file with nothing in it (a page, no schema).
        rusqlite::Connection::open(dir.join("blank.db"))
            .unwrap()
            .execute_batch("PRAGMA page_size = 4096; VACUUM;")
            .unwrap();
        // No -wal/-shm left behind by the set-up.
        for f in std::fs::read_dir(&dir).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            assert!(!name.ends_with("-wal") && !name.ends_with("-shm"), "{name}");
        }
        Fixtures {
            _tmp: tmp,
            dir,
            game,
            run,
            head,
        }
    }

    /// A copy of the store, named `file`, with a branch `name` of `tiny` at 1 made with
    /// `--no-run` (run 3).
    fn with_unrun_branch(&self, file: &str, name: &str) -> PathBuf {
        let db = self.dir.join(file);
        std::fs::copy(self.dir.join("t.db"), &db).unwrap();
        let out = tabula()
            .arg("--db")
            .arg(&db)
            .args(["branch", "tiny", "--at", "1", "--no-run", "--set"])
            .arg(format!("name={name}"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        db
    }

    /// Replaces the placeholders: `{db}` the store with run `tiny`, `{game}` one of its
    /// self-play games, `{dropped}` that store without its `solutions` table, `{dir}` the
    /// fixture directory (a path that is a directory: `{dir}/a-directory`), `{fifo}` a FIFO,
    /// `{missing}` a path that does not exist, `{nodir}` one in a directory that does not,
    /// `{text}` a text file, `{empty}` an empty file, `{foreign}` a SQLite database that is
    /// not a store, `{blank}` a SQLite file with no schema, `{endless}` a recursive CTE that
    /// never ends.
    fn expand(&self, arg: &str) -> String {
        let d = |name: &str| self.dir.join(name).display().to_string();
        let mut s = arg.replace("{endless}", ENDLESS);
        for (key, value) in [
            ("{db}", d("t.db")),
            ("{game}", self.game.clone()),
            ("{game3}", self.game[..3].to_string()),
            ("{game4}", self.game[..4].to_string()),
            ("{GAME6}", self.game[..6].to_ascii_uppercase()),
            ("{head3}", self.head[..3].to_string()),
            ("{head4}", self.head[..4].to_string()),
            ("{run4}", self.run[..4].to_string()),
            ("{amb}", d("amb.db")),
            ("{dropped}", d("dropped.db")),
            ("{fifo}", d("a-fifo")),
            ("{missing}", d("absent.db")),
            ("{nodir}", d("no-such-dir/t.db")),
            ("{text}", d("notes.txt")),
            ("{empty}", d("empty.db")),
            ("{foreign}", d("foreign.db")),
            ("{blank}", d("blank.db")),
        ] {
            s = s.replace(key, &value);
        }
        // `{dir}` alone is the directory as a --db; inside a query, the fixture directory.
        if s == "{dir}" {
            return d("a-directory");
        }
        s.replace("{dir}", &self.dir.display().to_string())
    }
}

/// Every file under `dir` (not following links) with its size, modification time and bytes'
/// hash; FIFOs by name only.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            let what = if m.is_dir() {
                todo.push(e.path());
                "dir".to_string()
            } else if m.is_file() {
                let bytes = std::fs::read(e.path()).unwrap();
                format!(
                    "{} bytes, modified {:?}, blake3 {}",
                    m.len(),
                    m.modified().unwrap(),
                    blake3::hash(&bytes)
                )
            } else {
                "special".to_string()
            };
            out.insert(e.path(), what);
        }
    }
    out
}

/// Runs `tabula args` with a deadline; returns (exit code, stderr), or an error if it had to
/// be killed.
fn run(args: &[String], deadline: Duration) -> Result<(i32, String), String> {
    run_to(args, Stdio::null(), deadline)
}

/// [`run`] with stdout going to `stdout`.
fn run_to(args: &[String], stdout: Stdio, deadline: Duration) -> Result<(i32, String), String> {
    let mut child = tabula()
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return Ok((status.code().unwrap_or(-1), err));
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {deadline:?}: killed"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs one row against the fixtures: `args` (placeholders expanded) exits with `code`, its
/// stderr contains `stderr` (expanded), it does not panic, and the fixture directory is
/// unchanged. A failure is pushed to `failures`.
fn check_row(fx: &Fixtures, args: &[&str], code: i32, stderr: &str, failures: &mut Vec<String>) {
    let expanded: Vec<String> = args.iter().map(|a| fx.expand(a)).collect();
    let before = snapshot(&fx.dir);
    let shown = format!("tabula {}", args.join(" "));
    match run(&expanded, Duration::from_secs(30)) {
        Err(e) => failures.push(format!("{shown}: {e}")),
        Ok((got, err)) => {
            if got != code {
                failures.push(format!(
                    "{shown}: exit code {got}, expected {code}; stderr: {err}"
                ));
            } else if !err.contains(&fx.expand(stderr)) {
                failures.push(format!(
                    "{shown}: stderr lacks `{}`; it says: {err}",
                    fx.expand(stderr)
                ));
            } else if err.contains("panicked") {
                failures.push(format!("{shown}: panicked: {err}"));
            }
        }
    }
    let after = snapshot(&fx.dir);
    if after != before {
        let changed: Vec<_> = after
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, _)| k.display().to_string())
            .chain(
                before
                    .keys()
                    .filter(|k| !after.contains_key(*k))
                    .map(|k| format!("{} (removed)", k.display())),
            )
            .collect();
        failures.push(format!("{shown}: changed files {changed:?}"));
    }
}

#[test]
fn bad_input_is_refused_clearly_and_changes_nothing() {
    let fx = Fixtures::new();
    let mut failures = Vec::new();
    for c in CASES {
        check_row(&fx, c.args, c.code, c.stderr, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

/// Every flag that writes a file outside the store: (the command before the flag, the flag,
/// whether it names a directory). A new output flag belongs here.
const OUTPUT_FLAGS: &[(&[&str], &str, bool)] = &[
    (&["plot", "some-sweep"], "--out", false),
    (&["report", "some-sweep"], "--out", true),
    (&["checkout", "tiny@2"], "--export", false),
    (
        &["rate", "ewn:3x3x2", "--player", "random", "--run", "tiny"],
        "--svg",
        false,
    ),
];

/// Paths that are the store `{db}` or one of its files, spelled in other ways: itself, through
/// a symlink, a hard link, `.` and `..` in the path, its journals (existing or not).
const STORE_SPELLINGS: &[&str] = &[
    "{db}",
    "{dir}/link-to-store.db",
    "{dir}/hard-link-to-store.db",
    "{dir}/./a-directory/../t.db",
    "{db}-wal",
    "{db}-shm",
    "{db}-journal",
    "{dir}/link-to-wal",
];

/// Every output flag refuses the store, however it is spelled, and the store's bytes stay
/// as they were; a path that is not a regular file is refused too, naming the path.
#[test]
fn every_output_flag_refuses_the_store() {
    let fx = Fixtures::new();
    std::os::unix::fs::symlink(fx.dir.join("t.db"), fx.dir.join("link-to-store.db")).unwrap();
    std::fs::hard_link(fx.dir.join("t.db"), fx.dir.join("hard-link-to-store.db")).unwrap();
    // A link to the store's write-ahead log, which does not exist while the store is closed.
    std::os::unix::fs::symlink(fx.dir.join("t.db-wal"), fx.dir.join("link-to-wal")).unwrap();
    let mut failures = Vec::new();
    let mut rows = 0;
    for (command, flag, dir) in OUTPUT_FLAGS {
        let mut targets: Vec<(&str, &str)> = STORE_SPELLINGS
            .iter()
            .map(|t| (*t, "that is the store being read ("))
            .collect();
        if *dir {
            targets.push(("{text}", "that is a file, not a directory"));
        } else {
            targets.push((
                "/dev/full",
                "--export /dev/full: that is not a regular file",
            ));
            targets.push(("{dir}", "that is a directory; give a file path"));
        }
        for (target, message) in targets {
            let message = message.replace("--export", flag);
            let mut args: Vec<&str> = vec!["--db", "{db}"];
            args.extend_from_slice(command);
            args.extend([*flag, target]);
            check_row(&fx, &args, 1, &message, &mut failures);
            rows += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {rows} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every command, with output to print (writers on a copy of the store, `{full}`). A new
/// command belongs here: [`every_command_survives_an_unwritable_stdout`] checks that every
/// command `tabula --help` lists has a row.
const PRINTING: &[&[&str]] = &[
    &["games"],
    &["play", "ewn:3x3x2", "--seed", "1"],
    &["solve", "ewn:3x3x2"],
    &["value", "ewn:3x3x2", "{position}"],
    &["encode", "ewn:3x3x2", "{position}"],
    &["sql", "SELECT * FROM objects"],
    &["sql", "SELECT 1", "--json"],
    &["sql", "SELECT 1", "--csv"],
    &["fsck"],
    &["migrate"],
    &[
        "match",
        "ewn:3x3x2",
        "--a",
        "random",
        "--b",
        "random",
        "--games",
        "2",
    ],
    &[
        "rate",
        "ewn:3x3x2",
        "--player",
        "random",
        "--player",
        "mcts:sims=4",
        "--games",
        "2",
    ],
    &["replay", "{game}"],
    &[
        "gtp",
        "random",
        "--variant",
        "go:5x5",
        "--command",
        "genmove b",
    ],
    &[
        "run",
        "{dir}/tiny.toml",
        "--set",
        "name=full-run",
        "--threads",
        "1",
    ],
    &["ls"],
    &["show", "tiny"],
    &["resume", "tiny"],
    &[
        "branch",
        "tiny",
        "--at",
        "1",
        "--set",
        "name=full-branch",
        "--threads",
        "1",
    ],
    &["verify", "tiny"],
    &["checkout", "tiny@2"],
    &["sweep", "{dir}/sw.toml", "--dry-run"],
    &["sweep", "{dir}/sw.toml", "--no-calibrate", "--threads", "1"],
    &["merge", "{db}", "--into", "{dir}/merged.db"],
    &["plot", "sw", "--out", "{dir}/sw.svg"],
    &["report", "sw", "--out", "{dir}/sw-report"],
    &["note", "tiny", "a note", "--tag", "t1"],
    &["note", "tiny", "--json"],
    &["export", "tiny"],
    &["export", "sw", "--sweep", "--json"],
    &["du"],
    &["keep", "tiny", "every:2"],
    &["rm", "full-branch"],
    &["gc"],
    // No trainer: it stops idle after a second, and reports what it played.
    &["worker", "{dir}/exchange", "--idle-exit", "1"],
    &["serve", "--port", "0", "--check"],
    // Without --check it would serve for ever: an unwritable stdout ends it before serving.
    &["serve", "--port", "0"],
];

/// Every command whose stdout cannot be written (`> /dev/full`) exits 1 with `error: writing
/// the output: ...`, never a panic; the work is done all the same (no run is left `running`).
#[test]
fn every_command_survives_an_unwritable_stdout() {
    let fx = Fixtures::new();
    let full = fx.dir.join("full.db");
    std::fs::copy(fx.dir.join("t.db"), &full).unwrap();
    let solved = tabula()
        .args(["solve", "ewn:3x3x2", "--json", "--db"])
        .arg(&full)
        .output()
        .unwrap();
    let solved: serde_json::Value = serde_json::from_slice(&solved.stdout).unwrap();
    let position = solved["test_positions"][0]["position"].as_str().unwrap();
    // Every command `tabula --help` lists has a row.
    let help = tabula().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 10, "{help}");
    for c in &commands {
        assert!(
            PRINTING.iter().any(|row| row[0] == *c),
            "`tabula {c}` has no row in PRINTING"
        );
    }
    let mut failures = Vec::new();
    for row in PRINTING {
        let mut args = vec!["--db".to_string(), full.display().to_string()];
        args.extend(
            row.iter()
                .map(|a| fx.expand(&a.replace("{position}", position))),
        );
        let dev_full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let shown = format!("tabula {}", row.join(" "));
        match run_to(&args, dev_full.into(), Duration::from_secs(60)) {
            Err(e) => failures.push(format!("{shown}: {e}")),
            Ok((code, err)) => {
                if code != 1
                    || !err.contains("error: writing the output: No space left on device")
                    || err.contains("panicked")
                {
                    failures.push(format!("{shown}: exit code {code}; stderr: {err}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        PRINTING.len(),
        failures.join("\n")
    );
    // The merge left no -wal/-shm beside its source.
    for side in ["t.db-wal", "t.db-shm"] {
        assert!(
            !fx.dir.join(side).exists(),
            "{side} left beside the merged source"
        );
    }
    // The work was done: the run, the branch and the sweep's run finished.
    let conn = rusqlite::Connection::open(&full).unwrap();
    let mut stmt = conn.prepare("SELECT name, status FROM runs").unwrap();
    let runs: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        runs.iter().any(|(n, st)| n == "full-run" && st == "done"),
        "{runs:?}"
    );
    // The branch was made, then removed by the `rm` row.
    assert!(runs.iter().all(|(n, _)| n != "full-branch"), "{runs:?}");
    assert!(runs.iter().all(|(_, st)| st == "done"), "{runs:?}");
}

/// Runs `tabula --db DB args`, returning (exit code, stdout, stderr).
fn on(db: &Path, args: &[&str]) -> (i32, String, String) {
    let o = tabula().arg("--db").arg(db).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// What a refused sweep leaves: nothing (no sweep record, row or run); a seed above 2^63 - 1
/// is a seed; filters that contradict each other are named as such.
#[test]
fn sweeps_and_seeds_are_refused_before_anything_is_written() {
    let fx = Fixtures::new();
    let db = fx.dir.join("sweeps.db");
    std::fs::copy(fx.dir.join("t.db"), &db).unwrap();
    let sw = fx.dir.join("sw.toml").display().to_string();
    let tiny = fx.dir.join("tiny.toml").display().to_string();
    // A run of other settings takes the name the sweep's run needs.
    let (code, out, err) = on(&db, &["sweep", &sw, "--dry-run", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    let name = plan["runs"][0]["name"].as_str().unwrap().to_string();
    let (code, _, err) = on(
        &db,
        &[
            "run",
            &tiny,
            "--set",
            &format!("name={name:?}"),
            "--set",
            "window=1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let count = |sql: &str| -> i64 {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    };
    let objects = count("SELECT count(*) FROM objects");
    let (code, _, err) = on(&db, &["sweep", &sw, "--threads", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("a run named `{name}` is already in the store")),
        "{err}"
    );
    assert_eq!(count("SELECT count(*) FROM sweeps"), 0);
    assert_eq!(count("SELECT count(*) FROM objects"), objects);
    // A seed TOML cannot hold as an integer is still a seed.
    let (code, _, err) = on(
        &db,
        &[
            "run",
            &tiny,
            "--set",
            "name=big-seed",
            "--set",
            "seed=9223372036854775808",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = on(&db, &["show", "big-seed", "--json"]);
    assert!(out.contains("9223372036854775808"), "{out}");
    // Two values of one axis match nothing: said so, not blamed on the metric.
    let two = fx.dir.join("sw-two.toml");
    std::fs::write(
        &two,
        "name = \"sw-two\"\nbase = \"tiny.toml\"\nseeds = [1]\n\n[axes]\n\"search.simulations\" = [10, 12]\n",
    )
    .unwrap();
    let (code, _, err) = on(
        &db,
        &[
            "sweep",
            two.to_str().unwrap(),
            "--no-calibrate",
            "--threads",
            "1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let svg = fx.dir.join("two.svg").display().to_string();
    let (code, _, err) = on(
        &db,
        &[
            "plot",
            "sw-two",
            "--where",
            "search.simulations=10",
            "--where",
            "search.simulations=12",
            "--out",
            &svg,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`search.simulations` is already given (=10); give each axis once"),
        "{err}"
    );
    assert!(!fx.dir.join("two.svg").exists());
    let (code, _, err) = on(&db, &["plot", "sw-two", "--out", &svg]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

/// fsck checks every run row against its chain: a row that says more iterations than its
/// chain has, a head that is not the chain's last record, a missing `iterations` row.
#[test]
fn fsck_checks_run_rows_against_their_chains() {
    let fx = Fixtures::new();
    for (file, damage, expected) in [
        (
            "done.db",
            "UPDATE runs SET iterations_done = 99 WHERE id = 1",
            "RUN ROW run 1 (tiny): the row says 99 of 2 iterations done, more than planned",
        ),
        (
            "head.db",
            "UPDATE runs SET head = (SELECT hash FROM iterations WHERE run_id = 1 AND \
             iteration = 1) WHERE id = 1",
            "RUN ROW run 1 (tiny): the row's head is",
        ),
        (
            "gap.db",
            "DELETE FROM iterations WHERE run_id = 2 AND iteration = 1",
            "RUN ROW run 2 (tiny2): the row says 2 iterations done (its own from 1); \
             `iterations` rows missing: [1], beyond it: []",
        ),
        // Rows derived from a record are checked against it (issue 49, cause 1): a metric's
        // value changed, an evaluation row gone (its metrics left behind), a game row gone.
        (
            "metric.db",
            "UPDATE metrics SET value = value + 1 WHERE run_id = 1 AND iteration = 2 AND \
             name = (SELECT min(name) FROM metrics WHERE run_id = 1 AND iteration = 2)",
            "RUN ROW run 1 (tiny): iteration 2: `metrics` rows differ from the evaluation record",
        ),
        (
            "evaluation.db",
            "DELETE FROM evaluations WHERE run_id = 2 AND iteration = 1",
            "RUN ROW run 2 (tiny2): iteration 1: `metrics` rows without an evaluation",
        ),
        (
            "games.db",
            "DELETE FROM run_games WHERE run_id = 1 AND iteration = 2 AND game = 3",
            "RUN ROW run 1 (tiny): iteration 2: 19 `run_games` rows, but the iteration record \
             lists 20 games",
        ),
        (
            "metric0.db",
            "DELETE FROM metrics WHERE run_id = 2 AND iteration = 0 AND \
             name = (SELECT max(name) FROM metrics WHERE run_id = 2 AND iteration = 0)",
            "RUN ROW run 2 (tiny2): iteration 0: `metrics` rows missing: [",
        ),
    ] {
        let db = fx.dir.join(file);
        std::fs::copy(fx.dir.join("t.db"), &db).unwrap();
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(damage)
            .unwrap();
        let (code, out, err) = on(&db, &["fsck"]);
        assert_eq!(code, 1, "{damage}: {out}{err}");
        assert!(out.contains(expected), "{damage}: {out}");
        assert!(err.contains("run row problem(s)"), "{damage}: {err}");
    }
    // merge refuses a source whose run rows disagree, naming fsck, and creates nothing.
    let into = fx.dir.join("merged-from-damaged.db");
    let (code, _, err) = on(
        &into,
        &[
            "merge",
            fx.dir.join("head.db").to_str().unwrap(),
            "--into",
            into.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("1 run row(s) disagree with their chains"),
        "{err}"
    );
    assert!(!into.exists());
    // ... and a source whose metrics disagree with their evaluation: never copied.
    let (code, _, err) = on(
        &into,
        &[
            "merge",
            fx.dir.join("metric.db").to_str().unwrap(),
            "--into",
            into.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`metrics` rows differ"), "{err}");
    assert!(!into.exists());
    // verify and branch on a row that says more than its chain: an error naming fsck, not an
    // index out of bounds.
    let db = fx.dir.join("done.db");
    for args in [
        &["verify", "tiny"][..],
        &[
            "branch",
            "tiny",
            "--at",
            "50",
            "--no-run",
            "--set",
            "iterations=60",
        ],
    ] {
        let (code, _, err) = on(&db, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.contains("`tabula fsck` names what disagrees"),
            "{args:?}: {err}"
        );
    }
    let (code, out, err) = on(&fx.dir.join("t.db"), &["fsck"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("ok: every run row agrees with its chain"),
        "{out}"
    );
    assert!(out.contains("ok: SQLite's integrity check"), "{out}");
}

/// Damage that every object's hash misses, a b-tree page of an index flipped on disk (the
/// run name "tiny" in the `runs_name` index page becomes "tiXy"), is reported by fsck through
/// SQLite's integrity check, with a non-zero exit, while the object check still reads ok.
#[test]
fn fsck_reports_b_tree_damage_the_hashes_miss() {
    let fx = Fixtures::new();
    let db = fx.dir.join("btree.db");
    std::fs::copy(fx.dir.join("t.db"), &db).unwrap();
    let (page_size, root): (i64, i64) = {
        let c = rusqlite::Connection::open(&db).unwrap();
        let size = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let root = c
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'runs_name'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (size, root)
    };
    let mut bytes = std::fs::read(&db).unwrap();
    let page = usize::try_from((root - 1) * page_size).unwrap();
    let size = usize::try_from(page_size).unwrap();
    let at = bytes[page..page + size]
        .windows(4)
        .position(|w| w == b"tiny")
        .expect("the run name is in its index page");
    bytes[page + at + 2] = b'X';
    std::fs::write(&db, &bytes).unwrap();
    let (code, out, err) = on(&db, &["fsck"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("INTEGRITY") && out.contains("runs_name"),
        "{out}"
    );
    assert!(
        out.contains("ok: every object hashes to its address"),
        "{out}"
    );
    assert!(err.contains("integrity problem(s)"), "{err}");
}

/// A model whose metrics turn NaN (rates in range, but too large to train: with lr = 10 and
/// weight_decay = 1 each step multiplies the weights by -9, past f32's range within 40 steps)
/// fails its run with a message naming the metric, not SQLite's "NOT NULL constraint failed".
#[test]
fn a_diverged_model_fails_its_run_naming_the_metric() {
    let fx = Fixtures::new();
    let db = fx.dir.join("diverged.db");
    let spec = fx.dir.join("diverge.toml");
    std::fs::write(
        &spec,
        "name = \"n\"\nvariant = \"ewn:3x3x2\"\nseed = 1\niterations = 2\n\
         games_per_iteration = 10\n[search]\nsimulations = 8\n[eval]\ngames = 10\n\
         [learner]\nkind = \"network\"\n[learner.network]\nhidden = [8]\nbatch_size = 8\n\
         train_steps = 100\nlr = [[1, 10.0]]\nweight_decay = 1.0\n",
    )
    .unwrap();
    let (code, _, err) = on(&db, &["run", spec.to_str().unwrap(), "--threads", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("iteration 1: metric `") && err.contains("is NaN, not a finite number"),
        "{err}"
    );
    let (_, out, _) = on(&db, &["ls"]);
    assert!(out.contains("failed"), "{out}");
}

/// merge does not change a store while another live process holds one of its run locks: it
/// is refused, naming the holder, and the destination stays as it was.
#[test]
fn merge_honours_run_locks() {
    let fx = Fixtures::new();
    let into = fx.dir.join("locked.db");
    std::fs::copy(fx.dir.join("t.db"), &into).unwrap();
    // This test's own process, alive on this host, holds run 1's lock.
    rusqlite::Connection::open(&into)
        .unwrap()
        .execute(
            "UPDATE runs SET status = 'running', lock_pid = ?1, lock_host = ?2,
             lock_since = '2026-01-01T00:00:00Z' WHERE id = 1",
            rusqlite::params![std::process::id(), tabula::store::host_name()],
        )
        .unwrap();
    let before = std::fs::read(&into).unwrap();
    let src = fx.dir.join("t.db");
    let (code, _, err) = on(
        &into,
        &[
            "merge",
            src.to_str().unwrap(),
            "--into",
            into.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "run 1 is locked: process {} on host",
            std::process::id()
        )),
        "{err}"
    );
    assert!(
        std::fs::read(&into).unwrap() == before,
        "the locked store changed"
    );
}

/// The console's help lists exactly the pragmas it allows.
#[test]
fn sql_help_lists_the_allowed_pragmas() {
    let out = tabula().args(["sql", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    for p in tabula::store::READ_PRAGMAS {
        assert!(help.contains(p), "`tabula sql --help` does not name {p}");
    }
}

/// `ls` never says `running` for a run nobody runs: a lock held by a dead process of this
/// host (kill -9, SIGPIPE) reads `interrupted`, a branch made with `--no-run` reads `created`.
#[test]
fn ls_derives_interrupted_and_created() {
    let fx = Fixtures::new();
    let db = fx.with_unrun_branch("status.db", "unrun");
    // A process that has exited holds run 1's lock, as after kill -9; run 1 says running.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = tabula::store::host_name();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE runs SET status = 'running', lock_pid = ?1, lock_host = ?2,
             lock_since = '2026-01-01T00:00:00Z' WHERE name = 'tiny'",
            rusqlite::params![dead, host],
        )
        .unwrap();
    let out = tabula()
        .arg("--db")
        .arg(&db)
        .args(["ls", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status("tiny").as_deref(), Some("interrupted"), "{rows}");
    assert_eq!(status("unrun").as_deref(), Some("created"), "{rows}");
    let text = tabula().arg("--db").arg(&db).arg("ls").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("interrupted") && text.contains("created"),
        "{text}"
    );
}

/// A lock held on another host (whose process cannot be checked from here) keeps the run
/// `running` and refuses `resume`, naming `--take-over`; with the flag the lock is taken over
/// with a warning that names the holder, and the run finishes.
#[test]
fn resume_takes_over_a_lock_from_another_host_on_request() {
    let fx = Fixtures::new();
    let db = fx.with_unrun_branch("takeover.db", "b");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE runs SET lock_pid = 4242, lock_host = 'elsewhere.example',
             lock_since = '2026-01-01T00:00:00Z' WHERE name = 'b'",
            [],
        )
        .unwrap();
    let resume = |extra: &[&str]| {
        tabula()
            .arg("--db")
            .arg(&db)
            .args(["resume", "b", "--threads", "1"])
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = resume(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains("process 4242 on host elsewhere.example")
            && err.contains("`tabula resume 3 --take-over` takes the lock"),
        "{err}"
    );
    let taken = resume(&["--take-over"]);
    let err = String::from_utf8_lossy(&taken.stderr);
    assert!(taken.status.success(), "{err}");
    assert!(
        err.contains(
            "warning: took over the lock of run 3 (b) from process 4242 on host \
                      elsewhere.example (holding it since 2026-01-01T00:00:00Z)"
        ),
        "{err}"
    );
    let (status, pid): (String, Option<i64>) = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT status, lock_pid FROM runs WHERE name = 'b'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((status.as_str(), pid), ("done", None));
}

/// Output meant for people carries no Rust debug text; `value` names the side whose value it
/// prints, `play` who just played, `show` of a branch its parent, branch point, overrides and
/// inherited iterations.
#[test]
fn human_output_names_things_in_words() {
    let fx = Fixtures::new();
    let db = fx.dir.join("people.db");
    std::fs::copy(fx.dir.join("t.db"), &db).unwrap();
    let out = |args: &[&str]| -> String {
        let o = tabula().arg("--db").arg(&db).args(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.status.success(), "tabula {args:?}: {text}");
        for debug in [
            "Win(",
            "Finished(",
            "Adjudicated {",
            "Some(",
            "[Random",
            "P0)",
            "P1)",
        ] {
            assert!(
                !text.contains(debug),
                "tabula {args:?} prints `{debug}`: {text}"
            );
        }
        text
    };
    out(&[
        "branch",
        "tiny",
        "--at",
        "1",
        "--set",
        "search.init_q=draw",
        "--set",
        "name=br",
    ]);
    let show = out(&["show", "br"]);
    assert!(
        show.contains(
            "branch of  run 1 (tiny) at iteration 1; overrides: name=\"br\" search.init_q=\"draw\""
        ),
        "{show}"
    );
    // Iterations 0 and 1 inherited from run 1, iteration 2 its own.
    let rows: Vec<Vec<&str>> = show
        .lines()
        .skip_while(|l| !l.starts_with("it "))
        .skip(2)
        .take_while(|l| !l.starts_with('('))
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(rows, [["0", "1"], ["1", "1"], ["2", "3"]], "{show}");
    let game = &fx.game;
    let replay = out(&["replay", game, "--show"]);
    assert!(
        replay.contains("player 0 played") || replay.contains("player 1 played"),
        "{replay}"
    );
    let play = out(&["play", "ewn:3x3x2", "--seed", "2"]);
    assert!(play.contains("ply 1: player 0 played"), "{play}");
    assert!(play.contains("result after"), "{play}");
    let play = out(&[
        "play",
        "ewn:3x3x2",
        "--players",
        "optimal,random",
        "--seed",
        "2",
    ]);
    assert!(play.contains("player 0 (first mover): optimal"), "{play}");
    let pos: serde_json::Value =
        serde_json::from_str(&out(&["solve", "ewn:3x3x2", "--json"])).unwrap();
    let position = pos["test_positions"][0]["position"].as_str().unwrap();
    let value = out(&["value", "ewn:3x3x2", position]);
    assert!(
        value.contains("to move; value") && value.contains("the side to move"),
        "{value}"
    );
    out(&["ls"]);
    out(&[
        "match",
        "ewn:3x3x2",
        "--a",
        "random",
        "--b",
        "optimal",
        "--games",
        "4",
    ]);
}

/// Rewrites the last value word of `db`'s solution whose 8 bytes are `from` (searched among
/// the last chunk's values, which end the chunk's bytes) to `to`, storing the new chunk and
/// manifest under their own addresses, as another solver version would have written them.
fn rewrite_solution_value(db: &Path, from: f64, to: f64) {
    let c = rusqlite::Connection::open(db).unwrap();
    let (manifest_hash, positions): (Vec<u8>, i64) = c
        .query_row("SELECT hash, positions FROM solutions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let object = |hash: &[u8]| -> Vec<u8> {
        c.query_row(
            "SELECT bytes FROM objects WHERE hash = ?1 AND codec = 0",
            [hash],
            |r| r.get(0),
        )
        .unwrap()
    };
    let put = |kind: &str, bytes: &[u8]| -> Vec<u8> {
        let hash = tabula::store::ObjectHash::of(kind, bytes).0.to_vec();
        c.execute(
            "INSERT INTO objects (hash, kind, size, bytes) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![hash, kind, bytes.len() as i64, bytes],
        )
        .unwrap();
        hash
    };
    let mut manifest = object(&manifest_hash);
    let last = manifest.len() - 32;
    let mut chunk = object(&manifest[last..]);
    // Chunks hold 2^17 positions; the last one holds the rest.
    let count = usize::try_from(positions).unwrap() % (1 << 17);
    let values = chunk.len() - 8 * count;
    let at = (values..chunk.len())
        .step_by(8)
        .rev()
        .find(|&i| chunk[i..i + 8] == from.to_le_bytes())
        .expect("the value is in the last chunk");
    chunk[at..at + 8].copy_from_slice(&to.to_le_bytes());
    let chunk_hash = put("solution-chunk/v1", &chunk);
    manifest[last..].copy_from_slice(&chunk_hash);
    let manifest_hash = put("solution/v1", &manifest);
    c.execute("UPDATE solutions SET hash = ?1", [manifest_hash])
        .unwrap();
}

/// Two stores whose solutions of a variant differ only in how a value is written (a draw as
/// -0.0, as an earlier solver wrote it) merge, keeping the destination's; a solution that
/// differs in a value is still refused, naming the variant.
#[test]
fn merge_recognises_a_solution_written_in_other_bytes() {
    let fx = Fixtures::new();
    let a = fx.dir.join("a.db");
    let (code, _, err) = on(&a, &["solve", "c4:4x4"]);
    assert_eq!(code, 0, "{err}");
    // Fold the write-ahead log into the file, so a copy of the file is the whole store.
    rusqlite::Connection::open(&a)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    for (file, to, merges) in [("zero.db", -0.0, true), ("other.db", 0.25, false)] {
        let b = fx.dir.join(file);
        std::fs::copy(&a, &b).unwrap();
        rewrite_solution_value(&b, 0.0, to);
        let (code, out, err) = on(&b, &["fsck"]);
        assert_eq!(code, 0, "the rewritten store is sound: {out}{err}");
        let into = fx.dir.join(format!("into-{file}"));
        std::fs::copy(&a, &into).unwrap();
        let (code, out, err) = on(
            &a,
            &[
                "merge",
                "--into",
                into.to_str().unwrap(),
                b.to_str().unwrap(),
            ],
        );
        if merges {
            assert_eq!(code, 0, "{err}");
            assert!(
                out.contains("the solution of c4:4x4 has the destination's values in other bytes"),
                "{out}"
            );
        } else {
            assert_eq!(code, 1, "{out}");
            assert!(
                err.contains("the solution of c4:4x4 differs from the destination's in its values"),
                "{err}"
            );
            assert!(!err.contains("Text("), "{err}");
        }
    }
}

/// A command that creates a store leaves nothing behind when making it fails (issue 49,
/// cause 4; a full disk fails the same steps): the failpoints `open` (the new file made,
/// before the schema) and `migrate` (inside the schema's transaction) fail with SQLite's I/O
/// error, for every command that creates a store. The cause is said once, not once per level
/// of the error's chain.
#[test]
fn a_store_that_cannot_be_made_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        "name = \"tiny\"\nvariant = \"ewn:3x3x2\"\nseed = 7\niterations = 1\n\
         games_per_iteration = 2\n[search]\nsimulations = 4\n[eval]\ngames = 2\n",
    )
    .unwrap();
    let source = dir.join("source.db");
    let (code, _, err) = on(&source, &["solve", "ewn:3x3x2"]);
    assert_eq!(code, 0, "{err}");
    let spec = spec.to_str().unwrap();
    let new = dir.join("new.db");
    let merge = [
        "merge",
        source.to_str().unwrap(),
        "--into",
        new.to_str().unwrap(),
    ];
    for point in ["open:1", "migrate:1"] {
        for args in [
            &["solve", "ewn:3x3x2"][..],
            &["run", spec][..],
            &[
                "rate",
                "ewn:3x3x2",
                "--player",
                "random",
                "--player",
                "mcts:sims=4",
                "--games",
                "2",
            ][..],
            &merge[..],
        ] {
            let o = tabula()
                .arg("--db")
                .arg(&new)
                .args(args)
                .env("TABULA_FAILPOINT", format!("{point}:error"))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{point} {args:?}: {err}");
            assert_eq!(
                err.matches("disk I/O error").count(),
                1,
                "{point} {args:?}: {err}"
            );
            let left: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.starts_with("new.db"))
                .collect();
            assert!(left.is_empty(), "{point} {args:?} left {left:?}: {err}");
        }
    }
}

/// A store a run is writing merges as it stood at one commit (issue 49, cause 5): each
/// source is read in one read transaction, so merging a running shard, again and again while
/// it runs, always succeeds, and every merged store passes fsck.
#[test]
fn a_running_shard_merges_at_any_moment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let spec = dir.join("long.toml");
    std::fs::write(
        &spec,
        "name = \"long\"\nvariant = \"ewn:3x3x3\"\nseed = 3\niterations = 40\n\
         games_per_iteration = 100\nwindow = 2\ncheckpoint_every = 3\n[search]\nsimulations = 50\n\
         [eval]\ngames = 20\nwr_p = false\n",
    )
    .unwrap();
    let shard = dir.join("shard.db");
    let mut child = tabula()
        .arg("--db")
        .arg(&shard)
        .args(["run", spec.to_str().unwrap(), "--threads", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut merged, mut k) = (0, 0);
    loop {
        let done = child.try_wait().unwrap().is_some();
        if shard.exists() {
            k += 1;
            let into = dir.join(format!("m{k}.db"));
            let (code, _, err) = on(
                &into,
                &[
                    "merge",
                    shard.to_str().unwrap(),
                    "--into",
                    into.to_str().unwrap(),
                ],
            );
            // Before the run's first commit the shard may still be no store at all.
            if code == 0 {
                merged += 1;
                let (code, out, err) = on(&into, &["fsck"]);
                assert_eq!(code, 0, "merge {k}: {out}{err}");
            } else {
                assert!(
                    err.contains("no tabula schema") || err.contains("the file is empty"),
                    "merge {k}: {err}"
                );
            }
            let _ = std::fs::remove_file(&into);
        }
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    assert!(merged >= 3, "only {merged} merges while the run ran");
}
