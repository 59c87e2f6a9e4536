//! Question cards (spec/04): every fixture under `fixtures/cards/` (`NAME.txt` → the expected
//! detection in `NAME.json`, ids included), the forms one by one, what must stay text, modes,
//! the `present_question` tool, and the `question-cards` schema every result must meet.
//!
//! `BRIDLE_BLESS=1 cargo nextest run -p bridle-core cards` rewrites the `.json` files; review
//! the diff before committing it.

use crate::fixture_dir;
use bridle_core::cards::{
    Category, Detection, QuestionCard, detect, from_tool_call, present_question_tool,
};
use bridle_core::schema::Schema;
use serde_json::{Value, json};
use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../contracts/question-cards/schema.json");
        let raw: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        Schema::compile(raw, &[]).unwrap()
    })
}

/// The contract value of a detection: `{message, question_cards}`.
fn value(detection: &Detection) -> Value {
    json!({"message": detection.message, "question_cards": detection.cards})
}

pub fn assert_meets_schema(detection: &Detection) {
    let value = value(detection);
    let violations = schema().violations(&value);
    assert!(violations.is_empty(), "{violations:#?}\n{value:#}");
}

fn fixture(name: &str) -> String {
    fs::read_to_string(fixture_dir("cards").join(format!("{name}.txt"))).unwrap()
}

fn run(name: &str) -> Detection {
    detect(
        &fixture(name),
        Category::Discovery,
        &format!("fixture:{name}"),
    )
}

fn labels(card: &QuestionCard) -> Vec<&str> {
    card.options.iter().map(|o| o.label.as_str()).collect()
}

fn style(card: &QuestionCard) -> &str {
    card.metadata.as_ref().unwrap()["option_style"]
        .as_str()
        .unwrap()
}

#[test]
fn every_fixture_detects_as_recorded_and_meets_the_schema() {
    let mut names: Vec<String> = fs::read_dir(fixture_dir("cards"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    let bless = std::env::var_os("BRIDLE_BLESS").is_some();
    for name in names {
        let detection = run(&name);
        assert_meets_schema(&detection);
        let got = serde_json::to_value(&detection).unwrap();
        let path = fixture_dir("cards").join(format!("{name}.json"));
        if bless {
            fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
            continue;
        }
        let want: Value = serde_json::from_str(
            &fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap();
        assert_eq!(got, want, "{name}: got\n{got:#}");
    }
}

#[test]
fn the_spec_shaped_question_has_rationale_and_loses_its_lead_in() {
    let d = run("spec_shaped");
    assert_eq!(d.cards.len(), 1);
    let card = &d.cards[0];
    assert_eq!(
        card.question_text,
        "What should the new onboarding flow achieve first?"
    );
    assert_eq!(
        card.rationale.as_deref(),
        Some("Knowing the main goal tells us which screens to build and how to measure them.")
    );
    assert_eq!(card.options.len(), 3);
    assert_eq!(
        card.options[2].label,
        "Reduce support tickets from confused first-time users"
    );
    assert_eq!(card.max_selections, 1);
    assert!(card.allow_free_text);
    assert_eq!(
        card.free_text_placeholder.as_deref(),
        Some("Or type your own answer...")
    );
    assert_eq!(card.category, Category::Discovery);
    assert_eq!(
        card.metadata,
        Some(json!({"question_sequence": 1, "option_style": "lettered", "phase": "discovery"}))
    );
    assert_eq!(
        d.message, "",
        "question, rationale, lead-in and options all went"
    );
}

#[test]
fn bulleted_options_split_label_and_description_and_keep_the_prose() {
    let d = run("lettered_bulleted");
    let card = &d.cards[0];
    assert_eq!(
        card.question_text,
        "Which kind of planting do you want along the south fence?"
    );
    assert_eq!(
        card.rationale.as_deref(),
        Some("Since the bed gets full sun for most of the day, the plant choice matters a lot.")
    );
    assert_eq!(
        labels(card),
        [
            "Vegetables",
            "Perennial flowers",
            "Fruit bushes",
            "A mix of herbs"
        ]
    );
    assert_eq!(
        card.options[1].description.as_deref(),
        Some("low effort once established"),
        "the marker is gone"
    );
    assert_eq!(card.options[3].description, None);
    let defaults: Vec<bool> = card.options.iter().map(|o| o.is_default).collect();
    assert_eq!(defaults, [false, true, false, false]);
    assert_eq!(
        d.message,
        "Thanks, that gives me a clear picture of the garden.\n\nOnce I know this I can suggest a watering schedule."
    );
}

#[test]
fn bold_markers_and_bold_labels() {
    let d = run("lettered_bold");
    let card = &d.cards[0];
    assert_eq!(labels(card), ["Lisbon-heavy", "Even split", "Porto-heavy"]);
    assert_eq!(
        card.options[0].description.as_deref(),
        Some("seven days in Lisbon, three in Porto")
    );
    assert_eq!(
        card.rationale.as_deref(),
        Some("We have ten days in total.")
    );
    assert_eq!(d.message, "Let's plan the itinerary.");
}

#[test]
fn each_form_is_recognised_with_its_style() {
    for (name, want, count) in [
        ("spec_shaped", "lettered", 3),
        ("lettered_dot", "lettered", 3),
        ("numbered_dot", "numbered", 4),
        ("numbered_paren", "numbered", 5),
        ("inline_in_question", "inline", 3),
        ("inline_after_question", "inline", 3),
        ("header_question", "header", 3),
        ("header_own_line", "header", 3),
        ("german", "lettered", 2),
    ] {
        let d = run(name);
        assert_eq!(d.cards.len(), 1, "{name}");
        assert_eq!(style(&d.cards[0]), want, "{name}");
        assert_eq!(d.cards[0].options.len(), count, "{name}");
    }
}

#[test]
fn lead_ins_are_removed_and_never_become_rationale() {
    let d = run("numbered_dot");
    assert_eq!(d.cards[0].rationale, None);
    assert_eq!(d.message, "");
    assert_eq!(
        d.cards[0].options[0].label,
        "A managed platform (Heroku, Render, Fly.io)"
    );
    let d = run("lead_in_same_paragraph");
    assert_eq!(
        d.cards[0].question_text,
        "What tone should the landing page copy have?"
    );
    assert_eq!(d.cards[0].rationale, None);
    assert_eq!(d.message, "");
}

#[test]
fn inline_options_inside_and_after_the_question() {
    let d = run("inline_in_question");
    let card = &d.cards[0];
    assert_eq!(
        card.question_text,
        "Which format do you prefer for the report?"
    );
    assert_eq!(labels(card), ["a PDF", "a spreadsheet", "a slide deck"]);
    assert_eq!(
        card.rationale.as_deref(),
        Some("I can put the quarterly numbers together for you.")
    );
    assert_eq!(d.message, "");

    let d = run("inline_after_question");
    let card = &d.cards[0];
    assert_eq!(card.question_text, "How often should reminders go out?");
    assert_eq!(labels(card), ["Daily", "weekly", "only before deadlines"]);
    assert_eq!(
        d.message, "I will apply the same setting to every project.",
        "the sentence before the question is its rationale"
    );
    assert_eq!(
        card.rationale.as_deref(),
        Some("The reminder service is ready to configure.")
    );

    let d = detect(
        "Should the invoices be grouped (a) by customer or (b) by month?",
        Category::Clarification,
        "s",
    );
    assert_eq!(
        d.cards[0].question_text,
        "Should the invoices be grouped by customer or by month?"
    );
    assert_eq!(labels(&d.cards[0]), ["by customer", "by month"]);
}

#[test]
fn header_forms() {
    let d = run("header_question");
    let card = &d.cards[0];
    assert_eq!(
        card.question_text,
        "What budget range are you working with for the renovation?"
    );
    assert_eq!(
        labels(card),
        [
            "Under 10,000 EUR",
            "10,000 to 25,000 EUR",
            "More than 25,000 EUR"
        ]
    );
    assert_eq!(d.message, "Thanks for the details about the kitchen.");

    let d = run("header_own_line");
    assert_eq!(
        d.cards[0].question_text,
        "Who will use the analytics dashboard most often?"
    );
    assert_eq!(
        d.message, "",
        "the bare `## Question 2:` heading went with it"
    );

    for text in [
        "Question: Which editor do you use?\nA) Vim\nB) Emacs",
        "**Question: Which editor do you use?**\n\n1. Vim\n2. Emacs",
        "__Question 3:__ Which editor do you use?\n- (1) Vim\n- (2) Emacs",
        "**Question:**\nWhich editor do you use?\n(A) Vim\n(B) Emacs",
    ] {
        let d = detect(text, Category::Discovery, "s");
        assert_eq!(d.cards.len(), 1, "{text}");
        assert_eq!(
            d.cards[0].question_text, "Which editor do you use?",
            "{text}"
        );
        assert_eq!(style(&d.cards[0]), "header", "{text}");
        assert_eq!(d.message, "", "{text}");
    }
}

#[test]
fn several_questions_become_several_cards_in_order() {
    let d = run("several_questions");
    let questions: Vec<&str> = d.cards.iter().map(|c| c.question_text.as_str()).collect();
    assert_eq!(
        questions,
        [
            "How many members do you expect?",
            "Where will you meet?",
            "Finally, how often should the club meet?"
        ]
    );
    let sequence: Vec<u64> = d
        .cards
        .iter()
        .map(|c| {
            c.metadata.as_ref().unwrap()["question_sequence"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(sequence, [1, 2, 3]);
    let styles: Vec<&str> = d.cards.iter().map(style).collect();
    assert_eq!(styles, ["lettered", "numbered", "inline"]);
    assert_eq!(
        d.cards[1].rationale.as_deref(),
        Some("Good to know either way.")
    );
    let mut ids: Vec<&str> = d.cards.iter().map(|c| c.question_id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    assert_eq!(
        d.message,
        "Happy to help you set up the book club. I have three quick questions.\n\nI'll draft a first reading list after that."
    );

    let d = run("nested_questions");
    assert_eq!(d.cards.len(), 2);
    assert_eq!(
        d.cards[0].question_text,
        "How many guests are you expecting?"
    );
    assert_eq!(
        labels(&d.cards[1]),
        ["Yes, a full dinner", "Only drinks and snacks"]
    );
    assert_eq!(d.message, "To size the event properly I need two answers.");
}

#[test]
fn defaults_and_multiple_choice() {
    let d = run("defaults_and_limits");
    let [multi, single] = &d.cards[..] else {
        panic!("{d:#?}")
    };
    assert_eq!(multi.max_selections, 2, "pick up to 2");
    let defaults: Vec<bool> = multi.options.iter().map(|o| o.is_default).collect();
    assert_eq!(
        defaults,
        [true, true, false, false],
        "a multiple choice may have several"
    );
    assert_eq!(labels(multi)[..2], ["Email", "SMS"]);
    assert_eq!(single.max_selections, 1);
    let defaults: Vec<bool> = single.options.iter().map(|o| o.is_default).collect();
    assert_eq!(defaults, [true, false], "one default in a single choice");
    assert_eq!(labels(single), ["UTC", "The user's local time"]);

    let d = run("numbered_paren");
    assert_eq!(d.cards[0].max_selections, 5, "select all that apply");
    for (text, want) in [
        (
            "Which toppings? Choose any.\nA) Cheese\nB) Ham\nC) Olives",
            3,
        ),
        (
            "Which toppings? You can pick up to three.\nA) Cheese\nB) Ham\nC) Olives\nD) Corn",
            3,
        ),
        (
            "Which toppings do you want (one or more)?\nA) Cheese\nB) Ham",
            2,
        ),
        (
            "Which topping?\n\nSelect all that apply:\nA) Cheese\nB) Ham",
            2,
        ),
        ("Which topping?\nA) Cheese\nB) Ham", 1),
    ] {
        let d = detect(text, Category::Discovery, "s");
        assert_eq!(d.cards[0].max_selections, want, "{text}");
    }
}

#[test]
fn long_labels_and_descriptions_are_cut() {
    let d = run("truncation");
    let card = &d.cards[0];
    let long = &card.options[0];
    assert_eq!(long.label, "The long one");
    let description = long.description.as_deref().unwrap();
    assert_eq!(description.chars().count(), 500);
    assert!(description.ends_with('…'));
    assert!(description.starts_with("This description keeps going"));
    let label = &card.options[1].label;
    assert!((195..=200).contains(&label.chars().count()), "{label}");
    assert!(
        label.ends_with("to charge it every…"),
        "no space before the ellipsis: {label}"
    );

    let question = format!("Is {} fine?", "very ".repeat(300));
    let d = detect(
        &format!("{question}\n1. Yes\n2. No"),
        Category::Discovery,
        "s",
    );
    assert_eq!(d.cards[0].question_text.chars().count(), 1000);
    assert!(d.cards[0].question_text.ends_with('…'));
    assert_meets_schema(&d);
}

#[test]
fn rationale_is_kept_short() {
    // A long sentence before the question is not its rationale; it stays in the message.
    let long = format!("We looked at {} options.", "many different ".repeat(40));
    let d = detect(
        &format!("{long} Which one fits?\n\n1. Alpha\n2. Beta"),
        Category::Discovery,
        "s",
    );
    assert_eq!(d.cards[0].rationale, None);
    assert_eq!(d.message, long);
    // Text of more than 500 characters between question and options: not a question+options
    // pattern at all.
    let text = format!("Which one fits?\n\n{long}\n\n1. Alpha\n2. Beta");
    let d = detect(&text, Category::Discovery, "s");
    assert!(d.cards.is_empty());
    assert_eq!(d.message, text);
    // A short paragraph between them is the rationale, with its label taken off.
    let d = detect(
        "Which one fits?\n\n**Why it matters:** it sets the budget.\n\n1. Alpha\n2. Beta",
        Category::Discovery,
        "s",
    );
    assert_eq!(d.cards[0].rationale.as_deref(), Some("it sets the budget."));
}

#[test]
fn what_is_not_a_card_stays_text_unchanged() {
    for name in [
        "steps_without_question",
        "broken_sequence",
        "one_option",
        "seven_options",
        "question_too_far",
        "options_in_code",
        "question_after_options",
    ] {
        let text = fixture(name);
        let d = detect(&text, Category::Discovery, "s");
        assert!(d.cards.is_empty(), "{name}: {:#?}", d.cards);
        assert_eq!(d.message, text.trim(), "{name}");
    }
    for text in [
        "",
        "   \n\n  ",
        "?",
        "Any questions?",
        "What now?\n\n(A)\n(B)",
        "Which?\n(A) (recommended)\n(B) Two",
        "Clauses (a) and (b) apply. Is that clear?",
        "Which one?\n\n```\n1. a\n2. b\n```",
        "Which one?\n\n---\n\n1. a\n2. b",
        "## Which one?\n\n### Details\n\n1. a\n2. b",
    ] {
        let d = detect(text, Category::Discovery, "s");
        assert!(d.cards.is_empty(), "{text:?}: {:#?}", d.cards);
        assert_eq!(d.message, text.trim(), "{text:?}");
    }
}

#[test]
fn windows_line_endings() {
    let text = "Intro.\r\n\r\nWhich database?\r\n1. Postgres\r\n2. SQLite\r\n\r\nBye.\r\n";
    let d = detect(text, Category::Discovery, "s");
    assert_eq!(d.cards.len(), 1);
    assert_eq!(labels(&d.cards[0]), ["Postgres", "SQLite"]);
    assert_eq!(d.message, "Intro.\n\nBye.");
}

#[test]
fn ids_depend_on_the_seed_and_nothing_else() {
    let text = fixture("several_questions");
    let a = detect(&text, Category::Discovery, "conv-7:2");
    let b = detect(&text, Category::Discovery, "conv-7:2");
    let c = detect(&text, Category::Discovery, "conv-7:3");
    assert_eq!(a, b);
    for (x, y) in a.cards.iter().zip(&c.cards) {
        assert_ne!(x.question_id, y.question_id);
        assert!(x.question_id.starts_with("q_") && x.question_id.len() == 18);
        let ids: Vec<&str> = x.options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["opt_1", "opt_2", "opt_3"][..x.options.len()]);
    }
    let clarifying = detect(&text, Category::Clarification, "conv-7:2");
    assert!(
        clarifying
            .cards
            .iter()
            .all(|c| c.category == Category::Clarification)
    );
}

#[test]
fn cards_come_only_from_the_card_modes() {
    assert_eq!(Category::from_mode("discovery"), Some(Category::Discovery));
    assert_eq!(
        Category::from_mode("mode_selection"),
        Some(Category::ModeSelection)
    );
    assert_eq!(
        Category::from_mode(" Clarification\n"),
        Some(Category::Clarification)
    );
    assert_eq!(Category::from_mode("DISCOVERY"), Some(Category::Discovery));
    for mode in [
        "",
        "chat",
        "artifact",
        "mode selection",
        "discover",
        "discovery mode",
    ] {
        assert_eq!(Category::from_mode(mode), None, "{mode:?}");
    }
    assert_eq!(
        serde_json::to_value(Category::ModeSelection).unwrap(),
        json!("mode_selection")
    );
    // In mode_selection the cards say so, with the phase in their metadata.
    let choosing = detect(&fixture("spec_shaped"), Category::ModeSelection, "conv-1:1");
    assert!(!choosing.cards.is_empty());
    for card in &choosing.cards {
        assert_eq!(card.category, Category::ModeSelection);
        assert_eq!(card.metadata.as_ref().unwrap()["phase"], "mode_selection");
    }
    // How a caller gates: outside the card modes the reply is not scanned at all.
    let reply = fixture("spec_shaped");
    let cards =
        |mode: &str| Category::from_mode(mode).map_or(0, |c| detect(&reply, c, "s").cards.len());
    assert_eq!(cards("discovery"), 1);
    assert_eq!(cards("chat"), 0);
}

#[test]
fn a_card_round_trips_through_serde() {
    let d = run("defaults_and_limits");
    for card in &d.cards {
        let text = serde_json::to_string(card).unwrap();
        let back: QuestionCard = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, card);
    }
    let minimal: QuestionCard = serde_json::from_value(json!({
        "question_id": "q_1", "question_text": "Which?", "category": "clarification",
        "options": [{"id": "opt_1", "label": "a"}, {"id": "opt_2", "label": "b"}],
        "allow_free_text": true
    }))
    .unwrap();
    assert_eq!(minimal.max_selections, 1);
    assert!(!minimal.options[0].is_default);
    let value = serde_json::to_value(&minimal).unwrap();
    assert!(value.get("rationale").is_none() && value.get("metadata").is_none());
    assert!(value["options"][0].get("description").is_none());
}

#[test]
fn the_schema_rejects_what_the_spec_forbids() {
    let good = value(&run("spec_shaped"));
    assert!(schema().violations(&good).is_empty());
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        edit(&mut v);
        schema()
            .violations(&v)
            .into_iter()
            .map(|v| format!("{} {}", v.path, v.rule))
            .collect::<Vec<_>>()
    };
    let card = "/question_cards/0";
    assert_eq!(
        broken(&|v| {
            v["question_cards"][0]["options"]
                .as_array_mut()
                .unwrap()
                .truncate(1);
        }),
        [format!("{card}/options minItems")]
    );
    assert_eq!(
        broken(&|v| v["question_cards"][0]["options"][0]["label"] = json!("x".repeat(201))),
        [format!("{card}/options/0/label maxLength")]
    );
    assert_eq!(
        broken(&|v| v["question_cards"][0]["category"] = json!("chat")),
        [format!("{card}/category enum")]
    );
    assert_eq!(
        broken(&|v| v["question_cards"][0]["max_selections"] = json!(7)),
        [format!("{card}/max_selections maximum")]
    );
    assert_eq!(
        broken(&|v| {
            v["question_cards"][0]
                .as_object_mut()
                .unwrap()
                .remove("allow_free_text");
        }),
        [format!("{card} required")]
    );
    assert_eq!(
        broken(&|v| v["question_cards"][0]["colour"] = json!("red")),
        [format!("{card} additionalProperties")]
    );
    assert_eq!(
        broken(&|v| v["question_cards"][0]["rationale"] = json!("r".repeat(501))),
        [format!("{card}/rationale maxLength")]
    );
    assert_eq!(
        broken(&|v| {
            v.as_object_mut().unwrap().remove("message");
        }),
        [" required"]
    );
}

// ---- the present_question tool ----

#[test]
fn the_tool_definition_is_an_openai_function() {
    let tool = present_question_tool();
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["function"]["name"], "present_question");
    assert!(tool["function"]["description"].as_str().unwrap().len() > 40);
    let params = &tool["function"]["parameters"];
    assert_eq!(params["required"], json!(["question", "options"]));
    assert_eq!(params["properties"]["options"]["minItems"], 2);
    assert_eq!(params["properties"]["options"]["maxItems"], 6);
    assert_eq!(
        params["properties"]["options"]["items"]["required"],
        json!(["label"])
    );
    assert_eq!(params["properties"]["max_selections"]["maximum"], 6);
    // The parameters are a JSON Schema that accepts a good call.
    let parameters = Schema::compile(params.clone(), &[]).unwrap();
    assert!(
        parameters
            .is_valid(&json!({"question": "Which?", "options": [{"label": "a"}, {"label": "b"}]}))
    );
    assert!(!parameters.is_valid(&json!({"question": "Which?", "options": [{"label": "a"}]})));
}

#[test]
fn a_tool_call_becomes_a_normalised_card() {
    let args = json!({
        "question": "Which **deployment** target should we prepare?",
        "rationale": "It decides which pipeline we set up.",
        "options": [
            {"label": "Kubernetes (recommended)", "description": "Our existing cluster"},
            {"label": "Serverless functions", "is_default": true},
            "A single VM",
            {"label": "x".repeat(250), "description": null}
        ],
        "unknown": "ignored"
    });
    let card = from_tool_call(&args, Category::Discovery, "conv-1:4", 1).unwrap();
    assert_eq!(
        card.question_text,
        "Which deployment target should we prepare?"
    );
    assert_eq!(
        card.rationale.as_deref(),
        Some("It decides which pipeline we set up.")
    );
    assert_eq!(
        labels(&card)[..3],
        ["Kubernetes", "Serverless functions", "A single VM"]
    );
    let defaults: Vec<bool> = card.options.iter().map(|o| o.is_default).collect();
    assert_eq!(
        defaults,
        [true, false, false, false],
        "one default in a single choice"
    );
    assert_eq!(card.options[3].label.chars().count(), 200);
    assert_eq!(card.options[0].id, "opt_1");
    assert_eq!(card.max_selections, 1);
    assert_eq!(
        card.metadata,
        Some(json!({"question_sequence": 2, "option_style": "tool", "phase": "discovery"}))
    );
    assert_meets_schema(&Detection {
        message: String::new(),
        cards: vec![card.clone()],
    });

    // Arguments as OpenAI sends them: JSON text.
    let text = Value::String(args.to_string());
    assert_eq!(
        from_tool_call(&text, Category::Discovery, "conv-1:4", 1).unwrap(),
        card
    );

    let multi = |extra: Value| {
        let mut args = json!({"question": "Which?", "options": ["a", "b", "c"]});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        from_tool_call(&args, Category::Clarification, "s", 0)
            .unwrap()
            .max_selections
    };
    assert_eq!(multi(json!({})), 1);
    assert_eq!(multi(json!({"allow_multiple": true})), 3);
    assert_eq!(multi(json!({"allow_multiple": false})), 1);
    assert_eq!(multi(json!({"max_selections": 2})), 2);
    assert_eq!(
        multi(json!({"max_selections": 6})),
        3,
        "never more than the options"
    );
    assert_eq!(multi(json!({"max_selections": 2.0})), 2);
}

#[test]
fn bad_tool_arguments_are_violations() {
    let broken = |args: Value| {
        from_tool_call(&args, Category::Discovery, "s", 0)
            .unwrap_err()
            .into_iter()
            .map(|v| format!("{} {}", v.path, v.rule))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        broken(json!({"options": ["a", "b"]})),
        ["/question required"]
    );
    assert_eq!(
        broken(json!({"question": "Which?", "options": ["a"]})),
        ["/options minItems"]
    );
    assert_eq!(
        broken(json!({"question": "Which?", "options": ["1", "2", "3", "4", "5", "6", "7"]})),
        ["/options maxItems"]
    );
    assert_eq!(
        broken(json!({"question": "Which?", "options": []})),
        ["/options minItems"]
    );
    assert_eq!(broken(json!({"question": "Which?"})), ["/options required"]);
    assert_eq!(
        broken(json!({"question": 3, "options": "a, b", "rationale": ["r"]})),
        ["/question type", "/rationale type", "/options type"]
    );
    assert_eq!(
        broken(json!({"question": "  ", "options": [{"label": "a"}, {"description": "d"}]})),
        ["/question minLength", "/options/1/label required"]
    );
    assert_eq!(
        broken(json!({"question": "Which?", "options": [
            {"label": "(default)"}, {"label": "b", "is_default": "yes", "description": 4}, 7
        ]})),
        [
            "/options/0/label minLength",
            "/options/1/description type",
            "/options/1/is_default type",
            "/options/2 type"
        ]
    );
    for (max, rule) in [
        (json!(0), "minimum"),
        (json!(7), "maximum"),
        (json!(-2), "minimum"),
        (json!(1.5), "type"),
        (json!("2"), "type"),
    ] {
        assert_eq!(
            broken(json!({"question": "Which?", "options": ["a", "b"], "max_selections": max})),
            [format!("/max_selections {rule}")]
        );
    }
    assert_eq!(
        broken(json!({"question": "Which?", "options": ["a", "b"], "allow_multiple": "yes"})),
        ["/allow_multiple type"]
    );
    assert_eq!(broken(json!(["Which?"])), [" type"]);
    assert_eq!(broken(json!("{not json")), [" parse"]);
    let messages = from_tool_call(
        &json!({"question": "Which?", "options": ["a"]}),
        Category::Discovery,
        "s",
        0,
    )
    .unwrap_err();
    assert_eq!(messages[0].message, "expected at least 2 options, found 1");
}
