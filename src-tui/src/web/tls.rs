//! TLS for `robobrain serve` and its console client, with rustls (the
//! aws-lc-rs provider the workspace's other TLS already builds): the
//! server's certificate and key from PEM files (`serve --tls-cert FILE
//! --tls-key FILE`) and a listener that hands axum finished handshakes; the
//! client's trust — one CA from a PEM file (`tui --connect wss://… --ca
//! FILE`), else the system's roots.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls::crypto::{CryptoProvider, aws_lc_rs};
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// How long a client has to finish its TLS handshake; one that takes
/// longer is dropped, and the others are never held up by it.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read or parsed.
    #[error("cannot read the {what} in {}", path.display())]
    Pem {
        /// What was looked for: `certificate`, `private key`, `CA certificate`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: pem::Error,
    },
    /// The file holds no certificate.
    #[error("{} holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// rustls refused the certificate, the key or the CA.
    #[error("{what}: {source}")]
    Rustls {
        /// What was being set up.
        what: String,
        /// rustls' reason.
        source: rustls::Error,
    },
    /// No CA given and the system has no root certificates to trust.
    #[error(
        "no CA to trust: the system has no root certificates; give the server's CA with --ca FILE"
    )]
    NoRoots,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(aws_lc_rs::default_provider())
}

fn rustls_error(what: impl Into<String>) -> impl FnOnce(rustls::Error) -> TlsError {
    let what = what.into();
    move |source| TlsError::Rustls { what, source }
}

/// The certificates in the PEM file `path` (at least one).
fn certificates(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |source| TlsError::Pem {
        what,
        path: path.to_path_buf(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The server side: the certificate chain in `cert` (PEM, the server's own
/// first) and its private key in `key` (PEM: PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = certificates(cert, "certificate")?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|source| TlsError::Pem {
        what: "private key",
        path: key.to_path_buf(),
        source,
    })?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(rustls_error("TLS protocol versions"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(rustls_error(format!(
            "{} and {} are not a certificate and its key",
            cert.display(),
            key.display()
        )))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The client side: trusts only the CA in `ca` (PEM) when given, else the
/// system's root certificates.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = RootCertStore::empty();
    if let Some(ca) = ca {
        for cert in certificates(ca, "CA certificate")? {
            roots
                .add(cert)
                .map_err(rustls_error(format!("--ca {}", ca.display())))?;
        }
    } else {
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        if roots.is_empty() {
            return Err(TlsError::NoRoots);
        }
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(rustls_error("TLS protocol versions"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A connector for [`client_config`].
pub fn connector(config: Arc<ClientConfig>) -> TlsConnector {
    TlsConnector::from(config)
}

/// A TCP listener whose connections arrive with their TLS handshake done.
/// Each handshake runs in a task of its own, within [`HANDSHAKE_TIMEOUT`],
/// so a client that never finishes one holds up nobody.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `listener` with `config`; `face` (`serve`) names
    /// the server in what it says on stderr about a failed handshake.
    pub fn new(
        listener: TcpListener,
        config: Arc<ServerConfig>,
        face: &'static str,
    ) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let (done, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let accepting = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, say: wait, then go on.
                        eprintln!("robobrain {face}: cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = done.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => {
                            eprintln!(
                                "robobrain {face}: the TLS handshake from {peer} failed: {e}"
                            );
                        }
                        Err(_) => eprintln!(
                            "robobrain {face}: {peer} did not finish its TLS handshake within {} s",
                            HANDSHAKE_TIMEOUT.as_secs()
                        ),
                    }
                });
            }
        });
        Ok(Self {
            ready,
            addr,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task is gone (it only ends when aborted): no more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_certificate_and_key_files_are_named() {
        let dir = std::env::temp_dir().join(format!("robobrain-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = server_config(&missing, &missing).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot read the certificate in {}", missing.display())
        );
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not PEM at all\n").unwrap();
        let e = server_config(&empty, &missing).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{} holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)",
                empty.display()
            )
        );
        let e = client_config(Some(&empty)).unwrap_err();
        assert!(e.to_string().contains("holds no certificate"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
