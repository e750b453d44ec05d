//! The desktop app (`robobrain-gui`): the web console's page (`ui/dist`) in
//! a Tauri window, talking over IPC to a core running in the same process —
//! the run the session builder assembles (`robobrain_core::session`), as
//! every face gets it.
//! The page's transport layer sees `window.__TAURI__` and uses two commands
//! — `hello` (the same `hello` and `snapshot` messages `robobrain serve`
//! sends first) and `send_line` (an operator line) — and one event,
//! `robobrain://message`, carrying every later message. A desktop
//! notification says when an approval is waiting.

use robobrain_core::config::Config;
use robobrain_core::protocol::line::{Line, parse_line};
use robobrain_core::protocol::{ApprovalStatus, Event, EventKind, Origin, Role, ServerMessage};
use robobrain_core::runtime::{Pace, RuntimeError};
use robobrain_core::session::{Session, SessionOptions};
use serde::Serialize;
use serde_json::json;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

/// The event every message after the first two travels in.
pub const MESSAGE_EVENT: &str = "robobrain://message";

/// What a command from the page can fail with. Its JSON is
/// `{"kind": "…", "message": "…"}` (pinned by a test; the page shows `message`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuiError {
    /// The line is not a command (the expected form is in the message).
    #[error("{0}")]
    BadLine(String),
    /// The brain's command queue is full; try again.
    #[error("the brain is busy: try again")]
    Busy,
    /// The brain has stopped.
    #[error("the brain has stopped")]
    Stopped,
}

impl GuiError {
    fn kind(&self) -> &'static str {
        match self {
            Self::BadLine(_) => "bad_line",
            Self::Busy => "busy",
            Self::Stopped => "stopped",
        }
    }
}

impl Serialize for GuiError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json!({"kind": self.kind(), "message": self.to_string()}).serialize(s)
    }
}

impl From<RuntimeError> for GuiError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Busy => Self::Busy,
            _ => Self::Stopped,
        }
    }
}

/// The core the window talks to.
pub struct Core {
    session: Session,
}

impl Core {
    /// Starts the run the session builder assembles from `config`, at
    /// `speed` (sim seconds per wall second), recorded as MCAP in `mcap`
    /// when given, on Tauri's async runtime; returns the core and its event
    /// stream (every event from the first).
    pub fn start(
        config: &Config,
        speed: f64,
        mcap: Option<std::path::PathBuf>,
    ) -> anyhow::Result<(Self, Receiver<Event>)> {
        let options = SessionOptions {
            pace: Pace::RealTime { speed },
            mcap,
            ..SessionOptions::new("gui")
        };
        let mut session = tauri::async_runtime::block_on(Session::open(config, options))?;
        let events = session.take_events();
        Ok((Self { session }, events))
    }

    /// The page's first two messages: `hello` (operator, the map, the
    /// skills, the run) and the current `snapshot`.
    pub fn greeting(&self) -> Vec<ServerMessage> {
        vec![
            ServerMessage::Hello(Box::new(self.session.hello(Role::Operator))),
            ServerMessage::snapshot(self.session.runtime().snapshot()),
        ]
    }

    /// Carries out an operator line.
    pub async fn send(&self, line: &str) -> Result<(), GuiError> {
        match parse_line(line) {
            Line::Command(c) => Ok(self.session.runtime().send(c, Origin::desktop()).await?),
            Line::Blank => Ok(()),
            Line::Bad(refused) => Err(GuiError::BadLine(refused.why)),
        }
    }
}

/// What the window shows: a run of its own, or the fleet on a broker.
pub enum Backend {
    /// A run the session builder assembled ([`Core::start`]).
    Run(Box<Core>),
    /// The fleet ([`FleetCore::start`], `--fleet URL`).
    Fleet(FleetCore),
}

/// The IPC commands the page invokes. (A module of their own: Tauri's
/// command glue clashes with `pub` commands at a crate's root.)
pub mod commands {
    use super::{Backend, GuiError};
    use robobrain_core::protocol::Role;
    use robobrain_core::protocol::ServerMessage;
    use tauri::State;

    /// `hello`: the first messages of the page (a run's `hello` and
    /// snapshot; the fleet's `fleet_hello` and board).
    #[tauri::command]
    #[allow(clippy::needless_pass_by_value)] // Tauri hands commands their state by value.
    pub fn hello(backend: State<'_, Backend>) -> Vec<ServerMessage> {
        match &*backend {
            Backend::Run(core) => core.greeting(),
            Backend::Fleet(fleet) => {
                robobrain_core::fleet::hub::greeting(&fleet.hub, Role::Operator)
            }
        }
    }

    /// `send_line`: an operator line (a command as JSON, or words to say);
    /// in the fleet window, a fleet request (its answers come as messages).
    #[tauri::command]
    pub async fn send_line(backend: State<'_, Backend>, line: String) -> Result<(), GuiError> {
        match &*backend {
            Backend::Run(core) => core.send(&line).await,
            Backend::Fleet(fleet) => fleet.requests.send(line).map_err(|_| GuiError::Stopped),
        }
    }
}

/// `builder` with `core` managed and the commands registered (the real
/// app adds the window and the notification plugin; tests use a mock runtime).
pub fn with_core<R: Runtime>(builder: tauri::Builder<R>, core: Core) -> tauri::Builder<R> {
    with_backend(builder, Backend::Run(Box::new(core)))
}

/// `builder` with the fleet window's core managed and the commands registered.
pub fn with_fleet<R: Runtime>(builder: tauri::Builder<R>, core: FleetCore) -> tauri::Builder<R> {
    with_backend(builder, Backend::Fleet(core))
}

fn with_backend<R: Runtime>(builder: tauri::Builder<R>, backend: Backend) -> tauri::Builder<R> {
    builder
        .manage(backend)
        .invoke_handler(tauri::generate_handler![
            commands::hello,
            commands::send_line
        ])
}

/// The fleet window (`robobrain-gui --fleet URL`): the page's fleet view
/// over the same IPC — `hello` gives `fleet_hello` and the board,
/// `send_line` takes the page's fleet requests (docs/web.md), and every
/// later message (the board, the opened robot's own messages, replies)
/// travels in [`MESSAGE_EVENT`]. No run of its own: a
/// [`FleetHub`](robobrain_core::fleet::hub::FleetHub) hears the robots.
pub struct FleetCore {
    hub: std::sync::Arc<robobrain_core::fleet::hub::FleetHub>,
    requests: tokio::sync::mpsc::UnboundedSender<String>,
}

impl FleetCore {
    /// Connects to the broker `mqtt` names (shown as `broker`) on Tauri's
    /// async runtime; returns the core and the window's page, whose
    /// requests arrive on the receiver ([`forward_fleet`] carries them out).
    pub fn start(
        mqtt: &robobrain_core::devices::mqtt::MqttConfig,
        broker: &str,
    ) -> (Self, FleetWindow) {
        use robobrain_core::fleet::hub::{FleetHub, FleetPage};
        let hub = std::sync::Arc::new(tauri::async_runtime::block_on(async {
            FleetHub::start(mqtt, broker)
        }));
        let (requests, lines) = tokio::sync::mpsc::unbounded_channel();
        let page = FleetPage::new(std::sync::Arc::clone(&hub), Role::Operator);
        (Self { hub, requests }, FleetWindow { page, lines })
    }
}

/// The window's page on the fleet and the requests it sends, for [`forward_fleet`].
pub struct FleetWindow {
    page: robobrain_core::fleet::hub::FleetPage,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// Carries out the fleet window's requests and forwards every message for
/// it; notifies the desktop of approvals arriving in the fleet's queue.
pub async fn forward_fleet<R: Runtime>(
    app: AppHandle<R>,
    window: FleetWindow,
    notify: impl Fn(&AppHandle<R>, &str, &str),
) {
    let FleetWindow {
        mut page,
        mut lines,
    } = window;
    let mut known: std::collections::BTreeSet<(String, String)> = std::collections::BTreeSet::new();
    loop {
        let messages = tokio::select! {
            next = page.next() => {
                let Some(m) = next else {
                    let _ = app.emit(MESSAGE_EVENT, ServerMessage::closed());
                    return;
                };
                vec![m]
            }
            line = lines.recv() => match line {
                Some(line) => page.request(&line).await,
                None => return,
            },
        };
        for m in messages {
            if let ServerMessage::Fleet(board) = &m {
                let now: std::collections::BTreeSet<(String, String)> = board
                    .approvals
                    .iter()
                    .map(|a| (a.robot.clone(), a.approval.approval_id.clone()))
                    .collect();
                for a in &board.approvals {
                    if !known.contains(&(a.robot.clone(), a.approval.approval_id.clone())) {
                        notify(
                            &app,
                            &format!(
                                "robobrain: {} waits for approval {}",
                                a.robot, a.approval.approval_id
                            ),
                            &a.approval.reason,
                        );
                    }
                }
                known = now;
            }
            let _ = app.emit(MESSAGE_EVENT, m);
        }
    }
}

/// What an approval request says in a desktop notification, if `event` is one.
pub fn approval_notice(event: &Event) -> Option<(String, String)> {
    match &event.kind {
        EventKind::Approval {
            approval_id,
            status: ApprovalStatus::Requested,
            reason,
            ..
        } => Some((
            format!("robobrain: approval {approval_id} is waiting"),
            reason.clone(),
        )),
        _ => None,
    }
}

/// Forwards every event to the window as a message (a snapshot when the
/// window fell behind), and notifies the desktop of approvals waiting.
pub async fn forward<R: Runtime>(
    app: AppHandle<R>,
    mut events: Receiver<Event>,
    notify: impl Fn(&AppHandle<R>, &str, &str),
) {
    loop {
        let message = match events.recv().await {
            Ok(e) => {
                if let Some((title, body)) = approval_notice(&e) {
                    notify(&app, &title, &body);
                }
                ServerMessage::event(e)
            }
            Err(RecvError::Lagged(_)) => match &*app.state::<Backend>() {
                Backend::Run(core) => ServerMessage::snapshot(core.session.runtime().snapshot()),
                Backend::Fleet(_) => continue,
            },
            Err(RecvError::Closed) => {
                let _ = app.emit(MESSAGE_EVENT, ServerMessage::closed());
                return;
            }
        };
        let _ = app.emit(MESSAGE_EVENT, message);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tauri::ipc::{CallbackFn, InvokeBody};
    use tauri::test::{
        INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets,
    };
    use tauri::webview::InvokeRequest;

    use super::*;

    fn app() -> (tauri::App<MockRuntime>, tauri::WebviewWindow<MockRuntime>) {
        let mut config = Config {
            runs_dir: std::env::temp_dir().join(format!("rb-gui-{}", std::process::id())),
            ..Config::default()
        };
        config.speech.voice = robobrain_core::voice::VoiceChoice::Text;
        let (core, _events) = Core::start(&config, 1.0, None).unwrap();
        let app = with_core(mock_builder(), core)
            .build(mock_context(noop_assets()))
            .unwrap();
        let window = tauri::WebviewWindowBuilder::new(&app, "main", tauri::WebviewUrl::default())
            .build()
            .unwrap();
        (app, window)
    }

    fn invoke(
        window: &tauri::WebviewWindow<MockRuntime>,
        cmd: &str,
        body: Value,
    ) -> Result<Value, Value> {
        get_ipc_response(
            window,
            InvokeRequest {
                cmd: cmd.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                // Linux: the mock runtime wants the tauri:// scheme (BUILD-NOTES).
                url: "tauri://localhost".parse().unwrap(),
                body: InvokeBody::Json(body),
                headers: tauri::http::HeaderMap::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|b| b.deserialize::<Value>().unwrap())
    }

    /// The fleet window's IPC on a broker nobody listens on: the page's
    /// first messages and its requests are still answered.
    #[test]
    fn the_fleet_window_says_fleet_hello_and_takes_requests() {
        let mut mqtt = robobrain_core::devices::mqtt::MqttConfig::new("127.0.0.1", 1);
        mqtt.client_id = "gui-fleet-test".into();
        let (core, _window) = FleetCore::start(&mqtt, "mqtt://127.0.0.1:1");
        let app = with_fleet(mock_builder(), core)
            .build(mock_context(noop_assets()))
            .unwrap();
        let window = tauri::WebviewWindowBuilder::new(&app, "main", tauri::WebviewUrl::default())
            .build()
            .unwrap();
        let got = invoke(&window, "hello", json!({})).unwrap();
        assert_eq!(
            got[0],
            json!({"type": "fleet_hello", "role": "operator", "broker": "mqtt://127.0.0.1:1"})
        );
        assert_eq!(got[1]["type"], "fleet");
        assert_eq!(got[1]["robots"], json!([]));
        assert_eq!(
            invoke(
                &window,
                "send_line",
                json!({"line": "{\"op\":\"estop_all\"}"})
            ),
            Ok(Value::Null)
        );
    }

    #[test]
    fn hello_gives_the_page_its_first_messages() {
        let (_app, window) = app();
        let got = invoke(&window, "hello", json!({})).unwrap();
        assert_eq!(got[0]["type"], "hello");
        assert_eq!(got[0]["role"], "operator");
        assert_eq!(got[0]["map"]["name"], "apartment");
        assert_eq!(got[1]["type"], "snapshot");
        assert_eq!(got[1]["snapshot"]["world"], "apartment");
    }

    #[test]
    fn send_takes_operator_lines_and_a_bad_one_is_a_pinned_error() {
        let (_app, window) = app();
        assert_eq!(
            invoke(&window, "send_line", json!({"line": "去厨房"})),
            Ok(Value::Null)
        );
        assert_eq!(
            invoke(&window, "send_line", json!({"line": "{\"cmd\":\"estop\"}"})),
            Ok(Value::Null)
        );
        let err = invoke(&window, "send_line", json!({"line": "{\"cmd\":\"fly\"}"})).unwrap_err();
        assert_eq!(err["kind"], "bad_line");
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .starts_with("expected a command as JSON"),
            "{err}"
        );
        assert_eq!(
            serde_json::to_value(GuiError::Busy).unwrap(),
            json!({"kind": "busy", "message": "the brain is busy: try again"})
        );
        assert_eq!(
            serde_json::to_value(GuiError::Stopped).unwrap(),
            json!({"kind": "stopped", "message": "the brain has stopped"})
        );
    }
}
