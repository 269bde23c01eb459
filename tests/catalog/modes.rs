//! The catalog's tools in plan mode, through `pablo run` with no flags (`[tui] mode = "plan"` in
//! the user's config): plan mode refuses file changes and whatever the policy would ask about, and
//! artifact.write and memory.propose are neither — they write only under the session's data dir,
//! and a proposal stays inactive until the person accepts it — so a plan can be saved as an
//! artifact and a note proposed, while a fetch (which asks by default) is refused.

use serde_json::json;

use super::*;
use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

#[tokio::test]
async fn plan_mode_saves_an_artifact_and_a_proposal_and_refuses_a_fetch_that_would_ask() {
    let model = ScriptedServer::start().await;
    let artifact =
        json!({"name": "plan.md", "content": "# Plan\n1. read\n2. change\n"}).to_string();
    let proposal = json!({"text": "The person wants plans saved as artifacts."}).to_string();
    let fetch = json!({"url": "https://docs.rs/csv"}).to_string();
    let csv = json!({"path": "prices.csv"}).to_string();
    model.push(ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, "call_art", "write_artifact", &[&artifact])
            .tool_call(1, "call_mem", "propose_memory", &[&proposal])
            .tool_call(2, "call_fetch", "fetch_url", &[&fetch])
            .tool_call(3, "call_csv", "analyze_csv", &[&csv])
            .finish("tool_calls")
            .done(),
    ));
    model.push(ScriptedResponse::sse(openai::text_answer(
        "The plan is saved.",
    )));
    let sb = Sandbox::new();
    sb.user_config(&provider_config(
        &model.base_url(),
        "[tui]\nmode = \"plan\"\n[memory]\nenabled = true\n",
    ));
    std::fs::write(
        sb.workspace().join("prices.csv"),
        "item,price\nbolt,10\nnut,20\n",
    )
    .unwrap();
    super::run_plain(&sb, "plan the change and save the plan").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);

    // The artifact was written, under the session's data dir and not in the workspace.
    let art = tool_result_seen_by_model(&requests[1], "call_art");
    assert_eq!(art["ok"], true, "{art}");
    let path = PathBuf::from(art["data"]["path"].as_str().unwrap());
    assert!(path.starts_with(sb.data_dir()), "{}", path.display());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# Plan\n1. read\n2. change\n"
    );
    let mut in_workspace: Vec<String> = std::fs::read_dir(sb.workspace())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    in_workspace.sort();
    assert_eq!(in_workspace, ["prices.csv"]);

    // The proposal was stored, inactive: nothing reached the memory file.
    let mem = tool_result_seen_by_model(&requests[1], "call_mem");
    assert_eq!(mem["ok"], true, "{mem}");
    let memory_file = sb.data_dir().join("memory.md");
    assert!(!memory_file.exists(), "{}", memory_file.display());

    // The fetch would have asked, so plan mode refused it, naming the mode.
    let fetched = tool_result_seen_by_model(&requests[1], "call_fetch");
    assert_eq!(fetched["ok"], false, "{fetched}");
    assert_eq!(fetched["error"]["code"], "plan_mode", "{fetched}");

    // A read runs in plan mode.
    let csv = tool_result_seen_by_model(&requests[1], "call_csv");
    assert_eq!(csv["ok"], true, "{csv}");
    assert_eq!(csv["data"]["columns"][1]["mean"], 15.0);
}
