//! The checked model the generator works from: every name resolved, every
//! constant evaluated, nested definitions given names of their own.

use crate::error::Pos;

/// Index into [`Model::types`].
pub(crate) type TypeId = usize;

/// A resolved XDR type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Bool,
    /// `opaque[N]`.
    OpaqueFixed(u32),
    /// `opaque<N>` (`u32::MAX` for `<>`).
    OpaqueVar(u32),
    /// `string<N>`.
    Str(u32),
    /// A struct, union, enum or typedef.
    Named(TypeId),
    /// `T[N]`.
    Array(Box<Ty>, u32),
    /// `T<N>`.
    VarArray(Box<Ty>, u32),
    /// `T *`.
    Optional(Box<Ty>),
}

/// Where a DDP-eligible item's reply size comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DdpBound {
    /// Its declared maximum.
    Declared,
    /// A number (or constant).
    Num(u64),
    /// A field of the call's arguments.
    Arg(Vec<String>, Pos),
}

/// A declaration: struct member, union arm, typedef.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) xdr: String,
    pub(crate) rust: String,
    pub(crate) ty: Ty,
    pub(crate) ddp: Option<DdpBound>,
    pub(crate) doc: Vec<String>,
    pub(crate) pos: Pos,
}

#[derive(Debug, Clone)]
pub(crate) struct EnumItem {
    pub(crate) xdr: String,
    pub(crate) rust: String,
    pub(crate) value: i32,
    pub(crate) doc: Vec<String>,
    /// Another name for an earlier item of the same value (an alias, RFC
    /// 4506 leaves values free to repeat): its index. Aliases are
    /// associated constants, not variants.
    pub(crate) alias_of: Option<usize>,
    /// The value as written, when it was written above `i32::MAX` (a
    /// 32-bit word such as `0x80000000`, taken as rpcgen's C sends it).
    pub(crate) written: Option<i128>,
}

/// One case value of a union.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) value: i64,
    /// How it was written.
    pub(crate) label: String,
    /// The Rust variant.
    pub(crate) variant: String,
}

#[derive(Debug, Clone)]
pub(crate) struct UArm {
    pub(crate) cases: Vec<Case>,
    pub(crate) field: Option<Field>,
}

#[derive(Debug, Clone)]
pub(crate) struct Union {
    pub(crate) discr_xdr: String,
    /// `I32`, `U32`, `Bool` or `Named(enum)`.
    pub(crate) discr: Ty,
    pub(crate) arms: Vec<UArm>,
    /// `Some(None)`: `default: void`.
    pub(crate) default: Option<Option<Field>>,
    pub(crate) default_variant: String,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Struct(Vec<Field>),
    Enum(Vec<EnumItem>),
    Union(Union),
    Alias(Field),
}

impl Kind {
    /// Every declaration the type holds: a struct's members, an alias's
    /// one, a union's arms and default (void ones have none); an enum has
    /// none.
    pub(crate) fn fields(&self) -> Vec<&Field> {
        match self {
            Kind::Struct(fs) => fs.iter().collect(),
            Kind::Alias(f) => vec![f],
            Kind::Union(u) => u
                .arms
                .iter()
                .filter_map(|a| a.field.as_ref())
                .chain(u.default.iter().flatten())
                .collect(),
            Kind::Enum(_) => Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct TypeItem {
    /// The XDR name (nested definitions: `outer.member`).
    pub(crate) xdr: String,
    pub(crate) rust: String,
    pub(crate) kind: Kind,
    pub(crate) doc: Vec<String>,
    pub(crate) pos: Pos,
    /// A linked-list node: its last member is a pointer to its own type.
    /// The chain of links is encoded, decoded, dropped, cloned and
    /// compared iteratively.
    pub(crate) list_node: bool,
    /// Part of a recursive cycle other than a list's link (which may also
    /// be a list node's, through its other members): decoded with a depth
    /// limit.
    pub(crate) recursive: bool,
    /// Smallest encoding in bytes.
    pub(crate) min_size: u64,
    /// A typedef's codec functions are `encode_{fn_base}` etc.
    pub(crate) fn_base: String,
}

#[derive(Debug, Clone)]
pub(crate) struct ConstItem {
    pub(crate) xdr: String,
    pub(crate) rust: String,
    pub(crate) value: i128,
    pub(crate) doc: Vec<String>,
}

/// A size for the call hints: known when generating, or a Rust
/// expression (a `u64`) over the call's `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sz {
    C(u64),
    E(String),
}

#[derive(Debug, Clone)]
pub(crate) struct ProcIr {
    pub(crate) xdr: String,
    pub(crate) method: String,
    /// Its number's constant in the version module.
    pub(crate) rust_const: String,
    /// The names of its private argument and result wrappers are
    /// `Args{wrapper}` and `Res{wrapper}`.
    pub(crate) wrapper: String,
    pub(crate) number: u32,
    pub(crate) result: Option<Ty>,
    pub(crate) args: Vec<Ty>,
    /// The arguments' names in the `.x` file, where it gives them.
    pub(crate) arg_names: Vec<Option<String>>,
    /// Write-chunk sizes of the DDP-eligible result items, in XDR order.
    pub(crate) ddp_results: Vec<Sz>,
    /// Maximum size of the results, if known.
    pub(crate) max_results: Option<Sz>,
    /// Maximum size of the results with every DDP-eligible item in its
    /// Write chunk (only its length word inline), over every branch; known
    /// when every such item gets a Write chunk.
    pub(crate) reduced_results: Option<Sz>,
    pub(crate) doc: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct VersionIr {
    pub(crate) xdr: String,
    pub(crate) module: String,
    pub(crate) rust_const: String,
    pub(crate) number: u32,
    pub(crate) procs: Vec<ProcIr>,
    pub(crate) doc: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct ProgramIr {
    pub(crate) xdr: String,
    pub(crate) rust_const: String,
    pub(crate) number: u32,
    pub(crate) versions: Vec<VersionIr>,
    pub(crate) doc: Vec<String>,
}

/// Everything the generator needs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Model {
    pub(crate) consts: Vec<ConstItem>,
    pub(crate) types: Vec<TypeItem>,
    pub(crate) programs: Vec<ProgramIr>,
}

impl Model {
    /// The smallest encoding of a type in bytes (a named type's is
    /// computed once, by the checker, into [`TypeItem::min_size`]).
    pub(crate) fn min_size(&self, ty: &Ty) -> u64 {
        match ty {
            Ty::I32 | Ty::U32 | Ty::F32 | Ty::Bool => 4,
            Ty::I64 | Ty::U64 | Ty::F64 => 8,
            Ty::OpaqueFixed(n) => u64::from(*n).div_ceil(4) * 4,
            Ty::OpaqueVar(_) | Ty::Str(_) | Ty::VarArray(..) | Ty::Optional(_) => 4,
            Ty::Array(t, n) => self.min_size(t).saturating_mul(u64::from(*n)),
            Ty::Named(id) => self.types[*id].min_size,
        }
    }

    /// Follows typedefs to the underlying type, collecting the first DDP
    /// mark on the way.
    pub(crate) fn resolve<'a>(&'a self, ty: &'a Ty) -> (&'a Ty, Option<&'a DdpBound>) {
        let mut t = ty;
        let mut ddp = None;
        let mut guard = 0;
        while let Ty::Named(id) = t {
            match &self.types[*id].kind {
                Kind::Alias(f) if guard < 1000 => {
                    if ddp.is_none() {
                        ddp = f.ddp.as_ref();
                    }
                    t = &f.ty;
                    guard += 1;
                }
                _ => break,
            }
        }
        (t, ddp)
    }

    /// Whether the type contains a `float` or `double` (no `Eq`).
    pub(crate) fn has_float(&self, ty: &Ty, seen: &mut Vec<TypeId>) -> bool {
        match ty {
            Ty::F32 | Ty::F64 => true,
            Ty::Array(t, _) | Ty::VarArray(t, _) | Ty::Optional(t) => self.has_float(t, seen),
            Ty::Named(id) => {
                if seen.contains(id) {
                    return false;
                }
                seen.push(*id);
                self.types[*id]
                    .kind
                    .fields()
                    .into_iter()
                    .any(|f| self.has_float(&f.ty, seen))
            }
            _ => false,
        }
    }

    /// Whether values of the type are `Copy`.
    pub(crate) fn is_copy(&self, ty: &Ty, seen: &mut Vec<TypeId>) -> bool {
        match ty {
            Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64 | Ty::F32 | Ty::F64 | Ty::Bool => true,
            Ty::OpaqueFixed(_) => true,
            Ty::OpaqueVar(_) | Ty::Str(_) | Ty::VarArray(..) | Ty::Optional(_) => false,
            Ty::Array(t, _) => self.is_copy(t, seen),
            Ty::Named(id) => {
                if seen.contains(id) {
                    return false;
                }
                seen.push(*id);
                let item = &self.types[*id];
                if item.list_node || item.recursive {
                    return false;
                }
                match &item.kind {
                    Kind::Enum(_) => true,
                    Kind::Alias(f) => self.is_copy(&f.ty, seen),
                    Kind::Struct(fs) => fs.iter().all(|f| self.is_copy(&f.ty, seen)),
                    Kind::Union(u) => {
                        self.is_copy(&u.discr, seen)
                            && u.arms
                                .iter()
                                .filter_map(|a| a.field.as_ref())
                                .chain(u.default.iter().flatten())
                                .all(|f| self.is_copy(&f.ty, seen))
                    }
                }
            }
        }
    }
}
