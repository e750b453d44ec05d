//! `robobrain serve --fleet`: the same page for a whole fleet on an MQTT
//! broker. No run of its own: a [`FleetHub`] hears every robot, and each
//! WebSocket is a [`FleetPage`] — `fleet_hello`, the board whenever it
//! changes, the opened robot's own messages — whose requests (open a
//! robot, an operator line for one, E-stop all) it carries out. `/metrics`
//! is the board's, `/healthz` the broker link's, `/api/fleet` the board.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;
use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use robobrain_core::fleet::board::FleetMessage;
use robobrain_core::fleet::hub::{FleetHub, FleetPage};
use serde::Deserialize;
use serde_json::json;

use super::access::Access;
use super::server::{MAX_WS_MESSAGE, WebServer, admit_to, asset, file};

/// What every fleet page shares: the hub and the access rules.
pub struct FleetServed {
    /// The fleet.
    pub hub: Arc<FleetHub>,
    /// Tokens and roles.
    pub access: Access,
}

/// Query parameters of `/ws` and `/api/*`.
#[derive(Debug, Default, Deserialize)]
struct Params {
    token: Option<String>,
    role: Option<String>,
}

impl WebServer {
    /// Binds `addr` for the fleet `served`.
    pub async fn bind_fleet(served: Arc<FleetServed>, addr: SocketAddr) -> Result<Self> {
        let router = Router::new()
            .route("/", get(|| async { asset("index.html") }))
            .route("/{file}", get(file))
            .route("/api/{what}", get(api))
            .route("/metrics", get(metrics))
            .route("/healthz", get(healthz))
            .route("/ws", get(socket))
            .with_state(served);
        Self::listen(addr, router).await
    }
}

fn admit(
    served: &FleetServed,
    p: &Params,
    headers: &HeaderMap,
) -> Result<robobrain_core::protocol::Role, (StatusCode, String)> {
    admit_to(
        &served.access,
        p.token.as_deref(),
        p.role.as_deref(),
        headers,
    )
}

/// `/api/fleet`: the board as JSON.
async fn api(
    State(served): State<Arc<FleetServed>>,
    axum::extract::Path(what): axum::extract::Path<String>,
    Query(p): Query<Params>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = admit(&served, &p, &headers) {
        return refused.into_response();
    }
    match what.as_str() {
        "fleet" => axum::Json(&*served.hub.board()).into_response(),
        _ => (
            StatusCode::NOT_FOUND,
            format!("no such API: {what} (serve --fleet has /api/fleet)"),
        )
            .into_response(),
    }
}

/// `/metrics`: the board in Prometheus' text format, admitted as `/api` is.
async fn metrics(
    State(served): State<Arc<FleetServed>>,
    Query(p): Query<Params>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = admit(&served, &p, &headers) {
        return refused.into_response();
    }
    (
        [(header::CONTENT_TYPE, robobrain_core::metrics::CONTENT_TYPE)],
        served.hub.board().metrics(),
    )
        .into_response()
}

/// `/healthz`: 200 while the broker link is up, 503 otherwise; no token.
async fn healthz(State(served): State<Arc<FleetServed>>) -> Response {
    let board = served.hub.board();
    let status = if board.connected {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if board.connected { "ok" } else { "unavailable" },
        "broker": if board.connected { "up" } else { "down" },
        "robots": board.robots.len(),
        "online": board.online(),
    });
    (status, axum::Json(body)).into_response()
}

async fn socket(
    State(served): State<Arc<FleetServed>>,
    Query(p): Query<Params>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    match admit(&served, &p, &headers) {
        Ok(role) => {
            let page = FleetPage::new(Arc::clone(&served.hub), role);
            upgrade
                .max_message_size(MAX_WS_MESSAGE)
                .max_frame_size(MAX_WS_MESSAGE)
                .on_upgrade(move |ws| connection(page, ws))
        }
        Err(refused) => refused.into_response(),
    }
}

async fn send(ws: &mut WebSocket, m: &FleetMessage) -> bool {
    ws.send(Message::Text(m.to_text().into())).await.is_ok()
}

/// One fleet page's connection, until either side leaves.
async fn connection(mut page: FleetPage, mut ws: WebSocket) {
    for m in page.greeting() {
        if !send(&mut ws, &m).await {
            return;
        }
    }
    loop {
        tokio::select! {
            next = page.next() => {
                let Some(m) = next else {
                    let closed = FleetMessage::Closed { reason: "the fleet connection has stopped".into() };
                    let _ = send(&mut ws, &closed).await;
                    return;
                };
                if !send(&mut ws, &m).await {
                    return;
                }
            }
            incoming = ws.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    for m in page.request(&text).await {
                        if !send(&mut ws, &m).await {
                            return;
                        }
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    let m = FleetMessage::error("invalid_utf8", "a binary frame; expected a fleet request as JSON text");
                    if !send(&mut ws, &m).await {
                        return;
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
