//! What players need from a game beyond [`Game`]: the abilities only some games have (an
//! exact solution, an exact search per position, a greedy heuristic), with each registry
//! game's answers.

use super::PlayerError;
use crate::game::{Action, Game, Turn};
use crate::games::{Cdc, Cdc4x8, Checkers, ConnectFour, Ewn};
use crate::solver::{Solution, Solvable};
use crate::store::Store;

/// What players need from a game beyond [`Game`]: abilities only some games have. Every
/// registry game implements it; a game without an ability keeps the default (unsupported).
pub trait PlayerGame: Game {
    /// The exact solution for the optimal player, from the store (solved and saved first if
    /// the store has none).
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        let _ = store;
        Err(PlayerError::Unsupported {
            player: "optimal".into(),
            variant: self.variant(),
            reason: "this variant is not solvable".into(),
        })
    }

    /// Whether the optimal player searches each position exactly instead of loading a
    /// solution (Connect Four boards too large to enumerate, e.g. 7x6).
    fn searches_exactly(&self) -> bool {
        false
    }

    /// With [`PlayerGame::searches_exactly`]: every legal action of decision state `s` with
    /// its exact value in [-1, 1] for the mover, ascending by action.
    fn searched_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        let _ = s;
        None
    }

    /// The greedy heuristic: for each legal action of `s` (in order), its forward gain Psi
    /// and how far back its piece stands (larger = further back). `false` when the game has
    /// no greedy player.
    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        let _ = (s, legal, out);
        false
    }
}

/// Loads the stored solution of `g`, or solves it and saves it first.
pub fn load_or_solve<G: Solvable>(
    g: &G,
    store: &mut Store,
) -> Result<Solution<G::Key>, PlayerError> {
    if let Some((sol, _)) = crate::solver::load_solution::<G::Key>(store, &g.variant())? {
        return Ok(sol);
    }
    let t = std::time::Instant::now();
    let sol = crate::solver::solve(g, &|_| {})?;
    let start = crate::solver::start_value(g, &sol).ok_or_else(|| PlayerError::Unsolved {
        variant: g.variant(),
        position: g.notation(&g.initial_state()),
    })?;
    crate::solver::save_solution(store, &sol, start, t.elapsed().as_secs_f64())?;
    Ok(sol)
}

impl PlayerGame for Cdc {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }
}

impl PlayerGame for Cdc4x8 {}

impl PlayerGame for Ewn {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }
}

impl PlayerGame for ConnectFour {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }

    fn searches_exactly(&self) -> bool {
        self.check_solvable().is_err() && crate::games::connect4::solver::searchable(self)
    }

    fn searched_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>> {
        crate::games::connect4::solver::action_values(self, s)
    }
}

impl PlayerGame for Checkers {
    fn solution(&self, store: &mut Store) -> Result<Solution<Self::Key>, PlayerError> {
        load_or_solve(self, store)
    }

    fn greedy_features(
        &self,
        s: &Self::State,
        legal: &[Action],
        out: &mut Vec<(i32, i32)>,
    ) -> bool {
        out.clear();
        let Turn::Player(p) = self.turn(s) else {
            return true;
        };
        // Psi measured from the square (0, 0), where r - c = 0, is how far back a square is.
        let origin = self.square(0, 0);
        for &a in legal {
            let (from, to) = self.move_squares(s, a);
            out.push((
                self.forward_gain(p, from, to),
                self.forward_gain(p, from, origin),
            ));
        }
        true
    }
}
