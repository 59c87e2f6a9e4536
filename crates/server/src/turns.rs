//! [`Turns`]: at most one turn at a time in each conversation.
//!
//! A turn is built on the conversation's validated history; a second turn sent while the first
//! runs would be built on a history without the first's reply, and both turns' attempts would
//! interleave in the record. So a message sent to a conversation whose turn is still running is
//! refused at once with **409 `turn_in_progress`** rather than made to wait: waiting would hold
//! a connection and a concurrent-conversation slot for as long as a model call takes, with no
//! bound a client could see, while a chat client sends one message at a time anyway and can
//! send again once its reply has come (a 409 is not retried by OpenAI's SDKs, which would be
//! wrong here only for a client that meant to queue messages). A streamed turn holds its
//! conversation until its stream ends, as it holds its conversation slot.
//!
//! The guard is per gateway instance: two instances behind one balancer can each run a turn of
//! the same conversation (route a conversation's requests to one instance, e.g. by its id, to
//! rule that out).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The conversations with a turn running in this instance.
#[derive(Debug, Default)]
pub struct Turns {
    running: Mutex<HashSet<String>>,
}

/// A running turn of one conversation; the conversation is free again when it is dropped.
#[derive(Debug)]
pub struct Running {
    turns: Arc<Turns>,
    conversation: String,
}

impl Turns {
    /// Marks a turn of `conversation` as running, or `None` when one already is.
    pub fn start(self: &Arc<Self>, conversation: &str) -> Option<Running> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert(conversation.to_owned()).then(|| Running {
            turns: Arc::clone(self),
            conversation: conversation.to_owned(),
        })
    }

    /// How many conversations have a turn running.
    pub fn len(&self) -> usize {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no turn is running.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.turns
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.conversation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_turn_of_a_conversation_is_refused_until_the_first_ends() {
        let turns = Arc::new(Turns::default());
        let first = turns.start("c1").expect("the first turn runs");
        assert!(
            turns.start("c1").is_none(),
            "a second turn of c1 is refused"
        );
        let other = turns.start("c2").expect("another conversation's turn runs");
        assert_eq!(turns.len(), 2);
        drop(first);
        assert!(
            turns.start("c1").is_some(),
            "c1 is free once its turn ended"
        );
        drop(other);
        assert!(turns.is_empty());
    }
}
