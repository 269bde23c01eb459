//! What the person's status line command (`[tui] statusline_command`) is told of the session,
//! and the line it printed. The loop runs the command off the screen's task
//! (`tui::app`), whenever what it would be told has changed, at most once a second.

use super::AppState;
use pablo_launch::statusline::{
    PabloStatus, StatuslineContext, StatuslineCost, StatuslineInput, StatuslineModel,
    StatuslineWorkspace,
};

impl AppState {
    /// The session as the status line command reads it (the program's runner adds the
    /// journal's path and the time since the screen opened).
    pub(crate) fn statusline_input(&self) -> StatuslineInput {
        let status = &self.status;
        let dir = self
            .workspace_dir
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| status.workspace.clone());
        let usage = self.usage();
        let (context_tokens, context_window) = match status.context {
            Some((used, window)) => (Some(used), Some(window)),
            None => (None, None),
        };
        let used_percentage = status
            .context
            .map(|(used, window)| super::context_percent(used, window));
        StatuslineInput {
            session_id: status.session_id.clone(),
            cwd: dir.clone(),
            model: StatuslineModel {
                id: status.model.clone(),
                display_name: status.model.clone(),
            },
            workspace: StatuslineWorkspace {
                current_dir: dir.clone(),
                project_dir: dir,
            },
            cost: StatuslineCost {
                total_cost_usd: status.cost_usd.unwrap_or(0.0),
                total_lines_added: self.figures.lines_added,
                total_lines_removed: self.figures.lines_removed,
                ..StatuslineCost::default()
            },
            context_window: StatuslineContext {
                total_input_tokens: usage.input_tokens,
                total_output_tokens: usage.output_tokens,
                context_window_size: context_window,
                used_percentage,
                remaining_percentage: used_percentage.map(|p| 100u64.saturating_sub(p)),
            },
            exceeds_200k_tokens: context_tokens.is_some_and(|t| t > 200_000),
            pablo: PabloStatus {
                provider: status.provider.clone(),
                mode: status.mode,
                context_tokens,
                context_window,
                turns: self.turns.count,
                turn_running: self.turns.running,
                last_turn_model_calls: self.turns.last_model_calls,
                spend_cap_usd: status.spend_cap,
                spent_usd: self.spend().map(|(spent, _)| spent),
                background_sessions: self.background.running() as u64,
            },
            ..StatuslineInput::default()
        }
    }

    /// The first line the status line command printed: shown from now on (an empty one gives
    /// the built-in facts back).
    pub(crate) fn set_custom_status(&mut self, line: String) {
        self.status.custom = (!line.trim().is_empty()).then_some(line);
    }

    /// The status line command's line, when it printed one.
    pub(crate) fn custom_status(&self) -> Option<&str> {
        self.status.custom.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use pablo_protocol::{Event, FileChangePreview, Preview, StopReason, ToolOutcome, Usage};

    #[test]
    fn the_input_follows_the_session_its_turns_and_the_lines_its_changes_landed() {
        let mut s = AppState::new(Instant::now());
        s.apply(Event::SessionStarted {
            session_id: "s1".into(),
            provider: "openai".into(),
            model: "gpt-test".into(),
            workspace: "/w".into(),
        });
        s.apply(Event::UserMessage { text: "go".into() });
        s.apply(Event::ToolCallBegin {
            call_id: "c1".into(),
            tool: "fs.write".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
        });
        s.apply(Event::ToolCallRunning {
            call_id: "c1".into(),
            preview: Preview::FileChange(FileChangePreview {
                path: "a.txt".into(),
                old_revision: None,
                new_revision: "r".into(),
                new_text: "a\nb\n".into(),
                diff: String::new(),
                added: 2,
                removed: 1,
                hunks: Vec::new(),
            }),
        });
        assert!(s.statusline_input().pablo.turn_running);
        s.apply(Event::ToolCallEnd {
            call_id: "c1".into(),
            tool: "fs.write".into(),
            result: ToolOutcome::ok(serde_json::json!({})),
        });
        s.apply(Event::ContextUsage {
            used_tokens: 250_000,
            window_tokens: 1_000_000,
            cost_usd: Some(0.5),
        });
        s.apply(Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls: Some(2),
        });
        let input = s.statusline_input();
        assert_eq!(input.session_id, "s1");
        assert_eq!(input.model.id, "gpt-test");
        assert_eq!(input.workspace.current_dir, "/w");
        assert_eq!(
            (input.cost.total_lines_added, input.cost.total_lines_removed),
            (2, 1)
        );
        assert_eq!(input.cost.total_cost_usd, 0.5);
        assert_eq!(input.context_window.used_percentage, Some(25));
        assert_eq!(input.context_window.remaining_percentage, Some(75));
        assert!(input.exceeds_200k_tokens);
        assert_eq!(input.pablo.turns, 1);
        assert!(!input.pablo.turn_running);
        assert_eq!(input.pablo.last_turn_model_calls, Some(2));
    }

    #[test]
    fn an_empty_line_gives_the_built_in_facts_back() {
        let mut s = AppState::new(Instant::now());
        s.set_custom_status("\x1b[32mmine\x1b[0m".into());
        assert_eq!(s.custom_status(), Some("\x1b[32mmine\x1b[0m"));
        s.set_custom_status("  ".into());
        assert_eq!(s.custom_status(), None);
    }
}
