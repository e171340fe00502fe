//! The async serial generator over the core's serial generator and counter protocol.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use segflake::{ErrorKind, ManualClock, SerialOptions, Value};
use segflake_tokio::{Blocking, CounterRequest, FnCounter, SerialGenerator};

/// 2025-04-13T12:00:00Z.
const T0: u64 = 1_744_545_600_000;

/// `INCR` per key, in memory.
#[derive(Default)]
struct Incr(Mutex<HashMap<String, u64>>);

impl Incr {
    fn incr(&self, key: &str) -> u64 {
        let mut keys = self.0.lock().unwrap();
        let n = keys.entry(key.to_owned()).or_insert(0);
        *n += 1;
        *n
    }
}

fn incr_counter(
    incr: Arc<Incr>,
) -> FnCounter<impl Fn(CounterRequest) -> std::future::Ready<Result<Value, String>>> {
    FnCounter(move |r: CounterRequest| std::future::ready(Ok(Value::uint(incr.incr(&r.key)))))
}

both_runtimes!(
    serials_count_per_second_through_an_async_counter,
    a_blocking_counter_runs_on_the_pool,
    the_script_reply_is_read_by_the_core,
    counter_failures_are_store_errors,
    a_slow_counter_times_out_and_a_cancelled_next_repeats_nothing,
    a_counter_stuck_below_the_last_serial_gives_up,
    many_tasks_get_unique_serials,
);

async fn serials_count_per_second_through_an_async_counter() {
    let clock = Arc::new(ManualClock::new(T0));
    let serials = SerialGenerator::with_clock(
        SerialOptions::default(),
        incr_counter(Arc::default()),
        Arc::clone(&clock),
    )
    .unwrap();
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_001);
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_002);
    clock.advance_ms(1000);
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_010_001);
    // The clock steps back: the generator keeps counting in the last serial's second.
    clock.rewind_ms(5000);
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_010_002);
    assert_eq!(serials.last(), 2_504_131_200_010_002);
}

async fn a_blocking_counter_runs_on_the_pool() {
    let incr = Arc::new(Incr::default());
    let counter = {
        let incr = Arc::clone(&incr);
        Blocking::new(move |r: &CounterRequest| -> Result<Value, String> {
            assert_eq!(r.args[0], r.unix_second);
            Ok(Value::uint(incr.incr(&r.key)))
        })
    };
    let serials =
        SerialGenerator::with_clock(SerialOptions::default(), counter, ManualClock::new(T0))
            .unwrap();
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_001);
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_002);
    assert_eq!(incr.0.lock().unwrap()["serial:250413120000"], 2);
}

async fn the_script_reply_is_read_by_the_core() {
    let refuse = Arc::new(AtomicU64::new(0));
    let counter = {
        let refuse = Arc::clone(&refuse);
        let n = AtomicU64::new(0);
        FnCounter(move |_r: CounterRequest| {
            let reply = if refuse.load(Ordering::SeqCst) == 1 {
                vec![Value::uint(0), Value::uint(0), Value::uint(T0 + 120_000)]
            } else {
                let seq = n.fetch_add(1, Ordering::SeqCst) + 1;
                vec![Value::uint(1), Value::uint(seq), Value::uint(T0)]
            };
            std::future::ready(Ok(Value::List(reply)))
        })
    };
    let serials =
        SerialGenerator::with_clock(SerialOptions::default(), counter, ManualClock::new(T0))
            .unwrap();
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_001);
    refuse.store(1, Ordering::SeqCst);
    let e = serials.next().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ClockSkew, "{e}");
}

async fn counter_failures_are_store_errors() {
    let counter =
        FnCounter(|_r: CounterRequest| std::future::ready(Err("redis is down".to_string())));
    let serials =
        SerialGenerator::with_clock(SerialOptions::default(), counter, ManualClock::new(T0))
            .unwrap();
    let e = serials.next().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store);
    assert!(e.to_string().contains("redis is down"), "{e}");
    let garbage = FnCounter(|_r: CounterRequest| std::future::ready(Ok(Value::Str("five".into()))));
    let serials =
        SerialGenerator::with_clock(SerialOptions::default(), garbage, ManualClock::new(T0))
            .unwrap();
    assert_eq!(serials.next().await.unwrap_err().kind(), ErrorKind::Store);
}

async fn a_slow_counter_times_out_and_a_cancelled_next_repeats_nothing() {
    let incr = Arc::new(Incr::default());
    let slow = Arc::new(AtomicU64::new(1));
    let counter = {
        let (incr, slow) = (Arc::clone(&incr), Arc::clone(&slow));
        FnCounter(move |r: CounterRequest| {
            let (incr, slow) = (Arc::clone(&incr), Arc::clone(&slow));
            async move {
                if slow.load(Ordering::SeqCst) == 1 {
                    std::future::pending::<()>().await;
                }
                Ok(Value::uint(incr.incr(&r.key)))
            }
        })
    };
    let o = SerialOptions::default().with_counter_timeout_ms(50);
    let serials = SerialGenerator::with_clock(o, counter, ManualClock::new(T0)).unwrap();
    let e = serials.next().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store);
    assert!(e.to_string().contains("50 ms"), "{e}");
    let cancelled = tokio::time::timeout(Duration::from_millis(10), serials.next()).await;
    assert!(cancelled.is_err());
    assert_eq!(serials.last(), 0, "nothing recorded by a cancelled call");
    slow.store(0, Ordering::SeqCst);
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_001);
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_002);
}

async fn a_counter_stuck_below_the_last_serial_gives_up() {
    let counter = FnCounter(|_r: CounterRequest| std::future::ready(Ok(Value::uint(1))));
    let serials =
        SerialGenerator::with_clock(SerialOptions::default(), counter, ManualClock::new(T0))
            .unwrap();
    assert_eq!(serials.next().await.unwrap(), 2_504_131_200_000_001);
    let e = serials.next().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store);
    assert!(e.to_string().contains("in a row"), "{e}");
}

async fn many_tasks_get_unique_serials() {
    let incr = Arc::new(Incr::default());
    let serials = Arc::new(
        SerialGenerator::with_clock(
            SerialOptions::default(),
            incr_counter(Arc::clone(&incr)),
            ManualClock::new(T0),
        )
        .unwrap(),
    );
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let serials = Arc::clone(&serials);
            tokio::spawn(async move {
                let mut v = Vec::new();
                for _ in 0..500 {
                    v.push(serials.next().await.unwrap());
                    tokio::task::yield_now().await;
                }
                v
            })
        })
        .collect();
    let mut all = std::collections::HashSet::new();
    for task in tasks {
        let v = task.await.unwrap();
        assert!(common::increasing(&v));
        all.extend(v);
    }
    assert_eq!(all.len(), 2000);
    // Tasks racing may skip a count (an answer below one already accepted is asked
    // again), never repeat one.
    assert!(serials.last() >= 2_504_131_200_002_000);
    assert_eq!(serials.last(), *all.iter().max().unwrap());
}
