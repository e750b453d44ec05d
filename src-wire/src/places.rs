//! Where robobrain finds its config and keeps its data, by the XDG Base
//! Directory rules: the config file is `./robobrain.toml` when there is
//! one, else `$XDG_CONFIG_HOME/robobrain/robobrain.toml` (by default
//! `~/.config/robobrain/robobrain.toml`); the data — the database, the
//! runs' event logs, memory, speech audio, diagnostics logs — goes to
//! `$XDG_DATA_HOME/robobrain` (by default `~/.local/share/robobrain`)
//! unless the config sets `runs_dir`.
//!
//! The desktop app uses the same rules under its own name (its Tauri
//! identifier), which are the folders Tauri's `app_config_dir` and
//! `app_data_dir` name on Linux.
//!
//! Pure: the environment comes in as a lookup, so the rules are tested
//! without touching the process's own.

use std::path::{Path, PathBuf};

/// The name the command-line binary keeps its folders under.
pub const APP: &str = "robobrain";
/// The config file's name, in the working directory or the config folder.
pub const CONFIG_FILE: &str = "robobrain.toml";
/// Where data goes when there is no home folder to put it in.
pub const FALLBACK_DATA_DIR: &str = "runs";

/// The standard places for one application name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The config file in the user's config folder (it may not exist).
    pub user_config: Option<PathBuf>,
    /// The folder data goes to when the config does not say (`runs_dir`).
    pub data_dir: PathBuf,
}

impl Places {
    /// The places for `app` (`robobrain`, or the desktop app's identifier)
    /// from the environment `get` reads: `XDG_CONFIG_HOME`, `XDG_DATA_HOME`
    /// and `HOME`. A relative `XDG_*` value is ignored, as the spec says.
    /// Without a home folder there is no user config, and data goes to
    /// `./runs`.
    pub fn for_app(app: &str, get: impl Fn(&str) -> Option<String>) -> Self {
        let absolute = |name: &str| get(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let home = absolute("HOME");
        let config_home =
            absolute("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
        let data_home = absolute("XDG_DATA_HOME")
            .or_else(|| home.as_ref().map(|h| h.join(".local").join("share")));
        Self {
            user_config: config_home.map(|d| d.join(app).join(CONFIG_FILE)),
            data_dir: data_home.map_or_else(|| PathBuf::from(FALLBACK_DATA_DIR), |d| d.join(app)),
        }
    }

    /// The places of the `robobrain` binary.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        Self::for_app(APP, get)
    }

    /// The config file to read when none was named: `./robobrain.toml`
    /// (relative to `cwd`) when it exists, else the user's when it exists.
    pub fn config_file(&self, cwd: &Path) -> Option<PathBuf> {
        let local = cwd.join(CONFIG_FILE);
        if local.is_file() {
            return Some(PathBuf::from(CONFIG_FILE));
        }
        self.user_config.clone().filter(|p| p.is_file())
    }
}

/// Where the program `name` is: on `PATH`, in `~/.cargo/bin` or in
/// `/usr/sbin` (Debian's daemons, not on a user's `PATH`).
pub fn find_program(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let cargo_bin = std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo/bin"));
    path.into_iter()
        .chain(cargo_bin)
        .chain([std::path::PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Environment variable naming the embedding model's folder.
pub const EMBED_MODEL_ENV: &str = "ROBOBRAIN_EMBED_MODEL";

/// `~/.cache/robobrain/models/all-MiniLM-L6-v2` (`$XDG_CACHE_HOME` when set).
pub fn default_embed_model_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache
        .join("robobrain")
        .join("models")
        .join("all-MiniLM-L6-v2")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn home_gives_the_xdg_defaults() {
        let places = Places::from_env(env(&[("HOME", "/home/op")]));
        assert_eq!(
            places.user_config.as_deref(),
            Some(Path::new("/home/op/.config/robobrain/robobrain.toml"))
        );
        assert_eq!(
            places.data_dir,
            Path::new("/home/op/.local/share/robobrain")
        );
    }

    #[test]
    fn xdg_variables_win_and_relative_ones_are_ignored() {
        let places = Places::for_app(
            "dev.robobrain.gui",
            env(&[
                ("HOME", "/home/op"),
                ("XDG_CONFIG_HOME", "/etc/xdg-op"),
                ("XDG_DATA_HOME", "relative/data"),
            ]),
        );
        assert_eq!(
            places.user_config.as_deref(),
            Some(Path::new("/etc/xdg-op/dev.robobrain.gui/robobrain.toml"))
        );
        assert_eq!(
            places.data_dir,
            Path::new("/home/op/.local/share/dev.robobrain.gui")
        );
    }

    #[test]
    fn without_a_home_data_stays_here() {
        let places = Places::from_env(env(&[]));
        assert_eq!(places.user_config, None);
        assert_eq!(places.data_dir, Path::new("runs"));
    }

    #[test]
    fn the_working_directory_file_comes_before_the_users() {
        let dir = std::env::temp_dir().join(format!("rb-places-{}", std::process::id()));
        let (cwd, home) = (dir.join("cwd"), dir.join("home"));
        let user = home.join(".config/robobrain");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        let home_s = home.to_str().unwrap().to_string();
        let places = Places::from_env(|n| (n == "HOME").then(|| home_s.clone()));
        assert_eq!(places.config_file(&cwd), None, "neither exists");
        std::fs::write(user.join(CONFIG_FILE), "").unwrap();
        assert_eq!(places.config_file(&cwd), Some(user.join(CONFIG_FILE)));
        std::fs::write(cwd.join(CONFIG_FILE), "").unwrap();
        assert_eq!(places.config_file(&cwd), Some(PathBuf::from(CONFIG_FILE)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
