//! `pablo run`: the headless front-end (readable progress or `--json` lines).
