//! Progress bars on long work (indicatif), drawn on stderr and hidden when it is not a
//! terminal so scripts and `--json` output stay clean.

use indicatif::{ProgressBar, ProgressStyle};

pub fn bar(len: u64, what: &str) -> ProgressBar {
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
pub fn spinner(what: &str, show: bool) -> ProgressBar {
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
