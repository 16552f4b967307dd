//! The one policy for a poisoned lock in the webhook and the installer (this crate, the
//! edge watch, the admission server and the installer's crates): take its value and go on.
//!
//! A std lock is poisoned when a thread panicked while holding it. Nothing in those crates
//! panics while it holds one (every critical section is a field or map update, with no
//! call out), so the value is still whole; refusing it would turn one panicked task into a
//! part of the process that stops working for good (an edge registry that answers
//! "unavailable", a keyring that checks no seal, a backoff stuck at its default).
//! Every `Mutex` and `RwLock` of those crates is taken through these methods.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A `Mutex` taken by this policy.
pub trait Locked<T: ?Sized> {
    /// The guard, whether or not the lock is poisoned.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An `RwLock` taken by this policy.
pub trait ReadWriteLocked<T: ?Sized> {
    /// The read guard, whether or not the lock is poisoned.
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    /// The write guard, whether or not the lock is poisoned.
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> ReadWriteLocked<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_poisoned_lock_still_gives_its_value() {
        let mutex = Arc::new(Mutex::new(1));
        let rwlock = Arc::new(RwLock::new(2));
        let (m, r) = (mutex.clone(), rwlock.clone());
        let panicked = std::thread::spawn(move || {
            let _m = m.lock().unwrap();
            let _r = r.write().unwrap();
            panic!("poisons both");
        })
        .join();
        assert!(panicked.is_err());
        assert!(mutex.is_poisoned() && rwlock.is_poisoned());
        *mutex.locked() += 1;
        assert_eq!(*mutex.locked(), 2);
        *rwlock.write_locked() += 1;
        assert_eq!(*rwlock.read_locked(), 3);
    }
}
