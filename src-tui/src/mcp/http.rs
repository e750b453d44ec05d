//! The streamable HTTP transport of `robobrain mcp --http ADDR`: rmcp's
//! service under `/mcp` on axum, behind a bearer-token check. A loopback
//! address needs no token (one given is still checked); any other address
//! refuses to start without one. On loopback a request from a web page of
//! another origin is refused (403), by the web console's own rule
//! ([`origin_allowed`]): a site open in a browser on this machine cannot
//! call the robot's tools; and every request there, on any path, must
//! name this machine as its `Host` (`localhost`, `127.0.0.1`, `[::1]`), by
//! the web console's rule ([`local_host_only`]), so a site whose name points
//! at 127.0.0.1 (DNS rebinding) cannot either.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::web::access::{Denied, origin_allowed};
use crate::web::server::{HostGuard, local_host_only};

/// The path the MCP endpoint is served under.
pub const PATH: &str = "/mcp";
/// Largest request body accepted; a bigger one gets `413 Payload Too Large`.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Why `--http` may not serve as asked: a non-loopback address with no token.
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<()> {
    if token.is_some_and(str::is_empty) {
        anyhow::bail!("--token: the bearer token must not be empty");
    }
    if !addr.ip().is_loopback() && token.is_none() {
        anyhow::bail!(
            "--http {addr}: serving beyond this machine needs --token TOKEN (a bearer token clients must send)"
        );
    }
    Ok(())
}

/// A bound listener serving `server` until `shutdown` is cancelled.
pub struct HttpServer {
    /// The address it listens on (the port is the real one when 0 was asked for).
    pub addr: SocketAddr,
    listener: tokio::net::TcpListener,
    router: axum::Router,
    shutdown: CancellationToken,
}

impl HttpServer {
    /// Binds `addr` (after [`check_bind`]).
    pub async fn bind(
        server: McpServer,
        addr: SocketAddr,
        token: Option<String>,
        shutdown: CancellationToken,
    ) -> Result<Self> {
        check_bind(addr, token.as_deref())?;
        let mut config = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(MAX_BODY_BYTES)
            .with_cancellation_token(shutdown.child_token());
        if !addr.ip().is_loopback() {
            // DNS rebinding cannot reach past the bearer token, and remote
            // clients name this host however they reach it.
            config = config.disable_allowed_hosts();
        }
        let service: StreamableHttpService<McpServer, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(server.clone()), Arc::default(), config);
        let mut router = axum::Router::new().nest_service(PATH, service);
        if let Some(token) = token {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::new(token),
                bearer,
            ));
        }
        // Outermost: a foreign host, then a foreign page, is refused before anything else.
        router = router
            .layer(axum::middleware::from_fn_with_state(
                addr.ip().is_loopback(),
                same_origin,
            ))
            .layer(axum::middleware::from_fn_with_state(
                HostGuard {
                    loopback: addr.ip().is_loopback(),
                    face: "mcp",
                },
                local_host_only,
            ));
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let addr = listener.local_addr().context("the bound address")?;
        Ok(Self {
            addr,
            listener,
            router,
            shutdown,
        })
    }

    /// Serves until the shutdown token is cancelled.
    pub async fn serve(self) -> Result<()> {
        let shutdown = self.shutdown;
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
            .await
            .context("the MCP HTTP server")
    }
}

/// Refuses a request from a page of another origin when listening on loopback.
async fn same_origin(State(loopback): State<bool>, request: Request, next: Next) -> Response {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok());
    if origin_allowed(loopback, origin) {
        next.run(request).await
    } else {
        eprintln!("robobrain mcp: refused a request from origin {origin:?}");
        (StatusCode::FORBIDDEN, Denied::Origin.to_string()).into_response()
    }
}

async fn bearer(State(token): State<Arc<String>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required (Authorization: Bearer TOKEN)",
        )
            .into_response()
    }
}

/// Compares in time that does not depend on where the strings differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_serves_without_a_token() {
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let wide: SocketAddr = "0.0.0.0:7001".parse().unwrap();
        assert!(check_bind(local, None).is_ok());
        assert!(check_bind(wide, Some("s3cret")).is_ok());
        let e = check_bind(wide, None).unwrap_err().to_string();
        assert!(e.contains("needs --token"), "{e}");
        assert!(check_bind(local, Some("")).is_err());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
    }
}
