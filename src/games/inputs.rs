//! A position as a network reads it: `tabula encode` and the dashboard's position view
//! (docs/network.md, "Inputs"), so a user can feed an exported model the planes its network
//! was trained on without writing an encoder.

use super::Abilities;
use crate::game::{Game, Turn};

/// A decision state's network input: what [`Abilities::input`] writes for it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NetworkInput {
    /// The input's name (`[learner.network] input`; `position` is every game's default).
    pub input: &'static str,
    /// Channels, height, width.
    pub shape: [usize; 3],
    /// What each channel holds, in channel order.
    pub plane_names: Vec<String>,
    /// How many earlier decision states the input reads (0: the position alone).
    pub past_read: usize,
    /// How many earlier decision states were given (the input read the last `past_read`).
    pub past_given: usize,
    /// The planes, channel major, then rows, then columns.
    pub values: Vec<f32>,
}

/// A position from the text a user gave: the game's notation (as `tabula value` takes it),
/// or on Connect Four also the columns played from the empty board (`4453`, 1-based). The
/// error says what was wrong, not yet what is allowed.
pub fn parse_position<G: Game>(g: &G, text: &str) -> Result<G::State, String> {
    let t = text.trim();
    if g.variant().starts_with("c4:") && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return columns_played(g, t);
    }
    g.parse_notation(t).map_err(|e| e.to_string())
}

/// Connect Four's move-sequence form, columns 1..W, through the actions' names (only
/// Connect Four names its actions `col N`).
fn columns_played<G: Game>(g: &G, moves: &str) -> Result<G::State, String> {
    let mut s = g.initial_state();
    let mut legal = Vec::new();
    for (k, c) in moves.bytes().enumerate() {
        let col = u32::from(c - b'0');
        g.legal_actions(&s, &mut legal);
        let Some(&a) = legal
            .iter()
            .find(|&&a| col >= 1 && g.action_name(&s, a) == format!("col {col}"))
        else {
            return Err(format!("move {} (column {col}) is not legal there", k + 1));
        };
        s = g.apply(&s, a);
    }
    Ok(s)
}

/// The input `input` (`None`: the game's default) of decision state `s`, whose game's
/// earlier decision states are `past` (oldest first; empty: `s` is the first of its game).
/// `Err` says why not: the game has no such input (naming those it has), or `s` is not a
/// decision state.
pub fn network_input<G: Abilities>(
    g: &G,
    input: Option<&str>,
    s: &G::State,
    past: &[G::State],
) -> Result<NetworkInput, String> {
    let encoder = g.input(input)?;
    let name = match input {
        Some(n) => G::ABILITIES
            .inputs
            .iter()
            .find(|i| i.name == n)
            .map_or("position", |i| i.name),
        None => G::ABILITIES.inputs.first().map_or("position", |i| i.name),
    };
    if !matches!(g.turn(s), Turn::Player(_)) {
        return Err(format!(
            "`{}` is not a decision position (it is {}); a network reads positions where a \
             player moves",
            g.notation(s),
            g.turn(s)
        ));
    }
    let planes = encoder.planes();
    let mut values = vec![0.0f32; planes.len()];
    encoder.encode(s, past, &mut values);
    Ok(NetworkInput {
        input: name,
        shape: [planes.channels, planes.height, planes.width],
        plane_names: encoder.plane_names(),
        past_read: encoder.past(),
        past_given: past.len(),
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::AnyGame;
    use crate::with_game;

    /// Every input of every family's examples names each of its channels once.
    #[test]
    fn every_input_names_each_channel() {
        let examples = crate::games::FAMILIES.iter().flat_map(|f| f.examples);
        for example in examples {
            let any: AnyGame = example.parse().expect("an example parses");
            with_game!(&any, |g| {
                for i in inputs_of(g) {
                    let e = (i.make)(g);
                    assert_eq!(
                        e.plane_names().len(),
                        e.planes().channels,
                        "{} input {}",
                        g.variant(),
                        i.name
                    );
                }
            });
        }
    }

    fn inputs_of<G: Abilities>(_: &G) -> &'static [crate::games::abilities::Input<G>] {
        G::ABILITIES.inputs
    }

    #[test]
    fn a_chance_state_is_refused_by_name() {
        let Ok(AnyGame::Ewn(g)) = "ewn:3x3x3".parse::<AnyGame>() else {
            panic!("ewn:3x3x3 is an EWN variant");
        };
        let s = g.initial_state();
        let e = network_input(&g, None, &s, &[]).unwrap_err();
        assert!(e.contains("not a decision position"), "{e}");
        let e = network_input(&g, Some("liu"), &s, &[]).unwrap_err();
        assert!(
            e.contains("no input `liu`") && e.contains("position"),
            "{e}"
        );
    }
}
