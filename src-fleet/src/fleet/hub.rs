//! The fleet for pages: one [`FleetClient`] on the broker, its
//! [`FleetView`] kept by one task ([`FleetHub`]), and each page's view onto
//! it ([`FleetPage`]): the board whenever it changes, the messages of the
//! robot the page opened, and the page's requests (open a robot, send it an
//! operator line, E-stop every robot) carried out. `serve --fleet` and the
//! desktop app's fleet window only move [`ServerMessage`]s and requests
//! over their transports.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::board::{FleetBoard, FleetRequest};
use super::view::{ClientEvent, FleetView, SILENT_AFTER};
use super::{FleetClient, FleetError};
use crate::devices::mqtt::MqttConfig;
use crate::protocol::line::{Line, parse_line};
use crate::protocol::{Command, Hello, Role, ServerMessage, Snapshot};

/// The board is worked out again at most this often while robots report.
pub const BOARD_EVERY: Duration = Duration::from_millis(100);

/// How often the hub looks for robots gone silent ([`SILENT_AFTER`]).
const SILENCE_EVERY: Duration = Duration::from_millis(250);

/// Messages of every robot kept for pages that fall behind.
const MESSAGES: usize = 4096;

/// A robot's messages, as the hub hands them to pages.
#[derive(Debug, Clone)]
struct Heard {
    robot: String,
    message: HeardKind,
}

#[derive(Debug, Clone)]
enum HeardKind {
    /// `hello`, `snapshot` or `event`: for the pages that opened the robot.
    Robot(Box<ServerMessage>),
    /// A reply: for every page.
    Reply(super::bridge::Reply),
}

/// What a page asks of the hub.
enum Call {
    Send {
        robot: String,
        command: Command,
        done: oneshot::Sender<Result<String, FleetError>>,
    },
    SendAll {
        command: Command,
        done: oneshot::Sender<Result<Vec<(String, String)>, FleetError>>,
    },
    Robot {
        robot: String,
        done: oneshot::Sender<Option<(Option<Hello>, Option<Snapshot>)>>,
    },
}

/// The fleet as pages see it: one broker connection and one task that owns
/// what it heard. Dropping it stops the task (and the connection).
pub struct FleetHub {
    broker: String,
    calls: mpsc::Sender<Call>,
    board: watch::Receiver<Arc<FleetBoard>>,
    heard: broadcast::Sender<Arc<Heard>>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for FleetHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetHub")
            .field("broker", &self.broker)
            .finish_non_exhaustive()
    }
}

impl FleetHub {
    /// Connects to the broker `mqtt` names (shown as `broker`), on the
    /// current tokio runtime.
    pub fn start(mqtt: &MqttConfig, broker: &str) -> Self {
        let client = FleetClient::connect(mqtt);
        let (calls, calls_rx) = mpsc::channel(256);
        let (board_tx, board) = watch::channel(Arc::new(FleetBoard {
            broker: broker.to_string(),
            ..FleetBoard::default()
        }));
        let (heard, _) = broadcast::channel(MESSAGES);
        let task = tokio::spawn(run(
            client,
            broker.to_string(),
            calls_rx,
            board_tx,
            heard.clone(),
        ));
        Self {
            broker: broker.to_string(),
            calls,
            board,
            heard,
            task,
        }
    }

    /// Where the broker is.
    pub fn broker(&self) -> &str {
        &self.broker
    }

    /// The board as it is now.
    pub fn board(&self) -> Arc<FleetBoard> {
        Arc::clone(&self.board.borrow())
    }

    /// Sends `command` to `robot`; the command's id.
    pub async fn send(&self, robot: &str, command: Command) -> Result<String, FleetError> {
        let (done, answer) = oneshot::channel();
        self.call(Call::Send {
            robot: robot.to_string(),
            command,
            done,
        })
        .await?;
        answer.await.map_err(|_| FleetError::Stopped)?
    }

    /// Sends `command` to every robot heard of; each robot and its command's id.
    pub async fn send_all(&self, command: Command) -> Result<Vec<(String, String)>, FleetError> {
        let (done, answer) = oneshot::channel();
        self.call(Call::SendAll { command, done }).await?;
        answer.await.map_err(|_| FleetError::Stopped)?
    }

    /// A robot's `hello` and newest snapshot; `None` for a robot not heard of.
    async fn robot(
        &self,
        robot: &str,
    ) -> Result<Option<(Option<Hello>, Option<Snapshot>)>, FleetError> {
        let (done, answer) = oneshot::channel();
        self.call(Call::Robot {
            robot: robot.to_string(),
            done,
        })
        .await?;
        answer.await.map_err(|_| FleetError::Stopped)
    }

    async fn call(&self, call: Call) -> Result<(), FleetError> {
        self.calls.send(call).await.map_err(|_| FleetError::Stopped)
    }
}

impl Drop for FleetHub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The hub's task: folds what the client hears into the view, hands the
/// robots' messages to the pages, answers their calls, and works the board
/// out again (at most every [`BOARD_EVERY`]) when something changed.
async fn run(
    mut client: FleetClient,
    broker: String,
    mut calls: mpsc::Receiver<Call>,
    board: watch::Sender<Arc<FleetBoard>>,
    heard: broadcast::Sender<Arc<Heard>>,
) {
    enum Input {
        Heard(Result<ClientEvent, FleetError>),
        Call(Option<Call>),
        Board,
        Silence,
    }
    let mut view = FleetView::default();
    let mut connected = false;
    let mut dirty = true;
    let mut every = tokio::time::interval(BOARD_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut silence = tokio::time::interval(SILENCE_EVERY);
    silence.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let started = tokio::time::Instant::now();
    let now_ms = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    loop {
        let input = tokio::select! {
            event = client.recv() => Input::Heard(event),
            call = calls.recv() => Input::Call(call),
            _ = every.tick(), if dirty => Input::Board,
            _ = silence.tick() => Input::Silence,
        };
        match input {
            // Every hub handle is gone, or the client stopped.
            Input::Call(None) | Input::Heard(Err(_)) => break,
            Input::Silence => dirty |= view.mark_silent(now_ms(), SILENT_AFTER),
            Input::Board => {
                dirty = false;
                let now = super::board::board(&view, &broker, connected);
                board.send_if_modified(|old| {
                    let changed = **old != now;
                    if changed {
                        *old = Arc::new(now);
                    }
                    changed
                });
            }
            Input::Call(Some(call)) => answer(call, &mut client, &view),
            Input::Heard(Ok(event)) => {
                view.apply_at(&event, now_ms());
                let message = match event {
                    ClientEvent::Connected => {
                        connected = true;
                        None
                    }
                    ClientEvent::Disconnected(_) => {
                        connected = false;
                        None
                    }
                    ClientEvent::Hello { robot, hello } => Some((
                        robot,
                        HeardKind::Robot(Box::new(ServerMessage::Hello(hello))),
                    )),
                    ClientEvent::Snapshot { robot, snapshot } => Some((
                        robot,
                        HeardKind::Robot(Box::new(ServerMessage::Snapshot { snapshot })),
                    )),
                    ClientEvent::Event { robot, event } => Some((
                        robot,
                        HeardKind::Robot(Box::new(ServerMessage::event(*event))),
                    )),
                    ClientEvent::Reply { robot, reply } => Some((robot, HeardKind::Reply(reply))),
                    ClientEvent::Connection { .. } | ClientEvent::Rejected { .. } => None,
                };
                dirty = true;
                if let Some((robot, message)) = message {
                    // No page listening is no error.
                    let _ = heard.send(Arc::new(Heard { robot, message }));
                }
            }
        }
    }
    client.close().await;
}

/// Carries out a page's call on the hub's client and view.
fn answer(call: Call, client: &mut FleetClient, view: &FleetView) {
    match call {
        Call::Send {
            robot,
            command,
            done,
        } => {
            let _ = done.send(client.send(&robot, command));
        }
        Call::SendAll { command, done } => {
            let robots: Vec<String> = view.robots().map(|r| r.id.clone()).collect();
            let sent = robots
                .into_iter()
                .map(|r| client.send(&r, command.clone()).map(|id| (r, id)))
                .collect();
            let _ = done.send(sent);
        }
        Call::Robot { robot, done } => {
            let _ = done.send(
                view.robot(&robot)
                    .map(|r| (r.hello.clone(), r.snapshot.clone())),
            );
        }
    }
}

/// A fleet page's first messages: `fleet_hello` (with `role`), then the board.
pub fn greeting(hub: &FleetHub, role: Role) -> Vec<ServerMessage> {
    vec![
        ServerMessage::FleetHello {
            role,
            broker: hub.broker.clone(),
        },
        ServerMessage::Fleet(Box::new((*hub.board()).clone())),
    ]
}

/// One page's view onto the hub: the board, the robot it opened, its requests.
pub struct FleetPage {
    hub: Arc<FleetHub>,
    role: Role,
    robot: Option<String>,
    board: watch::Receiver<Arc<FleetBoard>>,
    heard: broadcast::Receiver<Arc<Heard>>,
}

impl std::fmt::Debug for FleetPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetPage")
            .field("role", &self.role)
            .field("robot", &self.robot)
            .finish_non_exhaustive()
    }
}

impl FleetPage {
    /// A page on `hub` that may do what `role` allows.
    pub fn new(hub: Arc<FleetHub>, role: Role) -> Self {
        let board = hub.board.clone();
        let heard = hub.heard.subscribe();
        Self {
            hub,
            role,
            robot: None,
            board,
            heard,
        }
    }

    /// The robot this page opened.
    pub fn robot(&self) -> Option<&str> {
        self.robot.as_deref()
    }

    /// The page's first messages: `fleet_hello`, then the board.
    pub fn greeting(&mut self) -> Vec<ServerMessage> {
        self.board.mark_unchanged();
        greeting(&self.hub, self.role)
    }

    /// The next message for the page: the board when it changed, the
    /// opened robot's messages, every robot's replies. `None` once the hub
    /// has stopped. Cancel-safe.
    pub async fn next(&mut self) -> Option<ServerMessage> {
        loop {
            tokio::select! {
                changed = self.board.changed() => {
                    changed.ok()?;
                    let board = Arc::clone(&self.board.borrow_and_update());
                    return Some(ServerMessage::Fleet(Box::new((*board).clone())));
                }
                heard = self.heard.recv() => match heard {
                    Ok(heard) => {
                        if let Some(message) = self.translate(&heard) {
                            return Some(message);
                        }
                    }
                    // Too slow: the opened robot's state as it is now.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let Some(robot) = self.robot.clone() else { continue };
                        if let Ok(Some((_, Some(snapshot)))) = self.hub.robot(&robot).await {
                            return Some(ServerMessage::Robot {
                                robot,
                                message: Box::new(ServerMessage::snapshot(snapshot)),
                            });
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            }
        }
    }

    /// What the page is told of `heard`, if anything.
    fn translate(&self, heard: &Heard) -> Option<ServerMessage> {
        match &heard.message {
            HeardKind::Reply(reply) => Some(ServerMessage::Reply {
                robot: heard.robot.clone(),
                reply: reply.clone(),
            }),
            HeardKind::Robot(message) if self.robot.as_deref() == Some(heard.robot.as_str()) => {
                let message = match &**message {
                    ServerMessage::Hello(hello) => ServerMessage::Hello(Box::new(Hello {
                        role: self.role,
                        ..(**hello).clone()
                    })),
                    other => other.clone(),
                };
                Some(ServerMessage::Robot {
                    robot: heard.robot.clone(),
                    message: Box::new(message),
                })
            }
            HeardKind::Robot(_) => None,
        }
    }

    /// Carries out a request the page sent (as text); what to tell the page.
    pub async fn request(&mut self, text: &str) -> Vec<ServerMessage> {
        let request = match FleetRequest::parse(text) {
            Ok(r) => r,
            Err(refused) => return vec![ServerMessage::error(refused.code, refused.why)],
        };
        if !request.allowed(self.role) {
            // Worded as every door words it (`… may only watch: … was refused`).
            return vec![ServerMessage::Refused {
                reason: format!(
                    "this fleet page (a viewer) may only watch: `{}` was refused",
                    request.op()
                ),
            }];
        }
        let stopped = |e: FleetError| vec![ServerMessage::error("not_sent", e.to_string())];
        match request {
            FleetRequest::Open { robot } => match self.hub.robot(&robot).await {
                Err(e) => stopped(e),
                Ok(None) => vec![ServerMessage::error(
                    "unknown_robot",
                    format!("no robot {robot} on the broker"),
                )],
                Ok(Some((None, _))) => vec![ServerMessage::error(
                    "not_heard",
                    format!("{robot}: nothing heard from it yet"),
                )],
                Ok(Some((Some(hello), snapshot))) => {
                    self.robot = Some(robot.clone());
                    let hello = ServerMessage::Hello(Box::new(Hello {
                        role: self.role,
                        ..hello
                    }));
                    std::iter::once(hello)
                        .chain(snapshot.map(ServerMessage::snapshot))
                        .map(|m| ServerMessage::Robot {
                            robot: robot.clone(),
                            message: Box::new(m),
                        })
                        .collect()
                }
            },
            FleetRequest::Close => {
                self.robot = None;
                Vec::new()
            }
            FleetRequest::Send { robot, line } => match parse_line(&line) {
                Line::Command(command) => match self.hub.send(&robot, command).await {
                    Ok(id) => vec![ServerMessage::Sent { robot, id }],
                    Err(e) => stopped(e),
                },
                Line::Blank => Vec::new(),
                Line::Bad(refused) => vec![ServerMessage::error(refused.code, refused.why)],
            },
            FleetRequest::EstopAll => match self.hub.send_all(Command::EStop).await {
                Ok(sent) => sent
                    .into_iter()
                    .map(|(robot, id)| ServerMessage::Sent { robot, id })
                    .collect(),
                Err(e) => stopped(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Role;

    /// A hub on a broker nobody listens on: the client keeps trying, the
    /// page's requests are still answered.
    fn hub() -> Arc<FleetHub> {
        let mut mqtt = MqttConfig::new("127.0.0.1", 1);
        mqtt.client_id = "hub-test".into();
        Arc::new(FleetHub::start(&mqtt, "mqtt://127.0.0.1:1"))
    }

    #[tokio::test]
    async fn a_viewer_watches_and_its_commands_are_refused() {
        let mut page = FleetPage::new(hub(), Role::Viewer);
        let greeting = page.greeting();
        assert_eq!(
            greeting[0],
            ServerMessage::FleetHello {
                role: Role::Viewer,
                broker: "mqtt://127.0.0.1:1".into()
            }
        );
        assert!(
            matches!(&greeting[1], ServerMessage::Fleet(b) if b.robots.is_empty() && !b.connected)
        );
        for request in [
            r#"{"op":"estop_all"}"#,
            r#"{"op":"send","robot":"r1","line":"{\"cmd\":\"approve\",\"approval_id\":\"a1\"}"}"#,
        ] {
            let op = FleetRequest::parse(request).unwrap().op();
            assert_eq!(
                page.request(request).await,
                vec![ServerMessage::Refused {
                    reason: format!(
                        "this fleet page (a viewer) may only watch: `{op}` was refused"
                    )
                }],
                "{request}"
            );
        }
        assert_eq!(page.request(r#"{"op":"close"}"#).await, vec![]);
    }

    #[tokio::test]
    async fn bad_requests_and_unknown_robots_are_named() {
        let mut page = FleetPage::new(hub(), Role::Operator);
        let [ServerMessage::Error { code, .. }] = &page.request("{not json").await[..] else {
            panic!("not an error")
        };
        assert_eq!(code, "invalid_request");
        let [ServerMessage::Error { code, message }] =
            &page.request(r#"{"op":"open","robot":"ghost"}"#).await[..]
        else {
            panic!("not an error")
        };
        assert_eq!(
            (code.as_str(), message.as_str()),
            ("unknown_robot", "no robot ghost on the broker")
        );
        assert_eq!(page.robot(), None);
        let [ServerMessage::Error { code, .. }] = &page
            .request(r#"{"op":"send","robot":"r1","line":"{\"cmd\":\"fly\"}"}"#)
            .await[..]
        else {
            panic!("not an error")
        };
        assert_eq!(code, "invalid_command");
        // A command to a robot not heard yet goes out with an id (sent again until answered).
        let [ServerMessage::Sent { robot, id }] = &page
            .request(r#"{"op":"send","robot":"r1","line":"{\"cmd\":\"estop\"}"}"#)
            .await[..]
        else {
            panic!("not sent")
        };
        assert_eq!(robot, "r1");
        assert!(id.starts_with("hub-test-"), "{id}");
        assert_eq!(
            page.request(r#"{"op":"estop_all"}"#).await,
            vec![],
            "no robot heard of"
        );
    }
}
