//! Small games for the search tests: an explicit game tree (hand-computed visit counts) and
//! tic-tac-toe (deterministic, solvable in the test).

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, Turn};

/// A node of an explicit game tree.
#[derive(Clone, Debug)]
pub(crate) enum TNode {
    /// The player and the children by action 0, 1, ...
    Decision(Player, Vec<u16>),
    /// (child, probability) by outcome 0, 1, ...
    Chance(Vec<(u16, f64)>),
    Terminal(GameResult),
}

/// An explicit game tree; node 0 is the start. The state is the node index.
#[derive(Clone, Debug)]
pub(crate) struct TreeGame {
    pub nodes: Vec<TNode>,
}

impl TreeGame {
    /// Player 0 picks one of the results.
    pub(crate) fn pick(results: &[GameResult]) -> TreeGame {
        let mut nodes = vec![TNode::Decision(
            Player::P0,
            (1..=results.len() as u16).collect(),
        )];
        nodes.extend(results.iter().map(|&r| TNode::Terminal(r)));
        TreeGame { nodes }
    }
}

impl Game for TreeGame {
    type State = u16;
    type Key = u64;

    fn variant(&self) -> String {
        "tree".into()
    }
    fn num_actions(&self) -> usize {
        16
    }
    fn initial_state(&self) -> u16 {
        0
    }
    fn turn(&self, s: &u16) -> Turn {
        match &self.nodes[*s as usize] {
            TNode::Decision(p, _) => Turn::Player(*p),
            TNode::Chance(_) => Turn::Chance,
            TNode::Terminal(r) => Turn::Terminal(*r),
        }
    }
    fn legal_actions(&self, s: &u16, out: &mut Vec<Action>) {
        out.clear();
        if let TNode::Decision(_, c) = &self.nodes[*s as usize] {
            out.extend(0..c.len() as u16);
        }
    }
    fn apply(&self, s: &u16, a: Action) -> u16 {
        match &self.nodes[*s as usize] {
            TNode::Decision(_, c) => c[a as usize],
            _ => panic!("not a decision"),
        }
    }
    fn chance_outcomes(&self, s: &u16, out: &mut Vec<ChanceOutcome>) {
        out.clear();
        if let TNode::Chance(c) = &self.nodes[*s as usize] {
            out.extend(c.iter().enumerate().map(|(i, &(_, prob))| ChanceOutcome {
                outcome: i as u16,
                prob,
            }));
        }
    }
    fn apply_chance(&self, s: &u16, o: Outcome) -> u16 {
        match &self.nodes[*s as usize] {
            TNode::Chance(c) => c[o as usize].0,
            _ => panic!("not a chance node"),
        }
    }
    fn key(&self, s: &u16) -> u64 {
        u64::from(*s)
    }
    fn state_from_key(&self, k: u64) -> Result<u16, GameError> {
        Ok(k as u16)
    }
    fn action_name(&self, _: &u16, a: Action) -> String {
        a.to_string()
    }
    fn outcome_name(&self, _: &u16, o: Outcome) -> String {
        o.to_string()
    }
    fn render(&self, s: &u16) -> String {
        s.to_string()
    }
    fn notation(&self, s: &u16) -> String {
        s.to_string()
    }
    fn parse_notation(&self, text: &str) -> Result<u16, GameError> {
        text.parse()
            .map_err(|_| GameError::bad_position("tree", text, "not a node"))
    }
}

/// Tic-tac-toe: squares 0..9 row-major, X (player 0) first.
#[derive(Clone, Debug)]
pub(crate) struct TicTacToe;

#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Ttt {
    pub cells: [u8; 9], // 0 empty, 1 X, 2 O
    pub result: Option<GameResult>,
}

const LINES: [[usize; 3]; 8] = [
    [0, 1, 2],
    [3, 4, 5],
    [6, 7, 8],
    [0, 3, 6],
    [1, 4, 7],
    [2, 5, 8],
    [0, 4, 8],
    [2, 4, 6],
];

impl TicTacToe {
    /// A position from a string of 9 cells `.xo`.
    pub(crate) fn from_cells(text: &str) -> Ttt {
        let mut s = Ttt {
            cells: [0; 9],
            result: None,
        };
        for (i, ch) in text.chars().enumerate() {
            s.cells[i] = match ch {
                'x' => 1,
                'o' => 2,
                _ => 0,
            };
        }
        s.result = Self::judge(&s.cells);
        s
    }

    fn judge(cells: &[u8; 9]) -> Option<GameResult> {
        for l in LINES {
            let c = cells[l[0]];
            if c != 0 && cells[l[1]] == c && cells[l[2]] == c {
                return Some(GameResult::Win(Player::from_index(c as usize - 1)));
            }
        }
        cells.iter().all(|&c| c != 0).then_some(GameResult::Draw)
    }

    fn mover(s: &Ttt) -> Player {
        let n = s.cells.iter().filter(|&&c| c != 0).count();
        Player::from_index(n % 2)
    }
}

impl Game for TicTacToe {
    type State = Ttt;
    type Key = u64;

    fn variant(&self) -> String {
        "ttt".into()
    }
    fn num_actions(&self) -> usize {
        9
    }
    fn initial_state(&self) -> Ttt {
        TicTacToe::from_cells(".........")
    }
    fn turn(&self, s: &Ttt) -> Turn {
        match s.result {
            Some(r) => Turn::Terminal(r),
            None => Turn::Player(Self::mover(s)),
        }
    }
    fn legal_actions(&self, s: &Ttt, out: &mut Vec<Action>) {
        out.clear();
        if s.result.is_none() {
            out.extend((0..9).filter(|&i| s.cells[i] == 0).map(|i| i as u16));
        }
    }
    fn apply(&self, s: &Ttt, a: Action) -> Ttt {
        let mut t = *s;
        t.cells[a as usize] = Self::mover(s).index() as u8 + 1;
        t.result = Self::judge(&t.cells);
        t
    }
    fn chance_outcomes(&self, _: &Ttt, out: &mut Vec<ChanceOutcome>) {
        out.clear();
    }
    fn apply_chance(&self, s: &Ttt, _: Outcome) -> Ttt {
        *s
    }
    fn key(&self, s: &Ttt) -> u64 {
        s.cells.iter().fold(0, |k, &c| k * 3 + u64::from(c))
    }
    fn state_from_key(&self, mut k: u64) -> Result<Ttt, GameError> {
        let mut cells = [0u8; 9];
        for i in (0..9).rev() {
            cells[i] = (k % 3) as u8;
            k /= 3;
        }
        Ok(Ttt {
            cells,
            result: Self::judge(&cells),
        })
    }
    fn action_name(&self, _: &Ttt, a: Action) -> String {
        a.to_string()
    }
    fn outcome_name(&self, _: &Ttt, o: Outcome) -> String {
        o.to_string()
    }
    fn render(&self, s: &Ttt) -> String {
        self.notation(s)
    }
    fn notation(&self, s: &Ttt) -> String {
        s.cells
            .iter()
            .map(|&c| ['.', 'x', 'o'][c as usize])
            .collect()
    }
    fn parse_notation(&self, text: &str) -> Result<Ttt, GameError> {
        Ok(TicTacToe::from_cells(text))
    }
}

/// Exact value in [0, 1] of a tic-tac-toe position for player 0 (plain minimax).
pub(crate) fn ttt_value(g: &TicTacToe, s: &Ttt) -> f64 {
    match g.turn(s) {
        Turn::Terminal(r) => r.score(Player::P0),
        Turn::Player(p) => {
            let mut acts = Vec::new();
            g.legal_actions(s, &mut acts);
            let vals = acts.iter().map(|&a| ttt_value(g, &g.apply(s, a)));
            if p == Player::P0 {
                vals.fold(0.0, f64::max)
            } else {
                vals.fold(1.0, f64::min)
            }
        }
        Turn::Chance => unreachable!(),
    }
}
