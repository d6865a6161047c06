//! Chinese dark chess (placeholder: being implemented).

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, Outcome, Turn};
use crate::games::{FamilyInfo, VariantSpec};

pub const FAMILY: FamilyInfo = FamilyInfo {
    name: "cdc",
    title: "Chinese dark chess",
    syntax: "cdc:XXXX | cdc:4x8",
    parameters: &[],
    action_space: "40 (2x4), 1056 (4x8)",
    examples: &[],
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cdc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cdc4x8;
impl Cdc4x8 {
    pub fn from_spec(spec: &VariantSpec) -> Result<Cdc4x8, GameError> {
        Err(spec.error("not implemented yet"))
    }
}

impl Cdc {
    pub fn from_spec(spec: &VariantSpec) -> Result<Cdc, GameError> {
        Err(spec.error("not implemented yet"))
    }
}

impl Game for Cdc {
    type State = ();
    type Key = u64;
    fn variant(&self) -> String {
        unimplemented!()
    }
    fn num_actions(&self) -> usize {
        unimplemented!()
    }
    fn initial_state(&self) {}
    fn turn(&self, _: &()) -> Turn {
        unimplemented!()
    }
    fn legal_actions(&self, _: &(), _: &mut Vec<Action>) {
        unimplemented!()
    }
    fn apply(&self, _: &(), _: Action) {}
    fn chance_outcomes(&self, _: &(), _: &mut Vec<ChanceOutcome>) {
        unimplemented!()
    }
    fn apply_chance(&self, _: &(), _: Outcome) {}
    fn key(&self, _: &()) -> u64 {
        unimplemented!()
    }
    fn state_from_key(&self, _: u64) -> Result<(), GameError> {
        unimplemented!()
    }
    fn action_name(&self, _: &(), _: Action) -> String {
        unimplemented!()
    }
    fn outcome_name(&self, _: &(), _: Outcome) -> String {
        unimplemented!()
    }
    fn render(&self, _: &()) -> String {
        unimplemented!()
    }
    fn notation(&self, _: &()) -> String {
        unimplemented!()
    }
    fn parse_notation(&self, _: &str) -> Result<(), GameError> {
        unimplemented!()
    }
}

impl Game for Cdc4x8 {
    type State = ();
    type Key = u64;
    fn variant(&self) -> String {
        unimplemented!()
    }
    fn num_actions(&self) -> usize {
        unimplemented!()
    }
    fn initial_state(&self) {}
    fn turn(&self, _: &()) -> Turn {
        unimplemented!()
    }
    fn legal_actions(&self, _: &(), _: &mut Vec<Action>) {
        unimplemented!()
    }
    fn apply(&self, _: &(), _: Action) {}
    fn chance_outcomes(&self, _: &(), _: &mut Vec<ChanceOutcome>) {
        unimplemented!()
    }
    fn apply_chance(&self, _: &(), _: Outcome) {}
    fn key(&self, _: &()) -> u64 {
        unimplemented!()
    }
    fn state_from_key(&self, _: u64) -> Result<(), GameError> {
        unimplemented!()
    }
    fn action_name(&self, _: &(), _: Action) -> String {
        unimplemented!()
    }
    fn outcome_name(&self, _: &(), _: Outcome) -> String {
        unimplemented!()
    }
    fn render(&self, _: &()) -> String {
        unimplemented!()
    }
    fn notation(&self, _: &()) -> String {
        unimplemented!()
    }
    fn parse_notation(&self, _: &str) -> Result<(), GameError> {
        unimplemented!()
    }
}
