//! [`topic_of`]: the few words a user's message is about, which the mock echoes at the start of
//! its answer's main text ("On sleep and exams: …") so that a demo's replies read as answers
//! to what was asked, whatever the schema makes of the rest.

/// Words that say nothing about a topic (English, German, French, Spanish).
const STOPWORDS: &[&str] = &[
    "about", "after", "again", "also", "been", "before", "being", "could", "does", "doing", "from",
    "have", "having", "help", "here", "into", "just", "like", "make", "more", "much", "need",
    "please", "really", "should", "some", "tell", "than", "that", "their", "them", "then", "there",
    "these", "they", "thing", "this", "those", "want", "what", "when", "where", "which", "while",
    "will", "with", "would", "your", "yours", "know", "think", "feel", "can't", "don't", "i'm",
    "it's", "message", "aber", "auch", "bitte", "dass", "eine", "einen", "haben", "mich", "nicht",
    "noch", "oder", "sein", "sind", "und", "viel", "wenn", "wie", "avec", "dans", "mais", "pour",
    "sont", "très", "como", "para", "pero", "porque", "esto", "esta", "kann", "kannst", "better",
    "best", "good",
];

/// Topic words kept.
const MAX_WORDS: usize = 3;
/// Characters of the message read.
const MAX_CHARS: usize = 2000;

/// Up to three topic words of `message` ("sleep and exams"), or `None` when it has none.
pub(crate) fn topic_of(message: &str) -> Option<String> {
    let text: String = message.chars().take(MAX_CHARS).collect();
    let mut words: Vec<String> = Vec::new();
    for raw in text.split_whitespace() {
        let word = raw
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase();
        let letters = word.chars().filter(|c| c.is_alphabetic()).count();
        if letters < 4
            || letters != word.chars().count()
            || STOPWORDS.contains(&word.as_str())
            || words.contains(&word)
        {
            continue;
        }
        words.push(word);
        if words.len() == MAX_WORDS {
            break;
        }
    }
    match words.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} and {last}", rest.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::topic_of;

    #[test]
    fn the_topic_is_the_first_meaningful_words() {
        assert_eq!(
            topic_of("I can't sleep before exams.").as_deref(),
            Some("sleep and exams")
        );
        assert_eq!(
            topic_of("How do I save money for a new bike?").as_deref(),
            Some("save, money and bike")
        );
        assert_eq!(
            topic_of("Ich kann nicht schlafen").as_deref(),
            Some("schlafen")
        );
        assert_eq!(topic_of("message 7"), None);
        assert_eq!(topic_of("hi!"), None);
    }
}
