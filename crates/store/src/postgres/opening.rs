//! [`Held`]: a turn's opening — its user message, and the conversation when the turn starts it —
//! held back by the PostgreSQL store (`store_commit = "before_reply"`) until the turn records
//! its first message after it ([`crate::TurnWrites::record_after`]), then written with that
//! message as **one job** of the writer: one transaction, one commit a turn instead of two.
//!
//! Nothing is lost by holding it: the opening is written alone when its [`Pending`] is awaited
//! instead, and when the [`Pending`] is dropped with the opening still held (a turn cancelled or
//! ended without recording anything) it is queued from the destructor. Either way it is taken
//! from the hold only once the writer's queue has room and queued in the same step, so a caller
//! that goes away leaves it either held (the destructor writes it) or queued (the writer does).

use super::batch::Write;
use super::writer::Writer;
use crate::write_rows::MessageRow;
use crate::{Pending, StoreError};
use std::sync::{Arc, Mutex, PoisonError};

/// A turn's opening, until a write takes it.
pub(super) struct Held {
    /// The opening's conversation (whose queue it goes to).
    conversation_id: String,
    write: Mutex<Option<Write>>,
    writer: Writer,
}

impl Held {
    /// Holds `write` (the opening) back; the [`Pending`] resolves to its message's id.
    pub fn pending(writer: Writer, write: Write) -> Pending<i64> {
        let held = Arc::new(Self {
            conversation_id: write.conversation_id().to_owned(),
            write: Mutex::new(Some(write)),
            writer,
        });
        let alone = Arc::clone(&held);
        Pending::holding(async move { alone.write_alone().await }, held)
    }

    /// The conversation the opening belongs to.
    pub fn conversation_id(&self) -> &str {
        &self.conversation_id
    }

    fn take(&self) -> Option<Write> {
        self.write
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Writes the opening by itself; its message's id once committed.
    async fn write_alone(&self) -> Result<i64, StoreError> {
        let ids = self
            .writer
            .write_of(&self.conversation_id, || self.take())
            .await?;
        ids.and_then(|ids| ids.first().copied())
            .ok_or(StoreError::Closed)
    }

    /// Writes the opening and then `message` (of the same conversation) in one job; the
    /// opening's id and the message's once committed, or `None` when the opening is not held
    /// any more (`message` is then not written).
    pub async fn write_with(&self, message: MessageRow) -> Result<Option<(i64, i64)>, StoreError> {
        let ids = self
            .writer
            .write_of(&self.conversation_id, || {
                let mut write = self.take()?;
                write.messages.push(message);
                Some(write)
            })
            .await?;
        match ids.as_deref() {
            None => Ok(None),
            Some(&[first, id]) => Ok(Some((first, id))),
            Some(_) => Err(StoreError::Closed),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(write) = self.take() {
            self.writer.write_from_drop(write);
        }
    }
}
