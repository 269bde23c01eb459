//! `pablo run`: the headless front-end.
//!
//! It submits one task and exits 0 only when the turn completed. With `--json` stdout carries one
//! JSON object per line; without it stdout carries only the final answer, so `pablo run "…" >
//! answer.md` captures exactly that, and progress, warnings and notices go to stderr (a live
//! status line on a terminal, plain lines naming each tool and its main argument otherwise). Nobody can answer an approval prompt here,
//! so the agent runs with [`pablo_core::ApprovalMode::RefuseAsks`] unless the host granted the
//! authority up front. The `--json` line format is a contract (README, "Contracts").

mod json_line;

use std::io::Write;

use serde_json::Value;

use json_line::{JsonLine, Line, LineUsage, SearchedPage};

use pablo_core::ErrorCode;
use pablo_launch::describe_result;
use pablo_protocol::AgentHandle;
use pablo_protocol::{Event, Op, PlanStatus, StopReason, ToolOutcome, Usage, reasoning_text};

/// How a headless run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub exit_code: i32,
    pub(crate) stop_reason: Option<StopReason>,
    /// The model's final answer (its last message, when that message called no tool), for
    /// `--output-last-message`.
    pub last_message: Option<String>,
}

/// Exit code for a run that was interrupted (SIGINT), as shells expect.
pub(crate) const EXIT_INTERRUPTED: i32 = 130;
/// Exit code for a run that was stopped by SIGTERM, as shells expect (128 + 15).
pub(crate) const EXIT_TERMINATED: i32 = 143;

/// What stopped a run from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Ctrl-C (SIGINT).
    Interrupt,
    /// SIGTERM (a service manager, `kill`, a CI job's timeout).
    Terminate,
}

impl Stop {
    fn exit_code(self) -> i32 {
        match self {
            Stop::Interrupt => EXIT_INTERRUPTED,
            Stop::Terminate => EXIT_TERMINATED,
        }
    }

    /// The `error` line a stopped run ends with.
    fn error(self) -> Event {
        match self {
            Stop::Interrupt => Event::Error {
                code: ErrorCode::Cancelled.into(),
                message: "the run was interrupted".into(),
            },
            Stop::Terminate => Event::Error {
                code: ErrorCode::Terminated.into(),
                message: "the run was stopped by SIGTERM: the turn was cancelled, and the \
                          session's temporary files are removed as pablo exits"
                    .into(),
            },
        }
    }
}

/// Where a headless run writes. With `--json` every line goes to `out`; without it `out` gets
/// only the final answer and `progress` the rest, as a compact live view (`live`: a terminal, one
/// status line rewritten in place) or as plain lines.
pub struct Output<'a, W: Write, E: Write> {
    pub out: &'a mut W,
    pub progress: &'a mut E,
    pub json: bool,
    pub live: bool,
}

/// Drives one task to completion and prints it (see [`Output`]). `preamble` (launch warnings;
/// for a resumed session also its notes and restored checklist, `ResumeState::start_events`) is
/// printed right after `session_started`, before the task runs. `interrupt` resolves when the
/// person presses Ctrl-C or the run gets SIGTERM; the turn is then cancelled and awaited, never
/// abandoned, and the run exits 130 or 143.
pub async fn run<W: Write, E: Write>(
    mut agent: AgentHandle,
    preamble: Vec<Event>,
    task: String,
    output: Output<'_, W, E>,
    interrupt: impl std::future::Future<Output = Stop>,
) -> RunOutcome {
    let mut preamble = Some(preamble);
    let mut printer = Printer {
        json: output.json,
        live: output.live,
        out: output.out,
        progress: output.progress,
        status_shown: false,
        last_usage: None,
        answer: None,
        arguments: Default::default(),
    };
    let _ = agent.ops.send(Op::user_turn(task));
    tokio::pin!(interrupt);
    let mut stopped: Option<Stop> = None;
    let mut stop_reason = None;
    let mut saw_error = false;
    loop {
        let event = tokio::select! {
            e = agent.events.recv() => e,
            stop = &mut interrupt, if stopped.is_none() => {
                stopped = Some(stop);
                let _ = agent.ops.send(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else { break };
        // A refused turn ends the run as a failed one: its error is printed and nothing ran.
        let event = match event {
            Event::TurnRefused { code, message, .. } => {
                printer.print(&Event::Error { code, message });
                saw_error = true;
                Event::TurnCompleted {
                    stop_reason: StopReason::Error,
                    usage: Default::default(),
                    model_calls: Some(0),
                }
            }
            e => e,
        };
        if let Event::Error { .. } = event {
            saw_error = true;
        }
        if let Event::TurnCompleted { stop_reason: r, .. } = &event {
            stop_reason = Some(*r);
            if *r == StopReason::Cancelled && !saw_error {
                printer.print(&stopped.unwrap_or(Stop::Interrupt).error());
            }
            printer.print(&event);
            let _ = agent.ops.send(Op::Shutdown);
            continue;
        }
        let done = matches!(event, Event::ShutdownComplete);
        let started = matches!(event, Event::SessionStarted { .. });
        printer.print(&event);
        if started {
            for e in preamble.take().unwrap_or_default() {
                printer.print(&e);
            }
        }
        if done {
            break;
        }
    }
    let _ = agent.task.await;
    let exit_code = match stop_reason {
        Some(StopReason::EndTurn | StopReason::MaxTokens) if !saw_error => 0,
        Some(StopReason::Cancelled) => stopped.unwrap_or(Stop::Interrupt).exit_code(),
        None => {
            printer.print(&Event::Error {
                code: ErrorCode::AgentStopped.into(),
                message: "the agent stopped before the turn completed".into(),
            });
            1
        }
        _ => 1,
    };
    printer.clear_status();
    RunOutcome {
        exit_code,
        stop_reason,
        last_message: printer.answer.take(),
    }
}

struct Printer<'a, W: Write, E: Write> {
    json: bool,
    /// Progress goes to a terminal: one status line, rewritten in place.
    live: bool,
    out: &'a mut W,
    progress: &'a mut E,
    /// Whether the live status line is on the screen (and must be cleared before a line).
    status_shown: bool,
    /// The usage of the model call whose `context_usage` has not been printed yet.
    last_usage: Option<(Usage, Usage)>,
    /// The model's last message when it called no tool: the run's answer so far.
    answer: Option<String>,
    /// Arguments of the calls in flight, to describe their results (readable mode).
    arguments: std::collections::HashMap<String, Value>,
}

impl<W: Write, E: Write> Printer<'_, W, E> {
    fn print(&mut self, event: &Event) {
        if let Event::MessageCompleted { text, tool_calls } = event {
            // Only a message that ends the model's work is an answer; one that calls tools is
            // a step on the way.
            self.answer = (tool_calls.is_empty() && !text.is_empty()).then(|| text.clone());
        }
        // A closed stdout or stderr (`pablo run … | head`) is not a reason to stop the agent.
        let _ = if self.json {
            self.json_line(event)
        } else {
            self.readable(event)
        };
        let _ = self.out.flush();
        let _ = self.progress.flush();
    }

    fn json_line(&mut self, event: &Event) -> std::io::Result<()> {
        // Every part of a line is a string, a number, a protocol type or a JSON value, so it
        // always serialises; were one not to, no line is better than a broken one.
        match self.line_of(event).map(|l| serde_json::to_string(&l)) {
            Some(Ok(line)) => writeln!(self.out, "{line}"),
            _ => Ok(()),
        }
    }

    /// A subagent's lines: its start and end, and each of its events as the line it would be in
    /// the main conversation, under `{"type":"subagent","call_id":…,"event":…}`.
    fn subagent_line<'a>(&mut self, event: &'a Event) -> Option<JsonLine<'a>> {
        let line = match event {
            Event::SubagentStarted { .. } => return Some(JsonLine::Event(event)),
            Event::SubagentFinished {
                call_id,
                stop_reason,
                usage,
                tool_calls,
                elapsed_ms,
            } => Line::SubagentFinished {
                call_id,
                stop_reason,
                usage: usage.into(),
                tool_calls: *tool_calls,
                elapsed_ms: *elapsed_ms,
            },
            Event::Subagent { call_id, event } => {
                let inner = match event.as_ref() {
                    // Its own usage, not the session's figures of the main conversation.
                    Event::Usage { last, total } => JsonLine::Own(Line::SubagentUsage {
                        last: last.into(),
                        total: total.into(),
                    }),
                    e => self.line_of(e)?,
                };
                Line::Subagent {
                    call_id,
                    event: Box::new(inner),
                }
            }
            _ => return None,
        };
        Some(JsonLine::Own(line))
    }

    /// The `--json` line of `event`, if it has one.
    fn line_of<'a>(&mut self, event: &'a Event) -> Option<JsonLine<'a>> {
        let line = match event {
            Event::SessionStarted { .. }
            | Event::Error { .. }
            | Event::Warning { .. }
            | Event::Retry { .. }
            | Event::AnswerRetried { .. }
            | Event::McpServer { .. }
            | Event::PreviewDiagnostics { .. }
            | Event::Hook { .. } => return Some(JsonLine::Event(event)),
            Event::ToolCallBegin {
                call_id,
                tool,
                arguments,
            } => Line::ToolCall {
                call_id,
                tool,
                arguments,
            },
            Event::ToolCallEnd {
                call_id,
                tool,
                result,
            } => Line::ToolResult {
                call_id,
                tool,
                result,
            },
            Event::MessageCompleted { text, .. } if !text.is_empty() => Line::Message { text },
            Event::PlanUpdate { explanation, items } => Line::Plan { explanation, items },
            Event::ReasoningCompleted { blocks } => {
                let text = reasoning_text(blocks);
                if text.is_empty() {
                    return None;
                }
                Line::Reasoning { text }
            }
            Event::WebSearch { search } => Line::WebSearch {
                id: &search.id,
                query: &search.query,
                results: search
                    .results
                    .iter()
                    .map(|r| SearchedPage {
                        url: &r.url,
                        title: &r.title,
                    })
                    .collect(),
                error: search.error.as_deref(),
            },
            Event::Usage { last, total } => {
                self.last_usage = Some((*last, *total));
                return None;
            }
            Event::ContextUsage {
                used_tokens,
                window_tokens,
                cost_usd,
            } => {
                let usage = self.last_usage.take();
                Line::Usage {
                    last: usage.map(|(l, _)| LineUsage::from(&l)),
                    total: usage.map(|(_, t)| LineUsage::from(&t)),
                    context_tokens: *used_tokens,
                    context_window: *window_tokens,
                    cost_usd: *cost_usd,
                }
            }
            Event::ContextCleared {
                cleared,
                tokens_before,
                tokens_after,
            } => Line::ContextCleared {
                call_ids: cleared.iter().map(|c| c.call_id.as_str()).collect(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            Event::TurnCompleted {
                stop_reason,
                usage,
                model_calls,
            } => Line::TurnCompleted {
                stop_reason,
                usage: usage.into(),
                model_calls: *model_calls,
            },
            Event::ContextCompacted {
                summary,
                replaced_messages,
            } => Line::ContextCompacted {
                summary,
                replaced_messages: *replaced_messages,
            },
            e @ (Event::SubagentStarted { .. }
            | Event::Subagent { .. }
            | Event::SubagentFinished { .. }) => return self.subagent_line(e),
            _ => return None,
        };
        Some(JsonLine::Own(line))
    }

    /// A line of progress that stays: on a terminal it replaces the status line first.
    fn line(&mut self, text: &str) -> std::io::Result<()> {
        self.clear_status_io()?;
        writeln!(self.progress, "{text}")
    }

    /// What is happening now: the live status line on a terminal, nothing otherwise (the
    /// plain lines say it when it is done).
    fn status(&mut self, text: &str) -> std::io::Result<()> {
        if !self.live {
            return Ok(());
        }
        let width = usize::from(
            rustix::termios::tcgetwinsize(std::io::stderr())
                .ok()
                // A terminal that reports no size (0 columns) is taken to be 80 wide.
                .filter(|w| w.ws_col > 0)
                .map_or(80, |w| w.ws_col)
                .max(10),
        );
        let short: String = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(width - 1)
            .collect();
        // Carriage return and erase-line rewrite the one status line in place.
        write!(self.progress, "\r\x1b[2K{short}")?;
        self.status_shown = true;
        Ok(())
    }

    fn clear_status_io(&mut self) -> std::io::Result<()> {
        if self.status_shown {
            self.status_shown = false;
            write!(self.progress, "\r\x1b[2K")?;
        }
        Ok(())
    }

    fn clear_status(&mut self) {
        let _ = self.clear_status_io();
        let _ = self.progress.flush();
    }

    /// A search the provider ran: the query and its count (or error), then each page's URL.
    fn search_lines(&mut self, search: &pablo_protocol::WebSearch) -> std::io::Result<()> {
        self.line(&format!("web search {}", search.summary()))?;
        for r in &search.results {
            self.line(&format!("  {}", r.url))?;
        }
        Ok(())
    }

    fn readable(&mut self, event: &Event) -> std::io::Result<()> {
        match event {
            Event::SessionStarted {
                session_id,
                provider,
                model,
                ..
            } => self.line(&format!(
                "pablo · {provider}/{model} · session {session_id}"
            )),
            Event::ReasoningDelta { .. } => self.status("thinking…"),
            Event::MessageDelta { .. } => self.status("writing…"),
            Event::WebSearch { search } => self.search_lines(search),
            Event::ReasoningCompleted { blocks } if !self.live => {
                let text = reasoning_text(blocks);
                if text.is_empty() {
                    return Ok(());
                }
                self.line(&format!("thinking: {}", text.trim_end()))
            }
            // A step on the way (a message that calls tools) is progress; the answer is not
            // repeated here, it goes to stdout at the end.
            Event::MessageCompleted { text, tool_calls }
                if !tool_calls.is_empty() && !text.trim().is_empty() =>
            {
                self.line(text.trim_end())
            }
            Event::ToolCallBegin {
                call_id,
                tool,
                arguments,
            } => {
                self.arguments.insert(call_id.clone(), arguments.clone());
                let what = format!("{tool} {}", pablo_protocol::summarize_arguments(arguments));
                if self.live {
                    self.status(&format!("→ {what}"))
                } else {
                    self.line(&format!("→ {what}"))
                }
            }
            Event::ToolCallEnd {
                call_id,
                tool,
                result,
            } => {
                let arguments = self.arguments.remove(call_id).unwrap_or(Value::Null);
                let headline = describe_result(tool, &arguments, result).headline(None);
                match result {
                    ToolOutcome::Ok { .. } => self.line(&format!("  ✓ {tool}: {headline}")),
                    // A refusal's message names the tool already.
                    ToolOutcome::Err { .. } => self.line(&format!("  ✗ {headline}")),
                }
            }
            Event::PlanUpdate { items, .. } => {
                let done = items
                    .iter()
                    .filter(|i| i.status == PlanStatus::Completed)
                    .count();
                let mut text = format!("plan {done}/{}", items.len());
                for item in items {
                    let mark = match item.status {
                        PlanStatus::Pending => "☐",
                        PlanStatus::InProgress => "◐",
                        PlanStatus::Completed => "☑",
                    };
                    text.push_str(&format!("\n  {mark} {}", item.content));
                }
                self.line(&text)
            }
            Event::Warning { message } => self.line(&format!("warning: {message}")),
            hook @ Event::Hook { .. } => match pablo_protocol::describe::hook_words(hook) {
                Some(words) => self.line(&words),
                None => Ok(()),
            },
            Event::SubagentStarted {
                agent, description, ..
            } => self.line(&format!("  ⇢ subagent {agent}: {description}")),
            // A subagent's calls, one line each, under its call.
            Event::Subagent { event, .. } => match event.as_ref() {
                Event::ToolCallBegin {
                    tool, arguments, ..
                } => self.line(&format!(
                    "    · {tool} {}",
                    pablo_protocol::summarize_arguments(arguments)
                )),
                _ => Ok(()),
            },
            Event::Retry {
                attempt,
                max_attempts,
                wait_ms,
                reason,
                ..
            } => {
                let secs = wait_ms.div_ceil(1000);
                let words = pablo_protocol::retry_words(*attempt, *max_attempts, secs, reason);
                self.line(&words)
            }
            Event::AnswerRetried { reason, .. } => self.line(&format!(
                "the answer was cut off ({reason}); asking again, once"
            )),
            Event::McpServer { server } => match pablo_protocol::describe::mcp_server(server) {
                Some(line) => self.line(&line),
                None => Ok(()),
            },
            Event::ContextCompacted {
                replaced_messages, ..
            } => self.line(&format!(
                "context: {replaced_messages} earlier messages were replaced by a summary"
            )),
            Event::ContextCleared {
                cleared,
                tokens_before,
                tokens_after,
            } => self.line(&format!(
                "context: {} old tool results cleared (~{tokens_before} → ~{tokens_after} tokens)",
                cleared.len()
            )),
            Event::Error { code, message } => self.line(&format!("error: {message} ({code})")),
            Event::TurnCompleted {
                stop_reason,
                usage,
                model_calls,
            } => {
                let calls = model_calls
                    .map(|n| format!(" · {}", pablo_protocol::describe::plural(n, "model call")))
                    .unwrap_or_default();
                self.line(&format!(
                    "done: {}{calls} · {} tokens in ({} from cache), {} out",
                    serde_json::to_value(stop_reason)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    usage.input_tokens,
                    usage.cached_input_tokens,
                    usage.output_tokens
                ))?;
                self.progress.flush()?;
                match &self.answer {
                    Some(answer) => writeln!(self.out, "{}", answer.trim_end_matches('\n')),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}
