//! Sound through cpal (feature `audio`): speech played on the sound card,
//! the microphone recorded for `listen`. A machine without a sound card is
//! told apart from one with: ALSA offers a "default" device that discards
//! samples even when no card exists, so a card must be listed in
//! `/proc/asound/cards` first; otherwise every call fails with
//! [`AudioError::NoDevice`] and the robot carries on with text and files.
//! WAV reading and writing (16-bit PCM) are pure and always built.

use std::path::Path;
use std::time::Duration;

use thiserror::Error;

/// Why sound could not be played or recorded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AudioError {
    /// No sound card.
    #[error("no sound card: {0}")]
    NoDevice(String),
    /// The card or the stream failed.
    #[error("the sound device failed: {0}")]
    Device(String),
    /// A WAV file that is not 16-bit PCM, or cannot be read or written.
    #[error("{path}: {message}")]
    Wav {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Mono samples in -1..1 with their rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    /// Samples per second.
    pub rate: u32,
    /// The samples (channels mixed down).
    pub samples: Vec<f32>,
}

impl Clip {
    /// How long it plays.
    pub fn duration(&self) -> Duration {
        #[allow(clippy::cast_precision_loss)]
        Duration::from_secs_f64(self.samples.len() as f64 / f64::from(self.rate.max(1)))
    }
}

/// Reads a 16-bit PCM WAV file (what espeak-ng writes).
pub fn read_wav(path: &Path) -> Result<Clip, AudioError> {
    let bytes = std::fs::read(path).map_err(|e| AudioError::Wav {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse_wav(&bytes, &path.display().to_string())
}

/// Parses 16-bit PCM WAV bytes; `name` says where they came from in errors.
pub fn parse_wav(bytes: &[u8], name: &str) -> Result<Clip, AudioError> {
    let bad = |message: &str| AudioError::Wav {
        path: name.to_string(),
        message: message.to_string(),
    };
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(bad("not a RIFF/WAVE file"));
    }
    let (mut rate, mut channels, mut data) = (0u32, 0u16, None);
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
            as usize;
        let body = &bytes[at + 8..(at + 8 + size).min(bytes.len())];
        match id {
            b"fmt " if body.len() >= 16 => {
                let format = u16::from_le_bytes([body[0], body[1]]);
                channels = u16::from_le_bytes([body[2], body[3]]);
                rate = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
                let bits = u16::from_le_bytes([body[14], body[15]]);
                if format != 1 || bits != 16 {
                    return Err(bad("expected 16-bit PCM"));
                }
            }
            b"data" => data = Some(body),
            _ => {}
        }
        at += 8 + size + size % 2;
    }
    let data = data.ok_or_else(|| bad("no data chunk"))?;
    if channels == 0 || rate == 0 {
        return Err(bad("no fmt chunk before the data"));
    }
    let frames = data.chunks_exact(2 * usize::from(channels));
    let samples = frames
        .map(|frame| {
            let sum: f32 = frame
                .chunks_exact(2)
                .map(|s| f32::from(i16::from_le_bytes([s[0], s[1]])) / 32768.0)
                .sum();
            sum / f32::from(channels)
        })
        .collect();
    Ok(Clip { rate, samples })
}

/// Writes `clip` as a mono 16-bit PCM WAV file.
pub fn write_wav(path: &Path, clip: &Clip) -> Result<(), AudioError> {
    std::fs::write(path, wav_bytes(clip)).map_err(|e| AudioError::Wav {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// `clip` as the bytes of a mono 16-bit PCM WAV file.
pub fn wav_bytes(clip: &Clip) -> Vec<u8> {
    #[allow(clippy::cast_possible_truncation)]
    let pcm: Vec<u8> = clip
        .samples
        .iter()
        .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes())
        .collect();
    let size = u32::try_from(pcm.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(44 + pcm.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + size).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&clip.rate.to_le_bytes());
    out.extend_from_slice(&(clip.rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&pcm);
    out
}

/// The sound cards ALSA lists (`/proc/asound/cards`), by name.
pub fn sound_cards() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/asound/cards").unwrap_or_default();
    cards_in(&text)
}

fn cards_in(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// `Ok` when a real sound card exists.
pub fn check_card() -> Result<(), AudioError> {
    if sound_cards().is_empty() {
        return Err(AudioError::NoDevice(
            "/proc/asound/cards lists none (ALSA's discarding default device does not count)"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(feature = "audio")]
mod device {
    use std::sync::mpsc;
    use std::time::Duration;

    use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

    use super::{AudioError, Clip, check_card};

    fn failed(e: impl std::fmt::Display) -> AudioError {
        AudioError::Device(e.to_string())
    }

    /// Plays `clip` on the default output and returns when it has played,
    /// or within one buffer of `stop` turning true (barge-in).
    pub fn play(clip: &Clip, stop: &(dyn Fn() -> bool + Sync)) -> Result<(), AudioError> {
        check_card()?;
        let device = cpal::default_host()
            .default_output_device()
            .ok_or_else(|| AudioError::NoDevice("no default output device".into()))?;
        let config = device.default_output_config().map_err(failed)?.config();
        let (rate, channels) = (config.sample_rate, usize::from(config.channels));
        let samples = clip.samples.clone();
        #[allow(clippy::cast_precision_loss)]
        let step = f64::from(clip.rate) / f64::from(rate);
        let mut at = 0.0_f64;
        let (done_tx, done) = mpsc::channel();
        let stream = device
            .build_output_stream::<f32, _, _>(
                config,
                move |out: &mut [f32], _| {
                    for frame in out.chunks_mut(channels) {
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        let s = samples.get(at as usize).copied();
                        if s.is_none() {
                            let _ = done_tx.send(());
                        }
                        frame.fill(s.unwrap_or(0.0));
                        at += step;
                    }
                },
                |e| eprintln!("audio: {e}"),
                None,
            )
            .map_err(failed)?;
        stream.play().map_err(failed)?;
        let deadline = std::time::Instant::now() + clip.duration() + Duration::from_secs(2);
        // The stream plays on its own thread; a cut drops it here, at once.
        while !stop() && std::time::Instant::now() < deadline {
            if done.recv_timeout(Duration::from_millis(10)).is_ok() {
                break;
            }
        }
        Ok(())
    }

    /// Records `seconds` from the default input.
    pub fn record(seconds: f64) -> Result<Clip, AudioError> {
        check_card()?;
        let device = cpal::default_host()
            .default_input_device()
            .ok_or_else(|| AudioError::NoDevice("no default input device".into()))?;
        let config = device.default_input_config().map_err(failed)?.config();
        let (rate, channels) = (config.sample_rate, usize::from(config.channels));
        let (tx, rx) = mpsc::channel::<Vec<f32>>();
        let stream = device
            .build_input_stream::<f32, _, _>(
                config,
                move |data: &[f32], _| {
                    #[allow(clippy::cast_precision_loss)]
                    let mono = data
                        .chunks(channels)
                        .map(|f| f.iter().sum::<f32>() / f.len() as f32)
                        .collect();
                    let _ = tx.send(mono);
                },
                |e| eprintln!("audio: {e}"),
                None,
            )
            .map_err(failed)?;
        stream.play().map_err(failed)?;
        std::thread::sleep(Duration::from_secs_f64(seconds));
        drop(stream);
        Ok(Clip {
            rate,
            samples: rx.try_iter().flatten().collect(),
        })
    }
}

#[cfg(feature = "audio")]
pub use device::{play, record};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wav_files_round_trip() {
        let dir = std::env::temp_dir().join(format!("rb-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.wav");
        let clip = Clip {
            rate: 22_050,
            samples: vec![0.0, 0.5, -0.5, 0.25],
        };
        write_wav(&path, &clip).unwrap();
        let back = read_wav(&path).unwrap();
        assert_eq!(back.rate, 22_050);
        for (a, b) in back.samples.iter().zip(&clip.samples) {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
        }
        std::fs::write(&path, b"not a wav").unwrap();
        assert!(
            read_wav(&path)
                .unwrap_err()
                .to_string()
                .ends_with("not a RIFF/WAVE file")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_listed_cards_count() {
        assert!(cards_in("--- no soundcards ---\n").is_empty());
        let listed = " 0 [PCH            ]: HDA-Intel - HDA Intel PCH\n                      HDA Intel PCH at 0xf7f10000 irq 32\n";
        assert_eq!(cards_in(listed).len(), 1);
    }

    /// Without a sound card (this machine, CI) playing and recording say
    /// so rather than "succeeding" on ALSA's discarding device; with one, a
    /// clip plays and a recording comes back (or, on a card without an
    /// input, says there is none).
    #[cfg(feature = "audio")]
    #[test]
    fn playing_and_recording_fail_clearly_without_a_card_and_work_with_one() {
        let clip = Clip {
            rate: 8000,
            samples: vec![0.0; 80],
        };
        if !sound_cards().is_empty() {
            play(&clip, &|| false).unwrap();
            match record(0.2) {
                Ok(got) => assert!(got.rate > 0 && !got.samples.is_empty(), "{got:?}"),
                Err(e) => assert!(
                    matches!(&e, AudioError::NoDevice(m) if m == "no default input device"),
                    "{e}"
                ),
            }
            return;
        }
        for e in [
            play(&clip, &|| false).unwrap_err(),
            record(0.1).unwrap_err(),
        ] {
            assert!(matches!(e, AudioError::NoDevice(_)), "{e}");
            assert!(
                e.to_string()
                    .starts_with("no sound card: /proc/asound/cards lists none")
            );
        }
    }
}
