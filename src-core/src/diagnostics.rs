//! Diagnostics: one `tracing` subscriber per process, so what robobrain and
//! its libraries (rmcp, the HTTP stack, anything logging through `log`)
//! say is shown instead of dropped. `RUST_LOG` decides what is shown when
//! set (`RUST_LOG=rmcp=debug`); else `-q` (errors), the default (warnings),
//! `-v` (info), `-vv` (debug), `-vvv` (trace).
//!
//! Where: stderr for the faces that do not own the terminal (`headless`,
//! `serve`, `mcp`, `demo`, `scenario`…); a file per run for the console,
//! whose terminal is the UI, and for the desktop app, which has none:
//! `<runs_dir>/logs/<face>-<unix time>-<pid>.log` (`console`, `desktop`).
//! The binaries install it; the library itself never does.
//! This is not the run's event log (`<runs_dir>/<thread>.jsonl`), which
//! records what the brain did; this is what the program says about itself.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use thiserror::Error;
use tracing_subscriber::EnvFilter;

/// Why the diagnostics could not be set up.
#[derive(Debug, Error)]
pub enum DiagnosticsError {
    /// The log folder or file could not be created.
    #[error("cannot create the log {what} {}: {source}", path.display())]
    Create {
        /// `folder` or `file`.
        what: &'static str,
        /// Which.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Where diagnostics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// The process's stderr.
    Stderr,
    /// A new file in this folder (created when missing), named for the face.
    FileIn(PathBuf, &'static str),
}

/// The filter for `verbosity` (−1 quiet … 3) when `RUST_LOG` is not set.
/// RustDDS (the ROS 2 link's DDS) warns and errs about conditions that are
/// normal for it (no multicast on loopback, a peer gone, its own shutdown):
/// it speaks from `-v` on, one level below the rest; the link reports what
/// matters itself (a robot lost puts the kernel in SAFE).
pub fn default_filter(verbosity: i8) -> &'static str {
    match verbosity {
        i8::MIN..=-1 => "error,rustdds=off",
        0 => "warn,rustdds=off",
        1 => "info,rustdds=warn",
        2 => "debug",
        _ => "trace",
    }
}

/// Installs the subscriber; returns the file it writes to, if any.
pub fn init(sink: &Sink, verbosity: i8) -> Result<Option<PathBuf>, DiagnosticsError> {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter(verbosity)));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match sink {
        Sink::Stderr => {
            // Colours only on a terminal, and never with NO_COLOR.
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none();
            let _ = builder
                .with_writer(std::io::stderr)
                .with_ansi(ansi)
                .try_init();
            Ok(None)
        }
        Sink::FileIn(dir, face) => {
            let path = log_file(dir, face);
            std::fs::create_dir_all(dir).map_err(|source| DiagnosticsError::Create {
                what: "folder",
                path: dir.clone(),
                source,
            })?;
            let file = std::fs::File::create(&path).map_err(|source| DiagnosticsError::Create {
                what: "file",
                path: path.clone(),
                source,
            })?;
            // Whatever the filter lets through, the file says whose it is.
            let _ = writeln!(
                &file,
                "robobrain {} {face} started, pid {}",
                env!("CARGO_PKG_VERSION"),
                std::process::id()
            );
            let _ = builder
                .with_writer(std::sync::Mutex::new(file))
                .with_ansi(false)
                .try_init();

            Ok(Some(path))
        }
    }
}

/// The file of this run of `face` in `dir`.
fn log_file(dir: &Path, face: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    dir.join(format!("{face}-{secs}-{}.log", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_default_and_verbose_map_to_levels() {
        assert_eq!(default_filter(-1), "error,rustdds=off");
        assert_eq!(default_filter(0), "warn,rustdds=off");
        assert_eq!(default_filter(1), "info,rustdds=warn");
        assert_eq!(default_filter(2), "debug");
        assert_eq!(default_filter(9), "trace");
        let f = log_file(Path::new("runs/logs"), "console");
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("console-"), "{name}");
        assert_eq!(f.extension().and_then(|e| e.to_str()), Some("log"));
    }
}
