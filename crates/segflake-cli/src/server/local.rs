//! A runtime thread's own entries by key (tag handles, counters), for the request path:
//! a key already seen is found without a lock, an allocation or a shared reference count.

use std::collections::HashMap;

/// Keys held in the list compared byte by byte; the ones after them are hashed.
const FEW: usize = 8;

/// Entries by key: the first [`FEW`] keys in a list (a lookup compares lengths, then
/// bytes), later ones in a map (SipHash, as keys come from clients). A key is in one of
/// the two, at most once.
pub struct LocalKeys<T> {
    few: Vec<(Box<str>, T)>,
    rest: HashMap<Box<str>, T>,
}

impl<T> Default for LocalKeys<T> {
    fn default() -> Self {
        LocalKeys {
            few: Vec::new(),
            rest: HashMap::new(),
        }
    }
}

impl<T> LocalKeys<T> {
    #[inline]
    pub fn get(&self, key: &str) -> Option<&T> {
        for (k, v) in &self.few {
            if k.len() == key.len() && k.as_bytes() == key.as_bytes() {
                return Some(v);
            }
        }
        if self.rest.is_empty() {
            return None;
        }
        self.rest.get(key)
    }

    /// Sets `key`'s entry (replacing the one it had).
    pub fn insert(&mut self, key: &str, value: T) {
        if let Some(slot) = self.few.iter_mut().find(|(k, _)| **k == *key) {
            slot.1 = value;
        } else if self.few.len() < FEW {
            self.few.push((key.into(), value));
        } else {
            self.rest.insert(key.into(), value);
        }
    }

    pub fn len(&self) -> usize {
        self.few.len() + self.rest.len()
    }

    pub fn clear(&mut self) {
        self.few.clear();
        self.rest.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::LocalKeys;

    #[test]
    fn every_key_is_found_with_its_last_value() {
        let mut m = LocalKeys::default();
        for i in 0..20 {
            m.insert(&format!("k{i}"), i);
        }
        m.insert("k3", 33);
        m.insert("k15", 115);
        assert_eq!(m.len(), 20);
        for i in 0..20 {
            let want = match i {
                3 => 33,
                15 => 115,
                i => i,
            };
            assert_eq!(m.get(&format!("k{i}")), Some(&want));
        }
        assert_eq!(m.get("k"), None);
        assert_eq!(m.get("k200"), None);
        m.clear();
        assert_eq!((m.len(), m.get("k1")), (0, None));
    }
}
