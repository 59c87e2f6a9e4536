//! [`TextStream`]: a `text` reply as it streams (placeholder: text passes through).

use super::Emit;
use crate::context::Context;
use crate::contract::{Checked, Contract};

#[derive(Debug)]
pub(super) struct TextStream;

impl TextStream {
    pub(super) fn new(_contract: &Contract, _context: &Context) -> Self {
        Self
    }

    pub(super) fn feed(&mut self, raw: &str, from: usize, out: &mut Vec<Emit>) {
        if from < raw.len() {
            out.push(Emit::Text(raw[from..].to_owned()));
        }
    }

    pub(super) fn finish(&mut self, _raw: &str, _checked: &Checked, _out: &mut Vec<Emit>) {}
}
