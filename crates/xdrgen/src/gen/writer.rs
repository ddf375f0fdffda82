//! The indenting writer the generator writes through, and the escaping
//! of `.x` comments into rustdoc.

/// An indenting writer.
pub(super) struct W {
    pub(super) out: String,
    pub(super) ind: usize,
}

impl W {
    pub(super) fn line(&mut self, s: &str) {
        if s.is_empty() {
            self.out.push('\n');
            return;
        }
        for l in s.lines() {
            if l.is_empty() {
                self.out.push('\n');
                continue;
            }
            for _ in 0..self.ind {
                self.out.push_str("    ");
            }
            self.out.push_str(l);
            self.out.push('\n');
        }
    }
    pub(super) fn open(&mut self, s: &str) {
        self.line(s);
        self.ind += 1;
    }
    pub(super) fn close(&mut self, s: &str) {
        self.ind = self.ind.saturating_sub(1);
        self.line(s);
    }
    /// The `.x` comments of a definition as rustdoc, escaped, and the
    /// empty `///` line that separates them from the generated text that
    /// follows (nothing at all when there are none).
    pub(super) fn doc_comments(&mut self, comments: &[String]) {
        for c in comments {
            self.line(&format!("/// {}", doc_text(c)));
        }
        if !comments.is_empty() {
            self.line("///");
        }
    }
}

/// Escapes text from a `.x` comment for rustdoc.
fn doc_text(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if matches!(c, '<' | '>' | '[' | ']' | '`' | '*') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}
