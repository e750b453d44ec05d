//! Where the console's run is: in this process ([`Local`], the session's
//! runtime over channels) or served elsewhere ([`Remote`], `robobrain serve`
//! over a WebSocket). Both speak the same protocol — snapshots, events in
//! `seq` order, commands — so the console's loop is one loop over a
//! [`Transport`]; a remote face differs from an in-process one only in how
//! the messages travel.

use std::future::Future;

use futures_util::{SinkExt, StreamExt};
use robobrain_core::protocol::{Command, Event, Hello, ServerMessage, Snapshot};
use robobrain_core::session::Session;
use thiserror::Error;
use tokio::net::TcpStream;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How often a remote console asks for a fresh snapshot (ms): the frame
/// period's order, so it paints as often as an in-process one.
pub const REMOTE_SNAPSHOT_MS: u64 = 100;

/// What arrives from the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// An event, in `seq` order.
    Event(Box<Event>),
    /// The whole state.
    Snapshot(Box<Snapshot>),
    /// This many events were skipped (the console fell behind); the next
    /// snapshot repaints the state.
    Lagged(u64),
    /// Something the operator should read: a command refused or not sent.
    Notice(String),
    /// The run has gone: why.
    Closed(String),
}

/// A run as the console sees it.
pub trait Transport {
    /// The next thing from the run.
    fn recv(&mut self) -> impl Future<Output = Incoming>;

    /// The state now, when the transport can read it without waiting (in
    /// process); `None` when snapshots arrive as [`Incoming::Snapshot`].
    fn snapshot(&self) -> Option<Snapshot>;

    /// Sends a command; why it could not go, when it could not.
    fn send(&mut self, command: Command) -> impl Future<Output = Result<(), String>>;
}

/// The run in this process.
pub struct Local {
    /// The run.
    pub session: Session,
    events: broadcast::Receiver<Event>,
}

impl Local {
    /// The console's side of `session`: every event from the first.
    pub fn new(mut session: Session) -> Self {
        let events = session.take_events();
        Self { session, events }
    }
}

impl Transport for Local {
    async fn recv(&mut self) -> Incoming {
        match self.events.recv().await {
            Ok(event) => Incoming::Event(Box::new(event)),
            Err(RecvError::Lagged(n)) => Incoming::Lagged(n),
            Err(RecvError::Closed) => Incoming::Closed("the brain stopped".into()),
        }
    }

    fn snapshot(&self) -> Option<Snapshot> {
        Some(self.session.runtime().snapshot())
    }

    async fn send(&mut self, command: Command) -> Result<(), String> {
        self.session
            .runtime()
            .send(command)
            .await
            .map_err(|e| e.to_string())
    }
}

/// Why a remote run could not be reached.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not `ws://HOST:PORT[/ws][?token=…]`.
    #[error("--connect {url}: expected ws://HOST:PORT[?token=…] ({why})")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The server could not be reached, or refused the connection.
    #[error("cannot connect to {url}: {source}")]
    Connect {
        /// Where.
        url: String,
        /// Why.
        source: Box<tokio_tungstenite::tungstenite::Error>,
    },
    /// The server did not begin with `hello` and a snapshot.
    #[error("{url} is not a robobrain serve: {why}")]
    Protocol {
        /// Where.
        url: String,
        /// What came instead.
        why: String,
    },
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A run served by `robobrain serve`, over its WebSocket.
pub struct Remote {
    socket: Socket,
    url: String,
}

/// What a remote run gave first: its `hello` and its state.
pub struct Greeting {
    /// The `hello` frame: role, world, skills, what the run is made of.
    pub hello: Hello,
    /// The first snapshot.
    pub snapshot: Snapshot,
}

impl Remote {
    /// Connects to `url` (`ws://HOST:PORT`, optionally with the `/ws` path
    /// and `?token=…`, `?role=viewer`) and reads the `hello` and the first
    /// snapshot; the server is asked for a snapshot every
    /// [`REMOTE_SNAPSHOT_MS`] while the run moves.
    pub async fn connect(url: &str) -> Result<(Self, Greeting), ConnectError> {
        let endpoint = endpoint(url)?;
        let (mut socket, _) = tokio_tungstenite::connect_async(endpoint.as_str())
            .await
            .map_err(|e| ConnectError::Connect {
                url: url.to_string(),
                source: Box::new(e),
            })?;
        let protocol = |why: String| ConnectError::Protocol {
            url: url.to_string(),
            why,
        };
        let hello = match next_message(&mut socket).await {
            Some(Ok(ServerMessage::Hello(hello))) => *hello,
            Some(Ok(other)) => return Err(protocol(format!("it began with {other:?}"))),
            Some(Err(why)) => return Err(protocol(why)),
            None => return Err(protocol("it closed the connection".into())),
        };
        let snapshot = match next_message(&mut socket).await {
            Some(Ok(ServerMessage::Snapshot { snapshot })) => *snapshot,
            Some(Ok(other)) => return Err(protocol(format!("no snapshot after hello: {other:?}"))),
            Some(Err(why)) => return Err(protocol(why)),
            None => return Err(protocol("it closed the connection".into())),
        };
        Ok((
            Self {
                socket,
                url: url.to_string(),
            },
            Greeting { hello, snapshot },
        ))
    }

    /// The URL it was connected with.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The WebSocket endpoint of `url`: `/ws` when no path is given, the
/// query kept, and a snapshot asked for every [`REMOTE_SNAPSHOT_MS`].
fn endpoint(url: &str) -> Result<String, ConnectError> {
    let bad = |why: &str| ConnectError::Url {
        url: url.to_string(),
        why: why.to_string(),
    };
    let rest = url
        .strip_prefix("ws://")
        .ok_or_else(|| bad("only ws:// is supported"))?;
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if authority.is_empty() || !authority.contains(':') {
        return Err(bad("no HOST:PORT"));
    }
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let path = if path.is_empty() || path == "/" {
        "/ws"
    } else {
        path
    };
    let mut query: Vec<&str> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty() && !p.starts_with("snapshot_ms="))
        .collect();
    let refresh = format!("snapshot_ms={REMOTE_SNAPSHOT_MS}");
    query.push(&refresh);
    Ok(format!("ws://{authority}{path}?{}", query.join("&")))
}

/// The next protocol message on `socket`: `None` when it closed, an error
/// for a frame that is not one.
async fn next_message(socket: &mut Socket) -> Option<Result<ServerMessage, String>> {
    loop {
        match socket.next().await? {
            Ok(Message::Text(text)) => {
                return Some(
                    serde_json::from_str(&text)
                        .map_err(|e| format!("a frame that is not a message ({e}): {text:.200}")),
                );
            }
            Ok(Message::Close(_)) => return None,
            Ok(_) => {}
            Err(e) => return Some(Err(e.to_string())),
        }
    }
}

impl Transport for Remote {
    async fn recv(&mut self) -> Incoming {
        match next_message(&mut self.socket).await {
            Some(Ok(ServerMessage::Event { event })) => Incoming::Event(event),
            Some(Ok(ServerMessage::Snapshot { snapshot })) => Incoming::Snapshot(snapshot),
            Some(Ok(ServerMessage::Refused { reason })) => {
                Incoming::Notice(format!("refused: {reason}"))
            }
            Some(Ok(ServerMessage::Error { message, .. })) => {
                Incoming::Notice(format!("not sent: {message}"))
            }
            Some(Ok(ServerMessage::Closed { reason })) => Incoming::Closed(reason),
            Some(Ok(ServerMessage::Hello(_))) => {
                Incoming::Notice("the server said hello again".into())
            }
            Some(Err(why)) => Incoming::Closed(format!("{}: {why}", self.url)),
            None => Incoming::Closed(format!("{} closed the connection", self.url)),
        }
    }

    fn snapshot(&self) -> Option<Snapshot> {
        None
    }

    async fn send(&mut self, command: Command) -> Result<(), String> {
        let line = serde_json::to_string(&command).map_err(|e| e.to_string())?;
        self.socket
            .send(Message::Text(line.into()))
            .await
            .map_err(|e| format!("{}: {e}", self.url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_urls_become_the_websocket_endpoint() {
        assert_eq!(
            endpoint("ws://127.0.0.1:7878").unwrap(),
            "ws://127.0.0.1:7878/ws?snapshot_ms=100"
        );
        assert_eq!(
            endpoint("ws://host:1/?token=abc").unwrap(),
            "ws://host:1/ws?token=abc&snapshot_ms=100"
        );
        assert_eq!(
            endpoint("ws://host:1/ws?token=t&role=viewer&snapshot_ms=5").unwrap(),
            "ws://host:1/ws?token=t&role=viewer&snapshot_ms=100"
        );
        for bad in ["http://host:1", "ws://", "ws://host", "wss://host:1"] {
            let e = endpoint(bad).unwrap_err().to_string();
            assert!(e.contains("expected ws://HOST:PORT"), "{bad}: {e}");
        }
    }
}
