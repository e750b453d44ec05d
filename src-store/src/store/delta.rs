//! Checkpoint deltas: the JSON paths whose values changed since the last
//! checkpoint. Pure functions over `serde_json::Value`, no IO.
//!
//! A delta is a list of `[pointer, value]` pairs (RFC 6901 JSON pointers).
//! Objects with the same keys are compared member by member, and so are
//! arrays over their common length; elements appended to an array are
//! `[".../-", element]` pairs (RFC 6901's "past the end"), and elements
//! dropped from its front (the task queue forgetting its oldest finished
//! task) are one `[".../^N", null]` pair, so the elements behind them are not
//! all rewritten under their new indices. Anything else that differs is
//! replaced whole. Applying the pairs in order to the old value gives the
//! new one.

use serde_json::{Map, Value};

/// The changes from `old` to `new`, as `[pointer, value]` pairs.
pub fn diff(old: &Value, new: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    walk(old, new, &mut String::new(), &mut out);
    out
}

/// [`diff`] of two values found at the pointer `at` of larger ones: the
/// pairs' pointers start with `at`, and are appended to `out`.
pub fn diff_at(old: &Value, new: &Value, at: &str, out: &mut Vec<(String, Value)>) {
    walk(old, new, &mut at.to_string(), out);
}

fn walk(old: &Value, new: &Value, path: &mut String, out: &mut Vec<(String, Value)>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) if same_keys(a, b) => {
            // The same keys in the same (sorted) order: side by side.
            for ((k, va), vb) in a.iter().zip(b.values()) {
                if va != vb {
                    let len = path.len();
                    path.push('/');
                    push_token(path, k);
                    walk(va, vb, path, out);
                    path.truncate(len);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() - dropped_front(a, b) <= b.len() => {
            let dropped = dropped_front(a, b);
            if dropped > 0 {
                out.push((format!("{path}/^{dropped}"), Value::Null));
            }
            for (i, (va, vb)) in a[dropped..].iter().zip(b).enumerate() {
                if va != vb {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&i.to_string());
                    walk(va, vb, path, out);
                    path.truncate(len);
                }
            }
            for vb in &b[a.len() - dropped..] {
                out.push((format!("{path}/-"), vb.clone()));
            }
        }
        _ if old == new => {}
        _ => out.push((path.clone(), new.clone())),
    }
}

/// How many elements `new` lost from the front of `old`: the first index of
/// `old` holding `new`'s first element, when `old`'s first is not it.
fn dropped_front(old: &[Value], new: &[Value]) -> usize {
    match (old.first(), new.first()) {
        (Some(a), Some(b)) if a != b => (1..old.len()).find(|&k| old[k] == *b).unwrap_or(0),
        _ => 0,
    }
}

/// The `N` of a `^N` pointer token.
fn drop_count(token: &str) -> Option<usize> {
    token.strip_prefix('^')?.parse().ok()
}

/// Same keys, and none that reads as "append" (`-`) in a pointer. (A
/// `Map` iterates its keys sorted, so the same keys come in the same order.)
fn same_keys(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len() && !a.contains_key("-") && a.keys().eq(b.keys())
}

/// Appends `key` to a pointer as one token (RFC 6901: `~` as `~0`, `/` as
/// `~1`).
fn push_token(path: &mut String, key: &str) {
    if key.contains(['~', '/']) {
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
    } else {
        path.push_str(key);
    }
}

/// Why a delta does not fit the value it is applied to.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("delta path `{0}` does not exist in the base checkpoint")]
pub struct DeltaError(pub String);

/// Applies `changes` (from [`diff`]) to `base` in place.
pub fn apply(base: &mut Value, changes: &[(String, Value)]) -> Result<(), DeltaError> {
    for (path, value) in changes {
        if path.is_empty() {
            *base = value.clone();
            continue;
        }
        if let Some((parent, token)) = path.rsplit_once('/')
            && let Some(n) = drop_count(token)
            && let Some(array) = base.pointer_mut(parent).and_then(Value::as_array_mut)
        {
            // On an array `^N` drops N elements from the front; on an object
            // it is an ordinary key, set below.
            if n > array.len() {
                return Err(DeltaError(path.clone()));
            }
            array.drain(..n);
            continue;
        }
        if let Some(parent) = path.strip_suffix("/-") {
            base.pointer_mut(parent)
                .and_then(Value::as_array_mut)
                .ok_or_else(|| DeltaError(path.clone()))?
                .push(value.clone());
            continue;
        }
        let slot = base
            .pointer_mut(path)
            .ok_or_else(|| DeltaError(path.clone()))?;
        *slot = value.clone();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_delta_holds_only_what_changed_and_rebuilds_the_new_value() {
        let old = json!({"time": 1.0, "queue": {"tasks": [{"id": "t1", "cursor": 0}, {"id": "t/2", "cursor": 3}]},
                         "tele": {"pose": {"x": 1, "y": 2}}, "list": [1, 2]});
        let new = json!({"time": 1.1, "queue": {"tasks": [{"id": "t1", "cursor": 1}, {"id": "t/2", "cursor": 3}]},
                         "tele": {"pose": {"x": 1, "y": 2}, "zone": "kitchen"}, "list": [1, 2, 3]});
        let d = diff(&old, &new);
        assert_eq!(
            d,
            vec![
                ("/list/-".to_string(), json!(3)),
                ("/queue/tasks/0/cursor".to_string(), json!(1)),
                (
                    "/tele".to_string(),
                    json!({"pose": {"x": 1, "y": 2}, "zone": "kitchen"})
                ),
                ("/time".to_string(), json!(1.1)),
            ]
        );
        let mut rebuilt = old.clone();
        apply(&mut rebuilt, &d).unwrap();
        assert_eq!(rebuilt, new);
        assert!(diff(&new, &new).is_empty());
    }

    #[test]
    fn a_shorter_array_is_replaced_whole() {
        let old = json!({"a": [1, 2, 3]});
        let new = json!({"a": [1]});
        let d = diff(&old, &new);
        assert_eq!(d, vec![("/a".to_string(), json!([1]))]);
        let mut rebuilt = old;
        apply(&mut rebuilt, &d).unwrap();
        assert_eq!(rebuilt, new);
    }

    #[test]
    fn elements_dropped_from_the_front_are_one_pair() {
        let old = json!({"tasks": [{"id": 1}, {"id": 2}, {"id": 3, "s": "run"}]});
        let new = json!({"tasks": [{"id": 2}, {"id": 3, "s": "done"}, {"id": 4}]});
        let d = diff(&old, &new);
        assert_eq!(
            d,
            vec![
                ("/tasks/^1".to_string(), Value::Null),
                ("/tasks/1/s".to_string(), json!("done")),
                ("/tasks/-".to_string(), json!({"id": 4})),
            ]
        );
        let mut rebuilt = old;
        apply(&mut rebuilt, &d).unwrap();
        assert_eq!(rebuilt, new);
        // `^1` under an object is a key like any other.
        let old = json!({"o": {"^1": 1}});
        let new = json!({"o": {"^1": 2}});
        let d = diff(&old, &new);
        let mut rebuilt = old;
        apply(&mut rebuilt, &d).unwrap();
        assert_eq!(rebuilt, new);
    }

    /// Every pair of small arrays (and arrays of objects) round-trips.
    #[test]
    fn every_small_array_change_rebuilds_exactly() {
        let mut arrays = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = arrays
                .iter()
                .filter(|a| a.len() == arrays.last().map_or(0, Vec::len))
                .flat_map(|a| {
                    (0..3u8).map(move |x| {
                        let mut a = a.clone();
                        a.push(x);
                        a
                    })
                })
                .collect();
            arrays.extend(longer);
        }
        let as_json =
            |a: &Vec<u8>| json!({"a": a.iter().map(|x| json!({"v": x})).collect::<Vec<_>>()});
        for a in &arrays {
            for b in &arrays {
                let (old, new) = (as_json(a), as_json(b));
                let mut rebuilt = old.clone();
                apply(&mut rebuilt, &diff(&old, &new)).unwrap();
                assert_eq!(rebuilt, new, "{a:?} → {b:?}");
            }
        }
    }

    #[test]
    fn keys_with_slashes_and_tildes_are_escaped() {
        let old = json!({"a/b": {"c~d": 1}});
        let new = json!({"a/b": {"c~d": 2}});
        let d = diff(&old, &new);
        assert_eq!(d[0].0, "/a~1b/c~0d");
        let mut rebuilt = old;
        apply(&mut rebuilt, &d).unwrap();
        assert_eq!(rebuilt, new);
    }

    #[test]
    fn a_delta_for_another_shape_is_refused() {
        let mut v = json!({"a": 1});
        let e = apply(&mut v, &[("/b/c".into(), json!(1))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "delta path `/b/c` does not exist in the base checkpoint"
        );
    }
}
