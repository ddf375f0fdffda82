//! The primitives' races under the `loom` model checker, which runs every
//! interleaving of the threads below (a lost wake-up shows as a deadlock):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p rpcrdma-sync --release --test loom
//! ```
//!
//! (Only this target: loom's primitives work only inside a model, so the
//! unit tests and the documentation's examples, which use them outside
//! one, run in the ordinary build.)
#![cfg(loom)]

use std::future::poll_fn;

use loom::future::block_on;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use rpcrdma_sync::{Budget, Latch, MemoryAccount, Shared, Signal};

/// Runs `f` under the model checker, bounding the preemptions per
/// execution (loom's advice for tests of three threads: a bound of 2 or 3
/// finds nearly every bug in a fraction of the time; `LOOM_MAX_PREEMPTIONS`
/// overrides it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// A notification racing the waiter's look-then-register is never lost.
#[test]
fn signal_notify_races_wait() {
    model(|| {
        let s = Arc::new(Signal::new());
        let n = thread::spawn({
            let s = s.clone();
            move || s.notify()
        });
        block_on(s.wait());
        n.join().unwrap();
        assert!(!s.is_set(), "the wait consumed the one notification");
    });
}

/// Two notifiers at once: the waiter, counting what they did, wakes until
/// it has seen both (notifications coalesce, none is lost).
#[test]
fn signal_concurrent_notifies_wake_the_waiter() {
    model(|| {
        let s = Arc::new(Signal::new());
        let done = Arc::new(AtomicUsize::new(0));
        let notifiers: Vec<_> = (0..2)
            .map(|_| {
                let (s, done) = (s.clone(), done.clone());
                thread::spawn(move || {
                    done.fetch_add(1, Ordering::Release);
                    s.notify();
                })
            })
            .collect();
        while done.load(Ordering::Acquire) < 2 {
            block_on(s.wait());
        }
        for n in notifiers {
            n.join().unwrap();
        }
    });
}

/// The value set by one thread reaches a task waiting in another.
#[test]
fn latch_set_races_wait() {
    model(|| {
        let l = Arc::new(Latch::new());
        let t = thread::spawn({
            let l = l.clone();
            move || assert!(l.set(7u32))
        });
        assert_eq!(block_on(l.wait()), 7);
        assert!(l.is_set());
        t.join().unwrap();
    });
}

/// Two setters at once: exactly one wins, and every reader sees its value.
#[test]
fn latch_first_of_concurrent_sets_wins() {
    model(|| {
        let l = Arc::new(Latch::new());
        let setters: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|v| {
                let l = l.clone();
                thread::spawn(move || l.set(v).then_some(v))
            })
            .collect();
        let seen = block_on(l.wait());
        let winners: Vec<u32> = setters
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(winners, [seen]);
        assert_eq!(l.get(), Some(seen));
    });
}

/// A task waiting for room is woken by a give-back that races its look at
/// the epoch, and then gets its charge.
#[test]
fn budget_give_back_races_a_waiting_charge() {
    model(|| {
        let b = Arc::new(Budget::new(10));
        assert!(b.charge_within(10, 0));
        let t = thread::spawn({
            let b = b.clone();
            move || b.give_back(10)
        });
        loop {
            let seen = b.epoch();
            if b.charge_within(4, 0) {
                break;
            }
            block_on(poll_fn(|cx| b.poll_released(seen, cx)));
        }
        t.join().unwrap();
        assert_eq!(b.in_use(), 4);
    });
}

/// Waits, as a driver does, until `ready` holds of the shared value: reads
/// the epoch, looks, and waits for a release if the look failed.
fn wait_until(s: &Shared<u32>, ready: impl Fn(&u32) -> bool) {
    loop {
        let seen = s.epoch();
        if s.with(|v| ready(v)) {
            return;
        }
        block_on(poll_fn(|cx| s.poll_released(seen, cx)));
    }
}

/// A release racing a task about to wait (between its look at the epoch,
/// its look at the value and its registration) is never lost.
#[test]
fn shared_release_races_a_waiter() {
    model(|| {
        let s = Arc::new(Shared::new(0u32));
        let t = thread::spawn({
            let s = s.clone();
            move || s.release_with(|v| *v += 1)
        });
        wait_until(&s, |v| *v == 1);
        t.join().unwrap();
        assert_eq!(s.epoch(), 1);
    });
}

/// Two releases at once: both count, the epoch moves twice, and the
/// waiter wakes until it has seen both.
#[test]
fn shared_concurrent_releases_wake_the_waiter() {
    model(|| {
        let s = Arc::new(Shared::new(0u32));
        let releasers: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.release_with(|v| *v += 1))
            })
            .collect();
        wait_until(&s, |v| *v == 2);
        for r in releasers {
            r.join().unwrap();
        }
        assert_eq!(s.epoch(), 2);
    });
}

/// Two tasks waiting at once are both woken by one release.
#[test]
fn shared_one_release_wakes_every_waiter() {
    model(|| {
        let s = Arc::new(Shared::new(0u32));
        let other = thread::spawn({
            let s = s.clone();
            move || wait_until(&s, |v| *v == 1)
        });
        let releaser = thread::spawn({
            let s = s.clone();
            move || s.release_with(|v| *v = 1)
        });
        wait_until(&s, |v| *v == 1);
        other.join().unwrap();
        releaser.join().unwrap();
    });
}
