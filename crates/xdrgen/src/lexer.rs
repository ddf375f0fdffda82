//! Tokens of the RPC language, with the comments (and `@` pragmas) that
//! precede each token.
//!
//! Handled here: C comments (`/* */` and `//`), rpcgen's `%` pass-through
//! lines (ignored), C preprocessor conditionals (`#ifdef`, `#ifndef`,
//! `#if`, `#else`, `#elif`, `#endif`, `#pragma` and line markers are
//! ignored, both branches kept; `#define` and `#include` are refused),
//! decimal, hexadecimal and octal constants with an optional minus sign.

use crate::error::{Diagnostic, Pos, Reporter};

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier or keyword.
    Ident(String),
    /// A number (decimal, hex or octal, possibly negative).
    Num(i128),
    /// One of `{ } ( ) [ ] < > ; , : = *`.
    Punct(char),
    /// End of input.
    Eof,
}

impl Tok {
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Num(n) => format!("number {n}"),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// A comment met before a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Comment {
    /// The text between the delimiters, trimmed.
    pub(crate) text: String,
    /// Where it starts.
    pub(crate) pos: Pos,
    /// Line where it ends.
    pub(crate) end_line: u32,
}

impl Comment {
    /// Whether the comment is a pragma (`@name ...`).
    pub(crate) fn is_pragma(&self) -> bool {
        let t = self.text.trim_start_matches('*').trim_start();
        t.starts_with('@') && t[1..].starts_with(|c: char| c.is_ascii_alphabetic())
    }
}

/// A token, where it is, and the comments just before it.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) pos: Pos,
    /// Just after the token's last character.
    pub(crate) end: Pos,
    pub(crate) comments: Vec<Comment>,
}

struct Lexer<'a> {
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
    at_line_start: bool,
    rep: &'a Reporter<'a>,
}

/// Splits `source` into tokens; the last one is [`Tok::Eof`].
pub(crate) fn lex<'a>(source: &str, rep: &'a Reporter<'a>) -> Result<Vec<Token>, Diagnostic> {
    let mut lx = Lexer {
        chars: source.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        at_line_start: true,
        rep,
    };
    let mut out = Vec::new();
    let mut comments = Vec::new();
    loop {
        lx.skip_space();
        let pos = lx.pos();
        let Some(c) = lx.peek(0) else {
            out.push(Token {
                tok: Tok::Eof,
                pos,
                end: pos,
                comments,
            });
            return Ok(out);
        };
        if lx.at_line_start && c == '%' {
            lx.skip_line();
            continue;
        }
        if lx.at_line_start && c == '#' {
            lx.directive(pos)?;
            continue;
        }
        lx.at_line_start = false;
        if c == '/' && lx.peek(1) == Some('*') {
            comments.push(lx.block_comment(pos)?);
            continue;
        }
        if c == '/' && lx.peek(1) == Some('/') {
            lx.bump();
            lx.bump();
            let mut text = String::new();
            while let Some(c) = lx.peek(0) {
                if c == '\n' {
                    break;
                }
                text.push(c);
                lx.bump();
            }
            comments.push(Comment {
                text: text.trim().to_string(),
                pos,
                end_line: pos.line,
            });
            continue;
        }
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            let mut s = String::new();
            while let Some(c) = lx.peek(0) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    s.push(c);
                    lx.bump();
                } else {
                    break;
                }
            }
            Tok::Ident(s)
        } else if c.is_ascii_digit() || (c == '-' && lx.peek(1).is_some_and(|d| d.is_ascii_digit()))
        {
            Tok::Num(lx.number(pos)?)
        } else if "{}()[]<>;,:=*".contains(c) {
            lx.bump();
            Tok::Punct(c)
        } else {
            return Err(lx.rep.diag(
                pos,
                format!("unexpected character `{c}`: expected an identifier, a number or one of {{ }} ( ) [ ] < > ; , : = *"),
            ));
        };
        out.push(Token {
            tok,
            pos,
            end: lx.pos(),
            comments: std::mem::take(&mut comments),
        });
    }
}

impl Lexer<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek(0) {
            self.i += 1;
            if c == '\n' {
                self.line += 1;
                self.col = 1;
                self.at_line_start = true;
            } else {
                self.col += 1;
            }
        }
    }

    fn skip_space(&mut self) {
        while let Some(c) = self.peek(0) {
            if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek(0) {
            self.bump();
            if c == '\n' {
                break;
            }
        }
    }

    fn directive(&mut self, pos: Pos) -> Result<(), Diagnostic> {
        let start = self.i;
        let end = self.chars[start..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(self.chars.len(), |p| start + p);
        let text: String = self.chars[start + 1..end].iter().collect();
        let word: String = text
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match word.as_str() {
            "ifdef" | "ifndef" | "if" | "else" | "elif" | "endif" | "pragma" | "ident"
            | "line" => {}
            w if w.chars().all(|c| c.is_ascii_digit()) => {} // line marker
            "define" | "include" | "undef" => {
                return Err(self.rep.diag(
                    pos,
                    format!("C preprocessor `#{word}` is not supported: define constants with `const NAME = value;` and put everything in one .x file (or run the file through cpp first)"),
                ))
            }
            _ => {
                return Err(self.rep.diag(
                    pos,
                    format!("unknown preprocessor directive `#{word}`: only #ifdef/#ifndef/#if/#else/#elif/#endif (ignored) are accepted"),
                ))
            }
        }
        self.skip_line();
        Ok(())
    }

    fn block_comment(&mut self, pos: Pos) -> Result<Comment, Diagnostic> {
        self.bump();
        self.bump();
        let mut text = String::new();
        loop {
            match self.peek(0) {
                None => {
                    return Err(self
                        .rep
                        .diag(pos, "comment opened here is never closed: expected `*/`"))
                }
                Some('*') if self.peek(1) == Some('/') => {
                    let end_line = self.line;
                    self.bump();
                    self.bump();
                    return Ok(Comment {
                        text: text.trim().to_string(),
                        pos,
                        end_line,
                    });
                }
                Some(c) => {
                    text.push(c);
                    self.bump();
                }
            }
        }
    }

    fn number(&mut self, pos: Pos) -> Result<i128, Diagnostic> {
        let neg = self.peek(0) == Some('-');
        if neg {
            self.bump();
        }
        let mut s = String::new();
        while let Some(c) = self.peek(0) {
            if c.is_ascii_alphanumeric() || c == '_' {
                s.push(c);
                self.bump();
            } else {
                break;
            }
        }
        let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
            (h, 16)
        } else if s.len() > 1 && s.starts_with('0') {
            (&s[1..], 8)
        } else {
            (s.as_str(), 10)
        };
        let kind = match radix {
            16 => "hexadecimal",
            8 => "octal",
            _ => "decimal",
        };
        let v = if digits.is_empty() {
            None
        } else {
            u64::from_str_radix(digits, radix).ok()
        };
        match v {
            Some(v) => Ok(if neg { -i128::from(v) } else { i128::from(v) }),
            None => Err(self.rep.diag(
                pos,
                format!("`{}{s}` is not a valid {kind} constant (expected digits of base {radix} that fit in 64 bits)", if neg { "-" } else { "" }),
            )),
        }
    }
}
