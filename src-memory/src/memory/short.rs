//! Short-term memory (seed 004's ShortMemory): the session's history and the
//! current window of N turns (one message is one turn). When the window is
//! full it rolls over: the closed window is handed back for summarisation
//! and a new one starts. Pure — the manager persists the messages.

use super::store::Message;

/// The session's conversation.
#[derive(Debug, Clone)]
pub struct ShortMemory {
    /// The session id.
    pub session_id: String,
    /// Every message of the session, oldest first.
    pub history: Vec<Message>,
    /// The open window.
    pub window: Vec<Message>,
    /// Windows closed so far (the open one's id).
    pub window_count: u64,
    size: usize,
    turns: u64,
}

impl ShortMemory {
    /// An empty session whose windows hold `size` turns.
    pub fn new(session_id: &str, size: usize) -> Self {
        Self {
            session_id: session_id.to_string(),
            history: Vec::new(),
            window: Vec::new(),
            window_count: 0,
            size: size.max(1),
            turns: 0,
        }
    }

    /// Appends a message; the closed window (and its id) when this one filled it.
    pub fn append(
        &mut self,
        role: &str,
        content: &str,
        ts_ms: u64,
    ) -> (Message, Option<(Vec<Message>, u64)>) {
        self.turns += 1;
        let message = Message {
            role: role.to_string(),
            content: content.to_string(),
            ts_ms,
            turn_id: format!("{}-{}", self.session_id, self.turns),
            session_id: self.session_id.clone(),
            window_id: self.window_count,
        };
        self.history.push(message.clone());
        self.window.push(message.clone());
        let closed = (self.window.len() >= self.size).then(|| self.rollover());
        (message, closed)
    }

    /// Closes the open window now: its messages and id.
    pub fn rollover(&mut self) -> (Vec<Message>, u64) {
        let id = self.window_count;
        self.window_count += 1;
        (std::mem::take(&mut self.window), id)
    }

    /// The last `n` messages of the session.
    pub fn recent(&self, n: usize) -> &[Message] {
        &self.history[self.history.len().saturating_sub(n)..]
    }

    /// Restores a session's history (a restart): the last window is reopened
    /// when it was not full.
    pub fn restore(&mut self, messages: Vec<Message>) {
        if let Some(last) = messages.last() {
            self.window_count = last.window_id;
            self.turns = messages.len() as u64;
            self.window = messages
                .iter()
                .filter(|m| m.window_id == last.window_id)
                .cloned()
                .collect();
            if self.window.len() >= self.size {
                self.window.clear();
                self.window_count += 1;
            }
        }
        self.history = messages;
    }
}

/// A window as text for a summary or an analysis: `role: content` lines.
pub fn transcript(window: &[Message]) -> String {
    window
        .iter()
        .map(|m| format!("{}: {}", m.role, m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_window_rolls_over_every_n_turns() {
        let mut s = ShortMemory::new("s1", 3);
        assert!(s.append("user", "a", 1).1.is_none());
        assert!(s.append("assistant", "b", 2).1.is_none());
        let (m, closed) = s.append("user", "c", 3);
        assert_eq!(m.window_id, 0);
        let (w, id) = closed.unwrap();
        assert_eq!((w.len(), id), (3, 0));
        assert!(s.window.is_empty());
        let (m, _) = s.append("assistant", "d", 4);
        assert_eq!(m.window_id, 1);
        assert_eq!(
            s.recent(2)
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>(),
            ["c", "d"]
        );
        assert_eq!(transcript(&w), "user: a\nassistant: b\nuser: c");
        let mut again = ShortMemory::new("s1", 3);
        again.restore(s.history.clone());
        assert_eq!((again.window.len(), again.window_count), (1, 1));
        assert_eq!(again.append("user", "e", 5).0.turn_id, "s1-5");
    }
}
