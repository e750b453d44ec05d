//! Where the console's run is: in this process ([`Local`], the session's
//! runtime over channels) or served elsewhere ([`Remote`], `robobrain serve`
//! over a WebSocket). Both speak the same protocol — snapshots, events in
//! `seq` order, commands — so the console's loop is one loop over a
//! [`Transport`]; a remote face differs from an in-process one only in how
//! the messages travel.

use std::future::Future;
use std::path::PathBuf;

use futures_util::{SinkExt, StreamExt};
use robobrain_core::protocol::{Command, Event, Hello, Origin, ServerMessage, Snapshot};
use robobrain_core::session::Session;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;

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
            .send(command, Origin::console())
            .await
            .map_err(|e| e.to_string())
    }
}

/// How `tui --connect` reaches a served run, beyond its URL.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// The token (`ROBOBRAIN_TOKEN`, `--token-file`), sent as
    /// `Authorization: Bearer TOKEN`; a `token=` in the URL is sent the same
    /// way instead, and takes precedence.
    pub token: Option<String>,
    /// For `wss://`: the CA (PEM) the server's certificate must be signed
    /// by (`--ca FILE`); none: the system's root certificates.
    pub ca: Option<PathBuf>,
}

/// Why a remote run could not be reached.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not `ws[s]://HOST:PORT[/ws][?token=…]`.
    #[error("--connect {url}: expected ws://HOST:PORT or wss://HOST:PORT ({why})")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The CA could not be loaded.
    #[error("--ca")]
    Ca(#[source] crate::web::tls::TlsError),
    /// The TLS handshake failed: most often a certificate the client does
    /// not trust.
    #[error(
        "no TLS connection with {url} (a certificate signed by a CA of your own needs --ca FILE)"
    )]
    Tls {
        /// Where.
        url: String,
        /// Why (rustls' reason: an unknown issuer, a name that does not match …).
        source: std::io::Error,
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

/// What a WebSocket runs over: TCP, or TLS over TCP.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

type Socket = WebSocketStream<Box<dyn Io>>;

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
    /// Connects to `url` (`ws://HOST:PORT` or, over TLS, `wss://HOST:PORT`,
    /// optionally with the `/ws` path, `?role=viewer` and `?token=…`) and
    /// reads the `hello` and the first snapshot; the server is asked for a
    /// snapshot every [`REMOTE_SNAPSHOT_MS`] while the run moves. The token
    /// — the URL's, else `options`' — goes in an `Authorization: Bearer`
    /// header, never in the request's URL.
    pub async fn connect(
        url: &str,
        options: &ConnectOptions,
    ) -> Result<(Self, Greeting), ConnectError> {
        let endpoint = endpoint(url)?;
        let token = endpoint.token.as_ref().or(options.token.as_ref());
        let request = request(&endpoint, token.map(String::as_str))?;
        let failed = |e| ConnectError::Connect {
            url: endpoint.shown.clone(),
            source: Box::new(e),
        };
        let tcp = TcpStream::connect(endpoint.authority.as_str())
            .await
            .map_err(|e| failed(e.into()))?;
        let stream: Box<dyn Io> = if endpoint.tls {
            let config =
                crate::web::tls::client_config(options.ca.as_deref()).map_err(ConnectError::Ca)?;
            let name =
                ServerName::try_from(endpoint.host.clone()).map_err(|e| ConnectError::Url {
                    url: url.to_string(),
                    why: format!("{}: {e}", endpoint.host),
                })?;
            let tls = crate::web::tls::connector(config)
                .connect(name, tcp)
                .await
                .map_err(|source| ConnectError::Tls {
                    url: endpoint.shown.clone(),
                    source,
                })?;
            Box::new(tls)
        } else {
            Box::new(tcp)
        };
        let (mut socket, _) = tokio_tungstenite::client_async(request, stream)
            .await
            .map_err(failed)?;
        let protocol = |why: String| ConnectError::Protocol {
            url: endpoint.shown.clone(),
            why,
        };
        let hello = match next_message(&mut socket).await {
            Some(Ok(ServerMessage::Hello(hello))) => *hello,
            Some(Ok(ServerMessage::FleetHello { broker, .. })) => {
                return Err(protocol(format!(
                    "it serves a fleet (broker {broker}), not one run: open it in a browser, or \
                     watch the fleet with `robobrain fleet --broker {broker}` (docs/fleet.md)"
                )));
            }
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
                url: endpoint.shown,
            },
            Greeting { hello, snapshot },
        ))
    }

    /// The URL it was connected with, without its token.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// A `--connect` URL, taken apart.
#[derive(Debug, PartialEq)]
struct Endpoint {
    /// `wss://`.
    tls: bool,
    /// `HOST:PORT`, as given.
    authority: String,
    /// The host, without an IPv6 address's brackets: the name the
    /// server's certificate must carry.
    host: String,
    /// The WebSocket's URL: `/ws` when no path was given, the query kept
    /// but the token, and a snapshot asked for every [`REMOTE_SNAPSHOT_MS`].
    url: String,
    /// The URL as given, without the token: what the console shows.
    shown: String,
    /// The `token=` the URL carried.
    token: Option<String>,
}

fn endpoint(url: &str) -> Result<Endpoint, ConnectError> {
    let bad = |why: &str| ConnectError::Url {
        url: url.to_string(),
        why: why.to_string(),
    };
    let (tls, rest) = if let Some(rest) = url.strip_prefix("wss://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("ws://") {
        (false, rest)
    } else {
        return Err(bad("the URL must begin with ws:// or wss://"));
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => host,
        _ => return Err(bad("no HOST:PORT")),
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .to_string();
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let mut token = None;
    let mut kept: Vec<&str> = Vec::new();
    for param in query.into_iter().flat_map(|q| q.split('&')) {
        if let Some(t) = param.strip_prefix("token=") {
            token = Some(t.to_string());
        } else if !param.is_empty() {
            kept.push(param);
        }
    }
    let scheme = if tls { "wss" } else { "ws" };
    let with = |params: &[&str]| {
        if params.is_empty() {
            String::new()
        } else {
            format!("?{}", params.join("&"))
        }
    };
    let shown = format!("{scheme}://{authority}{path}{}", with(&kept));
    let ws_path = if path.is_empty() || path == "/" {
        "/ws"
    } else {
        path
    };
    kept.retain(|p| !p.starts_with("snapshot_ms="));
    let refresh = format!("snapshot_ms={REMOTE_SNAPSHOT_MS}");
    kept.push(&refresh);
    let url_out = format!("{scheme}://{authority}{ws_path}{}", with(&kept));
    Ok(Endpoint {
        tls,
        authority: authority.to_string(),
        host,
        url: url_out,
        shown,
        token,
    })
}

/// The WebSocket handshake's request for `endpoint`, the token (if any) in
/// its `Authorization` header (marked sensitive).
fn request(endpoint: &Endpoint, token: Option<&str>) -> Result<Request, ConnectError> {
    let mut request =
        endpoint
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| ConnectError::Url {
                url: endpoint.shown.clone(),
                why: e.to_string(),
            })?;
    if let Some(token) = token {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| ConnectError::Url {
                url: endpoint.shown.clone(),
                why: "the token has characters an HTTP header cannot carry".into(),
            })?;
        value.set_sensitive(true);
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    Ok(request)
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
            Some(Ok(ServerMessage::Event { event, .. })) => Incoming::Event(event),
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
            // A run's server never sends the fleet's frames.
            Some(Ok(
                m @ (ServerMessage::FleetHello { .. }
                | ServerMessage::Fleet(_)
                | ServerMessage::Robot { .. }
                | ServerMessage::Sent { .. }
                | ServerMessage::Reply { .. }),
            )) => Incoming::Notice(format!(
                "a fleet frame from a run's server, ignored: {m:.120?}"
            )),
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
        let url = |u: &str| endpoint(u).unwrap().url;
        assert_eq!(
            url("ws://127.0.0.1:7878"),
            "ws://127.0.0.1:7878/ws?snapshot_ms=100"
        );
        assert_eq!(
            url("ws://host:1/ws?role=viewer&snapshot_ms=5"),
            "ws://host:1/ws?role=viewer&snapshot_ms=100"
        );
        let tls = endpoint("wss://[::1]:7878/").unwrap();
        assert!(tls.tls);
        assert_eq!(tls.host, "::1");
        assert_eq!(tls.authority, "[::1]:7878");
        assert_eq!(tls.url, "wss://[::1]:7878/ws?snapshot_ms=100");
        for bad in [
            "http://host:1",
            "ws://",
            "ws://host",
            "wss://host:port",
            "ws://:1",
        ] {
            let e = endpoint(bad).unwrap_err().to_string();
            assert!(
                e.contains("expected ws://HOST:PORT or wss://HOST:PORT"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_token_travels_in_a_header_never_in_the_url() {
        let e = endpoint("wss://robot:7878/?token=s3cret&role=viewer").unwrap();
        assert_eq!(e.token.as_deref(), Some("s3cret"));
        assert_eq!(e.url, "wss://robot:7878/ws?role=viewer&snapshot_ms=100");
        assert_eq!(e.shown, "wss://robot:7878/?role=viewer");
        let r = request(&e, e.token.as_deref()).unwrap();
        assert!(!r.uri().to_string().contains("s3cret"), "{}", r.uri());
        let auth = &r.headers()[AUTHORIZATION];
        assert_eq!(auth.to_str().unwrap(), "Bearer s3cret");
        assert!(auth.is_sensitive());
        let plain = endpoint("ws://robot:7878").unwrap();
        assert!(
            request(&plain, None)
                .unwrap()
                .headers()
                .get(AUTHORIZATION)
                .is_none()
        );
        assert!(
            request(&plain, Some("bad\ntoken"))
                .unwrap_err()
                .to_string()
                .contains("cannot carry")
        );
    }
}
