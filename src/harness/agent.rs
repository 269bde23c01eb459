//! The in-process agent the agent benches share (`benches/support`); see [`super`].
