//! Learners. For now: tabular AlphaZero, the lookup-table AlphaZero of Hsueh, Wu, Chen and Hsu,
//! *AlphaZero for a non-deterministic game* (TAAI 2018), and of Hsueh, Ikeda, Wu, Chen and Hsu,
//! *Analyses of tabular AlphaZero on strongly-solved stochastic games* (IEEE Access 2023).
//! docs/learners.md.
//!
//! A [`Table`] keeps, per position, logits p_hat over the whole action space and a value logit
//! v_hat; the search sees p = softmax(p_hat) renormalised over the legal actions and
//! v = sigmoid(v_hat). Each iteration plays M self-play games with the table frozen
//! ([`crate::selfplay`]: PUCT with chance nodes, the table as evaluator through a per-search
//! [`TableEval`]), then trains on the samples of the most recent K x M games, game by game and
//! move by move, with the two gradient steps of [`train::train`](fn@train::train) (cross-entropy on the policy,
//! squared error on the value) applied sample by sample; the learning rate beta follows a
//! schedule over iterations. [`metrics`] measures the table against the exact solution.
//!
//! Determinism: a position's initial entries are a pure function of (run seed, key); self-play
//! game g of iteration i uses the stream `self-play(i,g)`; training runs positions in parallel,
//! each position's samples in their original order; metrics reduce in a fixed order. So a run
//! is a pure function of its settings and seed, whatever the thread count.

pub mod metrics;
pub mod table;
pub mod train;

pub use metrics::{Metrics, MetricsPlan, Truth, WinRate};
pub use table::{Table, TableEval};
pub use train::{Sample, TrainReport, apply_sample, train};
