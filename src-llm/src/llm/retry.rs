//! When to try a model call again and how long to wait: 429, 5xx and
//! connection errors are retried with exponential backoff and jitter; a
//! `Retry-After` the server sends is obeyed. Pure: the HTTP layer asks, this
//! answers.

use std::time::Duration;

/// The backoff policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First delay.
    pub base: Duration,
    /// Longest delay.
    pub max: Duration,
}

/// What an attempt's outcome means for the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retryable {
    /// Worth another try, after at least this long if the server said so.
    Yes {
        /// The server's `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// Final: success, or an error another try will not fix.
    No,
}

/// Classifies an HTTP status.
pub fn classify_status(status: u16, retry_after: Option<Duration>) -> Retryable {
    if status == 429 || (500..600).contains(&status) {
        Retryable::Yes { retry_after }
    } else {
        Retryable::No
    }
}

/// Parses a `Retry-After` header given in seconds (HTTP dates are ignored).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

impl Backoff {
    /// The delay before retry number `retry` (from 0): the server's
    /// `Retry-After` when given (the call's deadline still bounds it), else
    /// `base · 2^retry` scaled by a jitter in [0.5, 1) ("equal jitter"),
    /// never above `max`. `jitter` is in [0, 1).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        if let Some(d) = retry_after {
            return d;
        }
        let exp = self
            .base
            .saturating_mul(2_u32.saturating_pow(retry.min(16)));
        let capped = exp.min(self.max);
        capped.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_with_jitter_and_obey_retry_after() {
        let b = Backoff {
            max_retries: 3,
            base: Duration::from_millis(200),
            max: Duration::from_secs(2),
        };
        assert_eq!(b.delay(0, None, 0.0), Duration::from_millis(100));
        assert_eq!(b.delay(0, None, 1.0), Duration::from_millis(200));
        assert_eq!(b.delay(2, None, 1.0), Duration::from_millis(800));
        assert_eq!(b.delay(9, None, 1.0), Duration::from_secs(2));
        assert_eq!(
            b.delay(0, Some(Duration::from_secs(1)), 0.3),
            Duration::from_secs(1)
        );
        assert_eq!(
            b.delay(0, Some(Duration::from_secs(60)), 0.3),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_client_errors_not() {
        assert!(matches!(classify_status(429, None), Retryable::Yes { .. }));
        assert!(matches!(classify_status(503, None), Retryable::Yes { .. }));
        assert_eq!(classify_status(400, None), Retryable::No);
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015"), None);
    }
}
