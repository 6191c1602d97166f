//! What each registry type writes as a package identifier and a
//! version: a runtime never reads one as an option (none starts with `-`),
//! and nothing outside the characters the registry type itself allows.

/// An npm package name: `[@scope/]name`, lower case letters, digits, `-`,
/// `.`, `_`, `~`, each part starting with a letter or a digit; at most 214.
pub(super) fn npm_name(id: &str) -> bool {
    let part = |part: &str| {
        part.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && part.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_' | '~')
            })
    };
    let whole = match id.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(s, n)| part(s) && part(n)),
        None => part(id),
    };
    id.len() <= 214 && whole
}

/// A PyPI project name (PEP 508): letters, digits, `.`, `_`, `-`, starting
/// and ending with a letter or a digit.
pub(super) fn pypi_name(id: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    id.len() <= 200
        && edge(id.chars().next())
        && edge(id.chars().last())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A NuGet package id: letters, digits, `_`, with `.` or `-` between them.
pub(super) fn nuget_id(id: &str) -> bool {
    id.len() <= 100 && pypi_name(id)
}

/// An OCI image reference (`[host[:port]/]path[:tag][@digest]`): starting
/// with a letter or a digit, of the characters references have.
pub(super) fn oci_reference(id: &str) -> bool {
    id.len() <= 255
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@'))
        && !id.contains("..")
        && !id.contains("//")
}

/// Whether an OCI reference already names a tag (a `:` after the last `/`).
pub(super) fn has_tag(id: &str) -> bool {
    id.rsplit('/').next().is_some_and(|last| last.contains(':'))
}

/// A version as its registry type writes one: starting with a letter or
/// a digit, then letters, digits and `.`, `+`, `-`, `_` (and `!` for
/// PyPI's epochs); a container tag at most 128 characters.
pub(super) fn valid_version(kind: &str, version: &str) -> bool {
    let limit = if kind == "oci" { 128 } else { 64 };
    version.len() <= limit
        && version
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && version.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | '+' | '-' | '_')
                || (c == '!' && kind == "pypi")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_a_runtime_could_read_as_an_option_are_refused() {
        for bad in ["--call=sh", "-y", "", "@scope", "@/x", "A", "x y", "x;y"] {
            assert!(!npm_name(bad), "{bad}");
        }
        assert!(npm_name("@acme/files") && npm_name("cowsay") && npm_name("a.b-c_d~e"));
        for bad in ["--from=git+https://x", "-x", "x-", "a b", "é"] {
            assert!(!pypi_name(bad), "{bad}");
        }
        assert!(pypi_name("acme-files") && pypi_name("Acme.Files"));
        for bad in ["--privileged", "-v", "a b", "x/../y", "a//b", ""] {
            assert!(!oci_reference(bad), "{bad}");
        }
        assert!(oci_reference("ghcr.io:5000/acme/files:1.2@sha256:00"));
        for bad in ["-1", "--yes", "1 2", "1;2", ""] {
            assert!(!valid_version("npm", bad), "{bad}");
        }
        assert!(valid_version("npm", "1.2.0-rc.1+build") && valid_version("pypi", "1!2.0"));
    }
}
