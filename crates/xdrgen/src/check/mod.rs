//! The type checker: resolves names and constants, names nested
//! definitions, checks every rule the generated code relies on, and
//! lowers the syntax tree into the [`Model`].
//!
//! [`check`] runs the passes in order, each in the module named for it:
//!
//! | module | pass |
//! |---|---|
//! | `symbols` | the constant namespace (`const`s, enum items) and its evaluation |
//! | `lower` | type definitions into [`TypeItem`]s, with the rules of one definition and of `@ddp` marks |
//! | `cases` | union case values, once every type is known |
//! | `recursion` | the type graph: self-containment, linked lists, recursive types, smallest sizes |
//! | `rust_names` | distinct Rust names for types, typedef functions, constants, programs |
//! | `program` | programs, versions and procedures, with their stubs' names and call hints |

mod cases;
mod lower;
mod program;
mod recursion;
mod rust_names;
mod symbols;

use std::collections::HashMap;

use crate::ast::*;
use crate::error::{Pos, Reporter};
use crate::model::*;
use symbols::Sym;

struct Checker<'r, 'a> {
    rep: &'r mut Reporter<'a>,
    syms: HashMap<String, (Sym, Pos)>,
    values: HashMap<String, Option<i128>>,
    type_ids: HashMap<String, TypeId>,
    model: Model,
    /// Union case values, resolved once every type is known.
    pending_cases: Vec<(TypeId, Vec<Vec<Value>>, Pos)>,
    /// Which enum an enum-item name belongs to.
    item_enum: HashMap<String, TypeId>,
}

/// Checks `spec` and builds the model; errors go to `rep`.
pub(crate) fn check(spec: &Spec, rep: &mut Reporter<'_>) -> Model {
    let mut c = Checker {
        rep,
        syms: HashMap::new(),
        values: HashMap::new(),
        type_ids: HashMap::new(),
        model: Model::default(),
        pending_cases: Vec::new(),
        item_enum: HashMap::new(),
    };
    c.collect_symbols(spec);
    c.collect_types(spec);
    for def in &spec.defs {
        c.lower_def(def);
    }
    if c.rep.diags.is_empty() {
        c.resolve_cases();
        c.check_ddp_marks();
        c.analyse_recursion();
        c.check_rust_names();
    }
    if c.rep.diags.is_empty() {
        for def in &spec.defs {
            if let Def::Program(p) = def {
                c.lower_program(p);
            }
        }
        c.check_program_names();
    }
    c.model
}

impl Checker<'_, '_> {
    fn err(&mut self, pos: Pos, msg: impl Into<String>) {
        self.rep.error(pos, msg);
    }
}
