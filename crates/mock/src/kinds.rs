//! How the mock model answers contracts whose replies are not JSON text: it reads the page and
//! the client actions from Bridle's prompt the way a model would ([`context_from_prompt`]),
//! makes a value for a `markers` contract part by part ([`generate_markers`]: a message, then
//! either one payload offered on the page or suggestions), and gives faults the shape of the
//! contract's replies ([`reshape`]: a broken value is written as XML or as marker text, a cut
//! reply is cut inside the document or the last marker's JSON). In a question-card mode a
//! `text` reply asks its question as text ([`generate_text`]) or, when the request offers the
//! `present_question` tool, with a call ([`generate_call`]).

use crate::faults::{Broken, Fault};
use crate::generate::{Generated, Hints, ObjectSpot, Spots, generate};
use crate::words;
use bridle_core::cards::Category;
use bridle_core::{Context, Contract, Kind};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// Tries to find payload data that meets its schema.
const PAYLOAD_TRIES: u64 = 50;

/// The context a model can read off Bridle's prompt: the page (`## Page: NAME`) and the client
/// actions listed under `CLIENT ACTIONS`.
pub(crate) fn context_from_prompt(system: &str) -> Context {
    let mut context = Context::new();
    let mut lines = system.lines();
    let mut actions = Vec::new();
    while let Some(line) = lines.next() {
        if let Some(page) = line.strip_prefix("## Page: ") {
            context.insert("page", page.trim());
        } else if line.starts_with("CLIENT ACTIONS") {
            for item in lines.by_ref() {
                let Some(item) = item.strip_prefix("- ") else {
                    break;
                };
                let name = item.split(':').next().unwrap_or("").trim();
                if !name.is_empty() {
                    actions.push(name.to_owned());
                }
            }
        }
    }
    if !actions.is_empty() {
        context.insert("actions", actions.join(","));
    }
    context
}

/// A value of a `markers` contract for `context`: a message, then (about half the time, when
/// the page offers one) a payload whose data meets its type's schema, else suggestions.
pub(crate) fn generate_markers(
    contract: &Contract,
    context: &Context,
    hints: &Hints,
    seed: u64,
) -> Option<Generated> {
    let spec = contract.markers()?;
    let mut rng = StdRng::seed_from_u64(seed);
    let message = words::paragraph(&mut rng);
    let offered: Vec<_> = spec
        .payloads
        .iter()
        .filter(|p| p.available_on(context.get("page")))
        .collect();
    let mut spots = Spots::default();
    let mut value = json!({
        "message": message,
        "suggested_values": null,
        "suggested_actions": null,
        "payload": null,
    });
    let payload = match offered.choose(&mut rng) {
        Some(kind) if rng.random_bool(0.5) => (0..PAYLOAD_TRIES).find_map(|i| {
            let data = generate(kind.schema.raw(), hints, seed.wrapping_add(i));
            kind.schema.is_valid(&data.value).then_some((kind, data))
        }),
        _ => None,
    };
    if let Some((kind, data)) = payload {
        value["payload"] = json!({"type": kind.name, "data": data.value});
        for mut spot in data.spots.objects {
            spot.pointer = format!("/payload/data{}", spot.pointer);
            spots.objects.push(spot);
        }
        for mut spot in data.spots.enums {
            spot.pointer = format!("/payload/data{}", spot.pointer);
            spots.enums.push(spot);
        }
    } else {
        let count = rng.random_range(2..=3usize);
        let chips: Vec<Value> = (0..count)
            .map(|_| {
                let label = words::phrase(&mut rng);
                json!({"label": label, "value": format!("{label}, please")})
            })
            .collect();
        for i in 0..count {
            spots.objects.push(ObjectSpot {
                pointer: format!("/suggested_values/{i}"),
                required: vec!["label".into(), "value".into()],
                in_array: true,
            });
        }
        value["suggested_values"] = Value::Array(chips);
        let actions = spec.actions_for(context);
        if let Some(action) = actions.choose(&mut rng).filter(|_| rng.random_bool(0.5)) {
            value["suggested_actions"] = json!([
                {"label": words::phrase(&mut rng), "action": action.action, "handler": "client"}
            ]);
        }
    }
    let valid = contract
        .check(&contract.reply_text(&value), context)
        .is_valid();
    Some(Generated {
        value,
        valid,
        tries: 1,
        spots,
    })
}

/// A value of a `text` contract: a paragraph, and — when the prompt says the conversation is in
/// a mode that shows question cards — one question with a rationale and three options, written
/// the way the prompt asks, so that Bridle finds the card.
pub(crate) fn generate_text(contract: &Contract, system: &str, seed: u64) -> Generated {
    let mut rng = StdRng::seed_from_u64(seed);
    let message = words::paragraph(&mut rng);
    let mut value = json!({"message": message, "question_cards": []});
    if let Some(category) = card_mode(system) {
        let options: Vec<Value> = (0..3)
            .map(|i| {
                json!({"id": format!("opt_{}", i + 1), "label": words::phrase(&mut rng),
                       "is_default": i == 1})
            })
            .collect();
        value["question_cards"] = json!([{
            "question_id": "q_mock",
            "question_text": format!("Which of these matters most to you about {}?", words::word(&mut rng)),
            "rationale": words::sentence(&mut rng),
            "category": category.as_str(),
            "options": options,
            "allow_free_text": true,
            "max_selections": 1,
        }]);
    }
    let valid = contract.validate(&value).is_empty();
    Generated {
        value,
        valid,
        tries: 1,
        spots: Spots::default(),
    }
}

/// The question-card mode the prompt names (`Conversation mode: discovery.`), if any.
pub(crate) fn card_mode(system: &str) -> Option<Category> {
    system
        .lines()
        .find_map(|l| l.strip_prefix("Conversation mode: "))
        .and_then(|rest| rest.split('.').next())
        .and_then(Category::from_mode)
}

/// A reply that asks its question with a `present_question` call: `{"message", "arguments"}`
/// — a short sentence, and arguments meeting the tool's parameters (a question ending in `?`,
/// a rationale, three options of which the second is the default). The spots let the
/// structural faults break the arguments (a dropped or renamed `question`, `options` or
/// `label`).
pub(crate) fn generate_call(seed: u64) -> Generated {
    let mut rng = StdRng::seed_from_u64(seed);
    let message = words::sentence(&mut rng);
    let options: Vec<Value> = (0..3)
        .map(|i| json!({"label": words::phrase(&mut rng), "is_default": i == 1}))
        .collect();
    let arguments = json!({
        "question": format!("Which of these matters most to you about {}?", words::word(&mut rng)),
        "rationale": words::sentence(&mut rng),
        "options": options,
    });
    let mut spots = Spots::default();
    spots.objects.push(ObjectSpot {
        pointer: "/arguments".into(),
        required: vec!["question".into(), "options".into()],
        in_array: false,
    });
    for i in 0..3 {
        spots.objects.push(ObjectSpot {
            pointer: format!("/arguments/options/{i}"),
            required: vec!["label".into()],
            in_array: true,
        });
    }
    let valid = bridle_core::cards::from_tool_call(&arguments, Category::Discovery, "", 0).is_ok();
    Generated {
        value: json!({"message": message, "arguments": arguments}),
        valid,
        tries: 1,
        spots,
    }
}

/// `broken` (made for JSON text) in the shape of `contract`'s replies; `None` when the fault
/// has no such shape (a trailing comma in XML, plain text for a marker reply, which is valid).
pub(crate) fn reshape(
    contract: &Contract,
    broken: Broken,
    generated: &Generated,
    seed: u64,
) -> Option<Broken> {
    let kind = contract.kind();
    match kind {
        Kind::Json => return Some(broken),
        // Plain text has no structure to break: any text is a valid reply.
        Kind::Text => return None,
        Kind::Xml | Kind::Markers => {}
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let text = match (broken.fault, &broken.value) {
        (_, Some(value)) => contract.reply_text(value),
        (Fault::Truncate, None) => {
            let whole = contract.reply_text(&generated.value);
            cut_inside(&whole, kind, &mut rng)?
        }
        // Repairable, as for JSON: the reader takes the document out of the fence or prose.
        (Fault::Fence, None) if kind == Kind::Xml => {
            format!("```xml\n{}\n```", contract.reply_text(&generated.value))
        }
        (Fault::Prose, None) if kind == Kind::Xml => format!(
            "Here is the analysis you asked for:\n\n{}\n\nTell me if anything should change.",
            contract.reply_text(&generated.value)
        ),
        (Fault::PlainText, None) if kind == Kind::Xml => broken.text.clone(),
        _ => return None,
    };
    Some(Broken { text, ..broken })
}

/// A prefix of a written reply that ends inside its structure: inside the XML document, or
/// inside the last marker's JSON. `None` when a marker reply has no marker to cut.
fn cut_inside(whole: &str, kind: Kind, rng: &mut StdRng) -> Option<String> {
    let from = match kind {
        Kind::Markers => whole.rfind(":\n").map(|i| i + 3)?,
        _ => whole.find('>').map(|i| i + 1)?,
    };
    let end = whole.trim_end().len().checked_sub(2)?;
    if from >= end {
        return None;
    }
    let mut at = rng.random_range(from..end);
    while !whole.is_char_boundary(at) {
        at -= 1;
    }
    Some(whole[..at].to_owned())
}
