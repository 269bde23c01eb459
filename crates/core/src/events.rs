//! Where events go: out to the front-ends through an [`EventSink`], and first into a recorder
//! (the session journal) that the agent is handed without knowing what it is.

use std::sync::Arc;

use tokio::sync::mpsc;

use pablo_protocol::Event;

/// Rewrites or drops an event on its way out (a subagent's events go out wrapped).
pub type EventMap = Arc<dyn Fn(Event) -> Option<Event> + Send + Sync>;

/// Sends events from inside a tool (live output, plan updates) to the front-ends.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<Event>,
    map: Option<EventMap>,
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<Event>) -> Self {
        Self { tx, map: None }
    }

    /// A sink whose events go nowhere (benches, unit tests).
    #[cfg(any(test, feature = "test-support"))]
    pub fn discard() -> Self {
        let (tx, _rx) = mpsc::unbounded_channel();
        Self { tx, map: None }
    }

    /// The same destination, each event passed through `map` first (dropped on `None`).
    pub fn mapped(&self, map: EventMap) -> Self {
        Self {
            tx: self.tx.clone(),
            map: Some(map),
        }
    }

    pub fn send(&self, event: Event) {
        let event = match &self.map {
            Some(map) => match map(event) {
                Some(e) => e,
                None => return,
            },
            None => event,
        };
        // A closed receiver means the front-end is gone; the engine carries on regardless.
        let _ = self.tx.send(event);
    }
}

/// Receives every event before front-ends do (the session journal).
pub trait EventRecorder: Send {
    fn record(&mut self, event: &Event) -> std::io::Result<()>;
    /// Called at turn boundaries; a journal fsyncs here.
    fn sync(&mut self) -> std::io::Result<()>;
    /// Continues as a new session `new_id` that begins with this one's events from before its
    /// `before_turn`-th prompt, followed by `carry` (a rewind: the conversation forks). Returns
    /// those events, so the agent can rebuild its state from them; `None` when this recorder
    /// cannot fork.
    fn fork(
        &mut self,
        new_id: &str,
        before_turn: u32,
        carry: &[Event],
    ) -> std::io::Result<Option<Vec<Event>>> {
        let _ = (new_id, before_turn, carry);
        Ok(None)
    }
}
