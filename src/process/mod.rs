//! Spawning commands in their own process group, bounded capture, PTYs, background sessions.
