//! The network learner's versioned records: weights, optimiser state, the checkpoint root
//! and the evaluation (their bytes are pinned: see the serde impls).

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::eval::reference::{
    REFERENCE_METRICS, ReferenceEval, ReferenceSettings, c4_scores, c4_search_scores,
    evaluation_search, greedy_scores, solver_scores,
};
use crate::eval::{MetricDef, MetricValues, WinRate, win_rate_of};
use crate::game::{Action, Game, GameResult};
use crate::game_record::{GameEnd, GameRecord, ReplayError};
use crate::games::Abilities;
use crate::learners::gate::{GateResult, GateSettings, gate_score};
use crate::learners::{
    Checkpoint, CheckpointRefs, EvalContext, Learner, LearnerContext, LearnerError,
    LearnerSettings, ModelSummary, Reference, SettingsCheck, TrainReport,
};
use crate::error::SettingError;
use crate::nn::encode::Encoder;
use crate::nn::{
    Arch, Arith, Example, Head, Layout, Losses, OptimConfig, OptimState, ResNet, Scratch, Trainer,
    ValueHead, Weights, legal_softmax, train_step,
};
use crate::rng::{StreamRng, stream, stream_fmt, uniform_index};
use crate::search::{Evaluator, Leaf};
use crate::store::{Encoded, ObjectHash, Record, Store};
use super::settings::{DEFAULT_TRAIN_STEPS, OptimizerKind, bad, game_name};
use super::{ArchKind, ArithKind, AugmentKind, FIXED_SETTINGS, HeadKind, NETWORK_METRICS, NetEval, NetSample, Network, NetworkSettings, SELF_PLAY_LANES, ValueHeadKind, settings_of};
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
