//! An MCP server's question (`elicitation/create`) as the person sees it: the form under the
//! transcript while the call runs, filled, sent, and what stays in the transcript.

use super::*;

fn booking() -> McpQuestion {
    let field = |name: &str, title: Option<&str>, required: bool, kind: FieldKind| QuestionField {
        name: name.into(),
        title: title.map(str::to_string),
        description: None,
        required,
        kind,
        default: None,
    };
    let mut nights = field(
        "nights",
        Some("Nights"),
        false,
        FieldKind::Number {
            integer: true,
            minimum: Some(1.0),
            maximum: Some(14.0),
        },
    );
    nights.default = Some(json!(2));
    let mut city = field(
        "city",
        Some("City"),
        true,
        FieldKind::Text {
            min_length: None,
            max_length: None,
            format: None,
        },
    );
    city.description = Some("where the hotel is".into());
    McpQuestion {
        id: "q-1".into(),
        server: "hotel".into(),
        message: "To book the room I need a few details.".into(),
        fields: vec![
            city,
            nights,
            field(
                "room",
                Some("Room"),
                true,
                FieldKind::Choice {
                    options: vec!["single".into(), "double".into()],
                    labels: vec!["Single room".into(), "Double room".into()],
                },
            ),
            field("breakfast", Some("Breakfast"), false, FieldKind::Boolean),
        ],
    }
}

fn asked(s: &mut AppState) {
    user_turn(s, "book me a room in Lyon");
    s.apply(Event::ToolCallBegin {
        call_id: "m1".into(),
        tool: "mcp__hotel__book".into(),
        arguments: json!({"hotel": "Lumière"}),
    });
    s.apply(Event::McpQuestion {
        question: booking(),
    });
}

#[test]
fn a_servers_question_is_a_form_under_the_transcript() {
    let (mut s, _) = state();
    asked(&mut s);
    for c in "Lyon".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    s.handle_key(key(KeyCode::Tab));
    s.handle_key(key(KeyCode::Tab));
    s.handle_key(key(KeyCode::Right));
    snap!("mcp_question_form", draw(&mut s, 90, 24));
}

#[test]
fn a_sent_answer_goes_to_the_agent_and_leaves_one_line_behind() {
    let (mut s, _) = state();
    asked(&mut s);
    for c in "Lyon".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    // Enter with the room not chosen: the form stays, on that field, saying why.
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(s.take_ops(), vec![]);
    s.handle_key(key(KeyCode::Right));
    s.handle_key(key(KeyCode::Enter));
    let mut content = serde_json::Map::new();
    content.insert("city".into(), json!("Lyon"));
    content.insert("nights".into(), json!(2));
    content.insert("room".into(), json!("single"));
    assert_eq!(
        s.take_ops(),
        vec![Op::AnswerMcpQuestion {
            id: "q-1".into(),
            answer: QuestionAnswer::Accept { content },
        }]
    );
    s.apply(Event::McpQuestionClosed {
        id: "q-1".into(),
        server: "hotel".into(),
        action: "accept".into(),
    });
    let screen = draw(&mut s, 90, 16);
    assert!(
        screen.contains("mcp hotel: question answered (3 fields)"),
        "{screen}"
    );
    assert!(!screen.contains("asks"), "{screen}");
}

#[test]
fn a_question_withdrawn_by_its_call_closes_the_form_saying_so() {
    let (mut s, _) = state();
    asked(&mut s);
    s.apply(Event::McpQuestionClosed {
        id: "q-1".into(),
        server: "hotel".into(),
        action: "cancel".into(),
    });
    let screen = draw(&mut s, 90, 16);
    assert!(
        screen.contains("mcp hotel: its question was withdrawn (cancel)"),
        "{screen}"
    );
    assert!(!screen.contains("The MCP server hotel asks"), "{screen}");
}

#[test]
fn a_question_taller_than_the_screen_keeps_the_focused_field_in_sight_on_a_small_terminal() {
    let (mut s, _) = state();
    user_turn(&mut s, "fill the long form");
    s.apply(Event::ToolCallBegin {
        call_id: "m2".into(),
        tool: "mcp__forms__fill".into(),
        arguments: json!({}),
    });
    let fields = (0..40)
        .map(|i| QuestionField {
            name: format!("f{i}"),
            title: Some(format!("Field number {i}")),
            description: Some("a description long enough to wrap on a narrow terminal ".repeat(3)),
            required: false,
            kind: FieldKind::Text {
                min_length: None,
                max_length: None,
                format: None,
            },
            default: None,
        })
        .collect();
    s.apply(Event::McpQuestion {
        question: McpQuestion {
            id: "q-long".into(),
            server: "forms".into(),
            // The server's own words, untrusted: far longer than the screen.
            message: "Please read this carefully. ".repeat(200),
            fields,
        },
    });
    for _ in 0..39 {
        s.handle_key(key(KeyCode::Tab));
    }
    for c in "last".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    let screen = draw(&mut s, 60, 16);
    assert!(screen.contains("Field number 39"), "{screen}");
    assert!(screen.contains("last"), "{screen}");
    assert!(
        screen.contains("decline"),
        "the keys stay on screen: {screen}"
    );
}
