//! Random valid encodings walked from the checked definitions: enums
//! pick declared items, unions a case (or the default arm with a
//! discriminant no case lists), bounded items stay within their bounds,
//! optional data is present or absent, integers cover their whole range;
//! recursion stops after a few levels (then every choice is the smallest
//! one, which always ends: the checker refused types that contain
//! themselves without a pointer or a variable-length array between).
//! Each place a word could be made invalid is remembered as a mutation.

use super::{Mutation, MutationKind, Rng, Sample};
use crate::model::{Field, Kind, Model, Ty, TypeId, Union};

/// Levels of optional data and variable-length arrays, after which every
/// choice is the smallest.
const MAX_DESCENTS: u32 = 10;
/// An encoding past this size makes every later choice the smallest.
const MAX_BYTES: usize = 1 << 16;
/// No choice leads to an item whose smallest encoding is larger (a
/// fixed array of a billion hypers); a type that needs one has no sample.
pub(super) const MAX_ITEM: u64 = 1 << 20;

struct Walk<'a> {
    m: &'a Model,
    rng: &'a mut Rng,
    out: Vec<u8>,
    spots: Vec<(MutationKind, usize, u32)>,
    descents: u32,
    minimal: bool,
}

pub(super) fn sample(m: &Model, id: TypeId, rng: &mut Rng) -> Sample {
    let mut w = Walk {
        m,
        rng,
        out: Vec::new(),
        spots: Vec::new(),
        descents: 0,
        minimal: false,
    };
    w.value(&Ty::Named(id));
    let Walk { out, spots, .. } = w;
    let mutations = spots
        .into_iter()
        .map(|(kind, offset, word)| {
            let mut bytes = out.clone();
            let was = u32::from_be_bytes([
                out[offset],
                out[offset + 1],
                out[offset + 2],
                out[offset + 3],
            ]);
            bytes[offset..offset + 4].copy_from_slice(&word.to_be_bytes());
            Mutation {
                kind,
                offset,
                was,
                bytes,
            }
        })
        .collect();
    Sample {
        bytes: out,
        mutations,
    }
}

impl Walk<'_> {
    fn word(&mut self, w: u32) {
        self.out.extend_from_slice(&w.to_be_bytes());
    }

    /// Remembers that the next word written may be replaced by `word`.
    fn spot(&mut self, kind: MutationKind, word: u32) {
        self.spots.push((kind, self.out.len(), word));
    }

    fn bytes_padded(&mut self, data: &[u8]) {
        self.out.extend_from_slice(data);
        let pad = (4 - data.len() % 4) % 4;
        self.out.extend(std::iter::repeat_n(0, pad));
    }

    /// A 32-bit word, often one of the edges.
    fn any32(&mut self) -> u32 {
        const EDGES: [u32; 6] = [0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0xffff_fffe];
        if self.rng.chance(1, 3) {
            EDGES[self.rng.below(EDGES.len() as u64) as usize]
        } else {
            self.rng.next_u64() as u32
        }
    }

    fn any64(&mut self) -> u64 {
        const EDGES: [u64; 6] = [
            0,
            1,
            0x7fff_ffff_ffff_ffff,
            0x8000_0000_0000_0000,
            u64::MAX,
            0xffff_ffff,
        ];
        if self.rng.chance(1, 3) {
            EDGES[self.rng.below(EDGES.len() as u64) as usize]
        } else {
            self.rng.next_u64()
        }
    }

    fn minimal(&self) -> bool {
        self.minimal || self.descents > MAX_DESCENTS || self.out.len() > MAX_BYTES
    }

    /// A length from 0 to `max` (bounded by `cap`), sometimes exactly
    /// `max` when that is small enough to send.
    fn length(&mut self, max: u32, cap: u32, edge_up_to: u32) -> u32 {
        if self.minimal() {
            return 0;
        }
        if max <= edge_up_to && self.rng.chance(1, 6) {
            return max;
        }
        let top = max.min(cap);
        self.rng.below(u64::from(top) + 1) as u32
    }

    /// A length word, and its over-bound mutation when bounded.
    fn length_word(&mut self, len: u32, max: u32) {
        if max != u32::MAX {
            self.spot(MutationKind::OverBound, max + 1);
        }
        self.word(len);
    }

    fn string(&mut self, len: u32) -> Vec<u8> {
        // No NUL (rpcgen's C stops at one), valid UTF-8 (a Rust String),
        // multi-byte characters too.
        const ASCII: &[u8] =
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ./-_~!%";
        const WIDE: [&str; 4] = ["\u{e9}", "\u{20ac}", "\u{1f600}", "\u{7f}"];
        let len = len as usize;
        let mut s = Vec::with_capacity(len);
        while s.len() < len {
            let room = len - s.len();
            if room >= 2 && self.rng.chance(1, 8) {
                let w = WIDE[self.rng.below(WIDE.len() as u64) as usize];
                if w.len() <= room {
                    s.extend_from_slice(w.as_bytes());
                    continue;
                }
            }
            s.push(ASCII[self.rng.below(ASCII.len() as u64) as usize]);
        }
        s
    }

    fn descend(&mut self, f: impl FnOnce(&mut Self)) {
        self.descents += 1;
        f(self);
        self.descents -= 1;
    }

    fn value(&mut self, ty: &Ty) {
        match ty {
            Ty::I32 | Ty::U32 => {
                let w = self.any32();
                self.word(w);
            }
            Ty::I64 | Ty::U64 => {
                let w = self.any64();
                self.out.extend_from_slice(&w.to_be_bytes());
            }
            Ty::F32 => {
                let w = self.rng.next_u64() as u32;
                self.word(w);
            }
            Ty::F64 => {
                let w = self.rng.next_u64();
                self.out.extend_from_slice(&w.to_be_bytes());
            }
            Ty::Bool => {
                let b = !self.minimal() && self.rng.chance(1, 2);
                self.boolean(b);
            }
            Ty::OpaqueFixed(n) => {
                let data: Vec<u8> = (0..*n).map(|_| self.rng.next_u64() as u8).collect();
                self.bytes_padded(&data);
            }
            Ty::OpaqueVar(max) => {
                let len = self.length(*max, 48, 600);
                self.length_word(len, *max);
                let data: Vec<u8> = (0..len).map(|_| self.rng.next_u64() as u8).collect();
                self.bytes_padded(&data);
            }
            Ty::Str(max) => {
                let len = self.length(*max, 40, 600);
                self.length_word(len, *max);
                let s = self.string(len);
                self.bytes_padded(&s);
            }
            Ty::Array(t, n) => {
                for _ in 0..*n {
                    self.value(t);
                }
            }
            Ty::VarArray(t, max) => {
                let each = self.m.min_size(t).max(1);
                let cap = if self.descents < 2 { 5 } else { 2 };
                let cap = cap.min((MAX_ITEM / each) as u32);
                let len = self.length(*max, cap, 8.min(cap));
                self.length_word(len, *max);
                self.descend(|w| {
                    for _ in 0..len {
                        w.value(t);
                    }
                });
            }
            Ty::Optional(t) => {
                let present =
                    !self.minimal() && self.m.min_size(t) <= MAX_ITEM && self.rng.chance(3, 5);
                self.boolean(present);
                if present {
                    self.descend(|w| w.value(t));
                }
            }
            Ty::Named(id) => match &self.m.types[*id].kind {
                Kind::Enum(_) => {
                    let v = self.enum_value(*id);
                    if let Some(bad) = self.not_an_item(*id) {
                        self.spot(MutationKind::UndeclaredEnum, bad as u32);
                    }
                    self.word(v as u32);
                }
                Kind::Struct(fs) => {
                    for f in fs {
                        self.value(&f.ty);
                    }
                }
                Kind::Alias(f) => self.value(&f.ty),
                Kind::Union(u) => self.union(u),
            },
        }
    }

    fn boolean(&mut self, b: bool) {
        if b {
            self.spot(MutationKind::Bool2, 2);
        }
        self.word(u32::from(b));
    }

    fn items(&self, id: TypeId) -> Vec<i32> {
        match &self.m.types[id].kind {
            Kind::Enum(items) => items
                .iter()
                .filter(|i| i.alias_of.is_none())
                .map(|i| i.value)
                .collect(),
            _ => Vec::new(),
        }
    }

    fn enum_value(&mut self, id: TypeId) -> i32 {
        let items = self.items(id);
        items[self.rng.below(items.len() as u64) as usize]
    }

    /// A value that is no item of the enum.
    fn not_an_item(&mut self, id: TypeId) -> Option<i32> {
        let items = self.items(id);
        self.outside(&items)
    }

    /// An int none of `used` is.
    fn outside(&mut self, used: &[i32]) -> Option<i32> {
        let max = used.iter().max().copied().unwrap_or(0);
        let min = used.iter().min().copied().unwrap_or(0);
        let mut candidates = vec![
            max.wrapping_add(1),
            min.wrapping_sub(1),
            i32::MAX,
            i32::MIN,
            self.rng.next_u64() as i32,
            self.rng.next_u64() as i32,
        ];
        candidates.retain(|c| !used.contains(c));
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.rng.below(candidates.len() as u64) as usize])
    }

    fn union(&mut self, u: &Union) {
        // The choices: (discriminant, arm), one per case value, and the
        // default arm with a discriminant no case lists.
        let listed: Vec<i64> = u
            .arms
            .iter()
            .flat_map(|a| a.cases.iter().map(|c| c.value))
            .collect();
        let mut choices: Vec<(i64, Option<&Field>)> = u
            .arms
            .iter()
            .flat_map(|a| a.cases.iter().map(move |c| (c.value, a.field.as_ref())))
            .collect();
        let as_i32: Vec<i32> = listed.iter().map(|&v| v as i32).collect();
        let unlisted: Option<i64> = match &u.discr {
            Ty::Bool => [0, 1].into_iter().find(|v| !listed.contains(v)),
            Ty::U32 => {
                let mut c = vec![
                    u32::MAX,
                    0,
                    self.rng.next_u64() as u32,
                    listed
                        .iter()
                        .max()
                        .map_or(0, |&m| (m as u32).wrapping_add(1)),
                ];
                c.retain(|v| !listed.contains(&i64::from(*v)));
                c.first().map(|&v| i64::from(v))
            }
            Ty::Named(id) => {
                let items = self.items(*id);
                let free: Vec<i32> = items
                    .into_iter()
                    .filter(|v| !listed.contains(&i64::from(*v)))
                    .collect();
                if free.is_empty() {
                    None
                } else {
                    Some(i64::from(free[self.rng.below(free.len() as u64) as usize]))
                }
            }
            _ => self.outside(&as_i32).map(i64::from),
        };
        if let (Some(d), Some(v)) = (&u.default, unlisted) {
            choices.push((v, d.as_ref()));
        }
        // Arms too large to send are never taken (the smallest one is
        // within the limit, or the type has no sample).
        let small: Vec<(i64, Option<&Field>)> = choices
            .iter()
            .copied()
            .filter(|(_, f)| f.is_none_or(|f| self.m.min_size(&f.ty) <= MAX_ITEM))
            .collect();
        if !small.is_empty() {
            choices = small;
        }
        let pick = if self.minimal() {
            (0..choices.len())
                .min_by_key(|&i| choices[i].1.map_or(0, |f| self.m.min_size(&f.ty)))
                .unwrap_or(0)
        } else {
            self.rng.below(choices.len() as u64) as usize
        };
        let (value, field) = choices[pick];
        // The discriminant's own mutations.
        if u.default.is_none() {
            // An enum discriminant: an item no case lists, else no item.
            let bad = match &u.discr {
                Ty::Named(id) => unlisted.or_else(|| self.not_an_item(*id).map(i64::from)),
                _ => unlisted,
            };
            if let Some(b) = bad {
                self.spot(MutationKind::UnlistedDiscriminant, b as u32);
            }
        }
        if matches!(u.discr, Ty::Bool) {
            self.boolean(value == 1);
        } else {
            self.word(value as u32);
        }
        if let Some(f) = field {
            self.value(&f.ty);
        }
    }
}
