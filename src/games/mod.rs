//! The games, and the one enum at the edge that maps a variant name to a game.
//!
//! Every algorithm is generic over [`Game`]; only the CLI needs to turn a string such as
//! `cdc:PPPP` into a concrete game, which [`AnyGame`] does (like shakmaty's
//! `VariantPosition`). [`with_game!`](crate::with_game) runs generic code on whichever game
//! it holds.
//!
//! Variant names are `family:params[,option=value...]`, e.g. `cdc:KPPP`,
//! `cdc:4x8,no_progress=50,repetition=off`, `ewn:3x3x3`, `c4:5x4`, `checkers:5x5-3,win=filled`,
//! `go:9x9,komi=6.5`.

pub(crate) mod abilities;
pub mod cdc;
pub mod checkers;
pub mod connect4;
pub mod ewn;
pub mod go;
pub(crate) mod greedy;
pub mod inputs;

use std::fmt;
use std::str::FromStr;

use crate::error::GameError;
use crate::game::Game;

pub use abilities::{Abilities, GoRules, ReferencePosition, ReferenceSet};
pub(crate) use abilities::{MetricText, ReferenceMetrics};
pub use cdc::{Cdc, Cdc4x8};
pub use checkers::Checkers;
pub use connect4::ConnectFour;
pub use ewn::Ewn;
pub use go::{Go9, Go19};
pub use greedy::GreedyMode;

/// Any game of the registry.
#[derive(Clone, Debug)]
pub enum AnyGame {
    /// 2x4 Chinese dark chess, one of the 24 material combinations.
    Cdc(Cdc),
    /// Standard 4x8 Chinese dark chess.
    Cdc4x8(Cdc4x8),
    Ewn(Ewn),
    ConnectFour(ConnectFour),
    Checkers(Checkers),
    /// Go on boards up to 9x9.
    Go(Go9),
    /// Go on boards from 10x10 to 19x19 (a larger state per position).
    GoLarge(Go19),
}

/// Runs `$body` with `$g` bound to the concrete game inside an [`AnyGame`].
#[macro_export]
macro_rules! with_game {
    ($any:expr, |$g:ident| $body:expr) => {
        match $any {
            $crate::games::AnyGame::Cdc($g) => $body,
            $crate::games::AnyGame::Cdc4x8($g) => $body,
            $crate::games::AnyGame::Ewn($g) => $body,
            $crate::games::AnyGame::ConnectFour($g) => $body,
            $crate::games::AnyGame::Checkers($g) => $body,
            $crate::games::AnyGame::Go($g) => $body,
            $crate::games::AnyGame::GoLarge($g) => $body,
        }
    };
}

/// Runs `$body` with `$g` bound to the game inside an [`AnyGame`] if that game implements
/// [`Solvable`](crate::solver::Solvable), else `$other` with `$any` bound to the `AnyGame`.
#[macro_export]
macro_rules! with_solvable_game {
    ($any:expr, |$g:ident| $body:expr, |$other:ident| $unsolvable:expr) => {
        match $any {
            $crate::games::AnyGame::Cdc($g) => $body,
            $crate::games::AnyGame::Ewn($g) => $body,
            $crate::games::AnyGame::ConnectFour($g) => $body,
            $crate::games::AnyGame::Checkers($g) => $body,
            $other @ ($crate::games::AnyGame::Cdc4x8(_)
            | $crate::games::AnyGame::Go(_)
            | $crate::games::AnyGame::GoLarge(_)) => $unsolvable,
        }
    };
}

impl AnyGame {
    /// The canonical variant name (parses back to an equal game).
    pub fn variant(&self) -> String {
        with_game!(self, |g| g.variant())
    }

    /// |A| of the game.
    pub fn num_actions(&self) -> usize {
        with_game!(self, |g| g.num_actions())
    }

    /// Whether two stores' solutions of this variant agree in content though their bytes may
    /// differ ([`crate::solver::solutions_agree`]); `None` where either store has none or the
    /// game has no exact solver.
    pub fn solutions_agree(
        &self,
        a: &crate::store::Store,
        b: &crate::store::Store,
    ) -> Result<Option<bool>, crate::store::StoreError> {
        with_solvable_game!(
            self,
            |g| crate::solver::solutions_agree(g, a, b),
            |_other| Ok(None)
        )
    }
}

impl FromStr for AnyGame {
    type Err = GameError;

    fn from_str(s: &str) -> Result<AnyGame, GameError> {
        let spec = VariantSpec::parse(s)?;
        match spec.family.as_str() {
            "cdc" if spec.params.eq_ignore_ascii_case("4x8") => {
                Ok(AnyGame::Cdc4x8(Cdc4x8::from_spec(&spec)?))
            }
            "cdc" => Ok(AnyGame::Cdc(Cdc::from_spec(&spec)?)),
            "ewn" => Ok(AnyGame::Ewn(Ewn::from_spec(&spec)?)),
            "c4" => Ok(AnyGame::ConnectFour(ConnectFour::from_spec(&spec)?)),
            "checkers" => Ok(AnyGame::Checkers(Checkers::from_spec(&spec)?)),
            "go" => {
                let params = go::GoParams::from_spec(&spec)?;
                Ok(if params.small() {
                    AnyGame::Go(Go9::new(&params))
                } else {
                    AnyGame::GoLarge(Go19::new(&params))
                })
            }
            other => Err(GameError::UnknownFamily {
                family: other.to_string(),
                allowed: FAMILIES
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

impl fmt::Display for AnyGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.variant())
    }
}

/// What `tabula games` prints about a family.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FamilyInfo {
    pub name: &'static str,
    pub title: &'static str,
    /// The variant syntax, e.g. `ewn:WxHxk`.
    pub syntax: &'static str,
    /// Parameters and options with their allowed values and defaults.
    pub parameters: &'static [(&'static str, &'static str)],
    /// |A|, as a formula where it depends on the parameters.
    pub action_space: &'static str,
    pub examples: &'static [&'static str],
}

/// Every family, in the order `tabula games` lists them.
pub const FAMILIES: &[FamilyInfo] = &[
    cdc::FAMILY,
    ewn::FAMILY,
    connect4::FAMILY,
    checkers::FAMILY,
    go::FAMILY,
];

/// An ability only some games have (see [`Abilities`]), named for the texts that say which
/// games have it ([`families_with`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ability {
    /// An exact solution (the optimal player, the exact metrics).
    #[cfg_attr(not(test), expect(dead_code, reason = "no error text names it yet"))]
    Solution,
    /// The greedy heuristic (the greedy players, greedy self-play and opponent).
    Greedy,
    /// A mirror image (data augmentation).
    Mirror,
    /// Random placements (the mixed start policy).
    RandomPlacement,
    /// The rows a move advances (Q-learning's shaped reward).
    ForwardGain,
    /// A race to the opposite base (tabula rasa's soft move limit).
    Race,
    /// Reference test sets.
    #[cfg_attr(not(test), expect(dead_code, reason = "no error text names it yet"))]
    ReferenceSets,
    /// A Go board the Go Text Protocol speaks of.
    GoBoard,
}

/// Whether game `G` has ability `a` (on some of its variants).
fn has<G: Abilities>(a: Ability) -> bool {
    let x = &G::ABILITIES;
    match a {
        Ability::Solution => x.solution.is_some(),
        Ability::Greedy => x.greedy_features.is_some(),
        Ability::Mirror => x.mirror.is_some(),
        Ability::RandomPlacement => x.random_placement.is_some(),
        Ability::ForwardGain => x.forward_gain.is_some(),
        Ability::Race => x.race.is_some(),
        Ability::ReferenceSets => x.reference_sets.is_some(),
        Ability::GoBoard => x.go_board.is_some(),
    }
}

/// The families that have ability `a` on some variant, by short name (a family's title up
/// to its parenthesis: `Chinese Checkers`, `Connect Four`, `Go`), sorted: read from the
/// games' own [`Abilities`], so an error text that names them cannot go stale.
pub(crate) fn families_with(a: Ability) -> Vec<&'static str> {
    let per_family = [
        (&cdc::FAMILY, has::<Cdc>(a) || has::<Cdc4x8>(a)),
        (&ewn::FAMILY, has::<Ewn>(a)),
        (&connect4::FAMILY, has::<ConnectFour>(a)),
        (&checkers::FAMILY, has::<Checkers>(a)),
        (&go::FAMILY, has::<Go9>(a) || has::<Go19>(a)),
    ];
    let mut names: Vec<&str> = per_family
        .iter()
        .filter(|(_, has)| *has)
        .map(|(f, _)| f.title.split(" (").next().unwrap_or(f.title))
        .collect();
    names.sort_unstable();
    names
}

/// [`families_with`] in words with its verb: `Chinese Checkers has`, `Chinese Checkers and
/// Connect Four have`, `no game has`.
pub(crate) fn families_with_text(a: Ability) -> String {
    let names = families_with(a);
    match names.as_slice() {
        [] => "no game has".to_string(),
        [one] => format!("{one} has"),
        [rest @ .., last] => format!("{} and {last} have", rest.join(", ")),
    }
}

/// The reference sets and their metrics of every game of the registry (only Connect Four
/// has any: a learner declares its reference metrics once for every game, and
/// `registry_reference_sets_are_these` keeps this the registry's).
pub(crate) const REFERENCE_METRICS: &ReferenceMetrics = &connect4::test_sets::C4_METRICS;

/// A variant name split into family, parameters and `key=value` options.
///
/// Each game's `from_spec` reads its parameters, takes the options it knows with
/// [`VariantSpec::take`] and finishes with [`VariantSpec::finish`], which rejects unknown ones.
#[derive(Clone, Debug)]
pub(crate) struct VariantSpec {
    /// The whole text as given, for error messages.
    pub text: String,
    pub family: String,
    pub params: String,
    options: Vec<(String, String)>,
    taken: Vec<bool>,
}

impl VariantSpec {
    pub(crate) fn parse(text: &str) -> Result<VariantSpec, GameError> {
        let text = text.trim();
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or("");
        let (family, params) = match head.split_once(':') {
            Some((f, p)) => (f.trim().to_ascii_lowercase(), p.trim().to_string()),
            None => (head.trim().to_ascii_lowercase(), String::new()),
        };
        if family.is_empty() {
            return Err(GameError::bad_variant(
                text,
                "expected `family:params`, e.g. cdc:PPPP, ewn:3x3x3, c4:7x6, checkers:5x5-3, go:9x9",
            ));
        }
        let mut options = Vec::new();
        for part in parts {
            let Some((k, v)) = part.split_once('=') else {
                return Err(GameError::bad_variant(
                    text,
                    format!("option `{part}` is not of the form key=value"),
                ));
            };
            let k = k.trim().to_ascii_lowercase();
            if options.iter().any(|(seen, _)| *seen == k) {
                return Err(GameError::bad_variant(
                    text,
                    format!("option `{k}` given twice"),
                ));
            }
            options.push((k, v.trim().to_string()));
        }
        let taken = vec![false; options.len()];
        Ok(VariantSpec {
            text: text.to_string(),
            family,
            params,
            options,
            taken,
        })
    }

    /// The value of option `key`, if given, marking it as known.
    pub(crate) fn take(&mut self, key: &str) -> Option<String> {
        let i = self.options.iter().position(|(k, _)| k == key)?;
        self.taken[i] = true;
        Some(self.options[i].1.clone())
    }

    /// Option `key` as an integer in `range` (or `default` when absent).
    pub(crate) fn take_int(
        &mut self,
        key: &str,
        range: std::ops::RangeInclusive<u32>,
        default: u32,
    ) -> Result<u32, GameError> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if range.contains(&n) => Ok(n),
                _ => Err(self.error(format!(
                    "option {key}={v} is out of range; allowed: an integer {}..={}",
                    range.start(),
                    range.end()
                ))),
            },
        }
    }

    /// Rejects options no `take` asked for, naming them and the allowed ones.
    pub(crate) fn finish(&self, allowed: &[&str]) -> Result<(), GameError> {
        for ((k, _), taken) in self.options.iter().zip(&self.taken) {
            if !taken {
                let allowed = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(self.error(format!("unknown option `{k}`; allowed options: {allowed}")));
            }
        }
        Ok(())
    }

    /// A `BadVariant` error about this text.
    pub(crate) fn error(&self, reason: impl Into<String>) -> GameError {
        GameError::bad_variant(self.text.clone(), reason)
    }
}

/// Parses `AxB` or `AxBxC` dimension lists such as `3x4x3`.
pub(crate) fn parse_dims(
    spec: &VariantSpec,
    text: &str,
    n: usize,
    what: &str,
) -> Result<Vec<u32>, GameError> {
    let dims: Option<Vec<u32>> = text
        .split(['x', 'X'])
        .map(|d| d.trim().parse().ok())
        .collect();
    match dims {
        Some(d) if d.len() == n => Ok(d),
        _ => Err(spec.error(format!("expected {what}, got `{text}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registry game's reference sets are [`REFERENCE_METRICS`] (the learners declare
    /// that one list), and the set names are the embedded files'.
    #[test]
    fn registry_reference_sets_are_these() {
        fn sets<G: Abilities>() -> Option<&'static ReferenceMetrics> {
            G::ABILITIES.reference_sets.map(|r| r.metrics)
        }
        let all = [
            sets::<Cdc>(),
            sets::<Cdc4x8>(),
            sets::<Ewn>(),
            sets::<ConnectFour>(),
            sets::<Checkers>(),
            sets::<Go9>(),
            sets::<Go19>(),
        ];
        let some: Vec<_> = all.into_iter().flatten().collect();
        assert_eq!(some.len(), 1);
        assert_eq!(some[0], REFERENCE_METRICS);
        let files: Vec<&str> = connect4::test_sets::C4_SETS.iter().map(|s| s.0).collect();
        assert_eq!(REFERENCE_METRICS.sets, files);
        let m = REFERENCE_METRICS;
        assert_eq!(m.policy.len(), 2 + 2 * m.sets.len());
        assert_eq!(m.search.len(), 1 + m.sets.len());
    }

    /// The abilities' texts name the families that have them, from the games' own
    /// declarations.
    #[test]
    fn families_with_an_ability() {
        assert_eq!(
            families_with_text(Ability::Mirror),
            "Chinese Checkers and Connect Four have"
        );
        assert_eq!(families_with_text(Ability::Greedy), "Chinese Checkers has");
        assert_eq!(families_with(Ability::GoBoard), ["Go"]);
        assert_eq!(families_with(Ability::ReferenceSets), ["Connect Four"]);
        assert_eq!(
            families_with(Ability::Solution),
            [
                "Chinese Checkers",
                "Chinese dark chess",
                "Connect Four",
                "EinStein würfelt nicht!"
            ]
        );
    }

    #[test]
    fn spec_parsing() {
        let mut s = VariantSpec::parse("CDC:PPPP, no_progress=50 ,repetition=off").unwrap();
        assert_eq!(s.family, "cdc");
        assert_eq!(s.params, "PPPP");
        assert_eq!(s.take_int("no_progress", 1..=64, 40).unwrap(), 50);
        assert!(s.finish(&["no_progress", "repetition"]).is_err());
        assert_eq!(s.take("repetition").as_deref(), Some("off"));
        assert!(s.finish(&["no_progress", "repetition"]).is_ok());
        assert!(VariantSpec::parse("cdc:PPPP,oops").is_err());
        assert!(VariantSpec::parse("cdc:PPPP,a=1,a=2").is_err());
        assert!(VariantSpec::parse(":x").is_err());
    }

    /// Plays random games and checks every decision state's planes: the right length, finite,
    /// a function of the position key (equal keys, equal planes), and the encoder found at
    /// run time agrees with the trait.
    fn check_encoding<G: crate::nn::encode::Encode + Abilities>(g: &G, games: usize) -> usize {
        use crate::game::Turn;
        use crate::rng::{stream, uniform_index};
        let dynamic = g.encoder().expect("every game has an encoding");
        assert_eq!(dynamic.planes(), crate::nn::encode::Encode::planes(g));
        let len = crate::nn::encode::Encode::planes(g).len();
        let mut rng = stream(7, "encode-test");
        let (mut actions, mut outcomes) = (Vec::new(), Vec::new());
        let mut distinct = std::collections::BTreeSet::new();
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..games {
            let mut s = g.initial_state();
            loop {
                match g.turn(&s) {
                    Turn::Terminal(_) => break,
                    Turn::Chance => {
                        g.chance_outcomes(&s, &mut outcomes);
                        let o = outcomes[uniform_index(&mut rng, outcomes.len())].outcome;
                        s = g.apply_chance(&s, o);
                    }
                    Turn::Player(p) => {
                        let mut a = vec![f32::NAN; len];
                        crate::nn::encode::Encode::encode(g, &s, &mut a);
                        let mut b = vec![f32::NAN; len];
                        dynamic.encode(&s, &[], &mut b);
                        assert!(a.iter().all(|x| x.is_finite()));
                        assert_eq!(a, b);
                        let bits: Vec<u32> = a.iter().map(|x| x.to_bits()).collect();
                        if let Some(prev) = seen.insert((g.key(&s), p), bits.clone()) {
                            assert_eq!(prev, bits, "planes depend on more than the position");
                        }
                        distinct.insert(bits);
                        g.legal_actions(&s, &mut actions);
                        s = g.apply(&s, actions[uniform_index(&mut rng, actions.len())]);
                    }
                }
            }
        }
        distinct.len()
    }

    /// Every game's input planes.
    #[test]
    fn every_game_encodes_its_decision_states() {
        for v in [
            "ewn:3x3x3",
            "cdc:PPPP",
            "cdc:KGMR",
            "c4:5x4",
            "checkers:5x5-3",
            "cdc:4x8",
            "go:5x5",
            "go:11x11",
        ] {
            let distinct = match v.parse::<AnyGame>().unwrap() {
                AnyGame::Cdc(g) => check_encoding(&g, 20),
                AnyGame::Cdc4x8(g) => check_encoding(&g, 20),
                AnyGame::Ewn(g) => check_encoding(&g, 20),
                AnyGame::ConnectFour(g) => check_encoding(&g, 20),
                AnyGame::Checkers(g) => check_encoding(&g, 20),
                AnyGame::Go(g) => check_encoding(&g, 3),
                AnyGame::GoLarge(g) => check_encoding(&g, 1),
            };
            assert!(distinct > 5, "{v}: only {distinct} distinct encodings");
        }
    }

    #[test]
    fn unknown_family_names_the_allowed_ones() {
        let e = "chess:8x8".parse::<AnyGame>().unwrap_err().to_string();
        assert!(
            e.contains("chess") && e.contains("ewn") && e.contains("checkers"),
            "{e}"
        );
    }
}
