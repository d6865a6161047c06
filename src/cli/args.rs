//! What the command line accepts (clap). Nothing here does work; `cli::run` resolves these
//! into validated configs first.

use clap::{Args, Parser, Subcommand};

/// tabula: AlphaZero-style self-play research on games small enough to be solved exactly.
///
/// Variants are named `family:params[,option=value...]`: `cdc:PPPP`, `cdc:4x8`, `ewn:3x3x3`,
/// `c4:7x6`, `checkers:7x7-6`. `tabula games` lists them all.
#[derive(Debug, Parser)]
#[command(name = "tabula", version, about, long_about = None)]
pub(crate) struct Cli {
    /// The store (SQLite file). Default: $TABULA_DB, else ./tabula.db.
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List every game family with its parameters, options and action-space size.
    Games(GamesArgs),
    /// Play one game between two players and print it move by move with boards.
    Play(PlayArgs),
    /// Solve a variant exactly (or find its stored solution) and print its values.
    ///
    /// Prints the number of non-terminal positions, the start value on the [0, 1] scale (for
    /// a random start, the mean over start positions) and the test positions S_test with their
    /// values. Solutions are kept in the store; a second solve returns at once.
    Solve(SolveArgs),
    /// A position's exact value and every legal action's value.
    Value(ValueArgs),
    /// A position's network input: the planes a run's network reads there (shape, what each
    /// channel holds, the values), as the library's encoder writes them.
    ///
    /// For checking an exported model (`checkout --export`) from another program without
    /// writing an encoder: `--json` prints `values` flat, channel major, then rows, then
    /// columns, to reshape to `shape`. Examples: `tabula encode ewn:3x3x3 "R1R2./R3.B3/.B1B2
    /// red 2" --json`, `tabula encode c4:7x6 4453`. docs/network.md, "Inputs".
    Encode(EncodeArgs),
    /// Run one SQL query on a read-only connection to the store and print the rows.
    ///
    /// Nothing a query does can change the store. Try
    /// `tabula sql "SELECT name FROM sqlite_master WHERE type IN ('table','view')"`.
    ///
    /// One statement that reads: SELECT, WITH, VALUES, EXPLAIN, or a PRAGMA that reports
    /// (application_id, auto_vacuum, collation_list, compile_options, data_version,
    /// database_list, encoding, foreign_key_check, foreign_key_list, foreign_keys,
    /// freelist_count, function_list, index_info, index_list, index_xinfo, integrity_check,
    /// journal_mode, module_list, page_count, page_size, pragma_list, query_only, quick_check,
    /// schema_version, table_info, table_list, table_xinfo, user_version; only the
    /// table-describing ones and the checks take an argument). ATTACH, VACUUM, writes and
    /// setting PRAGMAs are refused. Rows are printed as they come, so memory stays flat for
    /// any result; the aligned table measures its first 1000 rows and keeps those widths.
    /// A query past --max-rows or --timeout stops with an error after printing what it had.
    Sql(SqlArgs),
    /// Recompute the hash of every object in the store and report any that do not match;
    /// check every run row against its chain, and SQLite's own integrity check.
    Fsck(FsckArgs),
    /// Bring a store written by an older tabula to this build's schema (commands that only
    /// read refuse such a store rather than change it; commands that write migrate it).
    Migrate(MigrateArgs),
    /// What the store's bytes are spent on: by kind of record, and by run (its games' packs,
    /// its kept checkpoints, which iterations keep their games). docs/store.md.
    Du(DuArgs),
    /// Remove a run: its rows, then every object and pack no other run reaches, then VACUUM.
    ///
    /// A run with branches (which continue from its iterations) is refused unless
    /// --with-branches removes them too. Refused while a live process is writing any run of
    /// the store. All or nothing: one transaction. docs/store.md.
    Rm(RmArgs),
    /// Free the objects and packs no run, sweep or solution reaches (left by a failed run,
    /// a removed one, fewer kept games), then VACUUM. All or nothing, refused while a live
    /// process is writing a run of the store. docs/store.md.
    Gc(GcArgs),
    /// Change which self-play games a run keeps: all, every:K (the games of every K-th
    /// iteration) or none, as its spec's `[store] keep_games`.
    ///
    /// A finished run's games are removed at once, in one transaction, refused while a live
    /// process holds the run's lock; the file is then VACUUMed. An unfinished run keeps the
    /// new setting and applies it when it finishes. Games already removed cannot be brought
    /// back: `all` keeps every game from then on. docs/store.md, "Keeping fewer games".
    Keep(KeepArgs),
    /// Play N games between two players, half with each first, in parallel; print A's score.
    ///
    /// Players: random, optimal, greedy, greedy-stochastic, mcts[:key=value,...],
    /// mcts-solver[:sims=N,c=X], e.g. `mcts:sims=800,c=1,init=draw`. Game i draws all its
    /// randomness from the stream `match(i)` of --seed, so the match is reproducible.
    ///
    /// On Go, gtp:COMMAND is any GTP engine, started for each game, e.g.
    /// gtp:"gnugo --mode gtp --level 1 --chinese-rules --capture-all-dead --seed 1"; tabula
    /// scores the game and sets the engine's own final_score beside its score (--json:
    /// score_checks). docs/gtp.md.
    Match(MatchArgs),
    /// Serve a player of Go as a GTP (Go Text Protocol, version 2) engine on stdin and stdout.
    ///
    /// For GTP programs: GNU Go's twogtp, GoGui, Sabaki, Go servers' clients. PLAYER is any
    /// player spec that plays Go: random, mcts:..., mcts-solver:..., model:RUN@I[,sims=N] (a
    /// run's checkpoint, from --db). Commands: protocol_version, name, version,
    /// known_command, list_commands, quit, boardsize, clear_board, komi, play, genmove,
    /// final_score, showboard, undo; a bad one is a GTP failure (`? illegal move`, ...) and the
    /// engine goes on. tabula's rules are the variant's (go:NxN, Tromp-Taylor); its games
    /// alternate, so a move for the colour not to move is refused. Every genmove draws from the
    /// stream `gtp` of --seed, so the same commands give the same answers. docs/gtp.md.
    ///
    /// Example: `tabula gtp mcts:sims=50 --variant go:5x5 --command "play b c3" --command
    /// "genmove w" --command showboard`; in GoGui or Sabaki register `tabula gtp
    /// mcts:sims=800` as the engine's command line.
    Gtp(GtpArgs),
    /// Rate players: a round robin (or a gauntlet) of matches, Bradley-Terry (Elo) ratings.
    ///
    /// Every pair plays --games games, half with each first; game i of the pair (A, B) draws
    /// all its randomness from the stream `rate(A | B, i)` of --seed (A, B the canonical
    /// specs, A the one that sorts first, moving first in even games), so a pair's games do
    /// not depend on the other players nor on their order. Every game is stored
    /// as a game record (`tabula replay HASH` re-plays it). The ratings are the
    /// maximum-likelihood Bradley-Terry fit, draws as half a win, 400 / ln 10 Elo per logit, the
    /// anchor (default: the first player) at 0, 95% intervals from the observed Fisher
    /// information; a player that never scored against the anchor's group (or never lost to
    /// it) is marked: its rating is set by a tiny prior. docs/ratings.md.
    ///
    /// Example: `tabula rate ewn:3x3x2 --player random --player mcts:sims=8 --player
    /// mcts:sims=32 --games 20`; a run's checkpoints with `--run RUN --every K`, their
    /// ratings against iteration with `--svg elo.svg`.
    Rate(RateArgs),
    /// Re-play a stored game from its recorded inputs, check its hash, optionally show it.
    Replay(ReplayArgs),
    /// Create a run from a run spec (TOML) and run it: tabular AlphaZero, every game, table
    /// snapshot and evaluation recorded in the store.
    ///
    /// Prints the run's id, a progress bar (iterations, games, ETA), one summary line per
    /// iteration and, at the end, the run's head (the hash of its last iteration record: the
    /// same spec and seed give the same head on any number of threads). Examples: runs/.
    ///
    /// Run again on a store that holds the run of this spec (same name, variant, seed,
    /// settings and iterations), it is no conflict: a finished run is shown (exit 0), an
    /// interrupted one resumed. A run of the same name with anything else is refused.
    Run(RunArgs),
    /// Serve an exchange directory as a self-play worker of a run spread over processes
    /// (docs/distributed.md).
    ///
    /// Plays the slices of games the trainer (`tabula run SPEC --exchange DIR`) publishes,
    /// until its run is over; a slice it was playing when killed is played again by another
    /// process with the same bits. On another node of a cluster sharing a folder DIR with the
    /// trainer: `tabula worker DIR --threads 32`. Under Slurm, `srun tabula run SPEC --exchange
    /// DIR` starts the trainer and the workers in one command (scripts/slurm/run.sbatch).
    Worker(WorkerArgs),
    /// List the runs in the store: id, name, variant, iterations done / planned, status, head.
    Ls(LsArgs),
    /// Show a run's settings and its metrics per iteration.
    Show(ShowArgs),
    /// Continue a run from what was committed (after a crash, a kill, a power loss).
    ///
    /// Reuses the stored games and ends with the head an uninterrupted run has. A run being
    /// worked on by another live process is refused (its pid, host and start are named); a
    /// lock left by a dead process of this host is taken over; one held on another host is
    /// taken over with --take-over (and a warning). A finished run is left as it is (exit 0).
    Resume(ResumeArgs),
    /// Create a run that shares RUN's first I iterations and continues from its table at I
    /// with changed settings, and run it.
    ///
    /// Keys are the run spec's: `--set search.init_q=draw --set window=3 --set iterations=40`.
    /// The variant and init_std cannot change mid-run. The seed, unless --seed is given,
    /// derives from the parent's seed, I and the overrides (so a branch is replayable).
    /// Without `--set name=...` the branch is named after its changes and I:
    /// `PARENT+init_q=draw,window=3@I` (`PARENT@I` with none). At the end it prints the
    /// iterations it ran (I+1..N), not the run's length.
    Branch(BranchArgs),
    /// Re-execute a run's iterations from the stored snapshots and compare every record's
    /// hash; report the first that differs and exit non-zero.
    Verify(VerifyArgs),
    /// Reconstruct the model of a run's iteration I exactly: `tabula checkout RUN@I`.
    ///
    /// Prints the model's hash (the address of its full checkpoint) and size; --export writes
    /// a table's rows as JSON lines, or a network as ONNX (`.onnx`, opset 13) or its weights
    /// as safetensors (`.safetensors`).
    Checkout(CheckoutArgs),
    /// Run a sweep: a base spec, axes of settings and seeds; their product is the runs.
    ///
    /// Running it again continues (finished runs skipped, interrupted ones resumed). A file
    /// edited to add seeds or axis values is refused unless --extend is given: then the stored
    /// sweep of that name grows (its runs kept, the new ones added); a store holds one sweep
    /// of a name. Each finished run prints its final WR_p, ERR_p and MAE_v; the ETA comes
    /// from the measured seconds per iteration of each grid point. `--dry-run` lists the runs
    /// and estimates the cost (from runs in the store, else by calibrating one iteration per
    /// grid point in a temporary store). `--shard I/N` runs a fixed share into its own store
    /// (merge them with `tabula merge`); `--jobs N` runs N at once. Heads depend on neither.
    /// See docs/experiments.md.
    Sweep(SweepArgs),
    /// Copy the records of several stores into one, by address, in one transaction.
    ///
    /// Idempotent; every object's hash is recomputed; a run that conflicts (same run record,
    /// different iterations) or a damaged object refuses the whole merge.
    Merge(MergeArgs),
    /// Plot a metric of a sweep as SVG: against iteration (a line per grid point, the mean
    /// over seeds with a 95% band), or with --x AXIS its final value (or --at max|auc)
    /// against an axis, a line per value of --by AXIS, 95% intervals over the seeds.
    ///
    /// Lines differ in colour (colour-blind-safe), dash and marker; the legend sits beside
    /// the plot; WR_p gets a reference line at 0.5; counts get integer ticks. Unfinished runs
    /// are left out of final values (the command says how many).
    Plot(PlotArgs),
    /// Write a sweep's report: one self-contained HTML page (settings, curves, summary).
    Report(ReportArgs),
    /// Show or change the note and tags of a run or a sweep.
    ///
    /// `tabula note quick "first try with the paper's c_puct"`, `tabula note quick --tag fig20`;
    /// a sweep's with --sweep NAME. Notes and tags are kept beside the records
    /// and never change a hash; `run`, `branch` and `sweep` take --note and --tag too. SQL:
    /// `run_provenance`, `sweep_provenance`, `run_notes`, `run_tags` (docs/store.md).
    Note(NoteArgs),
    /// A run's or a sweep's results as one tidy table on stdout, CSV (or --json): a row per
    /// run and iteration, a column per sweep axis (`axis.KEY`), per metric and per setting.
    ///
    /// A branch's rows include the iterations it shares with its parent (`source_run` names
    /// whose row each is) and iteration 0. `tabula export quick --json`; to a file, `tabula
    /// export NAME --sweep > grid.csv`, then `pandas.read_csv("grid.csv")`; docs/python.md.
    Export(ExportArgs),
    /// A live local dashboard over the store, in the browser: runs, sweeps, charts, games.
    ///
    /// Read-only (usable while `run` and `sweep` write the store); pages update as runs write.
    /// Pages: / (runs), /runs/ID, /sweeps/NAME, /compare?runs=A,B, /games/HASH; their JSON is
    /// under /api/ (docs/dashboard.md). Listens on 127.0.0.1 unless --bind says otherwise.
    /// `tabula serve --port 0 --check` binds a free port, prints the address and exits.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The run: its id, its name, or at least 4 hex digits of its run hash or head.
    pub run: String,
    /// Take over the run's lock when it is held on another host (whose process cannot be
    /// checked from here): say so only when that process is gone. A warning names the holder.
    #[arg(long)]
    pub take_over: bool,
    /// Worker threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object at the end and no progress.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub spread: SpreadArgs,
}

/// Where a run's self-play games are played: here, or by worker processes through an
/// exchange directory (docs/distributed.md). The head is the same either way.
#[derive(Debug, Args, Default, Clone)]
pub(crate) struct SpreadArgs {
    /// Start N self-play worker processes on this machine (each with cores/N threads) beside
    /// this one, the trainer, which plays too; 0: none. The exchange is a new folder in the
    /// system's temporary directory unless --exchange names one.
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// The exchange directory: workers started elsewhere (`tabula worker DIR`) play the
    /// run's self-play games through it; on a cluster, a folder every node sees. Under Slurm
    /// (SLURM_PROCID set), task 0 is the trainer and every other task serves DIR as a worker,
    /// so one `srun tabula run SPEC --exchange DIR` starts them all.
    #[arg(long, value_name = "DIR")]
    pub exchange: Option<std::path::PathBuf>,
    /// Seconds a slice's claim may go unrefreshed before its worker counts as lost and
    /// another process plays the slice (a worker refreshes it every quarter of this).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub lease: f64,
    /// Games per slice, the unit a worker takes (default: about 1/32 of an iteration's).
    #[arg(long, value_name = "GAMES")]
    pub slice: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The exchange directory the trainer was given (`--exchange DIR`).
    pub exchange: std::path::PathBuf,
    /// Threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Seconds a claim may go unrefreshed before its worker counts as lost: the trainer's
    /// --lease.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub lease: f64,
    /// Stop after this many seconds with nothing to do (the trainer gone).
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub idle_exit: f64,
    /// No line per slice played.
    #[arg(long)]
    pub quiet: bool,
    /// Print one JSON object at the end (what it played) and no progress.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BranchArgs {
    /// The parent run: id, name or hash prefix.
    pub run: String,
    /// The parent's iteration to continue from (its first I iterations are shared); 0
    /// starts a fresh run with the parent's settings and the changes.
    #[arg(long, value_name = "I")]
    pub at: u32,
    /// A changed setting, `key=value` (repeatable), e.g. `search.init_q=draw`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The branch's seed (default: derived from the parent's seed, I and the overrides).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Create the branch without running it (run it with `tabula resume`).
    #[arg(long)]
    pub no_run: bool,
    /// Worker threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object at the end and no progress.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub annotate: AnnotateArgs,
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The run: id, name or hash prefix.
    pub run: String,
    /// Iterations to re-execute, `a..b` (inclusive) or `a`; default: all of the run's own.
    #[arg(long, value_name = "A..B")]
    pub iterations: Option<String>,
    /// Worker threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CheckoutArgs {
    /// `RUN@I`: the run (id, name or hash prefix) and the iteration (0: untrained).
    pub target: String,
    /// Print one JSON object (run, iteration, snapshot, model hash, units, bytes, and the
    /// export's format, opset and bytes).
    #[arg(long)]
    pub json: bool,
    /// Write the model to this file, the format by extension: `.onnx`, a network run's ONNX
    /// model (IR 8, opset 13; input `planes` [N, C, H, W], outputs `policy_logits` [N, A] and
    /// `value` [N, 1], tanh or sigmoid as the run's `value_head`); `.safetensors`, its weights alone (PyTorch layout); any other,
    /// a table's rows as JSON lines ({"key", "position", "row", "updates", "legal"}). Written
    /// to a temporary file beside PATH, then renamed over it. See docs/network.md, "Export".
    #[arg(long, value_name = "PATH")]
    pub export: Option<std::path::PathBuf>,
    /// A table's rows without the first line (the header naming the columns), so that
    /// `pandas.read_json(PATH, lines=True)` reads the rows alone.
    #[arg(long, requires = "export")]
    pub no_header: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The run spec, e.g. runs/quick.toml.
    pub spec: std::path::PathBuf,
    /// A setting written into the spec before it is read, `key=value` (repeatable), e.g.
    /// `--set search.simulations=50 --set iterations=10 --set seed=3`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Worker threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON object at the end (run, head, iterations, metrics) and no progress.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub annotate: AnnotateArgs,
    #[command(flatten)]
    pub spread: SpreadArgs,
}

/// A note and tags, kept beside the records (never hashed; docs/store.md, "Provenance").
#[derive(Debug, Args, Default)]
pub(crate) struct AnnotateArgs {
    /// A note (free text, at most 10,000 characters) on what is created; `tabula note`
    /// changes it later. For `run`, it replaces the spec's `note`.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// A tag (repeatable): 1 to 64 letters, digits or -_.:/+=@, e.g. `--tag fig20`. For `run`,
    /// added to the spec's `tags`.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The port to listen on; 0 picks a free one (printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on. Anything but a loopback address lets other machines read the
    /// store: a warning says so.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDRESS")]
    pub bind: std::net::IpAddr,
    /// Open the dashboard in the default browser (xdg-open, open) once it listens.
    #[arg(long)]
    pub open: bool,
    /// Requests answered at once, 1 to 64.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Check that the store opens and the address binds, print the address, and exit.
    #[arg(long)]
    pub check: bool,
    /// Print the address as one JSON object ({"url", "address", "port", "db"}).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The run (id, name or hash prefix), or with --sweep the sweep (name or hash prefix).
    pub target: String,
    /// TARGET names a sweep: every run of it in this store.
    #[arg(long)]
    pub sweep: bool,
    /// JSON (an array of row objects) instead of CSV.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct NoteArgs {
    /// The run (id, name or hash prefix), or with --sweep a sweep's name.
    pub target: String,
    /// The note's new text (replaces the old one). Without TEXT, --tag, --untag or --clear,
    /// prints the note and tags.
    pub text: Option<String>,
    /// TARGET names a sweep.
    #[arg(long)]
    pub sweep: bool,
    /// Add a tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Remove a tag (repeatable).
    #[arg(long = "untag", value_name = "TAG")]
    pub untags: Vec<String>,
    /// Remove the note.
    #[arg(long, conflicts_with = "text")]
    pub clear: bool,
    /// Print the note and tags as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LsArgs {
    /// Print a JSON array of runs.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The run: its id, its name (the latest run of that name), or a hex prefix of its hash or
    /// head.
    pub run: String,
    /// Print one JSON object (settings and metrics rows).
    #[arg(long)]
    pub json: bool,
    /// List the self-play games of this iteration instead (index and address, the form
    /// `tabula replay` takes; packed games have no address column in SQL, docs/store.md).
    #[arg(long, value_name = "ITERATION")]
    pub games: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct MatchArgs {
    /// The variant, e.g. cdc:PPPP, ewn:3x3x3, c4:7x6, checkers:5x5-3.
    pub variant: String,
    /// Player A, e.g. `mcts:sims=800,c=1,init=draw`, `mcts-solver:sims=8000`, `optimal`, or on
    /// Go any GTP engine, `gtp:"gnugo --mode gtp --level 1"` (its final_score is checked
    /// against tabula's score).
    #[arg(long)]
    pub a: String,
    /// Player B.
    #[arg(long)]
    pub b: String,
    /// Number of games, 1 to 1000000 (A moves first in games 0, 2, 4, ...).
    #[arg(long, default_value_t = 100)]
    pub games: u32,
    /// The match seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object (score_a, ci95, wins_a, draws, losses_a, games, game hashes).
    #[arg(long)]
    pub json: bool,
    /// Store every game as a content-addressed game record.
    #[arg(long)]
    pub record: bool,
    /// Worker threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args)]
pub(crate) struct GtpArgs {
    /// The player: random, mcts[:key=value,...], mcts-solver[:sims=N,c=X],
    /// model:RUN@I[,sims=N].
    pub player: String,
    /// The variant it starts on, go:NxN[,komi=K][,max_moves=M]; GTP's boardsize and komi
    /// change it.
    #[arg(long, default_value = "go:9x9")]
    pub variant: String,
    /// The seed of the stream `gtp` every genmove draws from.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A GTP command run before stdin is read (once per command, in order); after a `quit`
    /// stdin is not read.
    #[arg(long = "command", value_name = "GTP")]
    pub commands: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RateArgs {
    /// The variant, e.g. ewn:3x3x3, c4:7x6, checkers:7x7-6.
    pub variant: String,
    /// A player (give it once per player), as for `tabula match`: random, optimal, greedy,
    /// mcts:..., mcts-solver:..., model:RUN@I[,sims=N], on Go gtp:COMMAND (not with
    /// --openings).
    #[arg(long = "player", value_name = "SPEC")]
    pub players: Vec<String>,
    /// Add the checkpoints of run RUN as players model:RUN@I, I = 0, K, 2K, ... and its last
    /// committed iteration (after the --player ones).
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// With --run: every K-th iteration (default: about ten checkpoints).
    #[arg(long, value_name = "K")]
    pub every: Option<u32>,
    /// With --run: the checkpoints play their search at N simulations (model:RUN@I,sims=N);
    /// without it, their greedy policy.
    #[arg(long, value_name = "N")]
    pub sims: Option<u32>,
    /// Games per pair, 1 to 1000000 (half with each player first).
    #[arg(long, default_value_t = 20)]
    pub games: u32,
    /// Start each pair of games (one with each player first) from a random opening of N
    /// moves, 0 to 100 (default 0: the game's start). Deterministic players on a
    /// deterministic game otherwise repeat the same two games.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub openings: u32,
    /// The seed of every game's stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The player rated 0 (one of the players; default: the first).
    #[arg(long, value_name = "SPEC")]
    pub anchor: Option<String>,
    /// Play every player against the anchor only, not every pair.
    #[arg(long)]
    pub gauntlet: bool,
    /// Print one JSON object: the ratings, every pair's result and game hashes.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG of the checkpoints' ratings against iteration (needs model players).
    #[arg(long, value_name = "PATH")]
    pub svg: Option<std::path::PathBuf>,
    /// Worker threads, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The game record's hash, or at least 4 hex digits of it: a match's game (as `tabula
    /// match --record` prints) or a run's self-play game (as `tabula show RUN --games I`
    /// lists, packed or not). A run's game re-plays with the table of the iteration before.
    pub hash: String,
    /// Show the game board by board, with the search's visit counts.
    #[arg(long)]
    pub show: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SolveArgs {
    /// The variant, e.g. cdc:PPPP, ewn:3x3x3, c4:4x4, checkers:5x5-1 (Chinese Checkers solves
    /// up to 4x4, and 5x5 with one checker a side).
    pub variant: Option<String>,
    /// Solve the six literature variants (CDC PPPP, KPPP, GGCC; EWN 3x3x3, 3x3x4, 3x4x3) and
    /// print a table.
    #[arg(long)]
    pub all: bool,
    /// Print JSON: one object (or, with --all, a list of objects).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ValueArgs {
    /// The variant, e.g. cdc:PPPP.
    pub variant: String,
    /// The position in the game's notation (as `tabula play --json` and `solve` print it);
    /// Connect Four also takes the columns played from the empty board (`4453`, 1-based).
    pub position: String,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// The variant, e.g. ewn:3x3x3.
    pub variant: String,
    /// A decision position in the game's notation (as `tabula value` takes it); Connect Four
    /// also takes the columns played from the empty board (`4453`, 1-based).
    pub position: String,
    /// The input by name, as a run's `[learner.network] input` names it (default: the game's
    /// default input, `position`).
    #[arg(long, value_name = "NAME")]
    pub input: Option<String>,
    /// The game's earlier decision positions, oldest first, separated by `;` (an input that
    /// reads the game's history reads the last of them; without them the position is the
    /// first of its game).
    #[arg(long, value_name = "P1;P2;...")]
    pub past: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SqlArgs {
    /// The query (one statement).
    pub query: String,
    /// Print CSV (header line, then rows).
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Print a JSON array of objects, one per row (keys in column order).
    #[arg(long)]
    pub json: bool,
    /// Stop with an error if the query returns more rows than this (0: no limit).
    #[arg(long, value_name = "N", default_value_t = tabula::store::QueryLimits::DEFAULT_MAX_ROWS)]
    pub max_rows: u64,
    /// Stop with an error after this many seconds of SQLite's work (time spent writing the
    /// output is not counted; 0: no limit).
    #[arg(long, value_name = "SECONDS", default_value_t = tabula::store::QueryLimits::DEFAULT_TIMEOUT_SECONDS, value_parser = seconds)]
    pub timeout: f64,
    /// Stop with an error when SQLite needs more memory than this many MiB for the query
    /// (1 to 65536; a row of huge values, a large sort).
    #[arg(long, value_name = "MIB", default_value_t = tabula::store::QueryLimits::DEFAULT_MAX_MEMORY >> 20, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_memory: u64,
}

/// A number of seconds: finite and not negative.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "`{s}` is not a number of seconds >= 0 (0: no limit)"
        )),
    }
}

#[derive(Debug, Args)]
pub(crate) struct FsckArgs {
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DuArgs {
    /// Print one JSON object (file_bytes, free_bytes, kinds, runs).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RmArgs {
    /// The run: its id, name, or a hash prefix of its run hash or head.
    pub run: String,
    /// Remove its branches (and theirs) with it.
    #[arg(long)]
    pub with_branches: bool,
    /// Print one JSON object (removed, objects, object_bytes, packs, pack_bytes, ...).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct KeepArgs {
    /// The run: its id, name, or a hash prefix of its run hash or head.
    pub run: String,
    /// What it keeps: all, every:K (K >= 2; every:1 is all) or none.
    #[arg(value_parser = parse_keep_games)]
    pub keep: tabula::runs::KeepGames,
    /// Print one JSON object (run_id, was, keep, applied, iterations_removed, ...).
    #[arg(long)]
    pub json: bool,
}

fn parse_keep_games(s: &str) -> Result<tabula::runs::KeepGames, String> {
    s.parse()
        .map_err(|allowed| format!("store.keep_games = {s:?} is not one; allowed: {allowed}"))
}

#[derive(Debug, Args)]
pub(crate) struct GcArgs {
    /// Print one JSON object (objects, object_bytes, packs, pack_bytes, ...).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// Print one JSON object (store, from, to).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GamesArgs {
    /// Print one JSON object (machine-readable) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PlayArgs {
    /// The variant to play, e.g. cdc:PPPP, ewn:3x3x3, c4:7x6, checkers:5x5-3.
    pub variant: String,
    /// Seed of the game's ChaCha stream; the same seed replays the same game.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The two players, first mover first, comma-separated: any player `tabula match` takes,
    /// e.g. `optimal,random` or `mcts:sims=50,c=1,greedy` (random,random: the game from the
    /// seed's `play(0)` stream as before).
    #[arg(long, default_value = "random,random")]
    pub players: String,
    /// Print only the final result line, not every board.
    #[arg(long)]
    pub quiet: bool,
    /// Print the game as one JSON object: every event (chance outcome or move: its index, name,
    /// player and the position it happened in, in the notation `tabula value` takes), the
    /// result and the final position.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    /// The sweep file (TOML: name, base, seeds, [set], [axes]); see docs/experiments.md.
    pub file: std::path::PathBuf,
    /// Runs at once (each gets an equal share of --threads). Results do not depend on it.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Worker threads in all, 1 to 256 (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Only shard I of N (1 <= I <= N): runs k with k mod N = I - 1, in grid order.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// List the runs (grid point, seed, name, state in the store) and estimate their cost,
    /// writing nothing: seconds per iteration from the sweep's runs in the store, else from
    /// one calibration iteration per grid point played into a temporary store.
    #[arg(long)]
    pub dry_run: bool,
    /// Start without calibrating. By default the runs start after the estimate `--dry-run`
    /// gives: the grid points the store has not measured are calibrated first (iteration 1
    /// of each point's first run, in a temporary store: seconds for small games), and the
    /// start line says what the runs left should cost. With this flag the start line's
    /// estimate covers only points the store has measured (none for a new sweep).
    #[arg(long)]
    pub no_calibrate: bool,
    /// Grow the stored sweep of this file's name when the file adds seeds or axis values
    /// (its finished runs are kept). Without it such a file is refused, saying what it adds.
    #[arg(long)]
    pub extend: bool,
    /// Print one JSON object at the end (every run with its id, status and head), no progress.
    #[arg(long)]
    pub json: bool,
    /// The sweep's note and tags (by its name: they stay as the sweep grows).
    #[command(flatten)]
    pub annotate: AnnotateArgs,
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The stores to copy from (read only; each must have this tabula's schema version).
    #[arg(required = true)]
    pub sources: Vec<std::path::PathBuf>,
    /// The store to copy into (created if missing).
    #[arg(long, value_name = "PATH")]
    pub into: std::path::PathBuf,
    /// Print one JSON object per source.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PlotArgs {
    /// The sweep: its name or a hash prefix.
    pub sweep: String,
    /// The metric (a name of the `metrics_long` view: wr_p, err_p, mae_v, updated_1, seen, ...).
    #[arg(long, default_value = "wr_p")]
    pub metric: String,
    /// Draw the metric's final value (see --at) against this axis instead of against
    /// iteration: the 2023 study's Fig. 20 form, e.g. `--x search.simulations --by
    /// search.init_q`. Mean and 95% interval over the seeds; unfinished runs are left out.
    #[arg(long, value_name = "AXIS")]
    pub x: Option<String>,
    /// With --x: which value of each run: final (the last iteration's), max (the largest
    /// over iterations 1..N) or auc (the sum over iterations 1..N).
    #[arg(long, value_name = "final|max|auc", default_value = "final")]
    pub at: String,
    /// With --x: one line per value of this axis. Every other axis must have one value among
    /// the points drawn (fix it with --where).
    #[arg(long, value_name = "AXIS")]
    pub by: Option<String>,
    /// Keep only grid points with this axis value, `key=value` (repeatable). Lines are the
    /// remaining grid points: fix every axis but one for one line per value of that axis.
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub filter: Vec<String>,
    /// Another sweep drawn in the same figure (repeatable), every grid point of it, each line
    /// labelled with its sweep's name: the arms of a study that no sweep axis can vary (a
    /// learner kind with its own settings table), e.g. `plot ewn-az --with ewn-muzero`.
    /// --where applies to the first sweep. Not with --x.
    #[arg(long = "with", value_name = "SWEEP")]
    pub with: Vec<String>,
    /// Draw several metrics' values at --at (final, max or auc) along x instead of one metric
    /// against iteration, a line per grid point (and per --with sweep), x labelled by what
    /// follows the metrics' shared prefix: `--metrics mae_v_depth_0,mae_v_depth_1,...`
    /// (MuZero's value error by unroll depth). Not with --x or --metric.
    #[arg(long, value_name = "M1,M2,...", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE", default_value = "plot.svg")]
    pub out: std::path::PathBuf,
    /// Also print the figure's data as CSV: label, iteration, mean, lo, hi, seeds; with --x:
    /// line, x, mean, lo, hi, seeds.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The sweep: its name or a hash prefix.
    pub sweep: String,
    /// The directory to write index.html into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
    /// Print one JSON object (page, figures, runs).
    #[arg(long)]
    pub json: bool,
}
