//! Fusing BM25 and dense scores (pure).
//!
//! The two scores live on different scales — BM25 is unbounded and depends
//! on the query's length and the corpus, the cosine sits in [-1, 1] with
//! unrelated sentences near 0.1 — so each is normalised per query over the
//! candidates (the union of both top-N lists) before mixing:
//!
//! - BM25: `s / max s` — 1 for the best term match, 0 for no shared term
//!   (a candidate only the dense side found has no BM25 score: 0).
//! - dense: `(c - min c) / (max c - min c)` over the candidates' exact cosines
//!   (all 1 when they are equal).
//!
//! `score = alpha × bm25' + (1 - alpha) × dense'`; ties go to the lower id.

use serde::Serialize;

/// One retrieved memory with every score that placed it (explainable retrieval).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    /// The memory's id.
    pub id: u64,
    /// The score it was ranked by (fused in hybrid mode, raw otherwise).
    pub score: f32,
    /// Raw BM25 (absent: no shared term, or not among the BM25 candidates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f32>,
    /// Cosine with the query (absent without the model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f32>,
    /// BM25 after normalisation (hybrid only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25_norm: Option<f32>,
    /// Cosine after normalisation (hybrid only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense_norm: Option<f32>,
}

fn rank(mut hits: Vec<Scored>, k: usize) -> Vec<Scored> {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    hits.truncate(k);
    hits
}

/// BM25 hits as results.
pub fn bm25_only(hits: &[(u64, f32)], k: usize) -> Vec<Scored> {
    rank(
        hits.iter()
            .map(|&(id, s)| Scored {
                id,
                score: s,
                bm25: Some(s),
                dense: None,
                bm25_norm: None,
                dense_norm: None,
            })
            .collect(),
        k,
    )
}

/// Dense hits as results.
pub fn dense_only(hits: &[(u64, f32)], k: usize) -> Vec<Scored> {
    rank(
        hits.iter()
            .map(|&(id, c)| Scored {
                id,
                score: c,
                bm25: None,
                dense: Some(c),
                bm25_norm: None,
                dense_norm: None,
            })
            .collect(),
        k,
    )
}

/// Fuses `bm25` hits with the cosine of every candidate (`cosines`: each id
/// of the union of both lists, with its exact cosine) and keeps the best `k`.
pub fn fuse(bm25: &[(u64, f32)], cosines: &[(u64, f32)], alpha: f32, k: usize) -> Vec<Scored> {
    let max_b = bm25.iter().map(|h| h.1).fold(0.0f32, f32::max);
    let (min_c, max_c) = cosines
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| {
            (lo.min(h.1), hi.max(h.1))
        });
    let bm25_of = |id: u64| bm25.iter().find(|h| h.0 == id).map(|h| h.1);
    let mut ids: Vec<u64> = bm25.iter().chain(cosines).map(|h| h.0).collect();
    ids.sort_unstable();
    ids.dedup();
    let hits = ids
        .into_iter()
        .map(|id| {
            let b = bm25_of(id);
            let c = cosines.iter().find(|h| h.0 == id).map(|h| h.1);
            let bn = match b {
                Some(s) if max_b > 0.0 => s / max_b,
                _ => 0.0,
            };
            let dn = match c {
                Some(_) if max_c - min_c <= f32::EPSILON => 1.0,
                Some(c) => (c - min_c) / (max_c - min_c),
                None => 0.0,
            };
            Scored {
                id,
                score: alpha * bn + (1.0 - alpha) * dn,
                bm25: b,
                dense: c,
                bm25_norm: Some(bn),
                dense_norm: Some(dn),
            }
        })
        .collect();
    rank(hits, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_fusion_normalises_both_sides_and_weights_with_alpha() {
        let bm25 = [(1, 10.0), (2, 5.0)];
        let cos = [(1, 0.2), (2, 0.6), (3, 0.8)];
        let h = fuse(&bm25, &cos, 0.5, 3);
        // 1: 0.5*1 + 0.5*0 = 0.5; 2: 0.5*0.5 + 0.5*(0.4/0.6) = 0.583; 3: 0.5*0 + 0.5*1 = 0.5
        assert_eq!(h.iter().map(|s| s.id).collect::<Vec<_>>(), [2, 1, 3]);
        assert!((h[0].score - 0.583_333).abs() < 1e-4);
        assert_eq!(h[2].bm25, None);
        let only_b = fuse(&bm25, &cos, 1.0, 1);
        assert_eq!(only_b[0].id, 1);
        let only_d = fuse(&bm25, &cos, 0.0, 1);
        assert_eq!(only_d[0].id, 3);
        assert_eq!(bm25_only(&bm25, 1)[0].id, 1);
        assert_eq!(dense_only(&cos, 2).len(), 2);
    }
}
