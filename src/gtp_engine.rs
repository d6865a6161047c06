//! `tabula gtp`: any player of Go (`random`, `mcts:...`, `mcts-solver:...`,
//! `model:RUN@I,sims=N`) as a GTP version 2 engine, over any reader and writer (stdin and
//! stdout for the command; memory for the tests). docs/gtp.md is the user's guide.
//!
//! # Commands
//! protocol_version, name, version, known_command, list_commands, quit, boardsize,
//! clear_board, komi, play, genmove, final_score, showboard, undo. A bad command is a GTP
//! failure (`? ...`) and the engine goes on serving: an unknown command (`? unknown
//! command`), missing or malformed arguments (`? syntax error`), a size outside 5..=19
//! (`? unacceptable size`), a colour that is not b/black/w/white (`? invalid color`), a vertex
//! off the board (`? invalid coordinate`), a move tabula's rules refuse (`? illegal move`),
//! `undo` with nothing to undo (`? cannot undo`).
//!
//! # Rules and the side to move
//! The board follows tabula's `go:NxN` (docs/games.md, "Go"): OpenSpiel's rules, Tromp-Taylor
//! area scoring, a board repetition ends the game drawn, the game ends after two passes or
//! after the variant's move limit. `boardsize` and `komi` change the variant (`go:NxN,komi=K`;
//! the komi must be a multiple of 0.5 with |K| <= N*N, as the variant's); `boardsize` empties
//! the board, `komi` keeps it (the moves are replayed under the new komi). A player that
//! cannot play the new variant (a model trained on another board or komi) refuses it and the
//! old one stays.
//!
//! tabula's positions have a side to move and its games alternate, while GTP lets `play` give
//! one colour several moves in a row (setup stones, handicap). tabula refuses those: `play`
//! for the colour not to move is `? illegal move (white is to move ...)`, `genmove` for it
//! `? white is to move, not black ...`; a
//! controller that wants consecutive moves of one colour plays a pass for the other colour in
//! between, which is what the position would be in tabula's rules anyway (and two passes in
//! a row end the game, so that is left to the controller, not done behind its back).
//!
//! `final_score` is tabula's own score of the board as it stands: Tromp-Taylor area (stones
//! plus empty regions reaching only one colour; nothing is removed as dead) minus the komi,
//! `0` for a game drawn on a repeated board.
//!
//! # Randomness
//! Every `genmove` draws from one named stream, `gtp` under `--seed` ([`crate::rng`]),
//! continued across the games of a session: the same commands give the same answers.

use std::io::{BufRead, Write};

use crate::game::{Action, Turn, is_legal};
use crate::games::{Abilities, Ability, AnyGame, GoRules, families_with};
use crate::gtp::{
    Color, Command, MAX_LINE, Vertex, go_score, parse_command, read_line_capped, response,
};
use crate::players::{Agent, Decision, Player, PlayerError, PlayerSpec};
use crate::rng::{StreamRng, stream};
use crate::store::Store;

/// The commands this engine knows, in `list_commands` order.
pub(crate) const COMMANDS: &[&str] = &[
    "protocol_version",
    "name",
    "version",
    "known_command",
    "list_commands",
    "quit",
    "boardsize",
    "clear_board",
    "komi",
    "play",
    "genmove",
    "final_score",
    "showboard",
    "undo",
];

/// The stream every `genmove` draws from.
pub(crate) const STREAM: &str = "gtp";

/// Errors that stop the engine before or while serving.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(
        "`tabula gtp` plays {games}: `{variant}` is not a {games} variant (give go:NxN[,komi=K])"
    )]
    NotGo { variant: String, games: String },
    #[error(transparent)]
    Player(#[from] PlayerError),
    #[error(transparent)]
    Game(#[from] crate::error::GameError),
    #[error("reading or writing GTP: {0}")]
    Io(#[from] std::io::Error),
}

/// One board of the session, whatever the game's type (every game with a Go board, any
/// size).
trait Board {
    fn n(&self) -> usize;
    fn moves(&self) -> Vec<Action>;
    fn play(&mut self, color: Color, a: Action) -> Result<(), String>;
    fn genmove(&mut self, color: Color, rng: &mut StreamRng) -> Result<Action, String>;
    fn undo(&mut self) -> Result<(), String>;
    fn clear(&mut self);
    fn final_score(&self) -> String;
    fn showboard(&self) -> String;
}

/// The board of a game with [`Abilities::go_rules`] (`GoBoard::new` refuses another).
struct GoBoard<G: Abilities> {
    g: G,
    /// The board side N.
    n: usize,
    player: Player<G>,
    agent: Agent<G>,
    /// Every position of the game, its start first.
    states: Vec<G::State>,
    moves: Vec<Action>,
    scratch: Vec<Action>,
}

impl<G: Abilities> GoBoard<G> {
    /// `None` for a game without a Go board.
    fn new(
        g: G,
        spec: &PlayerSpec,
        store: Option<&mut Store>,
    ) -> Option<Result<GoBoard<G>, PlayerError>> {
        let n = g.go_rules()?.side;
        Some(GoBoard::with_player(g, n, spec, store))
    }

    fn with_player(
        g: G,
        n: usize,
        spec: &PlayerSpec,
        store: Option<&mut Store>,
    ) -> Result<GoBoard<G>, PlayerError> {
        let player = Player::resolve(spec, &g, store)?;
        let agent = player.agent();
        let start = g.initial_state();
        Ok(GoBoard {
            g,
            n,
            player,
            agent,
            states: vec![start],
            moves: Vec::new(),
            scratch: Vec::new(),
        })
    }

    fn now(&self) -> &G::State {
        self.states.last().expect("the start is never undone")
    }

    /// The colour to move, or why no move can be made.
    fn to_move(&self) -> Result<Color, String> {
        match self.g.turn(self.now()) {
            Turn::Player(p) => Ok(Color::of_player(p)),
            Turn::Terminal(r) => Err(format!("the game is over ({r})")),
            Turn::Chance => Err("Go has no chance".into()),
        }
    }

    fn push(&mut self, a: Action) {
        let next = self.g.apply(self.now(), a);
        self.states.push(next);
        self.moves.push(a);
    }
}

impl<G: Abilities> Board for GoBoard<G> {
    fn n(&self) -> usize {
        self.n
    }

    fn moves(&self) -> Vec<Action> {
        self.moves.clone()
    }

    fn play(&mut self, color: Color, a: Action) -> Result<(), String> {
        let to_move = self.to_move().map_err(|e| format!("illegal move ({e})"))?;
        if to_move != color {
            return Err(format!(
                "illegal move ({} is to move: tabula's games alternate, so play {}'s move, a \
                 pass if need be, first)",
                to_move.name(),
                to_move.name()
            ));
        }
        let s = *self.now();
        if !is_legal(&self.g, &s, a, &mut self.scratch) {
            return Err("illegal move".into());
        }
        self.push(a);
        Ok(())
    }

    fn genmove(&mut self, color: Color, rng: &mut StreamRng) -> Result<Action, String> {
        let to_move = self.to_move()?;
        if to_move != color {
            return Err(format!(
                "{} is to move, not {} (tabula's games alternate)",
                to_move.name(),
                color.name()
            ));
        }
        let ply = self.moves.len() as u32;
        let s = *self.now();
        // The game's earlier positions (Go has no chance: every state is a decision state).
        let past = &self.states[..self.states.len() - 1];
        match self.agent.decide(&self.g, &s, past, ply, rng) {
            Ok(Decision::Play { action, .. }) => {
                self.push(action);
                Ok(action)
            }
            Ok(Decision::ClaimWin) => Err("the player claimed a win; GTP has no such move".into()),
            Ok(Decision::Stop { .. }) => {
                Err("the player stopped the game; GTP has no such move".into())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn undo(&mut self) -> Result<(), String> {
        if self.moves.pop().is_none() {
            return Err("cannot undo".into());
        }
        self.states.pop();
        Ok(())
    }

    fn clear(&mut self) {
        self.states.truncate(1);
        self.moves.clear();
        self.agent = self.player.agent();
    }

    fn final_score(&self) -> String {
        go_score(&self.g, self.now()).expect("a Go board scores")
    }

    fn showboard(&self) -> String {
        format!("\n{}", self.g.render(self.now()))
    }
}

/// A GTP engine for one player spec.
pub struct Engine<'s> {
    spec: PlayerSpec,
    store: Option<&'s mut Store>,
    rng: StreamRng,
    /// Twice the komi.
    komi2: i32,
    /// The move limit of the starting variant and the board side it applies to.
    max_moves: Option<(usize, usize)>,
    board: Box<dyn Board>,
}

/// The variant text of a board side and twice the komi.
fn variant_text(n: usize, komi2: i32, max_moves: Option<(usize, usize)>) -> String {
    let komi = if komi2 % 2 == 0 {
        format!("{}", komi2 / 2)
    } else {
        format!("{}", f64::from(komi2) / 2.0)
    };
    let mut v = format!("go:{n}x{n},komi={komi}");
    if let Some((size, m)) = max_moves
        && size == n
    {
        v += &format!(",max_moves={m}");
    }
    v
}

impl<'s> Engine<'s> {
    /// An engine for `spec` on `variant` (a `go:` variant), genmove drawing from stream
    /// [`STREAM`] of `seed`. A model player loads from `store`.
    pub fn new(
        spec: PlayerSpec,
        variant: &str,
        seed: u64,
        mut store: Option<&'s mut Store>,
    ) -> Result<Engine<'s>, EngineError> {
        let game: AnyGame = variant.parse()?;
        let Some(GoRules {
            side: n,
            komi,
            max_moves,
        }) = crate::with_game!(&game, |g| g.go_rules())
        else {
            return Err(EngineError::NotGo {
                variant: variant.to_string(),
                games: families_with(Ability::GoBoard).join(" or "),
            });
        };
        let komi2 = (komi * 2.0).round() as i32;
        let max_moves = (max_moves != 2 * n * n).then_some((n, max_moves));
        let board = build(&spec, store.as_deref_mut(), n, komi2, max_moves, &[])
            .map_err(EngineError::Player)?;
        Ok(Engine {
            spec,
            store,
            rng: stream(seed, STREAM),
            komi2,
            max_moves,
            board,
        })
    }

    /// Serves commands from `input` until `quit` (then `true`) or the end of the input
    /// (`false`), each response written and flushed at once. Only reading or writing can fail
    /// it.
    pub fn serve<R: BufRead, W: Write>(
        &mut self,
        mut input: R,
        mut out: W,
    ) -> Result<bool, EngineError> {
        let mut line = Vec::new();
        loop {
            let (read, long) = read_line_capped(&mut input, &mut line, true)?;
            if read == 0 {
                return Ok(false);
            }
            if long {
                // A failure response without an id (the line's id may be in the dropped part).
                let why = format!("command line longer than {MAX_LINE} bytes");
                out.write_all(response(None, &Err(why)).as_bytes())?;
                out.flush()?;
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let Some(cmd) = parse_command(&text) else {
                continue;
            };
            let result = self.execute(&cmd);
            out.write_all(response(cmd.id, &result).as_bytes())?;
            out.flush()?;
            if cmd.name == "quit" {
                return Ok(true);
            }
        }
    }

    /// The result of one command.
    pub(crate) fn execute(&mut self, cmd: &Command) -> Result<String, String> {
        let arg = |i: usize| cmd.args.get(i).map(String::as_str);
        let syntax = || "syntax error".to_string();
        match cmd.name.as_str() {
            "protocol_version" => Ok("2".into()),
            "name" => Ok("tabula".into()),
            "version" => Ok(format!("{} ({})", env!("CARGO_PKG_VERSION"), self.spec)),
            "known_command" => {
                let name = arg(0).ok_or_else(syntax)?;
                Ok(COMMANDS.contains(&name).to_string())
            }
            "list_commands" => Ok(COMMANDS.join("\n")),
            "quit" => Ok(String::new()),
            "boardsize" => {
                let n: usize = arg(0).and_then(|t| t.parse().ok()).ok_or_else(syntax)?;
                if !(5..=19).contains(&n) {
                    return Err("unacceptable size".into());
                }
                if self.komi2.unsigned_abs() as usize > 2 * n * n {
                    return Err(format!(
                        "unacceptable size (komi {} is larger than {n}*{n})",
                        f64::from(self.komi2) / 2.0
                    ));
                }
                self.rebuild(n, self.komi2, false)
                    .map_err(|e| format!("unacceptable size ({e})"))
            }
            "clear_board" => {
                self.board.clear();
                Ok(String::new())
            }
            "komi" => {
                let komi: f64 = arg(0).and_then(|t| t.parse().ok()).ok_or_else(syntax)?;
                let n = self.board.n();
                let komi2 = komi * 2.0;
                if !komi2.is_finite() || komi2.fract() != 0.0 || komi.abs() > (n * n) as f64 {
                    return Err(format!(
                        "syntax error (komi {komi}: tabula's komi is a multiple of 0.5 with |komi| <= {})",
                        n * n
                    ));
                }
                self.rebuild(n, komi2 as i32, true)
            }
            "play" => {
                let (Some(c), Some(v)) = (arg(0), arg(1)) else {
                    return Err(syntax());
                };
                let color = Color::parse(c).ok_or("invalid color")?;
                let n = self.board.n();
                let vertex = Vertex::parse(v, n).ok_or("invalid coordinate")?;
                self.board
                    .play(color, vertex.action(n))
                    .map(|_| String::new())
            }
            "genmove" => {
                let color = Color::parse(arg(0).ok_or_else(syntax)?).ok_or("invalid color")?;
                let a = self.board.genmove(color, &mut self.rng)?;
                Ok(Vertex::of_action(a, self.board.n()).name())
            }
            "final_score" => Ok(self.board.final_score()),
            "showboard" => Ok(self.board.showboard()),
            "undo" => self.board.undo().map(|_| String::new()),
            _ => Err("unknown command".into()),
        }
    }

    /// A new board of side `n` and komi `komi2 / 2`: the old moves replayed when `keep`, else
    /// empty. On a failure the old board stays.
    fn rebuild(&mut self, n: usize, komi2: i32, keep: bool) -> Result<String, String> {
        let moves = if keep { self.board.moves() } else { Vec::new() };
        let board = build(
            &self.spec,
            self.store.as_deref_mut(),
            n,
            komi2,
            self.max_moves,
            &moves,
        )
        .map_err(|e| e.to_string())?;
        self.board = board;
        self.komi2 = komi2;
        Ok(String::new())
    }
}

/// A board for `spec` on `go:NxN,komi=K` with `moves` played.
fn build(
    spec: &PlayerSpec,
    store: Option<&mut Store>,
    n: usize,
    komi2: i32,
    max_moves: Option<(usize, usize)>,
    moves: &[Action],
) -> Result<Box<dyn Board>, PlayerError> {
    let variant = variant_text(n, komi2, max_moves);
    let game: AnyGame =
        variant
            .parse()
            .map_err(|e: crate::error::GameError| PlayerError::BadSpec {
                spec: variant.clone(),
                reason: e.to_string(),
            })?;
    let board = crate::with_game!(game, |g| GoBoard::new(g, spec, store)
        .map(|b| b.map(|b| Box::new(b) as Box<dyn Board>)));
    let mut board = board.ok_or_else(|| PlayerError::BadSpec {
        spec: variant.clone(),
        reason: "not a Go board".into(),
    })??;
    for &a in moves {
        let color = match board.moves().len() % 2 {
            0 => Color::Black,
            _ => Color::White,
        };
        board
            .play(color, a)
            .map_err(|reason| PlayerError::BadSpec {
                spec: variant.clone(),
                reason,
            })?;
    }
    Ok(board)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives an engine over in-memory input and returns everything it wrote.
    fn session(spec: &str, variant: &str, input: &str) -> String {
        let mut e = Engine::new(spec.parse().unwrap(), variant, 7, None).unwrap();
        let mut out = Vec::new();
        e.serve(input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn required_commands_answer() {
        let out = session(
            "random",
            "go:9x9",
            "1 protocol_version\n2 name\n3 known_command genmove\n4 known_command fly\n\
             # a comment\n\n5 list_commands\n6 quit\n7 name\n",
        );
        assert!(
            out.starts_with("=1 2\n\n=2 tabula\n\n=3 true\n\n=4 false\n\n=5 protocol_version\n"),
            "{out}"
        );
        assert!(out.contains("\nundo\n\n=6\n\n"), "{out}");
        assert!(!out.contains("=7"), "quit stops the engine: {out}");
    }

    #[test]
    fn bad_commands_are_gtp_failures_and_the_engine_goes_on() {
        let out = session(
            "random",
            "go:5x5",
            "fly\nboardsize 3\nboardsize x\nplay red c3\nplay b z9\nplay b i3\nplay w c3\n\
             play b c3\nplay w c3\nundo\nundo\nundo\ngenmove b\nkomi 6.25\nkomi 6.5\nplay\n\
             genmove\nknown_command\nboardsize 5\nplay b pass\nplay w pass\nplay b c3\ngenmove w\nname\n",
        );
        let answers: Vec<&str> = out.split("\n\n").filter(|a| !a.is_empty()).collect();
        let expected = [
            "? unknown command",
            "? unacceptable size",
            "? syntax error",
            "? invalid color",
            "? invalid coordinate",
            "? invalid coordinate",
            "? illegal move (black is to move: tabula's games alternate, so play black's move, a pass if need be, first)",
            "=",
            "? illegal move",
            "=",
            "? cannot undo",
            "? cannot undo",
        ];
        assert_eq!(&answers[..expected.len()], expected, "{out}");
        let rest = &answers[expected.len()..];
        assert!(rest[0].starts_with("= "), "genmove b: {}", rest[0]);
        assert!(
            rest[1].starts_with("? syntax error (komi 6.25"),
            "{}",
            rest[1]
        );
        assert_eq!(
            &rest[2..7],
            [
                "=",
                "? syntax error",
                "? syntax error",
                "? syntax error",
                "="
            ]
        );
        assert_eq!(&rest[7..9], ["=", "="]);
        assert!(
            rest[9].starts_with("? illegal move (the game is over"),
            "{}",
            rest[9]
        );
        assert!(rest[10].starts_with("? the game is over"), "{}", rest[10]);
        assert_eq!(rest[11], "= tabula");
    }

    /// Tromp-Taylor on the board as it stands; komi and undo change it; showboard shows it.
    #[test]
    fn final_score_komi_undo_and_showboard() {
        let out = session(
            "random",
            "go:5x5",
            "play b c3\nfinal_score\nkomi 0\nfinal_score\nplay w pass\nplay b a1\nundo\nundo\n\
             genmove w\nundo\nfinal_score\nkomi 30\nshowboard\n",
        );
        let answers: Vec<&str> = out.split("\n\n").filter(|a| !a.is_empty()).collect();
        // One black stone owns the whole empty board: 25 - 7.5.
        assert_eq!(answers[1], "= B+17.5");
        assert_eq!(answers[3], "= B+25");
        assert_eq!(answers[10], "= B+25");
        assert!(answers[11].starts_with("? syntax error"), "{}", answers[11]);
        assert!(
            answers[12].starts_with("=\n    A B C D E\n 5 "),
            "{}",
            answers[12]
        );
        assert!(answers[12].contains(" 3  . . X . .  3"), "{}", answers[12]);
        assert!(answers[12].contains("O (white) to move"), "{}", answers[12]);
    }

    /// The same commands and seed give the same moves; genmove's moves are legal and keep
    /// the game going to its end.
    #[test]
    fn sessions_replay() {
        let mut script = String::from("boardsize 5\nclear_board\n");
        for _ in 0..30 {
            script += "genmove b\ngenmove w\n";
        }
        script += "final_score\n";
        let a = session("mcts:sims=8", "go:9x9", &script);
        let b = session("mcts:sims=8", "go:9x9", &script);
        assert_eq!(a, b);
        assert!(!a.contains("? illegal") && !a.contains("? unknown"), "{a}");
        let c = session("random", "go:9x9", &script);
        assert_ne!(a, c);
    }

    #[test]
    fn other_games_are_refused() {
        let e = Engine::new(PlayerSpec::Random, "c4:7x6", 0, None)
            .err()
            .unwrap();
        assert!(e.to_string().contains("plays Go"), "{e}");
    }
}
