//! The scenario model of an A2A agent (`[agents.NAME]` with `protocol = "a2a"`): its raw TOML
//! shape, validation against the scenario's services, and the compiled [`A2aAgent`].

use serde::Deserialize;

use super::{sub_table, Issues, Service};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    #[allow(dead_code)]
    protocol: String,
}

/// A validated A2A agent script.
#[derive(Clone, Debug, Default)]
pub struct A2aAgent {}

pub(crate) fn compile(
    table: &toml::Table,
    path: &str,
    _services: &[Service],
    issues: &mut Issues,
) -> Option<A2aAgent> {
    let _raw: RawAgent = sub_table(table, path, issues)?;
    Some(A2aAgent {})
}
