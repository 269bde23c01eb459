//! One computed value kept beside the key it was computed for, so a view drawn every frame (an
//! approval prompt over a 20,000-line diff, a restore preview) styles and wraps its lines once per
//! width and selection rather than once per frame. A frame then costs what the visible rows cost.
//!
//! Views are drawn through `&self`; the slot is behind a lock so a view stays `Send` and `Sync`.

use std::sync::Arc;

use parking_lot::Mutex;

pub(crate) struct Memo<K, V> {
    slot: Mutex<Option<(K, Arc<V>)>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Self {
            slot: Mutex::new(None),
        }
    }
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

impl<K: PartialEq, V> Memo<K, V> {
    /// The value for `key`: the kept one when it was computed for an equal key, else `compute()`'s
    /// (which is then kept in its place).
    pub(crate) fn get(&self, key: K, compute: impl FnOnce() -> V) -> Arc<V> {
        let mut slot = self.slot.lock();
        if let Some((k, v)) = slot.as_ref()
            && *k == key
        {
            return Arc::clone(v);
        }
        let value = Arc::new(compute());
        *slot = Some((key, Arc::clone(&value)));
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_computed_once_per_key_and_again_when_the_key_changes() {
        let memo: Memo<usize, String> = Memo::default();
        let mut runs = 0;
        let a = memo.get(80, || {
            runs += 1;
            "eighty".to_string()
        });
        let b = memo.get(80, || {
            runs += 1;
            "again".to_string()
        });
        assert_eq!((a.as_str(), b.as_str()), ("eighty", "eighty"));
        let c = memo.get(40, || {
            runs += 1;
            "forty".to_string()
        });
        assert_eq!(c.as_str(), "forty");
        assert_eq!(runs, 2);
    }
}
