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
        let value = fill_effect(effect, args, state.get(key));
        state.insert(key.clone(), value);
    }
    if let Some(rated) = device.rated_power_w {
        let on = state.get("on").and_then(Value::as_bool).unwrap_or(false);
        state.insert("power_w".into(), Value::from(if on { rated } else { 0.0 }));
    }
    state
}

/// `"#{level}"` → the argument `level`; anything else as it is.
/// An effect's value: a constant; `"#{arg}"` an argument's value;
/// `"#{append:arg}"` the list so far with the argument added;
/// `"#{remove:arg}"` without it (its first match, any case); `"#{+1}"` /
/// `"#{-1}"` the number so far plus or minus one (never below 1).
fn fill_effect(effect: &Value, args: &Value, before: Option<&Value>) -> Value {
    let Some(name) = effect
        .as_str()
        .and_then(|s| s.strip_prefix("#{"))
        .and_then(|s| s.strip_suffix('}'))
    else {
        return effect.clone();
    };
    if let Some(arg) = name.strip_prefix("remove:") {
        // The first item that is the argument, in any case, taken out.
        let mut list = before
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let gone = args.get(arg).and_then(Value::as_str).map(str::to_lowercase);
        if let Some(i) = list.iter().position(|v| {
            v.as_str()
                .map(str::to_lowercase)
                .is_some_and(|v| Some(&v) == gone.as_ref())
        }) {
            list.remove(i);
        }
        return Value::Array(list);
    }
    if let Some(arg) = name.strip_prefix("append:") {
        let mut list = before
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        list.push(args.get(arg).cloned().unwrap_or(Value::Null));
        return Value::Array(list);
    }
    if let Ok(step) = name.parse::<i64>() {
        let now = before.and_then(Value::as_i64).unwrap_or(1);
        return Value::from((now + step).max(1));
    }
    args.get(name).cloned().unwrap_or(Value::Null)
}
