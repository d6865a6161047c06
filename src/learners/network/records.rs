//! The network learner's versioned records: weights, optimiser state, the checkpoint root
//! and the evaluation (their bytes are pinned: see the serde impls).

use serde::{Deserialize, Serialize};

use crate::eval::WinRate;
use crate::eval::reference::ReferenceEval;
use crate::learners::gate::GateResult;
use crate::nn::OptimState;
use crate::store::{ObjectHash, Record};

/// `network-params/v1`: a network's weights, in layout order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ParamsRecord {
    pub values: Vec<f32>,
}

impl Record for ParamsRecord {
    const KIND: &'static str = "network-params/v1";
}

/// `network-optimizer/v1`: the optimiser's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct OptimizerRecord {
    pub state: OptimState,
}

impl Record for OptimizerRecord {
    const KIND: &'static str = "network-optimizer/v1";
}

/// Field `i` of a record read as a tuple (`expecting`: how many fields it may have), for the
/// records whose last fields are written only when present.
fn field<'de, T: Deserialize<'de>, A: serde::de::SeqAccess<'de>>(
    seq: &mut A,
    i: usize,
    expecting: &'static str,
) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| serde::de::Error::invalid_length(i, &expecting))
}

/// `network-checkpoint/v1`: the root of a checkpoint. `best`, the weights of the best model
/// M* under gating (learners/gate.rs), is written last and only when present, so a
/// checkpoint without it has the bytes it had before gating existed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckpointRecord {
    pub iteration: u32,
    /// Parameters in all (a check against the run's architecture).
    pub parameters: u64,
    pub params: ObjectHash,
    pub(crate) optimizer: ObjectHash,
    /// Mean losses of the iteration's last training step.
    pub(crate) loss_policy: f64,
    pub(crate) loss_value: f64,
    /// Samples in the replay buffer at the last training.
    pub buffer: u64,
    /// M*'s `network-params/v1` (gating only).
    pub(crate) best: Option<ObjectHash>,
}

impl Serialize for CheckpointRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(7 + usize::from(self.best.is_some()))?;
        t.serialize_element(&self.iteration)?;
        t.serialize_element(&self.parameters)?;
        t.serialize_element(&self.params)?;
        t.serialize_element(&self.optimizer)?;
        t.serialize_element(&self.loss_policy)?;
        t.serialize_element(&self.loss_value)?;
        t.serialize_element(&self.buffer)?;
        if let Some(b) = &self.best {
            t.serialize_element(b)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for CheckpointRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CheckpointRecord, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CheckpointRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a network checkpoint")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CheckpointRecord, A::Error> {
                const E: &str = "7 or 8 fields";
                Ok(CheckpointRecord {
                    iteration: field(&mut seq, 0, E)?,
                    parameters: field(&mut seq, 1, E)?,
                    params: field(&mut seq, 2, E)?,
                    optimizer: field(&mut seq, 3, E)?,
                    loss_policy: field(&mut seq, 4, E)?,
                    loss_value: field(&mut seq, 5, E)?,
                    buffer: field(&mut seq, 6, E)?,
                    // The bytes end here without gating: read as "no M*".
                    best: seq.next_element().ok().flatten(),
                })
            }
        }
        d.deserialize_tuple(8, V)
    }
}

impl Record for CheckpointRecord {
    const KIND: &'static str = "network-checkpoint/v1";
}

/// `network-evaluation/v1`: the first eight fields, then the reference metrics
/// ([`crate::eval::reference`]) only where they were measured. Postcard writes a struct as its
/// fields one after another, so an evaluation without them has exactly the bytes it had
/// before they existed (the heads of earlier runs do not move), and a stored one without
/// them reads back with `reference: None` (see the serde impls below).
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkEvaluation {
    pub iteration: u32,
    pub wr_p: Option<WinRate>,
    pub err_p: Option<f64>,
    pub mae_v: Option<f64>,
    pub seen: u64,
    pub(crate) loss_policy: f64,
    pub(crate) loss_value: f64,
    pub buffer: u64,
    pub reference: Option<ReferenceEval>,
    /// The iteration's gating match (learners/gate.rs): written after the reference metrics
    /// (empty ones standing in when there are none), only under gating.
    pub gate: Option<GateResult>,
}

impl Serialize for NetworkEvaluation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let reference = self.reference.is_some() || self.gate.is_some();
        let fields = 8 + usize::from(reference) + usize::from(self.gate.is_some());
        let mut t = s.serialize_tuple(fields)?;
        t.serialize_element(&self.iteration)?;
        t.serialize_element(&self.wr_p)?;
        t.serialize_element(&self.err_p)?;
        t.serialize_element(&self.mae_v)?;
        t.serialize_element(&self.seen)?;
        t.serialize_element(&self.loss_policy)?;
        t.serialize_element(&self.loss_value)?;
        t.serialize_element(&self.buffer)?;
        if reference {
            t.serialize_element(&self.reference.clone().unwrap_or_default())?;
        }
        if let Some(gate) = &self.gate {
            t.serialize_element(gate)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for NetworkEvaluation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NetworkEvaluation, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NetworkEvaluation;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a network evaluation")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<NetworkEvaluation, A::Error> {
                const E: &str = "8 to 10 fields";
                Ok(NetworkEvaluation {
                    iteration: field(&mut seq, 0, E)?,
                    wr_p: field(&mut seq, 1, E)?,
                    err_p: field(&mut seq, 2, E)?,
                    mae_v: field(&mut seq, 3, E)?,
                    seen: field(&mut seq, 4, E)?,
                    loss_policy: field(&mut seq, 5, E)?,
                    loss_value: field(&mut seq, 6, E)?,
                    buffer: field(&mut seq, 7, E)?,
                    // The bytes end here in an evaluation without reference metrics: postcard
                    // reports the end of its input, read as "not measured".
                    reference: seq
                        .next_element::<ReferenceEval>()
                        .ok()
                        .flatten()
                        .filter(|r| *r != ReferenceEval::default()),
                    gate: seq.next_element().ok().flatten(),
                })
            }
        }
        d.deserialize_tuple(10, V)
    }
}

impl Record for NetworkEvaluation {
    const KIND: &'static str = "network-evaluation/v1";
}
