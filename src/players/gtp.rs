//! The `gtp:COMMAND` player: any GTP engine as a player of Go (docs/gtp.md).
//!
//! Each game starts its own engine and sets it up (`boardsize N`, `komi K`, `clear_board`).
//! At each of its decisions the agent first tells the engine the opponent's move with `play`
//! (found as the one legal move that leads from the position after the engine's last move to
//! the position now), then asks `genmove` and checks that the answer is a legal move of
//! tabula's rules; a `resign` is played as a pass (tabula's games have no resignation). When
//! the game is over ([`GtpAgent::finish`]) the last move is sent too, the engine's own
//! `final_score` asked and set beside tabula's Tromp-Taylor score: a [`ScoreCheck`].
//!
//! The engine draws its own randomness (tabula's streams cannot reach it): a game against an
//! engine replays only as far as the engine is deterministic (GNU Go is, given `--seed`).

use std::time::Duration;

use serde::Serialize;

use super::PlayerError;
use crate::game::{Action, Game, Turn, is_legal};
use crate::games::{Abilities, Ability, families_with};
use crate::gtp::{Color, GtpClient, GtpError, Vertex, go_score, parse_score};
use crate::play::Decision;

/// How long an answer is awaited before the engine is declared hung and killed.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// The engine's `final_score` beside tabula's score of the same finished game.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoreCheck {
    /// The engine's command line.
    pub engine: String,
    /// The engine's answer to `final_score` (`? ...` when it refused).
    pub engine_score: String,
    /// tabula's Tromp-Taylor score of the final board, as `final_score` text.
    pub tabula_score: String,
    /// Whether the two give the same margin.
    pub agree: bool,
}

/// The board side and komi of Go game `g` (its [`Abilities::go_rules`]); for a game without
/// them, the error that a `gtp:` player (engine `command`) cannot play it.
fn go_board<G: Abilities>(g: &G, command: &str) -> Result<(usize, f64), PlayerError> {
    g.go_rules()
        .map(|r| (r.side, r.komi))
        .ok_or_else(|| PlayerError::Unsupported {
            player: format!("gtp:{command}"),
            variant: g.variant(),
            reason: format!(
                "a GTP engine plays {} only",
                families_with(Ability::GoBoard).join(" and ")
            ),
        })
}

/// Starts the engine once to see that it runs and speaks GTP on this board size (a clear
/// error before any game otherwise).
pub(crate) fn probe<G: Abilities>(g: &G, command: &str) -> Result<(), PlayerError> {
    let (n, _) = go_board(g, command)?;
    let mut client = GtpClient::spawn(command, ANSWER_TIMEOUT)?;
    client.send("protocol_version")?;
    client.send(&format!("boardsize {n}"))?;
    Ok(())
}

/// One game's engine.
#[derive(Debug)]
pub(crate) struct GtpAgent<G: Game> {
    command: String,
    client: Option<GtpClient>,
    /// The position the engine is in (after its own last move).
    known: Option<G::State>,
    actions: Vec<Action>,
}

impl<G: Abilities> GtpAgent<G> {
    pub(crate) fn new(command: &str) -> GtpAgent<G> {
        GtpAgent {
            command: command.to_string(),
            client: None,
            known: None,
            actions: Vec::new(),
        }
    }

    /// The board side, or the refusal of a game that is not Go.
    fn board(&self, g: &G) -> Result<(usize, f64), PlayerError> {
        go_board(g, &self.command)
    }

    /// Starts the engine if needed and brings it to position `s`: the engine's last position
    /// or one move after it (the opponent's move, sent with `play`).
    fn sync(&mut self, g: &G, s: &G::State) -> Result<&mut GtpClient, PlayerError> {
        let (n, komi) = self.board(g)?;
        if self.client.is_none() {
            let mut client = GtpClient::spawn(&self.command, ANSWER_TIMEOUT)?;
            client.send(&format!("boardsize {n}"))?;
            client.send(&format!("komi {komi}"))?;
            client.send("clear_board")?;
            self.client = Some(client);
            self.known = Some(g.initial_state());
        }
        let known = self.known.unwrap_or_else(|| g.initial_state());
        if known != *s {
            g.legal_actions(&known, &mut self.actions);
            let Some(&a) = self.actions.iter().find(|&&a| g.apply(&known, a) == *s) else {
                return Err(PlayerError::Unsupported {
                    player: format!("gtp:{}", self.command),
                    variant: g.variant(),
                    reason: format!(
                        "position `{}` is not one move after the engine's last position (a GTP \
                         engine plays whole games from the start: no --openings)",
                        g.notation(s)
                    ),
                });
            };
            let Turn::Player(p) = g.turn(&known) else {
                unreachable!("a position with legal actions has a player to move")
            };
            let cmd = format!(
                "play {} {}",
                Color::of_player(p).letter(),
                Vertex::of_action(a, n).name()
            );
            let client = self.client.as_mut().expect("started above");
            client.send(&cmd)?;
            self.known = Some(*s);
        }
        Ok(self.client.as_mut().expect("started above"))
    }

    /// The engine's move in decision state `s`.
    pub(crate) fn decide(&mut self, g: &G, s: &G::State) -> Result<Decision, PlayerError> {
        let (n, _) = self.board(g)?;
        let Turn::Player(p) = g.turn(s) else {
            return Err(crate::search::SearchError::NotADecision("not a decision state").into());
        };
        let cmd = format!("genmove {}", Color::of_player(p).letter());
        let client = self.sync(g, s)?;
        let answer = client.send(&cmd)?;
        let action = if answer.eq_ignore_ascii_case("resign") {
            Vertex::Pass.action(n)
        } else {
            match Vertex::parse(&answer, n) {
                Some(v) => v.action(n),
                None => {
                    let problem = format!("answered `{answer}`, not a vertex of the {n}x{n} board");
                    return Err(client.failure(&cmd, problem).into());
                }
            }
        };
        if !is_legal(g, s, action, &mut self.actions) {
            let client = self.client.as_mut().expect("synced");
            let problem = format!(
                "answered `{answer}`, an illegal move in position `{}`",
                g.notation(s)
            );
            return Err(client.failure(&cmd, problem).into());
        }
        self.known = Some(g.apply(s, action));
        Ok(Decision::Play {
            action,
            search: None,
        })
    }

    /// At the end of the game (final position `s`): the engine's `final_score` beside
    /// tabula's; `None` when the engine never played.
    pub(crate) fn finish(
        &mut self,
        g: &G,
        s: &G::State,
    ) -> Result<Option<ScoreCheck>, PlayerError> {
        if self.client.is_none() {
            return Ok(None);
        }
        let client = self.sync(g, s)?;
        let engine_score = match client.send("final_score") {
            Ok(text) => text,
            Err(GtpError::Refused { message, .. }) => format!("? {message}"),
            Err(e) => return Err(e.into()),
        };
        let tabula_score = go_score(g, s).unwrap_or_default();
        let engine = parse_score(&engine_score);
        let agree = engine.is_some() && engine == parse_score(&tabula_score);
        Ok(Some(ScoreCheck {
            engine: self.command.clone(),
            engine_score,
            tabula_score,
            agree,
        }))
    }
}
