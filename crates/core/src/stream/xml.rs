//! [`XmlStream`]: the partial value of an `xml` reply (placeholder).

use crate::contract::Contract;

#[derive(Debug)]
pub(super) struct XmlStream;

impl XmlStream {
    pub(super) fn new(_contract: &Contract) -> Self {
        Self
    }

    pub(super) fn feed(&mut self, _raw: &str, _from: usize) {}

    pub(super) fn partial(&mut self, _raw: &str) -> Option<String> {
        None
    }
}
