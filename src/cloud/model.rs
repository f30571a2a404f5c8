//! Serde types of the cloud management API: request bodies (what tailship
//! sends, with optional members left out) and responses (every member
//! defaulted, unknown members ignored, so a newer service does not break the
//! client). Commands that print JSON print the raw response instead, so no
//! member the service sent is lost there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::util::Secret;

/// Where a policy applies: an org or a stack, optionally narrowed by label selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Realm {
    #[serde(rename = "type")]
    pub kind: String,
    pub identifier: String,
    #[serde(rename = "labelPolicies", skip_serializing_if = "Vec::is_empty")]
    pub label_policies: Vec<LabelPolicy>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelPolicy {
    pub selector: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Conditions {
    #[serde(rename = "allowedSubnets")]
    pub allowed_subnets: Vec<String>,
}

/// `active` or `inactive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PolicyStatus {
    Active,
    Inactive,
}

impl PolicyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Inactive => "inactive",
        }
    }
}

/// Body of POST /accesspolicies.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewPolicy {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub scopes: Vec<String>,
    pub realms: Vec<Realm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Conditions>,
}

/// What an update does to a policy's conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionsUpdate {
    /// Send these conditions.
    Set(Conditions),
    /// Send `conditions: {}`: the spec's way to remove them completely.
    Clear,
}

impl Serialize for ConditionsUpdate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Set(c) => c.serialize(s),
            Self::Clear => serde_json::Map::new().serialize(s),
        }
    }
}

/// Body of POST /accesspolicies/{id}. Scopes and realms are required by the API.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub scopes: Vec<String>,
    pub realms: Vec<Realm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<ConditionsUpdate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<PolicyStatus>,
}

/// An access policy as the service returns it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AccessPolicy {
    pub id: String,
    pub org_id: serde_json::Value,
    pub name: String,
    pub display_name: String,
    pub scopes: Vec<String>,
    pub realms: Vec<Realm>,
    pub conditions: Option<Conditions>,
    pub status: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// Body of POST /tokens.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewToken {
    pub access_policy_id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// Body of POST /tokens/{id}. `expires_at: Some(None)` sends `null` (no expiry).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Option<String>>,
}

/// A token as the service returns it. `token` is the secret, present only in
/// the create response; it never prints through `Debug`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Token {
    pub id: String,
    pub access_policy_id: String,
    pub name: String,
    pub display_name: String,
    pub expires_at: Option<String>,
    pub first_used_at: Option<String>,
    pub last_used_at: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub token: Option<Secret>,
}

/// `metadata.pagination` of the list envelopes of policies and tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Pagination {
    pub page_size: Option<u64>,
    pub page_cursor: Option<String>,
    pub next_page: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PageMetadata {
    pub pagination: Pagination,
}

/// The list envelope of policies and tokens: items stay raw JSON so that
/// `--output json` prints every member the service sent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Page {
    pub items: Vec<serde_json::Value>,
    pub metadata: PageMetadata,
}

/// A stack (hosted instance), only the members tailship reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Stack {
    pub id: i64,
    pub org_id: i64,
    pub org_slug: String,
    pub name: String,
    pub slug: String,
    pub url: String,
    pub status: String,
    pub description: String,
    pub labels: BTreeMap<String, String>,
    pub delete_protection: bool,
    pub region_slug: String,
    /// The stack's hosted logs instance: its ID is the basic-auth user of the log API.
    pub hl_instance_id: Option<i64>,
    pub hl_instance_url: Option<String>,
    pub hl_instance_name: Option<String>,
    pub hl_instance_status: Option<String>,
}

/// The stack list envelope, as the spec shows it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StackList {
    pub items: Vec<serde_json::Value>,
    pub order_by: Option<String>,
    pub direction: Option<String>,
    pub total: Option<u64>,
    pub pages: Option<u64>,
    pub page_size: Option<u64>,
    pub page: Option<u64>,
    pub links: Vec<Link>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Link {
    pub rel: String,
    pub href: String,
}

/// Body of POST /instances.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewStack {
    pub name: String,
    pub slug: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_protection: Option<bool>,
}

/// Body of POST /instances/{slug}: only the members given are sent. A
/// `labels` map replaces the stack's labels (the API removes labels it omits).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_protection: Option<bool>,
}

impl StackUpdate {
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.description.is_none() && self.labels.is_none() && self.delete_protection.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_bodies_serialize_as_the_spec_says() {
        let u = PolicyUpdate {
            display_name: None,
            scopes: vec!["logs:read".into()],
            realms: vec![Realm { kind: "org".into(), identifier: "1".into(), label_policies: vec![] }],
            conditions: Some(ConditionsUpdate::Clear),
            status: Some(PolicyStatus::Inactive),
        };
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"scopes":["logs:read"],"realms":[{"type":"org","identifier":"1"}],"conditions":{},"status":"inactive"}"#
        );
        let t = TokenUpdate { display_name: None, expires_at: Some(None) };
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"expiresAt":null}"#);
        let t = TokenUpdate { display_name: Some("x".into()), expires_at: None };
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"displayName":"x"}"#);
    }

    #[test]
    fn responses_tolerate_unknown_and_missing_members() {
        let p: AccessPolicy = serde_json::from_str(r#"{"id":"a","name":"n","newThing":{"x":1}}"#).unwrap();
        assert_eq!(p.id, "a");
        assert!(p.scopes.is_empty());
        let t: Token = serde_json::from_str(r#"{"id":"t","token":"glc_secret"}"#).unwrap();
        assert!(!format!("{t:?}").contains("glc_secret"));
        let s: Stack =
            serde_json::from_str(r#"{"id":7,"slug":"s","hlInstanceId":42,"hlInstanceUrl":"https://l"}"#).unwrap();
        assert_eq!(s.hl_instance_id, Some(42));
    }
}
