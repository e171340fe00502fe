//! An in-memory store: Leaf's table in a `HashMap`, for tests and single-process use.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Allocation, SegmentStore, StoreFailure, MAX_ID};
use crate::error::quoted;

/// Leaf's `leaf_alloc` table in memory. Tags are created on first use with `max_id` =
/// `initial_max_id` (default 1, like a fresh Leaf row). Thread-safe.
#[derive(Debug)]
pub struct MemoryStore {
    initial_max_id: u64,
    rows: Mutex<HashMap<String, u64>>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store whose new tags start at `max_id = 1`.
    pub fn new() -> MemoryStore {
        MemoryStore::with_initial_max_id(1)
    }

    /// An empty store whose new tags start at `max_id = initial_max_id`.
    pub fn with_initial_max_id(initial_max_id: u64) -> MemoryStore {
        MemoryStore {
            initial_max_id,
            rows: Mutex::new(HashMap::new()),
        }
    }

    /// Sets a tag's `max_id` (like an `UPDATE` on Leaf's table).
    pub fn set_max_id(&self, tag: &str, max_id: u64) {
        let _op = crate::fork::enter();
        self.rows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tag.to_string(), max_id);
    }

    /// A tag's current `max_id`, if the tag exists.
    pub fn max_id(&self, tag: &str) -> Option<u64> {
        let _op = crate::fork::enter();
        self.rows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tag)
            .copied()
    }
}

impl SegmentStore for MemoryStore {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        // A fork waits until the lock is released (a child must not inherit it held).
        let _op = crate::fork::enter();
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let row = rows.entry(tag.to_string()).or_insert(self.initial_max_id);
        let max_id = row
            .checked_add(step)
            .filter(|&m| m <= MAX_ID)
            .ok_or_else(|| {
                format!(
                    "tag {tag} is exhausted: max_id {} + step {step} exceeds i64::MAX",
                    *row,
                    tag = quoted(tag)
                )
            })?;
        *row = max_id;
        Ok(Allocation::new(max_id, step))
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        let _op = crate::fork::enter();
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        match rows.get_mut(tag) {
            Some(row) if *row == expected_max_id && max_id < expected_max_id => {
                *row = max_id;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
