//! Diagnostics: every problem names the file, line and column and says
//! what was expected.

use std::fmt;

/// A position in a `.x` file (1-based line and column, in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// One problem in a `.x` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file name as given to the generator.
    pub file: String,
    /// Where the problem is.
    pub pos: Pos,
    /// What is wrong and what was expected.
    pub message: String,
    /// The source line, for display (without its line break).
    pub source_line: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file, self.pos.line, self.pos.col, self.message
        )?;
        if !self.source_line.is_empty() {
            let gutter = self.pos.line.to_string();
            let caret: String = self
                .source_line
                .chars()
                .take(self.pos.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(
                f,
                "\n {gutter} | {}\n {} | {caret}^",
                self.source_line,
                " ".repeat(gutter.len())
            )?;
        }
        Ok(())
    }
}

/// Why generation failed: one or more [`Diagnostic`]s, or an I/O error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `.x` file has syntax or type errors (at least one).
    #[error("{}", display_all(.0))]
    Source(Vec<Diagnostic>),
    /// A file could not be read or written. The message names the file;
    /// the reason is the error's `source()` (a printer of error chains,
    /// such as `rpcrdma xdrgen`, says both once).
    #[error("{path}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `generate_to_out_dir` outside a build script.
    #[error("OUT_DIR is not set: Builder::generate_to_out_dir is meant for build.rs (use Builder::generate_to_file elsewhere)")]
    NoOutDir,
}

impl Error {
    /// The diagnostics, if this is a source error.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Source(d) => d,
            _ => &[],
        }
    }
}

fn display_all(d: &[Diagnostic]) -> String {
    let mut s = String::new();
    for (i, d) in d.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&d.to_string());
    }
    s
}

/// Collects diagnostics against one source text.
#[derive(Debug)]
pub(crate) struct Reporter<'a> {
    file: &'a str,
    source: &'a str,
    pub(crate) diags: Vec<Diagnostic>,
}

impl<'a> Reporter<'a> {
    pub(crate) fn new(file: &'a str, source: &'a str) -> Self {
        Self {
            file,
            source,
            diags: Vec::new(),
        }
    }

    pub(crate) fn diag(&self, pos: Pos, message: impl Into<String>) -> Diagnostic {
        let source_line = self
            .source
            .lines()
            .nth(pos.line.saturating_sub(1) as usize)
            .unwrap_or("")
            .trim_end()
            .to_string();
        Diagnostic {
            file: self.file.to_string(),
            pos,
            message: message.into(),
            source_line,
        }
    }

    pub(crate) fn error(&mut self, pos: Pos, message: impl Into<String>) {
        let d = self.diag(pos, message);
        self.diags.push(d);
    }

    pub(crate) fn finish(mut self) -> Result<(), Error> {
        if self.diags.is_empty() {
            Ok(())
        } else {
            self.diags.sort_by_key(|d| d.pos);
            self.diags.dedup();
            Err(Error::Source(self.diags))
        }
    }
}
