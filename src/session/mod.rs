//! The append-only session journal, resume, and the todo checklist state.
