//! The provider's web search in the transcript: a cell with the query and the pages found, the
//! answer's text split around it as it streamed, and a failed search with its code.

use super::*;

fn search(query: &str, pages: usize, error: Option<&str>) -> WebSearch {
    WebSearch {
        id: "srvtoolu_1".into(),
        provider: SearchProvider::Anthropic,
        query: query.into(),
        results: (1..=pages)
            .map(|i| WebSearchResult {
                url: format!("https://example.org/rust/release-{i}"),
                title: format!("Rust release notes {i}"),
                page_age: None,
                encrypted_content: "opaque".into(),
            })
            .collect(),
        error: error.map(str::to_string),
        status: None,
    }
}

#[test]
fn a_search_shows_its_query_and_pages_between_the_answer_s_parts() {
    let (mut s, _) = state();
    user_turn(&mut s, "what is the latest rust?");
    s.apply(Event::MessageDelta {
        text: "Let me look that up.".into(),
    });
    s.apply(Event::WebSearch {
        search: search("rust latest release", 7, None),
    });
    s.apply(Event::MessageDelta {
        text: "Rust 1.90 is the latest.".into(),
    });
    s.apply(Event::MessageCompleted {
        text: "Let me look that up.Rust 1.90 is the latest.".into(),
        tool_calls: vec![],
    });
    let screen = draw(&mut s, 80, 18);
    assert_eq!(
        screen.matches("Let me look that up.").count(),
        1,
        "the text before the search is not repeated: {screen}"
    );
    snap!("web_search_cell", screen);
    s.handle_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let expanded = draw(&mut s, 80, 18);
    assert!(expanded.contains("release-7"), "{expanded}");
}

#[test]
fn a_failed_search_shows_the_provider_s_code() {
    let (mut s, _) = state();
    user_turn(&mut s, "search");
    s.apply(Event::WebSearch {
        search: search("too many", 0, Some("max_uses_exceeded")),
    });
    let screen = draw(&mut s, 60, 8);
    assert!(
        screen.contains("web search \"too many\"  (max_uses_exceeded)"),
        "{screen}"
    );
}
