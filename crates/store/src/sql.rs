//! [`Query`]: SQL text and its bound values, built once for both backends by the listing
//! (`listing.rs`) and the statistics (`stats.rs`) and run by each with its own driver — sqlx for
//! PostgreSQL, rusqlite for SQLite. The only thing the backends' text differs in while it is
//! built is how a parameter is written ([`Placeholders`]); every value is a bound parameter,
//! never spliced into the text.

use std::fmt::{self, Write};

/// How a backend writes a bound parameter in SQL text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placeholders {
    /// `$1`, `$2`, … (PostgreSQL).
    Numbered,
    /// `?` each time (SQLite, in binding order).
    Question,
}

/// One bound value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bind {
    /// A text parameter.
    Text(String),
    /// A 64-bit integer parameter.
    Int(i64),
}

impl From<String> for Bind {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<i64> for Bind {
    fn from(n: i64) -> Self {
        Self::Int(n)
    }
}

/// SQL text being built, and the values bound to its parameters in order.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    placeholders: Placeholders,
    sql: String,
    binds: Vec<Bind>,
}

impl Query {
    /// A query starting with `sql`, its parameters written as `placeholders` says.
    pub fn new(placeholders: Placeholders, sql: &str) -> Self {
        Self {
            placeholders,
            sql: sql.to_owned(),
            binds: Vec::new(),
        }
    }

    /// Appends SQL text (never a value: values go through [`Query::push_bind`]).
    pub fn push(&mut self, sql: impl fmt::Display) -> &mut Self {
        // Writing to a String cannot fail.
        let _ = write!(self.sql, "{sql}");
        self
    }

    /// Appends a parameter and binds `value` to it.
    pub fn push_bind(&mut self, value: impl Into<Bind>) -> &mut Self {
        self.binds.push(value.into());
        match self.placeholders {
            Placeholders::Numbered => {
                let _ = write!(self.sql, "${}", self.binds.len());
            }
            Placeholders::Question => self.sql.push('?'),
        }
        self
    }

    /// The SQL text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The bound values, in parameter order.
    pub fn binds(&self) -> &[Bind] {
        &self.binds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_or_question_marks() {
        for (placeholders, sql) in [
            (Placeholders::Numbered, "SELECT $1, 'x', $2"),
            (Placeholders::Question, "SELECT ?, 'x', ?"),
        ] {
            let mut query = Query::new(placeholders, "SELECT ");
            query
                .push_bind(7_i64)
                .push(", 'x', ")
                .push_bind("seven".to_owned());
            assert_eq!(query.sql(), sql);
            assert_eq!(
                query.binds(),
                [Bind::Int(7), Bind::Text("seven".to_owned())]
            );
        }
    }
}
