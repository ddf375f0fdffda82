//! [`open_enum!`](crate::open_enum): the one definition of an *open
//! enumeration* for every protocol layer of the stack.

/// Defines an **open enumeration**: a newtype over an integer with named
/// constants, where a value without a name is kept as it is, so decoding
/// and re-encoding loses nothing and an unknown value can be reported.
///
/// XDR enums received from a peer (RFC 4506 §4.3) and the protocol fields
/// that name values of a registry (`rdma_proc`, `rdma_err`, `accept_stat`,
/// the RDMAP opcode) are all of this kind. The macro generates:
///
/// * `struct Name(pub REPR)` deriving `Clone, Copy, PartialEq, Eq, Hash,
///   PartialOrd, Ord`, plus `From<REPR>`;
/// * one associated constant per value;
/// * `const fn name(self) -> Option<&'static str>`: the constant's own name,
///   or the label given after `=>`;
/// * `Debug`: the name, or `Name(value)` for an unnamed value;
/// * with `: Display` after the type, `Display` printed as `Debug`.
///
/// ```
/// rpcrdma_xdr::open_enum! {
///     /// `accept_stat`, abridged.
///     pub struct AcceptStat(u32): Display {
///         /// The procedure ran.
///         SUCCESS = 0,
///         /// No such procedure.
///         PROC_UNAVAIL = 3,
///     }
/// }
///
/// rpcrdma_xdr::open_enum! {
///     /// An RDMAP opcode, abridged; its names are RFC 5040's.
///     pub struct Opcode(u8) {
///         /// RDMA Write.
///         WRITE = 0 => "RDMA Write",
///     }
/// }
///
/// assert_eq!(AcceptStat::from(3), AcceptStat::PROC_UNAVAIL);
/// assert_eq!(AcceptStat::SUCCESS.name(), Some("SUCCESS"));
/// assert_eq!(AcceptStat(9).name(), None);
/// assert_eq!(format!("{} {:?}", AcceptStat(3), AcceptStat(9)), "PROC_UNAVAIL AcceptStat(9)");
/// assert_eq!(format!("{:?} {:?}", Opcode::WRITE, Opcode(15)), "RDMA Write Opcode(15)");
/// ```
#[macro_export]
macro_rules! open_enum {
    (@label $cname:ident) => {
        stringify!($cname)
    };
    (@label $cname:ident $label:literal) => {
        $label
    };
    (@display Display $name:ident) => {
        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Debug::fmt(self, f)
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident($repr:ty) $(: $display:ident)? {
            $( $(#[$cmeta:meta])* $cname:ident = $value:literal $(=> $label:literal)?, )*
        }
    ) => {
        $(#[$meta])*
        ///
        /// An open enumeration: values without a name are kept, so decoding
        /// and re-encoding loses nothing.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis struct $name(pub $repr);

        impl $name {
            $( $(#[$cmeta])* $vis const $cname: $name = $name($value); )*

            /// The name of a known value (`None` for the others).
            $vis const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some($crate::open_enum!(@label $cname $($label)?)), )*
                    _ => None,
                }
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl From<$repr> for $name {
            fn from(v: $repr) -> Self {
                $name(v)
            }
        }

        $( $crate::open_enum!(@display $display $name); )?
    };
}
