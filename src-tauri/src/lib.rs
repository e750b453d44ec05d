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
use robobrain_core::protocol::{ApprovalStatus, Event, EventKind, Role, ServerMessage};
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
            Line::Command(c) => Ok(self.session.runtime().send(c).await?),
            Line::Blank => Ok(()),
            Line::Bad(refused) => Err(GuiError::BadLine(refused.why)),
        }
    }
}

/// The IPC commands the page invokes. (A module of their own: Tauri's
/// command glue clashes with `pub` commands at a crate's root.)
pub mod commands {
    use super::{Core, GuiError};
    use robobrain_core::protocol::ServerMessage;
    use tauri::State;

    /// `hello`: the first messages of the page.
    #[tauri::command]
    #[allow(clippy::needless_pass_by_value)] // Tauri hands commands their state by value.
    pub fn hello(core: State<'_, Core>) -> Vec<ServerMessage> {
        core.greeting()
    }

    /// `send_line`: an operator line (a command as JSON, or words to say).
    #[tauri::command]
    pub async fn send_line(core: State<'_, Core>, line: String) -> Result<(), GuiError> {
        core.send(&line).await
    }
}

/// `builder` with `core` managed and the commands registered (the real
/// app adds the window and the notification plugin; tests use a mock runtime).
pub fn with_core<R: Runtime>(builder: tauri::Builder<R>, core: Core) -> tauri::Builder<R> {
    builder
        .manage(core)
        .invoke_handler(tauri::generate_handler![
            commands::hello,
            commands::send_line
        ])
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
            Err(RecvError::Lagged(_)) => {
                ServerMessage::snapshot(app.state::<Core>().session.runtime().snapshot())
            }
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
