//! How many agents run at once: every chat turn (the owner's, a scheduled one, a continuation)
//! and every app job takes a [`Slot`] before its process starts and gives it back when it
//! ends. At most `max` run together; background work (scheduled turns, continuations, app
//! jobs) may hold at most `background_max` of them, so the rest stay free for the owner. Who
//! waits is served first come first served within their class, the owner's class always
//! first: a flood of scheduled turns never makes the owner's next message wait behind it.

use crate::config::MAX_MAX_RUNNING;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::locks::Unpoisoned;
use serde::Serialize;
use tokio::sync::oneshot;

/// Whose work a slot is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A turn the owner started (a message, an answer, a retry).
    Owner,
    /// Scheduled turns, automatic continuations and app jobs.
    Background,
}

impl Class {
    /// The class of a turn that answers `messages`: background when every one is a scheduled
    /// prompt or an automatic continuation, the owner's otherwise.
    pub fn of(messages: &[crate::protocol::Message]) -> Self {
        let background = |m: &crate::protocol::Message| {
            m.cid
                .as_deref()
                .is_some_and(|c| crate::agent::schedule_ends::is_scheduled(c) || crate::writer::is_continuation(c))
        };
        if !messages.is_empty() && messages.iter().all(background) { Class::Background } else { Class::Owner }
    }
}

/// The slots of one server.
#[derive(Debug)]
pub struct Slots {
    max: usize,
    background_max: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    background: usize,
    next_ticket: u64,
    owner: VecDeque<(u64, oneshot::Sender<Slot>)>,
    waiting_background: VecDeque<(u64, oneshot::Sender<Slot>)>,
}

/// A running agent's place: dropping it lets the next waiter in.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    class: Class,
}

/// A place in the queue: [`Ticket::wait`] for the slot; dropping it leaves the queue.
#[derive(Debug)]
pub struct Ticket {
    slots: Arc<Slots>,
    id: u64,
    class: Class,
    granted: oneshot::Receiver<Slot>,
}

/// How busy the slots are, as Settings and a waiting turn show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SlotsState {
    pub max: usize,
    pub background_max: usize,
    pub running: usize,
    pub background_running: usize,
    pub waiting: usize,
}

impl Slots {
    /// At most `max` agents at once (at least 1); background work keeps a quarter of them
    /// (at least one) free for the owner, unless there is only one.
    pub fn new(max: usize) -> Arc<Self> {
        let max = max.clamp(1, MAX_MAX_RUNNING);
        let background_max = (max - (max / 4).max(1)).max(1);
        Arc::new(Self { max, background_max, state: Mutex::default() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }

    /// A slot now, when one is free for `class` and nobody of its class (or, for background
    /// work, of the owner's) waits; else a place in the queue.
    pub fn take(self: &Arc<Self>, class: Class) -> Result<Slot, Ticket> {
        let mut state = self.lock();
        let free = match class {
            Class::Owner => state.owner.is_empty() && state.running < self.max,
            Class::Background => {
                state.owner.is_empty()
                    && state.waiting_background.is_empty()
                    && state.running < self.max
                    && state.background < self.background_max
            }
        };
        if free {
            state.running += 1;
            if class == Class::Background {
                state.background += 1;
            }
            return Ok(Slot { slots: self.clone(), class });
        }
        state.next_ticket += 1;
        let id = state.next_ticket;
        let (tx, granted) = oneshot::channel();
        match class {
            Class::Owner => state.owner.push_back((id, tx)),
            Class::Background => state.waiting_background.push_back((id, tx)),
        }
        Err(Ticket { slots: self.clone(), id, class, granted })
    }

    /// How busy the slots are, and the limit a waiter of `class` waits on.
    pub fn state(&self) -> SlotsState {
        let state = self.lock();
        SlotsState {
            max: self.max,
            background_max: self.background_max,
            running: state.running,
            background_running: state.background,
            waiting: state.owner.len() + state.waiting_background.len(),
        }
    }

    /// Gives a slot of `class` back and hands the free ones to the next waiters.
    fn release(self: &Arc<Self>, class: Class) {
        let granted = {
            let mut state = self.lock();
            state.running -= 1;
            if class == Class::Background {
                state.background -= 1;
            }
            let mut granted = Vec::new();
            while state.running < self.max {
                if let Some((_, tx)) = state.owner.pop_front() {
                    state.running += 1;
                    granted.push((tx, Class::Owner));
                } else if state.background < self.background_max
                    && let Some((_, tx)) = state.waiting_background.pop_front()
                {
                    state.running += 1;
                    state.background += 1;
                    granted.push((tx, Class::Background));
                } else {
                    break;
                }
            }
            granted
        };
        // Outside the lock: a waiter that left meanwhile drops its slot, which releases again.
        for (tx, class) in granted {
            let _ = tx.send(Slot { slots: self.clone(), class });
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.release(self.class);
    }
}

impl Ticket {
    /// Waits until the slot is granted.
    pub async fn wait(mut self) -> Slot {
        loop {
            match (&mut self.granted).await {
                Ok(slot) => return slot,
                // The sender is only dropped with the queue entry, which this ticket owns.
                Err(_) => std::future::pending::<()>().await,
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        let queue = match self.class {
            Class::Owner => &mut state.owner,
            Class::Background => &mut state.waiting_background,
        };
        queue.retain(|(id, _)| *id != self.id);
        // A slot granted but not taken is dropped with `granted`, and goes back.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(slots: &Arc<Slots>, class: Class) -> Slot {
        slots.take(class).unwrap_or_else(|_| panic!("a free slot for {class:?}"))
    }

    fn queued(slots: &Arc<Slots>, class: Class) -> Ticket {
        slots.take(class).err().unwrap_or_else(|| panic!("{class:?} should wait"))
    }

    #[test]
    fn background_work_leaves_room_for_the_owner() {
        let slots = Slots::new(4);
        assert_eq!((slots.state().max, slots.state().background_max), (4, 3));
        let background: Vec<Slot> = (0..3).map(|_| taken(&slots, Class::Background)).collect();
        let _waits = queued(&slots, Class::Background);
        let owner = taken(&slots, Class::Owner);
        assert_eq!(slots.state().running, 4);
        let _next = queued(&slots, Class::Owner);
        drop(owner);
        assert_eq!(slots.state().running, 4, "the waiting owner got it");
        drop(background);
        assert_eq!(Slots::new(1).background_max, 1, "one slot is everyone's");
        assert_eq!(Slots::new(8).background_max, 6);
    }

    #[tokio::test]
    async fn the_owner_goes_first_and_each_class_in_order_of_arrival() {
        let slots = Slots::new(2);
        let first = taken(&slots, Class::Owner);
        let second = taken(&slots, Class::Owner);
        let b1 = queued(&slots, Class::Background);
        let b2 = queued(&slots, Class::Background);
        let o1 = queued(&slots, Class::Owner);
        assert_eq!(slots.state().waiting, 3);
        drop(first);
        let o1 = o1.wait().await;
        assert_eq!(o1.class, Class::Owner, "the owner, though the schedules came first");
        drop(second);
        let b1 = b1.wait().await;
        // One background slot of two: b2 waits although a slot is free.
        assert_eq!(slots.state().running, 2);
        drop(o1);
        assert_eq!(slots.state().running, 1, "b2 waits for the background share");
        drop(b1);
        let _b2 = b2.wait().await;
        assert_eq!(
            slots.state(),
            SlotsState { max: 2, background_max: 1, running: 1, background_running: 1, waiting: 0 }
        );
    }

    #[tokio::test]
    async fn a_waiter_that_leaves_gives_its_place_and_its_slot_back() {
        let slots = Slots::new(1);
        let running = taken(&slots, Class::Owner);
        let gone = queued(&slots, Class::Owner);
        let next = queued(&slots, Class::Owner);
        let late = queued(&slots, Class::Owner);
        drop(gone);
        assert_eq!(slots.state().waiting, 2);
        // Granted to `next`, which leaves before taking it: the slot goes on to `late`.
        drop(running);
        drop(next);
        let late = late.wait().await;
        assert_eq!(slots.state().running, 1);
        drop(late);
        assert_eq!(slots.state().running, 0);
        let _again = taken(&slots, Class::Background);
    }
}
