//! Who may do what on a served page: an operator commands and approves; a
//! viewer only watches. Pure rules, no IO.

use std::net::SocketAddr;

pub use robobrain_core::protocol::Role;

/// Why a client was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// A token is required and none was given.
    #[error(
        "this server needs a token (Authorization: Bearer TOKEN, or ?token=… from a browser page)"
    )]
    NoToken,
    /// The token matches neither the operator's nor the viewers'.
    #[error("the token is not valid here")]
    BadToken,
    /// A web page from another site tried to connect.
    #[error("connections from pages of other origins are refused")]
    Origin,
}

/// The tokens a server was started with.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The operator's token (`--token`); none: anyone who can reach the
    /// server (on loopback, this machine) operates.
    pub token: Option<String>,
    /// The viewers' token (`--viewer-token`).
    pub viewer_token: Option<String>,
    /// Whether the server listens on loopback only.
    pub loopback: bool,
}

impl Access {
    /// The role of a client that presents `token` and asks to be a viewer
    /// (`want_viewer`), from a page at `origin` (the `Origin` header).
    pub fn role(
        &self,
        token: Option<&str>,
        want_viewer: bool,
        origin: Option<&str>,
    ) -> Result<Role, Denied> {
        if !origin_allowed(self.loopback, origin) {
            return Err(Denied::Origin);
        }
        let asked = if want_viewer {
            Role::Viewer
        } else {
            Role::Operator
        };
        match token {
            Some(t) if self.token.as_deref().is_some_and(|mine| same(mine, t)) => Ok(asked),
            Some(t) if self.viewer_token.as_deref().is_some_and(|v| same(v, t)) => Ok(Role::Viewer),
            Some(_) => Err(Denied::BadToken),
            None if self.token.is_none() => Ok(asked),
            None => Err(Denied::NoToken),
        }
    }
}

/// Refuses to serve beyond this machine without an operator token.
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<(), String> {
    if token.is_some_and(str::is_empty) {
        return Err("--token: the token must not be empty".into());
    }
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(format!(
            "--listen {addr}: serving beyond this machine needs --token TOKEN (pages then connect with ?token=TOKEN)"
        ));
    }
    Ok(())
}

/// Whether a request from a page at `origin` (the `Origin` header; none
/// from programs that are not browsers) may reach a server listening on
/// loopback only (`loopback`): only pages of this machine may, so a web
/// site open in the same browser cannot drive the robot. Beyond loopback
/// the token decides. `robobrain serve` and `robobrain mcp --http` share it.
pub fn origin_allowed(loopback: bool, origin: Option<&str>) -> bool {
    !loopback || origin.is_none_or(is_local_origin)
}

/// Why a request's `Host` was refused by a server on loopback.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostRefused {
    /// The request names no host at all.
    #[error(
        "the request has no Host header: on loopback this server answers only to Host localhost, 127.0.0.1 or [::1]"
    )]
    Missing,
    /// The request names another host: a web site whose name was pointed at
    /// 127.0.0.1 (DNS rebinding) would send its own name here.
    #[error(
        "Host `{0}` is not this machine: on loopback this server answers only to Host localhost, 127.0.0.1 or [::1] (any port), so a web site whose name points at 127.0.0.1 (DNS rebinding) cannot read it"
    )]
    Foreign(String),
}

/// Whether a request naming `host` (its `Host` header, `HOST[:PORT]`) may
/// reach a server listening on loopback only (`loopback`): only
/// `localhost`, `127.0.0.1` and `[::1]`, with or without a port. A page
/// whose site name an attacker points at 127.0.0.1 sends that name, and its
/// browser treats the answers as that site's (DNS rebinding); a token, the
/// guard beyond loopback, is not needed on loopback, so the name is checked
/// there. Beyond loopback every name is served (clients reach the server by
/// whatever name they know it by) and the token decides. `robobrain serve`
/// and `robobrain mcp --http` share it.
pub fn host_allowed(loopback: bool, host: Option<&str>) -> Result<(), HostRefused> {
    match host {
        _ if !loopback => Ok(()),
        None => Err(HostRefused::Missing),
        Some(h) if is_local_host(h) => Ok(()),
        Some(h) => Err(HostRefused::Foreign(h.chars().take(100).collect())),
    }
}

/// `localhost`, `127.0.0.1` or `[::1]`, each with an optional port.
fn is_local_host(host: &str) -> bool {
    let port_ok = |port: &str| {
        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok()
    };
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some(("::1", "")) => true,
            Some(("::1", after)) => after.strip_prefix(':').is_some_and(port_ok),
            _ => false,
        };
    }
    let name = match host.split_once(':') {
        Some((name, port)) if port_ok(port) => name,
        Some(_) => return false,
        None => host,
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1"
}

/// Pages served from this machine (or the desktop app's own scheme).
fn is_local_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .or_else(|| origin.strip_prefix("tauri://"));
    let Some(rest) = rest else {
        return false;
    };
    let host = if rest.starts_with('[') {
        rest.split(']').next().map(|h| format!("{h}]"))
    } else {
        rest.split(':').next().map(str::to_string)
    };
    matches!(
        host.as_deref(),
        Some("localhost" | "127.0.0.1" | "[::1]" | "tauri.localhost")
    )
}

/// Compares tokens without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Access {
        Access {
            loopback: true,
            ..Access::default()
        }
    }

    #[test]
    fn on_loopback_without_tokens_this_machine_operates_or_watches_as_asked() {
        let a = local();
        assert_eq!(a.role(None, false, None), Ok(Role::Operator));
        assert_eq!(
            a.role(None, true, Some("http://127.0.0.1:7878")),
            Ok(Role::Viewer)
        );
        assert_eq!(
            a.role(None, false, Some("http://localhost:7878")),
            Ok(Role::Operator)
        );
        assert_eq!(
            a.role(None, false, Some("https://evil.example")),
            Err(Denied::Origin),
            "another site's page cannot drive the robot through the browser"
        );
    }

    #[test]
    fn with_tokens_the_token_decides_the_role() {
        let a = Access {
            token: Some("op-secret".into()),
            viewer_token: Some("look".into()),
            loopback: false,
        };
        assert_eq!(a.role(Some("op-secret"), false, None), Ok(Role::Operator));
        assert_eq!(
            a.role(Some("look"), false, None),
            Ok(Role::Viewer),
            "a viewer cannot ask to operate"
        );
        assert_eq!(a.role(Some("guess"), false, None), Err(Denied::BadToken));
        assert_eq!(a.role(None, true, None), Err(Denied::NoToken));
    }

    #[test]
    fn on_loopback_only_this_machines_names_are_served() {
        for ok in [
            "localhost",
            "localhost:7878",
            "LocalHost:1",
            "127.0.0.1",
            "127.0.0.1:7878",
            "[::1]",
            "[::1]:7878",
        ] {
            assert_eq!(host_allowed(true, Some(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7878",
            "127.0.0.1.nip.io",
            "localhost.evil.example:7878",
            "127.0.0.2:7878",
            "0.0.0.0:7878",
            "localhost:",
            "localhost:99999",
            "localhost:80@evil.example",
            "[::1]x",
            "[::2]:7878",
            "",
        ] {
            assert_eq!(
                host_allowed(true, Some(bad)),
                Err(HostRefused::Foreign(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(host_allowed(true, None), Err(HostRefused::Missing));
        assert_eq!(host_allowed(false, Some("robot.example:7878")), Ok(()));
        assert_eq!(host_allowed(false, None), Ok(()));
    }

    #[test]
    fn serving_beyond_loopback_needs_a_token() {
        let open: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        assert!(
            check_bind(open, None)
                .unwrap_err()
                .contains("needs --token")
        );
        assert!(check_bind(open, Some("t")).is_ok());
        assert!(check_bind(local, None).is_ok());
        assert!(check_bind(local, Some("")).is_err());
    }
}
