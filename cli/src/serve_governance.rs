//! `serve --policy FILE --quota RATE --audit FILE|-`: who may call what
//! through the command's gateway, how often, and the record of each call.
//! Read before anything starts: a policy that does not parse or an audit
//! file that cannot be opened is a usage error that sends nothing.

use mcp_connect::config::ServersConfig;
use mcp_connect::store::redis::RedisStores;
use mcp_connect_gateway::{GatewayBuilder, JsonLines, Quotas};

use super::args::Args;

/// What the options ask for, read and opened.
#[derive(Default)]
pub(super) struct Governance {
    #[cfg(feature = "cedar")]
    policy: Option<mcp_connect_gateway::policy::CedarPolicy>,
    quotas: Option<Quotas>,
    audit: Option<JsonLines>,
    fields: Vec<String>,
}

impl Governance {
    /// The options read: the policy file parsed, the quotas made (shared
    /// through `shared` when the replicas share a Redis), the audit file
    /// opened for appending.
    pub(super) fn from_args(
        args: &Args,
        config: &ServersConfig,
        shared: Option<&RedisStores>,
    ) -> Result<Self, String> {
        let mut governance = Governance {
            fields: args.audit_field.clone(),
            ..Default::default()
        };
        if let Some(path) = &args.policy {
            governance.read_policy(path)?;
        }
        let per_tool = config.tool_quotas();
        if args.quota.is_some() || !per_tool.is_empty() {
            let mut quotas = match shared {
                Some(redis) => Quotas::shared(redis.buckets()),
                None => Quotas::local(),
            };
            if let Some(rate) = args.quota {
                quotas = quotas.per_principal(rate);
            }
            for (pattern, rate) in per_tool {
                quotas = quotas.per_tool(pattern, *rate);
            }
            governance.quotas = Some(quotas.fail_open(args.quota_fail_open));
        }
        governance.audit = match args.audit.as_deref() {
            None => None,
            Some("-") => Some(JsonLines::new(std::io::stdout())),
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("--audit: cannot open the file: {e}"))?;
                Some(JsonLines::new(file))
            }
        };
        Ok(governance)
    }

    #[cfg(feature = "cedar")]
    fn read_policy(&mut self, path: &std::path::Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--policy: cannot read the file: {e}"))?;
        let policy = mcp_connect_gateway::policy::CedarPolicy::from_text(&text)
            .map_err(|e| format!("--policy: {}", super::output::chain(&e)))?;
        self.policy = Some(policy);
        Ok(())
    }

    #[cfg(not(feature = "cedar"))]
    fn read_policy(&mut self, _: &std::path::Path) -> Result<(), String> {
        Err("--policy: this mcp-connect was built without the cedar feature".into())
    }

    /// `gateway` governed as the options say.
    pub(super) fn apply(self, mut gateway: GatewayBuilder) -> GatewayBuilder {
        #[cfg(feature = "cedar")]
        if let Some(policy) = self.policy {
            gateway = gateway.policy(policy);
        }
        if let Some(quotas) = self.quotas {
            gateway = gateway.quotas(quotas);
        }
        if let Some(audit) = self.audit {
            gateway = gateway.audit(audit).audit_arguments(self.fields);
        }
        gateway
    }
}
