//! [`UnknownName`] and the `names!` macro: the machinery behind Bridle's enums of names —
//! [`Rule`](crate::Rule), [`SchemaKeyword`](crate::SchemaKeyword) and
//! [`RepairKind`](crate::RepairKind) — each variant written once with the string it stands for.
//!
//! An open enum (rules, repair kinds) serialises to that string and reads any string back: a
//! name no variant has (a row stored by another build) becomes `Unknown`, kept as it was read so
//! that it serialises unchanged, never an error. A closed enum (schema keywords) is a fixed set
//! that an open one nests.

use std::fmt;

/// A name read back (from a database row, a file, a request) that no variant of this build has:
/// kept exactly as read, so that it serialises unchanged. Only reading makes one, so a known name
/// is never held here.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnknownName(Box<str>);

impl UnknownName {
    /// Keeps `name`; the caller has checked that no variant has it.
    pub(crate) fn new(name: &str) -> Self {
        Self(name.into())
    }

    /// The name as it was read.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// Declares an enum of names: each unit variant is written `Variant = "name",`.
///
/// `pub enum X closed { … }` is a fixed, `Copy` set with `ALL`, `as_str` and `from_name`.
/// `pub enum X { … }`, optionally followed by `nested Variant(Closed);` items, is an open set:
/// the unit variants, one variant per nested closed set, and `Unknown(UnknownName)`; it has
/// `all()`, `as_str`, an infallible `from_name`, and serialises as its name.
macro_rules! names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident closed {
            $( $(#[$doc:meta])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$doc])* $variant, )*
        }

        impl $name {
            /// Every variant, in the order declared.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The name, as reports carry it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }

            /// The variant called `name`, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($text => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$doc:meta])* $variant:ident = $text:literal, )*
        }
        $( $(#[$ndoc:meta])* nested $nested:ident($inner:ident); )*
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$doc])* $variant, )*
            $( $(#[$ndoc])* $nested($inner), )*
            /// A name this build does not produce, kept as it was read (from a row another
            /// build stored): it serialises back unchanged.
            Unknown($crate::names::UnknownName),
        }

        impl $name {
            /// The unit variants, in the order declared.
            const UNITS: &'static [Self] = &[$(Self::$variant,)*];

            /// Every variant this build produces: the unit ones in the order declared, then
            /// each nested set's (never `Unknown`).
            pub fn all() -> impl Iterator<Item = Self> {
                let units = Self::UNITS.iter().cloned();
                $( let units = units.chain($inner::ALL.iter().map(|&inner| Self::$nested(inner))); )*
                units
            }

            /// The name, as reports carry it.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    $(Self::$nested(inner) => inner.as_str(),)*
                    Self::Unknown(name) => name.as_str(),
                }
            }

            /// The variant called `name`; `Unknown` when no variant has it.
            pub fn from_name(name: &str) -> Self {
                match name {
                    $($text => return Self::$variant,)*
                    _ => {}
                }
                $(
                    if let Some(inner) = $inner::from_name(name) {
                        return Self::$nested(inner);
                    }
                )*
                Self::Unknown($crate::names::UnknownName::new(name))
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Name;
                impl ::serde::de::Visitor<'_> for Name {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("a name (a string)")
                    }
                    fn visit_str<E: ::serde::de::Error>(self, name: &str) -> Result<$name, E> {
                        Ok($name::from_name(name))
                    }
                }
                deserializer.deserialize_str(Name)
            }
        }
    };
}

pub(crate) use names;
