//! Telling an outside service about an incident (seed 000 §4 "alert
//! service"): a JSON POST to `[alert] webhook` with retries. The POSTs run
//! on a thread of their own with a small tokio runtime, so the kernel never
//! waits on the network ([`crate::offload`]): [`WebhookWorker::send`] hands a delivery over and
//! [`WebhookWorker::finished`] gives back the ones that ended. Retries follow
//! the model client's policy ([`crate::llm::retry`]): connection errors,
//! timeouts, 429 and 5xx are tried again with exponential backoff (a
//! `Retry-After` is obeyed); any other status is final.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

use crate::config::AlertConfig;
use crate::llm::retry::{Backoff, Retryable, classify_status, parse_retry_after};
use crate::offload::Offload;
use crate::rng::SplitMix64;

/// A delivery that reached the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The final HTTP status (2xx).
    pub status: u16,
    /// Attempts made, the successful one included.
    pub attempts: u32,
}

/// Why a delivery failed for good.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The service answered with a status another try will not change.
    #[error("the webhook refused the incident with HTTP {status} after {attempts} attempt(s)")]
    Rejected {
        /// The status.
        status: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// Every attempt failed with a connection error, a timeout, 429 or 5xx.
    #[error("the webhook could not be reached after {attempts} attempt(s): {last}")]
    Unreachable {
        /// What the last attempt met.
        last: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The worker thread could not start or is gone.
    #[error("the webhook worker is not running: {0}")]
    Worker(String),
}

impl WebhookError {
    /// The skill error code for this failure (`rejected`, `unreachable`, `unavailable`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Rejected { .. } => "rejected",
            Self::Unreachable { .. } => "unreachable",
            Self::Worker(_) => "unavailable",
        }
    }
}

/// How a delivery ended.
pub type Outcome = Result<Delivered, WebhookError>;

/// POSTs JSON bodies to one URL off the kernel's thread; dropping it
/// abandons deliveries in flight.
pub struct WebhookWorker {
    http: reqwest::Client,
    url: String,
    backoff: Backoff,
    offload: Offload<Outcome>,
    keys: HashMap<u64, String>,
}

impl WebhookWorker {
    /// Starts the worker for `config.webhook` (an empty URL when none is set).
    pub fn spawn(config: &AlertConfig) -> Result<Self, WebhookError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs_f64(config.timeout_s))
            .build()
            .map_err(|e| WebhookError::Worker(e.to_string()))?;
        Ok(Self {
            http,
            url: config.webhook.clone().unwrap_or_default(),
            backoff: Backoff {
                max_retries: config.retries,
                base: Duration::from_millis(config.backoff_ms),
                max: Duration::from_millis(config.backoff_ms.saturating_mul(16)),
            },
            offload: Offload::spawn("robobrain-webhook")
                .map_err(|e| WebhookError::Worker(e.to_string()))?,
            keys: HashMap::new(),
        })
    }

    /// Starts delivering `body`; its outcome comes back under `key`.
    pub fn send(&mut self, key: &str, body: Value) -> Result<(), WebhookError> {
        let (http, url, backoff) = (self.http.clone(), self.url.clone(), self.backoff);
        let id = self
            .offload
            .submit(async move { post(&http, &url, &body, backoff).await });
        self.keys.insert(id, key.to_string());
        Ok(())
    }

    /// Deliveries that ended since the last call: `(key, outcome)`.
    pub fn finished(&mut self) -> Vec<(String, Outcome)> {
        self.offload
            .finished()
            .into_iter()
            .filter_map(|(id, outcome)| self.keys.remove(&id).map(|key| (key, outcome)))
            .collect()
    }

    /// Whether deliveries are still under way.
    pub fn is_busy(&self) -> bool {
        self.offload.is_busy()
    }
}

/// One delivery with its retries.
async fn post(http: &reqwest::Client, url: &str, body: &Value, backoff: Backoff) -> Outcome {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut jitter = SplitMix64::new(bytes.len() as u64);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let sent = http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::USER_AGENT, "robobrain")
            .body(bytes.clone())
            .send()
            .await;
        let (retry, last) = match sent {
            Ok(reply) => {
                let status = reply.status().as_u16();
                if reply.status().is_success() {
                    return Ok(Delivered { status, attempts });
                }
                let retry_after = reply
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_retry_after);
                match classify_status(status, retry_after) {
                    Retryable::Yes { retry_after } => (retry_after, format!("HTTP {status}")),
                    Retryable::No => return Err(WebhookError::Rejected { status, attempts }),
                }
            }
            Err(e) if e.is_timeout() => (None, "timed out".to_string()),
            Err(e) => (None, format!("connection failed ({e})")),
        };
        if attempts > backoff.max_retries {
            return Err(WebhookError::Unreachable { last, attempts });
        }
        let wait = backoff.delay(attempts - 1, retry, jitter.next_f64());
        tokio::time::sleep(wait).await;
    }
}

/// For tests (feature `test-utils`): a webhook receiver on loopback
/// answering with `statuses` in turn (the last
/// one from then on); returns its URL and the bodies it got.
#[cfg(any(test, feature = "test-utils"))]
#[allow(clippy::unwrap_used, clippy::missing_panics_doc)]
pub fn test_receiver(
    statuses: Vec<u16>,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    use axum::Router;
    use axum::http::StatusCode;
    use axum::routing::post;
    use serde_json::Value;
    use std::sync::{Arc, Mutex};

    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&got);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new().route(
                "/hook",
                post(move |body: axum::body::Bytes| {
                    let seen = Arc::clone(&seen);
                    let statuses = statuses.clone();
                    async move {
                        let mut seen = seen.lock().unwrap();
                        seen.push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                        let n = seen.len().min(statuses.len()) - 1;
                        StatusCode::from_u16(statuses[n]).unwrap()
                    }
                }),
            );
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (url, got)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(url: &str, retries: u32) -> AlertConfig {
        AlertConfig {
            webhook: Some(url.into()),
            retries,
            backoff_ms: 5,
            timeout_s: 2.0,
            ..AlertConfig::default()
        }
    }

    fn wait(worker: &mut WebhookWorker) -> (String, Outcome) {
        for _ in 0..500 {
            if let Some(end) = worker.finished().pop() {
                return end;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no outcome within 5 s");
    }

    #[test]
    fn a_server_error_is_retried_until_the_incident_is_delivered() {
        let (url, got) = test_receiver(vec![503, 503, 200]);
        let mut worker = WebhookWorker::spawn(&config(&url, 3)).unwrap();
        worker
            .send("g1", json!({"incident": {"id": "i1"}}))
            .unwrap();
        assert!(worker.is_busy());
        let (key, outcome) = wait(&mut worker);
        assert_eq!(key, "g1");
        assert_eq!(
            outcome,
            Ok(Delivered {
                status: 200,
                attempts: 3
            })
        );
        assert!(!worker.is_busy());
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[2]["incident"]["id"], "i1");
    }

    #[test]
    fn a_client_error_is_final_and_retries_run_out() {
        let (url, got) = test_receiver(vec![404]);
        let mut worker = WebhookWorker::spawn(&config(&url, 3)).unwrap();
        worker.send("g1", json!({})).unwrap();
        let (_, outcome) = wait(&mut worker);
        let e = outcome.unwrap_err();
        assert_eq!(e.code(), "rejected");
        assert_eq!(got.lock().unwrap().len(), 1, "a 404 is not retried");

        let (url, got) = test_receiver(vec![500]);
        let mut worker = WebhookWorker::spawn(&config(&url, 2)).unwrap();
        worker.send("g2", json!({})).unwrap();
        let (_, outcome) = wait(&mut worker);
        let e = outcome.unwrap_err();
        assert_eq!(e.code(), "unreachable");
        assert!(e.to_string().contains("3 attempt(s)"), "{e}");
        assert_eq!(got.lock().unwrap().len(), 3);
    }

    #[test]
    fn nobody_listening_is_unreachable_with_the_reason() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut worker =
            WebhookWorker::spawn(&config(&format!("http://127.0.0.1:{port}/hook"), 1)).unwrap();
        worker.send("g", json!({})).unwrap();
        let (_, outcome) = wait(&mut worker);
        let e = outcome.unwrap_err();
        assert!(
            matches!(&e, WebhookError::Unreachable { attempts: 2, last } if last.starts_with("connection failed")),
            "{e:?}"
        );
    }
}
