//! [`JsonStream`]: the incremental reader of a `json` reply (placeholder: no partial value yet,
//! no early abort).

use crate::contract::Contract;
use crate::report::Violation;

#[derive(Debug)]
pub(super) struct JsonStream;

impl JsonStream {
    pub(super) fn new(_contract: &Contract) -> Self {
        Self
    }

    /// Scans `raw[from..]` (the new delta; `raw` is the whole reply so far).
    pub(super) fn feed(&mut self, _raw: &str, _from: usize) -> Result<(), Vec<Violation>> {
        Ok(())
    }

    pub(super) fn partial(&mut self, _raw: &str) -> Option<String> {
        None
    }
}
