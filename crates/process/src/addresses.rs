//! Which IP addresses are not the public internet, in words, and which are a cloud's metadata
//! service: the rules `web.fetch` refuses by (`tools::fetch_rules`) and the sandbox's network
//! proxy refuses a listed name's addresses by ([`super::netproxy`]). They live here, below both,
//! so that there is one classifier to test and keep current.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The range that makes `addr` not public, in words; `None` for a public address.
pub fn refused_range(addr: IpAddr) -> Option<String> {
    match addr {
        IpAddr::V4(v4) => refused_v4(v4).map(str::to_string),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

/// IPv4 ranges that are not the public internet (IANA special-purpose registry).
pub fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_unspecified() => "the unspecified address (0.0.0.0)",
        (0, _, _) => "\"this network\" (0.0.0.0/8)",
        (127, _, _) => "loopback (127.0.0.0/8)",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (100, 64..=127, _) => "carrier-grade NAT (100.64.0.0/10)",
        (169, 254, _) => "link-local (169.254.0.0/16, where cloud metadata services live)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) => "documentation (192.0.2.0/24)",
        (198, 51, 100) => "documentation (198.51.100.0/24)",
        (203, 0, 113) => "documentation (203.0.113.0/24)",
        (192, 88, 99) => "the deprecated 6to4 relay anycast range (192.88.99.0/24)",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast (224.0.0.0/4)",
        _ if ip.is_broadcast() => "broadcast (255.255.255.255)",
        (240..=255, _, _) => "reserved (240.0.0.0/4)",
        _ => return None,
    })
}

/// IPv6 ranges that are not the public internet. Forms that carry an IPv4 address (mapped,
/// compatible, NAT64, 6to4, Teredo) are judged by the address they carry as well.
pub fn refused_v6(ip: Ipv6Addr) -> Option<String> {
    let s = ip.segments();
    let embedded = |v4: Ipv4Addr, form: &str| {
        refused_v4(v4).map(|r| format!("{form} form of {v4}, which is {r}"))
    };
    if ip.is_unspecified() {
        return Some("the unspecified address (::)".into());
    }
    if ip.is_loopback() {
        return Some("loopback (::1)".into());
    }
    // ::ffff:a.b.c.d — IPv4-mapped: the connection would go to a.b.c.d.
    if s[..6] == [0, 0, 0, 0, 0, 0xffff] {
        return embedded(v4_of(s[6], s[7]), "the IPv4-mapped (::ffff:0:0/96)");
    }
    // ::a.b.c.d — IPv4-compatible, deprecated; nothing public lives there.
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        let v4 = v4_of(s[6], s[7]);
        return Some(
            embedded(v4, "the IPv4-compatible (::/96)")
                .unwrap_or_else(|| format!("the deprecated IPv4-compatible form (::/96) of {v4}")),
        );
    }
    // 64:ff9b::a.b.c.d — the NAT64 well-known prefix: a translator connects to a.b.c.d.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return embedded(v4_of(s[6], s[7]), "the NAT64 (64:ff9b::/96)");
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Some("local-use NAT64 (64:ff9b:1::/48)".into());
    }
    // 2002:AABB:CCDD::/48 — 6to4: the packet is tunnelled to AA.BB.CC.DD.
    if s[0] == 0x2002 {
        return embedded(v4_of(s[1], s[2]), "the 6to4 (2002::/16)");
    }
    // 2001:0:SSSS:SSSS:…:CCCC:CCCC — Teredo: server address, then the client's inverted.
    if s[0] == 0x2001 && s[1] == 0 {
        let server = v4_of(s[2], s[3]);
        let client = v4_of(!s[6], !s[7]);
        return embedded(server, "the Teredo (2001::/32) server")
            .or_else(|| embedded(client, "the Teredo (2001::/32) client"));
    }
    let named = match s[0] {
        0x0100 if s[1..4] == [0, 0, 0] => Some("discard-only (100::/64)"),
        0x2001 if s[1] == 0x0db8 => Some("documentation (2001:db8::/32)"),
        0x2001 if s[1] == 2 && s[2] == 0 => Some("benchmarking (2001:2::/48)"),
        0x2001 if (0x10..=0x2f).contains(&s[1]) => Some("ORCHID (2001:10::/28, 2001:20::/28)"),
        0x2001 if s[1] < 0x200 => Some("IETF protocol assignments (2001::/23)"),
        0x3fff if s[1] < 0x1000 => Some("documentation (3fff::/20)"),
        0x5f00 => Some("segment routing (5f00::/16)"),
        x if x & 0xfe00 == 0xfc00 => Some("unique local, private (fc00::/7)"),
        x if x & 0xffc0 == 0xfe80 => Some("link-local (fe80::/10)"),
        x if x & 0xffc0 == 0xfec0 => Some("site-local, deprecated (fec0::/10)"),
        x if x & 0xff00 == 0xff00 => Some("multicast (ff00::/8)"),
        _ => None,
    };
    if let Some(n) = named {
        return Some(n.into());
    }
    // Only 2000::/3 is allocated as global unicast; everything else is reserved.
    if s[0] & 0xe000 != 0x2000 {
        return Some("reserved (outside the global unicast range 2000::/3)".into());
    }
    None
}

pub fn v4_of(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// Where cloud metadata services answer: the IPv4 link-local range (169.254.169.254 on AWS,
/// GCP and Azure), the IPv6 link-local range, and AWS's IPv6 endpoint `fd00:ec2::254`, also in
/// the IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4). The words when
/// `addr` is one of them; a sandboxed command never reaches them unless the address itself is
/// listed.
pub fn metadata_range(addr: IpAddr) -> Option<&'static str> {
    let link_local_v4 = |v4: Ipv4Addr| v4.octets()[..2] == [169, 254];
    match addr {
        IpAddr::V4(v4) if link_local_v4(v4) => {
            Some("link-local (169.254.0.0/16, where cloud metadata services live)")
        }
        IpAddr::V4(_) => None,
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embedded = match s {
                [0, 0, 0, 0, 0, 0xffff, hi, lo]
                | [0, 0, 0, 0, 0, 0, hi, lo]
                | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4_of(hi, lo)),
                [0x2002, hi, lo, ..] => Some(v4_of(hi, lo)),
                _ => None,
            };
            if embedded.is_some_and(link_local_v4) {
                Some("an IPv6 form of a link-local IPv4 address (169.254.0.0/16, cloud metadata)")
            } else if s[0] & 0xffc0 == 0xfe80 {
                Some("link-local (fe80::/10)")
            } else if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                Some("AWS's IPv6 metadata endpoint (fd00:ec2::254)")
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_addresses_are_known_in_every_spelling_and_nothing_else_is() {
        for a in [
            "169.254.169.254",
            "169.254.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "fe80::1",
            "fd00:ec2::254",
        ] {
            assert!(metadata_range(a.parse().unwrap()).is_some(), "{a}");
        }
        for a in [
            "127.0.0.1",
            "10.0.0.1",
            "1.1.1.1",
            "::1",
            "fd00::1",
            "2001:db8::1",
        ] {
            assert!(metadata_range(a.parse().unwrap()).is_none(), "{a}");
        }
    }
}
