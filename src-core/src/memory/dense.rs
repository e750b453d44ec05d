//! The memory vectors: one unit vector per memory, kept in RAM, persisted in
//! `vectors.bin` beside the database so a restart never re-embeds.
//!
//! Search is exhaustive and ends exact: every vector also has an 8-bit copy
//! (scaled per vector to ±127), a pass over those codes (a quarter of the
//! bytes of the floats) picks the best `max(8n, 256)` candidates, and their
//! cosines are then computed in full precision. Below [`PREFILTER_MIN`]
//! vectors the codes are skipped and every cosine is exact.
//!
//! File format: `RBVEC1\n`, the model fingerprint (u32 length + UTF-8), the
//! width (u32), then records of `id: u64` + `width × f32`, little-endian.
//! Adds append; removals rewrite the file (via `.part` and a rename). A
//! file that does not parse, or was written by another model, is reported
//! as such and the caller rebuilds it from SQLite.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::MemoryError;

const MAGIC: &[u8] = b"RBVEC1\n";

/// Vectors from which the 8-bit pre-filter is used.
pub const PREFILTER_MIN: usize = 4096;

/// Vectors by memory id.
#[derive(Debug, Clone)]
pub struct DenseIndex {
    dim: usize,
    fingerprint: String,
    ids: Vec<u64>,
    /// `ids.len() × dim`, row by row.
    data: Vec<f32>,
    /// The same rows in 8 bits (`round(x × 127 / max |x|)`).
    codes: Vec<i8>,
    /// Per row: `max |x| / 127`, to scale a code dot product back.
    scales: Vec<f32>,
    row: HashMap<u64, usize>,
}

/// Dot product with eight running sums (the compiler vectorises it).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

impl DenseIndex {
    /// An empty index for vectors of `dim` from the model `fingerprint`.
    pub fn new(dim: usize, fingerprint: &str) -> Self {
        Self {
            dim,
            fingerprint: fingerprint.to_string(),
            ids: Vec::new(),
            data: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
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
        let (codes, scale) = quantize(v);
        if let Some(&r) = self.row.get(&id) {
            self.data[r * self.dim..(r + 1) * self.dim].copy_from_slice(v);
            self.codes[r * self.dim..(r + 1) * self.dim].copy_from_slice(&codes);
            self.scales[r] = scale;
            return;
        }
        self.row.insert(id, self.ids.len());
        self.ids.push(id);
        self.data.extend_from_slice(v);
        self.codes.extend_from_slice(&codes);
        self.scales.push(scale);
    }

    /// Drops the vector of `id`; whether it was there.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(r) = self.row.remove(&id) else {
            return false;
        };
        let last = self.ids.len() - 1;
        if r != last {
            let moved = self.ids[last];
            self.ids.swap(r, last);
            let (head, tail) = self.data.split_at_mut(last * self.dim);
            head[r * self.dim..(r + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
            let (head, tail) = self.codes.split_at_mut(last * self.dim);
            head[r * self.dim..(r + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
            self.scales[r] = self.scales[last];
            self.row.insert(moved, r);
        }
        self.ids.pop();
        self.data.truncate(last * self.dim);
        self.codes.truncate(last * self.dim);
        self.scales.pop();
        true
    }

    /// The cosine of `query` (a unit vector) with `id`'s vector.
    pub fn score(&self, query: &[f32], id: u64) -> Option<f32> {
        self.vector(id).map(|v| dot(query, v))
    }

    /// The `n` nearest ids to `query` with their exact cosines, best first.
    pub fn search(&self, query: &[f32], n: usize) -> Vec<(u64, f32)> {
        if n == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let rows: Vec<(usize, f32)> = if self.ids.len() < PREFILTER_MIN {
            self.data
                .chunks_exact(self.dim)
                .enumerate()
                .map(|(r, v)| (r, dot(query, v)))
                .collect()
        } else {
            let (q, _) = quantize(query);
            let approx = best_of(
                self.codes
                    .chunks_exact(self.dim)
                    .enumerate()
                    .map(|(r, c)| (r, dot_i8(&q, c) as f32 * self.scales[r])),
                (8 * n).max(256),
            );
            approx
                .into_iter()
                .map(|(r, _)| (r, dot(query, &self.data[r * self.dim..(r + 1) * self.dim])))
                .collect()
        };
        let mut out: Vec<(u64, f32)> = best_of(rows.into_iter(), n)
            .into_iter()
            .map(|(r, s)| (self.ids[r], s))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
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

/// `v` in 8 bits, scaled so its largest component is ±127, and the factor back.
fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let k = 127.0 / max;
    (
        v.iter()
            .map(|x| (x * k).round().clamp(-127.0, 127.0) as i8)
            .collect(),
        max / 127.0,
    )
}

/// Dot product of two code rows (i32 sums in 16 lanes; the compiler vectorises it).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    acc.iter().sum::<i32>() + tail
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

    #[test]
    fn memory_dense_prefilter_keeps_the_exact_best() {
        let mut ix = DenseIndex::new(8, "t");
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let mut rows = Vec::new();
        for id in 0..(PREFILTER_MIN as u64 + 500) {
            let v: Vec<f32> = (0..8).map(|_| next()).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let v: Vec<f32> = v.iter().map(|x| x / n).collect();
            ix.insert(id, &v);
            rows.push((id, v));
        }
        let q = rows[42].1.clone();
        let mut exact: Vec<(u64, f32)> = rows.iter().map(|(id, v)| (*id, dot(&q, v))).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = ix.search(&q, 10);
        assert_eq!(
            got.iter().map(|h| h.0).collect::<Vec<_>>(),
            exact[..10].iter().map(|h| h.0).collect::<Vec<_>>()
        );
        assert_eq!(got[0], (42, exact[0].1));
    }

    #[test]
    fn memory_dot_handles_tails() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let want: f32 = a.iter().map(|x| x * x).sum();
        assert_eq!(dot(&a, &a), want);
    }
}
