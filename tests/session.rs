//! Integration tests: the `pablo` binary's session commands (`sessions`, `run --resume`), and
//! `pablo run` killed and resumed. The library-level journal, listing and resume tests are in
//! `src/tests/session.rs`.

use std::path::Path;
use std::time::Duration;

use pablo::model::Message;
use pablo::protocol::{Event, PlanItem, PlanStatus};
use pablo::session::{self, Header, Store, WarningKind};

use crate::support::journal::{assert_paired, sample_events};

fn file_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// `pablo run` killed and resumed, against the scripted server.
mod run;

/// The `pablo` binary's session commands, in a sandbox of their own.
mod cli {
    use super::*;
    use crate::support::bin::{Sandbox, json_lines};

    fn sandbox_store(sb: &Sandbox) -> Store {
        Store::at(sb.data_dir().join("sessions"))
    }

    fn journal_in(store: &Store, ws: &Path, events: &[Event]) -> String {
        use pablo::core::EventRecorder;
        let id = session::new_session_id();
        let mut j = store
            .create(&Header::new(
                &id,
                ws.canonicalize().unwrap().to_string_lossy(),
                "test-model",
                "openai",
            ))
            .unwrap();
        for e in events {
            j.record(e).unwrap();
        }
        j.sync().unwrap();
        id
    }

    fn plan_event() -> Event {
        Event::PlanUpdate {
            explanation: None,
            items: ["a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(i, c)| PlanItem {
                    content: c.to_string(),
                    status: if i == 0 {
                        PlanStatus::Completed
                    } else {
                        PlanStatus::Pending
                    },
                })
                .collect(),
        }
    }

    #[tokio::test]
    async fn sessions_command_lists_newest_first_with_title_turns_and_progress() {
        let sb = Sandbox::new();
        let store = sandbox_store(&sb);
        let older = journal_in(&store, &sb.workspace(), &sample_events());
        std::thread::sleep(Duration::from_millis(5));
        let mut events = vec![Event::UserMessage {
            text: "  \n  refactor the parser\nsecond line".into(),
        }];
        events.push(plan_event());
        events.extend(sample_events()[2..].iter().cloned());
        let newer = journal_in(&store, &sb.workspace(), &events);

        let out = sb
            .command()
            .args(["sessions", "--json"])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = json_lines(&out.stdout);
        let ids: Vec<_> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
        assert_eq!(ids, [newer.as_str(), older.as_str()]);
        assert_eq!(lines[0]["title"], "refactor the parser");
        assert_eq!(lines[0]["turns"], 1);
        assert_eq!(lines[0]["plan_completed"], 1);
        assert_eq!(lines[0]["plan_total"], 3);
        assert_eq!(
            lines[0]["workspace"],
            sb.workspace()
                .canonicalize()
                .unwrap()
                .to_string_lossy()
                .as_ref()
        );

        let out = sb.command().arg("sessions").output().await.unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let row = text.lines().find(|l| l.starts_with(&newer)).unwrap();
        assert!(
            row.contains("1/3") && row.contains("refactor the parser"),
            "{row}"
        );
    }

    #[tokio::test]
    async fn resuming_an_unknown_session_is_refused_and_nothing_is_written() {
        let sb = Sandbox::new();
        let out = sb
            .command()
            .args(["run", "--resume", "0000dead", "go on"])
            .output()
            .await
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no session \"0000dead\""), "{err}");
        assert!(!sb.data_dir().join("sessions").exists());

        let out = sb
            .command()
            .args(["run", "--resume", "../../etc", "go on"])
            .output()
            .await
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is not a session id"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        let out = sb
            .command()
            .args(["resume", "--last"])
            .output()
            .await
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("no session was found for workspace"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[tokio::test]
    async fn resuming_from_another_directory_says_which_workspace_is_used() {
        let sb = Sandbox::new();
        let original = sb.root().join("original");
        std::fs::create_dir(&original).unwrap();
        let id = journal_in(&sandbox_store(&sb), &original, &sample_events());
        let journal = sandbox_store(&sb).dir().join(format!("{id}.jsonl"));
        let before = file_bytes(&journal);
        let out = sb
            .command()
            .args(["run", "--resume", &id[..30], "go on"])
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let original = original.canonicalize().unwrap();
        assert!(
            err.contains(&format!(
                "worked in {}, not in the current directory",
                original.display()
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("continuing it in {}", original.display())),
            "{err}"
        );
        // Without a model to talk to (no key in the sandbox), the journal is left as it was.
        if !out.status.success() {
            assert_eq!(file_bytes(&journal), before);
        }
    }
}
