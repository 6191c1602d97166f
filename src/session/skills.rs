//! The Skills extension on a session (SEP-2640): list and get entries
//! without reading any file, then load a skill (read and verify its
//! `SKILL.md`) and read its other files only when the application asks,
//! each verified against the entry's manifest before it is returned.

use crate::protocol::methods;
use mcp_connect_layers::Stage;
use serde::Deserialize;
use serde_json::json;

use super::{RequestOptions, Session};
use crate::error::{Error, ErrorKind};
use crate::extensions::skills::{self, Manifest, Skill, SkillError};

fn refused(error: SkillError) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::Skill(error))
}

impl Session {
    /// `skills/list`, every page: each skill's entry (its `SKILL.md` URI,
    /// frontmatter and manifest). No skill file is read.
    pub async fn list_skills(&self) -> Result<Vec<Skill>, Error> {
        self.all_pages(methods::SKILLS_LIST, "skills", &RequestOptions::default())
            .await
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, Error> {
        #[derive(Deserialize)]
        struct Got {
            skill: Skill,
        }
        let got: Got = self
            .request_as(methods::SKILLS_GET, Some(json!({ "uri": uri })))
            .await?;
        Ok(got.skill)
    }

    /// Loads `skill`: reads its `SKILL.md` and returns the text once it is
    /// verified: the size and digest the manifest gives (a dynamic skill
    /// has none), and the frontmatter, field by field against the entry's.
    /// On any discrepancy it fails with [`ErrorKind::Skill`] and the
    /// content is not returned.
    pub async fn load_skill(&self, skill: &Skill) -> Result<String, Error> {
        let bytes = self.read_verified(skill, &skill.uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| refused(SkillError::NoFrontmatter))?;
        skills::verify_frontmatter(skill, &text).map_err(refused)?;
        Ok(text)
    }

    /// Reads one of `skill`'s files, verified against the manifest: a file
    /// the manifest does not list is refused before any request, and one
    /// whose size or digest differs is refused after. A dynamic skill's
    /// files are read as they are, from under the skill's own root only.
    pub async fn read_skill_file(&self, skill: &Skill, uri: &str) -> Result<Vec<u8>, Error> {
        self.read_verified(skill, uri).await
    }

    async fn read_verified(&self, skill: &Skill, uri: &str) -> Result<Vec<u8>, Error> {
        let file = match &skill.resources {
            Manifest::Files(_) => Some(skill.file(uri).ok_or(refused(SkillError::NotInManifest))?),
            Manifest::Dynamic => {
                let root = skill.uri.trim_end_matches("SKILL.md");
                if !uri.starts_with(root) {
                    return Err(refused(SkillError::NotInManifest));
                }
                None
            }
        };
        let result = self.read_resource(uri).await?;
        let bytes = skills::content_bytes(&result, uri).map_err(refused)?;
        if let Some(file) = file {
            skills::verify(file, &bytes).map_err(refused)?;
        }
        Ok(bytes)
    }
}
