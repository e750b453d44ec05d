//! One MQTT connection as every owner reads it — the zigbee2mqtt adapter,
//! the Home Assistant publisher, the fleet's robot link and its consoles:
//! rumqttc's event loop polled forever (polled again after an error, it
//! reconnects) and what it saw turned into [`Net`], with the two checks
//! every door needs made once, here:
//!
//! - a retained publish (the broker's store replayed when we subscribe) is
//!   [`Net::Retained`], apart from a live one, so that no owner can take an
//!   old press, command or order for a new one;
//! - a subscription the broker refused (SUBACK return code 0x80, MQTT
//!   3.1.1 §3.9.3: an ACL that denies the filter) is [`Net::Refused`],
//!   naming the filter — [`Subscriptions`] remembers which filter each
//!   SUBSCRIBE carried.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rumqttc::{AsyncClient, Event as NetEvent, Outgoing, Packet, QoS, SubscribeReasonCode};
use tokio::sync::mpsc;

/// What the connection saw, as its owner reads it. A publish comes as
/// one of two variants, so that every owner decides what a retained one
/// is: the broker's store replayed when we subscribe (a device's last
/// state, a console's snapshot) is [`Net::Retained`], never a command —
/// an old press or order must not act again on every reconnect. A
/// message the broker forwards live is [`Net::Message`], whatever flag
/// its sender set (MQTT 3.1.1 §3.3.1.3 clears it on live delivery).
pub enum Net {
    /// The broker accepted the connection.
    Up,
    /// The connection dropped (or could not be made): why.
    Down(String),
    /// A publish forwarded live: topic, payload.
    Message(String, Vec<u8>),
    /// A retained publish from the broker's store: topic, payload.
    Retained(String, Vec<u8>),
    /// The broker refused a subscription to this filter (SUBACK 0x80):
    /// nothing published there will reach us.
    Refused(String),
    /// Our DISCONNECT went out: whatever was published before it has too.
    Closed,
}

/// The filters subscribed to, in the order their SUBSCRIBEs leave, so a
/// SUBACK's packet id can be told back as its filter. Subscribe through
/// [`Subscriptions::subscribe`] and hand a clone to [`poll`].
#[derive(Debug, Clone, Default)]
pub struct Subscriptions {
    inner: Arc<Mutex<Book>>,
}

#[derive(Debug, Default)]
struct Book {
    /// Asked for, not yet sent: rumqttc sends requests in order.
    asked: VecDeque<String>,
    /// Sent, by packet id, until the SUBACK.
    sent: BTreeMap<u16, String>,
}

impl Subscriptions {
    /// Subscribes `client` to `filter` (QoS 1), remembering the filter.
    pub fn subscribe(&self, client: &AsyncClient, filter: impl Into<String>) {
        let filter = filter.into();
        let mut book = self.book();
        if client
            .try_subscribe(filter.clone(), QoS::AtLeastOnce)
            .is_ok()
        {
            book.asked.push_back(filter);
        }
    }

    fn sent(&self, pkid: u16) {
        let mut book = self.book();
        if let Some(filter) = book.asked.pop_front() {
            book.sent.insert(pkid, filter);
        }
    }

    fn acked(&self, pkid: u16) -> String {
        self.book()
            .sent
            .remove(&pkid)
            .unwrap_or_else(|| format!("(the subscription of packet {pkid})"))
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts [`poll`] on the current tokio runtime with a fresh
/// [`Subscriptions`]: subscribe through the one returned.
pub fn spawn_poll(
    eventloop: rumqttc::EventLoop,
    net: mpsc::Sender<Net>,
    delay: Duration,
) -> (tokio::task::JoinHandle<()>, Subscriptions) {
    let subscriptions = Subscriptions::default();
    let poller = tokio::spawn(poll(eventloop, net, delay, subscriptions.clone()));
    (poller, subscriptions)
}

/// Polls rumqttc's event loop forever; after an error it waits `delay` and
/// polls again, which reconnects. What it saw goes to `net`; it ends when
/// nobody listens any more.
async fn poll(
    mut eventloop: rumqttc::EventLoop,
    net: mpsc::Sender<Net>,
    delay: Duration,
    subscriptions: Subscriptions,
) {
    loop {
        let message = match eventloop.poll().await {
            Ok(NetEvent::Incoming(Packet::ConnAck(_))) => Net::Up,
            Ok(NetEvent::Incoming(Packet::Publish(p))) if p.retain => {
                Net::Retained(p.topic, p.payload.to_vec())
            }
            Ok(NetEvent::Incoming(Packet::Publish(p))) => Net::Message(p.topic, p.payload.to_vec()),
            Ok(NetEvent::Outgoing(Outgoing::Subscribe(pkid))) => {
                subscriptions.sent(pkid);
                continue;
            }
            Ok(NetEvent::Incoming(Packet::SubAck(ack))) => {
                let filter = subscriptions.acked(ack.pkid);
                if ack
                    .return_codes
                    .iter()
                    .any(|c| matches!(c, SubscribeReasonCode::Failure))
                {
                    Net::Refused(filter)
                } else {
                    continue;
                }
            }
            Ok(NetEvent::Outgoing(Outgoing::Disconnect)) => Net::Closed,
            Ok(_) => continue,
            Err(e) => {
                if net.send(Net::Down(e.to_string())).await.is_err() {
                    return;
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        if net.send(message).await.is_err() {
            return;
        }
    }
}
