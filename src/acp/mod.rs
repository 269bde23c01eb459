//! The editor front-end: pablo as an Agent Client Protocol agent on stdio.
