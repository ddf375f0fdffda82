//! [`Schema`]: the checked definitions of a `.x` file and what they
//! declare; what the differential makes of them (samples, drivers, the
//! flattened copy) is in the sibling modules.

use crate::model::{Kind, Model, TypeItem};
use crate::Error;

/// The checked definitions of a `.x` file, for the differential.
#[derive(Debug, Clone)]
pub struct Schema {
    pub(super) model: Model,
    pub(super) file: String,
}

impl Schema {
    /// Parses and checks `source` (`file` names it in messages).
    pub fn parse(source: &str, file: &str) -> Result<Self, Error> {
        let model = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("xdrgen-schema".into())
                .stack_size(256 << 20)
                .spawn_scoped(s, || crate::model(source, file))
                .map_err(|source| Error::Io {
                    path: file.to_string(),
                    source,
                })?
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })?;
        Ok(Self {
            model,
            file: file.to_string(),
        })
    }

    /// Reads and checks the `.x` file at `path`.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let display = path.display().to_string();
        let source = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: display.clone(),
            source,
        })?;
        Self::parse(&source, &display)
    }

    /// The file name given.
    pub fn file(&self) -> &str {
        &self.file
    }

    pub(super) fn top_level(&self) -> impl Iterator<Item = &TypeItem> {
        self.model.types.iter().filter(|t| !t.xdr.contains('.'))
    }

    pub(super) fn find(&self, xdr: &str) -> Option<usize> {
        self.model
            .types
            .iter()
            .position(|t| t.xdr == xdr && !t.xdr.contains('.'))
    }

    /// The XDR names of the file's types defined at top level (typedefs,
    /// enums, structs, unions), in file order: the names rpcgen's C gives
    /// `xdr_<name>` functions.
    pub fn types(&self) -> Vec<String> {
        self.top_level().map(|t| t.xdr.clone()).collect()
    }

    /// The types defined inside another's declaration (`outer.member`),
    /// which rpcgen refuses.
    pub fn nested_types(&self) -> Vec<String> {
        self.model
            .types
            .iter()
            .filter(|t| t.xdr.contains('.'))
            .map(|t| t.xdr.clone())
            .collect()
    }

    /// Whether the type is an enum, struct, union or typedef: its kind
    /// as the RPC language says it.
    pub fn kind_of(&self, xdr: &str) -> Option<&'static str> {
        let id = self.find(xdr)?;
        Some(match self.model.types[id].kind {
            Kind::Enum(_) => "enum",
            Kind::Struct(_) => "struct",
            Kind::Union(_) => "union",
            Kind::Alias(_) => "typedef",
        })
    }
}
