//! Helpers for the end-to-end tests: run the `robobrain` binary from the
//! workspace root and capture what it printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a run of the binary produced.
pub(crate) struct Output {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// The workspace root (tests run the binary from here).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A fresh folder for one test's logs.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("robobrain-e2e-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `robobrain ARGS…` with `stdin` piped in, colours off.
pub(crate) fn robobrain(args: &[&str], stdin: &str) -> Output {
    run_with(args, stdin, &[])
}

/// Runs `robobrain ARGS…` with these bytes (not necessarily text) on stdin.
pub(crate) fn robobrain_bytes(args: &[&str], stdin: &[u8]) -> Output {
    run_bytes(args, stdin, &[])
}

/// Runs `robobrain ARGS…` with these environment variables, stdin empty.
pub(crate) fn robobrain_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    run_with(args, "", env)
}

fn run_with(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    run_bytes(args, stdin.as_bytes(), env)
}

/// Starts `robobrain ARGS…` from the workspace root with these environment
/// variables (and the caller's `RUST_LOG` unset), colours off, stdin,
/// stdout and stderr piped.
pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn run_bytes(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut child = start(args, env);
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The `.toml` files in a folder of the workspace, sorted.
pub(crate) fn toml_files(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            Path::new(n)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
        })
        .collect();
    files.sort();
    files
}

/// A mock-llm server on loopback playing `script` (mock-llm TOML), written
/// to `dir/mock.toml`.
pub(crate) fn mock_model(dir: &Path, script: &str) -> robobrain_core::llm::mock_server::MockServer {
    use robobrain_core::llm::{mock_script, mock_server::MockServer};
    let path = dir.join("mock.toml");
    std::fs::write(&path, script).unwrap();
    MockServer::start(mock_script::load(&path).unwrap(), "127.0.0.1:0").unwrap()
}

/// The `[[mcp.services]]` entry of PyPI's reference `mcp-server-time`
/// (installed by `./x setup`), run with `ROBOBRAIN_PYTHON`.
pub(crate) fn time_service() -> String {
    let python = std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| "python3".into());
    format!(
        "[[mcp.services]]\nname = \"time\"\ncommand = {python:?}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n"
    )
}

/// A config in `dir` for a run that leaves no trace outside it: data in
/// `dir/runs`, memory off, speech as text only.
pub(crate) fn quiet_config(dir: &Path) -> PathBuf {
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            "runs_dir = {:?}\n[memory]\nenabled = false\n[speech]\nvoice = \"text\"\n",
            dir.join("runs").display().to_string()
        ),
    )
    .unwrap();
    config
}

/// Reads `child`'s stderr until a line holds `marker` and returns what
/// follows the marker on that line (trimmed), with the lines after it: a
/// thread keeps draining stderr into the receiver, so the child never
/// blocks on a full pipe. Panics with `ended` if stderr ends first.
pub(crate) fn after_stderr_line(
    child: &mut std::process::Child,
    marker: &str,
    ended: &str,
) -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let mut lines = BufReader::new(child.stderr.take().expect("stderr piped")).lines();
    let found = loop {
        let line = lines.next().expect(ended).unwrap();
        if let Some(at) = line.find(marker) {
            break line[at + marker.len()..].trim().to_string();
        }
    };
    let (tx, rest) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (found, rest)
}

/// The JSON objects a child writes on `stdout`, one a line, as they come
/// (read on a thread of their own; lines that are not JSON are skipped).
pub(crate) fn json_lines(
    stdout: std::process::ChildStdout,
) -> std::sync::mpsc::Receiver<serde_json::Value> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    rx
}
