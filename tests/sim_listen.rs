//! `robobrain sim --listen` serves only a brain (issue 35: safety is never
//! a side door): a web page can make a browser send a plain HTTP `POST` to
//! the robot's port (`fetch(url, {mode: "no-cors", method: "POST", body})`),
//! so a `send_goal` line in its body must neither drive the robot nor knock
//! the connected brain off its link.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use robobrain_core::link::tcp::TcpLink;
use robobrain_core::link::{GoalStatus, LinkReply, LinkRequest, RobotLink};
use robobrain_core::world::World;

use crate::sim_process::SimProcess;
use crate::support::temp_dir;

/// Asks the robot about `goal_id` through `brain` and returns the answer,
/// with every other reply read meanwhile. Only the robot's current client
/// is answered, so an answer shows the brain still is that client; the
/// link must not have reconnected on the way.
fn ask(brain: &mut TcpLink, goal_id: &str) -> (GoalStatus, Vec<LinkReply>) {
    brain
        .send(LinkRequest::QueryGoal {
            goal_id: goal_id.into(),
        })
        .unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        brain.drain(&mut out);
        let status = out.iter().find_map(|r| match r {
            LinkReply::GoalStatus { goal_id: g, status } if g == goal_id => Some(status.clone()),
            _ => None,
        });
        if let Some(status) = status {
            assert!(
                !brain.take_reconnected(),
                "the brain lost its link to the robot"
            );
            return (status, out);
        }
        assert!(
            Instant::now() < deadline,
            "the robot no longer answers the brain (it lost its link): {out:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn an_http_post_with_a_goal_in_its_body_is_refused_and_the_brain_keeps_its_link() {
    let dir = temp_dir("sim-listen-http");
    let record = dir.join("goals.jsonl");
    let sim = SimProcess::start(&record, "1", &[]);
    let mut brain = TcpLink::connect(&sim.url).unwrap();
    ask(&mut brain, "t/before");

    // What a browser sends for a web page's no-cors fetch: headers, then
    // a body holding a goal the robot would take.
    let kitchen = World::builtin("apartment")
        .unwrap()
        .zone("kitchen")
        .unwrap()
        .goal;
    let goal = LinkRequest::SendGoal {
        goal_id: "web/g1".into(),
        kind: robobrain_core::link::GoalKind::Navigate {
            target: kitchen,
            zone: None,
        },
    };
    let body = format!("{}\n", serde_json::to_string(&goal).unwrap());
    let addr = sim.url.strip_prefix("tcp://").unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://example.com\r\n\
         Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut web = TcpStream::connect(addr).unwrap();
    // Only so that a robot that never closes fails the test, not hangs it.
    web.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    web.write_all(request.as_bytes()).unwrap();
    let mut said = Vec::new();
    match web.read_to_end(&mut said) {
        Ok(_) => {}
        // Closed with the rest of the request unread: a reset.
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => panic!(
            "the robot did not close the HTTP connection ({e}); it said: {}",
            String::from_utf8_lossy(&said)
        ),
    }
    let said = String::from_utf8_lossy(&said);
    assert!(!said.contains("\"accepted\""), "{said}");
    assert!(
        said.matches("\"refused\"").count() <= 1,
        "refused at its first line, not line by line: {said}"
    );

    // The robot never heard of the goal, and the brain is still its client.
    let (status, replies) = ask(&mut brain, "web/g1");
    assert_eq!(status, GoalStatus::Unknown, "{replies:?}");
    let goals = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(
        !goals.contains("web/g1"),
        "the robot took the goal: {goals}"
    );
    // And the base never moved.
    let moving: Vec<_> = replies
        .iter()
        .filter_map(|r| match r {
            LinkReply::Telemetry { telemetry } => Some(telemetry.twist),
            _ => None,
        })
        .filter(|t| t.linear != 0.0 || t.angular != 0.0)
        .collect();
    assert!(moving.is_empty(), "the base moved: {moving:?}");

    // A real brain still connects (and takes over, once it has spoken).
    let mut next = TcpLink::connect(&sim.url).unwrap();
    let (status, _) = ask(&mut next, "web/g1");
    assert_eq!(status, GoalStatus::Unknown);
    std::fs::remove_dir_all(&dir).unwrap();
}
