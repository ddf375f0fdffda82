//! An error as a person reads it: the message and its causes on one line,
//! each cause told once.
//!
//! An error may print its source in its own message and also return it
//! from `source()`; printing the whole chain (anyhow's `{:#}`) then tells
//! that cause twice. [`Causes`] leaves out a cause whose text the line
//! already holds, and puts what to do ([`Fix`]) after the last cause.

use std::fmt;

/// `error` and its causes, joined by ": ", each cause once; the fix a
/// [`Fix`] context names goes last, after "; ".
pub(crate) struct Causes<'a>(pub(crate) &'a anyhow::Error);

impl fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fix = self.0.downcast_ref::<Fix>();
        let shown = fix.map(ToString::to_string);
        let messages = self.0.chain().map(|e| {
            let m = e.to_string();
            match (fix, &shown) {
                (Some(fix), Some(s)) if *s == m => fix.what.clone(),
                _ => m,
            }
        });
        f.write_str(&one_line(messages))?;
        match fix {
            Some(fix) => write!(f, "; {}", fix.fix),
            None => Ok(()),
        }
    }
}

/// A context that says what failed and, apart, what to do about it: on
/// its own it reads "WHAT; FIX", and [`Causes`] puts the fix after the
/// causes ("WHAT: CAUSE; FIX").
#[derive(Debug)]
pub(crate) struct Fix {
    /// What failed.
    pub(crate) what: String,
    /// What to do about it.
    pub(crate) fix: String,
}

impl Fix {
    /// `what` failed; `fix` says what to do.
    pub(crate) fn new(what: impl Into<String>, fix: impl Into<String>) -> Fix {
        Fix {
            what: what.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.what, self.fix)
    }
}

/// The messages of a chain (outermost first) on one line, joined by
/// ": ": a message the line already holds (the previous one printed it
/// as its cause) is left out, and so is an empty one.
pub(crate) fn one_line<I: IntoIterator<Item = String>>(messages: I) -> String {
    let mut line = String::new();
    for m in messages {
        let m = m.trim();
        if m.is_empty() || line.contains(m) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(m);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Printed(std::io::Error);

    impl fmt::Display for Printed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "transport error during connection set-up: {}", self.0)
        }
    }

    impl std::error::Error for Printed {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_printed_and_returned_reads_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        let e = anyhow::Error::new(Printed(io)).context("NULL failed");
        let s = Causes(&e).to_string();
        assert_eq!(
            s,
            "NULL failed: transport error during connection set-up: Connection refused"
        );
        // anyhow's own chain tells it twice.
        assert_eq!(format!("{e:#}").matches("Connection refused").count(), 2);
    }

    #[test]
    fn the_fix_comes_after_the_causes() {
        let e = anyhow::Error::new(std::io::Error::other("Connection refused"))
            .context("cannot reach the RPC server")
            .context(Fix::new(
                "cannot connect to 127.0.0.1:1",
                "is a server listening there?",
            ));
        assert_eq!(
            Causes(&e).to_string(),
            "cannot connect to 127.0.0.1:1: cannot reach the RPC server: Connection refused; \
             is a server listening there?"
        );
        assert!(e
            .to_string()
            .ends_with("127.0.0.1:1; is a server listening there?"));
    }

    #[test]
    fn distinct_causes_are_all_kept() {
        let e = anyhow::anyhow!("no such file")
            .context("cannot read x.x")
            .context("xdrgen failed");
        assert_eq!(
            Causes(&e).to_string(),
            "xdrgen failed: cannot read x.x: no such file"
        );
        assert_eq!(one_line(["a".into(), "".into(), "b".into()]), "a: b");
    }
}
