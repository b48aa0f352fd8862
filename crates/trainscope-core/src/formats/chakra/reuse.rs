//! Reading a set of Chakra `.et` files whose ranks run the same program
//! once per program ([`ParseCache`]): the ranks of one pipeline stage of a
//! data- and tensor-parallel job write byte for byte the same nodes but
//! for a few rank-specific attribute values (a collective's `pg_name`, a
//! send's `comm_dst`, a receive's `comm_src`), so a set of 256 ranks holds
//! a handful of distinct programs.
//!
//! The first file of each program is parsed in full ([`super::parse`]) and
//! kept as a template (its bytes, its node frames, its parse) when its
//! parse has no diagnostic. A later file is read against the templates:
//! its `GlobalMetadata` and node framing must match one, and each of its
//! node messages must equal the template's byte for byte, or differ only
//! in the value of attributes named `pg_name`, `comm_dst` or `comm_src`
//! (same attribute order, names and value fields), compared by the
//! template's positions of those attributes (the bytes between them
//! compared whole). Such a file's parse is the template's with its own
//! name, rank, node offsets and those values (the first `pg_name` of a
//! kept collective, the first `comm_dst` of a kept send and the first
//! `comm_src` of a kept receive, as the parser reads them; a peer out of
//! range, which the parser warns about, makes the file a full parse),
//! sharing the template's nodes ([`super::TraceCopy`]) rather than
//! copying them. Anything else that differs, or a template's
//! diagnostics, makes a full parse: the result is always exactly
//! [`super::parse`]'s (tested file by file), only faster: comparing bytes
//! instead of decoding every node message and re-sorting every rank's
//! dependency graph.

use super::schema::{AttributeProto, Value};
use super::{frame, int_value, parse, rank_of_file_name, ChakraTrace, NodeWork, TraceCopy};
use prost::Message;
use std::sync::Arc;

/// Most templates kept (distinct programs of a set; a pipeline has one per
/// stage): a set with more distinct programs parses the rest in full.
pub const MAX_TEMPLATES: usize = 64;

/// Most bytes of template files kept at once (their bytes are compared
/// with later files'; the page's worker holds them too, so a set of
/// large distinct files is parsed in full rather than doubled in memory).
pub const MAX_TEMPLATE_BYTES: usize = 64 << 20;

/// One template: a file parsed in full without diagnostics.
struct Template {
    bytes: Vec<u8>,
    /// End of the `GlobalMetadata` frame.
    meta_end: usize,
    /// Node frames: (frame start, body start, body end).
    frames: Vec<(usize, usize, usize)>,
    /// For each node of `trace.nodes`, the index of its frame.
    frame_of: Vec<u32>,
    /// For each frame, the index of its kept node in `trace.nodes`
    /// (`u32::MAX`: not kept).
    node_of: Vec<u32>,
    /// For each frame, its attributes with a rank-specific name
    /// ([`rank_specific_fields`]).
    specials: Vec<Vec<(u32, u32, u8, bool)>>,
    /// The values of the rank-specific attributes, in file order (None
    /// when one is not a name, an optional doc string and one value).
    values: Option<Vec<ValueAt>>,
    /// Earlier copies of this template laid out otherwise (values of
    /// other lengths), each compared as the template's own layout is
    /// ([`ParseCache::same_layout_copy`]).
    layouts: Vec<Layout>,
    trace: Arc<ChakraTrace>,
    /// The template's node offsets (shared by the copies laid out as it).
    offsets: Arc<[u64]>,
}

/// A copy of a template whose rank-specific values have other lengths
/// than the template's (a `pg_name` of two digits for one of one): its
/// bytes and value positions, so that a later file laid out as it is
/// compares by value positions alone.
struct Layout {
    bytes: Vec<u8>,
    /// As [`Template::values`], in this file.
    values: Vec<ValueAt>,
    /// Each kept node's byte offset in this file (shared by its copies).
    offsets: Arc<[u64]>,
    /// For each value, the patch this file's value gives (a node's first
    /// value of a kept node whose value differs from the template's), for
    /// a later file with the same value bytes.
    patches: Vec<Option<(u32, Patch)>>,
}

/// Most layouts kept per template.
const MAX_LAYOUTS: usize = 16;

/// Where a template's rank-specific attribute holds its value.
struct ValueAt {
    /// The value's bytes in the file (a string's after its length).
    start: usize,
    end: usize,
    /// The value is a varint.
    varint: bool,
    /// The attribute's body in the file.
    attr: (usize, usize),
    /// Its frame, name ([`RANK_SPECIFIC`]) and whether it is its node's
    /// first of that name.
    frame: u32,
    which: u8,
    first: bool,
}

/// The one value field of attribute body `a` (number, wire type, value
/// start, end), when its fields are a name, an optional doc string and at
/// most one value (`Some(None)`: no value); None for any other layout.
fn single_value(a: &[u8]) -> Option<Option<(u64, u64, usize, usize)>> {
    let mut value = None;
    let mut pos = 0;
    while pos < a.len() {
        let (number, wire, vpos, end) = field(a, pos)?;
        match (number, wire) {
            (1 | 2, 2) => {}
            (_, 0 | 1 | 2 | 5) if value.is_none() => value = Some((number, wire, vpos, end)),
            _ => return None,
        }
        pos = end;
    }
    Some(value)
}

/// The value of attribute body `a` (at `base` in the file): (start, end,
/// varint), when its fields are a name, an optional doc string and one
/// value.
fn value_at(a: &[u8], base: usize) -> Option<(usize, usize, bool)> {
    let (_, wire, vpos, end) = single_value(a)??;
    if wire == 2 {
        let (_, start) = varint_at(a, vpos)?;
        Some((base + start, base + end, false))
    } else {
        Some((base + vpos, base + end, wire == 0))
    }
}

/// A rank-specific value read from a copy's node.
#[derive(Clone)]
enum Patch {
    /// The node's collective `pg_name` (None: not a string).
    PgName(Option<Arc<str>>),
    /// The peer of a kept send or receive.
    Peer(u32),
}

/// Parses the files of a set, reusing the parse of a file whose program
/// another file already gave (see the module documentation).
#[derive(Default)]
pub struct ParseCache {
    templates: Vec<Template>,
    template_bytes: usize,
    /// Files read as copies of a template (for the benchmark's figures).
    pub copies: u64,
    /// Of `copies`, those compared by value positions alone (laid out as
    /// their template or an earlier copy of it is).
    pub by_layout: u64,
    /// Files parsed in full.
    pub full: u64,
}

/// Node frames of `bytes` after the metadata frame ending at `meta_end`,
/// or None when one is cut.
fn frames_of(bytes: &[u8], meta_end: usize, out: &mut Vec<(usize, usize, usize)>) -> Option<()> {
    out.clear();
    let mut pos = meta_end;
    while pos < bytes.len() {
        let (end, start) = frame(bytes, pos).ok()?;
        out.push((pos, start, end));
        pos = end;
    }
    Some(())
}

/// A varint at `pos` of `b`: (value, next position).
fn varint_at(b: &[u8], pos: usize) -> Option<(u64, usize)> {
    super::varint(b, pos).map(|(v, used)| (v, pos + used))
}

/// The field at `pos` of a message body: (field number, wire type, value
/// start, field end), or None when malformed or a group.
fn field(b: &[u8], pos: usize) -> Option<(u64, u64, usize, usize)> {
    let (key, vpos) = varint_at(b, pos)?;
    let (number, wire) = (key >> 3, key & 7);
    let end = match wire {
        0 => varint_at(b, vpos)?.1,
        1 => vpos.checked_add(8)?,
        2 => {
            let (len, start) = varint_at(b, vpos)?;
            start.checked_add(usize::try_from(len).ok()?)?
        }
        5 => vpos.checked_add(4)?,
        _ => return None,
    };
    (end <= b.len()).then_some((number, wire, vpos, end))
}

/// The body of a length-delimited field whose value starts at `vpos`.
fn body(b: &[u8], vpos: usize, end: usize) -> Option<&[u8]> {
    let (_, start) = varint_at(b, vpos)?;
    b.get(start..end)
}

/// An attribute's name (field 1), when it has one.
fn attr_name(a: &[u8]) -> Option<&[u8]> {
    let mut pos = 0;
    while pos < a.len() {
        let (number, wire, vpos, end) = field(a, pos)?;
        if number == 1 && wire == 2 {
            return body(a, vpos, end);
        }
        pos = end;
    }
    None
}

/// Whether two attribute bodies differ only in the value of a
/// rank-specific attribute (same fields, same name, same value field).
fn same_but_value(a: &[u8], b: &[u8]) -> bool {
    let (mut pa, mut pb) = (0, 0);
    while pa < a.len() && pb < b.len() {
        let (Some((na, wa, _, ea)), Some((nb, wb, _, eb))) = (field(a, pa), field(b, pb)) else {
            return false;
        };
        if na != nb || wa != wb {
            return false;
        }
        // Field 1 is the name, field 2 the doc string: equal bytes; the
        // value fields may differ.
        if (na == 1 || na == 2) && a[pa..ea] != b[pb..eb] {
            return false;
        }
        pa = ea;
        pb = eb;
    }
    pa == a.len() && pb == b.len()
}

const RANK_SPECIFIC: [&[u8]; 3] = [b"pg_name", b"comm_dst", b"comm_src"];

/// A template node's attribute fields with a rank-specific name: (field
/// start, field end, which name ([`RANK_SPECIFIC`]), the node's first of
/// that name), positions in the node body; None when the body does not
/// walk as fields.
fn rank_specific_fields(b: &[u8]) -> Option<Vec<(u32, u32, u8, bool)>> {
    let mut out = Vec::new();
    let mut seen = [false; 3];
    let mut pos = 0;
    while pos < b.len() {
        let (number, wire, vpos, end) = field(b, pos)?;
        if number == 10 && wire == 2 {
            let which = body(b, vpos, end)
                .and_then(attr_name)
                .and_then(|n| RANK_SPECIFIC.iter().position(|r| *r == n));
            if let Some(w) = which {
                let first = !std::mem::replace(&mut seen[w], true);
                out.push((pos as u32, end as u32, w as u8, first));
            }
        }
        pos = end;
    }
    Some(out)
}

/// The rank-specific value of a copy's attribute `aa` (name `which`) that
/// applies to the template's kept node `kept`, pushed to `patches` as
/// (node index, patch); false when the attribute does not decode or a peer
/// is out of range (then the file is parsed in full).
/// `memo`: attributes of the file decoded so far (a file's collectives
/// repeat a few `pg_name`s), the latest [`MEMO_ENTRIES`].
fn patch_of<'a>(
    aa: &'a [u8],
    which: u8,
    kept: Option<(u32, &super::ChakraNode)>,
    patches: &mut Vec<(u32, Patch)>,
    memo: &mut Memo<'a>,
) -> bool {
    let attr = match memo.iter().find(|(b, _)| *b == aa) {
        Some((_, v)) => v.clone(),
        None => {
            let v = match simple_value(aa) {
                Some(v) => v,
                None => {
                    let Ok(attr) = AttributeProto::decode(aa) else {
                        return false;
                    };
                    match attr.value {
                        Some(Value::StringVal(s)) => Simple::Str(Arc::from(s)),
                        _ => Simple::Int(int_value(&attr)),
                    }
                }
            };
            if memo.len() == MEMO_ENTRIES {
                memo.remove(0);
            }
            memo.push((aa, v.clone()));
            v
        }
    };
    if let Some((i, node)) = kept {
        match (which, node.work) {
            (0, NodeWork::Collective(_)) => {
                let v = match attr {
                    Simple::Str(s) => Some(s),
                    Simple::Int(_) => None,
                };
                patches.push((i, Patch::PgName(v)));
            }
            (1, NodeWork::Send { .. }) | (2, NodeWork::Recv { .. }) => {
                // As the parser reads a peer: an integer in 0..=u32::MAX
                // (else it warns).
                let v = match attr {
                    Simple::Int(v) => v,
                    Simple::Str(_) => Err("a string"),
                };
                match v {
                    Ok(v) if (0..=i128::from(u32::MAX)).contains(&v) => {
                        patches.push((i, Patch::Peer(v as u32)));
                    }
                    _ => return false,
                }
            }
            _ => {}
        }
    }
    true
}

/// Attributes' bytes decoded, with their values ([`patch_of`]).
type Memo<'a> = Vec<(&'a [u8], Simple)>;

/// Most attributes a [`Memo`] holds.
const MEMO_ENTRIES: usize = 8;

/// An attribute's value as a patch reads it: a string, or an integer
/// ([`int_value`]: `Err` for any other value).
#[derive(Clone)]
enum Simple {
    Str(Arc<str>),
    Int(Result<i128, &'static str>),
}

/// The value of an attribute `a` whose fields are its name, optionally
/// its doc string and one string or integer value (what writers write),
/// decoded as prost decodes it; None for any other attribute (decoded in
/// full).
fn simple_value(a: &[u8]) -> Option<Simple> {
    let Some((number, wire, vpos, end)) = single_value(a)? else {
        return Some(Simple::Int(Err("empty")));
    };
    Some(match (number, wire) {
        (29, 2) => Simple::Str(Arc::from(std::str::from_utf8(body(a, vpos, end)?).ok()?)),
        (7 | 9 | 11 | 13 | 15 | 17, 0) => {
            // prost refuses a 10-byte varint whose last byte exceeds
            // 1: such values are decoded in full.
            if end - vpos >= 10 {
                return None;
            }
            let (v, _) = varint_at(a, vpos)?;
            Simple::Int(Ok(match number {
                7 => i128::from(v as i32),
                9 => i128::from(v as i64),
                11 => i128::from(v as u32),
                13 => i128::from(v),
                15 => {
                    let u = v as u32;
                    i128::from(((u >> 1) as i32) ^ -((u & 1) as i32))
                }
                _ => i128::from(((v >> 1) as i64) ^ -((v & 1) as i64)),
            }))
        }
        (19 | 23, 5) => {
            let b: [u8; 4] = a.get(vpos..end)?.try_into().ok()?;
            Simple::Int(Ok(if number == 19 {
                i128::from(u32::from_le_bytes(b))
            } else {
                i128::from(i32::from_le_bytes(b))
            }))
        }
        (21 | 25, 1) => {
            let b: [u8; 8] = a.get(vpos..end)?.try_into().ok()?;
            Simple::Int(Ok(if number == 21 {
                i128::from(u64::from_le_bytes(b))
            } else {
                i128::from(i64::from_le_bytes(b))
            }))
        }
        _ => return None,
    })
}

/// Compare a copy's node body `a` with the template's `b`, whose
/// attributes with a rank-specific name are `specials`
/// ([`rank_specific_fields`]; see the module documentation): the bytes
/// between them are equal, each of them is the same attribute but for its
/// value. The rank-specific values that apply to the template's kept node
/// `kept` are pushed to `patches` as (node index, patch) (a node's first
/// of each name). False when the copy is no copy.
fn compare_node<'a>(
    a: &'a [u8],
    b: &[u8],
    specials: &[(u32, u32, u8, bool)],
    kept: Option<(u32, &super::ChakraNode)>,
    patches: &mut Vec<(u32, Patch)>,
    memo: &mut Memo<'a>,
) -> bool {
    let (mut pa, mut pb) = (0usize, 0usize);
    for &(start, end, which, first) in specials {
        let (start, end) = (start as usize, end as usize);
        let fixed = start - pb;
        if a.get(pa..pa + fixed) != Some(&b[pb..start]) {
            return false;
        }
        pa += fixed;
        let (Some((na, wa, va, ea)), Some((_, _, vb, _))) = (field(a, pa), field(b, start)) else {
            return false;
        };
        if na != 10 || wa != 2 {
            return false;
        }
        if a[pa..ea] != b[start..end] {
            let (Some(aa), Some(ab)) = (body(a, va, ea), body(b, vb, end)) else {
                return false;
            };
            if !same_but_value(aa, ab) || (first && !patch_of(aa, which, kept, patches, memo)) {
                return false;
            }
        }
        pa = ea;
        pb = end;
    }
    a[pa..] == b[pb..]
}

impl ParseCache {
    /// Exactly [`parse`]`(file, bytes)` (see the module documentation).
    pub fn parse(&mut self, file: &str, bytes: &[u8]) -> ChakraTrace {
        let mut frames = Vec::new();
        let meta_end = frame(bytes, 0).ok().map(|(end, _)| end);
        if meta_end.is_some() {
            for k in (0..self.templates.len()).rev() {
                if let Some(t) = self.same_layout_copy(k, file, bytes) {
                    self.copies += 1;
                    self.by_layout += 1;
                    let last = self.templates.len() - 1;
                    self.templates.swap(k, last);
                    return t;
                }
            }
        }
        if let Some(meta_end) = meta_end {
            if frames_of(bytes, meta_end, &mut frames).is_some() {
                for k in (0..self.templates.len()).rev() {
                    if let Some(t) = self.copy_of(k, file, bytes, meta_end, &frames) {
                        self.copies += 1;
                        self.add_layout(k, bytes, &frames);
                        // The template last matched is tried first next.
                        let last = self.templates.len() - 1;
                        self.templates.swap(k, last);
                        return t;
                    }
                }
            }
        }
        self.full += 1;
        let trace = parse(file, bytes);
        if let Some(meta_end) = meta_end {
            if trace.diagnostics.is_empty()
                && self.templates.len() < MAX_TEMPLATES
                && self.template_bytes + bytes.len() <= MAX_TEMPLATE_BYTES
                && !frames.is_empty()
                && frames.len() as u64 == trace.nodes_read
            {
                self.add_template(bytes, meta_end, frames, &trace);
            }
        }
        trace
    }

    fn add_template(
        &mut self,
        bytes: &[u8],
        meta_end: usize,
        frames: Vec<(usize, usize, usize)>,
        trace: &ChakraTrace,
    ) {
        let mut node_of = vec![u32::MAX; frames.len()];
        let mut frame_of = Vec::with_capacity(trace.nodes.len());
        for (i, n) in trace.nodes.iter().enumerate() {
            let Ok(f) = frames.binary_search_by_key(&(n.offset as usize), |f| f.0) else {
                return;
            };
            frame_of.push(f as u32);
            node_of[f] = i as u32;
        }
        let mut specials = Vec::with_capacity(frames.len());
        for &(_, start, end) in &frames {
            let Some(f) = rank_specific_fields(&bytes[start..end]) else {
                return;
            };
            specials.push(f);
        }
        let values = values_of(bytes, &frames, &specials);
        self.template_bytes += bytes.len();
        self.templates.push(Template {
            bytes: bytes.to_vec(),
            meta_end,
            frames,
            frame_of,
            node_of,
            specials,
            values,
            layouts: Vec::new(),
            trace: Arc::new(trace.clone()),
            offsets: trace.nodes.iter().map(|n| n.offset).collect(),
        });
    }

    /// Keep `bytes`, just read as a copy of template `k` through its node
    /// frames `frames`, as a layout of that template when its values sit
    /// elsewhere than the template's (see [`Layout`]); nothing when they
    /// do not walk as the template's or the limits are reached.
    fn add_layout(&mut self, k: usize, bytes: &[u8], frames: &[(usize, usize, usize)]) {
        let t = &self.templates[k];
        let Some(tv) = t.values.as_ref() else {
            return;
        };
        if t.layouts.len() >= MAX_LAYOUTS
            || self.template_bytes + bytes.len() > MAX_TEMPLATE_BYTES
            || bytes.len() == t.bytes.len()
            || t.layouts.iter().any(|l| l.bytes.len() == bytes.len())
        {
            return;
        }
        let mut specials = Vec::with_capacity(frames.len());
        for &(_, start, end) in frames {
            let Some(f) = rank_specific_fields(&bytes[start..end]) else {
                return;
            };
            specials.push(f);
        }
        let Some(values) = values_of(bytes, frames, &specials) else {
            return;
        };
        if values.len() != tv.len()
            || values
                .iter()
                .zip(tv)
                .any(|(a, b)| (a.frame, a.which, a.first) != (b.frame, b.which, b.first))
        {
            return;
        }
        let mut patches = Vec::with_capacity(values.len());
        let mut memo = Memo::new();
        for v in &values {
            let kept = t.node_of[v.frame as usize];
            if !v.first || kept == u32::MAX {
                patches.push(None);
                continue;
            }
            let node = &t.trace.nodes[kept as usize];
            let mut one = Vec::new();
            if !patch_of(
                &bytes[v.attr.0..v.attr.1],
                v.which,
                Some((kept, node)),
                &mut one,
                &mut memo,
            ) {
                return;
            }
            patches.push(one.pop().filter(|(_, p)| differs(node, p)));
        }
        let offsets = t
            .frame_of
            .iter()
            .map(|&f| frames[f as usize].0 as u64)
            .collect();
        self.template_bytes += bytes.len();
        self.templates[k].layouts.push(Layout {
            bytes: bytes.to_vec(),
            values,
            offsets,
            patches,
        });
    }

    /// The parse of `file` as a copy of template `k`, when it is one.
    fn copy_of(
        &self,
        k: usize,
        file: &str,
        bytes: &[u8],
        meta_end: usize,
        frames: &[(usize, usize, usize)],
    ) -> Option<ChakraTrace> {
        let t = &self.templates[k];
        if t.frames.len() != frames.len() || bytes[..meta_end] != t.bytes[..t.meta_end] {
            return None;
        }
        let mut patches: Vec<(u32, Patch)> = Vec::new();
        let mut memo = Memo::new();
        for (f, (&(_, sa, ea), &(_, sb, eb))) in frames.iter().zip(&t.frames).enumerate() {
            let (a, b) = (&bytes[sa..ea], &t.bytes[sb..eb]);
            if a == b {
                continue;
            }
            let kept = t.node_of[f];
            let kept = (kept != u32::MAX).then(|| (kept, &t.trace.nodes[kept as usize]));
            if !compare_node(a, b, &t.specials[f], kept, &mut patches, &mut memo) {
                return None;
            }
        }
        let offsets: Arc<[u64]> = t
            .frame_of
            .iter()
            .map(|&f| frames[f as usize].0 as u64)
            .collect();
        Some(finish_copy(t, file, offsets, patches))
    }

    /// The parse of `file` as a copy of template `k` laid out byte for
    /// byte as it is (the same length, every byte equal but the values of
    /// its rank-specific attributes, each a well-formed value of the
    /// template's field): compared by the template's value positions
    /// alone, without framing the file. None when it is not such a copy
    /// (the file may still be a copy: see [`ParseCache::copy_of`]).
    fn same_layout_copy(&self, k: usize, file: &str, bytes: &[u8]) -> Option<ChakraTrace> {
        let t = &self.templates[k];
        let values = t.values.as_ref()?;
        if bytes.len() == t.bytes.len() {
            if let Some(patches) = compare_values(t, bytes, &t.bytes, values, None) {
                return Some(finish_copy(t, file, Arc::clone(&t.offsets), patches));
            }
        }
        for l in t.layouts.iter().filter(|l| l.bytes.len() == bytes.len()) {
            if let Some(patches) = compare_values(t, bytes, &l.bytes, &l.values, Some(&l.patches)) {
                return Some(finish_copy(t, file, Arc::clone(&l.offsets), patches));
            }
        }
        None
    }
}

/// The patches of `bytes` read as laid out as `base` (template `t`'s
/// bytes, or a layout's with its `base_patches`), whose rank-specific
/// values sit at `values`: every byte but the values equal, each value a
/// well-formed value of the same extent; a value equal to the base's gives
/// the base's patch (none for the template's own). None when `bytes` is
/// not laid out so.
fn compare_values(
    t: &Template,
    bytes: &[u8],
    base: &[u8],
    values: &[ValueAt],
    base_patches: Option<&[Option<(u32, Patch)>]>,
) -> Option<Vec<(u32, Patch)>> {
    let mut patches: Vec<(u32, Patch)> = Vec::new();
    let mut memo = Memo::new();
    let mut pos = 0;
    for (q, v) in values.iter().enumerate() {
        if bytes[pos..v.start] != base[pos..v.start] {
            return None;
        }
        let a = &bytes[v.start..v.end];
        if a != &base[v.start..v.end] {
            // A varint must end where the base's does.
            let (last, rest) = a.split_last()?;
            if v.varint && (*last >= 0x80 || rest.iter().any(|b| *b < 0x80)) {
                return None;
            }
            if v.first {
                let kept = t.node_of[v.frame as usize];
                let kept = (kept != u32::MAX).then(|| (kept, &t.trace.nodes[kept as usize]));
                if !patch_of(
                    &bytes[v.attr.0..v.attr.1],
                    v.which,
                    kept,
                    &mut patches,
                    &mut memo,
                ) {
                    return None;
                }
            }
        } else if let Some(Some(p)) = base_patches.and_then(|b| b.get(q)) {
            patches.push(p.clone());
        }
        pos = v.end;
    }
    if bytes[pos..] != base[pos..] {
        return None;
    }
    Some(patches)
}

/// The positions of the rank-specific values of `bytes`, whose node frames
/// are `frames` and their rank-specific attributes `specials` ([`ValueAt`];
/// None when one is not a name, an optional doc string and one value).
fn values_of(
    bytes: &[u8],
    frames: &[(usize, usize, usize)],
    specials: &[Vec<(u32, u32, u8, bool)>],
) -> Option<Vec<ValueAt>> {
    let mut values = Vec::new();
    for (f, (&(_, start, _), sp)) in frames.iter().zip(specials).enumerate() {
        for &(fs, fe, which, first) in sp {
            let (fs, fe) = (start + fs as usize, start + fe as usize);
            let (_, _, vpos, end) = field(bytes, fs)?;
            let (_, body_start) = varint_at(bytes, vpos)?;
            let (vs, ve, varint) = value_at(&bytes[body_start..end], body_start)?;
            values.push(ValueAt {
                start: vs,
                end: ve,
                varint,
                attr: (body_start, fe),
                frame: f as u32,
                which,
                first,
            });
        }
    }
    Some(values)
}

/// Whether patch `p` of node `n` changes it (what [`finish_copy`] keeps).
fn differs(n: &super::ChakraNode, p: &Patch) -> bool {
    match p {
        Patch::PgName(v) => v.as_deref() != n.pg_name.as_deref(),
        Patch::Peer(v) => matches!(
            n.work,
            NodeWork::Send { peer, .. } | NodeWork::Recv { peer, .. } if peer != *v
        ),
    }
}

/// A copy's parse: template `t`'s nodes with `file`'s node offsets and
/// rank-specific values (`patches`).
fn finish_copy(
    t: &Template,
    file: &str,
    offsets: Arc<[u64]>,
    patches: Vec<(u32, Patch)>,
) -> ChakraTrace {
    let (mut pg_names, mut peers) = (Vec::with_capacity(patches.len()), Vec::new());
    for (i, p) in patches {
        if !differs(&t.trace.nodes[i as usize], &p) {
            continue;
        }
        match p {
            Patch::PgName(v) => pg_names.push((i, v)),
            Patch::Peer(v) => peers.push((i, v)),
        }
    }
    // A node's first rank-specific value only, in node order.
    pg_names.sort_by_key(|p| p.0);
    peers.sort_by_key(|p| p.0);
    let p2p_peers = if peers.is_empty() {
        t.trace.p2p_peers.clone()
    } else {
        let mut k = 0;
        let set: std::collections::BTreeSet<u32> = t
            .trace
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match n.work {
                NodeWork::Send { peer, .. } | NodeWork::Recv { peer, .. } => {
                    while k < peers.len() && (peers[k].0 as usize) < i {
                        k += 1;
                    }
                    Some(match peers.get(k) {
                        Some(&(j, v)) if j as usize == i => v,
                        _ => peer,
                    })
                }
                _ => None,
            })
            .collect();
        set.into_iter().collect()
    };
    ChakraTrace {
        file: file.to_string(),
        rank: rank_of_file_name(file),
        version: t.trace.version.clone(),
        nodes: Vec::new(),
        copy: Some(TraceCopy {
            template: Arc::clone(&t.trace),
            offsets,
            pg_names,
            peers,
        }),
        nodes_read: t.trace.nodes_read,
        nodes_skipped: t.trace.nodes_skipped,
        p2p_peers,
        diagnostics: t.trace.diagnostics.clone(),
    }
}
