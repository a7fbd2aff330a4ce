use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn cfg() -> QueueConfig {
    QueueConfig {
        debounce: Duration::from_millis(100),
        max_delay: Duration::from_millis(1000),
        backoff_base: Duration::from_millis(200),
        backoff_cap: Duration::from_secs(10),
    }
}

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new(cfg()).unwrap()
}

async fn advance(ms: u64) {
    tokio::time::advance(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn a_gathering_batch_takes_keys_due_soon_but_never_starts_early() {
    let q = queue();
    let t0 = Instant::now();
    q.add("a");
    advance(30).await;
    q.add("b");
    advance(40).await;
    q.add("c");
    // a is due at 100, b at 130, c at 170 (debounce 100 ms).
    advance(20).await;
    assert!(q.drain_ready(10).is_empty(), "nothing is due yet at 90");
    let batch = q.next_batch_gathering(10, Duration::from_millis(50)).await;
    assert_eq!(
        batch,
        vec!["a", "b"],
        "c is due 70 ms after a, past the gather"
    );
    assert_eq!(
        Instant::now().duration_since(t0),
        Duration::from_millis(100),
        "the batch starts when a is due, not before"
    );
    for k in batch {
        q.done(&k, Outcome::Success).unwrap();
    }
    assert_eq!(q.next_batch_gathering(10, Duration::ZERO).await, vec!["c"]);
    assert_eq!(
        Instant::now().duration_since(t0),
        Duration::from_millis(170)
    );
}

#[test]
fn invalid_config_is_rejected() {
    let mut c = cfg();
    c.max_delay = Duration::from_millis(10);
    assert!(matches!(
        WorkQueue::<u8>::new(c),
        Err(QueueError::InvalidConfig(_))
    ));
    let mut c = cfg();
    c.backoff_cap = Duration::from_millis(1);
    assert!(matches!(
        WorkQueue::<u8>::new(c),
        Err(QueueError::InvalidConfig(_))
    ));
    assert!(QueueConfig::default().validate().is_ok());
}

#[tokio::test(start_paused = true)]
async fn add_dedups_and_debounces() {
    let q = queue();
    q.add("a");
    q.add("a");
    q.add("a");
    assert_eq!(q.len(), 1);
    assert!(
        q.drain_ready(10).is_empty(),
        "not ready before the debounce window"
    );
    advance(99).await;
    assert!(q.drain_ready(10).is_empty());
    advance(1).await;
    assert_eq!(q.drain_ready(10), vec!["a"]);
    assert_eq!(q.len(), 0);
    assert_eq!(q.in_flight(), 1);
}

#[tokio::test(start_paused = true)]
async fn burst_of_many_keys_is_gathered_into_one_batch() {
    let q = WorkQueue::new(cfg()).unwrap();
    for i in 0..50u32 {
        q.add(i);
        advance(1).await;
    }
    // The first key is ready 100 ms after its add; by then everything
    // added within that window is still waiting, the batch holds the
    // ones that became ready.
    advance(60).await;
    assert_eq!(q.drain_ready(1000).len(), 11);
    advance(100).await;
    assert_eq!(q.drain_ready(1000).len(), 39);
}

#[tokio::test(start_paused = true)]
async fn trailing_debounce_is_bounded_by_max_delay() {
    let q = queue();
    // An event every 50 ms forever: the debounce alone would never fire.
    for _ in 0..19 {
        q.add("a");
        advance(50).await;
        assert!(q.drain_ready(1).is_empty());
    }
    q.add("a");
    advance(50).await; // 1000 ms after the first add
    assert_eq!(q.drain_ready(1), vec!["a"]);
}

#[tokio::test(start_paused = true)]
async fn add_after_and_add_earliest_wins() {
    let q = queue();
    q.add_after("a", Duration::from_secs(60));
    advance(1000).await;
    assert!(q.drain_ready(1).is_empty());
    q.add("a");
    advance(100).await;
    assert_eq!(q.drain_ready(1), vec!["a"]);

    q.add_after("b", Duration::from_millis(10));
    q.add_after("b", Duration::from_secs(5));
    advance(10).await;
    assert_eq!(q.drain_ready(1), vec!["b"]);
}

#[tokio::test(start_paused = true)]
async fn next_waits_for_ready_key() {
    let q = queue();
    let worker = {
        let q = q.clone();
        tokio::spawn(async move { q.next().await })
    };
    tokio::task::yield_now().await;
    q.add("a");
    // With time paused, the runtime auto-advances to the debounce
    // deadline once every task is idle.
    assert_eq!(worker.await.unwrap(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn key_in_flight_is_not_handed_out_twice_and_requeued_after_done() {
    let q = queue();
    q.add("a");
    advance(100).await;
    assert_eq!(q.drain_ready(1), vec!["a"]);
    q.add("a");
    advance(1000).await;
    assert!(
        q.drain_ready(10).is_empty(),
        "in flight: must not be handed out again"
    );
    assert_eq!(q.len(), 0);
    q.done(&"a", Outcome::Success).unwrap();
    assert_eq!(q.len(), 1);
    // The add happened 1000 ms ago, so it is ready at once.
    assert_eq!(q.drain_ready(1), vec!["a"]);
    q.done(&"a", Outcome::Success).unwrap();
    assert_eq!((q.len(), q.in_flight()), (0, 0));
    assert_eq!(q.done(&"a", Outcome::Success), Err(QueueError::NotInFlight));
}

#[tokio::test(start_paused = true)]
async fn retry_backs_off_exponentially_and_success_resets() {
    let q = queue();
    q.add("a");
    advance(100).await;
    let mut expected_min = 100u64; // half of the 200 ms base
    for failures in 1..=4u32 {
        assert_eq!(q.drain_ready(1), vec!["a"]);
        q.done(&"a", Outcome::Retry).unwrap();
        assert_eq!(q.failures(&"a"), failures);
        advance(expected_min - 1).await;
        assert!(
            q.drain_ready(1).is_empty(),
            "retried before half the backoff"
        );
        // The full nominal delay is 2 * expected_min.
        advance(expected_min + 1).await;
        expected_min *= 2;
    }
    assert_eq!(q.drain_ready(1), vec!["a"]);
    q.done(&"a", Outcome::Success).unwrap();
    assert_eq!(q.failures(&"a"), 0);
    assert_eq!((q.len(), q.in_flight()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn retry_after_uses_exact_delay_and_keeps_failures() {
    let q = queue();
    q.add("a");
    advance(100).await;
    q.drain_ready(1);
    q.done(&"a", Outcome::Retry).unwrap();
    advance(200).await;
    assert_eq!(q.drain_ready(1), vec!["a"]);
    q.done(&"a", Outcome::RetryAfter(Duration::from_secs(3)))
        .unwrap();
    assert_eq!(q.failures(&"a"), 1);
    advance(2999).await;
    assert!(q.drain_ready(1).is_empty());
    advance(1).await;
    assert_eq!(q.drain_ready(1), vec!["a"]);
}

#[tokio::test(start_paused = true)]
async fn entries_are_freed_after_success() {
    let q = queue();
    q.add("a");
    advance(100).await;
    q.drain_ready(1);
    q.done(&"a", Outcome::Retry).unwrap();
    assert_eq!(
        q.lock().entries.len(),
        1,
        "failure count kept while retrying"
    );
    advance(200).await;
    q.drain_ready(1);
    q.done(&"a", Outcome::RetryAfter(Duration::ZERO)).unwrap();
    q.drain_ready(1);
    q.done(&"a", Outcome::Success).unwrap();
    assert_eq!(q.lock().entries.len(), 0);
    assert_eq!(q.failures(&"a"), 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_waiting_workers_with_none() {
    let q = queue();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.next().await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.add("x");
    q.shutdown();
    for w in workers {
        assert_eq!(w.await.unwrap(), None);
    }
    q.add("y");
    assert_eq!(q.len(), 0);
    assert!(q.is_shutdown());
}

#[tokio::test(start_paused = true)]
async fn many_workers_never_share_a_key() {
    let q: WorkQueue<u32> = WorkQueue::new(cfg()).unwrap();
    let holding = Arc::new(Mutex::new(BTreeSet::new()));
    let processed = Arc::new(Mutex::new(0u32));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (q, holding, processed) = (q.clone(), holding.clone(), processed.clone());
        workers.push(tokio::spawn(async move {
            while let Some(k) = q.next().await {
                assert!(
                    holding.lock().unwrap().insert(k),
                    "key {k} handed out twice"
                );
                tokio::time::sleep(Duration::from_millis(30)).await;
                holding.lock().unwrap().remove(&k);
                *processed.lock().unwrap() += 1;
                q.done(&k, Outcome::Success).unwrap();
            }
        }));
    }
    for round in 0..20u32 {
        for k in 0..5 {
            q.add((k + round) % 5);
        }
        advance(40).await;
    }
    // Let everything settle, then stop.
    for _ in 0..100 {
        if q.is_empty() && q.in_flight() == 0 {
            break;
        }
        advance(50).await;
    }
    assert_eq!((q.len(), q.in_flight()), (0, 0));
    q.shutdown();
    for w in workers {
        w.await.unwrap();
    }
    let n = *processed.lock().unwrap();
    assert!(n >= 5, "every key processed at least once, got {n}");
    // Dedup: 100 adds collapse into far fewer runs.
    assert!(n < 100, "events were not gathered: {n} runs");
}

#[test]
fn backoff_examples() {
    let base = Duration::from_millis(200);
    let cap = Duration::from_secs(300);
    assert_eq!(backoff_delay(base, cap, 1, 1.0), base);
    assert_eq!(backoff_delay(base, cap, 1, 0.0), base / 2);
    assert_eq!(backoff_delay(base, cap, 3, 1.0), base * 4);
    assert_eq!(backoff_delay(base, cap, 40, 1.0), cap);
    assert_eq!(backoff_delay(base, cap, u32::MAX, 1.0), cap);
    assert_eq!(backoff_delay(base, cap, 0, f64::NAN), base / 2);
    assert_eq!(backoff_delay(base, cap, 2, 7.0), base * 2);
}

proptest! {
    #[test]
    fn backoff_is_bounded_and_monotone_in_failures(
        base_ms in 0u64..10_000,
        extra_ms in 0u64..1_000_000,
        failures in 0u32..100,
        jitter in proptest::num::f64::ANY,
    ) {
        let base = Duration::from_millis(base_ms);
        let cap = base + Duration::from_millis(extra_ms);
        let d = backoff_delay(base, cap, failures, jitter);
        prop_assert!(d <= cap);
        let nominal = backoff_delay(base, cap, failures, 1.0);
        prop_assert!(d >= nominal / 2);
        prop_assert!(nominal <= backoff_delay(base, cap, failures.saturating_add(1), 1.0));
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    AddAfter(u8, u16),
    Take(u8),
    Done(u8, u8),
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..8).prop_map(Op::Add),
        (0u8..8, 0u16..3000).prop_map(|(k, d)| Op::AddAfter(k, d)),
        (1u8..4).prop_map(Op::Take),
        (0u8..16, 0u8..3).prop_map(|(i, o)| Op::Done(i, o)),
        (0u16..2000).prop_map(Op::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn queue_model(ops in proptest::collection::vec(op(), 0..80)) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async move {
            let q: WorkQueue<u8> = WorkQueue::new(cfg()).unwrap();
            let mut held: Vec<u8> = Vec::new();
            let mut owed: BTreeSet<u8> = BTreeSet::new();
            let mut distinct: BTreeSet<u8> = BTreeSet::new();
            let outcome = |o: u8| match o {
                0 => Outcome::Success,
                1 => Outcome::Retry,
                _ => Outcome::RetryAfter(Duration::from_millis(500)),
            };
            let take = |q: &WorkQueue<u8>, n: usize, held: &mut Vec<u8>, owed: &mut BTreeSet<u8>| {
                for k in q.drain_ready(n) {
                    assert!(!held.contains(&k), "key {k} handed out while in flight");
                    held.push(k);
                    owed.remove(&k);
                }
            };
            for op in ops {
                match op {
                    Op::Add(k) => { q.add(k); owed.insert(k); distinct.insert(k); }
                    Op::AddAfter(k, d) => {
                        q.add_after(k, Duration::from_millis(d.into()));
                        owed.insert(k);
                        distinct.insert(k);
                    }
                    Op::Take(n) => take(&q, n.into(), &mut held, &mut owed),
                    Op::Done(i, o) => {
                        if !held.is_empty() {
                            let k = held.remove(usize::from(i) % held.len());
                            q.done(&k, outcome(o)).unwrap();
                        }
                    }
                    Op::Advance(ms) => advance(ms.into()).await,
                }
                assert!(q.len() + q.in_flight() <= distinct.len());
                assert_eq!(q.in_flight(), held.len());
            }
            // Drain: everything still owed must come out, and with only
            // successes the queue must empty. 1000 rounds of 10 s are
            // far beyond any configured delay.
            for _ in 0..1000 {
                for k in held.drain(..) {
                    q.done(&k, Outcome::Success).unwrap();
                }
                take(&q, 100, &mut held, &mut owed);
                if owed.is_empty() && held.is_empty() && q.is_empty() {
                    break;
                }
                advance(10_000).await;
            }
            assert!(owed.is_empty(), "never handed out: {owed:?}");
            assert_eq!((q.len(), q.in_flight()), (0, 0));
        });
    }
}
