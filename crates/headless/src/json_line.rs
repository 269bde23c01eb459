//! The `pablo run --json` line of an event, as a type.
//!
//! The lines are a contract (README, "Contracts"; `tests/pin.rs` pins them byte for byte), and
//! most of them are the event's own serialisation: for those the line *is* `serde_json` of the
//! [`Event`], so a field added to the event reaches scripts without a second spelling here. A
//! few events have a line of their own, because the journal and the scripts want different
//! things of them, and the journal's format cannot change under a resumed session:
//!
//! - the journal needs the tool calls of a message and the reasoning blocks as blocks, a script
//!   wants the text (`message`, `reasoning`);
//! - the names scripts have read since the first release (`tool_call`, `tool_result`, `plan`,
//!   `compacted`) are not the journal's (`tool_call_begin`, …);
//! - one `usage` line joins two events (the call's usage, then the context it filled), and its
//!   usage carries the cache reads under a second name (`cache_read_input_tokens`, the name the
//!   cache writes pair with);
//! - `context_cleared` names the cleared calls, not the text that replaced them.
//!
//! Those are the variants of [`Line`], each a struct that borrows from the event, so what a line
//! holds is still checked by the compiler and nothing is read back out of a JSON value.

use serde::Serialize;
use serde_json::Value;

use pablo_protocol::{Event, PlanItem, StopReason, ToolOutcome, Usage};

/// One `--json` line: an event as it serialises itself, or a line of its own.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum JsonLine<'a> {
    Event(&'a Event),
    Own(Line<'a>),
}

/// The lines that are not their event's serialisation (see the module docs).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Line<'a> {
    ToolCall {
        call_id: &'a str,
        tool: &'a str,
        arguments: &'a Value,
    },
    ToolResult {
        call_id: &'a str,
        tool: &'a str,
        result: &'a ToolOutcome,
    },
    Message {
        text: &'a str,
    },
    Plan {
        explanation: &'a Option<String>,
        items: &'a [PlanItem],
    },
    Reasoning {
        text: String,
    },
    /// One per model call of the main conversation: its usage (when the provider reported it),
    /// the context it filled and the session's cost so far (`null` when prices are unknown).
    Usage {
        last: Option<LineUsage>,
        total: Option<LineUsage>,
        context_tokens: u64,
        context_window: u64,
        cost_usd: Option<f64>,
    },
    /// A subagent's own usage, inside its `subagent` line.
    #[serde(rename = "usage")]
    SubagentUsage {
        last: LineUsage,
        total: LineUsage,
    },
    ContextCleared {
        call_ids: Vec<&'a str>,
        tokens_before: u64,
        tokens_after: u64,
    },
    TurnCompleted {
        stop_reason: &'a StopReason,
        usage: LineUsage,
        model_calls: Option<u64>,
    },
    #[serde(rename = "compacted")]
    ContextCompacted {
        summary: &'a str,
        replaced_messages: usize,
    },
    SubagentFinished {
        call_id: &'a str,
        stop_reason: &'a StopReason,
        usage: LineUsage,
        tool_calls: u64,
        elapsed_ms: u64,
    },
    /// A search at the provider: its query and the pages found (their encrypted content is for
    /// the provider, not for a reader), or the provider's error code.
    WebSearch {
        id: &'a str,
        query: &'a str,
        results: Vec<SearchedPage<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
    },
    /// One event of a subagent, as the line it would be in the main conversation.
    Subagent {
        call_id: &'a str,
        event: Box<JsonLine<'a>>,
    },
}

/// Usage as the lines print it: the protocol's fields, with the cache reads also under the name
/// the cache writes pair with.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct LineUsage {
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    cache_read_input_tokens: u64,
    cache_write_input_tokens: u64,
    /// Only when the provider searched.
    #[serde(skip_serializing_if = "is_zero")]
    web_searches: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One page a web search found, as its line shows it.
#[derive(Debug, Serialize)]
pub(super) struct SearchedPage<'a> {
    pub(super) url: &'a str,
    pub(super) title: &'a str,
}

impl From<&Usage> for LineUsage {
    fn from(u: &Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
            cache_read_input_tokens: u.cached_input_tokens,
            cache_write_input_tokens: u.cache_write_input_tokens,
            web_searches: u.web_searches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: Line<'_>) -> String {
        serde_json::to_string(&JsonLine::Own(line)).unwrap()
    }

    /// The lines `tests/pin.rs` does not reach (its scripted session has no subagent, no
    /// compaction and no cleared results), byte for byte as the hand-built lines were.
    #[test]
    fn the_lines_of_subagents_compaction_and_cleared_results_keep_their_bytes() {
        let usage = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cached_input_tokens: 3,
            cache_write_input_tokens: 4,
            web_searches: 0,
        };
        let u = r#"{"input_tokens":1,"output_tokens":2,"cached_input_tokens":3,"cache_read_input_tokens":3,"cache_write_input_tokens":4}"#;
        let inner = JsonLine::Own(Line::SubagentUsage {
            last: (&usage).into(),
            total: (&usage).into(),
        });
        assert_eq!(
            text(Line::Subagent {
                call_id: "c",
                event: Box::new(inner)
            }),
            format!(
                r#"{{"type":"subagent","call_id":"c","event":{{"type":"usage","last":{u},"total":{u}}}}}"#
            )
        );
        assert_eq!(
            text(Line::SubagentFinished {
                call_id: "c",
                stop_reason: &StopReason::EndTurn,
                usage: (&usage).into(),
                tool_calls: 3,
                elapsed_ms: 4
            }),
            format!(
                r#"{{"type":"subagent_finished","call_id":"c","stop_reason":"end_turn","usage":{u},"tool_calls":3,"elapsed_ms":4}}"#
            )
        );
        assert_eq!(
            text(Line::ContextCompacted {
                summary: "s",
                replaced_messages: 4
            }),
            r#"{"type":"compacted","summary":"s","replaced_messages":4}"#
        );
        assert_eq!(
            text(Line::ContextCleared {
                call_ids: vec!["c1"],
                tokens_before: 5,
                tokens_after: 2
            }),
            r#"{"type":"context_cleared","call_ids":["c1"],"tokens_before":5,"tokens_after":2}"#
        );
        assert_eq!(
            text(Line::Usage {
                last: None,
                total: None,
                context_tokens: 9,
                context_window: 10,
                cost_usd: None
            }),
            r#"{"type":"usage","last":null,"total":null,"context_tokens":9,"context_window":10,"cost_usd":null}"#
        );
    }

    #[test]
    fn an_event_that_is_its_own_line_is_written_as_the_journal_writes_it() {
        let e = Event::Retry {
            attempt: 2,
            max_attempts: 5,
            wait_ms: 10,
            reason: "r".into(),
            code: "c".into(),
        };
        assert_eq!(
            serde_json::to_string(&JsonLine::Event(&e)).unwrap(),
            r#"{"type":"retry","attempt":2,"max_attempts":5,"wait_ms":10,"reason":"r","code":"c"}"#
        );
    }
}
