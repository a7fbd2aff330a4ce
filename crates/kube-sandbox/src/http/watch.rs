//! Watch streams: the event and bookmark frames (JSON lines or protobuf),
//! and the loop that sends a watch's initial events, then live ones, until
//! the client goes, the timeout ends or the watcher falls too far behind.
//!
//! This module must NOT change the store; it only reads events and counts
//! open watches.

use super::*;

pub(super) fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

/// One watch event in the stream's format: a JSON line, or a protobuf
/// frame.
pub(super) fn event(protobuf: bool, kind: &str, object: &[u8]) -> Bytes {
    if protobuf {
        return crate::protobuf::Frame::of_json(kind, object)
            .map(|f| f.frame())
            .unwrap_or_default();
    }
    event_line(kind, object)
}

pub(super) fn bookmark(
    res: &crate::registry::Resource,
    rv: u64,
    initial_end: bool,
    protobuf: bool,
) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": meta});
    if protobuf {
        return crate::protobuf::watch_frame("BOOKMARK", &obj).unwrap_or_default();
    }
    event_line("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

pub(super) async fn watch(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    q: &Query,
    o: ObjectRoute,
    protobuf: bool,
) -> Result<http::Response<Body>, ApiError> {
    let filter = filter_from(q, &o.res, o.namespace.as_deref())?;
    let res = o.res.clone();
    let send_initial = q.flag("sendInitialEvents");
    let rv = match q
        .get("resourceVersion")
        .filter(|s| !s.is_empty() && *s != "0")
    {
        Some(s) if !send_initial => Some(parse_rv(s)?),
        _ => None,
    };
    let bookmarks = q.flag("allowWatchBookmarks");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        // The real server caps watches at its --min-request-timeout range;
        // 30 minutes keeps forgotten watches from living forever.
        .unwrap_or(Duration::from_secs(1800));
    let table = wants_table(headers);
    let start = {
        let store = shared.store.lock().await;
        store.watch(&res, &filter, rv)
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let mut closed = shared.watch_closer.subscribe();
    let bookmark_every = shared.config.bookmark_interval;
    shared.watch_opened();
    let guard_shared = shared.clone();
    match start {
        Err(e) if e.code == 410 => {
            // A too-old revision is reported inside the stream, as the
            // real server does, so clients re-list.
            let line = event(
                protobuf,
                "ERROR",
                &serde_json::to_vec(&e.to_status()).unwrap_or_default(),
            );
            let _ = tx.send(Ok(line)).await;
            shared.watch_closed();
        }
        Err(e) => {
            shared.watch_closed();
            return Err(e);
        }
        Ok(mut start) => {
            tokio::spawn(async move {
                let _guard = WatchGuard(guard_shared);
                let render = |kind: &str, obj: &Bytes| -> Bytes {
                    if table {
                        let v: Value = crate::json::parse(obj).unwrap_or(Value::Null);
                        let t = crate::table::table(&res, &[v], 0, None);
                        event_line(kind, &serde_json::to_vec(&t).unwrap_or_default())
                    } else {
                        // Events carry the stored form; a converted view
                        // answers its own.
                        event(
                            protobuf,
                            kind,
                            &crate::convert::bytes_to_view(&res, obj.clone()),
                        )
                    }
                };
                // Every protobuf watch of a stored-version resource sends an
                // unchanged event's same frame: it is encoded once (or was,
                // for the answer of the write that made the event).
                let send_form = |e: &Event, kind: &str, obj: &Bytes| -> Bytes {
                    if protobuf
                        && res.stored_as.is_none()
                        && kind == e.kind.as_str()
                        && obj.as_ptr() == e.object.as_ptr()
                        && obj.len() == e.object.len()
                    {
                        return e
                            .protobuf_frame()
                            .map(crate::protobuf::Frame::frame)
                            .unwrap_or_default();
                    }
                    render(kind, obj)
                };
                let mut last = start.rv;
                let mut max_sent = 0u64;
                for e in &start.initial {
                    max_sent = max_sent.max(e.rv);
                    let Some((kind, object)) = filter.deliver(e) else {
                        continue;
                    };
                    if tx
                        .send(Ok(send_form(e, kind.as_str(), &object)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                if send_initial
                    && bookmarks
                    && tx
                        .send(Ok(bookmark(&res, last, true, protobuf)))
                        .await
                        .is_err()
                {
                    return;
                }
                let deadline = tokio::time::sleep(timeout);
                tokio::pin!(deadline);
                let mut ticker = tokio::time::interval(bookmark_every);
                ticker.reset();
                loop {
                    tokio::select! {
                        _ = &mut deadline => return,
                        _ = closed.changed() => return,
                        _ = ticker.tick(), if bookmarks => {
                            if tx.send(Ok(bookmark(&res, last, false, protobuf))).await.is_err() {
                                return;
                            }
                        }
                        ev = start.rx.recv() => match ev {
                            Ok(e) => {
                                last = last.max(e.rv);
                                // Events already replayed from history are skipped.
                                if e.rv <= max_sent || *e.resource != *res.qualified() {
                                    continue;
                                }
                                let Some((kind, object)) = filter.deliver(&e) else {
                                    continue;
                                };
                                if tx.send(Ok(send_form(&e, kind.as_str(), &object))).await.is_err() {
                                    return;
                                }
                            }
                            // A watcher that fell behind is cut off; it
                            // resumes from its last revision.
                            Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
                        }
                    }
                }
            });
        }
    }
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let mut r = http::Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(if protobuf {
            crate::protobuf::WATCH_MEDIA_TYPE
        } else {
            "application/json"
        }),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(r)
}

pub(super) struct WatchGuard(Arc<Shared>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.watch_closed();
    }
}
