//! web.fetch against a scripted HTTP server on 127.0.0.1, reached only through the test-only
//! `Reach::PublicAndTestLoopback` constructor argument; and the real tool (`WebFetch::new`, as
//! every session builds it), which refuses this machine's addresses before connecting. (The run
//! of the binary with a name mapped to loopback is in `tests/catalog/fetch.rs`.)

use std::sync::atomic::Ordering;
use std::time::Duration;

use pablo::config::{ConfigFile, Dirs, Layers};
use pablo::core::ToolKind;
use pablo::policy::{CliFlags, PolicyEngine};
use pablo::protocol::Decision;
use pablo_tools::fetch_rules::Reach;
use pablo_tools::web_fetch::{FetchSettings, NetworkBudget, UNTRUSTED_NOTICE, WebFetch};
use serde_json::json;

use super::catalog::*;
use crate::support::http::counting_listener;
use crate::support::http::{ScriptedResponse, ScriptedServer};

/// The tool under test, allowed to reach the scripted server on 127.0.0.1:`port`.
fn test_fetch(port: u16, adjust: impl FnOnce(&mut FetchSettings)) -> Fixture {
    let mut settings = FetchSettings {
        allowed_ports: vec![port],
        ..FetchSettings::default()
    };
    adjust(&mut settings);
    Fixture::new(|c, _| {
        c.register(Arc::new(WebFetch::with_reach(
            settings,
            Reach::PublicAndTestLoopback,
        )))
        .unwrap()
    })
}

fn html(body: &str) -> ScriptedResponse {
    ScriptedResponse::new(200)
        .header("content-type", "text/html; charset=utf-8")
        .body(body.to_string())
}

fn redirect(status: u16, location: &str) -> ScriptedResponse {
    ScriptedResponse::new(status).header("location", location)
}

#[tokio::test]
async fn an_html_page_comes_back_as_readable_text_with_the_untrusted_notice() {
    let server = ScriptedServer::start().await;
    server.push(html(
        "<html><head><title>Docs</title><script>steal()</script><style>p{}</style></head>\
         <body><nav>Home | About</nav><main><h1>Install</h1><p>Run the <b>installer</b>.</p>\
         <ul><li>fast</li><li>safe</li></ul><iframe>ad</iframe></main><footer>(c)</footer></body></html>",
    ));
    let f = test_fetch(server.addr().port(), |_| {});
    let url = format!("{}/docs?x=1#part", server.url());
    let out = f.call("web.fetch", json!({"url": url})).await.unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["format"], "html");
    assert_eq!(out["title"], "Docs");
    assert_eq!(out["main_content"], true);
    assert_eq!(
        out["text"],
        "# Install\n\nRun the installer.\n\n- fast\n- safe"
    );
    assert_eq!(out["notice"], UNTRUSTED_NOTICE);
    assert_eq!(out["truncated"], false);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "GET");
    // The fragment never leaves the machine.
    assert_eq!(reqs[0].path, "/docs?x=1");
}

#[tokio::test]
async fn json_xml_and_text_come_back_as_they_are() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::json(200, &json!({"a": [1, 2]})));
    server.push(
        ScriptedResponse::new(200)
            .header("content-type", "application/xml")
            .body("<r><x>1</x></r>"),
    );
    server.push(
        ScriptedResponse::new(404)
            .header("content-type", "text/plain")
            .body("  not here\n"),
    );
    let f = test_fetch(server.addr().port(), |_| {});
    let base = server.url();
    let j = f
        .call("web.fetch", json!({"url": format!("{base}/j")}))
        .await
        .unwrap();
    assert_eq!(
        (j["format"].as_str(), j["text"].as_str()),
        (Some("json"), Some(r#"{"a":[1,2]}"#))
    );
    let x = f
        .call("web.fetch", json!({"url": format!("{base}/x")}))
        .await
        .unwrap();
    assert_eq!(x["text"], "<r><x>1</x></r>");
    let t = f
        .call("web.fetch", json!({"url": format!("{base}/t")}))
        .await
        .unwrap();
    assert_eq!(
        (t["status"].as_u64(), t["text"].as_str()),
        (Some(404), Some("  not here\n"))
    );
}

#[tokio::test]
async fn content_that_is_not_text_is_refused() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::new(200)
            .header("content-type", "image/png")
            .body(vec![0x89, b'P', b'N', b'G', 0, 0]),
    );
    let f = test_fetch(server.addr().port(), |_| {});
    let e = f
        .call("web.fetch", json!({"url": server.url()}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "unsupported_content");
    assert!(e.message.contains("image/png"), "{}", e.message);
}

#[tokio::test]
async fn a_same_host_redirect_is_followed_and_both_requests_are_counted() {
    let server = ScriptedServer::start().await;
    server.push(redirect(302, "/moved"));
    server.push(html("<p>arrived</p>"));
    let f = test_fetch(server.addr().port(), |_| {});
    let out = f
        .call(
            "web.fetch",
            json!({"url": format!("{}/start", server.url())}),
        )
        .await
        .unwrap();
    assert_eq!(out["text"], "arrived");
    assert_eq!(out["url"], format!("{}/moved", server.url()));
    assert_eq!(
        out["redirected_from"],
        json!([format!("{}/start", server.url())])
    );
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/start", "/moved"]);
    assert_eq!(f.host.network.used(), 2);
}

#[tokio::test]
async fn a_redirect_to_another_host_is_reported_with_its_url_and_not_followed() {
    let server = ScriptedServer::start().await;
    let elsewhere = format!("http://127.0.0.2:{}/other", server.addr().port());
    server.push(redirect(301, &elsewhere));
    let f = test_fetch(server.addr().port(), |_| {});
    let e = f
        .call("web.fetch", json!({"url": server.url()}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "redirect_to_other_host");
    assert_eq!(e.data.unwrap()["location"], elsewhere);
    assert!(
        e.message.contains("call fetch_url with that URL"),
        "{}",
        e.message
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn five_redirects_are_followed_and_a_sixth_is_refused() {
    let server = ScriptedServer::start().await;
    for i in 1..=5 {
        server.push(redirect(307, &format!("/r{i}")));
    }
    server.push(html("<p>five hops</p>"));
    let f = test_fetch(server.addr().port(), |_| {});
    let out = f
        .call("web.fetch", json!({"url": server.url()}))
        .await
        .unwrap();
    assert_eq!(out["text"], "five hops");
    assert_eq!(out["redirected_from"].as_array().unwrap().len(), 5);

    let server = ScriptedServer::start().await;
    for i in 1..=6 {
        server.push(redirect(302, &format!("/r{i}")));
    }
    server.push(html("<p>never</p>"));
    let f = test_fetch(server.addr().port(), |_| {});
    let e = f
        .call("web.fetch", json!({"url": server.url()}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "too_many_redirects");
    assert!(e.message.contains("/r6"), "{}", e.message);
    assert_eq!(server.requests().len(), 6);
}

#[tokio::test]
async fn a_body_over_two_mebibytes_is_cut_with_a_note() {
    let server = ScriptedServer::start().await;
    let body = "a".repeat(3 * 1024 * 1024);
    server.push(
        ScriptedResponse::new(200)
            .header("content-type", "text/plain")
            .body(body),
    );
    let f = test_fetch(server.addr().port(), |_| {});
    let out = f
        .call("web.fetch", json!({"url": server.url()}))
        .await
        .unwrap();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["bytes"], 2 * 1024 * 1024);
    assert_eq!(out["text"].as_str().unwrap().len(), 2 * 1024 * 1024);
    assert!(out["note"].as_str().unwrap().contains("2097152 bytes"));
}

#[tokio::test]
async fn a_server_that_stops_sending_hits_the_total_time_limit() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::new(200)
            .header("content-type", "text/plain")
            .body("first part")
            .body("never sent")
            .hang_after(1),
    );
    let f = test_fetch(server.addr().port(), |s| {
        s.total_timeout = Duration::from_millis(500)
    });
    let e = f
        .call("web.fetch", json!({"url": server.url()}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "fetch_timeout");
    assert!(e.message.contains(&server.url()), "{}", e.message);
}

#[tokio::test]
async fn every_request_and_redirect_counts_against_the_budget() {
    let server = ScriptedServer::start().await;
    server.push(redirect(302, "/b"));
    server.push(html("<p>one</p>"));
    server.push(html("<p>two</p>"));
    server.push(redirect(302, "/d"));
    server.push(html("<p>never reached</p>"));
    let port = server.addr().port();
    let f = Fixture::with_host(
        |c, _| {
            c.register(Arc::new(WebFetch::with_reach(
                FetchSettings {
                    allowed_ports: vec![port],
                    ..FetchSettings::default()
                },
                Reach::PublicAndTestLoopback,
            )))
            .unwrap()
        },
        |h| h.network = NetworkBudget::new(4),
    );
    let url = server.url();
    // A redirect and its target: two requests.
    f.call("web.fetch", json!({"url": format!("{url}/a")}))
        .await
        .unwrap();
    f.call("web.fetch", json!({"url": format!("{url}/c")}))
        .await
        .unwrap();
    assert_eq!(f.host.network.used(), 3);
    // The fourth request is a redirect; following it would be the fifth.
    let e = f
        .call("web.fetch", json!({"url": format!("{url}/c2")}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "network_budget_exhausted");
    assert!(e.message.contains("max_network_requests"), "{}", e.message);
    // Nothing is left, so the next call is refused at preview, before anyone is asked.
    let e = f
        .preview("web.fetch", json!({"url": format!("{url}/e")}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "network_budget_exhausted");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn the_real_tool_refuses_this_machine_and_the_metadata_address_before_connecting() {
    let (port, connections) = counting_listener().await;
    let f = Fixture::new(|c, _| {
        c.register(Arc::new(WebFetch::new(FetchSettings {
            allowed_ports: vec![port, 80],
            ..FetchSettings::default()
        })))
        .unwrap()
    });
    let cases = [
        (
            format!("http://127.0.0.1:{port}/"),
            "address_refused",
            "loopback",
        ),
        (
            format!("http://[::1]:{port}/"),
            "address_refused",
            "loopback",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "address_refused",
            "IPv4-mapped",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "address_refused",
            "link-local",
        ),
        (
            format!("http://0x7f.1:{port}/"),
            "address_refused",
            "loopback",
        ),
        (
            format!("http://2130706433:{port}/"),
            "address_refused",
            "loopback",
        ),
        (
            format!("http://localhost:{port}/"),
            "host_refused",
            "localhost",
        ),
    ];
    for (url, code, word) in &cases {
        let e = f
            .preview("web.fetch", json!({"url": url}))
            .await
            .unwrap_err();
        assert_eq!(&e.code, code, "{url}: {}", e.message);
        assert!(e.message.contains(word), "{url}: {}", e.message);
        // As if the person had approved it anyway: the commit applies the rules again.
        let forged = Preview::Fetch {
            url: url.clone(),
            host: "forged".into(),
        };
        let e = f
            .tool("web.fetch")
            .commit(&json!({"url": url}), &forged, &f.ctx("call-2"))
            .await
            .unwrap_err();
        assert_eq!(&e.code, code, "{url}: {}", e.message);
    }
    assert_eq!(connections.load(Ordering::SeqCst), 0);
    assert_eq!(f.host.network.used(), 0);
}

#[tokio::test]
async fn urls_with_other_schemes_credentials_or_ports_are_refused() {
    let f = Fixture::new(|c, _| {
        c.register(Arc::new(WebFetch::new(FetchSettings::default())))
            .unwrap()
    });
    for (url, code) in [
        ("ftp://example.com/f", "scheme_refused"),
        ("file:///etc/passwd", "scheme_refused"),
        ("https://user:secret@example.com/", "userinfo_refused"),
        ("https://example.com:8443/", "port_refused"),
        ("not a url", "invalid_url"),
    ] {
        let e = f
            .preview("web.fetch", json!({"url": url}))
            .await
            .unwrap_err();
        assert_eq!(e.code, code, "{url}");
    }
    let p = f
        .preview("web.fetch", json!({"url": "https://Example.COM./a#x"}))
        .await
        .unwrap();
    assert_eq!(
        p,
        Preview::Fetch {
            url: "https://example.com/a".into(),
            host: "example.com".into()
        }
    );
}

fn engine(toml: &str, project: Option<&str>) -> PolicyEngine {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let dirs = Dirs {
        config: dir.path().join("config"),
        data: dir.path().join("data"),
        state: dir.path().join("state"),
    };
    let layers = Layers {
        user: Some((
            dir.path().join("config.toml"),
            ConfigFile::parse(toml, std::path::Path::new("config.toml")).unwrap(),
        )),
        project: project.map(|t| {
            (
                ws.join(".pablo/config.toml"),
                ConfigFile::parse(t, std::path::Path::new("p.toml")).unwrap(),
            )
        }),
        explicit: None,
        ..Default::default()
    };
    PolicyEngine::build(
        &ws,
        &dirs,
        &layers,
        pablo::config::Trust::UNTRUSTED,
        None,
        CliFlags::default(),
    )
    .unwrap()
}

fn fetch_verdict(e: &PolicyEngine, url: &str, host: &str) -> pablo::protocol::Verdict {
    let mut p = Preview::Fetch {
        url: url.into(),
        host: host.into(),
    };
    e.decide("web.fetch", ToolKind::Fetch, &mut p)
}

#[test]
fn fetch_asks_per_url_unless_the_host_is_under_an_allowed_domain() {
    let e = engine("[options.fetch]\nallowed_domains = [\"docs.rs\"]\n", None);
    let v = fetch_verdict(&e, "https://docs.rs/serde", "docs.rs");
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    let v = fetch_verdict(&e, "https://www.docs.rs/x", "www.docs.rs");
    assert_eq!(v.decision, Decision::Allow);
    let v = fetch_verdict(&e, "https://evildocs.rs/", "evildocs.rs");
    assert_eq!(v.decision, Decision::Ask);
    assert!(v.reasons[0].contains("https://evildocs.rs/"), "{v:?}");
    // Approving one URL is not approving a site: no "allow always" is offered or saved.
    assert_eq!(v.always_rule, None);
    let p = Preview::Fetch {
        url: "https://evildocs.rs/".into(),
        host: "evildocs.rs".into(),
    };
    assert!(e.remember("web.fetch", &p).unwrap().is_empty());
    assert_eq!(
        fetch_verdict(&e, "https://evildocs.rs/", "evildocs.rs").decision,
        Decision::Ask
    );
}

#[test]
fn fetch_set_to_ask_asks_even_for_allowed_domains_and_deny_denies() {
    let e = engine(
        "[options.fetch]\nallowed_domains = [\"docs.rs\"]\n[options.tools]\n\"web.fetch\" = \"ask\"\n",
        None,
    );
    assert_eq!(
        fetch_verdict(&e, "https://docs.rs/", "docs.rs").decision,
        Decision::Ask
    );
    let e = engine(
        "[options.fetch]\nallowed_domains = [\"docs.rs\"]\n[options.tools]\n\"web.fetch\" = \"deny\"\n",
        None,
    );
    assert_eq!(
        fetch_verdict(&e, "https://docs.rs/", "docs.rs").decision,
        Decision::Deny
    );
}

#[test]
fn an_untrusted_project_cannot_allow_domains() {
    let e = engine(
        "",
        Some("[options.fetch]\nallowed_domains = [\"evil.example\"]\n"),
    );
    assert_eq!(
        fetch_verdict(&e, "https://evil.example/", "evil.example").decision,
        Decision::Ask
    );
    assert!(
        e.warnings()
            .iter()
            .any(|w| w.contains("allowed_domains is ignored")),
        "{:?}",
        e.warnings()
    );
}
