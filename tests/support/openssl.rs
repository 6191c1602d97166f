//! Certificates made by the `openssl` command, as most how-tos make them:
//! a CA, a server certificate for 127.0.0.1 (v3: it needs its address)
//! and a client certificate signed with `openssl x509 -req` and no
//! extensions (X.509 v1). Missing `openssl` fails the test: CI installs it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `openssl` with `args` in `dir`; panics (never skips) when it is
/// missing or fails.
pub fn openssl(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is installed (CI: apt-get install openssl)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A fresh directory `name` holding `ca.pem`/`ca.key`,
/// `server.pem`/`server.key` and `client.pem`/`client.key`, all P-256.
pub fn certificates(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-connect-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem"],
    ];
    openssl(
        &dir,
        &[&ca.concat()[..], &["-subj", "/CN=test-ca", "-days", "2"]].concat(),
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    for (name, extra) in [
        ("server", &["-extfile", "san.ext"][..]),
        ("client", &[][..]),
    ] {
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let subject = format!("/CN={name}");
        openssl(
            &dir,
            &[
                &["req"][..],
                &ec,
                &["-keyout", &key, "-out", &csr, "-subj", &subject],
            ]
            .concat(),
        );
        let sign = [
            "x509", "-req", "-in", &csr, "-CA", "ca.pem", "-CAkey", "ca.key",
        ];
        let rest = ["-CAcreateserial", "-out", &pem, "-days", "2"];
        openssl(&dir, &[&sign[..], &rest, extra].concat());
    }
    dir
}
