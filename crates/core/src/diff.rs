//! The one line diff pablo compiles: Myers' algorithm over slices of strings.
//!
//! The preview's hunks (`workspace::diff`), checkpoints' line tags and the diff view's word
//! emphasis (`tui::word_diff`, a front-end, which may import only the vocabulary) all come here.
//! similar's own entry points take the algorithm as a value, so each element type they are called
//! with compiled all six of its algorithms: 26 copies of Myers' inner loop, 300 KB of the release
//! binary (BENCHMARKS.md, "One diff compiled once"). Naming Myers, for one element type, compiles
//! it once.

use std::time::Instant;

use similar::DiffOp;
use similar::algorithms::{Capture, Compact, Replace, myers};

/// The ops turning `old` into `new`: Myers' algorithm, equal runs compacted and a delete next to
/// an insert reported as one replace — what `similar::capture_diff_slices` answers for
/// `Algorithm::Myers`. Past `deadline` the diff settles for a coarser one, still correct.
pub fn line_ops(old: &[&str], new: &[&str], deadline: Option<Instant>) -> Vec<DiffOp> {
    let mut hook = Compact::new(Replace::new(Capture::new()), old, new);
    // Capture's hook never fails (its error type is the never-returned `Infallible`).
    let Ok(()) = myers::diff_deadline(&mut hook, old, 0..old.len(), new, 0..new.len(), deadline);
    hook.into_inner().into_inner().into_ops()
}

#[cfg(test)]
mod tests {
    use super::*;
    use similar::{Algorithm, capture_diff_slices};

    #[test]
    fn the_ops_are_similars_for_myers() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["a\n", "b\n", "c\n"], &["a\n", "B\n", "c\n", "d\n"]),
            (&[], &["x\n"]),
            (&["x\n"], &[]),
            (&["a", "b", "a", "b"], &["b", "a", "b", "a", "c"]),
        ];
        for (old, new) in cases {
            assert_eq!(
                line_ops(old, new, None),
                capture_diff_slices(Algorithm::Myers, old, new)
            );
        }
    }
}
