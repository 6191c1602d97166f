//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640):
//! what a server's skills are, and the checks a host owes every file it
//! reads of one.
//!
//! A skill is a directory of files served as resources (`skill://...`),
//! led by a `SKILL.md` whose YAML frontmatter names and describes it.
//! `skills/list` (and `skills/get` for one) gives each skill's entry: the
//! `SKILL.md` URI, its frontmatter verbatim, and a manifest of every file
//! with its SHA-256 digest and size, or `"dynamic"` for content made per
//! request. A host lists without reading (no file is fetched ahead of
//! need), and every file it reads is verified against the manifest before
//! use: the size, the digest, and for `SKILL.md` the frontmatter, field by
//! field against the entry's. Content that fails is never used, and the
//! skill is not loaded.
//!
//! The checks here are pure (bytes in, verdict out); [`ListSkills`] and
//! [`GetSkill`] are the requests, and [`Skill::load`] and
//! [`Skill::read_file`] read and verify the files. The frontmatter is parsed with `serde_yaml_ng` into JSON values
//! so that it compares with the entry's as JSON.

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

mod requests;

pub use requests::{GetSkill, ListSkills};

/// The extension's identifier, as servers declare it under
/// `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// A skill's entry, from `skills/list` or `skills/get`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The frontmatter of `SKILL.md`, verbatim (`name`, `description`, and
    /// whatever else the skill declares).
    pub frontmatter: Map<String, Value>,
    /// The skill's files, or none to verify against for a dynamic skill.
    pub resources: Manifest,
}

impl Skill {
    /// The skill's name, from its frontmatter.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The skill's description, from its frontmatter.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The manifest entry of the file at `uri`, if the skill lists one.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            Manifest::Files(files) => files.iter().find(|f| f.uri == uri),
            Manifest::Dynamic => None,
        }
    }
}

/// A skill's files: listed with their digests and sizes, or made per
/// request (`"dynamic"`), when there is nothing to verify against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// Every file of the skill.
    Files(Vec<SkillFile>),
    /// Content generated per request.
    Dynamic,
}

impl<'de> Deserialize<'de> for Manifest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Files(Vec<SkillFile>),
            Word(String),
        }
        match Wire::deserialize(deserializer)? {
            Wire::Files(files) => Ok(Manifest::Files(files)),
            Wire::Word(word) if word == "dynamic" => Ok(Manifest::Dynamic),
            Wire::Word(_) => Err(serde::de::Error::custom(
                "resources is neither a list nor \"dynamic\"",
            )),
        }
    }
}

/// One file of a skill's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// Its resource URI.
    pub uri: String,
    /// `sha256:` and the hex digest of its bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// Why a skill's file was not used. Names the check, never the content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The file is not in the skill's manifest.
    #[error("the file is not in the skill's manifest")]
    NotInManifest,
    /// Its length differs from the manifest's.
    #[error("the file is {actual} bytes, the manifest says {expected}")]
    SizeMismatch {
        /// The manifest's size.
        expected: u64,
        /// The bytes read.
        actual: u64,
    },
    /// Its SHA-256 differs from the manifest's digest.
    #[error("the file does not match its digest")]
    DigestMismatch,
    /// The manifest's digest is not `sha256:` and 64 hex digits.
    #[error("the manifest's digest is not a SHA-256 digest")]
    UnsupportedDigest,
    /// `SKILL.md` has no YAML frontmatter that parses to a map.
    #[error("SKILL.md has no readable frontmatter")]
    NoFrontmatter,
    /// `SKILL.md`'s frontmatter differs from the entry's.
    #[error("SKILL.md's frontmatter differs from the skill's entry")]
    FrontmatterMismatch,
    /// The read returned no content for the file.
    #[error("the read returned no content for the file")]
    NoContent,
}

/// Checks bytes read for `file` against its manifest entry: the size
/// first (cheap), then the digest.
pub(crate) fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), SkillError> {
    let expected = file
        .digest
        .strip_prefix("sha256:")
        .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or(SkillError::UnsupportedDigest)?;
    let actual = bytes.len() as u64;
    if actual != file.size {
        return Err(SkillError::SizeMismatch {
            expected: file.size,
            actual,
        });
    }
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    if !hex.eq_ignore_ascii_case(expected) {
        return Err(SkillError::DigestMismatch);
    }
    Ok(())
}

/// Checks `SKILL.md`'s frontmatter against the entry's, field by field.
pub(crate) fn verify_frontmatter(skill: &Skill, text: &str) -> Result<(), SkillError> {
    let parsed = frontmatter(text).ok_or(SkillError::NoFrontmatter)?;
    if parsed != skill.frontmatter {
        return Err(SkillError::FrontmatterMismatch);
    }
    Ok(())
}

/// The YAML frontmatter at the start of a `SKILL.md` (between `---` lines,
/// a byte-order mark allowed before), as JSON values.
pub(crate) fn frontmatter(text: &str) -> Option<Map<String, Value>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    let end = rest.split_inclusive('\n').find_map(|line| {
        let at = offset;
        offset += line.len();
        (line.trim_end() == "---").then_some(at)
    })?;
    serde_yaml_ng::from_str::<Map<String, Value>>(&rest[..end]).ok()
}

/// The bytes of the first content of a `resources/read` result: `text` as
/// UTF-8, `blob` decoded from base64.
pub(crate) fn content_bytes(result: &Value, uri: &str) -> Result<Vec<u8>, SkillError> {
    use base64::Engine as _;
    let contents = result["contents"].as_array().ok_or(SkillError::NoContent)?;
    let content = contents
        .iter()
        .find(|c| c["uri"].as_str() == Some(uri))
        .or_else(|| contents.first())
        .ok_or(SkillError::NoContent)?;
    if let Some(text) = content["text"].as_str() {
        return Ok(text.as_bytes().to_vec());
    }
    let blob = content["blob"].as_str().ok_or(SkillError::NoContent)?;
    base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|_| SkillError::NoContent)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const BODY: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn digest(bytes: &[u8]) -> String {
        let hex: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("sha256:{hex}")
    }

    fn entry(body: &str) -> Skill {
        serde_json::from_value(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents"
            },
            "resources": [{
                "uri": "skill://pdf-processing/SKILL.md",
                "digest": digest(body.as_bytes()),
                "size": body.len()
            }]
        }))
        .unwrap()
    }

    #[test]
    fn a_file_matching_its_manifest_passes() {
        let skill = entry(BODY);
        let file = skill.file(&skill.uri).unwrap();
        assert_eq!(verify(file, BODY.as_bytes()), Ok(()));
        assert_eq!(verify_frontmatter(&skill, BODY), Ok(()));
        assert_eq!(skill.name(), Some("pdf-processing"));
    }

    #[test]
    fn a_changed_byte_a_changed_length_and_a_changed_field_each_fail_typed() {
        let skill = entry(BODY);
        let file = skill.file(&skill.uri).unwrap();
        let evil = BODY.replace("Skill body.", "Evil body!!");
        assert_eq!(evil.len(), BODY.len());
        assert_eq!(
            verify(file, evil.as_bytes()),
            Err(SkillError::DigestMismatch)
        );
        let longer = format!("{BODY}extra\n");
        assert!(matches!(
            verify(file, longer.as_bytes()),
            Err(SkillError::SizeMismatch { .. })
        ));
        let other = BODY.replace("description: Extract", "description: Exfiltrate");
        assert_eq!(
            verify_frontmatter(&skill, &other),
            Err(SkillError::FrontmatterMismatch)
        );
        assert_eq!(
            verify_frontmatter(&skill, "no frontmatter"),
            Err(SkillError::NoFrontmatter)
        );
    }

    #[test]
    fn a_digest_that_is_not_sha256_is_refused() {
        let mut skill = entry(BODY);
        let Manifest::Files(files) = &mut skill.resources else {
            unreachable!()
        };
        files[0].digest = "md5:abc".into();
        assert_eq!(
            verify(&files[0], BODY.as_bytes()),
            Err(SkillError::UnsupportedDigest)
        );
    }

    #[test]
    fn dynamic_skills_and_crlf_frontmatter_are_read() {
        let skill: Skill = serde_json::from_value(json!({
            "uri": "skill://x/SKILL.md",
            "frontmatter": { "name": "x", "description": "d" },
            "resources": "dynamic"
        }))
        .unwrap();
        assert_eq!(skill.resources, Manifest::Dynamic);
        assert!(skill.file("skill://x/SKILL.md").is_none());
        let crlf = "\u{feff}---\r\nname: x\r\ndescription: d\r\n---\r\nbody";
        assert_eq!(verify_frontmatter(&skill, crlf), Ok(()));
        assert!(serde_json::from_value::<Skill>(json!({
            "uri": "skill://x/SKILL.md", "frontmatter": {}, "resources": "static"
        }))
        .is_err());
    }

    #[test]
    fn content_is_text_or_a_base64_blob() {
        let text = json!({ "contents": [{ "uri": "u", "text": "hi" }] });
        assert_eq!(content_bytes(&text, "u").unwrap(), b"hi");
        let blob = json!({ "contents": [{ "uri": "u", "blob": "aGk=" }] });
        assert_eq!(content_bytes(&blob, "u").unwrap(), b"hi");
        assert_eq!(
            content_bytes(&json!({ "contents": [] }), "u"),
            Err(SkillError::NoContent)
        );
    }
}
