//! Progress bars on long work (indicatif), drawn on stderr and hidden when it is not a
//! terminal so scripts and `--json` output stay clean.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub(crate) fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// A spinner with a message, for work whose size is not known in advance; hidden when `show`
/// is false (e.g. with `--json`).
pub(crate) fn spinner(what: &str, show: bool) -> ProgressBar {
    let bar = if show {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("static template"),
    );
    bar.set_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// A bar that appears only once the work has taken [`Delayed::AFTER`] (short work prints
/// nothing), on stderr when it is a terminal, never when `enabled` is false (`--json`).
/// Updates may come from several threads.
pub(crate) struct Delayed {
    pub bar: ProgressBar,
    started: Instant,
    shown: AtomicBool,
    enabled: bool,
}

impl Delayed {
    pub(crate) const AFTER: Duration = Duration::from_secs(2);

    pub(crate) fn new(len: u64, what: &str, enabled: bool) -> Delayed {
        let b = bar(len, what);
        b.set_draw_target(ProgressDrawTarget::hidden());
        Delayed {
            bar: b,
            started: Instant::now(),
            shown: AtomicBool::new(false),
            enabled,
        }
    }

    /// Moves the bar to `pos` and shows it if the work has run past [`Delayed::AFTER`].
    pub(crate) fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
        self.reveal();
    }

    pub(crate) fn inc(&self, n: u64) {
        self.bar.inc(n);
        self.reveal();
    }

    fn reveal(&self) {
        if self.enabled
            && !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() >= Self::AFTER
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            // indicatif's stderr target draws nothing when stderr is not a terminal.
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
