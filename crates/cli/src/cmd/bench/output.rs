//! What the bench commands show besides the library's reports: the
//! progress bar on stderr, and JSON numbers for `rpcrdma nfs bench`.

use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use rpcrdma_bench::{Progress, ProgressRef};

/// A finite number as JSON, or null for a measure that was not run
/// (`rpcrdma nfs bench`'s report).
pub(crate) fn num(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// A progress bar on stderr of `len` steps drawn by `template`, and the
/// same bar as the bench library's [`ProgressRef`].
pub(crate) fn progress_bar(len: u64, template: &str) -> (ProgressBar, ProgressRef) {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    (bar.clone(), Arc::new(Bar(bar)))
}

/// The bench library's progress shown on a progress bar.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, what: &str) {
        self.0.set_message(what.to_string());
    }

    fn done(&self) {
        self.0.inc(1);
    }
}
