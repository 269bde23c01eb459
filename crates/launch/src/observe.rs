//! What a launch traces and exports (docs/observability.md): the native trace (`PABLO_LOG`,
//! `PABLO_LOG_FILE`, content capture) and OpenTelemetry, settled from the config layers and the
//! environment. The `OTEL_*` variables sit above the config files and below the person's
//! `PABLO_`/`-c` settings, like every other variable.

use std::path::PathBuf;

use super::{Launch, LaunchOptions};
use pablo_config::{ConfigFile, OtelConfig, OtelProtocol};
use pablo_telemetry::Settings;
use pablo_telemetry::otel::{OtelRequest, Protocol};

impl Launch {
    /// The telemetry this launch asks for, and notes on settings that were ignored.
    pub fn telemetry_settings(&self) -> (Settings, Vec<String>) {
        let files = [
            &self.layers.user,
            &self.layers.project,
            &self.layers.explicit,
        ];
        let files: Vec<&ConfigFile> = files.into_iter().flatten().map(|(_, c)| c).collect();
        let overrides = self.layers.overrides.as_ref().map(|(_, c)| c);
        settings(&files, overrides, self.dirs.state.join("pablo.log"))
    }
}

/// The telemetry of `options` for a front-end that launches sessions later (ACP): the layers of
/// the current directory, or the environment alone when they cannot be read.
pub fn telemetry_settings(options: &LaunchOptions) -> (Settings, Vec<String>) {
    match Launch::prepare(options.clone()) {
        Ok(launch) => launch.telemetry_settings(),
        Err(_) => {
            let state = pablo_config::Dirs::discover()
                .map(|d| d.state)
                .unwrap_or_else(|_| PathBuf::from("."));
            settings(&[], None, state.join("pablo.log"))
        }
    }
}

fn settings(
    files: &[&ConfigFile],
    overrides: Option<&ConfigFile>,
    default_log: PathBuf,
) -> (Settings, Vec<String>) {
    let var = pablo_core::secrets::var;
    let mut notes = Vec::new();
    let content_config = files
        .iter()
        .copied()
        .chain(overrides)
        .filter_map(|c| c.trace.content)
        .next_back();
    let content = match var("PABLO_LOG_CONTENT") {
        Some(v) => matches!(v.trim(), "1" | "true" | "yes" | "on"),
        None => content_config == Some(true),
    };
    let mut request = OtelRequest::default();
    for c in files {
        request = request.over(from_config(&c.otel));
    }
    let (from_env, env_notes) = OtelRequest::from_env(var);
    notes.extend(env_notes);
    request = request.over(from_env);
    if let Some(c) = overrides {
        request = request.over(from_config(&c.otel));
    }
    let otel = request.resolve().unwrap_or_else(|m| {
        notes.push(format!("OpenTelemetry export is off: {m}"));
        None
    });
    let settings = Settings {
        log_level: std::env::var("PABLO_LOG").ok(),
        log_file: std::env::var_os("PABLO_LOG_FILE")
            .map(PathBuf::from)
            .unwrap_or(default_log),
        content,
        otel,
    };
    (settings, notes)
}

fn from_config(c: &OtelConfig) -> OtelRequest {
    OtelRequest {
        enabled: c.enabled,
        endpoint: c.endpoint.clone(),
        traces_endpoint: c.traces_endpoint.clone(),
        metrics_endpoint: c.metrics_endpoint.clone(),
        protocol: c.protocol.map(|p| match p {
            OtelProtocol::HttpProtobuf => Protocol::HttpProtobuf,
            OtelProtocol::Grpc => Protocol::Grpc,
        }),
        headers: c.headers.clone(),
        timeout_ms: c.timeout_ms,
        traces: c.traces,
        metrics: c.metrics,
        service_name: c.service_name.clone(),
        resource: Vec::new(),
        metric_interval_ms: c.metric_interval_ms,
    }
}

impl Launch {
    /// The settings in effect for `pablo config show`: the layers, then the flags given.
    pub fn config_view(&self) -> Vec<pablo_config::show::Shown> {
        let o = &self.options;
        let mut flags: Vec<(String, toml::Value, String)> = Vec::new();
        let mut flag = |key: &str, value: toml::Value, name: &str| {
            flags.push((key.to_string(), value, name.to_string()));
        };
        if let Some(p) = &o.provider {
            flag("provider", toml::Value::String(p.clone()), "--provider");
        }
        if let Some(m) = &o.model {
            flag("model", toml::Value::String(m.clone()), "--model");
        }
        if let Some(u) = &o.base_url {
            flag("base_url", toml::Value::String(u.clone()), "--base-url");
        }
        if let Some(r) = o.reasoning {
            flag(
                "model.reasoning",
                toml::Value::String(r.name().into()),
                "--reasoning",
            );
        }
        for (key, value, name) in [
            (
                "limits.max_model_calls",
                o.max_model_calls,
                "--max-model-calls",
            ),
            (
                "limits.max_tool_calls",
                o.max_tool_calls,
                "--max-tool-calls",
            ),
        ] {
            if let Some(n) = value {
                flag(
                    key,
                    toml::Value::Integer(n.min(i64::MAX as u64) as i64),
                    name,
                );
            }
        }
        if let Some(usd) = o.max_budget_usd {
            flag(
                "limits.max_budget_usd",
                toml::Value::Float(usd),
                "--max-budget-usd",
            );
        }
        if let Some(m) = o.mode {
            flag("tui.mode", toml::Value::String(m.name().into()), "--mode");
        }
        pablo_config::show::shown(&self.layers, &flags)
    }
}
