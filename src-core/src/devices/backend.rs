//! The seam between the device world and whatever moves the devices: the
//! in-process simulator here; an MQTT adapter (`mqtt.rs`) for real ones.

use serde_json::{Map, Value};

use super::{Capability, Device, DeviceError};

/// A change a device reported on its own (a state report, going offline).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceUpdate {
    /// The device's id.
    pub device: String,
    /// State keys that changed.
    pub state: Map<String, Value>,
    /// Whether it is online now, when that changed.
    pub online: Option<bool>,
}

/// Carries out capability calls on devices. The [`super::DeviceWorld`] has
/// already checked the capability, the arguments, the request id and that
/// the device is online.
pub trait DeviceBackend: Send {
    /// A short name for logs (`sim`, `mqtt`).
    fn name(&self) -> &str;

    /// Applies `capability` with `args` to `device`; returns its state after.
    fn apply(
        &mut self,
        device: &Device,
        capability: &Capability,
        args: &Value,
    ) -> Result<Map<String, Value>, DeviceError>;

    /// What devices reported since the last poll.
    fn poll(&mut self) -> Vec<DeviceUpdate> {
        Vec::new()
    }
}

/// Simulated devices: a capability's `effects` set the state at once, and a
/// device with a rated power reports `power_w` while it is on.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimBackend;

impl DeviceBackend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn apply(
        &mut self,
        device: &Device,
        capability: &Capability,
        args: &Value,
    ) -> Result<Map<String, Value>, DeviceError> {
        Ok(simulate(device, capability, args))
    }
}

/// The state `device` has after `capability` with `args`, as the simulator
/// sees it (also what an optimistic real backend expects).
pub fn simulate(device: &Device, capability: &Capability, args: &Value) -> Map<String, Value> {
    let mut state = device.state.clone();
    for (key, effect) in &capability.effects {
        state.insert(key.clone(), fill_effect(effect, args));
    }
    if let Some(rated) = device.rated_power_w {
        let on = state.get("on").and_then(Value::as_bool).unwrap_or(false);
        state.insert("power_w".into(), Value::from(if on { rated } else { 0.0 }));
    }
    state
}

/// `"#{level}"` → the argument `level`; anything else as it is.
fn fill_effect(effect: &Value, args: &Value) -> Value {
    if let Some(name) = effect
        .as_str()
        .and_then(|s| s.strip_prefix("#{"))
        .and_then(|s| s.strip_suffix('}'))
    {
        return args.get(name).cloned().unwrap_or(Value::Null);
    }
    effect.clone()
}
