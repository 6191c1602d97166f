//! The extension's two requests: the entries, and one entry.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::Skill;
use crate::protocol::{listing, EncodedRequest, McpRequest, RequestKind};

listing!(
    /// `skills/list`: each skill's entry (its `SKILL.md` URI, frontmatter
    /// and manifest). No skill file is read.
    ListSkills,
    ListSkills,
    Skill,
    "skills"
);

/// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSkill<'a>(pub &'a str);

impl McpRequest for GetSkill<'_> {
    type Output = Skill;

    fn kind(&self) -> RequestKind {
        RequestKind::GetSkill
    }

    fn encode(&self) -> EncodedRequest {
        #[derive(Serialize)]
        struct Uri<'a> {
            uri: &'a str,
        }
        EncodedRequest::new(RequestKind::GetSkill, Some(&Uri { uri: self.0 }), None)
    }

    fn read(raw: Box<RawValue>) -> Result<Skill, serde_json::Error> {
        #[derive(Deserialize)]
        struct Got {
            skill: Skill,
        }
        serde_json::from_str::<Got>(raw.get()).map(|got| got.skill)
    }
}
