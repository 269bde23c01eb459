//! Images in the conversation: a session resumed by the real binary sending the image again.
//! (The wire formats and the refusals are tested in-process, `tests/engine/images.rs`.)

use std::path::Path;

use serde_json::Value;

use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
use crate::support::images::{PNG_1X1, b64};

mod resume {
    use super::*;
    use crate::support::bin::{Sandbox, json_lines};

    async fn run(sb: &Sandbox, extra: &[&str], task: &str) -> Vec<Value> {
        let out = sb
            .command()
            .env("OPENAI_API_KEY", "sk-test-key")
            .args(["run", "--json"])
            .args(extra)
            .arg(task)
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        json_lines(&out.stdout)
    }

    fn sessions_dir(sb: &Sandbox) -> std::path::PathBuf {
        sb.data_dir().join("sessions")
    }

    fn journal_text(dir: &Path, id: &str) -> String {
        std::fs::read_to_string(dir.join(format!("{id}.jsonl"))).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_resumed_session_sends_the_image_again_from_its_stored_copy() {
        let server = ScriptedServer::start().await;
        let sb = Sandbox::new();
        sb.user_config(&format!(
            "provider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\n",
            server.base_url()
        ));
        std::fs::write(sb.workspace().join("shot.png"), PNG_1X1).unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("A red dot.")));
        server.push(ScriptedResponse::sse(openai::text_answer("Still red.")));
        let first = run(&sb, &[], "what is in @shot.png?").await;
        let id = first
            .iter()
            .find_map(|e| e["session_id"].as_str().map(str::to_string))
            .expect("a session id");
        let dir = sessions_dir(&sb);
        // The journal describes the image; its bytes are stored once, by hash, beside it.
        let journal = journal_text(&dir, &id);
        assert!(!journal.contains(&b64(PNG_1X1)), "no inline base64");
        let stored: Vec<_> = std::fs::read_dir(dir.join("images"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(stored.len(), 1, "{stored:?}");
        assert_eq!(std::fs::read(&stored[0]).unwrap(), PNG_1X1);
        // The picture itself is gone from the workspace: resume needs only the stored copy.
        std::fs::remove_file(sb.workspace().join("shot.png")).unwrap();
        run(&sb, &["--resume", &id], "is it still red?").await;
        let b = server.request_bodies();
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[1]["messages"][1].to_string(),
            b[0]["messages"][1].to_string(),
            "the resumed conversation sends the same image message"
        );
        assert_eq!(
            b[1]["messages"][1]["content"][0]["image_url"]["url"],
            format!("data:image/png;base64,{}", b64(PNG_1X1))
        );
    }
}

#[tokio::test]
async fn a_png_of_only_its_magic_bytes_is_not_sent_as_an_image() {
    use crate::support::bin::{Sandbox, json_lines};
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    sb.user_config(&format!(
        "provider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    std::fs::write(sb.workspace().join("shot.png"), &PNG_1X1[..8]).unwrap();
    // The same bytes and a header whose size is zero: no image either.
    let mut zero = PNG_1X1.to_vec();
    zero[16..24].fill(0);
    std::fs::write(sb.workspace().join("zero.png"), &zero).unwrap();
    for name in ["shot.png", "zero.png"] {
        let out = sb
            .command()
            .env("OPENAI_API_KEY", "sk-test-key")
            .args(["run", "--json"])
            .arg(format!("what is in @{name}?"))
            .output()
            .await
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = json_lines(&out.stdout);
        let error = lines
            .iter()
            .find(|l| l["type"] == "error")
            .unwrap_or_else(|| panic!("{lines:#?}"));
        assert_eq!(error["code"], "image_unrecognized", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("@{name}")),
            "{error}"
        );
    }
    assert!(server.requests().is_empty(), "an image was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_the_provider_refused_is_not_sent_again_even_after_resume() {
    use crate::support::bin::{Sandbox, json_lines};
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    sb.user_config(&format!(
        "provider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    std::fs::write(sb.workspace().join("shot.png"), PNG_1X1).unwrap();
    server.push(ScriptedResponse::error(
        400,
        "invalid_request_error",
        "You uploaded an unsupported image. Please make sure your image is valid.",
    ));
    server.push(ScriptedResponse::sse(openai::text_answer(
        "No picture, then.",
    )));
    let run = |args: Vec<String>| {
        let mut cmd = sb.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key")
            .args(["run", "--json"])
            .args(args);
        async move { cmd.output().await.unwrap() }
    };
    let first = run(vec!["what is in @shot.png?".into()]).await;
    assert_eq!(first.status.code(), Some(1));
    let lines = json_lines(&first.stdout);
    let error = lines.iter().find(|l| l["type"] == "error").unwrap();
    assert_eq!(error["code"], "image_refused", "{error}");
    let id = lines[0]["session_id"].as_str().unwrap().to_string();
    let second = run(vec!["--resume".into(), id, "then describe the file".into()]).await;
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0].to_string().contains(&b64(PNG_1X1)));
    // The resumed conversation holds a note where the image was, and not the image.
    let later = bodies[1].to_string();
    assert!(!later.contains(&b64(PNG_1X1)), "{later}");
    assert!(!later.contains("image_url"), "{later}");
    assert!(later.contains("the provider refused"), "{later}");
}

#[tokio::test]
async fn a_headless_image_refusal_names_the_flag_not_only_a_tui_command() {
    use crate::support::bin::{Sandbox, json_lines};
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    sb.user_config(&format!(
        "provider = \"openai\"\nmodel = \"qwen3:8b\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    std::fs::write(sb.workspace().join("shot.png"), PNG_1X1).unwrap();
    let out = sb
        .command()
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", "--json", "what is in @shot.png?"])
        .output()
        .await
        .unwrap();
    let lines = json_lines(&out.stdout);
    let error = lines.iter().find(|l| l["type"] == "error").unwrap();
    assert_eq!(error["code"], "image_not_accepted_by_model", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("`--model`"), "{message}");
    assert!(message.contains("`/model` in the TUI"), "{message}");
    assert!(server.requests().is_empty());
}
