//! The battery: drains with time and with distance driven, charges on the
//! dock, and always stays within 0–100 %.

use crate::world::BatteryModel;

/// State of charge under a [`BatteryModel`].
#[derive(Debug, Clone, PartialEq)]
pub struct Battery {
    pct: f64,
    model: BatteryModel,
}

impl Battery {
    /// A battery at the model's initial charge.
    pub fn new(model: BatteryModel) -> Self {
        Self {
            pct: model.initial_pct.clamp(0.0, 100.0),
            model,
        }
    }

    /// State of charge, percent.
    pub fn pct(&self) -> f64 {
        self.pct
    }

    /// Whether the battery is flat (the base cannot move).
    pub fn is_empty(&self) -> bool {
        self.pct <= 0.0
    }

    /// Sets the state of charge (clamped to 0–100).
    pub fn set_pct(&mut self, pct: f64) {
        self.pct = pct.clamp(0.0, 100.0);
    }

    /// Lets `dt` seconds pass during which the base drove `distance` metres;
    /// on the dock (`charging`) the battery gains charge instead.
    pub fn update(&mut self, dt: f64, distance: f64, charging: bool) {
        let m = self.model;
        let delta = if charging {
            m.charge_per_s * dt
        } else {
            -(m.idle_drain_per_s * dt + m.drain_per_m * distance)
        };
        self.set_pct(self.pct + delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> BatteryModel {
        BatteryModel {
            initial_pct: 90.0,
            idle_drain_per_s: 0.02,
            drain_per_m: 0.4,
            charge_per_s: 1.0,
        }
    }

    #[test]
    fn drains_with_time_and_distance_and_charges_on_the_dock() {
        let mut b = Battery::new(model());
        b.update(10.0, 0.0, false);
        assert!((b.pct() - 89.8).abs() < 1e-9);
        b.update(1.0, 5.0, false);
        assert!((b.pct() - 87.78).abs() < 1e-9);
        b.update(30.0, 0.0, true);
        assert_eq!(b.pct(), 100.0, "clamped at full");
        b.update(1.0, 1000.0, false);
        assert_eq!(b.pct(), 0.0, "clamped at empty");
        assert!(b.is_empty());
    }
}
