//! [`Rule`]: the rule a [`Violation`](crate::Violation) breaks, one variant per rule Bridle
//! produces, and [`SchemaKeyword`], the JSON Schema keywords a schema violation names.
//!
//! Both serialise to the names reports have always carried (`parse`, `too_large`, `required`,
//! …); any other name read back (a row another build stored) becomes [`Rule::Unknown`] and is
//! written back unchanged.

use crate::names::names;

names! {
    /// The rule a violation breaks.
    pub enum Rule {
        /// The reply is larger than the contract's `max_bytes`: refused unread (every kind); the
        /// engine adds one when it cuts a stored reply to that size.
        TooLarge = "too_large",
        /// The reply is blank, or a markers reply has no message and no marker section.
        Empty = "empty",
        /// The reply's bytes are not UTF-8 (`Contract::check_bytes`).
        Encoding = "encoding",
        /// The provider stopped the reply at the output token limit before it was complete
        /// (the engine's turn loop).
        MaxTokens = "max_tokens",
        /// The reply was cut off: inside a JSON value, an XML element or a marker section's JSON.
        Truncated = "truncated",
        /// The reply holds two different JSON answers of the same shape.
        Ambiguous = "ambiguous",
        /// The reply holds no JSON value at all.
        NotJson = "not_json",
        /// The JSON does not parse even after repair; or a tool call's arguments are not JSON.
        Parse = "parse",
        /// The reply holds no XML document with the contract's root element.
        NotXml = "not_xml",
        /// The XML document has a DOCTYPE or entity declaration.
        XmlDoctype = "xml_doctype",
        /// The XML document declares an encoding other than UTF-8.
        XmlEncoding = "xml_encoding",
        /// The XML document uses an entity other than the five predefined ones.
        XmlEntity = "xml_entity",
        /// The XML elements nest deeper than the reader allows.
        XmlDepth = "xml_depth",
        /// The XML is not well-formed (or a second top-level element follows the document).
        XmlSyntax = "xml_syntax",
        /// The XML document's root element is not the contract's.
        Root = "root",
        /// The XML document has more elements and attributes than the reader allows.
        XmlSize = "xml_size",
        /// An XML element the contract allows once appears more than once.
        XmlRepeated = "xml_repeated",
        /// A marker (`SUGGESTED_VALUES:`, …) is not followed by JSON that can be read.
        MarkerJson = "marker_json",
        /// A payload marker the page does not offer.
        PayloadUnavailable = "payload_unavailable",
        /// A suggested action that is not available on the page.
        UnknownAction = "unknown_action",
        /// A tool call names a tool the contract did not offer.
        UnknownTool = "unknown_tool",
        /// A declared `unique` rule: values that must differ repeat.
        Unique = "unique",
        /// A declared `less_than` rule: one number is not below another.
        LessThan = "less_than",
        /// A declared `implies` rule: its condition holds and its consequence does not.
        Implies = "implies",
        /// A declared `expr` rule: its expression is false at a match, or cannot be evaluated
        /// there (the message names the rule).
        Expr = "expr",
        /// The last of a schema check's listed violations: how many more were not listed.
        TooManyViolations = "too_many_violations",
        /// A line given to `bridle eval` lacks the member that holds the reply.
        MissingField = "missing_field",
    }
    /// A JSON Schema keyword the value fails: reported by the schema validator, or by a check
    /// of Bridle's own that mirrors it (a question card tool call's arguments, a markers
    /// payload's type).
    nested Schema(SchemaKeyword);
}

names! {
    /// A JSON Schema keyword, as the `jsonschema` crate names the one an error breaks.
    pub enum SchemaKeyword closed {
        /// `additionalItems`: an item past those `items` lists.
        AdditionalItems = "additionalItems",
        /// `additionalProperties`: a member the schema does not list.
        AdditionalProperties = "additionalProperties",
        /// `anyOf`: no branch matches.
        AnyOf = "anyOf",
        /// `const`: not the one allowed value.
        Const = "const",
        /// `contains`: no item matches.
        Contains = "contains",
        /// `contentEncoding`: the string is not in the declared encoding.
        ContentEncoding = "contentEncoding",
        /// `contentMediaType`: the string is not of the declared media type.
        ContentMediaType = "contentMediaType",
        /// `enum`: not one of the allowed values.
        Enum = "enum",
        /// `exclusiveMaximum`: too large.
        ExclusiveMaximum = "exclusiveMaximum",
        /// `exclusiveMinimum`: too small.
        ExclusiveMinimum = "exclusiveMinimum",
        /// The schema is `false`: nothing is allowed here.
        FalseSchema = "falseSchema",
        /// `format`: the string is not of the declared format.
        Format = "format",
        /// `maxItems`: too many items.
        MaxItems = "maxItems",
        /// `maximum`: too large.
        Maximum = "maximum",
        /// `maxLength`: too long.
        MaxLength = "maxLength",
        /// `maxProperties`: too many members.
        MaxProperties = "maxProperties",
        /// `minItems`: too few items.
        MinItems = "minItems",
        /// `minimum`: too small.
        Minimum = "minimum",
        /// `minLength`: too short.
        MinLength = "minLength",
        /// `minProperties`: too few members.
        MinProperties = "minProperties",
        /// `multipleOf`: not a multiple.
        MultipleOf = "multipleOf",
        /// `not`: matches the schema it must not.
        Not = "not",
        /// `oneOf`: no branch, or more than one, matches.
        OneOf = "oneOf",
        /// `pattern`: the string does not match.
        Pattern = "pattern",
        /// `propertyNames`: a member's name does not match.
        PropertyNames = "propertyNames",
        /// `required`: a required member is missing.
        Required = "required",
        /// `type`: the wrong JSON type.
        Type = "type",
        /// `unevaluatedItems`: an item no keyword accounts for.
        UnevaluatedItems = "unevaluatedItems",
        /// `unevaluatedProperties`: a member no keyword accounts for.
        UnevaluatedProperties = "unevaluatedProperties",
        /// `uniqueItems`: two items are equal.
        UniqueItems = "uniqueItems",
        /// `$ref`: a reference that cannot be resolved.
        Ref = "$ref",
    }
}

impl From<SchemaKeyword> for Rule {
    fn from(keyword: SchemaKeyword) -> Self {
        Self::Schema(keyword)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn every_rule_round_trips_through_serde_as_its_name() {
        for rule in Rule::all() {
            let json = serde_json::to_value(&rule).unwrap();
            assert_eq!(json, Value::String(rule.as_str().to_owned()));
            assert_eq!(serde_json::from_value::<Rule>(json).unwrap(), rule);
            assert_eq!(rule.to_string(), rule.as_str());
            assert_eq!(Rule::from_name(rule.as_str()), rule);
        }
    }

    #[test]
    fn an_unknown_rule_is_kept_as_read() {
        for name in ["retired_rule", "", "Parse", "x-custom-keyword"] {
            let rule: Rule = serde_json::from_value(json!(name)).unwrap();
            assert!(matches!(&rule, Rule::Unknown(unknown) if unknown.as_str() == name));
            assert_eq!(serde_json::to_value(&rule).unwrap(), json!(name));
        }
        assert!(serde_json::from_value::<Rule>(json!(3)).is_err());
    }

    #[test]
    fn the_rule_names_are_these() {
        let names: Vec<String> = Rule::all().map(|r| r.as_str().to_owned()).collect();
        assert_eq!(
            names,
            [
                "too_large",
                "empty",
                "encoding",
                "max_tokens",
                "truncated",
                "ambiguous",
                "not_json",
                "parse",
                "not_xml",
                "xml_doctype",
                "xml_encoding",
                "xml_entity",
                "xml_depth",
                "xml_syntax",
                "root",
                "xml_size",
                "xml_repeated",
                "marker_json",
                "payload_unavailable",
                "unknown_action",
                "unknown_tool",
                "unique",
                "less_than",
                "implies",
                "expr",
                "too_many_violations",
                "missing_field",
                "additionalItems",
                "additionalProperties",
                "anyOf",
                "const",
                "contains",
                "contentEncoding",
                "contentMediaType",
                "enum",
                "exclusiveMaximum",
                "exclusiveMinimum",
                "falseSchema",
                "format",
                "maxItems",
                "maximum",
                "maxLength",
                "maxProperties",
                "minItems",
                "minimum",
                "minLength",
                "minProperties",
                "multipleOf",
                "not",
                "oneOf",
                "pattern",
                "propertyNames",
                "required",
                "type",
                "unevaluatedItems",
                "unevaluatedProperties",
                "uniqueItems",
                "$ref",
            ]
        );
    }

    #[test]
    fn a_schema_keyword_is_the_schema_rule() {
        assert_eq!(
            Rule::from_name("required"),
            Rule::Schema(SchemaKeyword::Required)
        );
        assert_eq!(Rule::from(SchemaKeyword::Ref).as_str(), "$ref");
        assert_eq!(SchemaKeyword::from_name("unique"), None);
        assert_eq!(format!("[{:8}]", Rule::Parse), "[parse   ]");
    }
}
