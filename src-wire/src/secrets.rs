//! Secrets (tokens, passwords) read from where other users of the machine
//! cannot see them: a file (mode 0600, one line) or an environment
//! variable. A value on a command line is in every `ps` listing; the faces
//! warn when one is given there.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a secret could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The file could not be read.
    #[error("cannot read the secret file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file holds nothing but white space.
    #[error("the secret file {0} is empty")]
    EmptyFile(PathBuf),
    /// The variable is not set (or is empty).
    #[error("the environment variable {0} is not set")]
    NoVariable(String),
}

/// The secret in `path`: its content without the trailing newline (and
/// surrounding white space, which no token or password holds).
pub fn from_file(path: &Path) -> Result<String, SecretError> {
    let text = std::fs::read_to_string(path).map_err(|source| SecretError::File {
        path: path.to_path_buf(),
        source,
    })?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(SecretError::EmptyFile(path.to_path_buf()));
    }
    Ok(secret.to_string())
}

/// The secret in environment variable `name`.
pub fn from_env(name: &str) -> Result<String, SecretError> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
        _ => Err(SecretError::NoVariable(name.to_string())),
    }
}

/// Whether others than the owner may read `path` (a secret file should be
/// mode 0600); `false` when it cannot be told.
pub fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_gives_its_line_and_an_empty_or_missing_one_is_named() {
        let dir = std::env::temp_dir().join(format!("rb-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        assert_eq!(from_file(&file).unwrap(), "s3cret");
        std::fs::write(&file, " \n").unwrap();
        let e = from_file(&file).unwrap_err().to_string();
        assert!(e.contains("is empty") && e.contains("token"), "{e}");
        let e = from_file(&dir.join("nope")).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let e = from_env("ROBOBRAIN_TEST_NO_SUCH_VARIABLE")
            .unwrap_err()
            .to_string();
        assert!(e.contains("ROBOBRAIN_TEST_NO_SUCH_VARIABLE"), "{e}");
    }
}
