//! The progress lines of a run, one text for every front end: the command line's `run`,
//! `resume` and `branch`, and the Python package's `tabula.run`. Each front end's sink
//! decides where a line goes (above a progress bar, to standard error, nowhere with
//! `--json`); what a line says, and which event prints which, is decided here.

use crate::eval::{MetricDef, MetricValues};
use crate::learners::LearnerKind;
use crate::store::ObjectHash;

use super::{IterationSummary, Observer};

/// The texts of one run's progress lines.
#[derive(Clone, Copy, Debug)]
pub struct ProgressText {
    /// The run's planned iterations (the `/N` of an iteration's line).
    pub iterations: u32,
    /// The metrics the learner says show progress ([`LearnerKind::progress_metrics`]).
    progress: &'static [MetricDef],
}

impl ProgressText {
    /// The lines of a run of `learner` planned for `iterations` iterations.
    pub fn new(iterations: u32, learner: LearnerKind) -> ProgressText {
        ProgressText {
            iterations,
            progress: learner.progress_metrics(),
        }
    }

    /// The run's records and row exist.
    pub fn created(&self, run_id: i64, run_hash: &ObjectHash, seed: u64) -> String {
        format!(
            "run {run_id}  (run record {}, seed {seed})",
            run_hash.short()
        )
    }

    /// A stage (runs/stages.rs) starts: `index` is 0-based.
    pub fn stage(&self, index: usize, name: &str, first: u32, last: u32) -> String {
        let last = last.min(self.iterations);
        format!("stage {} `{name}`: iterations {first}..={last}", index + 1)
    }

    /// The state to continue from is rebuilt; nothing for a run that starts from scratch.
    pub fn resumed(&self, done: u32, reused: u32, restart_seconds: f64) -> Option<String> {
        (done > 0 || reused > 0).then(|| {
            format!(
                "continuing after iteration {done} ({reused} games of the next reused); \
                 restart {restart_seconds:.2} s"
            )
        })
    }

    /// The untrained model's metrics (iteration 0).
    pub fn baseline(&self, m: &MetricValues) -> String {
        format!(
            "it {:>4}/{}  {}",
            0,
            self.iterations,
            metrics_line(m, self.progress)
        )
    }

    /// What the iterations left should cost, at the rate of the first iteration this
    /// process ran (`s`); `None` when none are left. A run's later iterations can cost more
    /// (a growing table, longer games) or less than the one it is judged by.
    pub fn estimate(&self, s: &IterationSummary) -> Option<String> {
        let left = self
            .iterations
            .checked_sub(s.iteration)
            .filter(|&n| n > 0)?;
        let each = s.self_play_seconds + s.training_seconds + s.evaluation_seconds;
        Some(format!(
            "estimated cost: about {} for the {left} iterations left, at iteration {}'s {each:.2} s \
             each (later iterations can cost more or less)",
            hms(each * f64::from(left)),
            s.iteration
        ))
    }

    /// A committed iteration: its metrics, games and where its time went.
    pub fn iteration(&self, s: &IterationSummary) -> String {
        format!(
            "it {:>4}/{}  {}  games {}  beta {}  self-play {:.2}s  train {:.2}s  eval {:.2}s  \
             store wait {:.3}s",
            s.iteration,
            self.iterations,
            metrics_line(&s.metrics, self.progress),
            s.games,
            s.beta,
            s.self_play_seconds,
            s.training_seconds,
            s.evaluation_seconds,
            s.store_wait_seconds
        )
    }
}

/// `h:mm:ss`.
pub fn hms(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// The progress line of an iteration's declared metrics: WR_p, ERR_p, MAE_v and coverage
/// where the learner declares them, then any metric not among the learner's `progress`
/// metrics as `name value` (the detail columns of tabular AlphaZero are in `show`).
fn metrics_line(m: &MetricValues, progress: &[MetricDef]) -> String {
    if m.is_empty() {
        // The evaluation interval (`[eval] every`) skipped this iteration.
        return "not measured".to_string();
    }
    let get = |name: &str| m.iter().find(|(n, _)| *n == name).and_then(|(_, v)| *v);
    let count = |name: &str| get(name).map_or_else(|| "-".to_string(), |v| format!("{v}"));
    let wr = get("wr_p").map_or_else(
        || "WR_p -".to_string(),
        |w| match (get("wr_p_wins"), get("wr_p_draws"), get("wr_p_losses")) {
            (Some(wi), Some(d), Some(l)) => {
                let [lo, hi] = crate::stats::score_interval95(wi as u32, d as u32, l as u32);
                format!("WR_p {w:.4} [{lo:.4}, {hi:.4}]")
            }
            _ => format!("WR_p {w:.4}"),
        },
    );
    let mut line = format!(
        "{wr}  ERR_p {}  MAE_v {}",
        fmt_opt(get("err_p"), 4),
        fmt_opt(get("mae_v"), 4)
    );
    if get("updated_1").is_some() {
        line.push_str(&format!(
            "  upd≥1/4/16 {}/{}/{}",
            count("updated_1"),
            count("updated_4"),
            count("updated_16")
        ));
    }
    line.push_str(&format!("  seen {}", count("seen")));
    // Other metrics only where they have a value: a learner declares every metric it can
    // report (a network run on EWN declares the Connect Four and reference metrics too), and
    // a line of thirty dashes hides the numbers. `show` lists all of them.
    for (name, v) in m {
        if let Some(v) = v.filter(|_| !progress.iter().any(|d| d.name == *name)) {
            line.push_str(&format!("  {name} {v:.4}"));
        }
    }
    line
}

/// Where a run's progress goes: its lines, and, for a front end with a bar or a callback,
/// the games played and each measured iteration's metrics.
pub trait ProgressSink {
    /// A progress line ([`ProgressText`]'s).
    fn line(&mut self, text: String);
    /// `done` of the `of` games of iteration `iteration` are played.
    fn games(&mut self, iteration: u32, done: u32, of: u32) {
        let _ = (iteration, done, of);
    }
    /// Iteration `iteration`'s metrics (0: the untrained model's).
    fn measured(&mut self, iteration: u32, metrics: &MetricValues) {
        let _ = (iteration, metrics);
    }
}

/// A run's observer that writes its progress lines, and hands its games and metrics on, to
/// a front end's sink (the command line's console, the Python package's `tabula.run`).
pub struct ProgressLines<S> {
    pub text: ProgressText,
    pub sink: S,
    /// Whether the cost estimate was printed (after the first iteration this process ran).
    estimated: bool,
}

impl<S> ProgressLines<S> {
    /// `text`'s lines into `sink`.
    pub fn new(text: ProgressText, sink: S) -> ProgressLines<S> {
        ProgressLines {
            text,
            sink,
            estimated: false,
        }
    }
}

impl<S: ProgressSink> Observer for ProgressLines<S> {
    fn created(&mut self, run_id: i64, run_hash: &ObjectHash, seed: u64) {
        self.sink.line(self.text.created(run_id, run_hash, seed));
    }

    fn stage(&mut self, index: usize, name: &str, first: u32, last: u32) {
        self.sink.line(self.text.stage(index, name, first, last));
    }

    fn resumed(&mut self, done: u32, reused: u32, restart_seconds: f64) {
        if let Some(line) = self.text.resumed(done, reused, restart_seconds) {
            self.sink.line(line);
        }
    }

    fn games_done(&mut self, iteration: u32, done: u32, of: u32) {
        self.sink.games(iteration, done, of);
    }

    fn baseline(&mut self, m: &MetricValues) {
        self.sink.line(self.text.baseline(m));
        self.sink.measured(0, m);
    }

    fn iteration_done(&mut self, s: &IterationSummary) {
        self.sink.line(self.text.iteration(s));
        if !std::mem::replace(&mut self.estimated, true)
            && let Some(line) = self.text.estimate(s)
        {
            self.sink.line(line);
        }
        self.sink.measured(s.iteration, &s.metrics);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(iteration: u32, seconds: [f64; 3]) -> IterationSummary {
        IterationSummary {
            iteration,
            head: ObjectHash([0; 32]),
            metrics: MetricValues::default(),
            games: 10,
            samples: 0,
            beta: 1.0,
            self_play_seconds: seconds[0],
            training_seconds: seconds[1],
            evaluation_seconds: seconds[2],
            store_wait_seconds: 0.5,
        }
    }

    /// The estimate after the first iteration this process ran: the iterations left at its
    /// self-play, training and evaluation time (not the store wait, which overlaps them),
    /// once, and none for a run with nothing left.
    #[test]
    fn the_first_iteration_prices_the_iterations_left() {
        let text = ProgressText::new(100, LearnerKind::default());
        let line = text.estimate(&summary(1, [0.5, 0.25, 0.75])).unwrap();
        assert!(
            line.starts_with("estimated cost: about 0:02:29 for the 99 iterations left"),
            "{line}"
        );
        assert!(line.contains("at iteration 1's 1.50 s each"), "{line}");
        assert_eq!(text.estimate(&summary(100, [1.0, 1.0, 1.0])), None);

        struct Sink(Vec<String>);
        impl ProgressSink for Sink {
            fn line(&mut self, text: String) {
                self.0.push(text);
            }
        }
        let mut lines = ProgressLines::new(text, Sink(Vec::new()));
        lines.iteration_done(&summary(41, [1.0, 0.0, 0.0]));
        lines.iteration_done(&summary(42, [9.0, 0.0, 0.0]));
        let estimates: Vec<&String> = lines
            .sink
            .0
            .iter()
            .filter(|l| l.starts_with("estimated"))
            .collect();
        assert_eq!(estimates.len(), 1, "{:?}", lines.sink.0);
        assert!(estimates[0].contains("0:00:59 for the 59 iterations left"));
    }
}
