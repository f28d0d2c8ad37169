//! The one policy for poisoned locks: recover the data and keep going.
//!
//! A lock is poisoned when a thread panicked while holding it. mcpool's
//! locks guard plain data (maps, lists, a state machine) that every writer
//! leaves consistent between statements, so the data stays usable; refusing
//! it would turn one panic into a server, session or route that silently
//! stops working. Every `std::sync` lock in the library goes through these.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, recovering it if a panic poisoned it.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads `l`, recovering it if a panic poisoned it.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Writes `l`, recovering it if a panic poisoned it.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_still_gives_its_data() {
        let m = Arc::new(Mutex::new(vec![1]));
        let l = Arc::new(RwLock::new(1));
        let (m2, l2) = (m.clone(), l.clone());
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            let _w = l2.write().unwrap();
            panic!("poison both");
        })
        .join();
        assert!(m.is_poisoned() && l.is_poisoned());
        lock(&m).push(2);
        assert_eq!(*lock(&m), vec![1, 2]);
        *write(&l) += 1;
        assert_eq!(*read(&l), 2);
    }
}
