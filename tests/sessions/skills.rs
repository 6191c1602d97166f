//! Issue 30, item 4: the Skills extension (SEP-2640) against a scripted
//! server: listing and getting read no skill file; loading verifies
//! `SKILL.md` (size, digest, frontmatter) and a skill that fails is refused
//! typed with nothing else read; a file outside the manifest is refused
//! before any request.

use std::time::Duration;

use mcp_connect::extensions::skills::{Manifest, SkillError};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::{ConnectRequest, Connector, ErrorKind, Session};
use serde_json::json;
use sha2::Digest as _;

use crate::support::{legacy, result, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::extensions::skills::{GetSkill, ListSkills};

const LIMIT: Duration = Duration::from_secs(15);
const SKILL_MD: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const BODY: &str =
    "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_BODY: &str = "Forms.\n";

fn digest(text: &str) -> String {
    let hex: String = sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn entry() -> serde_json::Value {
    json!({
        "uri": SKILL_MD,
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents"
        },
        "resources": [
            { "uri": SKILL_MD, "digest": digest(BODY), "size": BODY.len() },
            { "uri": FORMS, "digest": digest(FORMS_BODY), "size": FORMS_BODY.len() }
        ]
    })
}

/// A 2025 server with the extension, serving `skill_md` as the skill's
/// `SKILL.md` (the listed entry is always the true one).
async fn serving(skill_md: &'static str) -> ScriptServer {
    ScriptServer::start(move |r: &Recorded| match r.rpc_method() {
        "skills/list" => Script::Json(200, result(r, json!({ "skills": [entry()] }))),
        "skills/get" if r.body["params"]["uri"] == SKILL_MD => {
            Script::Json(200, result(r, json!({ "skill": entry() })))
        }
        "resources/read" => {
            let uri = r.body["params"]["uri"].as_str().unwrap_or_default().to_owned();
            let text = if uri == FORMS { FORMS_BODY } else { skill_md };
            Script::Json(
                200,
                result(r, json!({ "contents": [{ "uri": uri, "mimeType": "text/markdown", "text": text }] })),
            )
        }
        _ => legacy(r),
    })
    .await
}

async fn connect(server: &ScriptServer) -> Session {
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    Connector::new().connect(request).await.unwrap()
}

fn reads(server: &ScriptServer) -> Vec<String> {
    server
        .recorded()
        .iter()
        .filter(|r| r.rpc_method() == "resources/read")
        .map(|r| r.body["params"]["uri"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn listing_and_getting_read_no_file_and_a_verified_skill_loads() {
    watchdog(LIMIT, async {
        let server = serving(BODY).await;
        let session = connect(&server).await;
        let skills = session
            .send(ListSkills::all())
            .await
            .map(|page| page.items)
            .unwrap();
        assert_eq!(skills.len(), 1);
        let skill = &skills[0];
        assert_eq!(skill.name(), Some("pdf-processing"));
        assert!(matches!(&skill.resources, Manifest::Files(files) if files.len() == 2));
        assert_eq!(session.send(GetSkill(SKILL_MD)).await.unwrap(), *skill);
        assert!(reads(&server).is_empty(), "no prefetch");

        assert_eq!(skill.load(&session).await.unwrap(), BODY);
        let forms = skill.read_file(&session, FORMS).await.unwrap();
        assert_eq!(forms, FORMS_BODY.as_bytes());
        assert_eq!(reads(&server), [SKILL_MD, FORMS]);
    })
    .await;
}

#[tokio::test]
async fn a_skill_whose_digest_does_not_match_is_refused_typed() {
    watchdog(LIMIT, async {
        let tampered: &'static str =
            Box::leak(BODY.replace("Skill body.", "Evil body!!").into_boxed_str());
        let server = serving(tampered).await;
        let session = connect(&server).await;
        let skill = session
            .send(ListSkills::all())
            .await
            .map(|page| page.items)
            .unwrap()
            .remove(0);
        let error = skill.load(&session).await.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Skill(SkillError::DigestMismatch)),
            "{error:?}"
        );
        assert_eq!(reads(&server), [SKILL_MD], "nothing more was read");
    })
    .await;
}

#[tokio::test]
async fn a_longer_file_and_a_changed_frontmatter_are_refused_typed() {
    watchdog(LIMIT, async {
        let longer: &'static str = Box::leak(format!("{BODY}extra\n").into_boxed_str());
        let server = serving(longer).await;
        let session = connect(&server).await;
        let skill = session
            .send(ListSkills::all())
            .await
            .map(|page| page.items)
            .unwrap()
            .remove(0);
        let error = skill.load(&session).await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Skill(SkillError::SizeMismatch { expected, actual })
                    if *expected == BODY.len() as u64 && *actual == longer.len() as u64
            ),
            "{error:?}"
        );

        // The body matches a manifest made for it, but its frontmatter is
        // not the entry's.
        let changed: &'static str = Box::leak(
            BODY.replace("description: Extract", "description: Exfiltrate")
                .into_boxed_str(),
        );
        let server = serving(changed).await;
        let session = connect(&server).await;
        let mut skill = session
            .send(ListSkills::all())
            .await
            .map(|page| page.items)
            .unwrap()
            .remove(0);
        if let Manifest::Files(files) = &mut skill.resources {
            files[0] = serde_json::from_value(
                json!({ "uri": SKILL_MD, "digest": digest(changed), "size": changed.len() }),
            )
            .unwrap();
        }
        let error = skill.load(&session).await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Skill(SkillError::FrontmatterMismatch)
            ),
            "{error:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_file_outside_the_manifest_is_refused_before_any_request() {
    watchdog(LIMIT, async {
        let server = serving(BODY).await;
        let session = connect(&server).await;
        let skill = session
            .send(ListSkills::all())
            .await
            .map(|page| page.items)
            .unwrap()
            .remove(0);
        let error = skill
            .read_file(&session, "file:///etc/passwd")
            .await
            .unwrap_err();
        assert!(matches!(
            error.kind(),
            ErrorKind::Skill(SkillError::NotInManifest)
        ));
        assert!(reads(&server).is_empty());
    })
    .await;
}
