//! Operator lines read from a byte stream: what a person (or a script)
//! types to a headless run or an MCP server's side channel. `{…}` is a
//! command as JSON; any other text is said — the parsing is the core's
//! ([`robobrain_core::protocol::line`], which the page's chat and the
//! desktop app use too); this is the reading.
//!
//! Nothing on an operator's channel is trusted to be well formed, and
//! nothing on it may end the channel: [`LineReader`] reads bytes, not text,
//! so a line that is not UTF-8 or is longer than
//! [`MAX_LINE_BYTES`] is refused by its number and reading goes on — a
//! line over the limit is skipped at the speed of a byte scan, never held
//! in memory or parsed. [`forward`] reads on a thread of its own and sends
//! each command straight to the kernel, so an E-stop typed after a huge
//! line reaches the robot without waiting for the face's other work.

use std::io::BufRead;

pub use robobrain_core::protocol::line::{Line, Refused, parse_line};
use robobrain_core::protocol::{MAX_LINE_BYTES, Origin, TooLong};
use robobrain_core::runtime::CommandSender;
use serde_json::json;

/// One line read from an operator's byte stream, numbered from 1.
#[derive(Debug, PartialEq)]
pub enum ReadLine {
    /// A line of text, without its line ending.
    Text(usize, String),
    /// A line that cannot be taken as text: not UTF-8, or too long.
    Refused(usize, Refused),
}

/// Splits a byte stream into numbered lines (`\n`, or `\r\n`) without
/// trusting it: see the module's doc.
pub struct LineReader<R> {
    inner: R,
    limit: usize,
    n: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    /// Lines of `inner`, at most [`MAX_LINE_BYTES`] each.
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    /// Lines of `inner`, at most `limit` bytes each.
    pub fn with_limit(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            n: 0,
            buf: Vec::new(),
        }
    }

    /// The next line's bytes into `buf` (at most `limit` + 1 of them kept)
    /// and its full length; `None` at the end of the input.
    fn next_bytes(&mut self) -> Option<std::io::Result<usize>> {
        self.buf.clear();
        let mut len = 0;
        let mut any = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Some(Err(e)),
            };
            if chunk.is_empty() {
                return any.then_some(Ok(len));
            }
            any = true;
            let end = chunk.iter().position(|&b| b == b'\n');
            let take = end.unwrap_or(chunk.len());
            let room = (self.limit + 1).saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&chunk[..take.min(room)]);
            len += take;
            self.inner.consume(take + usize::from(end.is_some()));
            if end.is_some() {
                return Some(Ok(len));
            }
        }
    }
}

impl<R: BufRead> Iterator for LineReader<R> {
    type Item = std::io::Result<ReadLine>;

    fn next(&mut self) -> Option<Self::Item> {
        let len = match self.next_bytes()? {
            Ok(len) => len,
            Err(e) => return Some(Err(e)),
        };
        self.n += 1;
        // A `\r\n` ending is not part of the line; `buf` holds at most
        // `limit` + 1 bytes, so it ends the line only when the line fits.
        if self.buf.last() == Some(&b'\r') && len <= self.limit + 1 {
            self.buf.pop();
        }
        if self.buf.len() > self.limit {
            let too_long = TooLong::Line {
                bytes: len,
                limit: self.limit,
            };
            return Some(Ok(ReadLine::Refused(self.n, too_long.into())));
        }
        Some(Ok(match std::str::from_utf8(&self.buf) {
            Ok(text) => ReadLine::Text(self.n, text.to_string()),
            Err(e) => ReadLine::Refused(
                self.n,
                Refused {
                    code: "invalid_utf8",
                    why: format!(
                        "not valid UTF-8 (byte {} of the line); expected a command as JSON or words to say",
                        e.valid_up_to() + 1
                    ),
                },
            ),
        }))
    }
}

/// What became of an operator line [`forward`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarded {
    /// Line `n` was a command, and the kernel has it.
    Sent(usize),
    /// The input ended (or could not be read any more).
    End,
}

/// Reads operator lines from the source `open` gives (named `label` in
/// errors: `stdin`, `--operator FILE`) on a thread of its own — opened
/// there, since a FIFO's open waits for its writer — and sends each command
/// straight to the kernel through `sender`, from `origin`. A refused line, or a command
/// the kernel cannot take, is an [`error_line`] naming the line; reading
/// goes on. `told` hears of every command sent and of the end.
///
/// The thread blocks in `read` and is never joined: a process that is done
/// exits without waiting for more input.
pub fn forward<R, O, F>(label: &str, open: O, sender: CommandSender, origin: Origin, mut told: F)
where
    R: std::io::Read,
    O: FnOnce() -> std::io::Result<R> + Send + 'static,
    F: FnMut(Forwarded) + Send + 'static,
{
    let name = format!("robobrain-reader {label}");
    let label = label.to_string();
    let read = move || {
        let source = match open() {
            Ok(source) => source,
            Err(e) => {
                error_line(&label, None, "unreadable", &format!("{label}: {e}"));
                told(Forwarded::End);
                return;
            }
        };
        let reader = LineReader::new(std::io::BufReader::with_capacity(64 * 1024, source));
        for line in reader {
            match line {
                Ok(ReadLine::Text(n, text)) => match parse_line(&text) {
                    Line::Command(command) => match sender.send(command, origin.clone()) {
                        Ok(()) => told(Forwarded::Sent(n)),
                        Err(e) => error_line(&label, Some(n), e.code(), &e.to_string()),
                    },
                    Line::Blank => {}
                    Line::Bad(r) => error_line(&label, Some(n), r.code, &r.why),
                },
                Ok(ReadLine::Refused(n, r)) => error_line(&label, Some(n), r.code, &r.why),
                Err(e) => {
                    error_line(&label, None, "unreadable", &format!("{label}: {e}"));
                    break;
                }
            }
        }
        told(Forwarded::End);
    };
    if let Err(e) = std::thread::Builder::new().name(name).spawn(read) {
        error_line(
            "operator",
            None,
            "unreadable",
            &format!("cannot start a thread to read operator lines: {e}"),
        );
    }
}

/// An `error` JSON line on stderr: `{"kind":"error","code":…,"message":…,"line":N}`,
/// the message naming the source and line (`stdin line 3: …`).
pub fn error_line(label: &str, line: Option<usize>, code: &str, message: &str) {
    let message = match line {
        Some(n) => format!("{label} line {n}: {message}"),
        None => message.to_string(),
    };
    let mut v = json!({"kind": "error", "code": code, "message": message});
    if let Some(n) = line {
        v["line"] = json!(n);
    }
    eprintln!("{v}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], limit: usize) -> Vec<ReadLine> {
        LineReader::with_limit(input, limit)
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn bad_bytes_and_long_lines_are_refused_by_number_and_reading_goes_on() {
        let mut input = b"go\r\n\xff\xfe{\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend(b"\nlast");
        let got = lines(&input, 16);
        assert_eq!(got[0], ReadLine::Text(1, "go".into()));
        match &got[1] {
            ReadLine::Refused(2, r) => {
                assert_eq!(r.code, "invalid_utf8");
                assert!(r.why.contains("byte 1"), "{}", r.why);
            }
            other => panic!("{other:?}"),
        }
        match &got[2] {
            ReadLine::Refused(3, r) => {
                assert_eq!(r.code, "line_too_long");
                assert!(
                    r.why.contains("100 bytes") && r.why.contains("16-byte"),
                    "{}",
                    r.why
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(got[3], ReadLine::Text(4, "last".into()));
        assert_eq!(got.len(), 4);
        // A line exactly at the limit is read.
        let at = "y".repeat(16);
        assert_eq!(lines(at.as_bytes(), 16), [ReadLine::Text(1, at)]);
    }
}
