//! Streams of the providers' own web search, as the scripted server sends them: Anthropic's
//! `server_tool_use` and `web_search_tool_result` blocks with `usage.server_tool_use`, and
//! OpenAI Responses' `web_search_call` items.

use serde_json::{Value, json};

use super::http::{anthropic, named_event};

/// One page of a scripted search: title and URL.
pub type Page<'a> = (&'a str, &'a str);

fn ev(name: &str, data: Value) -> String {
    named_event(name, &data.to_string())
}

/// The results content of Anthropic's result block: each page with encrypted content
/// `enc:URL`.
pub fn anthropic_pages(pages: &[Page<'_>]) -> Value {
    Value::Array(
        pages
            .iter()
            .map(|(title, url)| {
                json!({"type": "web_search_result", "title": title, "url": url,
                    "encrypted_content": format!("enc:{url}"), "page_age": "1 day ago"})
            })
            .collect(),
    )
}

/// The error content of Anthropic's result block.
pub fn anthropic_error(code: &str) -> Value {
    json!({"type": "web_search_tool_result_error", "error_code": code})
}

/// Anthropic: a short text, then one search (`id`, `query` streamed as input JSON, `content` as
/// its result) at block indices 10 and 11; more blocks and [`anthropic_stop`] follow.
pub fn anthropic_search(id: &str, query: &str, content: Value) -> anthropic::Stream {
    let input = json!({"query": query}).to_string();
    let (head, tail) = input.split_at(input.len() / 2);
    anthropic::Stream::new(10)
        .text(&["Let me look that up. "])
        .raw(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 10, "content_block":
                {"type": "server_tool_use", "id": id, "name": "web_search", "input": {}}}),
        ))
        .raw(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 10,
                "delta": {"type": "input_json_delta", "partial_json": head}}),
        ))
        .raw(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 10,
                "delta": {"type": "input_json_delta", "partial_json": tail}}),
        ))
        .raw(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 10}),
        ))
        .raw(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 11, "content_block":
                {"type": "web_search_tool_result", "tool_use_id": id, "content": content}}),
        ))
        .raw(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 11}),
        ))
}

/// `message_delta` with `stop_reason` and usage counting `searches`, then `message_stop`.
pub fn anthropic_stop(s: anthropic::Stream, stop_reason: &str, searches: u64) -> Vec<String> {
    s.raw(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 20,
                "server_tool_use": {"web_search_requests": searches}}}),
    ))
    .raw(ev("message_stop", json!({"type": "message_stop"})))
    .events()
}

/// Anthropic: one search that found `pages`, then `answer`, `end_turn`.
pub fn anthropic_answer(id: &str, query: &str, pages: &[Page<'_>], answer: &str) -> Vec<String> {
    let s = anthropic_search(id, query, anthropic_pages(pages)).text(&[answer]);
    anthropic_stop(s, "end_turn", 1)
}

/// OpenAI Responses: one `web_search_call` (`id`, `query`, its sources), then the answer.
pub fn responses_answer(id: &str, query: &str, pages: &[Page<'_>], answer: &str) -> Vec<String> {
    let named = |data: Value| {
        let name = data["type"].as_str().unwrap_or("message").to_string();
        named_event(&name, &data.to_string())
    };
    let sources: Vec<Value> = pages
        .iter()
        .map(|(_, url)| json!({"type": "url", "url": url}))
        .collect();
    vec![
        named(json!({"type": "response.created",
            "response": {"id": "resp_test", "status": "in_progress"}})),
        named(
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "web_search_call", "id": id, "status": "in_progress"}}),
        ),
        named(
            json!({"type": "response.web_search_call.searching", "output_index": 0,
            "item_id": id}),
        ),
        named(
            json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "web_search_call", "id": id, "status": "completed",
                "action": {"type": "search", "query": query, "sources": sources}}}),
        ),
        named(
            json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        named(
            json!({"type": "response.output_text.delta", "item_id": "msg_1",
            "output_index": 1, "content_index": 0, "delta": answer}),
        ),
        named(
            json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": answer, "annotations": []}]}}),
        ),
        named(json!({"type": "response.completed", "response": {
            "id": "resp_test", "status": "completed",
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 20, "total_tokens": 120}}})),
    ]
}
