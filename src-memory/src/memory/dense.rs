//! The memory vectors: one unit vector per memory, kept in RAM, persisted in
//! `vectors.bin` beside the database so a restart never re-embeds.
//!
//! Search ends exact: every vector also has 1-bit sign codes (48 bytes at
//! 384 wide, 4.8 MB at 100k: they stay in cache). A Hamming pass over all
//! codes keeps `8 × c` rows, a 4-bit-query estimate of their cosine
//! (`q·sign(x) / ‖x‖₁`, RaBitQ-style) keeps `c = max(48n, 2048)`, and those
//! are reranked with exact f32 cosines (SIMD via pulp), so every returned
//! score is the exact cosine. Below [`PREFILTER_MIN`] vectors every cosine
//! is exact. The pre-filter is approximate: recall of the exact top 40 is
//! measured by `benches/memory.rs`.
//!
//! File format: `RBVEC1\n`, the model fingerprint (u32 length + UTF-8), the
//! width (u32), then records of `id: u64` + `width × f32`, little-endian.
//! Adds append; removals rewrite the file (via `.part` and a rename). A
//! file that does not parse, or was written by another model, is reported
//! as such and the caller rebuilds it from SQLite.

#![allow(
    clippy::inline_always,
    reason = "pulp's target-feature dispatch only reaches code inlined into it"
)]

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use pulp::{Arch, Simd, WithSimd};
use robobrain_encoder::kernels;

use super::MemoryError;

const MAGIC: &[u8] = b"RBVEC1\n";

/// Vectors from which the sign-code pre-filter is used (below, every cosine is exact).
pub const PREFILTER_MIN: usize = 4096;

/// Candidates the pre-filter hands to the exact rerank for a top `n`:
/// `max(CANDIDATES_PER_HIT × n, MIN_CANDIDATES)`.
pub const CANDIDATES_PER_HIT: usize = 48;

/// The fewest candidates the pre-filter hands to the exact rerank.
pub const MIN_CANDIDATES: usize = 2048;

/// Vectors by memory id.
#[derive(Debug, Clone)]
pub struct DenseIndex {
    dim: usize,
    fingerprint: String,
    ids: Vec<u64>,
    /// `ids.len() × dim`, row by row.
    data: Vec<f32>,
    /// The same rows as sign bits (bit `i` set when component `i` ≥ 0),
    /// `words` u64 per row, padding bits clear.
    signs: Vec<u64>,
    /// u64 words per row of `signs`: `dim / 64` rounded up.
    words: usize,
    /// Per row: 1 / its L1 norm (scales the pre-filter's estimate).
    inv_l1: Vec<f32>,
    row: HashMap<u64, usize>,
}

/// Dot product (runtime-dispatched SIMD: AVX2+FMA where the CPU has it).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    kernels::dot(Arch::new(), a, b)
}

/// The sign bits of `v` (bit `i` of word `i / 64` set when `v[i]` ≥ 0), into `out`.
fn signs_into(v: &[f32], out: &mut [u64]) {
    out.fill(0);
    for (i, x) in v.iter().enumerate() {
        if *x >= 0.0 {
            out[i / 64] |= 1 << (i % 64);
        }
    }
}

/// Rows the Hamming cut keeps per candidate the estimate cut then keeps.
const WIDEN: usize = 8;

/// The indexes of the `c` smallest `keys` (`hist[k]` = how many equal `k`),
/// ascending: everything under the smallest key whose count reaches `c`,
/// then rows at that key in order until `c` are in.
fn cut(keys: &[u16], hist: &[u32], c: usize) -> Vec<usize> {
    let (mut at, mut below) = (0usize, 0usize);
    for (k, &n) in hist.iter().enumerate() {
        if below + n as usize >= c {
            at = k;
            break;
        }
        below += n as usize;
    }
    let mut left = c.saturating_sub(below);
    let mut out = Vec::with_capacity(c);
    for (i, &k) in keys.iter().enumerate() {
        let k = usize::from(k);
        if k < at {
            out.push(i);
        } else if k == at && left > 0 {
            out.push(i);
            left -= 1;
        }
    }
    out
}

/// Hamming distances between `query` and every row of `signs` (`query.len()`
/// words each), with their histogram (`hist[d]` = rows at distance `d`).
struct Hamming<'a> {
    query: &'a [u64],
    signs: &'a [u64],
    out: &'a mut [u16],
    hist: &'a mut [u32],
}

impl WithSimd for Hamming<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let w = self.query.len();
        for (row, d) in self.signs.chunks_exact(w).zip(self.out.iter_mut()) {
            let mut bits = 0u32;
            for (x, q) in row.iter().zip(self.query) {
                bits += (x ^ q).count_ones();
            }
            *d = bits as u16;
            self.hist[bits as usize] += 1;
        }
    }
}

/// Levels of the query's quantisation in the pre-filter (4 bits).
const QUERY_BITS: usize = 4;

/// Buckets of the pre-filter's estimate (its resolution: 2 / `KEYS` in cosine).
const KEYS: usize = 4096;

/// The query as the pre-filter sees it: 4-bit levels `u` with
/// `q[i] ≈ lo + step × u[i]`, stored as bit planes (plane `j` holds bit `j`
/// of every level) so that `Σ u[i]·b[i]` over a row's sign bits `b` is
/// `Σ_j 2^j · popcount(plane_j & b)`.
#[derive(Debug)]
struct QueryPlanes {
    planes: [Vec<u64>; QUERY_BITS],
    lo: f32,
    step: f32,
    /// `Σ u[i]`.
    sum: f32,
    dim: f32,
}

impl QueryPlanes {
    fn new(q: &[f32], words: usize) -> Self {
        let lo = q.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = q.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let levels = ((1 << QUERY_BITS) - 1) as f32;
        let step = if hi > lo { (hi - lo) / levels } else { 1.0 };
        let mut planes: [Vec<u64>; QUERY_BITS] = std::array::from_fn(|_| vec![0u64; words]);
        let mut sum = 0u32;
        for (i, x) in q.iter().enumerate() {
            let u = ((x - lo) / step).round().clamp(0.0, levels) as u32;
            sum += u;
            for (j, plane) in planes.iter_mut().enumerate() {
                if u >> j & 1 == 1 {
                    plane[i / 64] |= 1 << (i % 64);
                }
            }
        }
        Self {
            planes,
            lo,
            step,
            sum: sum as f32,
            dim: q.len() as f32,
        }
    }

    /// The bucket of the estimated cosine with a row (sign bits `bits`,
    /// `inv_l1` = 1 / its L1 norm): 0 for ≈ 1, `KEYS - 1` for ≈ -1.
    ///
    /// `x ≈ ‖x‖₁ / D · sign(x)` up to a direction error, so
    /// `q·x ≈ (q·sign(x)) / ‖x‖₁ · ‖x‖₂²` and for unit `x`, `q·sign(x) / ‖x‖₁`
    /// (RaBitQ's estimator with the query in 4 bits).
    #[inline(always)]
    fn key(&self, bits: &[u64], inv_l1: f32) -> u16 {
        let mut ones = 0u32;
        let mut dot = 0u32;
        for (w, b) in bits.iter().enumerate() {
            ones += b.count_ones();
            for (j, plane) in self.planes.iter().enumerate() {
                dot += (plane[w] & b).count_ones() << j;
            }
        }
        // q·sign(x) = Σ q[i]·(2b[i] − 1), with q[i] = lo + step·u[i].
        let qs =
            self.lo * (2.0 * ones as f32 - self.dim) + self.step * (2.0 * dot as f32 - self.sum);
        let est = qs * inv_l1;
        ((1.0 - est) * (KEYS / 2) as f32).clamp(0.0, (KEYS - 1) as f32) as u16
    }
}

/// The pre-filter's key of the rows `rows` of `signs` (`words` u64 each),
/// in order, and their histogram (`hist[k]` = rows with key `k`).
struct Estimate<'a> {
    query: &'a QueryPlanes,
    signs: &'a [u64],
    inv_l1: &'a [f32],
    words: usize,
    rows: &'a [usize],
    out: &'a mut [u16],
    hist: &'a mut [u32],
}

impl WithSimd for Estimate<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let w = self.words;
        for (&r, k) in self.rows.iter().zip(self.out.iter_mut()) {
            *k = self
                .query
                .key(&self.signs[r * w..(r + 1) * w], self.inv_l1[r]);
            self.hist[usize::from(*k)] += 1;
        }
    }
}

/// Exact cosines of `query` with the rows `rows` of `data` (`query.len()` wide).
struct Rerank<'a> {
    query: &'a [f32],
    data: &'a [f32],
    rows: &'a [usize],
}

impl WithSimd for Rerank<'_> {
    type Output = Vec<(usize, f32)>;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> Self::Output {
        // A plain loop, not an iterator chain: a closure would be compiled
        // outside the target features and lose the SIMD dot.
        let d = self.query.len();
        let mut out = Vec::with_capacity(self.rows.len());
        for &r in self.rows {
            out.push((
                r,
                kernels::dot_with(simd, self.query, &self.data[r * d..(r + 1) * d]),
            ));
        }
        out
    }
}

impl DenseIndex {
    /// An empty index for vectors of `dim` from the model `fingerprint`.
    pub fn new(dim: usize, fingerprint: &str) -> Self {
        Self {
            dim,
            fingerprint: fingerprint.to_string(),
            ids: Vec::new(),
            data: Vec::new(),
            signs: Vec::new(),
            words: dim.div_ceil(64),
            inv_l1: Vec::new(),
            row: HashMap::new(),
        }
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether `id` has a vector.
    pub fn contains(&self, id: u64) -> bool {
        self.row.contains_key(&id)
    }

    /// The ids held.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The vector of `id`.
    pub fn vector(&self, id: u64) -> Option<&[f32]> {
        self.row
            .get(&id)
            .map(|&r| &self.data[r * self.dim..(r + 1) * self.dim])
    }

    /// Adds (or replaces) the vector of `id`.
    pub fn insert(&mut self, id: u64, v: &[f32]) {
        if v.len() != self.dim {
            return;
        }
        let (d, w) = (self.dim, self.words);
        let r = if let Some(&r) = self.row.get(&id) {
            self.data[r * d..(r + 1) * d].copy_from_slice(v);
            r
        } else {
            let r = self.ids.len();
            self.row.insert(id, r);
            self.ids.push(id);
            self.data.extend_from_slice(v);
            self.signs.resize((r + 1) * w, 0);
            self.inv_l1.push(0.0);
            r
        };
        signs_into(v, &mut self.signs[r * w..(r + 1) * w]);
        let l1: f32 = v.iter().map(|x| x.abs()).sum();
        self.inv_l1[r] = if l1 > 0.0 { l1.recip() } else { 0.0 };
    }

    /// Drops the vector of `id`; whether it was there.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(r) = self.row.remove(&id) else {
            return false;
        };
        let (d, w) = (self.dim, self.words);
        let last = self.ids.len() - 1;
        if r != last {
            let moved = self.ids[last];
            self.ids.swap(r, last);
            self.data.copy_within(last * d..(last + 1) * d, r * d);
            self.signs.copy_within(last * w..(last + 1) * w, r * w);
            self.inv_l1[r] = self.inv_l1[last];
            self.row.insert(moved, r);
        }
        self.ids.pop();
        self.data.truncate(last * d);
        self.signs.truncate(last * w);
        self.inv_l1.pop();
        true
    }

    /// The cosine of `query` (a unit vector) with `id`'s vector.
    pub fn score(&self, query: &[f32], id: u64) -> Option<f32> {
        self.vector(id).map(|v| dot(query, v))
    }

    /// The `n` nearest ids to `query` with their exact cosines, best first.
    ///
    /// From [`PREFILTER_MIN`] vectors, the sign codes pick
    /// `max(CANDIDATES_PER_HIT × n, MIN_CANDIDATES)` candidates first (see the module doc).
    pub fn search(&self, query: &[f32], n: usize) -> Vec<(u64, f32)> {
        self.search_among(query, n, (CANDIDATES_PER_HIT * n).max(MIN_CANDIDATES))
    }

    /// [`DenseIndex::search`] with every cosine computed: the ground truth
    /// the pre-filter is measured against.
    pub fn search_exact(&self, query: &[f32], n: usize) -> Vec<(u64, f32)> {
        self.search_among(query, n, usize::MAX)
    }

    /// [`DenseIndex::search`] with the pre-filter handing `candidates` rows to
    /// the exact rerank (all rows when `candidates` ≥ the vectors held, or
    /// below [`PREFILTER_MIN`]).
    pub fn search_among(&self, query: &[f32], n: usize, candidates: usize) -> Vec<(u64, f32)> {
        if n == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let rows: Vec<usize> = if self.ids.len() < PREFILTER_MIN || candidates >= self.ids.len() {
            (0..self.ids.len()).collect()
        } else {
            self.nearest_signs(query, candidates.max(n))
        };
        let scored = Arch::new().dispatch(Rerank {
            query,
            data: &self.data,
            rows: &rows,
        });
        let mut out: Vec<(u64, f32)> = best_of(scored.into_iter(), n)
            .into_iter()
            .map(|(r, s)| (self.ids[r], s))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    /// The `c` rows with the best pre-filter estimate, ascending, in two
    /// cuts: the Hamming distance of the sign codes (6 popcounts a row at
    /// 384 wide) keeps `WIDEN × c` rows, the 4-bit-query estimate of their
    /// cosine keeps `c`. Each cut is a histogram of small integer keys, no sort.
    fn nearest_signs(&self, query: &[f32], c: usize) -> Vec<usize> {
        let mut bits = vec![0u64; self.words];
        signs_into(query, &mut bits);
        let mut dist = vec![0u16; self.ids.len()];
        let mut hist = vec![0u32; 64 * self.words + 1];
        Arch::new().dispatch(Hamming {
            query: &bits,
            signs: &self.signs,
            out: &mut dist,
            hist: &mut hist,
        });
        let wide = cut(&dist, &hist, (WIDEN * c).min(self.ids.len()));
        let q = QueryPlanes::new(query, self.words);
        let mut keys = vec![0u16; wide.len()];
        let mut hist = vec![0u32; KEYS];
        Arch::new().dispatch(Estimate {
            query: &q,
            signs: &self.signs,
            inv_l1: &self.inv_l1,
            words: self.words,
            rows: &wide,
            out: &mut keys,
            hist: &mut hist,
        });
        cut(&keys, &hist, c).into_iter().map(|i| wide[i]).collect()
    }

    /// Writes the whole index to `path` (via `path.part`).
    pub fn save(&self, path: &Path) -> Result<(), MemoryError> {
        let part = path.with_extension("part");
        let io = |e: std::io::Error| MemoryError::Io {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&part).map_err(io)?);
            f.write_all(&self.header()).map_err(io)?;
            for (r, id) in self.ids.iter().enumerate() {
                f.write_all(&record(*id, &self.data[r * self.dim..(r + 1) * self.dim]))
                    .map_err(io)?;
            }
            f.into_inner()
                .map_err(|e| io(e.into_error()))?
                .sync_all()
                .map_err(io)?;
        }
        std::fs::rename(&part, path).map_err(io)
    }

    /// Appends the vectors of `ids` to the file at `path` (written by [`DenseIndex::save`]).
    pub fn append(&self, path: &Path, ids: &[u64]) -> Result<(), MemoryError> {
        if !path.exists() {
            return self.save(path);
        }
        let io = |e: std::io::Error| MemoryError::Io {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io)?;
        let mut buf = Vec::new();
        for id in ids {
            if let Some(v) = self.vector(*id) {
                buf.extend_from_slice(&record(*id, v));
            }
        }
        f.write_all(&buf).map_err(io)?;
        f.sync_data().map_err(io)
    }

    fn header(&self) -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        h.extend_from_slice(&(self.fingerprint.len() as u32).to_le_bytes());
        h.extend_from_slice(self.fingerprint.as_bytes());
        h.extend_from_slice(&(self.dim as u32).to_le_bytes());
        h
    }

    /// Reads `path`; `Err` says what is wrong with it (missing, damaged,
    /// written by another model) so the caller can rebuild.
    pub fn load(path: &Path, dim: usize, fingerprint: &str) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read it ({e})"))?;
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or("not a robobrain vector file")?;
        let (len, rest) = take_u32(rest).ok_or("truncated header")?;
        let (fp, rest) = rest
            .split_at_checked(len as usize)
            .ok_or("truncated header")?;
        let fp = std::str::from_utf8(fp).map_err(|_| "damaged header")?;
        if fp != fingerprint {
            return Err(format!("written by model {fp:?}, not {fingerprint:?}"));
        }
        let (d, mut rest) = take_u32(rest).ok_or("truncated header")?;
        if d as usize != dim {
            return Err(format!("vectors are {d} wide, expected {dim}"));
        }
        let size = 8 + 4 * dim;
        if rest.len() % size != 0 {
            return Err(format!(
                "truncated: {} bytes after the header is not a whole number of {size}-byte records",
                rest.len()
            ));
        }
        let mut index = Self::new(dim, fingerprint);
        let mut v = vec![0.0f32; dim];
        while let Some((rec, tail)) = rest.split_at_checked(size) {
            let (id, floats) = rec.split_at(8);
            let id = u64::from_le_bytes(id.try_into().map_err(|_| "damaged record")?);
            for (slot, b) in v.iter_mut().zip(floats.chunks_exact(4)) {
                *slot = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            if !v.iter().all(|x| x.is_finite()) {
                return Err(format!("record of memory {id} holds a non-number"));
            }
            index.insert(id, &v);
            rest = tail;
        }
        Ok(index)
    }
}

/// The best `n` (row, score) pairs, in no particular order (a bounded min-heap).
fn best_of(scores: impl Iterator<Item = (usize, f32)>, n: usize) -> Vec<(usize, f32)> {
    let mut best: std::collections::BinaryHeap<std::cmp::Reverse<(Ordered, usize)>> =
        std::collections::BinaryHeap::with_capacity(n + 1);
    for (r, s) in scores {
        if best.len() < n {
            best.push(std::cmp::Reverse((Ordered(s), r)));
        } else if best.peek().is_some_and(|w| s > w.0.0.0) {
            best.pop();
            best.push(std::cmp::Reverse((Ordered(s), r)));
        }
    }
    best.into_iter().map(|r| (r.0.1, r.0.0.0)).collect()
}

fn take_u32(b: &[u8]) -> Option<(u32, &[u8])> {
    let (n, rest) = b.split_at_checked(4)?;
    Some((u32::from_le_bytes(n.try_into().ok()?), rest))
}

fn record(id: u64, v: &[f32]) -> Vec<u8> {
    let mut r = Vec::with_capacity(8 + 4 * v.len());
    r.extend_from_slice(&id.to_le_bytes());
    for x in v {
        r.extend_from_slice(&x.to_le_bytes());
    }
    r
}

/// An `f32` ordered totally (for the heap).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ordered(f32);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Where the vectors live in a memory folder.
pub fn file_in(dir: &Path) -> PathBuf {
    dir.join("vectors.bin")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(a: f32, b: f32) -> Vec<f32> {
        let n = (a * a + b * b).sqrt();
        vec![a / n, b / n]
    }

    #[test]
    fn memory_dense_search_remove_and_file_round_trip() {
        let mut ix = DenseIndex::new(2, "test:2");
        ix.insert(1, &unit(1.0, 0.0));
        ix.insert(2, &unit(0.0, 1.0));
        ix.insert(3, &unit(1.0, 1.0));
        let top = ix.search(&unit(1.0, 0.1), 2);
        assert_eq!(top.iter().map(|h| h.0).collect::<Vec<_>>(), [1, 3]);
        let dir = std::env::temp_dir().join(format!("rb-dense-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = file_in(&dir);
        ix.save(&path).unwrap();
        ix.insert(4, &unit(-1.0, 0.0));
        ix.append(&path, &[4]).unwrap();
        assert!(ix.remove(1));
        assert!(!ix.remove(1));
        let back = DenseIndex::load(&path, 2, "test:2").unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.vector(4), ix.vector(4));
        assert!(
            DenseIndex::load(&path, 2, "other:2")
                .unwrap_err()
                .contains("written by model")
        );
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(
            DenseIndex::load(&path, 2, "test:2")
                .unwrap_err()
                .contains("truncated")
        );
        assert_eq!(ix.search(&unit(1.0, 0.0), 10).len(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `count` random unit vectors of `dim` (a fixed LCG, so runs repeat).
    fn random_units(count: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut seed = seed;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        (0..count)
            .map(|_| {
                let v: Vec<f32> = (0..dim).map(|_| next()).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect()
    }

    fn brute_force(rows: &[(u64, Vec<f32>)], q: &[f32], n: usize) -> Vec<(u64, f32)> {
        let mut exact: Vec<(u64, f32)> = rows.iter().map(|(id, v)| (*id, dot(q, v))).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        exact.truncate(n);
        exact
    }

    /// `a + k × b`, renormalised.
    fn mix(base: &[f32], noise: &[f32], k: f32) -> Vec<f32> {
        let v: Vec<f32> = base.iter().zip(noise).map(|(x, e)| x + k * e).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn memory_dense_prefilter_keeps_the_exact_best() {
        // Clustered like sentence embeddings: 256 topics, 32 noisy memories each.
        let dim = 96;
        let topics = random_units(256, dim, 5);
        let noise = random_units(2 * PREFILTER_MIN, dim, 7);
        let mut ix = DenseIndex::new(dim, "t");
        let rows: Vec<(u64, Vec<f32>)> = noise
            .iter()
            .enumerate()
            .map(|(i, e)| (i as u64 * 3, mix(&topics[i % topics.len()], e, 0.7)))
            .collect();
        for (id, v) in &rows {
            ix.insert(*id, v);
        }
        for (i, e) in random_units(40, dim, 99).iter().enumerate() {
            let q = mix(&topics[i * 37 % topics.len()], e, 0.7);
            let want = brute_force(&rows, &q, 5);
            assert_eq!(ix.search(&q, 5), want, "query {i}");
            assert_eq!(ix.search_exact(&q, 5), want, "query {i}");
        }
        // A stored vector finds itself first, with its exact cosine.
        let q = rows[42].1.clone();
        assert_eq!(ix.search(&q, 1), [(rows[42].0, dot(&q, &q))]);
        // Too narrow a pre-filter still returns exact cosines of what it kept.
        for (id, c) in ix.search_among(&q, 10, 10) {
            assert_eq!(Some(c), ix.score(&q, id));
        }
    }

    #[test]
    fn memory_dense_sign_cut_takes_the_nearest_codes() {
        let dim = 64;
        let vs = random_units(PREFILTER_MIN + 300, dim, 11);
        let mut ix = DenseIndex::new(dim, "t");
        for (i, v) in vs.iter().enumerate() {
            ix.insert(i as u64, v);
        }
        let q = &random_units(1, dim, 5)[0];
        let planes = QueryPlanes::new(q, 1);
        let key = |r: usize| planes.key(&ix.signs[r..=r], ix.inv_l1[r]);
        let mut all: Vec<u16> = (0..ix.len()).map(key).collect();
        all.sort_unstable();
        let mut hist = vec![0u32; KEYS];
        let keys: Vec<u16> = (0..ix.len()).map(key).collect();
        for k in &keys {
            hist[usize::from(*k)] += 1;
        }
        for c in [1, 37, 500, 1024, ix.len()] {
            let got = cut(&keys, &hist, c);
            assert_eq!(got.len(), c);
            assert!(got.windows(2).all(|w| w[0] < w[1]));
            let mut d: Vec<u16> = got.iter().map(|&i| keys[i]).collect();
            d.sort_unstable();
            assert_eq!(d, all[..c], "c = {c}");
        }
        // WIDEN × 600 covers every row: the Hamming cut keeps all, the estimate decides.
        let got = ix.nearest_signs(q, 600);
        let mut d: Vec<u16> = got.iter().map(|&r| key(r)).collect();
        d.sort_unstable();
        assert_eq!(d, all[..600]);
    }

    #[test]
    fn memory_dense_estimate_tracks_the_cosine() {
        let dim = 384;
        let vs = random_units(200, dim, 21);
        let mut ix = DenseIndex::new(dim, "t");
        for (i, v) in vs.iter().enumerate() {
            ix.insert(i as u64, v);
        }
        let q = mix(&vs[0], &random_units(1, dim, 8)[0], 0.3);
        let planes = QueryPlanes::new(&q, ix.words);
        let w = ix.words;
        let est = |r: usize| {
            1.0 - f32::from(planes.key(&ix.signs[r * w..(r + 1) * w], ix.inv_l1[r]))
                / (KEYS / 2) as f32
        };
        // The near row is estimated near its cosine and far above the rest.
        let near = dot(&q, &vs[0]);
        assert!((est(0) - near).abs() < 0.1, "{} vs {near}", est(0));
        for r in 1..vs.len() {
            assert!(est(r) < est(0) - 0.3, "row {r}: {}", est(r));
        }
    }

    #[test]
    fn memory_dense_codes_follow_insert_remove_replace_and_reload() {
        let dim = 70; // not a multiple of 64: the padding bits must stay clear
        let vs = random_units(PREFILTER_MIN + 200, dim, 3);
        let mut ix = DenseIndex::new(dim, "t:70");
        for (i, v) in vs.iter().enumerate() {
            ix.insert(i as u64, v);
        }
        for id in (0..vs.len() as u64).step_by(7) {
            assert!(ix.remove(id));
        }
        let fresh = random_units(50, dim, 4);
        for (i, v) in fresh.iter().enumerate() {
            ix.insert(i as u64 * 13 + 1, v); // replaces some, re-adds removed ones
        }
        let check = |ix: &DenseIndex| {
            assert_eq!(ix.signs.len(), ix.len() * ix.words);
            assert_eq!(ix.inv_l1.len(), ix.len());
            for (r, id) in ix.ids().iter().enumerate() {
                let mut want = vec![0u64; ix.words];
                signs_into(ix.vector(*id).unwrap(), &mut want);
                assert_eq!(
                    ix.signs[r * ix.words..(r + 1) * ix.words],
                    want,
                    "memory {id}"
                );
            }
            let rows: Vec<(u64, Vec<f32>)> = ix
                .ids()
                .iter()
                .map(|id| (*id, ix.vector(*id).unwrap().to_vec()))
                .collect();
            for q in fresh.iter().take(10) {
                assert_eq!(ix.search(q, 3), brute_force(&rows, q, 3));
            }
        };
        check(&ix);
        let dir = std::env::temp_dir().join(format!("rb-dense-codes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = file_in(&dir);
        ix.save(&path).unwrap();
        let back = DenseIndex::load(&path, dim, "t:70").unwrap();
        assert_eq!(back.len(), ix.len());
        check(&back);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_dot_handles_tails() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let want: f32 = a.iter().map(|x| x * x).sum();
        assert_eq!(dot(&a, &a), want);
    }
}
