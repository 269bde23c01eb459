//! The event forwarder: every event the agent and its tools send passes through one task that
//! journals it and then hands it to the front-end, in order. A rewind asks it to fork the journal
//! at a point in that order ([`Control`]), which is why it is a task of its own and not a call.

use tokio::sync::{mpsc, oneshot};

use pablo_core::EventRecorder;
use pablo_protocol::Event;

/// A request to the event forwarder, handled after every event sent before it.
pub(super) enum Control {
    /// Continue journaling as a forked session (see [`EventRecorder::fork`]).
    Fork {
        new_id: String,
        before_turn: u32,
        carry: Vec<Event>,
        reply: oneshot::Sender<std::io::Result<Option<Vec<Event>>>>,
    },
}

/// Passes events to the recorder, then to the front-end, in order.
pub(super) async fn forward_events(
    mut rx: mpsc::UnboundedReceiver<Event>,
    mut control: mpsc::UnboundedReceiver<Control>,
    tx: mpsc::UnboundedSender<Event>,
    mut recorder: Option<Box<dyn EventRecorder>>,
) {
    let mut control_open = true;
    loop {
        let event = tokio::select! {
            biased;
            e = rx.recv() => match e {
                Some(e) => e,
                None => break,
            },
            c = control.recv(), if control_open => {
                let Some(Control::Fork { new_id, before_turn, carry, reply }) = c else {
                    control_open = false;
                    continue;
                };
                // Whatever was sent before the request belongs to the old journal.
                while let Ok(e) = rx.try_recv() {
                    if forward_one(e, &tx, &mut recorder) {
                        return;
                    }
                }
                let forked = match recorder.as_mut() {
                    Some(r) => r.fork(&new_id, before_turn, &carry),
                    None => Ok(None),
                };
                let _ = reply.send(forked);
                continue;
            }
        };
        if forward_one(event, &tx, &mut recorder) {
            break;
        }
    }
}

/// Records one event and passes it on; true after the last one.
fn forward_one(
    event: Event,
    tx: &mpsc::UnboundedSender<Event>,
    recorder: &mut Option<Box<dyn EventRecorder>>,
) -> bool {
    // Live output and results may hold a secret a command found; neither the journal nor a
    // front-end gets it.
    let event = pablo_core::secrets::redact_serde(event);
    {
        if let Some(r) = recorder.as_mut() {
            let boundary = matches!(
                event,
                Event::TurnCompleted { .. }
                    | Event::ShutdownComplete
                    | Event::ApprovalResolved { .. }
            );
            let written = r
                .record(&event)
                .and_then(|()| if boundary { r.sync() } else { Ok(()) });
            if let Err(e) = written {
                tracing::warn!(error = %e, "journal write failed; continuing without journal");
                *recorder = None;
                let _ = tx.send(Event::Warning {
                    message: format!("the session journal could not be written ({e}); this session will not be resumable from here on"),
                });
            }
        }
        let last = matches!(event, Event::ShutdownComplete);
        let _ = tx.send(event);
        last
    }
}

/// A model client's retry as front-ends are told of it.
pub(super) fn retry_event(r: pablo_model::RetryNotice) -> Event {
    Event::Retry {
        attempt: r.attempt,
        max_attempts: r.max_attempts,
        wait_ms: u64::try_from(r.wait.as_millis()).unwrap_or(u64::MAX),
        reason: r.reason,
        code: r.code.into(),
    }
}
