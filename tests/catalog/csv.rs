//! csv.analyze: one run of the binary with no flags. (The property tests, the limits and the path
//! rules are in the tools crate, `crates/tools/src/csv_analyze/tests.rs`.)

use super::*;
use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

#[tokio::test]
async fn pablo_run_with_no_flags_gives_the_model_computed_statistics() {
    let model = ScriptedServer::start().await;
    model.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_csv",
        "analyze_csv",
        &[r#"{"path":"#, r#""prices.csv"}"#],
    )));
    model.push(ScriptedResponse::sse(openai::text_answer(
        "The mean price is 20.",
    )));
    let sb = Sandbox::new();
    sb.user_config(&provider_config(&model.base_url(), ""));
    std::fs::write(
        sb.workspace().join("prices.csv"),
        "item,price,in_stock\nbolt,10,yes\nnut,20,no\nscrew,30,yes\n",
    )
    .unwrap();
    let stdout = super::run_plain(&sb, "What is the mean price in prices.csv?").await;
    assert!(stdout.contains("The mean price is 20."), "{stdout}");
    let requests = model.requests();
    // The tool was offered to the model by its provider name…
    let tools: Vec<String> = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    for t in ["analyze_csv", "write_artifact", "fetch_url"] {
        assert!(tools.contains(&t.to_string()), "{tools:?}");
    }
    // …memory is off unless the person turns it on…
    assert!(!tools.contains(&"propose_memory".to_string()), "{tools:?}");
    // …and the model received the computed figures.
    let result = tool_result_seen_by_model(&requests[1], "call_csv");
    assert_eq!(result["ok"], true, "{result}");
    let price = &result["data"]["columns"][1];
    assert_eq!(price["name"], "price");
    assert_eq!(price["mean"], 20.0);
    assert_eq!(price["median"], 20.0);
    assert_eq!(price["stddev"], 10.0);
    assert_eq!(result["data"]["columns"][2]["true"], 2);
}
