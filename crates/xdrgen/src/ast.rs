//! The syntax tree of an RPC language file (RFC 4506 §6.3, RFC 5531 §12.2).

use crate::error::Pos;

/// A name and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ident {
    /// The name.
    pub(crate) name: String,
    /// Its position.
    pub(crate) pos: Pos,
}

/// A constant value: a literal or the name of a constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// A literal (decimal, hex or octal; may be negative).
    Num(i128, Pos),
    /// A constant or enumerator name.
    Name(Ident),
    /// An enum item written without a value (rpcgen's C reading): one
    /// more than the item before it, `prev`.
    Next {
        /// The item before.
        prev: Ident,
        /// Where the item without a value is.
        pos: Pos,
    },
}

impl Value {
    /// Where the value was written.
    pub(crate) fn pos(&self) -> Pos {
        match self {
            Value::Num(_, p) => *p,
            Value::Name(i) => i.pos,
            Value::Next { pos, .. } => *pos,
        }
    }
}

/// A type specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TypeSpec {
    /// `int` (also rpcgen's `long`).
    Int,
    /// `unsigned int` (also `unsigned`, `unsigned long`).
    UInt,
    /// `hyper`.
    Hyper,
    /// `unsigned hyper`.
    UHyper,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `quadruple` (refused by the checker).
    Quadruple(Pos),
    /// `bool`.
    Bool,
    /// `string` as a procedure's argument or result: rpcgen takes it as
    /// an unbounded string (`string<>`).
    ProcString,
    /// A type name (also `struct NAME`, `enum NAME`, `union NAME`).
    Named(Ident),
    /// An enum defined in place.
    Enum(EnumBody),
    /// A struct defined in place.
    Struct(StructBody),
    /// A union defined in place.
    Union(UnionBody),
}

/// What is declared: a type, `opaque` or `string`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeclType {
    /// Any type specifier.
    Spec(TypeSpec),
    /// `opaque`.
    Opaque,
    /// `string`.
    String,
}

/// The shape of a declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `T name`.
    Plain,
    /// `T name[N]`.
    Fixed(Value),
    /// `T name<N>` or `T name<>`.
    Var(Option<Value>),
    /// `T *name`.
    Optional,
}

/// A pragma in a comment (`/* @ddp */`, `/* @max_results(...) */`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pragma {
    /// `@ddp` or `@ddp(BOUND)`: the item is DDP-eligible.
    Ddp {
        /// Where the pragma is.
        pos: Pos,
        /// What bounds its size in a reply, if not its declared maximum.
        bound: Option<Term>,
    },
    /// `@max_results(EXPR)`: the procedure's maximum result size.
    MaxResults {
        /// Where the pragma is.
        pos: Pos,
        /// The terms, added up.
        terms: Vec<Term>,
    },
}

/// A term of a pragma expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Term {
    /// A literal.
    Num(u64),
    /// A constant's name.
    Const(String),
    /// `args.a.b`: the value of an unsigned field of the call's arguments.
    Arg(Vec<String>),
    /// `size(args.a.b)`: the XDR size of an item of the call's arguments.
    Size(Vec<String>),
}

/// A declaration (`type name`, `type name[N]`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decl {
    /// What is declared.
    pub(crate) ty: DeclType,
    /// The declared name.
    pub(crate) name: Ident,
    /// Its shape.
    pub(crate) shape: Shape,
    /// Pragmas attached to it.
    pub(crate) pragmas: Vec<Pragma>,
    /// Comments that document it.
    pub(crate) doc: Vec<String>,
    /// Where the declaration starts.
    pub(crate) pos: Pos,
}

/// A declaration or `void` (union arms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arm {
    /// `void`.
    Void(Pos),
    /// A declaration.
    Decl(Box<Decl>),
}

/// `{ A = 1, B = 2 }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnumBody {
    /// Name, value and documentation of each item.
    pub(crate) items: Vec<(Ident, Value, Vec<String>)>,
    /// Position of `{`.
    pub(crate) pos: Pos,
}

/// `{ declarations }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StructBody {
    /// The members.
    pub(crate) fields: Vec<Decl>,
    /// Position of `{`.
    pub(crate) pos: Pos,
}

/// `switch (decl) { case ...: ...; default: ...; }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnionBody {
    /// The discriminant.
    pub(crate) discr: Box<Decl>,
    /// The case arms: values (fall-through lists) and their declaration.
    pub(crate) arms: Vec<(Vec<Value>, Arm)>,
    /// The default arm.
    pub(crate) default: Option<(Pos, Arm)>,
    /// Position of `switch`.
    pub(crate) pos: Pos,
}

/// A procedure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proc {
    /// Its name.
    pub(crate) name: Ident,
    /// Result type (`None` for `void`).
    pub(crate) result: Option<TypeSpec>,
    /// Argument types (empty for `void`).
    pub(crate) args: Vec<TypeSpec>,
    /// The arguments' names, where the file gives them (`int F(int a)`,
    /// rpcgen's extension): documentation only.
    pub(crate) arg_names: Vec<Option<Ident>>,
    /// Its number.
    pub(crate) number: Value,
    /// Pragmas.
    pub(crate) pragmas: Vec<Pragma>,
    /// Documentation.
    pub(crate) doc: Vec<String>,
}

/// A program version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    /// Its name.
    pub(crate) name: Ident,
    /// Its procedures.
    pub(crate) procs: Vec<Proc>,
    /// Its number.
    pub(crate) number: Value,
    /// Documentation.
    pub(crate) doc: Vec<String>,
}

/// A program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    /// Its name.
    pub(crate) name: Ident,
    /// Its versions.
    pub(crate) versions: Vec<Version>,
    /// Its number.
    pub(crate) number: Value,
    /// Documentation.
    pub(crate) doc: Vec<String>,
}

/// A top-level definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Def {
    /// `const NAME = value;`
    Const {
        /// Name.
        name: Ident,
        /// Value.
        value: Value,
        /// Documentation.
        doc: Vec<String>,
    },
    /// `typedef declaration;`
    Typedef(Decl),
    /// `enum NAME { ... };`
    Enum {
        /// Name.
        name: Ident,
        /// Items.
        body: EnumBody,
        /// Documentation.
        doc: Vec<String>,
    },
    /// `struct NAME { ... };`
    Struct {
        /// Name.
        name: Ident,
        /// Members.
        body: StructBody,
        /// Documentation.
        doc: Vec<String>,
    },
    /// `union NAME switch (...) { ... };`
    Union {
        /// Name.
        name: Ident,
        /// Body.
        body: UnionBody,
        /// Documentation.
        doc: Vec<String>,
    },
    /// `program NAME { ... } = N;`
    Program(Program),
}

/// A parsed `.x` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Spec {
    /// Its definitions, in order.
    pub(crate) defs: Vec<Def>,
}
