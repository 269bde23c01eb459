//! The approval side of `web.fetch`: which hosts may be fetched without asking.
//!
//! A fetch asks by default, once per URL ("allow always" is not offered: approving one page is
//! not approving a site). It runs unasked only for a host under `[options.fetch]
//! allowed_domains`, where a domain covers its subdomains. The lists of the user's config and
//! `--config` count; the project's (it comes with the repository, so the model could have
//! written it) only once the person trusts the folder. An allowed host is still subject to every
//! address rule of the tool: this decides who is asked, never what may be reached.

use pablo_config::Layers;

/// The compiled list of allowed domains, with the layer each came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FetchPolicy {
    domains: Vec<(String, String)>,
    /// Notes for the person (an untrusted project's list that was ignored).
    pub(crate) warnings: Vec<String>,
}

impl FetchPolicy {
    /// The hosts of the layers; the project layer's only when `trust` lets it name endpoints.
    pub(crate) fn build(layers: &Layers, trust: pablo_config::Trust) -> Self {
        let mut out = Self::default();
        let mut add = |file: &std::path::Path, list: &[String]| {
            for d in list {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                out.domains.push((d, file.display().to_string()));
            }
        };
        if let Some((p, c)) = &layers.user {
            add(p, &c.options.fetch.allowed_domains);
        }
        if let Some((p, c)) = &layers.explicit {
            add(p, &c.options.fetch.allowed_domains);
        }
        if let Some((p, c)) = &layers.overrides {
            add(p, &c.options.fetch.allowed_domains);
        }
        if let Some((p, c)) = &layers.project
            && !c.options.fetch.allowed_domains.is_empty()
        {
            if trust.may_name_endpoints() {
                add(p, &c.options.fetch.allowed_domains);
            } else {
                out.warnings.push(format!(
                    "{}: options.fetch.allowed_domains is ignored until you trust this folder \
                     (pablo policy trust); fetches ask instead",
                    p.display()
                ));
            }
        }
        out
    }

    /// The allowed domain that covers `host`, with where it was configured.
    pub(crate) fn allowing(&self, host: &str) -> Option<(&str, &str)> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.domains
            .iter()
            .find(|(d, _)| covers(d, &host))
            .map(|(d, f)| (d.as_str(), f.as_str()))
    }
}

/// `docs.rs` covers `docs.rs` and `www.docs.rs`, not `evildocs.rs`.
pub(crate) fn covers(domain: &str, host: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_covers_itself_and_its_subdomains_only() {
        assert!(covers("docs.rs", "docs.rs"));
        assert!(covers("docs.rs", "www.docs.rs"));
        assert!(covers("docs.rs", "a.b.docs.rs"));
        assert!(!covers("docs.rs", "evildocs.rs"));
        assert!(!covers("docs.rs", "docs.rs.evil.com"));
        assert!(!covers("www.docs.rs", "docs.rs"));
    }
}
