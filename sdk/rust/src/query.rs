//! Query strings: finding a parameter and decoding it without failing.
//!
//! The same rules as the C SDK's `sluice_query` (and, but for malformed
//! escapes, the Go SDK's `QueryValue`): parameters are separated by `&`;
//! a name is compared after decoding; the first match wins; a parameter
//! without `=` has the empty value. Decoding turns `+` into a space and
//! `%XX` into its byte; a `%` not followed by two hex digits (`%zz`, a
//! trailing `%`) is kept as it is, so a malformed query never panics or
//! traps. Decoded bytes that are not UTF-8 become U+FFFD.

/// Decodes a query component: `+` is a space, `%XX` a byte, and a `%`
/// without two hex digits after it stays literal.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    if !b.iter().any(|&c| c == b'%' || c == b'+') {
        return s.to_string();
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'+' {
            out.push(b' ');
        } else if c == b'%' && i + 2 < b.len() {
            match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi << 4 | lo);
                    i += 2;
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The first value of parameter `name` in a raw query (`"a=1&b=x%20y"`,
/// without the `?`), decoded; `None` when it is absent.
pub fn value(raw_query: &str, name: &str) -> Option<String> {
    let mut rest = raw_query;
    while !rest.is_empty() {
        let kv = match rest.find('&') {
            Some(i) => {
                let kv = &rest[..i];
                rest = &rest[i + 1..];
                kv
            }
            None => std::mem::take(&mut rest),
        };
        let (k, v) = match kv.find('=') {
            Some(i) => (&kv[..i], &kv[i + 1..]),
            None => (kv, ""),
        };
        if k == name || unescape(k) == name {
            return Some(unescape(v));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_decodes() {
        for (q, name, want) in [
            ("a=1&b=2", "b", "2"),
            ("a=x%20y", "a", "x y"),
            ("a+b=c", "a b", "c"),
            ("k", "k", ""),
            ("k=", "k", ""),
            ("a=1&a=2", "a", "1"),
            ("x=%E2%82%AC", "x", "\u{20ac}"),
            ("%61=decoded-name", "a", "decoded-name"),
            ("&&a=1&", "a", "1"),
            ("a=b=c", "a", "b=c"),
        ] {
            assert_eq!(value(q, name).as_deref(), Some(want), "value({:?}, {:?})", q, name);
        }
    }

    #[test]
    fn absent() {
        for (q, name) in [("a=1", "b"), ("", "a"), ("", ""), ("a=1&", ""), ("ab=1", "a"), ("a%zz=1", "a")] {
            assert_eq!(value(q, name), None, "value({:?}, {:?})", q, name);
        }
    }

    #[test]
    fn malformed_escapes_are_kept() {
        for (q, want) in [
            ("debug=%zz", "%zz"),
            ("debug=%", "%"),
            ("debug=%4", "%4"),
            ("debug=100%", "100%"),
            ("debug=%zz+x%41", "%zz xA"),
            ("debug=%%41", "%A"),
        ] {
            assert_eq!(value(q, "debug").as_deref(), Some(want), "value({:?})", q);
        }
        assert_eq!(value("%zz=1", "%zz").as_deref(), Some("1"));
        // Bytes that are not UTF-8 become U+FFFD, never a panic.
        assert_eq!(value("b=%ff%fe", "b").as_deref(), Some("\u{fffd}\u{fffd}"));
        assert_eq!(unescape("%c3%a9"), "\u{e9}");
    }
}
