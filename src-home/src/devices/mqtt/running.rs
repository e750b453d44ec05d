//! A worker on an MQTT connection, as its owner holds it: the task that
//! publishes, a way to tell it to say goodbye, and the connection's poller.
//! The Home Assistant publisher and the fleet link both run this way.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

/// How long [`Running::stop`] waits for the worker's goodbye to leave.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// A running worker and its connection. Dropped without [`Running::stop`],
/// both are aborted at once: the broker then speaks the connection's last
/// will, as it would for a process that died.
pub struct Running {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// The connection's poller: aborted, the connection closes (rumqttc's
    /// event loop keeps its own request sender, so it never ends by itself).
    poller: AbortHandle,
}

impl Running {
    /// The worker `task`, told to stop through `stop`, on the connection
    /// `poller` drives.
    pub fn new(stop: oneshot::Sender<()>, task: JoinHandle<()>, poller: AbortHandle) -> Self {
        Self {
            stop: Mutex::new(Some(stop)),
            task: Mutex::new(Some(task)),
            poller,
        }
    }

    /// Tells the worker to stop (it says goodbye, retained, and
    /// disconnects) and waits, [`STOP_WAIT`] at most, until it has. Later
    /// calls do nothing.
    pub async fn stop(&self) {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
        let Some(mut task) = lock(&self.task).take() else {
            return;
        };
        if tokio::time::timeout(STOP_WAIT, &mut task).await.is_err() {
            task.abort();
        }
        self.poller.abort();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
        self.poller.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Disconnects `client` and waits until the DISCONNECT has left, so the
/// goodbye published just before it reaches the broker (`net` reports the
/// connection closing).
pub async fn disconnect(
    client: &rumqttc::AsyncClient,
    net: &mut tokio::sync::mpsc::Receiver<super::Net>,
) {
    let _ = client.try_disconnect();
    while let Some(n) = net.recv().await {
        if matches!(n, super::Net::Closed | super::Net::Down(_)) {
            break;
        }
    }
}
