//! Giving speech a voice (seed 000 §3.3, `speak`). Each line becomes a WAV
//! file — what a headless run keeps — in the background, so the kernel never
//! waits: from the model's speech endpoint (`[speech] voice = "model"`,
//! `[llm] omni_model`), or offline from espeak-ng when installed (also the
//! stand-in when a model line fails); otherwise speech is text only (the
//! `speech` events). With the `audio` feature and `[speech] play`, lines are
//! also played on the sound card, one after the other. Barge-in: a new
//! utterance or an E-stop cuts whatever is still being voiced or played
//! (playback stops within one audio buffer).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::llm::{LlmClient, LlmConfig};
use crate::offload::Offload;

pub use crate::config::VoiceChoice;

/// How long a finished run waits for model lines still on their way.
const DRAIN: Duration = Duration::from_secs(5);

/// Speech from the model's endpoint.
struct ModelVoice {
    client: LlmClient,
    model: String,
    voice: String,
    /// Each job ends with the line's file written, or why it was not.
    offload: Offload<Result<(), String>>,
}

/// A line being voiced.
enum Line {
    /// By espeak-ng.
    Process(Child, PathBuf),
    /// By the model (a job of the model voice).
    Request(u64, PathBuf),
}

/// Voices lines as WAV files, or not at all.
pub struct Speaker {
    espeak: Option<PathBuf>,
    model: Option<ModelVoice>,
    dir: PathBuf,
    lines: u64,
    /// Lines being voiced.
    voicing: Vec<Line>,
    #[cfg(feature = "audio")]
    player: Option<player::Player>,
    /// Said once, at the start: why there is no sound.
    notice: Option<String>,
    /// Model lines that failed since the last look (espeak-ng stood in).
    failures: Vec<String>,
}

/// The most `runs/audio` holds, all runs together: 64 MiB (about 30
/// minutes of espeak-ng speech at 22 kHz mono). Beyond it the oldest WAV
/// files are deleted.
pub const AUDIO_BOUND_BYTES: u64 = 64 * 1024 * 1024;

/// How many lines between two checks of the bound.
const PRUNE_EVERY: u64 = 25;

/// Deletes the oldest `.wav` files under `dir` (one level of run folders)
/// until the total is at most `bound` bytes; empty run folders go too.
/// Returns the bytes left.
pub fn prune_audio(dir: &Path, bound: u64) -> u64 {
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    let Ok(runs) = std::fs::read_dir(dir) else {
        return 0;
    };
    for run in runs.filter_map(Result::ok) {
        let path = run.path();
        let entries: Vec<PathBuf> = if path.is_dir() {
            std::fs::read_dir(&path)
                .map(|e| e.filter_map(Result::ok).map(|e| e.path()).collect())
                .unwrap_or_default()
        } else {
            vec![path]
        };
        for f in entries {
            if f.extension().is_some_and(|x| x == "wav")
                && let Ok(meta) = f.metadata()
            {
                let at = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                files.push((at, meta.len(), f));
            }
        }
    }
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, size, path) in files {
        if total <= bound {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(size);
            if let Some(parent) = path.parent()
                && parent != dir
            {
                // Only an empty folder can be removed.
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
    total
}

impl Speaker {
    /// A speaker writing to `dir` with the voice `choice` resolves to (a
    /// `model` choice needs [`Speaker::speaking_with`] as well).
    pub fn new(choice: VoiceChoice, dir: &Path) -> Self {
        let espeak = match choice {
            VoiceChoice::Text => None,
            VoiceChoice::Auto | VoiceChoice::Espeak | VoiceChoice::Model => {
                find_on_path("espeak-ng")
            }
        };
        Self {
            espeak,
            model: None,
            dir: dir.to_path_buf(),
            lines: 0,
            voicing: Vec::new(),
            #[cfg(feature = "audio")]
            player: None,
            notice: None,
            failures: Vec::new(),
        }
    }

    /// This speaker, voicing lines with `config`'s speech model
    /// (`omni_model`) in `voice`; without a configured model it says why in
    /// [`Speaker::notice`] and keeps to espeak-ng.
    #[must_use]
    pub fn speaking_with(mut self, config: &LlmConfig, voice: &str) -> Self {
        let started = if config.is_configured() {
            LlmClient::new(config)
                .map_err(|e| e.to_string())
                .and_then(|client| {
                    Offload::spawn("robobrain-speech")
                        .map(|offload| (client, offload))
                        .map_err(|e| e.to_string())
                })
        } else {
            Err("no model is configured (OPENAI_BASE_URL / OPENAI_API_KEY unset)".into())
        };
        match started {
            Ok((client, offload)) => {
                self.model = Some(ModelVoice {
                    client,
                    model: config.omni_model.clone(),
                    voice: voice.to_string(),
                    offload,
                });
            }
            Err(why) => self.add_notice(format!("the speech model is not used: {why}")),
        }
        self
    }

    /// This speaker, also playing its lines on the sound card (feature
    /// `audio`); without a card or the feature it says why in
    /// [`Speaker::notice`] and keeps to files.
    #[must_use]
    pub fn playing(mut self) -> Self {
        #[cfg(feature = "audio")]
        match crate::audio::check_card() {
            Ok(()) if self.has_voice() => self.player = Some(player::Player::start()),
            Ok(()) => self.add_notice("speech is not played: espeak-ng is not installed".into()),
            Err(e) => self.add_notice(format!("speech is not played: {e}")),
        }
        #[cfg(not(feature = "audio"))]
        self.add_notice(
            "speech is not played: this robobrain was built without the `audio` feature".into(),
        );
        self
    }

    fn add_notice(&mut self, why: String) {
        self.notice = Some(match self.notice.take() {
            Some(before) => format!("{before}; {why}"),
            None => why,
        });
    }

    /// Why lines are not played (or not by the model), when that was asked for.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// Model lines that failed since the last call, and why (espeak-ng
    /// voiced them instead when installed).
    pub fn take_failures(&mut self) -> Vec<String> {
        self.reap();
        std::mem::take(&mut self.failures)
    }

    /// A speaker that voices nothing.
    pub fn text_only() -> Self {
        Self::new(VoiceChoice::Text, Path::new("."))
    }

    /// Whether lines get audio.
    pub fn has_voice(&self) -> bool {
        self.espeak.is_some() || self.model.is_some()
    }

    /// Starts voicing `text`; the WAV file it will be in, or `None` (text
    /// only, or the voice could not start).
    pub fn say(&mut self, text: &str) -> Option<PathBuf> {
        self.reap();
        if !self.has_voice() {
            return None;
        }
        std::fs::create_dir_all(&self.dir).ok()?;
        // Every run keeps `runs/audio` (all runs' folders together) under
        // the bound: the oldest lines go first, checked at the first line
        // and every `PRUNE_EVERY` after.
        if self.lines.is_multiple_of(PRUNE_EVERY)
            && let Some(all) = self.dir.parent()
        {
            prune_audio(all, AUDIO_BOUND_BYTES);
        }
        self.lines += 1;
        let path = self.dir.join(format!("line{:04}.wav", self.lines));
        let line = if let Some(model) = self.model.as_mut() {
            let job = model_line(model, self.espeak.clone(), text, path.clone());
            Line::Request(model.offload.submit(job), path.clone())
        } else {
            let espeak = self.espeak.as_ref()?;
            Line::Process(
                espeak_command(espeak, text, &path).spawn().ok()?,
                path.clone(),
            )
        };
        #[cfg(feature = "audio")]
        if let Some(player) = &self.player {
            match line {
                Line::Process(child, path) => player.queue(Some(child), path),
                Line::Request(id, path) => {
                    player.queue(None, path.clone());
                    self.voicing.push(Line::Request(id, path));
                }
            }
            return Some(path);
        }
        self.voicing.push(line);
        Some(path)
    }

    /// Barge-in: cuts every line still being voiced (their partial files
    /// are removed); returns the files cut.
    pub fn interrupt(&mut self) -> Vec<PathBuf> {
        self.reap();
        #[cfg(feature = "audio")]
        if let Some(player) = &self.player {
            player.cut();
        }
        let model = &mut self.model;
        self.voicing
            .drain(..)
            .map(|line| {
                let path = match line {
                    Line::Process(mut child, path) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        path
                    }
                    Line::Request(id, path) => {
                        if let Some(m) = model.as_mut() {
                            m.offload.abort(id);
                        }
                        path
                    }
                };
                let _ = std::fs::remove_file(&path);
                path
            })
            .collect()
    }

    /// Forgets the lines that are done (keeping why model lines failed).
    fn reap(&mut self) {
        let mut done = Vec::new();
        if let Some(m) = self.model.as_mut() {
            for (id, outcome) in m.offload.finished() {
                done.push(id);
                if let Err(why) = outcome {
                    self.failures.push(why);
                }
            }
        }
        self.voicing.retain_mut(|line| match line {
            Line::Process(child, _) => matches!(child.try_wait(), Ok(None)),
            Line::Request(id, _) => !done.contains(id),
        });
    }
}

impl Drop for Speaker {
    fn drop(&mut self) {
        // Lines started are finished, not cut: a run's last words are kept.
        let until = Instant::now() + DRAIN;
        while self.voicing.iter().any(|l| matches!(l, Line::Request(..))) && Instant::now() < until
        {
            self.reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        for line in self.voicing.drain(..) {
            if let Line::Process(mut child, _) = line {
                let _ = child.wait();
            }
        }
    }
}

/// espeak-ng writing `text` to `path`.
fn espeak_command(espeak: &Path, text: &str, path: &Path) -> Command {
    let mut command = Command::new(espeak);
    command
        .args(["-v", voice_for(text), "-w"])
        .arg(path)
        .arg("--")
        .arg(text)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The job voicing one line with the model: the WAV written whole (through
/// a temporary file, so a player never reads half of one), or espeak-ng
/// standing in, and the model's failure reported either way.
fn model_line(
    model: &ModelVoice,
    espeak: Option<PathBuf>,
    text: &str,
    path: PathBuf,
) -> impl std::future::Future<Output = Result<(), String>> + Send + 'static {
    let (client, name, voice, text) = (
        model.client.clone(),
        model.model.clone(),
        model.voice.clone(),
        text.to_string(),
    );
    async move {
        let why = match client.speech(&name, &voice, &text).await {
            Ok(wav) if wav.starts_with(b"RIFF") => {
                let part = path.with_extension("part");
                match std::fs::write(&part, wav).and_then(|()| std::fs::rename(&part, &path)) {
                    Ok(()) => return Ok(()),
                    Err(e) => format!("{}: {e}", path.display()),
                }
            }
            Ok(_) => "the speech endpoint did not send a WAV file".to_string(),
            Err(e) => e.to_string(),
        };
        let stood_in = match espeak {
            Some(espeak) => tokio::task::spawn_blocking(move || {
                espeak_command(&espeak, &text, &path)
                    .status()
                    .is_ok_and(|s| s.success())
            })
            .await
            .unwrap_or(false),
            None => false,
        };
        let then = if stood_in {
            "espeak-ng voiced the line"
        } else {
            "the line is text only"
        };
        Err(format!("the speech model failed ({why}); {then}"))
    }
}

#[cfg(feature = "audio")]
mod player {
    use std::path::{Path, PathBuf};
    use std::process::Child;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// How long the player waits for a model line's file.
    const WAIT_FOR_FILE: Duration = Duration::from_secs(30);

    /// Plays voiced lines in order on a thread of its own.
    pub(super) struct Player {
        lines: mpsc::Sender<(u64, Option<Child>, PathBuf)>,
        /// Lines said before this generation are cut.
        generation: Arc<AtomicU64>,
    }

    impl Player {
        pub(super) fn start() -> Self {
            let (lines, queue) = mpsc::channel::<(u64, Option<Child>, PathBuf)>();
            let generation = Arc::new(AtomicU64::new(0));
            let current = Arc::clone(&generation);
            std::thread::Builder::new()
                .name("robobrain-voice".into())
                .spawn(move || {
                    for (said_in, child, path) in queue {
                        let cut = || current.load(Ordering::SeqCst) > said_in;
                        let ready = match child {
                            Some(mut child) if cut() => {
                                let _ = child.kill();
                                let _ = child.wait();
                                false
                            }
                            Some(mut child) => child.wait().is_ok(),
                            None => wait_for(&path, &cut),
                        };
                        if ready
                            && !cut()
                            && let Ok(clip) = crate::audio::read_wav(&path)
                        {
                            let _ = crate::audio::play(&clip, &cut);
                        }
                    }
                })
                .ok();
            Self { lines, generation }
        }

        /// Queues a line: voiced by `child`, or (none) written by the model.
        pub(super) fn queue(&self, child: Option<Child>, path: PathBuf) {
            let _ = self
                .lines
                .send((self.generation.load(Ordering::SeqCst), child, path));
        }

        pub(super) fn cut(&self) {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Waits until a model line's file exists (it is written whole), the
    /// line is cut, or the wait is too long.
    fn wait_for(path: &Path, cut: &dyn Fn() -> bool) -> bool {
        let until = Instant::now() + WAIT_FOR_FILE;
        while !path.exists() {
            if cut() || Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

/// espeak-ng's voice for `text`: Mandarin when it has Chinese characters.
fn voice_for(text: &str) -> &'static str {
    if text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)) {
        "cmn"
    } else {
        "en"
    }
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod prune_tests {
    use super::*;

    #[test]
    fn runs_audio_stays_under_its_bound_oldest_first() {
        let dir =
            std::env::temp_dir().join(format!("robobrain-audio-bound-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for run in ["a", "b"] {
            std::fs::create_dir_all(dir.join(run)).unwrap();
            for i in 0..5 {
                std::fs::write(dir.join(run).join(format!("line{i}.wav")), vec![0u8; 1000])
                    .unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        assert_eq!(prune_audio(&dir, 4500), 4000);
        // The oldest run went first, and its emptied folder with it.
        assert!(!dir.join("a").exists());
        assert_eq!(std::fs::read_dir(dir.join("b")).unwrap().count(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_only_voices_nothing() {
        let mut s = Speaker::text_only();
        assert!(!s.has_voice());
        assert_eq!(s.say("hello"), None);
        assert!(s.interrupt().is_empty());
    }

    /// Without a sound card (here, CI) playing says why and keeps to
    /// files; with one the player starts and nothing is noticed.
    #[test]
    fn playing_says_why_without_a_sound_card_and_plays_with_one() {
        crate::testing::espeak();
        let s = Speaker::new(VoiceChoice::Espeak, Path::new(".")).playing();
        #[cfg(feature = "audio")]
        if crate::audio::sound_cards().is_empty() {
            assert_eq!(
                s.notice(),
                Some(
                    "speech is not played: no sound card: /proc/asound/cards lists none \
                     (ALSA's discarding default device does not count)"
                )
            );
            assert!(s.player.is_none());
        } else {
            assert_eq!(s.notice(), None, "a card and espeak-ng: lines are played");
            assert!(s.player.is_some());
        }
        #[cfg(not(feature = "audio"))]
        assert_eq!(
            s.notice(),
            Some("speech is not played: this robobrain was built without the `audio` feature")
        );
    }

    #[test]
    fn chinese_lines_get_the_mandarin_voice() {
        assert_eq!(voice_for("巡逻正常"), "cmn");
        assert_eq!(voice_for("Patrol complete."), "en");
    }

    /// With espeak-ng installed (the README's setup installs it) a line
    /// becomes a WAV file; a long line cut by barge-in stops being written.
    #[test]
    fn espeak_writes_wav_files_and_barge_in_cuts_them() {
        let dir = std::env::temp_dir().join(format!("rb-voice-{}", std::process::id()));
        crate::testing::espeak();
        let mut s = Speaker::new(VoiceChoice::Espeak, &dir);
        assert!(s.has_voice());
        let path = s.say("All normal.").unwrap();
        drop(s); // waits for the line
        let wav = std::fs::read(&path).unwrap();
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(&wav[8..12], b"WAVE");
        let mut s = Speaker::new(VoiceChoice::Espeak, &dir);
        let long = "This is a very long announcement that goes on and on. ".repeat(200);
        let cut = s.say(&long).unwrap();
        assert_eq!(
            s.interrupt(),
            std::slice::from_ref(&cut),
            "the long line was still being voiced"
        );
        assert!(!cut.exists(), "a cut line leaves no partial file");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn model_config(base_url: String) -> LlmConfig {
        LlmConfig {
            base_url: Some(base_url),
            max_retries: 0,
            timeout_s: 2.0,
            ..LlmConfig::default()
        }
    }

    fn wait_for(mut cond: impl FnMut() -> bool) -> bool {
        for _ in 0..500 {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn temp_dir(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rb-voice-{name}-{}", std::process::id()))
    }

    /// `[speech] voice = "model"`: the line is the endpoint's WAV, written whole.
    #[test]
    fn the_model_voices_a_line_into_a_wav_file() {
        let script = crate::llm::mock_script::parse("", Path::new("m.toml")).unwrap();
        let server = crate::llm::mock_server::MockServer::start(script, "127.0.0.1:0").unwrap();
        let dir = temp_dir("model");
        let mut s = Speaker::new(VoiceChoice::Model, &dir)
            .speaking_with(&model_config(server.base_url()), "Cherry");
        assert!(s.has_voice() && s.notice().is_none());
        let path = s.say("All normal.").unwrap();
        drop(s); // waits for the line
        let clip = crate::audio::read_wav(&path).unwrap();
        assert_eq!(
            clip.samples.len(),
            11 * 960,
            "the mock's tone for 11 characters"
        );
        let got = server.received();
        assert_eq!(got[0].body["input"], "All normal.");
        assert_eq!(got[0].body["voice"], "Cherry");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A failing model line is reported, and espeak-ng stands in for it;
    /// without espeak-ng the line stays text.
    #[test]
    fn a_failed_model_line_is_reported_and_espeak_stands_in() {
        crate::testing::espeak();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        for with_espeak in [true, false] {
            let dir = temp_dir(&format!("fallback-{with_espeak}"));
            let mut s = Speaker::new(VoiceChoice::Model, &dir).speaking_with(
                &model_config(format!("http://127.0.0.1:{port}/v1")),
                "Cherry",
            );
            assert!(s.espeak.is_some());
            if !with_espeak {
                s.espeak = None;
            }
            let path = s.say("Patrol normal.").unwrap();
            let mut failures = Vec::new();
            assert!(wait_for(|| {
                failures.extend(s.take_failures());
                !failures.is_empty()
            }));
            assert!(
                failures[0].starts_with("the speech model failed"),
                "{failures:?}"
            );
            if with_espeak {
                assert!(
                    failures[0].ends_with("espeak-ng voiced the line"),
                    "{failures:?}"
                );
                assert_eq!(&std::fs::read(&path).unwrap()[..4], b"RIFF");
            } else {
                assert!(
                    failures[0].ends_with("the line is text only"),
                    "{failures:?}"
                );
                assert!(!path.exists());
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// Barge-in cuts a model line still on its way: no file ever appears.
    #[test]
    fn barge_in_cuts_a_model_line_in_flight() {
        // A server that accepts and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", silent.local_addr().unwrap());
        let dir = temp_dir("cut");
        let mut s =
            Speaker::new(VoiceChoice::Model, &dir).speaking_with(&model_config(url), "Cherry");
        let path = s.say("A long announcement.").unwrap();
        assert_eq!(s.interrupt(), vec![path.clone()]);
        std::thread::sleep(Duration::from_millis(100));
        drop(s);
        assert!(!path.exists(), "a cut line leaves no file");
        assert!(!path.with_extension("part").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_model_voice_without_a_model_says_why() {
        let s = Speaker::new(VoiceChoice::Model, Path::new("."))
            .speaking_with(&LlmConfig::default(), "Cherry");
        assert!(
            s.notice()
                .unwrap()
                .starts_with("the speech model is not used: no model is configured")
        );
        assert_eq!(VoiceChoice::parse("model"), Some(VoiceChoice::Model));
        assert_eq!(VoiceChoice::parse("loud"), None);
    }
}
