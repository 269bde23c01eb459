//! The agent's side of hooks (docs/hooks.md): where in a turn each event fires, the input each
//! hook reads, and what its answer does — a block of a tool call becomes the model's error, a
//! rewrite goes back through validation, preview and policy, context reaches the model, and
//! every run is an [`Event::Hook`] (journaled, shown, printed).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::outlet::Outlet;
use super::workplace::Workplace;
use pablo_core::{ErrorCode, ToolFailure};
use pablo_hooks::{
    EventInput, Hook, HookAnswer, HookDecision, HookEvent, HookInput, Hooks, answer,
};
use pablo_protocol::{Decision, Event, Preview, ToolCall, ToolOutcome, Verdict};

/// How many times `stop` hooks may send the model back to work in one turn.
pub(crate) const MAX_STOP_CONTINUATIONS: u32 = 3;

/// One hook's run, read.
pub(crate) struct Ran {
    pub(crate) name: String,
    pub(crate) answer: HookAnswer,
    pub(crate) duration: Duration,
}

/// What the `pre_tool_use` hooks said about a call that may go ahead.
#[derive(Default)]
pub(crate) struct Gate {
    /// New arguments (the last hook's rewrite wins), and who wrote them.
    pub(crate) rewrite: Option<(String, Value)>,
    /// A hook said ask: policy's allow becomes a question to the person.
    pub(crate) ask: Option<String>,
    /// A hook said allow and none said ask or deny: policy's ask needs no question.
    pub(crate) allow: Option<String>,
}

impl Gate {
    /// Applies the hooks' allow or ask to policy's verdict; policy's deny always stands.
    pub(crate) fn adjust(&self, mut verdict: Verdict) -> Verdict {
        match verdict.decision {
            Decision::Deny => {}
            Decision::Allow => {
                if let Some(name) = &self.ask {
                    verdict.decision = Decision::Ask;
                    verdict
                        .reasons
                        .insert(0, format!("hook {name} asks for your approval"));
                }
            }
            Decision::Ask => {
                if let (Some(name), None) = (&self.allow, &self.ask) {
                    verdict.decision = Decision::Allow;
                    verdict.reasons.insert(0, format!("allowed by hook {name}"));
                }
            }
        }
        verdict
    }
}

/// What `user_prompt_submit` hooks said: stop the prompt, or the context to send with it.
pub(crate) enum PromptGate {
    Blocked {
        hook: String,
        reason: String,
    },
    Go {
        context: Vec<String>,
        runs: Vec<Ran>,
    },
}

/// Runs the person's hooks for one conversation: its id and where it works go into each hook's
/// input, and each run is said through its outlet. The hooks of an isolated subagent run in its
/// worktree.
#[derive(Clone, Copy)]
pub(crate) struct HookRunner<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) outlet: &'a Outlet,
    pub(crate) place: &'a Workplace,
}

impl<'a> HookRunner<'a> {
    pub(crate) fn new(session_id: &'a str, outlet: &'a Outlet, place: &'a Workplace) -> Self {
        Self {
            session_id,
            outlet,
            place,
        }
    }

    fn hooks(&self) -> &'a Arc<Hooks> {
        self.place.hooks()
    }

    /// The input every hook reads, with `fields` of its event.
    fn hook_input<'f>(&self, fields: EventInput<'f>) -> HookInput<'f>
    where
        'a: 'f,
    {
        HookInput::new(self.session_id, self.hooks().cwd(), fields)
    }

    /// Runs the hooks of `event` that match, in order; a guard's block stops the rest.
    async fn run_hooks(
        &self,
        event: HookEvent,
        hooks: Vec<Hook>,
        input: &HookInput<'_>,
    ) -> Vec<Ran> {
        let mut out = Vec::new();
        for hook in hooks {
            let run = self.hooks().run(&hook, input).await;
            let answer = answer::read(event, &hook, &run);
            let stop = event.guards() && answer.decision.blocks();
            out.push(Ran {
                name: hook.name.clone(),
                answer,
                duration: run.duration,
            });
            if stop {
                break;
            }
        }
        out
    }

    /// The journal's record of one run; a hook's note for the person is a warning too.
    pub(crate) fn emit_hook(
        &self,
        event: HookEvent,
        ran: &Ran,
        call_id: Option<&str>,
        path: Option<&str>,
        context: Option<String>,
    ) {
        let a = &ran.answer;
        let decision = if a.updated_input.is_some() && !a.decision.blocks() {
            "rewrite"
        } else {
            a.decision.label()
        };
        self.outlet.emit(Event::Hook {
            event: event.as_str().into(),
            hook: ran.name.clone(),
            decision: decision.into(),
            call_id: call_id.map(str::to_string),
            path: path.map(str::to_string),
            message: a.reason.clone(),
            context,
            duration_ms: ran.duration.as_millis() as u64,
        });
        if let Some(m) = &a.message {
            self.outlet.emit(Event::Warning {
                message: format!("hook {}: {m}", ran.name),
            });
        }
    }

    /// `pre_tool_use`, after the preview and before policy: `Err` when a hook blocks (its
    /// reason is the model's), else what the hooks want of the decision.
    pub(crate) async fn pre_tool(
        &self,
        tool: &dyn pablo_tools::Tool,
        call: &ToolCall,
        args: &Value,
        preview: &Preview,
        parses: &pablo_policy::LineParses,
    ) -> Result<Gate, ToolFailure> {
        let hooks = self.hooks();
        if !hooks.any(HookEvent::PreToolUse) {
            return Ok(Gate::default());
        }
        let matching = hooks.pre_tool_matching(tool.name(), || {
            simple_commands(self.place.policy(), preview, parses)
        });
        if matching.is_empty() {
            return Ok(Gate::default());
        }
        let input = self.hook_input(EventInput::PreToolUse {
            tool_name: tool.name(),
            tool_provider_name: tool.provider_name(),
            tool_use_id: &call.id,
            tool_input: args,
            preview,
        });
        let runs = self
            .run_hooks(HookEvent::PreToolUse, matching, &input)
            .await;
        let mut gate = Gate::default();
        for ran in &runs {
            self.emit_hook(HookEvent::PreToolUse, ran, Some(&call.id), None, None);
            let a = &ran.answer;
            if a.decision.blocks() {
                let reason = a.reason.clone().unwrap_or_default();
                return Err(ToolFailure::new(
                    ErrorCode::HookBlocked,
                    format!("{} was blocked by hook {}: {reason}", tool.name(), ran.name),
                )
                .with_data(json!({"hook": ran.name, "decision": a.decision.label()})));
            }
            if let Some(new) = &a.updated_input {
                gate.rewrite = Some((ran.name.clone(), new.clone()));
            }
            // As Claude Code combines its hooks: deny over ask over allow over no opinion,
            // whatever the order, so a hook that only watches (exit 0, nothing said) never
            // takes away another's allow.
            match a.decision {
                HookDecision::Ask => {
                    gate.ask.get_or_insert_with(|| ran.name.clone());
                }
                HookDecision::Allow => {
                    gate.allow.get_or_insert_with(|| ran.name.clone());
                }
                _ => {}
            }
        }
        Ok(gate)
    }

    /// `post_tool_use`, once the tool ran: a hook's note (`additionalContext`, a `block`
    /// reason, exit 2's stderr) is added to the result the model reads.
    /// `arguments` gives the call's arguments, as the model wrote them (`null` when they are
    /// not JSON); they are parsed only when a hook will read them.
    pub(crate) async fn post_tool(
        &self,
        tool: &str,
        call: &ToolCall,
        arguments: impl FnOnce() -> Value,
        outcome: ToolOutcome,
    ) -> ToolOutcome {
        let hooks = self.hooks();
        if !hooks.any(HookEvent::PostToolUse) {
            return outcome;
        }
        let matching: Vec<Hook> = hooks
            .matching(HookEvent::PostToolUse, Some(tool), None)
            .cloned()
            .collect();
        if matching.is_empty() {
            return outcome;
        }
        let provider = pablo_core::ToolName::from_native(tool)
            .map(|n| n.provider().to_string())
            .unwrap_or_else(|| tool.to_string());
        let arguments = arguments();
        let input = self.hook_input(EventInput::PostToolUse {
            tool_name: tool,
            tool_provider_name: &provider,
            tool_use_id: &call.id,
            tool_input: &arguments,
            tool_response: &outcome,
        });
        let runs = self
            .run_hooks(HookEvent::PostToolUse, matching, &input)
            .await;
        let mut notes = Vec::new();
        for ran in &runs {
            let a = &ran.answer;
            let note = match (&a.decision, &a.context, &a.reason) {
                (HookDecision::Block, _, Some(r)) => Some(r.clone()),
                (_, Some(c), _) => Some(c.clone()),
                _ => None,
            };
            self.emit_hook(
                HookEvent::PostToolUse,
                ran,
                Some(&call.id),
                None,
                note.clone(),
            );
            if let Some(n) = note {
                notes.push(json!({"hook": ran.name, "note": n}));
            }
        }
        with_notes(outcome, notes)
    }

    /// `user_prompt_submit`, before anything is sent.
    pub(crate) async fn prompt(&self, prompt: &str) -> PromptGate {
        let hooks = self.hooks();
        if !hooks.any(HookEvent::UserPromptSubmit) {
            return PromptGate::Go {
                context: vec![],
                runs: vec![],
            };
        }
        let matching: Vec<Hook> = hooks.of(HookEvent::UserPromptSubmit).to_vec();
        let input = self.hook_input(EventInput::UserPromptSubmit { prompt });
        let runs = self
            .run_hooks(HookEvent::UserPromptSubmit, matching, &input)
            .await;
        if let Some(ran) = runs.iter().find(|r| r.answer.decision.blocks()) {
            self.emit_hook(HookEvent::UserPromptSubmit, ran, None, None, None);
            return PromptGate::Blocked {
                hook: ran.name.clone(),
                reason: ran.answer.reason.clone().unwrap_or_default(),
            };
        }
        let context = runs
            .iter()
            .filter_map(|r| r.answer.context.clone())
            .collect();
        PromptGate::Go { context, runs }
    }

    /// `file_changed`, once per path the turn changed (whoever changed it, and how), before the
    /// turn ends; returns the hooks' notes, which reach the model with the next prompt.
    pub(crate) async fn file_changed(
        &self,
        changed: BTreeMap<String, &'static str>,
    ) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.hooks().any(HookEvent::FileChanged) {
            return notes;
        }
        for (path, kind) in changed {
            let matching: Vec<Hook> = self
                .place
                .session_hooks()
                .matching(HookEvent::FileChanged, Some(&path), None)
                .cloned()
                .collect();
            if matching.is_empty() {
                continue;
            }
            if let Some(why) = outside_reach(self.hooks().cwd(), &path) {
                self.outlet.emit(Event::Warning {
                    message: format!("file_changed hooks were not run for {path}: {why}"),
                });
                continue;
            }
            let input = self.hook_input(EventInput::FileChanged {
                path: &path,
                change: kind,
                file_path: self.hooks().cwd().join(&path),
            });
            let runs = self
                .run_hooks(HookEvent::FileChanged, matching, &input)
                .await;
            let rewrote = self.hooks_rewrote(&path).await;
            let last = runs.len().saturating_sub(1);
            for (i, ran) in runs.iter().enumerate() {
                let a = &ran.answer;
                let mut note = match (&a.decision, &a.context, &a.reason) {
                    (HookDecision::Block, _, Some(r)) => Some(r.clone()),
                    (_, Some(c), _) => Some(c.clone()),
                    _ => None,
                }
                .map(|n| format!("[hook {} on {path}] {n}", ran.name));
                // The rewrite is the model's to know (its next edit starts from the file as it
                // is now); said once, with the last hook's run, so the journal keeps it.
                if rewrote && i == last {
                    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
                    let said = format!(
                        "[hook {} on {path}] the file_changed hook{} rewrote {path} after this \
                         turn's change: it no longer holds exactly what was written; read it \
                         again before editing it",
                        names.join(", "),
                        if names.len() == 1 { "" } else { "s" },
                    );
                    note = Some(match note {
                        Some(n) => format!("{n}\n{said}"),
                        None => said,
                    });
                }
                self.emit_hook(HookEvent::FileChanged, ran, None, Some(&path), note.clone());
                notes.extend(note);
            }
        }
        notes
    }

    /// Whether the hooks that just ran on `path` changed it: what they changed joins the turn's
    /// checkpoint (journaled as the hooks' own `files_changed`), so undo restores it with the
    /// change it followed.
    async fn hooks_rewrote(&self, path: &str) -> bool {
        let Some(c) = self.place.checkpoints() else {
            return false;
        };
        let paths = vec![path.to_string()];
        let Ok((turn, changes)) = tokio::task::spawn_blocking(move || c.after_hooks(&paths)).await
        else {
            return false;
        };
        if changes.is_empty() {
            return false;
        }
        self.outlet.emit(Event::FilesChanged {
            turn,
            call_id: format!("hook:file_changed:{path}"),
            tool: "file_changed hooks".into(),
            changes,
        });
        true
    }

    /// `stop`, when the model has finished: the reason of a hook that blocks is sent to the
    /// model as the next message and the turn goes on (`continuations` times at most).
    pub(crate) async fn stop(&self, continuations: u32) -> Option<String> {
        if !self.hooks().any(HookEvent::Stop) || continuations >= MAX_STOP_CONTINUATIONS {
            return None;
        }
        let matching: Vec<Hook> = self.hooks().of(HookEvent::Stop).to_vec();
        let input = self.hook_input(EventInput::Stop {
            stop_hook_active: continuations > 0,
            continuations,
        });
        let runs = self.run_hooks(HookEvent::Stop, matching, &input).await;
        let mut reasons = Vec::new();
        for ran in &runs {
            let go_on = (ran.answer.decision == HookDecision::Block)
                .then(|| ran.answer.reason.clone())
                .flatten()
                .map(|r| format!("[hook {}] {r}", ran.name));
            self.emit_hook(HookEvent::Stop, ran, None, None, go_on.clone());
            reasons.extend(go_on);
        }
        (!reasons.is_empty()).then(|| reasons.join("\n"))
    }

    /// `session_start` (`startup`, or `resume` for a conversation with a history); returns the
    /// hooks' context, which goes to the model with the first prompt.
    pub(crate) async fn session_start(&self, resumed: bool) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.hooks().any(HookEvent::SessionStart) {
            return notes;
        }
        let source = if resumed { "resume" } else { "startup" };
        let matching: Vec<Hook> = self
            .place
            .session_hooks()
            .matching(HookEvent::SessionStart, Some(source), None)
            .cloned()
            .collect();
        let input = self.hook_input(EventInput::SessionStart { source });
        for ran in self
            .run_hooks(HookEvent::SessionStart, matching, &input)
            .await
        {
            let note = ran
                .answer
                .context
                .clone()
                .map(|c| format!("[hook {}] {c}", ran.name));
            self.emit_hook(HookEvent::SessionStart, &ran, None, None, note.clone());
            notes.extend(note);
        }
        notes
    }

    /// `pre_compact` (`manual` or `auto`): told, cannot stop it.
    pub(crate) async fn pre_compact(&self, trigger: &str) {
        if !self.hooks().any(HookEvent::PreCompact) {
            return;
        }
        let matching: Vec<Hook> = self
            .place
            .session_hooks()
            .matching(HookEvent::PreCompact, Some(trigger), None)
            .cloned()
            .collect();
        let input = self.hook_input(EventInput::PreCompact { trigger });
        for ran in self
            .run_hooks(HookEvent::PreCompact, matching, &input)
            .await
        {
            self.emit_hook(HookEvent::PreCompact, &ran, None, None, None);
        }
    }

    /// `notification` (`approval` waits, `turn_ended`): told, in the background, so the turn
    /// never waits for it.
    pub(crate) fn notify(&self, kind: &str, message: String) {
        let hooks = self.hooks().clone();
        if !hooks.any(HookEvent::Notification) {
            return;
        }
        let matching: Vec<Hook> = hooks
            .matching(HookEvent::Notification, Some(kind), None)
            .cloned()
            .collect();
        if matching.is_empty() {
            return;
        }
        // The hooks run in a task of their own, which cannot borrow: the input goes as JSON.
        let input = serde_json::to_value(self.hook_input(EventInput::Notification {
            notification_type: kind,
            message: &message,
        }))
        .unwrap_or_default();
        let shared = self.outlet.shared().clone();
        tokio::spawn(async move {
            for hook in matching {
                let run = hooks.run(&hook, &input).await;
                let a = answer::read(HookEvent::Notification, &hook, &run);
                shared.emit(Event::Hook {
                    event: HookEvent::Notification.as_str().into(),
                    hook: hook.name.clone(),
                    decision: a.decision.label().into(),
                    call_id: None,
                    path: None,
                    message: a.reason,
                    context: None,
                    duration_ms: run.duration.as_millis() as u64,
                });
            }
        });
    }
}

/// A shell command's simple commands as hooks' `command_matcher` sees them: each as written and
/// each command a wrapper runs (`env`, `timeout`, `sh -c`, …), looked through as policy looks
/// through them, so a guard on `^curl` also meets `env curl` and `sh -c 'curl …'`. Each is its
/// program's file name, then its arguments. A command the parser refuses is matched as written
/// (policy refuses to run it anyway).
fn simple_commands(
    policy: &pablo_policy::PolicyEngine,
    preview: &Preview,
    parses: &pablo_policy::LineParses,
) -> Option<Vec<String>> {
    let Preview::Command(cp) = preview else {
        return None;
    };
    Some(
        policy
            .effective_commands(&cp.command, &cp.cwd, parses)
            .into_iter()
            .map(|mut words| {
                // A refused line comes as one word with its spaces: it stays as written.
                if let Some(first) = words.first_mut().filter(|w| !w.contains(' '))
                    && let Some(base) = first.rsplit('/').next()
                {
                    *first = base.to_string();
                }
                words.join(" ")
            })
            .collect(),
    )
}

/// Why a changed `path` (workspace-relative) must not be handed to a `file_changed` hook, if it
/// must not: it is a symbolic link (one the model's command may have made, pointing anywhere),
/// or a directory on the way to it resolves outside the workspace. A hook runs outside the
/// sandbox, and a formatter handed `src/x.rs -> ~/.bashrc` would rewrite the person's file.
fn outside_reach(workspace: &std::path::Path, path: &str) -> Option<String> {
    let full = workspace.join(path);
    if let Ok(meta) = std::fs::symlink_metadata(&full)
        && meta.file_type().is_symlink()
    {
        return Some("it is a symbolic link, which could lead outside the workspace".into());
    }
    let root = std::fs::canonicalize(workspace).ok()?;
    // The nearest directory on the way that exists (a deleted file's may be gone too).
    let mut dir = full.parent();
    while let Some(d) = dir {
        if let Ok(real) = std::fs::canonicalize(d) {
            if !real.starts_with(&root) {
                return Some(format!(
                    "a directory on its way resolves outside the workspace ({})",
                    real.display()
                ));
            }
            return None;
        }
        dir = d.parent();
    }
    None
}

/// The result with the hooks' notes under `hook_notes` (of `data`, or of the error's `data`).
pub(crate) fn with_notes(outcome: ToolOutcome, notes: Vec<Value>) -> ToolOutcome {
    if notes.is_empty() {
        return outcome;
    }
    match outcome {
        ToolOutcome::Ok { ok, data } => {
            let data = match data {
                Value::Object(mut m) => {
                    m.insert("hook_notes".into(), Value::Array(notes));
                    Value::Object(m)
                }
                other => json!({"result": other, "hook_notes": notes}),
            };
            ToolOutcome::Ok { ok, data }
        }
        ToolOutcome::Err { ok, mut error } => {
            let data = match error.data.take() {
                Some(Value::Object(mut m)) => {
                    m.insert("hook_notes".into(), Value::Array(notes));
                    Value::Object(m)
                }
                Some(other) => json!({"data": other, "hook_notes": notes}),
                None => json!({"hook_notes": notes}),
            };
            error.data = Some(data);
            ToolOutcome::Err { ok, error }
        }
    }
}
