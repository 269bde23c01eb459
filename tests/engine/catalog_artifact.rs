//! artifact.write: refused names and content, the size limit, where files land (never the
//! workspace) and that a retried call writes the same file.

use pablo_tools::artifact_write::ArtifactWrite;
use serde_json::json;

use super::catalog::*;

fn artifacts(limit: usize) -> Fixture {
    Fixture::new(|c, _| c.register(Arc::new(ArtifactWrite::new(limit))).unwrap())
}

#[tokio::test]
async fn every_refused_name_is_refused_with_its_reason_and_nothing_is_written() {
    let f = artifacts(1024);
    let long = format!("{}.md", "n".repeat(126));
    let cases: &[(&str, &str, &str)] = &[
        ("", "invalid_name", "empty"),
        ("dir/report.md", "invalid_name", "folder"),
        ("../report.md", "invalid_name", "folder"),
        ("/tmp/report.md", "invalid_name", "folder"),
        ("dir\\report.md", "invalid_name", "folder"),
        (".report.md", "invalid_name", "dot"),
        (".md", "invalid_name", "dot"),
        ("..", "invalid_name", "dot"),
        ("report\n.md", "invalid_name", "control"),
        ("report\0.md", "invalid_name", "control"),
        (" report.md", "invalid_name", "whitespace"),
        ("report.md ", "invalid_name", "whitespace"),
        ("c:report.md", "invalid_name", "':'"),
        ("report..md", "invalid_name", "no name"),
        (&long, "invalid_name", "128"),
        ("report", "unsupported_format", ".md, .txt, .csv or .json"),
        ("report.exe", "unsupported_format", ".exe"),
        ("report.html", "unsupported_format", ".html"),
        ("report.md.sh", "unsupported_format", ".sh"),
    ];
    for (name, code, word) in cases {
        let e = f
            .call("artifact.write", json!({"name": name, "content": "x"}))
            .await
            .unwrap_err();
        assert_eq!(&e.code, code, "{name:?}: {}", e.message);
        assert!(e.message.contains(word), "{name:?}: {}", e.message);
    }
    assert!(!f.state_dir().join("artifacts").exists());
    assert!(f.host.artifacts().is_empty());
}

#[tokio::test]
async fn json_that_does_not_parse_is_refused_and_json_that_does_is_kept_byte_for_byte() {
    let f = artifacts(1024);
    let e = f
        .call(
            "artifact.write",
            json!({"name": "out.json", "content": "{\"a\": 1,}"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "invalid_json");
    assert!(e.message.contains("out.json"), "{}", e.message);
    let text = "{ \"a\" : [1, 2] }\n";
    let out = f
        .call(
            "artifact.write",
            json!({"name": "OUT.JSON", "content": text}),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(out["path"].as_str().unwrap()).unwrap(),
        text
    );
}

#[tokio::test]
async fn content_over_the_artifact_limit_is_refused() {
    let f = artifacts(10);
    let e = f
        .call(
            "artifact.write",
            json!({"name": "a.txt", "content": "0123456789A"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "artifact_too_large");
    assert!(e.message.contains("max_artifact_bytes"), "{}", e.message);
    f.call(
        "artifact.write",
        json!({"name": "a.txt", "content": "0123456789"}),
    )
    .await
    .unwrap();
    // The default limit is 5 MiB.
    let f = artifacts(pablo_agent::Limits::default().max_artifact_bytes);
    let big = "x".repeat(5 * 1024 * 1024 + 1);
    let e = f
        .call("artifact.write", json!({"name": "big.txt", "content": big}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "artifact_too_large");
}

#[tokio::test]
async fn artifacts_land_in_the_session_store_never_the_workspace() {
    let f = artifacts(1024);
    let out = f
        .call_as(
            "call_a",
            "artifact.write",
            json!({"name": "report.md", "content": "# Hi\n"}),
        )
        .await
        .unwrap();
    let path = PathBuf::from(out["path"].as_str().unwrap());
    assert_eq!(path, f.state_dir().join("artifacts/call_a/report.md"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# Hi\n");
    assert_eq!(out["bytes"], 5);
    assert_eq!(
        std::fs::read_dir(f.ws()).unwrap().count(),
        0,
        "the workspace is untouched"
    );
    let listed = f.host.artifacts();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].name.as_str(), listed[0].bytes), ("report.md", 5));
    assert_eq!(listed[0].call_id, "call_a");
}

#[tokio::test]
async fn a_retried_call_rewrites_the_same_file_and_another_call_gets_its_own() {
    let f = artifacts(1024);
    let first = f
        .call_as(
            "call_r",
            "artifact.write",
            json!({"name": "t.csv", "content": "a\n1\n"}),
        )
        .await
        .unwrap();
    let again = f
        .call_as(
            "call_r",
            "artifact.write",
            json!({"name": "t.csv", "content": "a\n2\n"}),
        )
        .await
        .unwrap();
    assert_eq!(first["path"], again["path"]);
    let path = first["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), "a\n2\n");
    let other = f
        .call_as(
            "call_s",
            "artifact.write",
            json!({"name": "t.csv", "content": "a\n3\n"}),
        )
        .await
        .unwrap();
    assert_ne!(other["path"], first["path"]);
    assert_eq!(std::fs::read_to_string(path).unwrap(), "a\n2\n");
    assert_eq!(f.host.artifacts().len(), 2);
    // A call id that is not a plain token still maps to one folder inside the store.
    let odd = f
        .call_as(
            "../../escape",
            "artifact.write",
            json!({"name": "o.txt", "content": "o"}),
        )
        .await
        .unwrap();
    let odd = PathBuf::from(odd["path"].as_str().unwrap());
    assert_eq!(
        odd.parent().unwrap().parent().unwrap(),
        f.state_dir().join("artifacts")
    );
}
