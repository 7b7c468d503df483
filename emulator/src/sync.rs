//! The std locks' one poison policy: a lock whose holder panicked is
//! taken over, not propagated. The data each guards stays consistent at
//! every await-free step, so a panic in one request never takes the BMC
//! down with it. Imports nothing: every layer may use it.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, taking over a lock whose holder panicked: the data it
/// guards stays consistent at every await-free step, so a panic elsewhere
/// never takes the BMC down with it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads `l`, taking over a lock whose writer panicked (as [`lock`]).
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

/// Writes `l`, taking over a lock whose writer panicked (as [`lock`]).
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}
