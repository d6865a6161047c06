//! The Go Text Protocol, version 2 (Gunnar Farnebäck's specification, docs/gtp.md): the
//! pieces both sides of it share, and a client for any GTP engine (`client.rs`, the `gtp:`
//! player). The engine tabula runs itself (`tabula gtp`) is [`crate::gtp_engine`].
//!
//! # Commands and responses
//! A command line is preprocessed as the specification says (control characters other than
//! tab and newline removed, everything from `#` on removed, tabs turned into spaces; a line
//! left empty is no command), then read as `[id] name [arguments...]` (`id` an integer). A
//! response is `=` (success) or `?` (failure), the id if the command had one, a space, the
//! text, and an empty line: `=7 C3\n\n`, `? illegal move\n\n`.
//!
//! # Coordinates
//! A GTP vertex is a column letter and a row number: columns `A`..`T` from the left *without
//! the letter I* (`H` is the 8th column, `J` the 9th), rows from `1` at the bottom; either
//! case; `pass` (any case) passes. tabula's Go actions are OpenSpiel's: the point in row r
//! (0 = the bottom row, GTP row r + 1) and column c (0 = the left column, GTP letter c of
//! `ABCDEFGHJKLMNOPQRST`) is action r*N + c, and pass is N*N. So on 9x9 `A1` = 0, `J1` = 8,
//! `A2` = 9, `E5` = 40, `J9` = 80, `pass` = 81; `I5` is no vertex. The two orientations agree
//! (both count rows from the bottom and columns from the left): the mapping only skips the
//! I. tabula's own action names (`Game::action_name`) are these vertices in upper case. The
//! board side, komi and score come from the game's `games::Abilities::go_rules` (any board
//! size): this module names no game.
//!
//! # Scores
//! `final_score`'s text: `B+x` (black wins by x points), `W+x`, or `0` (a tie). tabula scores
//! Tromp-Taylor area (docs/games.md, "Go"): black's area minus white's minus the komi, so the
//! margin is black-positive; [`score_text`] and [`parse_score`] convert.

mod client;

pub(crate) use client::GtpClient;
pub use client::GtpError;

use crate::game::Action;
use crate::games::Abilities;

/// The longest line either side of the protocol reads (64 KiB, far above any command or
/// response of a 19x19 game): a peer that sends endless bytes without a newline cannot make
/// the reader's memory grow. The bytes past it are read and dropped.
pub(crate) const MAX_LINE: usize = 1 << 16;

/// Reads one line, up to and including its `\n`, into `line` (cleared first), keeping at most
/// [`MAX_LINE`] bytes of it; returns the bytes consumed (0: the end of the input) and whether
/// the line was longer than the cap. With `drain` the rest of a long line is read and dropped
/// (the engine answers it and reads the next command); without, reading stops at the cap (a
/// client gives up on an engine that writes without end).
pub(crate) fn read_line_capped<R: std::io::BufRead>(
    input: &mut R,
    line: &mut Vec<u8>,
    drain: bool,
) -> std::io::Result<(usize, bool)> {
    line.clear();
    let (mut total, mut long) = (0, false);
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok((total, long));
        }
        let (take, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = MAX_LINE.saturating_sub(line.len());
        long |= take > room;
        line.extend_from_slice(&buf[..take.min(room)]);
        input.consume(take);
        total += take;
        if ends || (long && !drain) {
            return Ok((total, long));
        }
    }
}

/// The column letters of GTP vertices: no I.
const COLS: &[u8] = b"ABCDEFGHJKLMNOPQRST";

/// One command: its id if it had one, its name, its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Command {
    pub(crate) id: Option<u64>,
    pub(crate) name: String,
    pub(crate) args: Vec<String>,
}

/// A line as the specification's preprocessing leaves it, trimmed: `None` when nothing is
/// left (an empty line or a comment), which is no command and gets no response.
pub(crate) fn preprocess(line: &str) -> Option<String> {
    let line = line.split('#').next().unwrap_or("");
    let kept: String = line
        .chars()
        .filter(|&c| !c.is_control() || c == '\t')
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let kept = kept.trim();
    (!kept.is_empty()).then(|| kept.to_string())
}

/// Parses one line: `None` when it holds no command (see [`preprocess`]).
pub(crate) fn parse_command(line: &str) -> Option<Command> {
    let line = preprocess(line)?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let (id, name) = match first.parse::<u64>() {
        Ok(id) => (Some(id), words.next().unwrap_or("").to_string()),
        Err(_) => (None, first.to_string()),
    };
    Some(Command {
        id,
        name,
        args: words.map(str::to_string).collect(),
    })
}

/// A whole response: `=id text` or `?id text`, then the empty line that ends it. A multi-line
/// text keeps its lines (none of them empty: empty lines are dropped, since one would end
/// the response early).
pub(crate) fn response(id: Option<u64>, result: &Result<String, String>) -> String {
    let (mark, text) = match result {
        Ok(t) => ('=', t),
        Err(t) => ('?', t),
    };
    let id = id.map(|i| i.to_string()).unwrap_or_default();
    // A text that starts with a newline (a board) starts on the line after the mark.
    let lead = text.starts_with('\n');
    let text: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let text = text.join("\n");
    if text.is_empty() {
        format!("{mark}{id}\n\n")
    } else if lead {
        format!("{mark}{id}\n{text}\n\n")
    } else {
        format!("{mark}{id} {text}\n\n")
    }
}

/// A colour: black moves first (tabula's player 0), white second (player 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Color {
    Black,
    White,
}

impl Color {
    /// `b`, `black`, `w`, `white`, any case.
    pub(crate) fn parse(text: &str) -> Option<Color> {
        match text.to_ascii_lowercase().as_str() {
            "b" | "black" => Some(Color::Black),
            "w" | "white" => Some(Color::White),
            _ => None,
        }
    }

    /// The colour of tabula's player `p` (player 0 is black).
    pub(crate) fn of_player(p: crate::game::Player) -> Color {
        match p.index() {
            0 => Color::Black,
            _ => Color::White,
        }
    }

    /// `black` or `white`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Color::Black => "black",
            Color::White => "white",
        }
    }

    /// `b` or `w`, as a GTP argument.
    pub(crate) fn letter(self) -> &'static str {
        match self {
            Color::Black => "b",
            Color::White => "w",
        }
    }
}

/// A move: a pass or a point (row 0 = the bottom row, col 0 = the left column).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Vertex {
    Pass,
    Point { row: usize, col: usize },
}

impl Vertex {
    /// Parses `text` (either case) on an `n` x `n` board; `None` when it is no vertex of it.
    pub(crate) fn parse(text: &str, n: usize) -> Option<Vertex> {
        if text.eq_ignore_ascii_case("pass") {
            return Some(Vertex::Pass);
        }
        // The row is digits only (Rust's integer parse would also take a sign).
        let digits = text.get(1..)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let col = COLS
            .iter()
            .position(|&c| c == text.as_bytes()[0].to_ascii_uppercase())?;
        let row: usize = digits.parse().ok()?;
        // `then`, not `then_some`: row 0 must not be subtracted from.
        (col < n && (1..=n).contains(&row)).then(|| Vertex::Point { row: row - 1, col })
    }

    /// The vertex of tabula action `a` on an `n` x `n` board (N*N and beyond: pass).
    pub(crate) fn of_action(a: Action, n: usize) -> Vertex {
        let a = a as usize;
        if a >= n * n {
            Vertex::Pass
        } else {
            Vertex::Point {
                row: a / n,
                col: a % n,
            }
        }
    }

    /// tabula's action for this vertex on an `n` x `n` board: row * n + col, pass n * n.
    pub(crate) fn action(self, n: usize) -> Action {
        match self {
            Vertex::Pass => (n * n) as Action,
            Vertex::Point { row, col } => (row * n + col) as Action,
        }
    }

    /// The GTP text: `pass`, or the column letter and row number (`J9`).
    pub(crate) fn name(self) -> String {
        match self {
            Vertex::Pass => "pass".to_string(),
            Vertex::Point { row, col } => format!("{}{}", COLS[col] as char, row + 1),
        }
    }
}

/// `final_score`'s text of a black-positive margin: `B+3.5`, `W+7`, `0`.
pub(crate) fn score_text(margin: f64) -> String {
    if margin > 0.0 {
        format!("B+{margin}")
    } else if margin < 0.0 {
        format!("W+{}", -margin)
    } else {
        "0".to_string()
    }
}

/// The black-positive margin of a `final_score` text (`B+3.5`, `W+7`, `0`, any case); `None`
/// for anything else (a resignation `B+R`, a time win, an unknown score).
pub(crate) fn parse_score(text: &str) -> Option<f64> {
    let text = text.trim();
    if text == "0" {
        return Some(0.0);
    }
    let (side, points) = text.split_once('+')?;
    let points: f64 = points.parse().ok().filter(|p: &f64| p.is_finite())?;
    match side.to_ascii_uppercase().as_str() {
        "B" => Some(points),
        "W" => Some(-points),
        _ => None,
    }
}

/// tabula's own score of a finished Go game as `final_score` text: the Tromp-Taylor margin
/// ([`Abilities::go_margin`]; `0` for a game drawn on a repeated board); `None` for a game
/// that is no Go board.
pub(crate) fn go_score<G: Abilities>(g: &G, s: &G::State) -> Option<String> {
    g.go_margin(s).map(score_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Game;

    #[test]
    fn commands_are_preprocessed_and_parsed() {
        let c = parse_command("12 play\tB  c3 # a comment\r").unwrap();
        assert_eq!(c.id, Some(12));
        assert_eq!(c.name, "play");
        assert_eq!(c.args, ["B", "c3"]);
        let c = parse_command("genmove w").unwrap();
        assert_eq!((c.id, c.name.as_str()), (None, "genmove"));
        assert_eq!(parse_command("  # only a comment"), None);
        assert_eq!(parse_command("\x07\t "), None);
        assert_eq!(parse_command("3").unwrap().name, "");
    }

    #[test]
    fn responses_end_with_an_empty_line() {
        assert_eq!(response(Some(3), &Ok("C3".into())), "=3 C3\n\n");
        assert_eq!(response(None, &Ok(String::new())), "=\n\n");
        assert_eq!(
            response(None, &Err("illegal move".into())),
            "? illegal move\n\n"
        );
        assert_eq!(response(Some(1), &Ok("a\n\nb\n".into())), "=1 a\nb\n\n");
        assert_eq!(response(None, &Ok("\n A\n1 .\n".into())), "=\n A\n1 .\n\n");
    }

    /// The mapping of the module docs: GTP columns skip I, rows count from the bottom, and a
    /// point's action is row * N + column (OpenSpiel's numbering, tabula's action names).
    #[test]
    fn vertices_map_to_openspiel_actions() {
        let n = 9;
        for (text, action) in [
            ("A1", 0),
            ("a1", 0),
            ("H1", 7),
            ("J1", 8),
            ("A2", 9),
            ("E5", 40),
            ("J9", 80),
            ("pass", 81),
            ("PASS", 81),
        ] {
            let v = Vertex::parse(text, n).unwrap();
            assert_eq!(v.action(n), action, "{text}");
            assert_eq!(Vertex::of_action(action, n), v);
        }
        for bad in [
            "I5", "K1", "A10", "A0", "A", "5", "", "A-1", "A+1", "resign",
        ] {
            assert_eq!(Vertex::parse(bad, n), None, "{bad}");
        }
        assert_eq!(Vertex::of_action(80, 9).name(), "J9");
        assert_eq!(Vertex::parse("T19", 19).unwrap().action(19), 360);
        // tabula's own action names are these vertices.
        let g: crate::games::AnyGame = "go:9x9".parse().unwrap();
        let crate::games::AnyGame::Go(g) = g else {
            panic!()
        };
        let s = g.initial_state();
        for a in 0..=81u16 {
            let name = g.action_name(&s, a);
            assert_eq!(Vertex::parse(&name, 9).unwrap().action(9), a, "{name}");
            assert_eq!(
                Vertex::of_action(a, 9).name().to_uppercase(),
                name.to_uppercase()
            );
        }
    }

    #[test]
    fn scores_print_and_parse() {
        for (m, t) in [(3.5, "B+3.5"), (-7.0, "W+7"), (0.0, "0"), (-0.5, "W+0.5")] {
            assert_eq!(score_text(m), t);
            assert_eq!(parse_score(t), Some(m));
        }
        assert_eq!(parse_score("w+8.5"), Some(-8.5));
        for bad in ["B+R", "W+Resign", "", "X+1", "B+", "B+inf"] {
            assert_eq!(parse_score(bad), None, "{bad}");
        }
    }
}
