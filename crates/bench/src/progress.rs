//! Progress of a bench run, for a progress bar: the library says which
//! measure starts and when one is done; the program shows it (or not).

use std::sync::Arc;

/// Where a bench reports its progress. Called from the bench's client
/// threads.
pub trait Progress: Send + Sync {
    /// A measure starts; `what` names it (and the round).
    fn start(&self, what: &str);
    /// A measure is done.
    fn done(&self);
    /// A figure just measured, as a line a person may read (the verbs
    /// bench reports every round's); by default not shown.
    fn note(&self, _line: &str) {}
}

/// Progress shown nowhere.
impl Progress for () {
    fn start(&self, _what: &str) {}
    fn done(&self) {}
}

/// A shared [`Progress`], as the benches take it.
pub type ProgressRef = Arc<dyn Progress>;
