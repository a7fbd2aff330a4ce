//! A protobuf write's answer and its event's watch frame are encoded
//! once and shared; these tests hold the shared bytes equal to a fresh
//! encoding of the same JSON, frame by frame and answer by answer.

use super::*;
use crate::protobuf::{MEDIA_TYPE as PB, decode, encode};
use crate::{Config, Sandbox};
use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use prost::Message;

const SVCS: &str = "/api/v1/namespaces/default/services";

/// A write answered in protobuf: the status and the body.
async fn write(sb: &Sandbox, method: Method, path: &str, ct: &str, body: Value) -> Bytes {
    let r = reqwest::Client::new()
        .request(method, format!("{}{path}", sb.url()))
        .header("content-type", ct)
        .header("accept", format!("{PB}, application/json"))
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    assert_eq!(r.headers()["content-type"], PB);
    let b = r.bytes().await.unwrap();
    assert!(matches!(status, 200 | 201), "{status}");
    b
}

async fn open_watch(sb: &Sandbox, query: &str, protobuf: bool) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(format!("{}{SVCS}?watch=true{query}", sb.url()));
    if protobuf {
        req = req.header("accept", format!("{PB}, application/json"));
    }
    req.send().await.unwrap()
}

/// The next `n` frames of a protobuf watch, each whole with its length.
async fn frames(w: &mut reqwest::Response, n: usize) -> Vec<Vec<u8>> {
    let mut pending = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(60), w.chunk())
            .await
            .expect("a frame")
            .unwrap()
            .expect("the stream goes on");
        pending.extend_from_slice(&chunk);
        while pending.len() >= 4 {
            let len = u32::from_be_bytes([pending[0], pending[1], pending[2], pending[3]]);
            let end = 4 + len as usize;
            if pending.len() < end {
                break;
            }
            out.push(pending.drain(..end).collect());
        }
    }
    out
}

/// The next `n` events of a JSON watch: their type and object.
async fn lines(w: &mut reqwest::Response, n: usize) -> Vec<(String, Value)> {
    let mut pending = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(60), w.chunk())
            .await
            .expect("an event")
            .unwrap()
            .expect("the stream goes on");
        pending.extend_from_slice(&chunk);
        while let Some(at) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=at).collect();
            let mut e: Value = serde_json::from_slice(&line).unwrap();
            out.push((e["type"].as_str().unwrap().to_string(), e["object"].take()));
        }
    }
    out
}

/// A frame as a fresh, independent encoding makes it: the object
/// encoded from its JSON, wrapped by prost's `WatchEvent`.
fn fresh_frame(kind: &str, object: &Value) -> Vec<u8> {
    let event = WatchEvent {
        r#type: Some(kind.to_string()),
        object: Some(RawExtension {
            raw: Some(encode(object).unwrap()),
        }),
    };
    let body = event.encode_to_vec();
    [(body.len() as u32).to_be_bytes().to_vec(), body].concat()
}

fn name_and_rv(pb: &[u8]) -> (String, String) {
    let v = decode(pb, "v1", "Service").unwrap();
    let meta = &v["metadata"];
    (
        meta["name"].as_str().unwrap().to_string(),
        meta["resourceVersion"].as_str().unwrap().to_string(),
    )
}

fn raw_of(frame: &[u8]) -> Vec<u8> {
    WatchEvent::decode(&frame[4..])
        .unwrap()
        .object
        .unwrap()
        .raw
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_answers_and_frames_equal_fresh_encodings() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let before: Value = reqwest::get(format!("{}{SVCS}", sb.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Every watch starts after the same revision, so all see the same
    // events in the same order.
    let from = format!(
        "&resourceVersion={}",
        before["metadata"]["resourceVersion"].as_str().unwrap()
    );
    let mut live_pb = open_watch(&sb, &from, true).await;
    let mut live_json = open_watch(&sb, &from, false).await;

    let mut answers = Vec::new();
    let svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "labels": {"v": "1"}},
            "spec": {"ports": [{"port": 80}]}});
    answers.push(write(&sb, Method::POST, SVCS, "application/json", svc).await);
    // An update: the answer is the new version, never the cached
    // bytes of the one before.
    let mut current: Value = reqwest::get(format!("{}{SVCS}/web", sb.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    current["metadata"]["labels"]["v"] = json!("2");
    let path = format!("{SVCS}/web");
    answers.push(write(&sb, Method::PUT, &path, "application/json", current).await);
    let merge = "application/merge-patch+json";
    let patch = json!({"metadata": {"labels": {"v": "3"}, "finalizers": ["example.com/keep"]}});
    answers.push(write(&sb, Method::PATCH, &path, merge, patch).await);
    // A delete held by a finalizer answers the marked object.
    answers.push(write(&sb, Method::DELETE, &path, "application/json", json!({})).await);
    answers.push(
        write(
            &sb,
            Method::PATCH,
            &path,
            merge,
            json!({"metadata": {"finalizers": null}}),
        )
        .await,
    );
    // A Service's delete answers the deleted object.
    let api = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "api"}, "spec": {"ports": [{"port": 81}]}});
    answers.push(write(&sb, Method::POST, SVCS, "application/json", api).await);
    let api_path = format!("{SVCS}/api");
    answers.push(
        write(
            &sb,
            Method::DELETE,
            &api_path,
            "application/json",
            json!({}),
        )
        .await,
    );

    // The JSON watch says how many events the writes made, and what
    // each event's object is.
    let mut events = Vec::new();
    loop {
        let e = lines(&mut live_json, 1).await.remove(0);
        let done = e.0 == "DELETED" && e.1["metadata"]["name"] == "api";
        events.push(e);
        if done {
            break;
        }
    }
    let by_rv = |rv: &str| -> &Value {
        &events
            .iter()
            .find(|(_, o)| o["metadata"]["resourceVersion"] == rv)
            .unwrap()
            .1
    };

    // Every answer is the fresh encoding of its own version, and each
    // write's answer is a newer version than the one before.
    let mut last_rv = 0u64;
    for a in &answers {
        let (_, rv) = name_and_rv(a);
        let n: u64 = rv.parse().unwrap();
        assert!(n > last_rv, "an answer repeats an older version");
        last_rv = n;
        assert_eq!(a.as_ref(), encode(by_rv(&rv)).unwrap().as_slice());
    }
    for pair in answers.windows(2) {
        assert_ne!(pair[0], pair[1]);
    }

    // The live protobuf watch, and a watch replaying the same events
    // from history (frames the answers may have encoded first).
    let mut replay_pb = open_watch(&sb, &from, true).await;
    for w in [&mut live_pb, &mut replay_pb] {
        let got = frames(w, events.len()).await;
        for ((kind, object), frame) in events.iter().zip(&got) {
            assert_eq!(frame, &fresh_frame(kind, object), "{kind}");
        }
    }

    // The initial list of a watch from revision 0: synthetic ADDED
    // events of every Service there is.
    let list: Value = reqwest::get(format!("{}{SVCS}", sb.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = list["items"].as_array().unwrap().clone();
    assert!(!items.is_empty());
    let mut initial = open_watch(&sb, "&resourceVersion=0", true).await;
    for frame in frames(&mut initial, items.len()).await {
        let (name, _) = name_and_rv(&raw_of(&frame));
        let item = items
            .iter()
            .find(|i| i["metadata"]["name"] == name.as_str())
            .unwrap();
        assert_eq!(frame, fresh_frame("ADDED", item));
    }
}
