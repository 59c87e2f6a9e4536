//! Tests of the mock's tool calls: forced (named, first tool, Anthropic's forced tool that is
//! not Bridle's structured output), asked for by a script step, refused when the tool is not
//! offered, never made on the model's own, and the round trip call → result → answer.

use crate::config::MockConfig;
use crate::faults::Fault;
use crate::model::MockModel;
use crate::request::{
    CallMade, MockCall, MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role,
};
use crate::script::{Script, ScriptCall, ScriptTurn, Step};
use bridle_core::{Context, Contract, Contracts};
use serde_json::{Value, json};

fn weather() -> MockTool {
    MockTool {
        name: "get_weather".into(),
        parameters: json!({
            "type": "object",
            "required": ["city", "unit"],
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7}
            },
            "additionalProperties": false
        }),
    }
}

fn clock() -> MockTool {
    MockTool {
        name: "get_time".into(),
        parameters: Value::Null,
    }
}

fn ask(user: &str, format: ReplyFormat) -> MockRequest {
    MockRequest {
        format,
        tools: vec![weather(), clock()],
        ..MockRequest::new(
            "mock-test",
            vec![
                MockMessage::new(Role::System, "You are a weather bot."),
                MockMessage::new(Role::User, user),
            ],
        )
    }
}

fn forced(name: Option<&str>) -> ReplyFormat {
    ReplyFormat::Call {
        name: name.map(str::to_owned),
    }
}

/// The calls of a text reply with no text.
fn calls_of(reply: &MockReply) -> Vec<MockCall> {
    match reply {
        MockReply::Text { content, calls, .. } => {
            assert_eq!(content, "", "a call says nothing besides");
            calls.clone()
        }
        other => panic!("not a call: {other:?}"),
    }
}

fn valid_for(tool: &MockTool, arguments: &Value) -> bool {
    let contract = Contract::from_schema("arguments", tool.parameters.clone()).unwrap();
    contract
        .check(&arguments.to_string(), &Context::new())
        .is_valid()
}

fn model(config: MockConfig) -> MockModel {
    MockModel::new(config).unwrap()
}

#[test]
fn a_forced_tool_is_called_with_arguments_valid_for_its_schema() {
    for seed in 0..10 {
        let mock = model(MockConfig::new().with_seed(seed));
        let reply = mock.respond(&ask("Weather in Oslo?", forced(Some("get_weather"))));
        let calls = calls_of(&reply);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert!(valid_for(&weather(), &calls[0].arguments), "{calls:?}");
        assert_eq!(reply.status(), 200);
        // `required`: the first offered tool; a tool without parameters gets `{}`-shaped ones.
        let first = calls_of(&mock.respond(&ask("Weather?", forced(None))));
        assert_eq!(first[0].name, "get_weather");
        let time = calls_of(&mock.respond(&ask("Time?", forced(Some("get_time")))));
        assert_eq!(time[0].arguments, json!({}), "{time:?}");
    }
}

#[test]
fn forced_calls_are_the_same_for_the_same_seed_and_request() {
    let request = ask("Weather in Oslo?", forced(Some("get_weather")));
    let a = model(MockConfig::new().with_seed(3)).respond(&request);
    let b = model(MockConfig::new().with_seed(3)).respond(&request);
    assert_eq!(a, b);
    let others: Vec<Value> = (4..12)
        .map(|seed| calls_of(&model(MockConfig::new().with_seed(seed)).respond(&request)))
        .map(|calls| calls[0].arguments.clone())
        .collect();
    assert!(others.iter().any(|o| *o != calls_of(&a)[0].arguments));
}

#[test]
fn a_forced_tool_that_is_not_offered_gets_a_400_naming_it() {
    let mock = model(MockConfig::new());
    for (format, named) in [
        (forced(Some("get_stock")), "\"get_stock\""),
        (forced(None), "offers no tools"),
    ] {
        let mut request = ask("hi", format);
        if named.contains("no tools") {
            request.tools.clear();
        } else {
            request.tools.truncate(1);
        }
        let MockReply::Http {
            status,
            message,
            fault,
            retry_after,
            ..
        } = mock.respond(&request)
        else {
            panic!("not refused")
        };
        assert_eq!((status, fault, retry_after), (400, None, None));
        assert!(message.contains(named), "{message}");
    }
}

#[test]
fn offered_tools_are_not_called_unasked() {
    let mock = model(MockConfig::new().with_seed(5));
    for format in [ReplyFormat::Free, ReplyFormat::JsonObject] {
        let reply = mock.respond(&ask("Weather in Oslo?", format));
        let MockReply::Text { calls, content, .. } = reply else {
            panic!("not text")
        };
        assert!(calls.is_empty());
        assert!(!content.is_empty());
    }
}

fn selfhelp() -> std::sync::Arc<Contract> {
    Contracts::builtin()
        .unwrap()
        .get("selfhelp-response")
        .unwrap()
}

/// Anthropic's forced tool with Bridle's contract instructions in the system prompt.
fn forced_tool(tool: &MockTool) -> MockRequest {
    let system = selfhelp().instructions(&Context::new());
    MockRequest {
        format: ReplyFormat::Tool {
            name: tool.name.clone(),
            schema: tool.parameters.clone(),
        },
        tools: vec![tool.clone()],
        ..MockRequest::new(
            "m",
            vec![
                MockMessage::new(Role::System, system),
                MockMessage::new(Role::User, "I can't sleep."),
            ],
        )
    }
}

#[test]
fn an_anthropic_forced_tool_is_bridles_structured_output_only_with_the_contracts_schema() {
    let mock = model(MockConfig::new().with_seed(2));
    // Bridle's trick: the tool's schema is the contract's, and its input is the contract's value.
    let respond = MockTool {
        name: "respond".into(),
        parameters: selfhelp().schema().raw().clone(),
    };
    let MockReply::ToolCall { name, input, .. } = mock.respond(&forced_tool(&respond)) else {
        panic!("not the forced tool's input")
    };
    assert_eq!(name, "respond");
    let checked = selfhelp().check(&input.to_string(), &Context::new());
    assert!(checked.is_valid(), "{:?}", checked.violations);
    // Any other forced tool is called with arguments for its own schema.
    let calls = calls_of(&mock.respond(&forced_tool(&weather())));
    assert_eq!(calls[0].name, "get_weather");
    assert!(valid_for(&weather(), &calls[0].arguments), "{calls:?}");
}

#[test]
fn structural_faults_reach_forced_calls_and_a_validation_report_fixes_them() {
    let mock = model(
        MockConfig::new()
            .with_seed(1)
            .with_fault_rate(1.0)
            .with_faults(vec![Fault::MissingRequired]),
    );
    let first = mock.respond(&ask("Weather in Oslo?", forced(Some("get_weather"))));
    assert_eq!(first.fault(), Some(Fault::MissingRequired));
    let bad = calls_of(&first)[0].arguments.clone();
    assert!(!valid_for(&weather(), &bad));
    let target = first.info().target.clone().unwrap();
    let location = target.trim_start_matches('/');
    // Instructor's reask in tool mode: the call, then a tool message with the report.
    let mut retry = ask("Weather in Oslo?", forced(Some("get_weather")));
    retry.messages.push(MockMessage::assistant_calls(
        "",
        vec![CallMade {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: bad,
        }],
    ));
    retry.messages.push(MockMessage::tool_result(
        "call_1",
        format!("Validation Error found:\n1 validation error for GetWeather\n{location}\n  Field required"),
    ));
    let second = mock.respond(&retry);
    assert_eq!((second.fault(), second.info().attempt), (None, 2));
    assert!(valid_for(&weather(), &calls_of(&second)[0].arguments));
}

/// The request after `reply`'s calls, each answered with `result`.
fn after_results(mut request: MockRequest, reply: &MockReply, result: &str) -> MockRequest {
    let made = reply.calls(|i| format!("call_{i}"));
    let ids: Vec<String> = made.iter().map(|c| c.id.clone()).collect();
    request
        .messages
        .push(MockMessage::assistant_calls("", made));
    for id in ids {
        request.messages.push(MockMessage::tool_result(id, result));
    }
    request
}

fn scripted(steps: Vec<Step>) -> MockModel {
    model(MockConfig {
        script: Some(Script {
            turns: vec![ScriptTurn { attempts: steps }],
        }),
        ..MockConfig::new().with_seed(9)
    })
}

#[test]
fn a_script_step_calls_a_tool_and_the_next_entry_answers_its_result() {
    let call = |arguments: Option<Value>| {
        Step::Call(ScriptCall {
            name: "get_weather".into(),
            arguments,
        })
    };
    let mock = scripted(vec![
        call(None),
        call(Some(json!({"city": "Bergen"}))),
        Step::Reply("Rainy in Bergen.".into()),
    ]);
    let request = ask("Weather in Oslo?", ReplyFormat::Free);
    let first = mock.respond(&request);
    let generated = calls_of(&first);
    assert!(valid_for(&weather(), &generated[0].arguments));
    // The result comes back: the same turn's next entry, these exact arguments.
    let second_request = after_results(request, &first, "{\"temp\": 4}");
    let second = mock.respond(&second_request);
    assert_eq!(calls_of(&second)[0].arguments, json!({"city": "Bergen"}));
    assert_ne!(
        second.info().id,
        first.info().id,
        "each round's calls have their own ids"
    );
    let third = mock.respond(&after_results(second_request, &second, "rain"));
    let MockReply::Text { content, calls, .. } = third else {
        panic!("not text")
    };
    assert_eq!((content.as_str(), calls.len()), ("Rainy in Bergen.", 0));
}

#[test]
fn a_script_step_naming_a_tool_not_offered_gets_a_400() {
    let mock = scripted(vec![Step::Call(ScriptCall {
        name: "get_stock".into(),
        arguments: None,
    })]);
    let reply = mock.respond(&ask("hi", ReplyFormat::Free));
    let MockReply::Http {
        status, message, ..
    } = &reply
    else {
        panic!("not refused: {reply:?}")
    };
    assert_eq!(*status, 400);
    assert!(message.contains("\"get_stock\""), "{message}");
    assert!(
        message.contains("\"get_weather\", \"get_time\""),
        "{message}"
    );
    assert_eq!(reply.fault(), None);
}

#[test]
fn after_a_tool_result_the_mock_answers_the_contract() {
    let mock = model(MockConfig::new().with_seed(4));
    let system = selfhelp().instructions(&Context::new());
    let mut request = ask("I can't sleep.", forced(Some("get_weather")));
    request.messages[0] = MockMessage::new(Role::System, system);
    let call = mock.respond(&request);
    assert_eq!(calls_of(&call).len(), 1);
    // The client answers the call and lets the model choose (`auto`).
    let mut next = after_results(request, &call, "{\"temp\": 4}");
    next.format = ReplyFormat::Free;
    let answer = mock.respond(&next);
    let MockReply::Text { content, calls, .. } = &answer else {
        panic!("not text")
    };
    assert!(calls.is_empty());
    let checked = selfhelp().check(content, &Context::new());
    assert!(checked.is_valid(), "{:?}", checked.violations);
    assert_eq!(answer.info().attempt, 1, "a tool result is not feedback");
}
