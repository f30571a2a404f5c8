//! A push slot that a batch gives up while it waits out a 429.
//!
//! `batch.max_in_flight` bounds the pushes on their way at once. A batch the
//! service keeps refusing with 429 (a tenant over its rate or stream limit)
//! spends nearly all its time waiting for its next attempt; holding a slot
//! through those waits would let one refused tenant stop every other
//! tenant's pushes. So the slot is handed back for the wait and taken again
//! for the next attempt. The same for a 401 or 403 answered to a batch of
//! one tenant (a gateway that refuses that tenant, or a service that does
//! not know it): the other tenants' batches go on. Other failures (the
//! service down or erring, or a refusal of a single-tenant client) keep
//! it: every batch would fail alike, and freeing slots would only send more
//! of them at once when it returns.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// True when a batch answered `status` gives its slot back while it waits:
/// a 429, or a 401/403 of a batch that carries a tenant.
pub fn gives_back(status: Option<u16>, has_tenant: bool) -> bool {
    match status {
        Some(429) => true,
        Some(401 | 403) => has_tenant,
        _ => false,
    }
}

/// One batch's claim on the client's push slots.
pub struct PushSlot {
    slots: Arc<Semaphore>,
    held: Mutex<Option<OwnedSemaphorePermit>>,
}

impl PushSlot {
    /// A claim holding `permit`, a slot of `slots`.
    pub fn new(slots: Arc<Semaphore>, permit: OwnedSemaphorePermit) -> Self {
        Self { slots, held: Mutex::new(Some(permit)) }
    }

    /// Gives the slot back (for a wait).
    pub fn release(&self) {
        if let Ok(mut h) = self.held.lock() {
            h.take();
        }
    }

    /// Takes a slot again unless one is held. False when the slots are closed.
    pub async fn take(&self) -> bool {
        if self.held.lock().map(|h| h.is_some()).unwrap_or(false) {
            return true;
        }
        match self.slots.clone().acquire_owned().await {
            Ok(p) => {
                if let Ok(mut h) = self.held.lock() {
                    *h = Some(p);
                }
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenants_refusal_and_a_429_give_the_slot_back_other_failures_keep_it() {
        assert!(gives_back(Some(429), false));
        assert!(gives_back(Some(401), true) && gives_back(Some(403), true));
        assert!(!gives_back(Some(401), false), "a single-tenant client's 401 is every batch's");
        assert!(!gives_back(Some(503), true) && !gives_back(None, true) && !gives_back(Some(404), true));
    }

    #[tokio::test]
    async fn a_released_slot_serves_another_batch_and_is_taken_back() {
        let slots = Arc::new(Semaphore::new(1));
        let a = PushSlot::new(slots.clone(), slots.clone().acquire_owned().await.unwrap());
        assert_eq!(slots.available_permits(), 0);
        a.release();
        let b = slots.clone().try_acquire_owned().expect("the released slot is free");
        let taking = tokio::spawn(async move {
            let took = a.take().await;
            (took, a)
        });
        tokio::task::yield_now().await;
        assert!(!taking.is_finished(), "the slot is taken only once free");
        drop(b);
        let (took, a) = taking.await.unwrap();
        assert!(took);
        assert_eq!(slots.available_permits(), 0, "the claim holds the slot again");
        drop(a);
        assert_eq!(slots.available_permits(), 1);
    }
}
