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
