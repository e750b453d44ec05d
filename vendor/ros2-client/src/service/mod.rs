//! Implementation of ROS 2 [Services](https://docs.ros.org/en/rolling/Tutorials/Beginner-CLI-Tools/Understanding-ROS2-Services/Understanding-ROS2-Services.html)
#[allow(unused_imports)]
use log::{debug, error, info, warn};

pub mod client;
pub mod request_id;
pub mod server;
pub(super) mod wrappers;

pub use request_id::*;
use wrappers::*;
pub use server::*;
pub use client::*;

// --------------------------------------------
// --------------------------------------------

/// Selects how Service Requests and Responses are to be mapped to DDS.
///
/// There are different and incompatible ways to map Services onto DDS Topics.
/// In order to interoperate with ROS 2, you have to select the same mapping it
/// uses. The mapping used by ROS2 depends on the DDS implementation used and
/// its configuration.
///
/// For details, see OMG Specification
/// [RPC over DDS](https://www.omg.org/spec/DDS-RPC/1.0/About-DDS-RPC/)
/// Section "7.2.4 Basic and Enhanced Service Mapping for RPC over DDS",
/// which defines Service Mappings "Basic" and "Enhanced".
///
/// ServiceMapping::Cyclone represents a third mapping used by RMW for
/// CycloneDDS.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum ServiceMapping {
  /// "Basic" service mapping from RPC over DDS specification.
  /// * RTI Connext with `RMW_CONNEXT_REQUEST_REPLY_MAPPING=basic`, but this is
  ///   not tested, so may not work.
  Basic,

  /// "Enhanced" service mapping from RPC over DDS specification.
  /// * ROS2 Foxy with eProsima DDS,
  /// * ROS2 Galactic with RTI Connext (rmw_connextdds, not rmw_connext_cpp) -
  ///   set environment variable `RMW_CONNEXT_REQUEST_REPLY_MAPPING=extended`
  ///   before running ROS2 executable.
  Enhanced,

  /// CycloneDDS-specific service mapping.
  /// Specification for this mapping is unknown, technical details are
  /// reverse-engineered from ROS2 sources.
  /// * ROS2 Galactic with CycloneDDS - Seems to work on the same host only, not
  ///   over actual network.
  Cyclone,
}

// robobrain patch: the endpoint ids rmw_cyclonedds puts in USER_DATA.

/// `clientid=…;` / `serviceid=…;` for the USER_DATA of a service client's or
/// server's two endpoints under the Cyclone mapping, `None` under the others.
///
/// As rmw_cyclonedds's `get_unique_csid` and `csid_to_string` make it: the
/// participant's 12-byte GUID prefix and a big-endian counter, written as hex
/// octets joined by dots (the first padded to two characters). A server
/// compares the id on the request writer with the ids on the reply readers it
/// has matched, so only its uniqueness matters.
pub(crate) fn cyclone_endpoint_id(
  mapping: ServiceMapping,
  node: &crate::node::Node,
  key: &str,
) -> Option<Vec<u8>> {
  use std::sync::atomic::{AtomicU32, Ordering};

  use rustdds::RTPSEntity;
  static COUNTER: AtomicU32 = AtomicU32::new(0);
  if mapping != ServiceMapping::Cyclone {
    return None;
  }
  let mut id = [0u8; 16];
  id[..12].copy_from_slice(&node.ros_context.domain_participant().guid().to_bytes()[..12]);
  id[12..].copy_from_slice(&(COUNTER.fetch_add(1, Ordering::Relaxed) + 1).to_be_bytes());
  let mut text = format!("{key}={:>2x}", id[0]);
  for b in &id[1..] {
    text.push_str(&format!(".{b:x}"));
  }
  text.push(';');
  Some(text.into_bytes())
}

/// The DDS QoS of `qos`, with `user_data` as its USER_DATA policy if given.
pub(crate) fn with_user_data(
  qos: Option<crate::qos::QosProfile>,
  user_data: &Option<Vec<u8>>,
) -> Option<rustdds::QosPolicies> {
  let dds = qos.map(rustdds::QosPolicies::from);
  match user_data {
    None => dds,
    Some(data) => Some(
      dds
        .unwrap_or_else(rustdds::QosPolicies::qos_none)
        .with_user_data(data.clone()),
    ),
  }
}
