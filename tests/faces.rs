//! One run, every face (issue 21): the same config — a model (mock-llm),
//! memory on, one MCP service (PyPI `mcp-server-time`) — run through every
//! face that shows a run, and each must show the same brain, memory and
//! services: the console's header (tmux), the page's and the desktop app's
//! header (their DOM, `ui/tests/faces.mjs`), and the `run` event or the
//! `hello` frame of the faces that speak the protocol (headless, serve, mcp,
//! the demo's log). The faces are an enum whose observation is an
//! exhaustive `match`; every subcommand of the binary is either a face here
//! or named as not one, so a new face cannot slip by without the same run.
//!
//! And `robobrain tui --connect`: one `robobrain serve`, two consoles
//! attached to it (an operator and a viewer, in tmux) and the page — an
//! approval shows in all of them, the viewer's F3 is refused, the
//! operator's F2 then F3 gives it, and it is gone from the others.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures_util::StreamExt;
use robobrain_core::llm::mock_server::MockServer;
use robobrain_core::protocol::{Event, EventKind, RunInfo, ServerMessage};
use tokio_tungstenite::tungstenite::Message;

use crate::console::{Tmux, approve_on_the_card, console_then_shell, poll};
use crate::support::{root, temp_dir};
use crate::web::serve_with;

/// The model every face must name.
const MODEL: &str = "face-table-model";

macro_rules! faces {
    ($($(#[doc = $doc:literal])* $face:ident,)*) => {
        /// Every face that shows a run.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Face {
            $($(#[doc = $doc])* $face,)*
        }

        /// Every face, in the order the table runs them.
        const FACES: &[Face] = &[$(Face::$face),*];
    };
}

faces! {
    /// `robobrain tui`: its header, in tmux.
    Console,
    /// `robobrain tui --connect` to a `robobrain serve`: its header, in tmux.
    Remote,
    /// `robobrain serve`'s page in Chromium: its header's run line.
    Page,
    /// `robobrain-gui` under Xvfb over WebDriver: its header's run line.
    Desktop,
    /// `robobrain headless`: the `run` event on stdout.
    Headless,
    /// `robobrain serve`: the `hello` frame on its WebSocket.
    Serve,
    /// `robobrain mcp`: the `run` event in its `robobrain://events` resource.
    Mcp,
    /// `robobrain demo`: the `run` event in its log.
    Demo,
}

/// The binary's subcommands that are not faces of a configured run, and why.
const NOT_FACES: &[(&str, &str)] = &[
    (
        "scenario",
        "a scenario file is its own config: its world, brain and expectations",
    ),
    ("mock-llm", "a model endpoint, not a run"),
    ("sim", "the robot, not a brain"),
    (
        "fleet",
        "a console of many runs over MQTT; each robot's run is a `headless` face (tests/fleet.rs)",
    ),
    ("threads", "reads the thread database"),
    ("audit", "reads the audit log"),
    ("assist", "a dataset through the rule path"),
    ("memory", "the memory's own tools"),
    ("report", "renders a finished run's log"),
    (
        "export",
        "converts a finished run's log (MCAP for Foxglove)",
    ),
    ("completions", "prints a shell's completion script"),
    ("man", "prints the man page"),
    (
        "paths",
        "prints where the config is read from and the data is kept",
    ),
    ("help", "clap's"),
];

/// The face's subcommand (`None`: the desktop app, a binary of its own).
fn subcommand(face: Face) -> Option<&'static str> {
    match face {
        Face::Console | Face::Remote => Some("tui"),
        Face::Page | Face::Serve => Some("serve"),
        Face::Desktop => None,
        Face::Headless => Some("headless"),
        Face::Mcp => Some("mcp"),
        Face::Demo => Some("demo"),
    }
}

/// The shared config: the mock model, memory on (BM25 alone: no embedding
/// model in the folder it names), the time service.
struct Setup {
    _model: MockServer,
    dir: PathBuf,
    config: PathBuf,
}

fn setup() -> Setup {
    let dir = temp_dir("faces");
    let model = crate::support::mock_model(
        &dir,
        "[[reply]]\ndecision = { type = \"FINISH\", reason = \"nothing to do\", ops = [] }\n",
    );
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            r#"runs_dir = {runs:?}
[llm]
base_url = {url:?}
api_key = "face-table-key"
decision_model = "{MODEL}"
[memory]
enabled = true
model_dir = {no_model:?}
[speech]
voice = "text"
{time}"#,
            runs = dir.join("runs").display().to_string(),
            url = model.base_url(),
            no_model = dir.join("no-model").display().to_string(),
            time = crate::support::time_service(),
        ),
    )
    .unwrap();
    Setup {
        _model: model,
        dir,
        config,
    }
}

/// The same run, in the words every face uses.
fn expected() -> [String; 3] {
    [
        format!("model {MODEL}"),
        "memory bm25".into(),
        "mcp time(2)".into(),
    ]
}

/// What `face` shows of the run: the text the three words are looked for in.
fn observe(face: Face, s: &Setup) -> String {
    match face {
        Face::Console => {
            let tmux = Tmux::start(&console_then_shell(&s.config, "tui"), 200, 50);
            header(&tmux)
        }
        Face::Remote => {
            let server = serve_with(&s.config, &[], 4.0);
            let args = format!("tui --connect ws://{}", server.addr);
            let tmux = Tmux::start(&console_then_shell(&s.config, &args), 200, 50);
            header(&tmux)
        }
        Face::Page => {
            let server = serve_with(&s.config, &[], 4.0);
            let page = format!("http://{}/", server.addr);
            page_line(&["page", &page, "run"], &[])
        }
        Face::Desktop => {
            let app = desktop_app();
            let xvfb = [
                "-a",
                "-s",
                "-screen 0 1280x900x24",
                "node",
                "ui/tests/faces.mjs",
            ];
            let out = node_with(
                "xvfb-run",
                &[&xvfb[..], &["desktop", app.to_str().unwrap(), "run"]].concat(),
                &[("ROBOBRAIN_CONFIG", s.config.to_str().unwrap())],
            );
            line_after(&out, "run: ")
        }
        Face::Headless => {
            let out = Command::new(env!("CARGO_BIN_EXE_robobrain"))
                .args(["--config", s.config.to_str().unwrap()])
                .args(["headless", "--fast", "--duration", "1"])
                .current_dir(root())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let events: Vec<Event> = stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            run_of(&events).summary()
        }
        Face::Serve => {
            let server = serve_with(&s.config, &[], 4.0);
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async {
                let url = format!("ws://{}/ws", server.addr);
                let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
                let Some(Ok(Message::Text(text))) = ws.next().await else {
                    panic!("no hello");
                };
                match serde_json::from_str::<ServerMessage>(&text).unwrap() {
                    ServerMessage::Hello(hello) => hello.run.summary(),
                    other => panic!("the first frame is {other:?}"),
                }
            })
        }
        Face::Mcp => mcp_events(&s.config),
        Face::Demo => {
            let log = s.dir.join("demo.jsonl");
            let out = Command::new(env!("CARGO_BIN_EXE_robobrain"))
                .args(["--config", s.config.to_str().unwrap()])
                .args(["demo", "--fast", "--log", log.to_str().unwrap()])
                .current_dir(root())
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            assert!(
                out.status.code().is_some(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            run_of(&robobrain_core::eventlog::read(&log).unwrap()).summary()
        }
    }
}

#[test]
fn every_face_shows_the_same_run() {
    let s = setup();
    let want = expected();
    let mut table = Vec::new();
    for &face in FACES {
        let shown = observe(face, &s);
        let missing: Vec<&String> = want
            .iter()
            .filter(|w| !shown.contains(w.as_str()))
            .collect();
        table.push(format!("{face:?}: {shown}"));
        assert!(
            missing.is_empty(),
            "{face:?} does not show {missing:?}; it shows:\n{shown}\nso far:\n{}",
            table.join("\n")
        );
    }
    eprintln!("{}", table.join("\n"));
}

/// Every subcommand the binary has is a face in the table or named as not one.
#[test]
fn every_subcommand_is_a_face_or_says_why_not() {
    let out = Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.len() > 10, "{help}");
    for command in commands {
        let face = FACES.iter().any(|&f| subcommand(f) == Some(command));
        let not = NOT_FACES.iter().any(|(c, _)| *c == command);
        assert!(
            face ^ not,
            "`robobrain {command}`: add it to the faces (with the same run) or to NOT_FACES with why"
        );
    }
}

/// The console's header once it names the run.
fn header(tmux: &Tmux) -> String {
    let screen = tmux.wait_for("the header to name the run", 60, |s| {
        s.lines().next().is_some_and(|l| l.contains("mcp "))
    });
    screen.lines().next().unwrap_or_default().to_string()
}

/// The run a face's events announced.
fn run_of(events: &[Event]) -> RunInfo {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Run { run } => Some(run.clone()),
            _ => None,
        })
        .expect("a run event")
}

/// `robobrain mcp` over stdio: the `run` event of its events resource.
fn mcp_events(config: &Path) -> String {
    let mut child = crate::support::start(&["--config", config.to_str().unwrap(), "mcp"], &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |line: &str| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"faces","version":"1"}}}"#,
    );
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // The resource fills as the run's recorder keeps its events: read it
    // until it holds the `run` event.
    let mut events = Vec::new();
    for id in 2..200 {
        send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"robobrain://events"}}}}"#
        ));
        let read = loop {
            let l = lines.next().expect("mcp ended").unwrap();
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            if v["id"] == id {
                break v;
            }
        };
        let text = read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_default();
        events = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if events
            .iter()
            .any(|e: &Event| matches!(e.kind, EventKind::Run { .. }))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    run_of(&events).summary()
}

/// The desktop app's binary, built beside `robobrain` (`./x test` builds
/// the whole workspace).
fn desktop_app() -> PathBuf {
    let app = Path::new(env!("CARGO_BIN_EXE_robobrain")).with_file_name("robobrain-gui");
    assert!(
        app.is_file(),
        "the face table needs the desktop app: cargo build -p robobrain-gui (./x test builds it); no {}",
        app.display()
    );
    for tool in ["xvfb-run", "tauri-driver", "WebKitWebDriver", "node"] {
        assert!(
            which(tool),
            "the face table needs {tool} (./x setup installs it)"
        );
    }
    app
}

fn which(tool: &str) -> bool {
    let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo/bin"));
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(home)
        .any(|d| d.join(tool).is_file())
}

/// `node ui/tests/faces.mjs ARGS` (the page in Chromium); its stdout, once
/// it passed.
fn page_line(args: &[&str], env: &[(&str, &str)]) -> String {
    assert!(
        root().join("ui/node_modules/playwright-core").exists() && which("node"),
        "the face table needs the page's npm packages (npm ci in ui/) and node"
    );
    let out = node_with("node", &[&["ui/tests/faces.mjs"], args].concat(), env);
    line_after(&out, "run: ")
}

/// Runs `program ARGS` from the workspace root; its stdout, once it printed
/// `1 passed, 0 failed`.
fn node_with(program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(root())
        .envs(env.iter().copied());
    if program == "xvfb-run"
        && let Some(home) = std::env::var_os("HOME")
    {
        // tauri-driver lives in ~/.cargo/bin when `cargo install` put it there.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        dirs.push(Path::new(&home).join(".cargo/bin"));
        command.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed, 0 failed"),
        "{program} {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn line_after(out: &str, prefix: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{out}"))
        .to_string()
}

/// `tui --connect`: serve, two consoles (an operator and a viewer) and the
/// page on one run; an approval given in one console is gone from the other
/// and from the page, and the viewer's answer is refused.
#[test]
fn consoles_attached_to_serve_and_the_page_see_one_approval_answered_once() {
    let dir = temp_dir("connect");
    let config = crate::support::quiet_config(&dir);
    let server = serve_with(&config, &["--token", "OPS", "--viewer-token", "LOOK"], 4.0);
    let console = |token: &str| {
        let args = format!("tui --connect 'ws://{}/?token={token}'", server.addr);
        Tmux::start(&console_then_shell(&config, &args), 140, 40)
    };
    let operator = console("OPS");
    let viewer = console("LOOK");
    operator.wait_for("the operator's console", 30, |s| s.contains("(operator)"));
    viewer.wait_for("the viewer's console", 30, |s| {
        s.contains("(viewer: watching only)")
    });

    // The page watches for the approval, and says when it is gone.
    let page_url = format!("http://{}/?token=OPS", server.addr);
    let (lines_tx, page_lines) = mpsc::channel();
    let mut page = Command::new("node")
        .args(["ui/tests/faces.mjs", "page", &page_url, "approval"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let page_out = page.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(page_out).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let page_says = |what: &str| {
        poll(90, || {
            page_lines
                .try_recv()
                .ok()
                .filter(|l: &String| l.starts_with(what) || l.starts_with("FAIL"))
        })
        .unwrap_or_else(|| panic!("the page never said `{what}`"))
    };

    operator.type_text("go outside");
    let waiting = |s: &str| s.contains("1 approval(s) waiting");
    operator.wait_for("the approval in the operator's console", 30, waiting);
    viewer.wait_for("the approval in the viewer's console", 30, waiting);
    let seen = page_says("seen ");
    assert!(seen.starts_with("seen a"), "{seen}");

    // The viewer cannot answer it: the server refuses, the approval waits.
    approve_on_the_card(&viewer);
    viewer.wait_for("the refusal", 15, |s| {
        s.contains("refused: web viewer: ws#") && s.contains("may only watch")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(waiting(&operator.screen()), "{}", operator.screen());

    // The operator's F2 then F3 answers it: gone everywhere.
    approve_on_the_card(&operator);
    operator.wait_for("the approval gone from the operator", 30, |s| !waiting(s));
    viewer.wait_for("the approval gone from the viewer", 30, |s| !waiting(s));
    let gone = page_says("gone ");
    assert_eq!(gone, seen.replace("seen", "gone"), "the page: {gone}");
    let status = page.wait().unwrap();
    assert!(status.success(), "the page script failed");

    // The server's log holds one answer, the operator's.
    drop(server);
    let log = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let events = robobrain_core::eventlog::read(&log).unwrap();
    let answers = events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::Approval { status, .. }
                if *status != robobrain_core::protocol::ApprovalStatus::Requested)
        })
        .count();
    assert_eq!(answers, 1, "one answer in the run's log");
}
