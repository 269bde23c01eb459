//! Integration tests: fs_tools.
//!
//! The five file tools called the way the agent calls them (schema validation, preview, commit,
//! narrow), on real files, plus one turn through `pablo_agent::spawn`.

// Test helpers panic on setup failures; that is how a test reports them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use pablo::core::{EventSink, ToolFailure};
use pablo::protocol::Preview;
use pablo::workspace::{Workspace, WorkspaceOptions};
use pablo_tools::{Catalog, Host, ToolContext, register_filesystem};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Fixture {
    tmp: tempfile::TempDir,
    catalog: Catalog,
    ctx: ToolContext,
}

fn fixture_with(options: WorkspaceOptions) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::open_with(tmp.path(), options).unwrap());
    let mut catalog = Catalog::new();
    register_filesystem(&mut catalog, &ws, true).unwrap();
    let host = Arc::new(Host::new(
        ws,
        tmp.path().join(".state-unused"),
        &pablo::config::ShellOptions::default(),
    ));
    let ctx = ToolContext {
        call_id: "call-1".into(),
        cancel: CancellationToken::new(),
        events: EventSink::discard(),
        host,
    };
    Fixture { tmp, catalog, ctx }
}

fn fixture() -> Fixture {
    fixture_with(WorkspaceOptions::default())
}

impl Fixture {
    fn path(&self, p: &str) -> std::path::PathBuf {
        self.tmp.path().join(p)
    }

    fn put(&self, p: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn bytes(&self, p: &str) -> Vec<u8> {
        std::fs::read(self.path(p)).unwrap()
    }

    /// Validation and preview, as the agent does before asking.
    async fn preview(&self, tool: &str, args: Value) -> Result<Preview, ToolFailure> {
        let t = self.catalog.get(tool).unwrap().clone();
        if let Some(v) = self.catalog.validator(t.name()) {
            v.validate(t.name(), &args)?;
        }
        t.preview(&args, &self.ctx).await
    }

    /// validate → preview → commit.
    async fn call(&self, tool: &str, args: Value) -> Result<Value, ToolFailure> {
        let preview = self.preview(tool, args.clone()).await?;
        let t = self.catalog.get(tool).unwrap().clone();
        t.commit(&args, &preview, &self.ctx).await
    }

    async fn revision(&self, p: &str) -> String {
        let page = self.call("fs.read", json!({"path": p})).await.unwrap();
        page["revision"].as_str().unwrap().to_string()
    }

    fn temp_files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.tmp.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else if pablo::workspace::is_temp_name(&e.file_name()) {
                    out.push(e.path().display().to_string());
                }
            }
        }
        out
    }
}

fn code(r: Result<impl std::fmt::Debug, ToolFailure>) -> String {
    match r {
        Ok(v) => panic!("expected a refusal, got {v:?}"),
        Err(f) => f.code.to_string(),
    }
}

#[tokio::test]
async fn read_returns_a_page_with_revision_and_next_offset() {
    let f = fixture();
    f.put("a.txt", "héllo world\n");
    let page = f
        .call("fs.read", json!({"path": "a.txt", "limit": 2}))
        .await
        .unwrap();
    // "h" + half of "é" fits in two bytes; the page stops before the split character.
    assert_eq!(page["text"], "h");
    assert_eq!(page["next_offset"], 1);
    assert_eq!(page["total_bytes"], 13);
    assert_eq!(
        page["revision"].as_str().unwrap(),
        pablo::workspace::revision_of("héllo world\n".as_bytes())
    );
    let rest = f
        .call("fs.read", json!({"path": "a.txt", "offset": 1}))
        .await
        .unwrap();
    assert_eq!(rest["text"], "éllo world\n");
    assert_eq!(rest["next_offset"], Value::Null);
}

#[tokio::test]
async fn read_refuses_binary_non_utf8_large_credential_and_directory() {
    let f = fixture_with(WorkspaceOptions {
        max_file_bytes: Some(100),
        ..Default::default()
    });
    f.put("bin.dat", b"abc\0def");
    f.put("latin1.txt", b"caf\xe9\n");
    f.put("big.txt", "x".repeat(101));
    f.put(".env.local", "TOKEN=1\n");
    f.put("dir/file.txt", "x");
    let read = |p: &str| f.call("fs.read", json!({"path": p}));
    assert_eq!(code(read("bin.dat").await), "binary_content");
    assert_eq!(code(read("latin1.txt").await), "not_utf8");
    assert_eq!(code(read("big.txt").await), "file_too_large");
    assert_eq!(code(read(".env.local").await), "file_refused");
    assert_eq!(code(read("dir").await), "is_a_directory");
    assert_eq!(code(read("missing.txt").await), "not_found");
    assert_eq!(code(read("../etc/passwd").await), "path_refused");
    // Unknown keys never reach the tool.
    assert_eq!(
        code(f.call("fs.read", json!({"path": "a", "lenght": 3})).await),
        "invalid_arguments"
    );
}

#[tokio::test]
async fn list_reports_kinds_sizes_and_truncation() {
    let f = fixture();
    f.put("b.txt", "12");
    f.put("a/c.txt", "123");
    let out = f.call("fs.list", json!({})).await.unwrap();
    assert_eq!(
        out["entries"],
        json!([{"path": "a", "kind": "dir"}, {"path": "b.txt", "kind": "file", "size": 2}])
    );
    assert_eq!(out["truncated"], false);
    let deep = f
        .call(
            "fs.list",
            json!({"path": ".", "depth": 2, "max_entries": 2}),
        )
        .await
        .unwrap();
    assert_eq!(deep["entries"][1]["path"], "a/c.txt");
    assert_eq!(deep["truncated"], true);
    assert_eq!(
        code(f.call("fs.list", json!({"depth": 7})).await),
        "invalid_arguments"
    );
}

#[tokio::test]
async fn search_finds_literal_case_sensitive_lines_with_numbers() {
    let f = fixture();
    f.put(
        "src/a.rs",
        "fn main() {\n    let needle = 1;\n    // Needle\n}\n",
    );
    f.put("src/b.rs", "needle.*\nno\nx needle.* y\n");
    f.put("bin/blob", b"needle\0binary");
    let out = f
        .call("fs.search", json!({"query": "needle.*"}))
        .await
        .unwrap();
    let m = out["matches"].as_array().unwrap();
    assert_eq!(m.len(), 2, "{out}");
    assert_eq!(m[0]["path"], "src/b.rs");
    assert_eq!(m[0]["line_number"], 1);
    assert_eq!(m[1]["line_number"], 3);
    assert_eq!(m[1]["column"], 3);
    assert_eq!(m[1]["line"], "x needle.* y");
    let out = f
        .call("fs.search", json!({"query": "needle"}))
        .await
        .unwrap();
    let paths: Vec<_> = out["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().unwrap(), m["line_number"]))
        .collect();
    assert_eq!(paths, ["src/a.rs:2", "src/b.rs:1", "src/b.rs:3"]);
    assert_eq!(out["skipped"]["binary"], 1);
    assert_eq!(out["truncated"], false);
}

#[tokio::test]
async fn search_respects_gitignore_unless_include_ignored_and_skips_links() {
    let f = fixture();
    f.put(".gitignore", "target/\n*.log\n");
    f.put("target/out.txt", "needle\n");
    f.put("x.log", "needle\n");
    f.put(".ignore", "vendor/\n");
    f.put("vendor/lib.txt", "needle\n");
    f.put("src/ok.txt", "needle\n");
    f.put(".git/config", "needle\n");
    std::os::unix::fs::symlink("src/ok.txt", f.path("link.txt")).unwrap();
    std::os::unix::fs::symlink("src", f.path("linkdir")).unwrap();
    let paths = |v: &Value| -> Vec<String> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap().to_string())
            .collect()
    };
    let out = f
        .call("fs.search", json!({"query": "needle"}))
        .await
        .unwrap();
    assert_eq!(paths(&out), ["src/ok.txt"]);
    let all = f
        .call(
            "fs.search",
            json!({"query": "needle", "include_ignored": true}),
        )
        .await
        .unwrap();
    assert_eq!(
        paths(&all),
        ["src/ok.txt", "target/out.txt", "vendor/lib.txt", "x.log"]
    );
}

#[tokio::test]
async fn search_caps_are_reported_when_hit() {
    let f = fixture_with(WorkspaceOptions {
        max_search_files: Some(3),
        ..Default::default()
    });
    for i in 0..10 {
        f.put(&format!("f{i}.txt"), "needle\nneedle\n");
    }
    let out = f
        .call("fs.search", json!({"query": "needle", "max_results": 100}))
        .await
        .unwrap();
    assert_eq!(out["truncated"], true);
    assert!(
        out["limits_hit"]
            .as_array()
            .unwrap()
            .contains(&json!("max_files")),
        "{out}"
    );
    assert!(out["files_scanned"].as_u64().unwrap() <= 3, "{out}");

    let f = fixture_with(WorkspaceOptions {
        max_search_bytes: Some(20),
        ..Default::default()
    });
    for i in 0..10 {
        f.put(&format!("f{i}.txt"), "needle\nneedle\n");
    }
    let out = f
        .call("fs.search", json!({"query": "needle"}))
        .await
        .unwrap();
    assert!(
        out["limits_hit"]
            .as_array()
            .unwrap()
            .contains(&json!("max_scan_bytes")),
        "{out}"
    );

    let f = fixture();
    f.put("many.txt", "needle\n".repeat(50));
    let out = f
        .call("fs.search", json!({"query": "needle", "max_results": 5}))
        .await
        .unwrap();
    assert_eq!(out["matches"].as_array().unwrap().len(), 5);
    assert_eq!(out["limits_hit"], json!(["max_results"]));
}

#[tokio::test]
async fn search_with_max_results_returns_the_first_hits_by_path_wherever_the_walk_finds_them() {
    let f = fixture();
    // Created in path order: directory listings do not hand them back in that order (tmpfs lists
    // the newest first, ext4 by hash), so the walk meets the first paths anywhere.
    for i in 0..120 {
        f.put(&format!("d{i:03}/hit.txt"), "needle\nneedle\n");
    }
    let out = f
        .call("fs.search", json!({"query": "needle", "max_results": 5}))
        .await
        .unwrap();
    let got: Vec<(String, u64)> = out["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_string(),
                m["line_number"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, u64)> = vec![
        ("d000/hit.txt".into(), 1),
        ("d000/hit.txt".into(), 2),
        ("d001/hit.txt".into(), 1),
        ("d001/hit.txt".into(), 2),
        ("d002/hit.txt".into(), 1),
    ];
    assert_eq!(got, expected, "{out}");
    assert_eq!(out["truncated"], true);
    assert_eq!(out["limits_hit"], json!(["max_results"]));
}

#[tokio::test]
async fn search_cuts_long_lines_around_the_match() {
    let f = fixture();
    let line = format!("{}needle{}", "é".repeat(1000), "ü".repeat(1000));
    f.put("long.txt", format!("{line}\n"));
    let out = f
        .call("fs.search", json!({"query": "needle"}))
        .await
        .unwrap();
    let m = &out["matches"][0];
    let shown = m["line"].as_str().unwrap();
    assert!(shown.contains("needle"));
    assert!(shown.len() < 400, "{}", shown.len());
    assert!(!shown.contains('\u{FFFD}'));
    assert_eq!(m["line_truncated"], true);
}

#[tokio::test]
async fn write_creates_only_when_expected_revision_is_null() {
    let f = fixture();
    let out = f
        .call(
            "fs.write",
            json!({"path": "docs/new.md", "text": "# New\n", "expected_revision": null}),
        )
        .await
        .unwrap();
    assert_eq!(out["committed"], true);
    assert_eq!(out["created"], true);
    assert_eq!(f.bytes("docs/new.md"), b"# New\n");
    // Creating over an existing file is refused, and the file keeps its bytes.
    let again = f
        .call(
            "fs.write",
            json!({"path": "docs/new.md", "text": "clobber", "expected_revision": null}),
        )
        .await;
    let err = again.unwrap_err();
    assert_eq!(err.code, "already_exists");
    assert_eq!(
        err.data.unwrap()["current_revision"].as_str().unwrap(),
        pablo::workspace::revision_of(b"# New\n")
    );
    assert_eq!(f.bytes("docs/new.md"), b"# New\n");
    // expected_revision is required, even when null.
    assert_eq!(
        code(
            f.call("fs.write", json!({"path": "x.md", "text": "x"}))
                .await
        ),
        "invalid_arguments"
    );
    assert!(!f.path("x.md").exists());
}

#[tokio::test]
async fn write_with_a_stale_revision_is_refused_and_file_unchanged() {
    let f = fixture();
    f.put("a.txt", "one\n");
    let stale = f.revision("a.txt").await;
    f.put("a.txt", "two\n");
    let err = f
        .call(
            "fs.write",
            json!({"path": "a.txt", "text": "three\n", "expected_revision": stale}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "revision_mismatch");
    assert_eq!(
        err.data.unwrap()["current_revision"].as_str().unwrap(),
        pablo::workspace::revision_of(b"two\n")
    );
    assert_eq!(f.bytes("a.txt"), b"two\n");
    // A revision for a file that does not exist is stale too.
    let err = f
        .call(
            "fs.write",
            json!({"path": "gone.txt", "text": "x", "expected_revision": stale}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "revision_mismatch");
    assert!(!f.path("gone.txt").exists());
}

#[tokio::test]
async fn edit_with_a_stale_revision_is_refused_and_file_unchanged() {
    let f = fixture();
    f.put("a.txt", "alpha beta\n");
    let stale = f.revision("a.txt").await;
    f.put("a.txt", "alpha beta gamma\n");
    let err = f
        .call(
            "fs.edit",
            json!({"path": "a.txt", "old_text": "beta", "new_text": "BETA", "expected_revision": stale}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "revision_mismatch");
    assert_eq!(f.bytes("a.txt"), b"alpha beta gamma\n");
}

#[tokio::test]
async fn a_change_between_preview_and_commit_is_refused_at_commit() {
    let f = fixture();
    f.put("a.txt", "alpha\n");
    let rev = f.revision("a.txt").await;
    let args = json!({"path": "a.txt", "old_text": "alpha", "new_text": "omega", "expected_revision": rev});
    let preview = f.preview("fs.edit", args.clone()).await.unwrap();
    // Someone else writes while the person looks at the diff.
    f.put("a.txt", "someone else\n");
    let tool = f.catalog.get("fs.edit").unwrap().clone();
    let err = tool.commit(&args, &preview, &f.ctx).await.unwrap_err();
    assert_eq!(err.code, "revision_mismatch");
    assert_eq!(f.bytes("a.txt"), b"someone else\n");
    assert!(f.temp_files().is_empty(), "{:?}", f.temp_files());
}

#[tokio::test]
async fn edit_with_zero_or_several_matches_is_refused_and_file_unchanged() {
    let f = fixture();
    f.put("a.txt", "foo bar foo\n");
    let rev = f.revision("a.txt").await;
    let edit = |old: &str| {
        f.call(
            "fs.edit",
            json!({"path": "a.txt", "old_text": old, "new_text": "X", "expected_revision": rev}),
        )
    };
    assert_eq!(code(edit("baz").await), "no_match");
    let err = edit("foo").await.unwrap_err();
    assert_eq!(err.code, "ambiguous_match");
    assert_eq!(err.data.unwrap()["count"], 2);
    assert!(err.message.contains("2 times"), "{}", err.message);
    assert_eq!(f.bytes("a.txt"), b"foo bar foo\n");
    assert_eq!(
        code(
            f.call(
                "fs.edit",
                json!({"path": "a.txt", "old_text": "", "new_text": "X", "expected_revision": rev}),
            )
            .await
        ),
        "invalid_arguments"
    );
    assert_eq!(f.bytes("a.txt"), b"foo bar foo\n");
}

#[tokio::test]
async fn edit_preview_is_complete_and_commit_lands_exactly_it() {
    let f = fixture();
    f.put("a.txt", "one\ntwo\nthree\n");
    let rev = f.revision("a.txt").await;
    let args =
        json!({"path": "a.txt", "old_text": "two", "new_text": "2", "expected_revision": rev});
    let Preview::FileChange(p) = f.preview("fs.edit", args.clone()).await.unwrap() else {
        panic!("not a file change");
    };
    // The preview touched nothing.
    assert_eq!(f.bytes("a.txt"), b"one\ntwo\nthree\n");
    assert_eq!(p.path, "a.txt");
    assert_eq!(p.old_revision.as_deref(), Some(rev.as_str()));
    assert_eq!(p.new_text, "one\n2\nthree\n");
    assert_eq!(
        p.new_revision,
        pablo::workspace::revision_of(b"one\n2\nthree\n")
    );
    assert_eq!((p.added, p.removed), (1, 1));
    assert!(
        p.diff.contains("@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"),
        "{}",
        p.diff
    );
    let out = f.call("fs.edit", args).await.unwrap();
    assert_eq!(out["committed"], true);
    assert_eq!(out["revision"].as_str().unwrap(), p.new_revision);
    assert_eq!(f.bytes("a.txt"), b"one\n2\nthree\n");
}

#[tokio::test]
async fn edit_keeps_crlf_endings_a_missing_final_newline_and_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    f.put("w.bat", "@echo off\r\necho one\r\necho two");
    std::fs::set_permissions(f.path("w.bat"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let rev = f.revision("w.bat").await;
    f.call(
        "fs.edit",
        json!({"path": "w.bat", "old_text": "echo one\necho two", "new_text": "echo 1\necho 2", "expected_revision": rev}),
    )
    .await
    .unwrap();
    assert_eq!(f.bytes("w.bat"), b"@echo off\r\necho 1\r\necho 2");
    let mode = std::fs::metadata(f.path("w.bat"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o755);
    // A whole-file write keeps the same shape.
    let rev = f.revision("w.bat").await;
    f.call(
        "fs.write",
        json!({"path": "w.bat", "text": "@echo on\necho 3\n", "expected_revision": rev}),
    )
    .await
    .unwrap();
    assert_eq!(f.bytes("w.bat"), b"@echo on\r\necho 3");
    let mode = std::fs::metadata(f.path("w.bat"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o755);
}

fn twenty_lines() -> String {
    (1..=20).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn a_two_hunk_write_narrowed_to_one_hunk_commits_only_that_hunk() {
    let f = fixture();
    f.put("n.txt", twenty_lines());
    let rev = f.revision("n.txt").await;
    let wanted = twenty_lines()
        .replace("line 2\n", "LINE TWO\n")
        .replace("line 19\n", "LINE NINETEEN\n");
    let args = json!({"path": "n.txt", "text": wanted, "expected_revision": rev});
    let preview = f.preview("fs.write", args.clone()).await.unwrap();
    let Preview::FileChange(full) = &preview else {
        panic!("not a file change")
    };
    assert_eq!(full.hunks.len(), 2);
    let tool = f.catalog.get("fs.write").unwrap().clone();
    let narrowed = tool.narrow(&preview, &[1]).unwrap();
    let Preview::FileChange(n) = &narrowed else {
        panic!("not a file change")
    };
    assert_eq!(n.hunks.len(), 1);
    assert_eq!((n.added, n.removed), (1, 1));
    assert_eq!(n.old_revision.as_deref(), Some(rev.as_str()));
    let out = tool.commit(&args, &narrowed, &f.ctx).await.unwrap();
    assert_eq!(out["committed"], true);
    let expected = twenty_lines().replace("line 19\n", "LINE NINETEEN\n");
    assert_eq!(String::from_utf8(f.bytes("n.txt")).unwrap(), expected);
    assert_eq!(
        out["revision"].as_str().unwrap(),
        pablo::workspace::revision_of(expected.as_bytes())
    );
}

#[tokio::test]
async fn a_two_hunk_edit_narrowed_to_the_first_hunk_commits_only_that_hunk() {
    let f = fixture();
    f.put("n.txt", twenty_lines());
    let rev = f.revision("n.txt").await;
    let old: String = (2..=19).map(|i| format!("line {i}\n")).collect();
    let new = old
        .replace("line 2\n", "LINE TWO\n")
        .replace("line 19\n", "LINE NINETEEN\n");
    let args = json!({"path": "n.txt", "old_text": old, "new_text": new, "expected_revision": rev});
    let preview = f.preview("fs.edit", args.clone()).await.unwrap();
    let tool = f.catalog.get("fs.edit").unwrap().clone();
    assert_eq!(code(tool.narrow(&preview, &[2])), "invalid_hunks");
    assert_eq!(code(tool.narrow(&preview, &[])), "no_hunks_accepted");
    let narrowed = tool.narrow(&preview, &[0]).unwrap();
    tool.commit(&args, &narrowed, &f.ctx).await.unwrap();
    let expected = twenty_lines().replace("line 2\n", "LINE TWO\n");
    assert_eq!(String::from_utf8(f.bytes("n.txt")).unwrap(), expected);
}

#[tokio::test]
async fn a_preview_whose_text_was_altered_is_not_committed() {
    let f = fixture();
    f.put("a.txt", "a\n");
    let rev = f.revision("a.txt").await;
    let args = json!({"path": "a.txt", "text": "b\n", "expected_revision": rev});
    let mut preview = f.preview("fs.write", args.clone()).await.unwrap();
    if let Preview::FileChange(p) = &mut preview {
        p.new_text = "evil\n".into();
    }
    let tool = f.catalog.get("fs.write").unwrap().clone();
    assert_eq!(
        code(tool.commit(&args, &preview, &f.ctx).await),
        "invalid_preview"
    );
    assert_eq!(f.bytes("a.txt"), b"a\n");
}

#[tokio::test]
async fn a_cancelled_call_writes_nothing_and_leaves_no_temporary_file() {
    let f = fixture();
    f.put("a.txt", "a\n");
    let rev = f.revision("a.txt").await;
    let args = json!({"path": "a.txt", "text": "b\n", "expected_revision": rev});
    let preview = f.preview("fs.write", args.clone()).await.unwrap();
    f.ctx.cancel.cancel();
    let tool = f.catalog.get("fs.write").unwrap().clone();
    assert_eq!(
        code(tool.commit(&args, &preview, &f.ctx).await),
        "cancelled"
    );
    assert_eq!(f.bytes("a.txt"), b"a\n");
    assert!(f.temp_files().is_empty());
}

#[tokio::test]
async fn writes_to_credential_names_and_through_links_are_refused() {
    let f = fixture();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), f.path("out")).unwrap();
    for (path, expected) in [
        (".env", "file_refused"),
        ("keys/deploy.pem", "file_refused"),
        ("out/x.txt", "path_refused"),
        ("/tmp/x", "path_refused"),
    ] {
        let r = f
            .call(
                "fs.write",
                json!({"path": path, "text": "x", "expected_revision": null}),
            )
            .await;
        assert_eq!(code(r), expected, "{path}");
    }
    assert!(!f.path(".env").exists());
    assert!(!f.path("keys").exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn write_tools_are_registered_only_with_write_authority() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::open(tmp.path()).unwrap());
    let mut read_only = Catalog::new();
    register_filesystem(&mut read_only, &ws, false).unwrap();
    let names: Vec<_> = read_only.names().collect();
    assert_eq!(names, ["fs.list", "fs.read", "fs.search"]);
    let mut rw = Catalog::new();
    register_filesystem(&mut rw, &ws, true).unwrap();
    let names: Vec<_> = rw.names().collect();
    assert_eq!(
        names,
        ["fs.edit", "fs.list", "fs.read", "fs.search", "fs.write"]
    );
    assert!(rw.get("fs_edit").is_some());
    let providers: Vec<_> = rw.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(
        providers,
        ["fs_edit", "fs_list", "fs_read", "fs_search", "fs_write"]
    );
}

mod through_the_agent {
    //! One turn through `pablo_agent::spawn`: the model reads a file, then edits it with the
    //! revision it read; the edit is committed under `ApprovalMode::ApproveAsks`.

    use std::sync::Mutex;

    use futures::StreamExt;
    use pablo::core::ApprovalMode;
    use pablo::model::{
        EventStream, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent,
    };
    use pablo::policy::PolicyEngine;
    use pablo::protocol::{Event, Op, ToolCall};
    use pablo_agent::{AgentSetup, Limits, spawn};

    use super::*;

    /// One scripted model answer, computed from the request (so it can use earlier results).
    type Step = Box<dyn Fn(&ModelRequest) -> Vec<StreamEvent> + Send>;

    /// Answers each model call with the next scripted step.
    struct Scripted {
        steps: Mutex<Vec<Step>>,
    }

    #[async_trait::async_trait]
    impl ModelClient for Scripted {
        fn provider(&self) -> &str {
            "scripted"
        }
        fn model(&self) -> &str {
            "script"
        }
        async fn stream(
            &self,
            request: &ModelRequest,
            _cancel: CancellationToken,
        ) -> Result<EventStream, ModelError> {
            let step = {
                let mut steps = self.steps.lock().unwrap();
                if steps.is_empty() {
                    return Err(ModelError::Config("script exhausted".into()));
                }
                steps.remove(0)
            };
            let events = step(request);
            Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
        }
    }

    fn last_tool_result(req: &ModelRequest) -> Value {
        let content = req
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                pablo::model::Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap();
        serde_json::from_str(&content).unwrap()
    }

    fn call(id: &str, name: &str, args: Value) -> Vec<StreamEvent> {
        vec![
            StreamEvent::ToolCall(ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args.to_string(),
            }),
            StreamEvent::Completed {
                stop_reason: ModelStopReason::ToolUse,
            },
        ]
    }

    #[tokio::test]
    async fn the_agent_reads_then_edits_with_the_revision_it_read() {
        let f = fixture();
        f.put("hello.txt", "hello world\n");
        let steps: Vec<Step> = vec![
            Box::new(|req| {
                assert!(req.tools.iter().any(|t| t.name == "fs_edit"));
                call("c1", "fs_read", json!({"path": "hello.txt"}))
            }),
            Box::new(|req| {
                let read = last_tool_result(req);
                assert_eq!(read["ok"], true, "{read}");
                let rev = read["data"]["revision"].as_str().unwrap().to_string();
                call(
                    "c2",
                    "fs_edit",
                    json!({"path": "hello.txt", "old_text": "world", "new_text": "pablo", "expected_revision": rev}),
                )
            }),
            Box::new(|req| {
                let edit = last_tool_result(req);
                assert_eq!(edit["data"]["committed"], true, "{edit}");
                vec![
                    StreamEvent::TextDelta("done".into()),
                    StreamEvent::Completed {
                        stop_reason: ModelStopReason::EndTurn,
                    },
                ]
            }),
        ];
        let mut handle = spawn(AgentSetup {
            mode: Default::default(),
            model_switcher: None,
            isolator: None,
            hooks: pablo_hooks::Hooks::none(),
            session_id: "s".into(),
            model: Arc::new(Scripted {
                steps: Mutex::new(steps),
            }),
            catalog: f.catalog.clone(),
            policy: Arc::new(PolicyEngine::default()),
            host: f.ctx.host.clone(),
            limits: Limits::default(),
            approvals: ApprovalMode::ApproveAsks,
            system_prompt: String::new(),
            history: Vec::new(),
            recorder: None,
            checkpoints: None,
        });
        handle
            .ops
            .send(Op::user_turn("say hello to pablo"))
            .unwrap();
        let mut results = Vec::new();
        let mut running_preview = None;
        let deadline = std::time::Duration::from_secs(30);
        loop {
            let ev = tokio::time::timeout(deadline, handle.events.recv())
                .await
                .unwrap()
                .unwrap();
            match ev {
                Event::ToolCallRunning { preview, .. } => running_preview = Some(preview),
                Event::ToolCallEnd { tool, result, .. } => results.push((tool, result)),
                Event::TurnCompleted { .. } => break,
                _ => {}
            }
        }
        handle.ops.send(Op::Shutdown).unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].0, "fs.read");
        assert_eq!(results[1].0, "fs.edit");
        assert!(results[1].1.is_ok(), "{:?}", results[1].1);
        let Some(Preview::FileChange(p)) = running_preview else {
            panic!("the edit ran without a file-change preview");
        };
        assert_eq!(p.new_text, "hello pablo\n");
        assert_eq!(f.bytes("hello.txt"), b"hello pablo\n");
    }
}
