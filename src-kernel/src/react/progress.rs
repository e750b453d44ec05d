//! No-progress detection (seed 003 §11.2): distance to go that does not
//! shrink over a window of sim time.

use serde::{Deserialize, Serialize};

/// Samples of `distance_remaining` for the running step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProgressTracker {
    started_at: f64,
    samples: Vec<(f64, f64)>,
}

impl ProgressTracker {
    /// Starts tracking a step that began at `now`.
    pub fn restart(&mut self, now: f64) {
        self.started_at = now;
        self.samples.clear();
    }

    /// Records a distance sample; keeps only what a window of `keep_s` needs.
    pub fn record(&mut self, now: f64, distance: f64, keep_s: f64) {
        self.samples.push((now, distance));
        let cutoff = now - keep_s - 1.0;
        let stale = self.samples.iter().take_while(|(t, _)| *t < cutoff).count();
        // Keep one sample older than the window so the window stays covered.
        self.samples.drain(..stale.saturating_sub(1));
    }

    /// The evidence of no progress over the last `window_s` seconds, if the
    /// distance shrank by less than `min_m` (or no sample came in at all).
    pub fn stalled(&self, now: f64, window_s: f64, min_m: f64) -> Option<String> {
        if now - self.started_at < window_s {
            return None;
        }
        let Some(&(_, current)) = self.samples.last() else {
            return Some(format!("no feedback for {window_s:.0} s"));
        };
        let then = self
            .samples
            .iter()
            .rev()
            .find(|(t, _)| *t <= now - window_s)
            .map(|&(_, d)| d)?;
        let gained = then - current;
        (gained < min_m).then(|| {
            format!("distance to go {then:.1} m → {current:.1} m in the last {window_s:.0} s (less than {min_m} m)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moving_robot_makes_progress_and_a_stuck_one_does_not() {
        let mut p = ProgressTracker::default();
        p.restart(0.0);
        for i in 0..=20 {
            let t = f64::from(i);
            p.record(t, 10.0 - 0.5 * t, 8.0);
        }
        assert_eq!(p.stalled(20.0, 8.0, 0.1), None);
        for i in 21..=30 {
            p.record(f64::from(i), 0.0 + 4.0, 8.0);
        }
        let why = p.stalled(30.0, 8.0, 0.1).unwrap();
        assert!(why.contains("4.0 m → 4.0 m"), "{why}");
    }

    #[test]
    fn gaining_exactly_the_minimum_is_progress() {
        let mut p = ProgressTracker::default();
        p.restart(0.0);
        p.record(0.0, 5.0, 20.0);
        p.record(10.0, 4.0, 20.0);
        assert_eq!(p.stalled(10.0, 10.0, 1.0), None);
        assert!(p.stalled(10.0, 10.0, 1.5).is_some());
    }

    #[test]
    fn too_early_to_tell() {
        let mut p = ProgressTracker::default();
        p.restart(5.0);
        p.record(6.0, 3.0, 8.0);
        assert_eq!(p.stalled(10.0, 8.0, 0.1), None);
    }

    #[test]
    fn no_feedback_at_all_is_no_progress_once_the_window_has_passed() {
        let mut p = ProgressTracker::default();
        p.restart(2.0);
        assert_eq!(p.stalled(9.9, 8.0, 0.1), None);
        assert_eq!(
            p.stalled(10.0, 8.0, 0.1).as_deref(),
            Some("no feedback for 8 s")
        );
    }

    #[test]
    fn the_window_keeps_one_older_sample_and_no_more() {
        let mut p = ProgressTracker::default();
        p.restart(0.0);
        // Sparse feedback: the sample before the window is the only evidence.
        for t in [0.0, 10.0, 20.0] {
            p.record(t, 5.0, 8.0);
        }
        assert_eq!(p.samples, [(10.0, 5.0), (20.0, 5.0)]);
        let why = p.stalled(20.0, 8.0, 0.1).unwrap();
        assert_eq!(
            why,
            "distance to go 5.0 m → 5.0 m in the last 8 s (less than 0.1 m)"
        );
        // Just enough progress is progress.
        p.record(21.0, 4.75, 8.0);
        assert_eq!(p.stalled(21.0, 8.0, 0.1), None);
        // A long step keeps a bounded history.
        for i in 22..1000 {
            p.record(f64::from(i), 4.0, 8.0);
        }
        assert_eq!(p.samples.len(), 11);
        assert_eq!(p.samples[0].0, 989.0);
        // A restart forgets the last step's samples.
        p.restart(1000.0);
        assert!(p.samples.is_empty());
        assert_eq!(p.stalled(1007.0, 8.0, 0.1), None);
    }
}
