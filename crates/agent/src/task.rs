//! The turn as a unit of work with a handle: [`start`] moves a conversation into a future that
//! runs one turn, sends the event that closes it and hands the conversation back; the caller
//! keeps a [`RunningTurn`] to interrupt it (its cancellation token) and to await it.
//!
//! The dispatcher drives this future in its own task, between the ops it reads, instead of
//! spawning it. Front-ends rely on one ordering: an op sent in answer to any event of a turn's
//! last step (its answer, its `TurnCompleted`) finds the turn over. That holds when the turn's
//! steps and the op loop take turns on one task. A spawned turn finishes on another thread a
//! moment after its last event, and an op sent at once (a `/compact` typed as the answer
//! appeared) could be answered as if the turn still ran. The future is `Send + 'static`, so a
//! caller without that need (a subagent's turn beside its siblings) can spawn it, or
//! [`turn::run_turn`] directly, as a task of its own.
//!
//! This is where the session's turn is handed the [`SubagentRunner`] that starts its subagents
//! (the turn loop does not name it: [`super::call::subagents`] says why).

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

use super::conversation::Conversation;
use super::subagent::SubagentRunner;
use super::turn::{self, TurnInput};

/// A turn under way: interrupt it, await the conversation back.
pub(crate) struct RunningTurn {
    cancel: CancellationToken,
    turn: Pin<Box<dyn Future<Output = Conversation> + Send>>,
}

impl RunningTurn {
    /// Asks the turn to stop; it ends as soon as the running step has cleaned up.
    pub(crate) fn interrupt(&self) {
        self.cancel.cancel();
    }

    /// Drives the turn to its end and takes the conversation back. Dropping this future (a
    /// `select!` that took another branch) leaves the turn where it was.
    pub(crate) async fn finished(&mut self) -> Conversation {
        (&mut self.turn).await
    }
}

/// One turn of `conversation`, closed for the front-end at its end (`TurnCompleted`, or
/// `TurnRefused` when nothing was sent); `cancel` interrupts it.
pub(crate) fn start(
    mut conversation: Conversation,
    input: TurnInput,
    cancel: CancellationToken,
) -> RunningTurn {
    let token = cancel.clone();
    let turn = async move {
        let outcome = turn::run_turn(&mut conversation, &SubagentRunner, input, token).await;
        let closing = outcome.into_event(conversation.spend.usage);
        conversation.outlet.emit(closing);
        conversation
    };
    RunningTurn {
        cancel,
        turn: Box::pin(turn),
    }
}
