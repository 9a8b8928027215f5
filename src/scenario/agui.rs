//! The scenario model of an AG-UI agent (`[agents.NAME]` with `protocol = "ag-ui"`): its raw TOML
//! shape, validation against the scenario's services, and the compiled [`AgUiAgent`].

use serde::Deserialize;

use super::{sub_table, Issues, Service};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    #[allow(dead_code)]
    protocol: String,
}

/// A validated AG-UI agent script.
#[derive(Clone, Debug, Default)]
pub struct AgUiAgent {}

pub(crate) fn compile(
    table: &toml::Table,
    path: &str,
    _services: &[Service],
    issues: &mut Issues,
) -> Option<AgUiAgent> {
    let _raw: RawAgent = sub_table(table, path, issues)?;
    Some(AgUiAgent {})
}
