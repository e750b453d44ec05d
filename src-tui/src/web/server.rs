//! The HTTP side of `robobrain serve`: the page (embedded), the map and the
//! snapshot as JSON, and the protocol over a WebSocket — `hello` (the role,
//! the map, the run), then a `snapshot`, then every `event`
//! ([`ServerMessage`]); commands come in as operator lines. A viewer that
//! falls behind gets a fresh snapshot instead of holding anything up; a
//! reconnecting page that says `since=SEQ` gets the events it missed (or a
//! snapshot when they are no longer kept); a face that paints from
//! snapshots (`robobrain tui --connect`) asks for one every `snapshot_ms`.
//! `/metrics` (Prometheus) and `/healthz` watch the run from outside.
//! On loopback every request must name this machine as its `Host`
//! ([`local_host_only`]); with a certificate ([`WebServer::with_tls`]) it
//! all goes over TLS.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use robobrain_core::protocol::line::{Line, parse_line};
use robobrain_core::protocol::{Door, Origin, ServerMessage};
use robobrain_core::runtime::RuntimeError;
use robobrain_core::session::Session;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::access::{self, Access, Denied, HostRefused, Role};
use super::assets;
use super::tls::TlsListener;

/// The biggest WebSocket message a connection reads at all (16 MiB): a
/// bigger one closes the connection (close code 1009). Anything over
/// [`MAX_LINE_BYTES`](robobrain_core::protocol::MAX_LINE_BYTES) is refused
/// with an `error` message before it is parsed.
pub const MAX_WS_MESSAGE: usize = 16 * 1024 * 1024;

/// The shortest period between snapshots a connection may ask for.
pub const MIN_SNAPSHOT_MS: u64 = 50;

/// What every connection shares: the run (its runtime, recent events,
/// map, skills and what it is made of) and the access rules.
pub struct Served {
    /// The run.
    pub session: Session,
    /// Tokens and roles.
    pub access: Access,
}

/// A bound listener serving the page and the protocol.
pub struct WebServer {
    /// The address it listens on (the real port when 0 was asked for).
    pub addr: SocketAddr,
    listener: tokio::net::TcpListener,
    router: Router,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
}

/// Query parameters of `/ws`, `/api/*` and `/metrics` (a fleet reads the
/// token and the role alone).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Params {
    token: Option<String>,
    role: Option<String>,
    since: Option<u64>,
    /// The thread `since` belongs to: a page that saw another run gets a snapshot.
    thread: Option<String>,
    /// Send a fresh snapshot this often (ms, at least [`MIN_SNAPSHOT_MS`])
    /// while the run moves: for a face that paints from snapshots.
    snapshot_ms: Option<u64>,
}

impl WebServer {
    /// Binds `addr` for `served`.
    pub async fn bind(served: Arc<Served>, addr: SocketAddr) -> Result<Self> {
        Self::listen(addr, router(served)).await
    }

    /// Binds `addr` for `router`: the page's files, then what it serves;
    /// on loopback every route, the unknown ones too, answers only to this
    /// machine's names ([`local_host_only`]).
    pub(super) async fn listen(addr: SocketAddr, router: Router) -> Result<Self> {
        let router = router.layer(axum::middleware::from_fn_with_state(
            HostGuard {
                loopback: addr.ip().is_loopback(),
                face: "serve",
            },
            local_host_only,
        ));
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let addr = listener.local_addr()?;
        Ok(Self {
            addr,
            listener,
            router,
            tls: None,
        })
    }

    /// Serves HTTPS and `wss://` with `tls` (`serve --tls-cert --tls-key`)
    /// instead of plain HTTP; `None`: plain HTTP.
    #[must_use]
    pub fn with_tls(mut self, tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>) -> Self {
        self.tls = tls;
        self
    }

    /// `https` with TLS, else `http`: how its URL begins.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// Serves until `shutdown` is cancelled.
    pub async fn serve(self, shutdown: CancellationToken) -> Result<()> {
        let stop = async move { shutdown.cancelled().await };
        // Each connection's peer, for the origin of its commands.
        let app = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        match self.tls {
            Some(tls) => {
                // `tap_io` (doing nothing) is how axum gives a listener of
                // our own its peer address as connect info.
                let listener = TlsListener::new(self.listener, tls, "serve")?.tap_io(|_| {});
                axum::serve(listener, app)
                    .with_graceful_shutdown(stop)
                    .await
            }
            None => {
                axum::serve(self.listener, app)
                    .with_graceful_shutdown(stop)
                    .await
            }
        }
        .context("the web server")
    }
}

/// What [`local_host_only`] knows of its server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostGuard {
    /// Whether the server listens on loopback only.
    pub(crate) loopback: bool,
    /// Its name on stderr: `serve`, `mcp`.
    pub(crate) face: &'static str,
}

/// Refuses a request to a server on loopback whose `Host` is not
/// `localhost`, `127.0.0.1` or `[::1]` ([`access::host_allowed`]): 403 with
/// the reason (400 when it names no host), before any route — the page, the
/// API, `/metrics`, the WebSocket — sees it. A web site whose name an
/// attacker pointed at 127.0.0.1 (DNS rebinding) cannot read the robot.
pub(crate) async fn local_host_only(
    State(guard): State<HostGuard>,
    request: Request,
    next: Next,
) -> Response {
    let host = match request.headers().get(header::HOST) {
        // A header that is not text is no name of this machine.
        Some(value) => Some(value.to_str().unwrap_or("(not text)")),
        None => request
            .uri()
            .authority()
            .map(axum::http::uri::Authority::as_str),
    };
    match access::host_allowed(guard.loopback, host) {
        Ok(()) => next.run(request).await,
        Err(refused) => {
            eprintln!("robobrain {}: refused a request: {refused}", guard.face);
            let status = match refused {
                HostRefused::Missing => StatusCode::BAD_REQUEST,
                HostRefused::Foreign(_) => StatusCode::FORBIDDEN,
            };
            (status, refused.to_string()).into_response()
        }
    }
}

/// What a server serves behind the one [`router`]: a run ([`Served`]) or
/// a fleet (`FleetServed`). The router admits every request the same way
/// (the access rules, the token, the role) and asks the page for the rest.
pub(super) trait Page: Send + Sync + 'static {
    /// Tokens and roles.
    fn access(&self) -> &Access;
    /// `/api/{what}` for an admitted client: JSON, or 404 naming the APIs.
    fn api(&self, what: &str) -> Response;
    /// `/metrics` in Prometheus' text format.
    fn metrics(&self) -> String;
    /// `/healthz`: 200 while all is well, 503 otherwise; no token.
    fn health(&self) -> Response;
    /// `/ws` for a client admitted as `role`: the upgraded connection
    /// (`upgrade` already bounded to [`MAX_WS_MESSAGE`]).
    fn connect(
        self: Arc<Self>,
        role: Role,
        params: Params,
        extensions: &axum::http::Extensions,
        upgrade: WebSocketUpgrade,
    ) -> Response;
}

/// The one route table of `serve` and `serve --fleet`: the page's files,
/// `/api/*`, `/metrics`, `/healthz` and `/ws` over `served`.
pub(super) fn router<P: Page>(served: Arc<P>) -> Router {
    Router::new()
        .route("/", get(|| async { asset("index.html") }))
        .route("/{file}", get(file))
        .route("/api/{what}", get(api::<P>))
        .route("/metrics", get(metrics::<P>))
        .route("/healthz", get(healthz::<P>))
        .route("/ws", get(socket::<P>))
        .with_state(served)
}

async fn file(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    asset(&name)
}

/// An embedded file of the page, or 404.
pub(super) fn asset(name: &str) -> Response {
    match assets::get(name) {
        Some((body, mime)) => ([(header::CONTENT_TYPE, mime)], body).into_response(),
        None => (StatusCode::NOT_FOUND, format!("no such file: {name}")).into_response(),
    }
}

/// The role `params` and `headers` get under `access`, or the refusal
/// (status and why).
fn admit(
    access: &Access,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Role, (StatusCode, String)> {
    admit_to(
        access,
        params.token.as_deref(),
        params.role.as_deref(),
        headers,
    )
}

/// The role a request gets under `access` with this `token` (else the
/// bearer header's) and asked `role`, or the refusal (status and why).
fn admit_to(
    access: &Access,
    token: Option<&str>,
    role: Option<&str>,
    headers: &HeaderMap,
) -> Result<Role, (StatusCode, String)> {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let token = token.or(bearer);
    access
        .role(token, role == Some("viewer"), origin)
        .map_err(|e| {
            eprintln!("robobrain serve: refused a client: {e} (origin {origin:?})");
            let status = match e {
                Denied::NoToken | Denied::BadToken => StatusCode::UNAUTHORIZED,
                Denied::Origin => StatusCode::FORBIDDEN,
            };
            (status, e.to_string())
        })
}

/// `/api/*`: JSON for anyone admitted.
async fn api<P: Page>(
    State(served): State<Arc<P>>,
    axum::extract::Path(what): axum::extract::Path<String>,
    Query(p): Query<Params>,
    headers: HeaderMap,
) -> Response {
    match admit(served.access(), &p, &headers) {
        Ok(_) => served.api(&what),
        Err(refused) => refused.into_response(),
    }
}

/// `/metrics` in Prometheus' text format, for anyone admitted as `/api` is
/// (an operator's or a viewer's token when the server has one, as
/// `Authorization: Bearer …` or `?token=`).
async fn metrics<P: Page>(
    State(served): State<Arc<P>>,
    Query(p): Query<Params>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = admit(served.access(), &p, &headers) {
        return refused.into_response();
    }
    (
        [(header::CONTENT_TYPE, robobrain_core::metrics::CONTENT_TYPE)],
        served.metrics(),
    )
        .into_response()
}

/// `/healthz`: no token; it tells whether the run (or the broker link) is
/// alive, nothing of what it does.
async fn healthz<P: Page>(State(served): State<Arc<P>>) -> Response {
    served.health()
}

/// `/ws`: the page's connection, for anyone admitted.
async fn socket<P: Page>(
    State(served): State<Arc<P>>,
    Query(p): Query<Params>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
    upgrade: WebSocketUpgrade,
) -> Response {
    match admit(served.access(), &p, &headers) {
        // A frame over MAX_LINE_BYTES is answered with an error and the
        // connection goes on; only one over this hard bound closes it.
        Ok(role) => {
            let upgrade = upgrade
                .max_message_size(MAX_WS_MESSAGE)
                .max_frame_size(MAX_WS_MESSAGE);
            served.connect(role, p, &extensions, upgrade)
        }
        Err(refused) => refused.into_response(),
    }
}

impl Page for Served {
    fn access(&self) -> &Access {
        &self.access
    }

    /// `/api/map` and `/api/snapshot`.
    fn api(&self, what: &str) -> Response {
        match what {
            "map" => axum::Json(self.session.map()).into_response(),
            "snapshot" => axum::Json(self.session.runtime().snapshot()).into_response(),
            _ => (StatusCode::NOT_FOUND, format!("no such API: {what}")).into_response(),
        }
    }

    fn metrics(&self) -> String {
        self.session.metrics()
    }

    /// 200 and `{"status":"ok",…}` while the kernel thread runs and the
    /// robot link is up; 503 and `{"status":"unavailable",…}` otherwise.
    fn health(&self) -> Response {
        let health = self.session.health();
        let status = if health.is_ok() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        (status, axum::Json(health)).into_response()
    }

    fn connect(
        self: Arc<Self>,
        role: Role,
        p: Params,
        extensions: &axum::http::Extensions,
        upgrade: WebSocketUpgrade,
    ) -> Response {
        let origin = origin_of(role, extensions);
        let since = p
            .since
            .filter(|_| p.thread.as_deref() == Some(self.session.thread_id()));
        let every = p
            .snapshot_ms
            .map(|ms| Duration::from_millis(ms.max(MIN_SNAPSHOT_MS)));
        upgrade.on_upgrade(move |ws| connection(self, ws, origin, since, every))
    }
}

/// WebSocket connections so far: each gets the next number (`ws#3`).
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// Where a connection's commands come from: `web`, its number and peer,
/// and the role its token gave it.
fn origin_of(role: Role, extensions: &axum::http::Extensions) -> Origin {
    let n = CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1;
    let detail = match extensions.get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(peer)) => format!("ws#{n} {peer}"),
        None => format!("ws#{n}"),
    };
    Origin::new(Door::Web, detail).with_role(role)
}

fn message(m: &ServerMessage) -> Message {
    Message::Text(m.to_text().into())
}

/// A fresh snapshot; returns the last event seq it covers.
async fn send_snapshot(served: &Served, ws: &mut WebSocket) -> Option<u64> {
    let snapshot = served.session.runtime().snapshot();
    let seq = snapshot.seq;
    ws.send(message(&ServerMessage::snapshot(snapshot)))
        .await
        .ok()?;
    Some(seq)
}

/// One page's connection, until either side leaves.
async fn connection(
    served: Arc<Served>,
    mut ws: WebSocket,
    origin: Origin,
    since: Option<u64>,
    every: Option<Duration>,
) {
    // Subscribed first, so nothing between the catch-up and the live events is lost.
    let mut events = served.session.runtime().subscribe();
    let hello = ServerMessage::Hello(Box::new(served.session.hello(origin.role)));
    if ws.send(message(&hello)).await.is_err() {
        return;
    }
    let missed = since.and_then(|s| served.session.recent().since(s));
    let mut last = match (since, missed) {
        (Some(s), Some(missed)) => {
            let mut last = s;
            for e in &missed {
                if ws
                    .send(message(&ServerMessage::event(e.clone())))
                    .await
                    .is_err()
                {
                    return;
                }
                last = e.seq;
            }
            last
        }
        _ => match send_snapshot(&served, &mut ws).await {
            Some(seq) => seq,
            None => return,
        },
    };
    // A face that paints from snapshots gets one whenever the run has moved.
    let mut refresh = tokio::time::interval(every.unwrap_or(Duration::from_secs(3600)));
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut painted = (0, 0);
    loop {
        tokio::select! {
            _ = refresh.tick(), if every.is_some() => {
                let snapshot = served.session.runtime().snapshot();
                if (snapshot.step, snapshot.seq) != painted {
                    painted = (snapshot.step, snapshot.seq);
                    if ws.send(message(&ServerMessage::snapshot(snapshot))).await.is_err() {
                        return;
                    }
                }
            }
            event = events.recv() => match event {
                Ok(e) if e.seq <= last => {}
                Ok(e) => {
                    last = e.seq;
                    if ws.send(message(&ServerMessage::event(e))).await.is_err() {
                        return;
                    }
                }
                // Too slow to keep up: start again from the state as it is.
                Err(RecvError::Lagged(_)) => match send_snapshot(&served, &mut ws).await {
                    Some(seq) => last = seq,
                    None => return,
                },
                Err(RecvError::Closed) => {
                    let _ = ws.send(message(&ServerMessage::closed())).await;
                    return;
                }
            },
            incoming = ws.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Some(reply) = command(&served, &origin, &text).await
                        && ws.send(message(&reply)).await.is_err()
                    {
                        return;
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    let reply = ServerMessage::Error {
                        code: "invalid_utf8".into(),
                        message: "a binary frame; expected a text frame with a command as JSON or words to say".into(),
                    };
                    if ws.send(message(&reply)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
}

/// Carries out an operator line from a page; what to tell the page, if
/// anything. A viewer's command is refused by the runtime, with its origin
/// named (`refused`).
async fn command(served: &Served, origin: &Origin, text: &str) -> Option<ServerMessage> {
    match parse_line(text) {
        Line::Command(c) => served
            .session
            .runtime()
            .send(c, origin.clone())
            .await
            .err()
            .map(|e| match e {
                RuntimeError::WatchOnly { .. } => ServerMessage::Refused {
                    reason: e.to_string(),
                },
                e => ServerMessage::Error {
                    code: "not_sent".into(),
                    message: e.to_string(),
                },
            }),
        // A viewer sends nothing, not even a line that is no command.
        _ if !origin.may_act() => Some(ServerMessage::Refused {
            reason: format!("{origin} may only watch: nothing it sends is taken"),
        }),
        Line::Blank => None,
        Line::Bad(r) => Some(ServerMessage::Error {
            code: r.code.into(),
            message: r.why,
        }),
    }
}
