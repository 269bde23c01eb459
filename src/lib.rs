//! pablo: a terminal coding agent.
//!
//! The engine (`agent`, `model`, `tools`, `workspace`, `policy`, `process`, `session`) never draws
//! and never prints; the front-ends (`tui`, `headless`, `acp`) speak only [`protocol`].

pub use pablo_acp as acp;
pub(crate) use pablo_agent as agent;
pub use pablo_config as config;
pub use pablo_core as core;
#[doc(hidden)]
pub mod harness;
pub use pablo_headless as headless;
pub(crate) use pablo_hooks as hooks;
pub use pablo_launch as launch;
pub use pablo_model as model;
pub use pablo_policy as policy;
pub use pablo_process as process;
pub use pablo_protocol as protocol;
pub use pablo_session as session;
pub use pablo_telemetry as telemetry;
pub(crate) use pablo_tools as tools;
pub use pablo_tui as tui;
pub use pablo_workspace as workspace;
