//! `robobrain sim --listen` as a child process, for the end-to-end tests
//! (`durable.rs`, `rest.rs`) and the E-stop benchmark
//! (`src-tui/benches/estop.rs`, which includes this file by path).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The simulator process; stopped when dropped.
pub(crate) struct SimProcess {
    child: Child,
    /// `tcp://…` to reach it.
    pub url: String,
}

impl SimProcess {
    /// `robobrain [global…] sim --listen 127.0.0.1:0 --speed SPEED --record RECORD`.
    pub(crate) fn start(record: &Path, speed: &str, global: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_robobrain"))
            .args(global)
            .args([
                "sim",
                "--listen",
                "127.0.0.1:0",
                "--speed",
                speed,
                "--record",
            ])
            .arg(record)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from the simulator: {line:?}"))
            .to_string();
        Self { child, url }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
