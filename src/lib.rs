//! pablo: a terminal coding agent.
//!
//! The library the binary (`main.rs`, `cmd/`) is built on: the workspace's crates under their
//! module names. The engine (`pablo-agent` and the crates beneath it) never draws and never
//! prints; the front-ends (`tui`, `headless`, `acp`) speak only [`protocol`], and are handed an
//! engine by [`launch`].

pub use pablo_acp as acp;
pub use pablo_config as config;
pub use pablo_core as core;
pub use pablo_headless as headless;
pub use pablo_launch as launch;
pub use pablo_model as model;
pub use pablo_policy as policy;
pub use pablo_process as process;
pub use pablo_protocol as protocol;
pub use pablo_session as session;
pub use pablo_telemetry as telemetry;
pub use pablo_tui as tui;
pub use pablo_workspace as workspace;
