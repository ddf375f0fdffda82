//! Tokens of the RPC language, with the comments (and `@` pragmas) that
//! precede each token.
//!
//! Handled here: C comments (`/* */` and `//`), rpcgen's `%` pass-through
//! lines (ignored), C preprocessor conditionals (`#ifdef`, `#ifndef`,
//! `#if`, `#elif`, `#else`, `#endif`) evaluated as cpp evaluates them for
//! rpcgen when nothing is defined (`#ifdef RPC_HDR` blocks, which hold
//! `%` lines for rpcgen's header, are skipped; `#if 0` blocks too),
//! `#pragma`, `#ident` and line markers ignored, `#define` and `#include`
//! refused; decimal, hexadecimal and octal constants with an optional
//! minus sign.

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
    /// Open conditionals, innermost last.
    conds: Vec<Cond>,
    rep: &'a Reporter<'a>,
}

/// An open `#if`/`#ifdef`/`#ifndef`.
struct Cond {
    /// Where it was opened.
    pos: Pos,
    /// Whether the text around it is read.
    outer: bool,
    /// Whether a branch has been taken.
    taken: bool,
    /// Whether the current branch is read.
    active: bool,
    /// Whether `#else` was seen.
    in_else: bool,
}

/// Splits `source` into tokens; the last one is [`Tok::Eof`].
pub(crate) fn lex<'a>(source: &str, rep: &'a Reporter<'a>) -> Result<Vec<Token>, Diagnostic> {
    let mut lx = Lexer {
        chars: source.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        at_line_start: true,
        conds: Vec::new(),
        rep,
    };
    let mut out = Vec::new();
    let mut comments = Vec::new();
    loop {
        lx.skip_space();
        let pos = lx.pos();
        if let Some(open) = lx.conds.last() {
            if lx.peek(0).is_none() {
                return Err(lx.rep.diag(
                    open.pos,
                    "this conditional is never closed: expected `#endif`",
                ));
            }
        }
        let directive_next = lx.at_line_start && lx.peek(0) == Some('#');
        if !lx.reading() && !directive_next {
            // Inside a branch cpp leaves out: only directives count.
            lx.skip_line();
            continue;
        }
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

    /// Whether the text here is read (every enclosing branch taken).
    fn reading(&self) -> bool {
        self.conds.last().is_none_or(|c| c.active)
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
        let rest = text.trim_start()[word.len()..].to_string();
        // Comments on the directive's line are not part of its expression.
        let rest = rest
            .split("/*")
            .next()
            .unwrap_or("")
            .split("//")
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let reading = self.reading();
        match word.as_str() {
            "ifdef" | "ifndef" | "if" => {
                // Nothing is defined: `#ifdef X` is false, `#ifndef X` true.
                let v = match word.as_str() {
                    "ifdef" => false,
                    "ifndef" => true,
                    _ if reading => self.cond_value(&rest, pos)?,
                    _ => false,
                };
                self.conds.push(Cond {
                    pos,
                    outer: reading,
                    taken: v,
                    active: reading && v,
                    in_else: false,
                });
            }
            "elif" | "else" | "endif" => {
                let Some(c) = self.conds.last() else {
                    return Err(self.rep.diag(
                        pos,
                        format!("`#{word}` without `#if`, `#ifdef` or `#ifndef`"),
                    ));
                };
                let (outer, taken, in_else) = (c.outer, c.taken, c.in_else);
                if in_else && word != "endif" {
                    return Err(self
                        .rep
                        .diag(pos, format!("`#{word}` after `#else`: expected `#endif`")));
                }
                match word.as_str() {
                    "endif" => {
                        self.conds.pop();
                    }
                    "else" => {
                        let c = self.conds.last_mut().expect("checked above");
                        c.active = outer && !taken;
                        c.taken = true;
                        c.in_else = true;
                    }
                    _ => {
                        let v = if outer && !taken {
                            self.cond_value(&rest, pos)?
                        } else {
                            false
                        };
                        let c = self.conds.last_mut().expect("checked above");
                        c.active = outer && v;
                        c.taken |= v;
                    }
                }
            }
            _ if !reading => {}
            "pragma" | "ident" | "line" => {}
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
                    format!("unknown preprocessor directive `#{word}`: only #ifdef/#ifndef/#if/#elif/#else/#endif (evaluated with nothing defined), #pragma and #ident (ignored) are accepted"),
                ))
            }
        }
        self.skip_line();
        Ok(())
    }

    /// The value of an `#if`/`#elif` expression, as cpp computes it with
    /// nothing defined: numbers, names (0), `defined X`, `defined(X)`
    /// (false), `!`, `&&`, `||`, `==`, `!=`, `<`, `>`, `<=`, `>=` and
    /// parentheses.
    fn cond_value(&self, expr: &str, pos: Pos) -> Result<bool, Diagnostic> {
        let toks = cond_tokens(expr).ok_or_else(|| {
            self.rep.diag(
                pos,
                format!("cannot read the condition `{expr}`: expected numbers, names, `defined`, `!`, `&&`, `||`, comparisons and parentheses"),
            )
        })?;
        let mut p = CondParser { toks: &toks, i: 0 };
        match p.or() {
            Some(v) if p.i == toks.len() => Ok(v != 0),
            _ => Err(self.rep.diag(
                pos,
                format!("cannot read the condition `{expr}`: expected numbers, names, `defined`, `!`, `&&`, `||`, comparisons and parentheses"),
            )),
        }
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

/// Tokens of a preprocessor condition: numbers, names, operators.
fn cond_tokens(expr: &str) -> Option<Vec<String>> {
    let cs: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let j = cs[i..]
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
                .map_or(cs.len(), |p| i + p);
            out.push(cs[i..j].iter().collect());
            i = j;
        } else {
            let two: String = cs[i..(i + 2).min(cs.len())].iter().collect();
            if ["&&", "||", "==", "!=", "<=", ">="].contains(&two.as_str()) {
                out.push(two);
                i += 2;
            } else if "!()<>".contains(c) {
                out.push(c.to_string());
                i += 1;
            } else {
                return None;
            }
        }
    }
    Some(out)
}

/// A recursive-descent reader of preprocessor conditions.
struct CondParser<'t> {
    toks: &'t [String],
    i: usize,
}

impl CondParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.i).map(String::as_str)
    }

    fn eat(&mut self, t: &str) -> bool {
        if self.peek() == Some(t) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Option<i128> {
        let mut v = self.and()?;
        while self.eat("||") {
            let r = self.and()?;
            v = i128::from(v != 0 || r != 0);
        }
        Some(v)
    }

    fn and(&mut self) -> Option<i128> {
        let mut v = self.cmp()?;
        while self.eat("&&") {
            let r = self.cmp()?;
            v = i128::from(v != 0 && r != 0);
        }
        Some(v)
    }

    fn cmp(&mut self) -> Option<i128> {
        let l = self.unary()?;
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.eat(op) {
                let r = self.unary()?;
                return Some(i128::from(match op {
                    "==" => l == r,
                    "!=" => l != r,
                    "<=" => l <= r,
                    ">=" => l >= r,
                    "<" => l < r,
                    _ => l > r,
                }));
            }
        }
        Some(l)
    }

    fn unary(&mut self) -> Option<i128> {
        if self.eat("!") {
            return Some(i128::from(self.unary()? == 0));
        }
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        let t = self.peek()?.to_string();
        self.i += 1;
        if t == "defined" {
            // Nothing is defined.
            let paren = self.eat("(");
            let name = self.peek()?;
            if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                return None;
            }
            self.i += 1;
            if paren && !self.eat(")") {
                return None;
            }
            return Some(0);
        }
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            let d = t.trim_end_matches(['u', 'U', 'l', 'L']);
            return if let Some(h) = d.strip_prefix("0x").or(d.strip_prefix("0X")) {
                i128::from_str_radix(h, 16).ok()
            } else if d.len() > 1 && d.starts_with('0') {
                i128::from_str_radix(&d[1..], 8).ok()
            } else {
                d.parse().ok()
            };
        }
        // Any other name is not defined: 0.
        Some(0)
    }
}
