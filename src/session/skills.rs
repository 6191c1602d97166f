//! The Skills extension's reads (SEP-2640): a skill's `SKILL.md` and its
//! other files, read through a session only when the application asks,
//! each verified against the entry's manifest before it is returned.
//! Listing and getting entries are requests of their own
//! ([`ListSkills`](crate::extensions::skills::ListSkills),
//! [`GetSkill`](crate::extensions::skills::GetSkill)).

use mcp_connect_layers::Stage;

use super::Session;
use crate::error::{Error, ErrorKind};
use crate::extensions::skills::{self, Manifest, Skill, SkillError};
use crate::protocol::ReadResource;

fn refused(error: SkillError) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::Skill(error))
}

impl Skill {
    /// Loads this skill: reads its `SKILL.md` on `session` and returns the
    /// text once it is verified: the size and digest the manifest gives (a
    /// dynamic skill has none), and the frontmatter, field by field against
    /// the entry's. On any discrepancy it fails with [`ErrorKind::Skill`]
    /// and the content is not returned.
    pub async fn load(&self, session: &Session) -> Result<String, Error> {
        let bytes = self.read_verified(session, &self.uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| refused(SkillError::NoFrontmatter))?;
        skills::verify_frontmatter(self, &text).map_err(refused)?;
        Ok(text)
    }

    /// Reads one of this skill's files on `session`, verified against the
    /// manifest: a file the manifest does not list is refused before any
    /// request, and one whose size or digest differs is refused after. A
    /// dynamic skill's files are read as they are, from under the skill's
    /// own root only.
    pub async fn read_file(&self, session: &Session, uri: &str) -> Result<Vec<u8>, Error> {
        self.read_verified(session, uri).await
    }

    async fn read_verified(&self, session: &Session, uri: &str) -> Result<Vec<u8>, Error> {
        let file = match &self.resources {
            Manifest::Files(_) => Some(self.file(uri).ok_or(refused(SkillError::NotInManifest))?),
            Manifest::Dynamic => {
                let root = self.uri.trim_end_matches("SKILL.md");
                if !uri.starts_with(root) {
                    return Err(refused(SkillError::NotInManifest));
                }
                None
            }
        };
        let result = session.send(ReadResource::new(uri)).await?;
        let bytes = skills::content_bytes(&result, uri).map_err(refused)?;
        if let Some(file) = file {
            skills::verify(file, &bytes).map_err(refused)?;
        }
        Ok(bytes)
    }
}
