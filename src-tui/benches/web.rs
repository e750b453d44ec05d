//! The web console under load (whole-run, percentiles printed): the kernel's
//! tick (compute + publish) while 0, 1 and 20 WebSocket viewers read every
//! event of a run producing ≥ 200 events/s, and the ratio of its p99 to the
//! run without viewers. The page's own timings (load → first snapshot, event
//! → DOM) are measured in Chromium by `ui/tests/bench.mjs`. Then the same
//! run scraped: `GET /metrics` every 50 ms over a fresh loopback connection,
//! the request's time (connect to the last byte) as p50/p99, and the tick
//! while scraped.
//!
//! Run: `cargo bench -p robobrain-tui --bench web` (10 s per case; set
//! `ROBOBRAIN_BENCH_SECONDS` to change).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../src-core/benches/figures.rs"]
mod figures;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use robobrain_core::config::Config;
use robobrain_core::protocol::{Command, Origin};
use robobrain_core::runtime::Pace;
use robobrain_core::session::{Session, SessionOptions};
use robobrain_tui::web::{Access, Served, WebServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use figures::percentile;

/// One `GET /metrics` over a new connection: how long to the last byte, and the body's size.
async fn scrape(addr: std::net::SocketAddr) -> (Duration, usize) {
    let started = std::time::Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut body = Vec::new();
    stream.read_to_end(&mut body).await.unwrap();
    let took = started.elapsed();
    assert!(
        body.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    (took, body.len())
}

/// What one run measured.
struct Measured {
    tick_p50: Duration,
    tick_p99: Duration,
    events_per_s: f64,
    read_per_viewer_s: f64,
    /// Each `/metrics` scrape's time, sorted (empty unless scraped), and the last body's size.
    scrapes: (Vec<Duration>, usize),
}

/// One run with `viewers` pages attached, scraped every 50 ms when `scraped`.
async fn run(viewers: usize, scraped: bool, seconds: f64) -> Measured {
    let mut config = Config::default();
    config.kernel.telemetry_interval_s = 0.1;
    config.patrol.interval_s = Some(60.0);
    config.speech.voice = robobrain_core::voice::VoiceChoice::Text;
    config.skills.keep_frames = false;
    config.memory.enabled = false;
    config.runs_dir = std::env::temp_dir().join(format!("rb-bench-web-{}", std::process::id()));
    // 0.1 s ticks at 20× real time: 200 ticks and ≥ 200 events a wall second.
    let options = SessionOptions {
        pace: Pace::RealTime { speed: 20.0 },
        keep_recent: 20_000,
        ..SessionOptions::new("bench")
    };
    let session = Session::open(&config, options).await.unwrap();
    session
        .runtime()
        .send(Command::StartPatrol { route: None }, Origin::console())
        .await
        .unwrap();
    let served = Arc::new(Served {
        session,
        access: Access {
            loopback: true,
            ..Access::default()
        },
    });
    let server = WebServer::bind(Arc::clone(&served), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.addr;
    let stop = CancellationToken::new();
    tokio::spawn(server.serve(stop.clone()));
    let read = Arc::new(AtomicU64::new(0));
    for _ in 0..viewers {
        let read = Arc::clone(&read);
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
            .await
            .unwrap();
        tokio::spawn(async move {
            while let Some(Ok(_)) = ws.next().await {
                read.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let seq0 = served.session.runtime().snapshot().seq;
    let skip = served.session.runtime().tick_durations().len();
    let scraper = scraped.then(|| {
        tokio::spawn(async move {
            let end = std::time::Instant::now() + Duration::from_secs_f64(seconds);
            let (mut times, mut size) = (Vec::new(), 0);
            while std::time::Instant::now() < end {
                let (took, bytes) = scrape(addr).await;
                times.push(took);
                size = bytes;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (times, size)
        })
    });
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let mut scrapes = match scraper {
        Some(task) => task.await.unwrap(),
        None => (Vec::new(), 0),
    };
    scrapes.0.sort();
    let mut ticks: Vec<Duration> = served
        .session
        .runtime()
        .tick_durations()
        .into_iter()
        .skip(skip)
        .collect();
    let seq1 = served.session.runtime().snapshot().seq;
    stop.cancel();
    ticks.sort();
    let rate = (seq1 - seq0) as f64 / seconds;
    let per_viewer = if viewers == 0 {
        0.0
    } else {
        read.load(Ordering::Relaxed) as f64 / viewers as f64 / seconds
    };
    Measured {
        tick_p50: percentile(&ticks, 0.5),
        tick_p99: percentile(&ticks, 0.99),
        events_per_s: rate,
        read_per_viewer_s: per_viewer,
        scrapes,
    }
}

fn main() {
    let seconds: f64 = std::env::var("ROBOBRAIN_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut baseline = None;
    for viewers in [0, 1, 20] {
        let m = rt.block_on(run(viewers, false, seconds));
        let (p50, p99, rate, per_viewer) =
            (m.tick_p50, m.tick_p99, m.events_per_s, m.read_per_viewer_s);
        let base = *baseline.get_or_insert(p99);
        let id = format!("web.viewers_{viewers}");
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        figures::record(
            &format!("{id}.tick_p50"),
            &format!("kernel tick (compute + publish) with {viewers} WebSocket viewers, p50"),
            us(p50),
            "µs",
        );
        figures::record(
            &format!("{id}.tick_p99"),
            &format!("kernel tick (compute + publish) with {viewers} WebSocket viewers, p99"),
            us(p99),
            "µs",
        );
        figures::record(
            &format!("{id}.ratio"),
            &format!("tick p99 with {viewers} viewers / without"),
            p99.as_secs_f64() / base.as_secs_f64(),
            "×",
        );
        figures::record(
            &format!("{id}.events_per_s"),
            &format!("events published per second with {viewers} viewers"),
            rate,
            "events/s",
        );
        println!(
            "web: {viewers:>2} viewers  tick p50 {p50:>9.2?}  p99 {p99:>9.2?}  p99/no-viewer {:.2}  events {rate:.0}/s  read by each viewer {per_viewer:.0} msgs/s",
            p99.as_secs_f64() / base.as_secs_f64()
        );
    }
    let m = rt.block_on(run(0, true, seconds));
    let (times, bytes) = &m.scrapes;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (p50, p99) = (percentile(times, 0.5), percentile(times, 0.99));
    figures::record(
        "web.metrics.scrape_p50",
        &format!(
            "GET /metrics (new connection to the last byte) at {:.0} events/s, p50 of {}",
            m.events_per_s,
            times.len()
        ),
        us(p50),
        "µs",
    );
    figures::record(
        "web.metrics.scrape_p99",
        &format!(
            "GET /metrics (new connection to the last byte) at {:.0} events/s, p99 of {}",
            m.events_per_s,
            times.len()
        ),
        us(p99),
        "µs",
    );
    figures::record(
        "web.metrics.tick_p99",
        "kernel tick (compute + publish) p99 while /metrics is scraped every 50 ms",
        us(m.tick_p99),
        "µs",
    );
    println!(
        "web: /metrics scraped {} times every 50 ms at {:.0} events/s  p50 {p50:>9.2?}  p99 {p99:>9.2?}  ({bytes} bytes)  tick p50 {:>9.2?}  p99 {:>9.2?}",
        times.len(),
        m.events_per_s,
        m.tick_p50,
        m.tick_p99
    );
}
