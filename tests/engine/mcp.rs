//! MCP in the engine: the hub driven directly against the reference `server-everything` over
//! stdio, so a test can cancel a call at a moment of its choosing. The tests that go through the
//! `pablo` binary are in `tests/mcp.rs`.

use std::time::Duration;

use serde_json::json;

use crate::support::mcp::{node_or_skip, reference_server};

#[tokio::test]
async fn cancelling_an_in_flight_call_ends_it_and_the_connection_keeps_working() {
    use pablo_tools::mcp::client::Endpoint;
    use pablo_tools::mcp::{McpHub, ServerSpec};
    use tokio_util::sync::CancellationToken;
    let Some(node) = node_or_skip("cancelling_an_in_flight_call_…") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let spec = ServerSpec {
        name: "everything".into(),
        endpoint: Endpoint::Stdio {
            program: node.display().to_string(),
            args: vec![
                reference_server("server-everything").display().to_string(),
                "stdio".into(),
            ],
            env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            cwd: dir.path().to_path_buf(),
            log: dir.path().join("everything.log"),
            protected: Vec::new(),
        },
        required: false,
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(300),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        refused: None,
    };
    let hub = std::sync::Arc::new(McpHub::new(dir.path().to_path_buf(), vec![spec]));
    hub.start(None);
    hub.settled().await;
    let server = hub.server("everything").unwrap().clone();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let long = tokio::spawn({
        let server = server.clone();
        async move {
            let args = json!({"duration": 300, "steps": 300});
            server
                .call(
                    "trigger-long-running-operation",
                    args.as_object().unwrap().clone(),
                    &c,
                )
                .await
        }
    });
    // Calls run side by side on one connection: another call answers while the long one runs.
    let cancel_never = CancellationToken::new();
    let echo = server
        .call(
            "echo",
            json!({"message": "first"}).as_object().unwrap().clone(),
            &cancel_never,
        )
        .await
        .unwrap();
    assert!(echo.to_string().contains("first"), "{echo}");
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(60), long)
        .await
        .expect("the cancelled call ended")
        .unwrap();
    let err = outcome.expect_err("a 300 s operation cannot have completed");
    assert_eq!(
        pablo_tools::mcp::failure("everything", err).code,
        "cancelled"
    );
    let echo = server
        .call(
            "echo",
            json!({"message": "after"}).as_object().unwrap().clone(),
            &cancel_never,
        )
        .await
        .unwrap();
    assert!(echo.to_string().contains("after"), "{echo}");
    hub.shutdown().await;
}
