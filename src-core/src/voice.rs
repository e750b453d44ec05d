//! Giving speech a voice (seed 000 §3.3, `speak`). Offline, espeak-ng (when
//! installed) writes each line to a WAV file — what a headless run keeps —
//! in the background, so the kernel never waits for it; otherwise speech is
//! text only (the `speech` events). With the `audio` feature and
//! `[speech] play`, lines are also played on the sound card, one after the
//! other. Barge-in: a new utterance or an E-stop cuts whatever is still being
//! voiced or played (playback stops within one audio buffer).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};

/// Which voice `[speech] voice` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceChoice {
    /// espeak-ng when it is on the `PATH`, else text only.
    #[default]
    Auto,
    /// espeak-ng (text only, with a notice, when it is missing).
    Espeak,
    /// Text only.
    Text,
}

/// Voices lines as WAV files, or not at all.
pub struct Speaker {
    espeak: Option<PathBuf>,
    dir: PathBuf,
    lines: u64,
    /// Lines being voiced: the process and its file.
    voicing: Vec<(Child, PathBuf)>,
    #[cfg(feature = "audio")]
    player: Option<player::Player>,
    /// Said once, at the start: why there is no sound.
    notice: Option<String>,
}

impl Speaker {
    /// A speaker writing to `dir` with the voice `choice` resolves to.
    pub fn new(choice: VoiceChoice, dir: &Path) -> Self {
        let espeak = match choice {
            VoiceChoice::Text => None,
            VoiceChoice::Auto | VoiceChoice::Espeak => find_on_path("espeak-ng"),
        };
        Self {
            espeak,
            dir: dir.to_path_buf(),
            lines: 0,
            voicing: Vec::new(),
            #[cfg(feature = "audio")]
            player: None,
            notice: None,
        }
    }

    /// This speaker, also playing its lines on the sound card (feature
    /// `audio`); without a card or the feature it says why in
    /// [`Speaker::notice`] and keeps to files.
    #[must_use]
    pub fn playing(mut self) -> Self {
        #[cfg(feature = "audio")]
        match crate::audio::check_card() {
            Ok(()) if self.espeak.is_some() => self.player = Some(player::Player::start()),
            Ok(()) => self.notice = Some("speech is not played: espeak-ng is not installed".into()),
            Err(e) => self.notice = Some(format!("speech is not played: {e}")),
        }
        #[cfg(not(feature = "audio"))]
        {
            self.notice = Some(
                "speech is not played: this robobrain was built without the `audio` feature".into(),
            );
        }
        self
    }

    /// Why lines are not played, when playing was asked for.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// A speaker that voices nothing.
    pub fn text_only() -> Self {
        Self::new(VoiceChoice::Text, Path::new("."))
    }

    /// Whether lines get audio.
    pub fn has_voice(&self) -> bool {
        self.espeak.is_some()
    }

    /// Starts voicing `text`; the WAV file it will be in, or `None` (text
    /// only, or the voice could not start).
    pub fn say(&mut self, text: &str) -> Option<PathBuf> {
        self.reap();
        let espeak = self.espeak.as_ref()?;
        std::fs::create_dir_all(&self.dir).ok()?;
        self.lines += 1;
        let path = self.dir.join(format!("line{:04}.wav", self.lines));
        let child = Command::new(espeak)
            .args(["-v", voice_for(text), "-w"])
            .arg(&path)
            .arg("--")
            .arg(text)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        #[cfg(feature = "audio")]
        if let Some(player) = &self.player {
            player.queue(child, path.clone());
            return Some(path);
        }
        self.voicing.push((child, path.clone()));
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
        self.voicing
            .drain(..)
            .map(|(mut child, path)| {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_file(&path);
                path
            })
            .collect()
    }

    /// Forgets the lines that are done.
    fn reap(&mut self) {
        self.voicing
            .retain_mut(|(child, _)| matches!(child.try_wait(), Ok(None)));
    }
}

impl Drop for Speaker {
    fn drop(&mut self) {
        // Lines started are finished, not cut: a run's last words are kept.
        for (mut child, _) in self.voicing.drain(..) {
            let _ = child.wait();
        }
    }
}

#[cfg(feature = "audio")]
mod player {
    use std::path::PathBuf;
    use std::process::Child;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc;

    /// Plays voiced lines in order on a thread of its own.
    pub struct Player {
        lines: mpsc::Sender<(u64, Child, PathBuf)>,
        /// Lines said before this generation are cut.
        generation: Arc<AtomicU64>,
    }

    impl Player {
        pub fn start() -> Self {
            let (lines, queue) = mpsc::channel::<(u64, Child, PathBuf)>();
            let generation = Arc::new(AtomicU64::new(0));
            let current = Arc::clone(&generation);
            std::thread::Builder::new()
                .name("robobrain-voice".into())
                .spawn(move || {
                    for (said_in, mut child, path) in queue {
                        let cut = || current.load(Ordering::SeqCst) > said_in;
                        if cut() {
                            let _ = child.kill();
                            let _ = child.wait();
                            continue;
                        }
                        let _ = child.wait();
                        if let Ok(clip) = crate::audio::read_wav(&path) {
                            let _ = crate::audio::play(&clip, &cut);
                        }
                    }
                })
                .ok();
            Self { lines, generation }
        }

        pub fn queue(&self, child: Child, path: PathBuf) {
            let _ = self
                .lines
                .send((self.generation.load(Ordering::SeqCst), child, path));
        }

        pub fn cut(&self) {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
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
mod tests {
    use super::*;

    #[test]
    fn text_only_voices_nothing() {
        let mut s = Speaker::text_only();
        assert!(!s.has_voice());
        assert_eq!(s.say("hello"), None);
        assert!(s.interrupt().is_empty());
    }

    #[test]
    fn playing_without_a_sound_card_says_why() {
        if !crate::audio::sound_cards().is_empty() {
            return;
        }
        let s = Speaker::new(VoiceChoice::Espeak, Path::new(".")).playing();
        let why = s.notice().unwrap();
        assert!(why.starts_with("speech is not played: "), "{why}");
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
        let mut s = Speaker::new(VoiceChoice::Espeak, &dir);
        if !s.has_voice() {
            eprintln!("espeak-ng is not installed: nothing to check here");
            return;
        }
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
}
