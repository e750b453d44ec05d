//! Explicit preferences and session state (seed 001 §2.2).
//!
//! A preference is a key/value an operator (or a tool acting for one) set
//! on purpose, with where it came from and why — listed, edited and removed
//! with `robobrain memory prefs`; nothing is inferred behind anyone's back.
//! Session state is a small generic key/value store per session (for
//! example `last_device`, `last_room`, `last_plan`) that a layer resolving
//! "it" and "there" reads and writes; it knows nothing about devices.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::store::MemoryDb;
use super::{MemoryError, now_ms};

/// Longest key, in characters.
const MAX_KEY: usize = 64;
/// Longest value, in characters.
const MAX_VALUE: usize = 1000;

/// One preference with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pref {
    /// The key (`lowercase.dotted_words`).
    pub key: String,
    /// The value.
    pub value: String,
    /// Who set it (`cli`, `operator`, `console`, …).
    pub source: String,
    /// Why, in the setter's words.
    pub reason: String,
    /// Wall ms of the last change.
    pub updated_ms: u64,
}

impl std::fmt::Display for Pref {
    /// `key = value (set by source: reason)`, as people and the model read it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} (set by {}", self.key, self.value, self.source)?;
        if !self.reason.is_empty() {
            write!(f, ": {}", self.reason)?;
        }
        f.write_str(")")
    }
}

/// Checks a key: 1–64 characters of `a-z 0-9 _ . -`, starting with a letter.
pub fn check_key(key: &str) -> Result<(), MemoryError> {
    let ok = !key.is_empty()
        && key.chars().count() <= MAX_KEY
        && key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(MemoryError::Invalid(format!(
            "key {key:?}: expected 1–{MAX_KEY} characters of a-z, 0-9, `_`, `.`, `-`, starting with a letter (e.g. `temperature.bedroom`)"
        )))
    }
}

fn check_value(value: &str) -> Result<(), MemoryError> {
    if value.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "empty value: expected some text (use `unset` to remove a key)".into(),
        ));
    }
    let n = value.chars().count();
    if n > MAX_VALUE {
        return Err(MemoryError::Invalid(format!(
            "value of {n} characters is too long: expected at most {MAX_VALUE}"
        )));
    }
    Ok(())
}

fn err(db: &MemoryDb, e: &rusqlite::Error) -> MemoryError {
    MemoryError::Db {
        path: db.path().to_path_buf(),
        detail: e.to_string(),
    }
}

/// Every preference, by key.
pub fn list(db: &MemoryDb) -> Result<Vec<Pref>, MemoryError> {
    let mut st = db
        .conn()
        .prepare("SELECT key, value, source, reason, updated_ms FROM prefs ORDER BY key")
        .map_err(|e| err(db, &e))?;
    st.query_map([], |r| {
        Ok(Pref {
            key: r.get(0)?,
            value: r.get(1)?,
            source: r.get(2)?,
            reason: r.get(3)?,
            updated_ms: r.get::<_, i64>(4)? as u64,
        })
    })
    .and_then(Iterator::collect)
    .map_err(|e| err(db, &e))
}

/// Sets `key` to `value`, noting who and why; the previous value, if any.
pub fn set(
    db: &MemoryDb,
    key: &str,
    value: &str,
    source: &str,
    reason: &str,
) -> Result<Option<String>, MemoryError> {
    check_key(key)?;
    check_value(value)?;
    let old = get(db, key)?;
    db.conn()
        .execute(
            "INSERT INTO prefs (key, value, source, reason, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(key) DO UPDATE SET value = ?2, source = ?3, reason = ?4, updated_ms = ?5",
            params![key, value, source, reason, now_ms() as i64],
        )
        .map_err(|e| err(db, &e))?;
    Ok(old)
}

/// The value of `key`.
pub fn get(db: &MemoryDb, key: &str) -> Result<Option<String>, MemoryError> {
    db.conn()
        .query_row("SELECT value FROM prefs WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| err(db, &e))
}

/// Removes `key`; its value, or an error naming the keys there are.
pub fn unset(db: &MemoryDb, key: &str) -> Result<String, MemoryError> {
    let Some(old) = get(db, key)? else {
        let known: Vec<String> = list(db)?.into_iter().map(|p| p.key).collect();
        return Err(MemoryError::Invalid(format!(
            "no preference {key:?}; {}",
            if known.is_empty() {
                "none is set".to_string()
            } else {
                format!("set: {}", known.join(", "))
            }
        )));
    };
    db.conn()
        .execute("DELETE FROM prefs WHERE key = ?1", [key])
        .map_err(|e| err(db, &e))?;
    Ok(old)
}

/// Sets session state `key` (`last_device`, `last_room`, `last_plan`, …).
pub fn set_state(db: &MemoryDb, session: &str, key: &str, value: &str) -> Result<(), MemoryError> {
    check_key(key)?;
    check_value(value)?;
    db.conn()
        .execute(
            "INSERT INTO session_state (session_id, key, value, updated_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(session_id, key) DO UPDATE SET value = ?3, updated_ms = ?4",
            params![session, key, value, now_ms() as i64],
        )
        .map_err(|e| err(db, &e))?;
    Ok(())
}

/// Session state `key`.
pub fn state(db: &MemoryDb, session: &str, key: &str) -> Result<Option<String>, MemoryError> {
    db.conn()
        .query_row(
            "SELECT value FROM session_state WHERE session_id = ?1 AND key = ?2",
            params![session, key],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| err(db, &e))
}

/// All of a session's state, by key.
pub fn states(db: &MemoryDb, session: &str) -> Result<Vec<(String, String)>, MemoryError> {
    let mut st = db
        .conn()
        .prepare("SELECT key, value FROM session_state WHERE session_id = ?1 ORDER BY key")
        .map_err(|e| err(db, &e))?;
    st.query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(Iterator::collect)
        .map_err(|e| err(db, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_prefs_set_list_unset_with_provenance() {
        let db = MemoryDb::in_memory().unwrap();
        assert_eq!(
            set(&db, "temperature.bedroom", "22", "cli", "likes it warm").unwrap(),
            None
        );
        assert_eq!(
            set(&db, "temperature.bedroom", "21", "console", "changed").unwrap(),
            Some("22".into())
        );
        let all = list(&db).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(
            (all[0].value.as_str(), all[0].source.as_str()),
            ("21", "console")
        );
        let e = set(&db, "Bad Key", "x", "cli", "").unwrap_err().to_string();
        assert!(e.contains("expected 1–64 characters"), "{e}");
        assert!(set(&db, "k", "  ", "cli", "").is_err());
        assert_eq!(unset(&db, "temperature.bedroom").unwrap(), "21");
        let e = unset(&db, "temperature.bedroom").unwrap_err().to_string();
        assert!(e.contains("none is set"), "{e}");
    }

    #[test]
    fn memory_session_state_is_per_session() {
        let db = MemoryDb::in_memory().unwrap();
        set_state(&db, "a", "last_room", "kitchen").unwrap();
        set_state(&db, "a", "last_room", "bedroom").unwrap();
        set_state(&db, "b", "last_device", "lamp").unwrap();
        assert_eq!(
            state(&db, "a", "last_room").unwrap(),
            Some("bedroom".into())
        );
        assert_eq!(state(&db, "b", "last_room").unwrap(), None);
        assert_eq!(
            states(&db, "b").unwrap(),
            [("last_device".into(), "lamp".into())]
        );
    }
}
