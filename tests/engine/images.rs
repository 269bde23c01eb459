//! Images in the conversation: `@shot.png` through the real agent loop and the three real
//! clients against a scripted server on 127.0.0.1 (the exact JSON each wire format carries, and
//! the same bytes again at the next call); the refusals that stop a turn before anything is sent.
//! (A session resumed by the real binary is tested in `tests/images.rs`.)

use std::sync::Arc;
use std::time::Duration;

use pablo::model::anthropic::{AnthropicClient, AnthropicConfig};
use pablo::model::http::{ApiKey, HttpOptions};
use pablo::model::openai::{OpenAiClient, OpenAiConfig};
use pablo::model::responses::ResponsesClient;
use pablo::model::{ModelClient, ModelProfile};
use pablo::protocol::Event;
use serde_json::json;

use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic, openai, responses};
use crate::support::images::{PNG_1X1, b64};
use crate::support::prompt::without_markers;

const KEY: &str = "sk-test-images-0123456789";

fn opts() -> HttpOptions {
    HttpOptions {
        web_search: None,
        idle_timeout: Duration::from_secs(5),
        max_retries: 0,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(1),
        max_event_bytes: 4 * 1024 * 1024,
        progress_timeout: pablo::model::http::DEFAULT_PROGRESS_TIMEOUT,
    }
}

fn openai_config(server: &ScriptedServer, model: &str) -> OpenAiConfig {
    OpenAiConfig {
        provider: "openai".into(),
        base_url: server.base_url(),
        model: model.into(),
        api_key: Some(ApiKey::new(KEY)),
        options: opts(),
        official: false,
        profile: ModelProfile::lookup(model),
    }
}

fn chat(server: &ScriptedServer, model: &str) -> Arc<dyn ModelClient> {
    Arc::new(OpenAiClient::new(openai_config(server, model)).unwrap())
}

/// What the model reads beside the image: the prompt and a line naming the file.
fn prompt_with_image_line(prompt: &str, path: &str, bytes: &[u8]) -> String {
    format!(
        "{prompt}\n\n<attached-image path=\"{path}\" type=\"image/png\" bytes=\"{}\"/>",
        bytes.len()
    )
}

/// Like [`turns`] for one prompt the agent refuses, and checks that the refusal wrote nothing:
/// the workspace holds exactly `files`, the state dir (journal, image store) nothing.
async fn refused_turn(
    model: Arc<dyn ModelClient>,
    files: &[(&str, &[u8])],
    prompt: &str,
) -> Vec<Event> {
    use crate::support::agent::files_under;
    let (workspace, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let setup = crate::support::agent::Turns {
        session_id: "images-session",
        system_prompt: "you look",
        files,
        workspace: Some(workspace.path()),
        state: Some(state.path()),
        ..Default::default()
    };
    let events = crate::support::agent::run(model, setup, &[prompt]).await;
    let mut expected: Vec<(std::path::PathBuf, Vec<u8>)> = files
        .iter()
        .map(|(name, bytes)| (workspace.path().join(name), bytes.to_vec()))
        .collect();
    expected.sort();
    assert!(
        files_under(workspace.path()) == expected,
        "the refusal changed the workspace"
    );
    let written: Vec<_> = files_under(state.path())
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert!(written.is_empty(), "the refusal wrote {written:?}");
    events
}

fn refusal(events: &[Event]) -> (String, String, String) {
    events
        .iter()
        .find_map(|e| match e {
            Event::TurnRefused {
                code,
                message,
                text,
            } => Some((code.clone(), message.clone(), text.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no refusal in {events:?}"))
}

mod wire {
    use super::*;

    #[tokio::test]
    async fn chat_completions_carries_the_image_as_an_image_url_part_with_a_data_url() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("A red dot.")));
        server.push(ScriptedResponse::sse(openai::text_answer("Still a dot.")));
        let prompt = "what is in @shot.png?";
        turns(
            chat(&server, "gpt-4o"),
            &[("shot.png", PNG_1X1)],
            &[prompt, "and now?"],
        )
        .await;
        let b = server.request_bodies();
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[0]["messages"][1],
            json!({"role": "user", "content": [
                {"type": "image_url",
                 "image_url": {"url": format!("data:image/png;base64,{}", b64(PNG_1X1))}},
                {"type": "text", "text": prompt_with_image_line(prompt, "shot.png", PNG_1X1)},
            ]})
        );
        // The next call sends the same message, byte for byte, and a text-only turn stays text.
        assert_eq!(
            b[1]["messages"][1].to_string(),
            b[0]["messages"][1].to_string()
        );
        assert_eq!(
            b[1]["messages"][3],
            json!({"role": "user", "content": "and now?"})
        );
    }

    #[tokio::test]
    async fn anthropic_carries_the_image_as_a_base64_image_block_before_the_text() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(anthropic::text_answer("A red dot.")));
        let client = AnthropicClient::new(AnthropicConfig {
            base_url: server.base_url(),
            model: "claude-sonnet-4-5".into(),
            api_key: ApiKey::new(KEY),
            options: opts(),
            profile: ModelProfile::lookup("claude-sonnet-4-5"),
        })
        .unwrap();
        let prompt = "what is in @shot.png?";
        turns(Arc::new(client), &[("shot.png", PNG_1X1)], &[prompt]).await;
        let b = server.request_bodies();
        assert_eq!(server.requests()[0].path, "/v1/messages");
        assert_eq!(
            without_markers(&b[0]["messages"][0]),
            json!({"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": b64(PNG_1X1)}},
                {"type": "text", "text": prompt_with_image_line(prompt, "shot.png", PNG_1X1)},
            ]})
        );
    }

    #[tokio::test]
    async fn responses_carries_the_image_as_an_input_image_with_a_data_url() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            responses::Stream::new()
                .text(&["A red dot."])
                .completed(100, 0, 4),
        ));
        let client = ResponsesClient::new(openai_config(&server, "gpt-5")).unwrap();
        let prompt = "what is in @shot.png?";
        turns(Arc::new(client), &[("shot.png", PNG_1X1)], &[prompt]).await;
        let b = server.request_bodies();
        assert_eq!(server.requests()[0].path, "/v1/responses");
        assert_eq!(
            b[0]["input"][0],
            json!({"type": "message", "role": "user", "content": [
                {"type": "input_image",
                 "image_url": format!("data:image/png;base64,{}", b64(PNG_1X1)),
                 "detail": "auto"},
                {"type": "input_text", "text": prompt_with_image_line(prompt, "shot.png", PNG_1X1)},
            ]})
        );
    }

    #[tokio::test]
    async fn an_image_is_known_by_its_bytes_not_its_name() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("A red dot.")));
        let prompt = "what is @capture?";
        let events = turns(chat(&server, "gpt-4o"), &[("capture", PNG_1X1)], &[prompt]).await;
        let content = &server.request_bodies()[0]["messages"][1]["content"];
        assert_eq!(content[0]["type"], "image_url", "{content}");
        let shown = events.iter().find_map(|e| match e {
            Event::Attachments { images, .. } => Some(images.clone()),
            _ => None,
        });
        let shown = shown.expect("an Attachments event");
        assert_eq!(shown[0].path, "capture");
        assert_eq!(shown[0].image.summary(), "PNG 1×1, 67 B");
    }
}

mod refusals {
    use super::*;

    #[tokio::test]
    async fn a_model_that_takes_no_images_refuses_the_turn_before_anything_is_sent() {
        let server = ScriptedServer::start().await;
        let prompt = "what is in @shot.png?";
        let events =
            refused_turn(chat(&server, "qwen3:8b"), &[("shot.png", PNG_1X1)], prompt).await;
        let (code, message, text) = refusal(&events);
        assert_eq!(code, "image_not_accepted_by_model");
        assert!(message.contains("@shot.png"), "{message}");
        assert!(
            message.contains("qwen3:8b") && message.contains("images = true"),
            "{message}"
        );
        assert_eq!(text, prompt, "the prompt comes back as written");
        assert!(server.requests().is_empty(), "nothing was sent");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::UserMessage { .. })),
            "no turn began: {events:?}"
        );
    }

    #[tokio::test]
    async fn a_file_named_png_that_is_not_an_image_is_refused() {
        let server = ScriptedServer::start().await;
        let prompt = "look at @shot.png";
        let events = refused_turn(
            chat(&server, "gpt-4o"),
            &[("shot.png", b"just some text, honest\n")],
            prompt,
        )
        .await;
        let (code, message, text) = refusal(&events);
        assert_eq!(code, "image_unrecognized");
        assert!(
            message.contains("@shot.png") && message.contains("not a PNG, JPEG, GIF or WebP"),
            "{message}"
        );
        assert_eq!(text, prompt);
        assert!(server.requests().is_empty());
    }

    #[tokio::test]
    async fn an_image_over_the_size_bound_is_refused_with_its_size() {
        let server = ScriptedServer::start().await;
        let mut big = PNG_1X1.to_vec();
        big.resize(pablo_agent::attach::MAX_IMAGE_BYTES + 1, 0);
        let prompt = "look at @big.png";
        let events = refused_turn(chat(&server, "gpt-4o"), &[("big.png", &big)], prompt).await;
        let (code, message, text) = refusal(&events);
        assert_eq!(code, "image_too_large");
        assert!(
            message.contains("@big.png") && message.contains(&big.len().to_string()),
            "{message}"
        );
        assert_eq!(text, prompt);
        assert!(server.requests().is_empty());
    }

    #[tokio::test]
    async fn after_a_refusal_the_next_turn_runs_as_usual() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("Hello.")));
        let events = turns(
            chat(&server, "qwen3:8b"),
            &[("shot.png", PNG_1X1)],
            &["see @shot.png", "just say hello"],
        )
        .await;
        assert_eq!(refusal(&events).0, "image_not_accepted_by_model");
        let b = server.request_bodies();
        assert_eq!(b.len(), 1);
        let messages = b[0]["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            2,
            "the refused prompt is not in the conversation"
        );
        assert_eq!(
            messages[1],
            json!({"role": "user", "content": "just say hello"})
        );
    }
}

/// Runs `texts` as user turns in a workspace holding `files`, through the real agent loop.
async fn turns(model: Arc<dyn ModelClient>, files: &[(&str, &[u8])], texts: &[&str]) -> Vec<Event> {
    let setup = crate::support::agent::Turns {
        session_id: "images-session",
        system_prompt: "you look",
        files,
        ..Default::default()
    };
    crate::support::agent::run(model, setup, texts).await
}
