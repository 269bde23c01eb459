//! Subagents (`agent_task`) and Agent Skills (`load_skill`) end to end: the real binary with no
//! flag beyond the provider's, against a scripted OpenAI-compatible server that answers each
//! request by what it carries (a subagent's system prompt says so), so parallel subagents get
//! their answers in whatever order they ask.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{RecordedRequest, ScriptedResponse, ScriptedServer, openai};
use crate::support::run::run_json;

const SUBAGENT_MARK: &str = "# You are a subagent";

fn is_subagent(r: &RecordedRequest) -> bool {
    system_text(r).contains(SUBAGENT_MARK)
}

fn system_text(r: &RecordedRequest) -> String {
    r.json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Whether the request already carries a tool result (the model's next step).
fn has_tool_result(r: &RecordedRequest) -> bool {
    r.json()["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
}

fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.json()["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn task_call(id: &str, args: &Value) -> Vec<String> {
    openai::tool_call_answer(id, "agent_task", &[&args.to_string()])
}

async fn run(sandbox: &Sandbox, server: &ScriptedServer, task: &str, extra: &[&str]) -> Vec<Value> {
    run_json(sandbox, server, task, extra)
        .await
        .succeeded()
        .lines
}

fn of_type<'a>(lines: &'a [Value], t: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == t).collect()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn a_subagent_starts_fresh_with_no_write_tool_and_its_answer_is_the_parents_tool_result() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if is_subagent(r) {
            ScriptedResponse::sse(openai::text_answer("The answer is in src/lib.rs line 3."))
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("Done."))
        } else {
            ScriptedResponse::sse(task_call(
                "call_task",
                &json!({"description": "find the answer", "prompt": "Where is the answer?"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    let lines = run(
        &sandbox,
        &server,
        "PARENT-ONLY-WORDS: delegate the search",
        &["--allow-write"],
    )
    .await;
    let requests = server.requests();
    let parent_first = &requests[0];
    assert!(tool_names(parent_first).contains(&"fs_write".to_string()));
    assert!(tool_names(parent_first).contains(&"agent_task".to_string()));
    let sub = requests
        .iter()
        .find(|r| is_subagent(r))
        .expect("a subagent request");
    let messages = sub.json()["messages"].as_array().unwrap().clone();
    // Its system prompt, then its task: nothing of the parent's conversation.
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert_eq!(messages[1]["role"], "user");
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("Where is the answer?")
    );
    assert!(!sub.json().to_string().contains("PARENT-ONLY-WORDS"));
    let tools = tool_names(sub);
    for write_tool in ["fs_write", "fs_edit", "agent_task", "shell_session"] {
        assert!(!tools.contains(&write_tool.to_string()), "{tools:?}");
    }
    assert!(tools.contains(&"fs_read".to_string()), "{tools:?}");
    // The answer is the call's result, as printed and as the parent model read it.
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        result["data"]["answer"],
        "The answer is in src/lib.rs line 3."
    );
    assert_eq!(result["data"]["agent"], "general");
    let parent_next = requests
        .iter()
        .find(|r| !is_subagent(r) && has_tool_result(r))
        .expect("the parent's second request");
    let tool_message = parent_next.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        &serde_json::from_str::<Value>(&tool_message).unwrap(),
        result
    );
    // Headless shows it: started, its message, finished.
    let started = of_type(&lines, "subagent_started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["call_id"], "call_task");
    assert_eq!(started[0]["description"], "find the answer");
    let inner = of_type(&lines, "subagent");
    assert!(
        inner.iter().any(|l| l["event"]["type"] == "message"
            && l["event"]["text"] == "The answer is in src/lib.rs line 3."),
        "{inner:#?}"
    );
    let finished = of_type(&lines, "subagent_finished");
    assert_eq!(finished[0]["stop_reason"], "end_turn");
    // The session's usage counts the subagent's tokens (three model calls of 10 input each).
    let done = of_type(&lines, "turn_completed")[0];
    assert_eq!(done["usage"]["input_tokens"], 30, "{done}");
}

#[tokio::test]
async fn two_agent_tasks_in_one_response_run_at_the_same_time() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if is_subagent(r) {
            // Slow enough that one subagent finishing first would show.
            let events = openai::text_answer("found");
            ScriptedResponse::sse(events).pace(Duration::from_millis(150))
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("Both done."))
        } else {
            let a = json!({"description": "search one", "prompt": "find A"}).to_string();
            let b = json!({"description": "search two", "prompt": "find B"}).to_string();
            ScriptedResponse::sse(
                openai::Stream::new()
                    .tool_call(0, "call_a", "agent_task", &[&a])
                    .tool_call(1, "call_b", "agent_task", &[&b])
                    .finish("tool_calls")
                    .usage(10, 5)
                    .done(),
            )
        }
    });
    let sandbox = Sandbox::new();
    let lines = run(&sandbox, &server, "two searches", &[]).await;
    let order: Vec<String> = lines
        .iter()
        .filter_map(|l| match l["type"].as_str() {
            Some(t @ ("subagent_started" | "subagent_finished")) => {
                Some(format!("{t} {}", l["call_id"].as_str().unwrap_or("")))
            }
            _ => None,
        })
        .collect();
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(
        order[0].starts_with("subagent_started") && order[1].starts_with("subagent_started"),
        "both started before either finished: {order:?}"
    );
    let results = of_type(&lines, "tool_result");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["call_id"], "call_a");
    assert_eq!(results[1]["call_id"], "call_b");
    assert!(
        results
            .iter()
            .all(|r| r["result"]["data"]["answer"] == "found")
    );
}

#[tokio::test]
async fn a_custom_agent_file_with_tools_fs_read_offers_exactly_that() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if is_subagent(r) {
            ScriptedResponse::sse(openai::text_answer("read it"))
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("ok"))
        } else {
            ScriptedResponse::sse(task_call(
                "call_r",
                &json!({"description": "read", "prompt": "read the readme", "agent": "reader"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    write(
        &sandbox.config_dir().join("agents/reader.md"),
        "---\nname: reader\ndescription: Reads one file and sums it up\ntools: [fs.read]\n---\n\
         READER-INSTRUCTIONS: be brief.\n",
    );
    let lines = run(&sandbox, &server, "use the reader", &["--allow-write"]).await;
    let requests = server.requests();
    // The model is offered the agent with its description.
    let offered = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "agent_task")
        .unwrap()["function"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        offered.contains("reader: Reads one file and sums it up"),
        "{offered}"
    );
    let sub = requests
        .iter()
        .find(|r| is_subagent(r))
        .expect("a subagent request");
    assert_eq!(tool_names(sub), ["fs_read"]);
    assert!(system_text(sub).contains("READER-INSTRUCTIONS"));
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["data"]["agent"], "reader", "{result}");
}

#[tokio::test]
async fn an_agent_file_that_names_a_model_has_its_requests_sent_to_that_model() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if is_subagent(r) {
            ScriptedResponse::sse(openai::text_answer("small answer"))
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("ok"))
        } else {
            ScriptedResponse::sse(task_call(
                "call_m",
                &json!({"description": "ask", "prompt": "say hi", "agent": "small"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    write(
        &sandbox.config_dir().join("agents/small.md"),
        "---\nname: small\ndescription: Answers on a smaller model\nmodel: gpt-4o-mini\n---\n\
         Be brief.\n",
    );
    let lines = run(&sandbox, &server, "ask the small one", &[]).await;
    let requests = server.requests();
    let sub = requests
        .iter()
        .find(|r| is_subagent(r))
        .expect("a subagent request");
    // The subagent runs on its own model (its window and prices with it); the parent on the
    // session's.
    assert_eq!(sub.json()["model"], "gpt-4o-mini");
    assert_ne!(requests[0].json()["model"], "gpt-4o-mini");
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["data"]["answer"], "small answer", "{result}");
}

#[tokio::test]
async fn an_unknown_agent_is_refused_with_the_defined_ones() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("ok"))
        } else {
            ScriptedResponse::sse(task_call(
                "call_x",
                &json!({"description": "x", "prompt": "x", "agent": "nobody"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    let lines = run(&sandbox, &server, "go", &[]).await;
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["error"]["code"], "unknown_agent", "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("general")
    );
    assert!(!server.requests().iter().any(is_subagent));
}

#[tokio::test]
async fn a_read_only_subagent_runs_known_safe_reads_and_refuses_other_commands() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if is_subagent(r) {
            if has_tool_result(r) {
                ScriptedResponse::sse(openai::text_answer("checked"))
            } else {
                let ls = json!({"command": "ls"}).to_string();
                let touch = json!({"command": "touch made-by-subagent"}).to_string();
                ScriptedResponse::sse(
                    openai::Stream::new()
                        .tool_call(0, "s1", "shell_run", &[&ls])
                        .tool_call(1, "s2", "shell_run", &[&touch])
                        .finish("tool_calls")
                        .usage(10, 5)
                        .done(),
                )
            }
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("ok"))
        } else {
            ScriptedResponse::sse(task_call(
                "call_t",
                &json!({"description": "look", "prompt": "look around"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("present.txt"), "x").unwrap();
    let lines = run(&sandbox, &server, "go", &["--auto-approve"]).await;
    let inner_results: Vec<&Value> = of_type(&lines, "subagent")
        .into_iter()
        .filter(|l| l["event"]["type"] == "tool_result")
        .map(|l| &l["event"]["result"])
        .collect();
    assert_eq!(inner_results.len(), 2, "{lines:#?}");
    assert_eq!(inner_results[0]["ok"], true, "{}", inner_results[0]);
    assert_eq!(inner_results[1]["error"]["code"], "not_read_only");
    assert!(!sandbox.workspace().join("made-by-subagent").exists());
}

#[tokio::test]
async fn an_agent_given_fs_edit_is_asked_like_the_main_agent_and_undo_takes_its_edit_back() {
    let server = ScriptedServer::start().await;
    let original = "fn main() {}\n";
    let rev = crate::support::revision_of(original.as_bytes());
    server.respond_with(move |r, _| {
        if is_subagent(r) {
            if has_tool_result(r) {
                ScriptedResponse::sse(openai::text_answer("edited"))
            } else {
                let edit = json!({"path": "main.rs", "expected_revision": rev,
                    "old_text": "fn main() {}", "new_text": "fn main() { run() }"});
                ScriptedResponse::sse(openai::tool_call_answer(
                    "e1",
                    "fs_edit",
                    &[&edit.to_string()],
                ))
            }
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("ok"))
        } else {
            ScriptedResponse::sse(task_call(
                "call_e",
                &json!({"description": "edit", "prompt": "edit main", "agent": "editor"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    write(
        &sandbox.config_dir().join("agents/editor.md"),
        "---\nname: editor\ndescription: Edits files\ntools: Read, Edit\n---\nEdit.\n",
    );
    let file = sandbox.workspace().join("main.rs");
    std::fs::write(&file, original).unwrap();
    // Edits ask (as the person set it); nobody can answer one in headless mode without
    // --auto-approve, so the subagent's edit is asked, and refused, like the main agent's.
    sandbox.user_config("[options.tools]\n\"fs.edit\" = \"ask\"\n");
    let lines = run(&sandbox, &server, "edit it", &["--allow-write"]).await;
    let inner: Vec<&Value> = of_type(&lines, "subagent")
        .into_iter()
        .filter(|l| l["event"]["type"] == "tool_result")
        .collect();
    assert_eq!(
        inner[0]["event"]["result"]["error"]["code"], "approval_required",
        "{inner:#?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    // Approved, it lands; `pablo undo` takes the subagent's edit back with the parent's turn.
    let lines = run(
        &sandbox,
        &server,
        "edit it",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fn main() { run() }\n",
        "{lines:#?}"
    );
    let out = sandbox
        .command()
        .args(["undo", "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

#[tokio::test]
async fn a_skills_description_is_in_the_first_request_and_its_body_comes_with_load_skill() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("tidied"))
        } else {
            ScriptedResponse::sse(openai::tool_call_answer(
                "call_s",
                "load_skill",
                &[r#"{"name": "tidy"}"#],
            ))
        }
    });
    let sandbox = Sandbox::new();
    let home = sandbox.root().join("home");
    write(
        &home.join(".agents/skills/tidy/SKILL.md"),
        "---\nname: tidy\ndescription: TIDY-DESCRIPTION for tidying code\n---\nTIDY-BODY steps.\n",
    );
    write(
        &home.join(".agents/skills/tidy/scripts/run.sh"),
        "echo never-run-by-pablo\n",
    );
    // A project's skill, in a folder nobody trusted.
    write(
        &sandbox.workspace().join(".claude/skills/evil/SKILL.md"),
        "---\nname: evil\ndescription: EVIL-DESCRIPTION\n---\nEVIL-BODY\n",
    );
    let lines = run(&sandbox, &server, "tidy up", &[]).await;
    let first = server.requests()[0].json().to_string();
    assert!(first.contains("TIDY-DESCRIPTION"));
    assert!(!first.contains("TIDY-BODY"));
    assert!(!first.contains("EVIL-DESCRIPTION"));
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["ok"], true, "{result}");
    assert!(
        result["data"]["instructions"]
            .as_str()
            .unwrap()
            .contains("TIDY-BODY steps.")
    );
    assert_eq!(result["data"]["files"], json!(["scripts/run.sh"]));
}

/// The subagents' own tool results (wrapped in `subagent` lines).
fn inner_results(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "subagent" && l["event"]["type"] == "tool_result")
        .map(|l| &l["event"]["result"])
        .collect()
}

/// The parent asks for two subagents in one response; each subagent asks for three listings in
/// every response and never stops on its own.
fn two_greedy_subagents(r: &RecordedRequest) -> ScriptedResponse {
    if is_subagent(r) {
        let list = json!({"path": "."}).to_string();
        ScriptedResponse::sse(
            openai::Stream::new()
                .tool_call(0, "l1", "fs_list", &[&list])
                .tool_call(1, "l2", "fs_list", &[&list])
                .tool_call(2, "l3", "fs_list", &[&list])
                .finish("tool_calls")
                .usage(10, 5)
                .done(),
        )
    } else if has_tool_result(r) {
        ScriptedResponse::sse(openai::text_answer("Stopped by the budget."))
    } else {
        let a = json!({"description": "list one", "prompt": "list everything"}).to_string();
        let b = json!({"description": "list two", "prompt": "list everything"}).to_string();
        ScriptedResponse::sse(
            openai::Stream::new()
                .tool_call(0, "call_a", "agent_task", &[&a])
                .tool_call(1, "call_b", "agent_task", &[&b])
                .finish("tool_calls")
                .usage(10, 5)
                .done(),
        )
    }
}

#[tokio::test]
async fn parallel_subagents_together_stop_at_the_sessions_tool_call_budget() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| two_greedy_subagents(r));
    let sandbox = Sandbox::new();
    let r = run_json(&sandbox, &server, "list twice", &["--max-tool-calls", "6"]).await;
    // The session's budget was spent, so the turn ends on it (exit status 1).
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let lines = r.lines;
    // Both subagents started, side by side.
    assert_eq!(of_type(&lines, "subagent_started").len(), 2, "{lines:#?}");
    // The two agent_task calls took 2 of the 6; the subagents, which each asked for more than
    // 6 on their own, ran 4 between them, and every call after that was refused.
    let inner = inner_results(&lines);
    let ran = inner.iter().filter(|r| r["ok"] == true).count();
    assert_eq!(ran, 4, "{inner:#?}");
    let refused: Vec<&&Value> = inner.iter().filter(|r| r["ok"] != true).collect();
    assert!(!refused.is_empty(), "{inner:#?}");
    for r in &refused {
        let code = r["error"]["code"].as_str().unwrap_or_default();
        assert!(
            code == "tool_call_budget_exhausted" || code == "not_run",
            "{r}"
        );
    }
    assert!(
        refused.iter().any(|r| r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the session's tool-call budget (6)")),
        "{refused:#?}"
    );
    // Each subagent's call says why it stopped: the session's budget, which ends the turn.
    let results = of_type(&lines, "tool_result");
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(
            r["result"]["error"]["code"], "tool_call_budget_exhausted",
            "{r}"
        );
    }
    let errors = of_type(&lines, "error");
    assert_eq!(errors.len(), 1, "{lines:#?}");
    assert_eq!(errors[0]["code"], "tool_call_budget_exhausted");
}

#[tokio::test]
async fn a_tool_budget_spent_inside_a_subagent_ends_the_parents_turn_with_its_code() {
    let server = ScriptedServer::start().await;
    // The subagent reads forever; the parent, asked again, would say it is done (so only the
    // budget can make the run fail).
    server.respond_with(|r, _| {
        let read = json!({"path": "notes.txt"}).to_string();
        if is_subagent(r) {
            ScriptedResponse::sse(openai::tool_call_answer("r", "fs_read", &[&read]))
        } else if has_tool_result(r) {
            ScriptedResponse::sse(openai::text_answer("Done anyway."))
        } else {
            ScriptedResponse::sse(task_call(
                "call_a",
                &json!({"description": "read", "prompt": "read notes.txt"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    write(&sandbox.workspace().join("notes.txt"), "a note\n");
    let run = run_json(
        &sandbox,
        &server,
        "read the notes",
        &["--max-tool-calls", "2"],
    )
    .await;
    assert_eq!(
        run.code,
        Some(1),
        "stderr: {}\n{:#?}",
        run.stderr,
        run.lines
    );
    // agent_task took one call, the subagent's first read the other; its second was refused.
    let inner = inner_results(&run.lines);
    assert_eq!(inner.len(), 2, "{inner:#?}");
    assert_eq!(inner[0]["ok"], true);
    assert_eq!(inner[1]["error"]["code"], "tool_call_budget_exhausted");
    let results = run.results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["error"]["code"], "tool_call_budget_exhausted");
    // The parent was not asked again: the turn ended on the budget, as for a call of its own.
    let parent_requests = server.requests().iter().filter(|r| !is_subagent(r)).count();
    assert_eq!(parent_requests, 1);
    let errors = run.of_type("error");
    assert_eq!(errors.len(), 1, "{:#?}", run.lines);
    assert_eq!(errors[0]["code"], "tool_call_budget_exhausted");
    let done = run.of_type("turn_completed");
    assert_eq!(done[0]["stop_reason"], "budget_exhausted", "{done:#?}");
}

#[tokio::test]
async fn a_subagent_still_working_at_the_turns_deadline_is_stopped_with_the_turn() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        if is_subagent(r) {
            // It never finishes its answer.
            ScriptedResponse::sse(openai::text_answer("thinking")).hang_after(1)
        } else {
            ScriptedResponse::sse(task_call(
                "call_slow",
                &json!({"description": "slow", "prompt": "take forever"}),
            ))
        }
    });
    let sandbox = Sandbox::new();
    let out = run_json(
        &sandbox,
        &server,
        "delegate",
        &["-c", "limits.run_deadline_seconds=2"],
    )
    .await;
    assert_ne!(out.code, Some(0), "{:#?}", out.lines);
    let finished = out.of_type("subagent_finished");
    assert_eq!(finished.len(), 1, "{:#?}", out.lines);
    // Stopped by the parent's deadline (2 s), not its own (600 s: the run would not have
    // ended within the test's safety net).
    assert_eq!(finished[0]["stop_reason"], "cancelled");
    let errors = out.of_type("error");
    assert!(
        errors.iter().any(|e| e["code"] == "deadline_exceeded"),
        "{:#?}",
        out.lines
    );
}

/// The agent a subagent's request is for, as its system prompt names it.
fn agent_of(r: &RecordedRequest) -> Option<&'static str> {
    let system = system_text(r);
    ["general", "echoer"]
        .into_iter()
        .find(|a| system.contains(&format!("You are the `{a}` agent")))
}

#[tokio::test]
async fn mcp_tools_reach_subagents_the_read_only_ones_by_default_and_named_ones_by_their_agent() {
    let Some(node) = crate::support::mcp::node_or_skip("mcp_tools_reach_subagents…") else {
        return;
    };
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| match agent_of(r) {
        Some("general") if !has_tool_result(r) => ScriptedResponse::sse(task_call_of(
            "m1",
            "mcp__everything__echo",
            &json!({"message": "from a subagent"}),
        )),
        Some(_) => ScriptedResponse::sse(openai::text_answer("echoed")),
        None if has_tool_result(r) => ScriptedResponse::sse(openai::text_answer("ok")),
        None => {
            let g = json!({"description": "echo", "prompt": "echo something"}).to_string();
            let e =
                json!({"description": "log", "prompt": "toggle", "agent": "echoer"}).to_string();
            ScriptedResponse::sse(
                openai::Stream::new()
                    .tool_call(0, "call_g", "agent_task", &[&g])
                    .tool_call(1, "call_e", "agent_task", &[&e])
                    .finish("tool_calls")
                    .usage(10, 5)
                    .done(),
            )
        }
    });
    let sandbox = Sandbox::new();
    sandbox.user_config(&crate::support::mcp::everything_table(
        &node,
        "everything",
        "tools.echo = \"auto\"",
    ));
    write(
        &sandbox.config_dir().join("agents/echoer.md"),
        "---\nname: echoer\ndescription: Toggles logging\n\
         tools: Read, mcp__everything__toggle-simulated-logging\n---\nToggle.\n",
    );
    let lines = run(&sandbox, &server, "delegate", &[]).await;
    let requests = server.requests();
    let first_of = |agent: &str| {
        requests
            .iter()
            .find(|r| agent_of(r) == Some(agent) && !has_tool_result(r))
            .unwrap_or_else(|| panic!("no request of the {agent} agent"))
    };
    // The read-only catalog has the tools the server says only read, and no other.
    let general = tool_names(first_of("general"));
    assert!(
        general.contains(&"mcp__everything__echo".to_string()),
        "{general:?}"
    );
    assert!(
        general.contains(&"mcp__everything__get-sum".to_string()),
        "{general:?}"
    );
    assert!(
        !general.contains(&"mcp__everything__toggle-simulated-logging".to_string()),
        "{general:?}"
    );
    // An agent that names an MCP tool gets exactly what it names.
    let mut echoer = tool_names(first_of("echoer"));
    echoer.sort();
    assert_eq!(
        echoer,
        ["fs_read", "mcp__everything__toggle-simulated-logging"]
    );
    // The subagent's MCP call ran (set to auto) and its result came back to it.
    let inner = inner_results(&lines);
    assert_eq!(inner.len(), 1, "{lines:#?}");
    assert_eq!(inner[0]["ok"], true, "{}", inner[0]);
    assert!(
        inner[0]["data"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("from a subagent"),
        "{}",
        inner[0]
    );
}

fn task_call_of(id: &str, name: &str, args: &Value) -> Vec<String> {
    openai::tool_call_answer(id, name, &[&args.to_string()])
}

/// A complete 1×1 PNG.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// The parent hands the subagent a task that names `@shot.png`.
fn look_at_the_shot(r: &RecordedRequest) -> ScriptedResponse {
    if is_subagent(r) {
        ScriptedResponse::sse(openai::text_answer("a single pixel"))
    } else if has_tool_result(r) {
        ScriptedResponse::sse(openai::text_answer("ok"))
    } else {
        ScriptedResponse::sse(task_call(
            "call_i",
            &json!({"description": "look", "prompt": "What is in @shot.png?"}),
        ))
    }
}

#[tokio::test]
async fn an_image_named_in_a_subagents_task_reaches_its_model_like_the_persons() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| look_at_the_shot(r));
    let sandbox = Sandbox::new();
    sandbox.user_config("[model]\nimages = true\n");
    std::fs::write(sandbox.workspace().join("shot.png"), PNG_1X1).unwrap();
    let lines = run(&sandbox, &server, "what does the screenshot show?", &[]).await;
    let requests = server.requests();
    let sub = requests
        .iter()
        .find(|r| is_subagent(r))
        .expect("a subagent request");
    let task = &sub.json()["messages"][1];
    assert_eq!(task["role"], "user");
    let parts = task["content"].as_array().expect("text and image parts");
    use base64::Engine as _;
    let data_url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PNG_1X1)
    );
    assert!(
        parts
            .iter()
            .any(|p| p["type"] == "image_url" && p["image_url"]["url"] == data_url.as_str()),
        "{parts:#?}"
    );
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["data"]["answer"], "a single pixel", "{result}");
}

#[tokio::test]
async fn an_image_the_model_cannot_take_fails_the_subagent_with_the_reason() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| look_at_the_shot(r));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("shot.png"), PNG_1X1).unwrap();
    let lines = run(&sandbox, &server, "what does the screenshot show?", &[]).await;
    // Nothing went to the model for the subagent; the parent reads why.
    assert!(!server.requests().iter().any(is_subagent));
    let result = &of_type(&lines, "tool_result")[0]["result"];
    assert_eq!(result["error"]["code"], "subagent_failed", "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not take images"),
        "{result}"
    );
}

/// The text of every user message in `request`, in order.
fn user_texts(request: &RecordedRequest) -> Vec<String> {
    request.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn the_note_a_skill_mention_adds_is_journaled_so_a_resumed_session_sends_it_again() {
    let server = ScriptedServer::start().await;
    server.respond_with(|_, _| ScriptedResponse::sse(openai::text_answer("noted")));
    let sandbox = Sandbox::new();
    write(
        &sandbox.root().join("home/.agents/skills/tidy/SKILL.md"),
        "---\nname: tidy\ndescription: tidies code\n---\nTIDY-BODY\n",
    );
    let first = run_json(&sandbox, &server, "please $tidy the code", &[])
        .await
        .succeeded();
    let sent = user_texts(&server.requests()[0]);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].starts_with("please $tidy the code"), "{}", sent[0]);
    assert!(sent[0].contains("tidy"), "{}", sent[0]);
    assert_ne!(sent[0], "please $tidy the code", "the mention adds a note");
    let id = first.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    run_json(&sandbox, &server, "thanks", &["--resume", &id])
        .await
        .succeeded();
    let resumed = user_texts(server.requests().last().unwrap());
    assert_eq!(resumed.len(), 2, "{resumed:#?}");
    assert_eq!(
        resumed[0], sent[0],
        "the resumed conversation has the same first message"
    );
    assert_eq!(resumed[1], "thanks");
}
