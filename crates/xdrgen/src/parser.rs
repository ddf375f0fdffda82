//! Recursive-descent parser for the RPC language: RFC 4506 §6.3 plus the
//! program definitions of RFC 5531 §12.2, rpcgen's spellings (`unsigned`
//! alone, `long`, `struct NAME` as a type) and our comment pragmas.

use crate::ast::*;
use crate::error::{Diagnostic, Pos, Reporter};
use crate::lexer::{lex, Comment, Tok, Token};

/// Words that cannot be used as names.
const KEYWORDS: &[&str] = &[
    "bool",
    "case",
    "const",
    "default",
    "double",
    "quadruple",
    "enum",
    "float",
    "hyper",
    "int",
    "opaque",
    "string",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "program",
    "version",
    "long",
];

/// Parses a whole `.x` source; stops at the first syntax error.
pub(crate) fn parse(source: &str, rep: &Reporter<'_>) -> Result<Spec, Diagnostic> {
    let tokens = lex(source, rep)?;
    let used = tokens
        .iter()
        .map(|t| vec![false; t.comments.len()])
        .collect();
    let mut p = Parser {
        tokens,
        i: 0,
        depth: 0,
        used,
        rep,
    };
    let mut spec = Spec::default();
    while p.peek() != &Tok::Eof {
        spec.defs.push(p.definition()?);
    }
    // Every pragma must have found its declaration or procedure.
    for (ti, t) in p.tokens.iter().enumerate() {
        for (ci, c) in t.comments.iter().enumerate() {
            if c.is_pragma() && !p.used[ti][ci] {
                return Err(rep.diag(
                    c.pos,
                    format!(
                        "pragma `/* {} */` belongs to nothing: put `@ddp` next to an opaque or string declaration (before it or after its `;` on the same line) and `@max_results(...)` next to a procedure",
                        c.text
                    ),
                ));
            }
        }
    }
    Ok(spec)
}

/// Deepest nesting of definitions inside declarations.
pub(crate) const MAX_NESTING: usize = 32;

struct Parser<'r, 'a> {
    tokens: Vec<Token>,
    i: usize,
    /// Current nesting of struct/union/enum bodies.
    depth: usize,
    /// Which comments were consumed as pragmas.
    used: Vec<Vec<bool>>,
    rep: &'r Reporter<'a>,
}

type PResult<T> = Result<T, Diagnostic>;

impl Parser<'_, '_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.i].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        let j = (self.i + k).min(self.tokens.len() - 1);
        &self.tokens[j].tok
    }

    fn pos(&self) -> Pos {
        self.tokens[self.i].pos
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.i].clone();
        if self.i + 1 < self.tokens.len() {
            self.i += 1;
        }
        t
    }

    fn err<T>(&self, expected: &str) -> PResult<T> {
        // What is missing belongs after the previous token when the next
        // one is on a later line.
        let pos = match self.i.checked_sub(1).map(|j| &self.tokens[j]) {
            Some(prev) if prev.end.line < self.pos().line => prev.end,
            _ => self.pos(),
        };
        Err(self.rep.diag(
            pos,
            format!("expected {expected}, found {}", self.peek().describe()),
        ))
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == w)
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == &Tok::Punct(c)
    }

    fn expect_punct(&mut self, c: char, what: &str) -> PResult<Pos> {
        if self.is_punct(c) {
            Ok(self.bump().pos)
        } else {
            self.err(&format!("`{c}` {what}"))
        }
    }

    fn expect_word(&mut self, w: &str, what: &str) -> PResult<Pos> {
        if self.is_word(w) {
            Ok(self.bump().pos)
        } else {
            self.err(&format!("`{w}` {what}"))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                let pos = self.bump().pos;
                Ok(Ident { name: s, pos })
            }
            Tok::Ident(s) => Err(self.rep.diag(
                self.pos(),
                format!(
                    "expected {what}, found the reserved word `{s}` (RFC 4506 §6.4 reserves it)"
                ),
            )),
            _ => self.err(what),
        }
    }

    fn value(&mut self, what: &str) -> PResult<Value> {
        match self.peek().clone() {
            Tok::Num(n) => {
                let pos = self.bump().pos;
                Ok(Value::Num(n, pos))
            }
            Tok::Ident(_) => Ok(Value::Name(self.ident(what)?)),
            _ => self.err(what),
        }
    }

    /// Documentation of the item starting at token `start`: the comments
    /// before it that are not on the previous token's line, and a comment
    /// after its end (token `end`) on the same line.
    fn doc(&self, start: usize, end: usize) -> Vec<String> {
        let prev_line = if start == 0 {
            0
        } else {
            self.tokens[start - 1].pos.line
        };
        // The block of comments right above the item (each ending on the
        // line before the next), not one trailing the previous token.
        let mut line = self.tokens[start].pos.line;
        let mut above: Vec<String> = Vec::new();
        for c in self.tokens[start].comments.iter().rev() {
            if c.is_pragma() {
                continue;
            }
            if (start > 0 && c.pos.line == prev_line) || c.end_line + 1 < line {
                break;
            }
            above.push(clean_comment(&c.text));
            line = c.pos.line;
        }
        above.reverse();
        let mut doc = above;
        if let Some(next) = self.tokens.get(end + 1) {
            let line = self.tokens[end].pos.line;
            doc.extend(
                next.comments
                    .iter()
                    .filter(|c| !c.is_pragma() && c.pos.line == line)
                    .map(|c| clean_comment(&c.text)),
            );
        }
        doc.retain(|d| !d.is_empty());
        doc
    }

    /// The unused pragmas in tokens `start..=end`, and after `end` on its line.
    fn take_pragmas(&mut self, start: usize, end: usize) -> PResult<Vec<Pragma>> {
        let line = self.tokens[end].pos.line;
        let mut found: Vec<Comment> = Vec::new();
        for ti in start..=(end + 1).min(self.tokens.len() - 1) {
            for ci in 0..self.tokens[ti].comments.len() {
                let c = &self.tokens[ti].comments[ci];
                if !c.is_pragma() || self.used[ti][ci] {
                    continue;
                }
                if ti == end + 1 && c.pos.line != line {
                    continue;
                }
                found.push(c.clone());
                self.used[ti][ci] = true;
            }
        }
        found
            .iter()
            .map(|c| crate::pragma::parse_pragma(c, self.rep))
            .collect()
    }

    fn definition(&mut self) -> PResult<Def> {
        let start = self.i;
        let word = match self.peek() {
            Tok::Ident(s) => s.clone(),
            _ => {
                return self.err(
                    "a definition (`const`, `typedef`, `enum`, `struct`, `union` or `program`)",
                )
            }
        };
        let def = match word.as_str() {
            "const" => {
                self.bump();
                let name = self.ident("the constant's name")?;
                self.expect_punct('=', "after the constant's name")?;
                let value = self.value("the constant's value (a number or a constant's name)")?;
                Def::Const {
                    name,
                    value,
                    doc: Vec::new(),
                }
            }
            "typedef" => {
                self.bump();
                let d = self.declaration()?;
                Def::Typedef(d)
            }
            "enum" => {
                self.bump();
                let name = self.ident("the enum's name")?;
                let body = self.enum_body()?;
                Def::Enum {
                    name,
                    body,
                    doc: Vec::new(),
                }
            }
            "struct" => {
                self.bump();
                let name = self.ident("the struct's name")?;
                let body = self.struct_body()?;
                Def::Struct {
                    name,
                    body,
                    doc: Vec::new(),
                }
            }
            "union" => {
                self.bump();
                let name = self.ident("the union's name")?;
                let body = self.union_body()?;
                Def::Union {
                    name,
                    body,
                    doc: Vec::new(),
                }
            }
            "program" => return self.program(start).map(Def::Program),
            _ => {
                return self.err(
                    "a definition (`const`, `typedef`, `enum`, `struct`, `union` or `program`)",
                )
            }
        };
        self.expect_punct(';', "after the definition")?;
        let end = self.i - 1;
        let doc = self.doc(start, end);
        Ok(match def {
            Def::Const { name, value, .. } => Def::Const { name, value, doc },
            Def::Enum { name, body, .. } => Def::Enum { name, body, doc },
            Def::Struct { name, body, .. } => Def::Struct { name, body, doc },
            Def::Union { name, body, .. } => Def::Union { name, body, doc },
            Def::Typedef(mut d) => {
                d.pragmas = self.take_pragmas(start, end)?;
                d.doc = doc;
                Def::Typedef(d)
            }
            Def::Program(p) => Def::Program(p),
        })
    }

    fn enum_body(&mut self) -> PResult<EnumBody> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.rep.diag(
                self.pos(),
                format!("definitions nested more than {MAX_NESTING} deep: define the inner types separately and refer to them by name"),
            ));
        }
        let r = self.enum_body_inner();
        self.depth -= 1;
        r
    }

    fn enum_body_inner(&mut self) -> PResult<EnumBody> {
        let pos = self.expect_punct('{', "to open the enum's items")?;
        let mut items = Vec::new();
        loop {
            let start = self.i;
            let name = self.ident("an enum item's name")?;
            // rpcgen accepts an item without a value and gives it C's: one
            // more than the item before, 0 for the first.
            let value = if self.is_punct('=') {
                self.bump();
                self.value("the enum item's value (a number or a constant's name)")?
            } else if self.is_punct(',') || self.is_punct('}') {
                match items.last() {
                    Some((prev, _, _)) => Value::Next {
                        prev: Ident::clone(prev),
                        pos: name.pos,
                    },
                    None => Value::Num(0, name.pos),
                }
            } else {
                return self.err("`=` and the item's value, `,` or `}` after the enum item's name");
            };
            let end = self.i - 1;
            let mut doc = self.doc(start, end);
            if self.is_punct(',') {
                self.bump();
                let line = self.tokens[self.i - 1].pos.line;
                doc.extend(
                    self.tokens[self.i]
                        .comments
                        .iter()
                        .filter(|c| !c.is_pragma() && c.pos.line == line)
                        .map(|c| clean_comment(&c.text)),
                );
                doc.retain(|d| !d.is_empty());
                doc.dedup();
                items.push((name, value, doc));
                continue;
            }
            items.push((name, value, doc));
            if self.is_punct('}') {
                self.bump();
                return Ok(EnumBody { items, pos });
            }
            return self.err("`,` or `}` after the enum item");
        }
    }

    fn struct_body(&mut self) -> PResult<StructBody> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.rep.diag(
                self.pos(),
                format!("definitions nested more than {MAX_NESTING} deep: define the inner types separately and refer to them by name"),
            ));
        }
        let r = self.struct_body_inner();
        self.depth -= 1;
        r
    }

    fn struct_body_inner(&mut self) -> PResult<StructBody> {
        let pos = self.expect_punct('{', "to open the struct's members")?;
        let mut fields = Vec::new();
        loop {
            let start = self.i;
            if self.is_word("void") {
                return Err(self.rep.diag(
                    self.pos(),
                    "`void` cannot be a struct member (only a union arm or a procedure may be void)",
                ));
            }
            let mut d = self.declaration()?;
            self.expect_punct(';', "after the struct member")?;
            let end = self.i - 1;
            d.pragmas.extend(self.take_pragmas(start, end)?);
            d.doc = self.doc(start, end);
            fields.push(d);
            if self.is_punct('}') {
                self.bump();
                return Ok(StructBody { fields, pos });
            }
        }
    }

    fn arm(&mut self) -> PResult<Arm> {
        let start = self.i;
        if self.is_word("void") {
            let pos = self.bump().pos;
            self.expect_punct(';', "after `void`")?;
            return Ok(Arm::Void(pos));
        }
        let mut d = self.declaration()?;
        self.expect_punct(';', "after the union arm's declaration")?;
        let end = self.i - 1;
        d.pragmas.extend(self.take_pragmas(start, end)?);
        d.doc = self.doc(start, end);
        Ok(Arm::Decl(Box::new(d)))
    }

    fn union_body(&mut self) -> PResult<UnionBody> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.rep.diag(
                self.pos(),
                format!("definitions nested more than {MAX_NESTING} deep: define the inner types separately and refer to them by name"),
            ));
        }
        let r = self.union_body_inner();
        self.depth -= 1;
        r
    }

    fn union_body_inner(&mut self) -> PResult<UnionBody> {
        let pos = self.expect_word(
            "switch",
            "to start the union body (`switch (type name) { ... }`)",
        )?;
        self.expect_punct('(', "after `switch`")?;
        let discr = self.declaration()?;
        self.expect_punct(')', "after the discriminant's declaration")?;
        self.expect_punct('{', "to open the union's arms")?;
        let mut arms = Vec::new();
        let mut default = None;
        loop {
            if self.is_word("case") {
                let mut cases = Vec::new();
                while self.is_word("case") {
                    self.bump();
                    cases.push(self.value("a case value (a number or a constant's name)")?);
                    self.expect_punct(':', "after the case value")?;
                }
                let arm = self.arm()?;
                arms.push((cases, arm));
            } else if self.is_word("default") {
                let dpos = self.bump().pos;
                if default.is_some() {
                    return Err(self
                        .rep
                        .diag(dpos, "a union has at most one `default:` arm"));
                }
                self.expect_punct(':', "after `default`")?;
                default = Some((dpos, self.arm()?));
            } else if self.is_punct('}') {
                let p = self.bump().pos;
                if arms.is_empty() {
                    return Err(self
                        .rep
                        .diag(p, "a union needs at least one `case` arm (RFC 4506 §6.3)"));
                }
                return Ok(UnionBody {
                    discr: Box::new(discr),
                    arms,
                    default,
                    pos,
                });
            } else {
                return self.err("`case`, `default` or `}` in the union body");
            }
        }
    }

    fn type_spec(&mut self) -> PResult<TypeSpec> {
        let word = match self.peek() {
            Tok::Ident(s) => s.clone(),
            _ => return self.err("a type"),
        };
        let pos = self.pos();
        Ok(match word.as_str() {
            "unsigned" => {
                self.bump();
                if self.is_word("int") || self.is_word("long") {
                    self.bump();
                    TypeSpec::UInt
                } else if self.is_word("hyper") {
                    self.bump();
                    TypeSpec::UHyper
                } else if self.is_word("char") || self.is_word("short") {
                    return Err(self.rep.diag(
                        self.pos(),
                        "`unsigned char` and `unsigned short` are not XDR types (RFC 4506): use `unsigned int`",
                    ));
                } else {
                    TypeSpec::UInt
                }
            }
            "int" | "long" => {
                self.bump();
                TypeSpec::Int
            }
            "hyper" => {
                self.bump();
                TypeSpec::Hyper
            }
            "float" => {
                self.bump();
                TypeSpec::Float
            }
            "double" => {
                self.bump();
                TypeSpec::Double
            }
            "quadruple" => {
                self.bump();
                TypeSpec::Quadruple(pos)
            }
            "bool" => {
                self.bump();
                TypeSpec::Bool
            }
            "char" | "short" => {
                return Err(self.rep.diag(
                    pos,
                    format!("`{word}` is not an XDR type (RFC 4506): use `int` (or `opaque` for bytes)"),
                ))
            }
            "enum" => {
                self.bump();
                if self.is_punct('{') {
                    TypeSpec::Enum(self.enum_body()?)
                } else {
                    TypeSpec::Named(self.ident("an enum's name or `{`")?)
                }
            }
            "struct" => {
                self.bump();
                if self.is_punct('{') {
                    TypeSpec::Struct(self.struct_body()?)
                } else {
                    TypeSpec::Named(self.ident("a struct's name or `{`")?)
                }
            }
            "union" => {
                self.bump();
                if self.is_word("switch") {
                    TypeSpec::Union(self.union_body()?)
                } else {
                    TypeSpec::Named(self.ident("a union's name or `switch`")?)
                }
            }
            "opaque" | "string" | "void" => {
                return Err(self.rep.diag(
                    pos,
                    format!("`{word}` cannot be used here: expected a type name or a type specifier (declare `{word}` items in a typedef and use its name)"),
                ))
            }
            _ => TypeSpec::Named(self.ident("a type")?),
        })
    }

    fn declaration(&mut self) -> PResult<Decl> {
        let pos = self.pos();
        let ty = if self.is_word("opaque") {
            self.bump();
            DeclType::Opaque
        } else if self.is_word("string") {
            self.bump();
            DeclType::String
        } else if self.is_word("void") {
            return Err(self.rep.diag(
                pos,
                "`void` is allowed only as a union arm or a procedure's argument or result",
            ));
        } else {
            DeclType::Spec(self.type_spec()?)
        };
        let optional = if self.is_punct('*') {
            self.bump();
            true
        } else {
            false
        };
        let name = self.ident("the declared name")?;
        let shape = if optional {
            Shape::Optional
        } else if self.is_punct('[') {
            self.bump();
            let v = self.value("the array's size (a number or a constant's name)")?;
            self.expect_punct(']', "to close the fixed-length array")?;
            Shape::Fixed(v)
        } else if self.is_punct('<') {
            self.bump();
            let v = if self.is_punct('>') {
                None
            } else {
                Some(self.value("the maximum size (a number or a constant's name) or `>`")?)
            };
            self.expect_punct('>', "to close the variable-length array")?;
            Shape::Var(v)
        } else {
            Shape::Plain
        };
        Ok(Decl {
            ty,
            name,
            shape,
            pragmas: Vec::new(),
            doc: Vec::new(),
            pos,
        })
    }

    fn program(&mut self, start: usize) -> PResult<Program> {
        self.expect_word("program", "")?;
        let name = self.ident("the program's name")?;
        self.expect_punct('{', "to open the program's versions")?;
        let mut versions = Vec::new();
        while !self.is_punct('}') {
            let vstart = self.i;
            self.expect_word(
                "version",
                "to start a version definition (or `}` to close the program)",
            )?;
            let vname = self.ident("the version's name")?;
            self.expect_punct('{', "to open the version's procedures")?;
            let mut procs = Vec::new();
            while !self.is_punct('}') {
                procs.push(self.procedure()?);
            }
            self.bump();
            self.expect_punct('=', "and the version number after the version's `}`")?;
            let number = self.value("the version number")?;
            self.expect_punct(';', "after the version number")?;
            if procs.is_empty() {
                return Err(self
                    .rep
                    .diag(vname.pos, "a version needs at least one procedure"));
            }
            let doc = self.doc(vstart, self.i - 1);
            versions.push(Version {
                name: vname,
                procs,
                number,
                doc,
            });
        }
        self.bump();
        if versions.is_empty() {
            return Err(self
                .rep
                .diag(name.pos, "a program needs at least one version"));
        }
        self.expect_punct('=', "and the program number after the program's `}`")?;
        let number = self.value("the program number")?;
        self.expect_punct(';', "after the program number")?;
        let doc = self.doc(start, self.i - 1);
        Ok(Program {
            name,
            versions,
            number,
            doc,
        })
    }

    fn procedure(&mut self) -> PResult<Proc> {
        let start = self.i;
        let result = if self.is_word("void") {
            self.bump();
            None
        } else {
            Some(self.proc_type("the procedure's result type (or `void`)")?)
        };
        let name = self.ident("the procedure's name")?;
        self.expect_punct('(', "after the procedure's name")?;
        let mut args = Vec::new();
        let mut arg_names = Vec::new();
        if self.is_word("void") && self.peek_at(1) == &Tok::Punct(')') {
            self.bump();
        } else {
            args.push(self.proc_type("the argument type (or `void`)")?);
            arg_names.push(self.arg_name(&args[0])?);
            while self.is_punct(',') {
                self.bump();
                args.push(self.proc_type("the next argument type")?);
                arg_names.push(self.arg_name(&args[args.len() - 1])?);
            }
        }
        self.expect_punct(')', "after the procedure's arguments")?;
        self.expect_punct('=', "and the procedure number")?;
        let number = self.value("the procedure number")?;
        self.expect_punct(';', "after the procedure number")?;
        let end = self.i - 1;
        let pragmas = self.take_pragmas(start, end)?;
        let doc = self.doc(start, end);
        Ok(Proc {
            name,
            result,
            args,
            arg_names,
            number,
            pragmas,
            doc,
        })
    }

    /// The name rpcgen lets an argument have after its type (`int
    /// F(int a, string name<>)`, its extension to RFC 5531 §12.2): a
    /// plain name, and `<>` after a `string` argument's (an unbounded
    /// string either way). Arrays, bounds and optional data in an argument
    /// are refused: rpcgen reads them inconsistently (a single `int *p`
    /// argument is sent as a plain `int`).
    fn arg_name(&mut self, ty: &TypeSpec) -> PResult<Option<Ident>> {
        const SHAPES: &str = "an argument is a type, optionally followed by a name (`int count`); declare arrays, bounded strings and optional data with `typedef` and use that name";
        if self.is_punct('*') {
            return Err(self.rep.diag(
                self.pos(),
                format!("`*` in a procedure's argument: {SHAPES}"),
            ));
        }
        let name = match self.peek() {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                Some(self.ident("the argument's name")?)
            }
            Tok::Ident(_) => {
                return self.err("`,` or `)` after the argument type, or the argument's name")
            }
            _ => None,
        };
        if name.is_some() && self.is_punct('<') && matches!(ty, TypeSpec::ProcString) {
            if self.peek_at(1) == &Tok::Punct('>') {
                self.bump();
                self.bump();
            } else {
                return Err(self.rep.diag(
                    self.pos(),
                    format!("a bound on a `string` argument (rpcgen ignores it): write `string NAME<>` or {SHAPES}"),
                ));
            }
        } else if name.is_some() && (self.is_punct('<') || self.is_punct('[')) {
            return Err(self.rep.diag(
                self.pos(),
                format!("an array in a procedure's argument: {SHAPES}"),
            ));
        }
        Ok(name)
    }

    fn proc_type(&mut self, what: &str) -> PResult<TypeSpec> {
        match self.peek() {
            // rpcgen takes `string` here (an unbounded string), not `opaque`.
            Tok::Ident(s) if s == "string" => {
                self.bump();
                Ok(TypeSpec::ProcString)
            }
            Tok::Ident(s) if s == "opaque" => Err(self.rep.diag(
                self.pos(),
                "`opaque` cannot be a procedure's argument or result directly: declare `typedef opaque NAME<MAX>;` and use NAME",
            )),
            Tok::Ident(s) if s == "void" => Err(self.rep.diag(
                self.pos(),
                "`void` must be the only argument".to_string(),
            )),
            Tok::Ident(_) => self.type_spec(),
            _ => self.err(what),
        }
    }
}

/// Tidies a comment for documentation: drops the leading `*` of each line.
fn clean_comment(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches('*').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
