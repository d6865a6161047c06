//! `tabula solve` and `tabula value`: exact values, computed once and kept in the store.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use tabula::game::{Game, Turn};
use tabula::games::connect4::solver::{C4Solver, DEFAULT_TABLE_BITS, score_to_value};
use tabula::games::{AnyGame, ConnectFour};
use tabula::solver::{
    Progress, Solution, Solvable, action_values, load_solution, save_solution, solve, start_value,
    to_unit,
};
use tabula::store::{ObjectHash, Store};
use tabula::with_solvable_game;

use super::args::{SolveArgs, ValueArgs};
use super::output::{JsonLayout, Report, emit};

/// The variants `solve --all` solves: the six of the literature.
const ALL: &[&str] = &[
    "cdc:PPPP",
    "cdc:KPPP",
    "cdc:GGCC",
    "ewn:3x3x3",
    "ewn:3x3x4",
    "ewn:3x4x3",
];

/// What `solve` reports about one variant.
#[derive(serde::Serialize)]
struct Solved {
    variant: String,
    positions: u64,
    /// Start value for the first player on [0, 1] (mean over start positions by probability).
    value: f64,
    test_positions: Vec<TestPosition>,
    /// Seconds this command took for the variant.
    seconds: f64,
    /// Seconds the original solve took (equal to `seconds` unless `cached`).
    solve_seconds: f64,
    /// Whether the solution came from the store.
    cached: bool,
    hash: String,
}

#[derive(serde::Serialize)]
struct TestPosition {
    position: String,
    /// Value for the side to move, on [0, 1].
    value: f64,
    to_move: String,
}

/// The store a solve writes to: open, or still being created on another thread.
enum StoreSlot<'scope> {
    Open(Box<Store>),
    Opening(std::thread::ScopedJoinHandle<'scope, Result<Store, tabula::store::StoreError>>),
    /// Taken by a failed [`StoreSlot::get`].
    Failed,
}

impl StoreSlot<'_> {
    /// The store, waiting for its creation if need be.
    fn get(&mut self) -> anyhow::Result<&mut Store> {
        if let StoreSlot::Opening(_) = self {
            let StoreSlot::Opening(handle) = std::mem::replace(self, StoreSlot::Failed) else {
                unreachable!()
            };
            let store = handle
                .join()
                .map_err(|_| anyhow::anyhow!("creating the store failed unexpectedly"))??;
            *self = StoreSlot::Open(Box::new(store));
        }
        match self {
            StoreSlot::Open(store) => Ok(store),
            _ => bail!("the store could not be opened"),
        }
    }
}

/// A solution of `g`, from the store if there, else solved now and stored. A store still
/// being created holds no solution: it is waited for only to write this one.
fn obtain<G: Solvable>(
    g: &G,
    slot: &mut StoreSlot,
    show_progress: bool,
) -> anyhow::Result<(Solution<G::Key>, ObjectHash, f64, bool)> {
    let variant = g.variant();
    if let StoreSlot::Open(store) = slot
        && let Some((sol, hash)) = load_solution::<G::Key>(store, &variant)?
    {
        let row = store.solution(&variant)?.context("solution row vanished")?;
        return Ok((sol, hash, row.seconds, true));
    }
    let start = Instant::now();
    let bar = super::progress::spinner(&format!("solving {variant}"), show_progress);
    let report = |p: Progress| match p {
        Progress::Found(n) => bar.set_message(format!("solving {variant}: {n} positions found")),
        Progress::Valued { done, total } => bar.set_message(format!(
            "solving {variant}: {done}/{total} positions valued"
        )),
    };
    let sol = solve(g, &report)?;
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let v0 = start_value(g, &sol).context("the start position has no value")?;
    let hash = save_solution(slot.get()?, &sol, v0, seconds)?;
    Ok((sol, hash, seconds, false))
}

fn report<G: Solvable>(
    g: &G,
    store: &mut StoreSlot,
    show_progress: bool,
) -> anyhow::Result<Solved> {
    let start = Instant::now();
    let (sol, hash, solve_seconds, cached) = obtain(g, store, show_progress)?;
    let value = to_unit(start_value(g, &sol).context("the start position has no value")?);
    let mut test_positions = Vec::new();
    for s in g.test_positions() {
        let v = sol
            .value_of_key(&g.key(&s))
            .with_context(|| format!("test position {} has no value", g.notation(&s)))?;
        let to_move = match g.turn(&s) {
            // `P0`/`P1` in --json, kept as it was.
            Turn::Player(p) => format!("P{}", p.index()),
            other => other.to_string(),
        };
        test_positions.push(TestPosition {
            position: g.notation(&s),
            value: to_unit(v),
            to_move,
        });
    }
    Ok(Solved {
        variant: g.variant(),
        positions: sol.len() as u64,
        value,
        test_positions,
        seconds: start.elapsed().as_secs_f64(),
        solve_seconds,
        cached,
        hash: hash.to_hex(),
    })
}

fn solve_variant(name: &str, store: &mut StoreSlot, show_progress: bool) -> anyhow::Result<Solved> {
    let game: AnyGame = name.parse()?;
    with_solvable_game!(&game, |g| report(g, store, show_progress), |other| bail!(
        "{other} cannot be solved: the solver handles cdc (2x4), ewn, c4 and checkers variants \
         small enough to enumerate"
    ))
}

pub(crate) fn solve_cmd(db: Option<&Path>, args: &SolveArgs) -> anyhow::Result<()> {
    let variants: Vec<String> = match (&args.variant, args.all) {
        (Some(v), false) => vec![v.clone()],
        (None, true) => ALL.iter().map(|s| s.to_string()).collect(),
        (Some(_), true) => bail!("give either a VARIANT or --all, not both"),
        (None, false) => bail!("give a VARIANT to solve (e.g. cdc:PPPP) or --all"),
    };
    // Validate every name before any work.
    for v in &variants {
        v.parse::<AnyGame>()?;
    }
    let path = Store::resolve_path(db);
    // A store that does not exist yet holds no solution: it is created (its schema written
    // and synced) on another thread while the first variant is solved. Its path is checked
    // first, so a missing directory is refused before the solve, not after it.
    let fresh = !path.exists();
    if fresh {
        Store::check_path_to_open(&path)?;
    }
    std::thread::scope(|scope| {
        let mut store = if fresh {
            StoreSlot::Opening(scope.spawn(|| Store::open(&path)))
        } else {
            StoreSlot::Open(Box::new(Store::open(&path)?))
        };
        let mut reports = Vec::new();
        for v in &variants {
            reports.push(solve_variant(v, &mut store, !args.json)?);
        }
        if args.all {
            emit(&AllSolved(&reports), args.json)?;
        } else {
            emit(&reports[0], args.json)?;
        }
        // A solution written last: its small log need not be copied into the file before the
        // command ends (docs/solver.md, "The store around a solve"). A command that wrote
        // nothing closes as any other.
        store.get()?;
        if let StoreSlot::Open(store) = store
            && reports.iter().any(|r| !r.cached)
        {
            store.close_leaving_log()?;
        }
        Ok(())
    })
}

impl Report for Solved {
    const JSON: JsonLayout = JsonLayout::Line;
    const SORTED_KEYS: bool = false;
}

impl std::fmt::Display for Solved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "variant     {}", self.variant)?;
        writeln!(f, "positions   {}", self.positions)?;
        writeln!(
            f,
            "value       {:.6}  (first player, [0, 1] scale)",
            self.value
        )?;
        let stored = if self.cached {
            format!("  (stored solution; solved in {:.2} s)", self.solve_seconds)
        } else {
            String::new()
        };
        writeln!(f, "seconds     {:.2}{stored}", self.seconds)?;
        writeln!(f, "hash        {}", self.hash)?;
        const SHOWN: usize = 40;
        writeln!(f, "test positions ({}):", self.test_positions.len())?;
        for t in self.test_positions.iter().take(SHOWN) {
            writeln!(f, "  {:.6}  {:<3} {}", t.value, t.to_move, t.position)?;
        }
        if self.test_positions.len() > SHOWN {
            writeln!(
                f,
                "  ... {} more (--json lists all)",
                self.test_positions.len() - SHOWN
            )?;
        }
        Ok(())
    }
}

/// `solve --all`: a table of the variants; a JSON array of them.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct AllSolved<'a>(&'a [Solved]);

impl Report for AllSolved<'_> {
    const JSON: JsonLayout = JsonLayout::Line;
    const SORTED_KEYS: bool = false;
}

impl std::fmt::Display for AllSolved<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{:<12} {:>10} {:>10} {:>8} {:>9} {:>7}  hash",
            "variant", "positions", "value", "S_test", "seconds", "cached"
        )?;
        for r in self.0 {
            writeln!(
                f,
                "{:<12} {:>10} {:>10.6} {:>8} {:>9.2} {:>7}  {}",
                r.variant,
                r.positions,
                r.value,
                r.test_positions.len(),
                r.solve_seconds,
                r.cached,
                &r.hash[..12]
            )?;
        }
        Ok(())
    }
}

pub(crate) fn value_cmd(db: Option<&Path>, args: &ValueArgs) -> anyhow::Result<()> {
    let game: AnyGame = args.variant.parse()?;
    if let AnyGame::ConnectFour(g) = &game {
        // Connect Four also takes the move-sequence form (`4453`, columns 1..W).
        let text = args.position.trim();
        let position = if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
            g.notation(&g.parse_moves(text)?)
        } else {
            args.position.clone()
        };
        if g.check_solvable().is_err() {
            return c4_value(g, &position, args.json);
        }
        let args = ValueArgs {
            position,
            ..args.clone()
        };
        return value_of(g, db, &args);
    }
    with_solvable_game!(&game, |g| value_of(g, db, args), |other| bail!(
        "{other} cannot be solved, so it has no exact values"
    ))
}

/// A Connect Four board too large to enumerate (7x6): the exact search of
/// [`tabula::games::connect4::solver`], every legal move's score.
fn c4_value(g: &ConnectFour, position: &str, json: bool) -> anyhow::Result<()> {
    let s = g.parse_notation(position)?;
    let Turn::Player(p) = g.turn(&s) else {
        bail!(
            "`{position}` is not a decision position (it is {}); values are given for \
             positions where a player moves",
            g.turn(&s)
        );
    };
    let start = Instant::now();
    let mut solver = C4Solver::new(g, DEFAULT_TABLE_BITS)?;
    let moves = solver.move_scores(g.key(&s));
    let score = moves.iter().map(|m| m.1).max().context("no legal move")?;
    let value = to_unit(score_to_value(score));
    let seconds = start.elapsed().as_secs_f64();
    let report = C4Value {
        variant: g.variant(),
        position: g.notation(&s),
        to_move: format!("P{}", p.index()),
        score,
        value,
        moves: moves
            .iter()
            .map(|&(c, sc)| C4Move {
                r#move: c + 1,
                score: sc,
            })
            .collect(),
        nodes: solver.nodes(),
        seconds,
        board: g.render(&s),
        side: p.to_string(),
    };
    emit(&report, json)
}

/// `value` of a Connect Four position by exact search: every legal move's score.
#[derive(serde::Serialize)]
struct C4Value {
    variant: String,
    position: String,
    to_move: String,
    score: i32,
    value: f64,
    moves: Vec<C4Move>,
    nodes: u64,
    seconds: f64,
    /// The position drawn, and the side to move in words, for the text.
    #[serde(skip)]
    board: String,
    #[serde(skip)]
    side: String,
}

/// A move (a column, 1-based) and its score.
#[derive(serde::Serialize)]
struct C4Move {
    r#move: usize,
    score: i32,
}

impl Report for C4Value {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for C4Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (p, score) = (&self.side, self.score);
        writeln!(f, "{}", self.board)?;
        writeln!(
            f,
            "{p} to move; score {score}; value {} on the [0, 1] scale for {p}, the side to move \
             (1: {p} wins)",
            self.value
        )?;
        for m in &self.moves {
            let mark = if m.score == score { "*" } else { " " };
            writeln!(f, "  {mark} col {:<2} {:>4}", m.r#move, m.score)?;
        }
        writeln!(f, "{} nodes, {:.3} s", self.nodes, self.seconds)
    }
}

fn value_of<G: Solvable>(g: &G, db: Option<&Path>, args: &ValueArgs) -> anyhow::Result<()> {
    let s = g.parse_notation(&args.position)?;
    let Turn::Player(p) = g.turn(&s) else {
        bail!(
            "`{}` is not a decision position (it is {}); values are given for positions \
             where a player moves",
            args.position,
            g.turn(&s)
        );
    };
    let mut store = StoreSlot::Open(Box::new(Store::open(&Store::resolve_path(db))?));
    let (sol, ..) = obtain(g, &mut store, !args.json)?;
    let v = sol.value_of_key(&g.key(&s)).with_context(|| {
        format!(
            "`{}` is not reachable from the start of {}, so the solution has no value for it",
            args.position,
            g.variant()
        )
    })?;
    let actions = action_values(g, &sol, &s).context("a successor has no value")?;
    let best = actions
        .iter()
        .map(|x| x.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let optimal = |av: f64| av >= best - tabula::solver::OPTIMAL_TOLERANCE;
    let report = PositionValue {
        variant: g.variant(),
        position: g.notation(&s),
        to_move: format!("P{}", p.index()),
        value: to_unit(v),
        actions: actions
            .iter()
            .map(|&(a, av)| ActionValue {
                action: a,
                name: g.action_name(&s, a),
                value: to_unit(av),
                optimal: optimal(av),
            })
            .collect(),
        board: g.render(&s),
        side: p.to_string(),
    };
    emit(&report, args.json)
}

/// `value` of a position from the game's solution: its value and each action's.
#[derive(serde::Serialize)]
struct PositionValue {
    variant: String,
    position: String,
    to_move: String,
    value: f64,
    actions: Vec<ActionValue>,
    /// The position drawn, and the side to move in words, for the text.
    #[serde(skip)]
    board: String,
    #[serde(skip)]
    side: String,
}

/// An action, its name, its value for the side to move and whether it is optimal.
#[derive(serde::Serialize)]
struct ActionValue {
    action: tabula::game::Action,
    name: String,
    value: f64,
    optimal: bool,
}

impl Report for PositionValue {
    const JSON: JsonLayout = JsonLayout::Line;
}

impl std::fmt::Display for PositionValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = &self.side;
        writeln!(f, "{}", self.board)?;
        writeln!(
            f,
            "{p} to move; value {:.6} for {p}, the side to move ([0, 1] scale: 1 = {p} wins, 0 = \
             {p} loses); each action's value is also {p}'s",
            self.value
        )?;
        for a in &self.actions {
            let mark = if a.optimal { "*" } else { " " };
            writeln!(f, "  {mark} {:>4}  {:<16} {:.6}", a.action, a.name, a.value)?;
        }
        Ok(())
    }
}
