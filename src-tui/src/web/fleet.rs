//! `robobrain serve --fleet`: the same page for a whole fleet on an MQTT
//! broker. No run of its own: a [`FleetHub`] hears every robot, and each
//! WebSocket is a [`FleetPage`] — `fleet_hello`, the board whenever it
//! changes, the opened robot's own messages — whose requests (open a
//! robot, an operator line for one, E-stop all) it carries out. `/metrics`
//! is the board's, `/healthz` the broker link's, `/api/fleet` the board:
//! the routes are a run's ([`router`]), over a [`Page`] that is the fleet.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use robobrain_core::fleet::hub::{FleetHub, FleetPage};
use robobrain_core::protocol::ServerMessage;
use serde_json::json;

use super::access::{Access, Role};
use super::server::{Page, Params, WebServer, router};

/// What every fleet page shares: the hub and the access rules.
pub struct FleetServed {
    /// The fleet.
    pub hub: Arc<FleetHub>,
    /// Tokens and roles.
    pub access: Access,
}

impl WebServer {
    /// Binds `addr` for the fleet `served`: the same routes as a run's
    /// ([`router`]).
    pub async fn bind_fleet(served: Arc<FleetServed>, addr: SocketAddr) -> Result<Self> {
        Self::listen(addr, router(served)).await
    }
}

impl Page for FleetServed {
    fn access(&self) -> &Access {
        &self.access
    }

    /// `/api/fleet`: the board as JSON.
    fn api(&self, what: &str) -> Response {
        match what {
            "fleet" => axum::Json(&*self.hub.board()).into_response(),
            _ => (
                StatusCode::NOT_FOUND,
                format!("no such API: {what} (serve --fleet has /api/fleet)"),
            )
                .into_response(),
        }
    }

    /// The board in Prometheus' text format.
    fn metrics(&self) -> String {
        robobrain_core::fleet::board::metrics(&self.hub.board())
    }

    /// 200 while the broker link is up, 503 otherwise.
    fn health(&self) -> Response {
        let board = self.hub.board();
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

    fn connect(
        self: Arc<Self>,
        role: Role,
        _params: Params,
        _extensions: &axum::http::Extensions,
        upgrade: WebSocketUpgrade,
    ) -> Response {
        let page = FleetPage::new(Arc::clone(&self.hub), role);
        upgrade.on_upgrade(move |ws| connection(page, ws))
    }
}

async fn send(ws: &mut WebSocket, m: &ServerMessage) -> bool {
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
                    let closed = ServerMessage::Closed { reason: "the fleet connection has stopped".into() };
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
                    let m = ServerMessage::error("invalid_utf8", "a binary frame; expected a fleet request as JSON text");
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
