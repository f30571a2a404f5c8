//! The `kubernetes` table of a source: where the API server is, how to
//! authenticate, which objects are watched (role, namespaces, selectors),
//! and the checks Kubernetes itself makes of label and field selectors.

use serde::{Deserialize, Serialize};

use super::http_table::http_table;
use crate::util::HumanDuration;

/// Prometheus' Kubernetes discovery roles (`kubernetes.role`, `selectors[].role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KubeRole {
    /// The pods of this node (a `kubernetes` source).
    #[default]
    Pod,
    /// The cluster's nodes.
    Node,
    /// One target per service port.
    Service,
    /// One target per endpoint address and port (with its pod and service).
    Endpoints,
    /// One target per endpoint of an EndpointSlice (with its pod and service).
    #[serde(rename = "endpointslice")]
    EndpointSlice,
    /// One target per ingress rule path.
    Ingress,
}

impl KubeRole {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Node => "node",
            Self::Service => "service",
            Self::Endpoints => "endpoints",
            Self::EndpointSlice => "endpointslice",
            Self::Ingress => "ingress",
        }
    }

    /// The roles whose `selectors` a discovery of this role takes (as Prometheus).
    pub fn selector_roles(self) -> &'static [KubeRole] {
        use KubeRole::*;
        match self {
            Pod => &[Pod, Node],
            Node => &[Node],
            Service => &[Service],
            Endpoints => &[Pod, Service, Endpoints],
            EndpointSlice => &[Pod, Service, EndpointSlice],
            Ingress => &[Ingress],
        }
    }
}

/// `kubernetes.selectors[]`: the objects of one role that are listed and
/// watched, sent to the API server as `labelSelector` and `fieldSelector`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KubeSelector {
    pub role: KubeRole,
    /// A label selector (`app=web,tier!=db`, `env in (a,b)`, `!canary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// A field selector (`metadata.name=x,status.phase!=Failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// `kubernetes.namespaces`: which namespaces' objects are watched (empty: all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubeNamespaces {
    pub names: Vec<String>,
    /// Also the namespace the agent runs in (the service account's `namespace` file).
    pub own_namespace: bool,
}

/// `kubernetes.attach_metadata`: more labels on each target, from objects
/// watched for them (Prometheus' `attach_metadata`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubeAttach {
    /// The target's node: `__meta_kubernetes_node_name`, `_label_*`,
    /// `_labelpresent_*`, `_annotation_*`, `_annotationpresent_*` (roles pod,
    /// endpoints, endpointslice; the nodes are watched: RBAC `nodes`).
    pub node: bool,
    /// The target's namespace: `__meta_kubernetes_namespace_label_*`,
    /// `_labelpresent_*`, `_annotation_*`, `_annotationpresent_*` (every role
    /// but node; the namespaces are watched: RBAC `namespaces`).
    pub namespace: bool,
}

impl KubeAttach {
    pub fn any(self) -> bool {
        self.node || self.namespace
    }
}

http_table! {
    /// A `kubernetes` source's pod metadata (role pod), or a file source's
    /// targets discovered through the API server (the other roles): where the
    /// API server is, how to authenticate, and which objects to watch.
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct KubernetesConfig {
        /// What is discovered: `pod` (a `kubernetes` source: the pods of this
        /// node), or `node`, `service`, `endpoints`, `endpointslice`, `ingress`
        /// (a `file` source: targets whose relabelled `__path__` names files).
        pub role: KubeRole = KubeRole::Pod,
        /// The API server's URL; unset: in-cluster (`KUBERNETES_SERVICE_HOST` and
        /// `_PORT`), or the current context of `kubeconfig`.
        pub api_server: Option<String> = None,
        /// A kubeconfig file (its current context's server, CA and token);
        /// unset: the in-cluster service account.
        pub kubeconfig: Option<std::path::PathBuf> = None,
        /// The service account token, read again for every request (tokens rotate).
        #[serde(alias = "bearer_token_file")]
        pub token_file: std::path::PathBuf = std::path::Path::new(SERVICE_ACCOUNT_DIR).join("token"),
        /// A bearer token given in the config itself (a secret); needs `api_server`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub bearer_token: Option<crate::util::Secret> = None,
        /// Basic auth to the API server (`username`, `password` or `password_file`); needs `api_server`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub basic_auth: Option<super::BasicAuth> = None,
        /// A bearer token got with the OAuth 2.0 client credentials grant (as
        /// `client.oauth2`); needs `api_server`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub oauth2: Option<super::OAuth2Config> = None,
        proxy;
        /// The CA bundle the API server's certificate is checked against.
        pub ca_file: std::path::PathBuf = std::path::Path::new(SERVICE_ACCOUNT_DIR).join("ca.crt"),
        /// TLS beyond `ca_file`: `ca` (inline), `cert_file`/`key_file` (or
        /// `cert`/`key`) for mutual TLS, `server_name`, `insecure_skip_verify`; needs `api_server`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tls: Option<super::TlsConfig> = None,
        /// Which namespaces are watched (unset: all); not for role node.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub namespaces: Option<KubeNamespaces> = None,
        /// Label and field selectors sent to the API server, one per role.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub selectors: Vec<KubeSelector> = Vec::new(),
        /// Labels of the target's node and namespace (see [`KubeAttach`]).
        #[serde(skip_serializing_if = "is_default")]
        pub attach_metadata: KubeAttach = KubeAttach::default(),
        /// Whose pods to watch; unset: the variable `node_name_env` names,
        /// else this machine's host name. Role pod only.
        pub node_name: Option<String> = None,
        /// The environment variable that names the node when `node_name` is
        /// unset (a converted Promtail config: `HOSTNAME`, as Promtail reads
        /// it). Unset: `$NODE_NAME` (the packaged DaemonSet sets it from
        /// `spec.nodeName`), else `$HOSTNAME` where it is not the host name
        /// (Promtail's DaemonSet sets it from `spec.nodeName`). Role pod only.
        pub node_name_env: Option<String> = None,
        /// A log file whose pod is not known yet waits this long for it, then
        /// ships with its path labels only (counted as `pod_unknown`). A
        /// `kubernetes` source only.
        pub wait_for_pod: HumanDuration = HumanDuration::secs(5),
    }
}

/// The in-cluster service account's files.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Checks a source's `kubernetes` table (`kk` is its key): the role
/// fits the source type, selectors parse and fit the role (as Prometheus
/// checks them), credentials are given once and their files exist.
impl super::SdTable for KubernetesConfig {
    fn validate(&self, kk: &str, s: &super::SourceConfig, e: &mut dyn FnMut(&str, String)) {
        validate_role_fits(kk, s, self, e);
        validate_api_access(kk, self, e);
        validate_scope(kk, self, e);
        validate_selectors(kk, self, e);
    }
}

/// The role fits the source type (a kubernetes source's pods, a file source's any role).
fn validate_role_fits(kk: &str, s: &super::SourceConfig, k: &KubernetesConfig, e: &mut dyn FnMut(&str, String)) {
    use super::SourceType;
    match (s.kind, k.role) {
        (SourceType::Kubernetes, KubeRole::Pod) => {}
        (SourceType::Kubernetes, r) => e(
            &format!("{kk}.role"),
            format!("a kubernetes source reads pod logs (role pod); role {} is for a file source (type = \"file\") whose relabel rules set `__path__`", r.as_str()),
        ),
        (SourceType::File, role) => {
            if !s.include.is_empty() || s.targets_from.is_some() {
                e(&format!("{kk}.role"), "a source with kubernetes targets reads the files their `__path__` names; leave `include` and `targets_from` out".into());
            }
            if role != KubeRole::Pod && (k.node_name.is_some() || k.node_name_env.is_some()) {
                let which = if k.node_name.is_some() { "node_name" } else { "node_name_env" };
                e(&format!("{kk}.{which}"), format!("{which} is for role pod"));
            }
        }
        _ => e(kk, "`kubernetes` is for kubernetes sources and file sources".into()),
    }
}

/// How the API server is reached: its URL or a kubeconfig, credentials
/// given once (and only with `api_server`), TLS and proxy.
fn validate_api_access(kk: &str, k: &KubernetesConfig, e: &mut dyn FnMut(&str, String)) {
    if let Some(u) = &k.api_server {
        if !(u.starts_with("https://") || u.starts_with("http://")) {
            e(&format!("{kk}.api_server"), format!("`{u}` is not an http(s):// URL"));
        }
        if k.kubeconfig.is_some() {
            e(&format!("{kk}.kubeconfig"), "set api_server or kubeconfig, not both".into());
        }
    }
    for (set, name) in [
        (k.tls.is_some(), "tls"),
        (k.basic_auth.is_some(), "basic_auth"),
        (k.bearer_token.is_some(), "bearer_token"),
        (k.oauth2.is_some(), "oauth2"),
    ] {
        if set && k.api_server.is_none() {
            e(
                &format!("{kk}.{name}"),
                "needs `api_server` (a kubeconfig or the in-cluster account bring their own credentials)".into(),
            );
        }
    }
    if k.basic_auth.is_some() && k.bearer_token.is_some() {
        e(&format!("{kk}.bearer_token"), "set basic_auth or bearer_token, not both".into());
    }
    if let Some(o) = &k.oauth2 {
        if k.basic_auth.is_some() || k.bearer_token.is_some() {
            e(&format!("{kk}.oauth2"), "set one of basic_auth, bearer_token and oauth2".into());
        }
        super::oauth2::validate_oauth2(&mut o.clone(), &format!("{kk}.oauth2"), e);
    }
    k.http().validate_proxy(kk, e);
    if let Some(b) = &k.basic_auth {
        super::client::validate_basic_auth(b, &format!("{kk}.basic_auth"), e);
    }
    if let Some(t) = &k.tls {
        if t.ca_file.is_some() {
            e(&format!("{kk}.tls.ca_file"), "give the CA as kubernetes.ca_file (or inline as tls.ca)".into());
        }
        super::tls::validate_tls(t, &format!("{kk}.tls"), e);
    }
}

/// The namespaces watched and the metadata attached fit the role.
fn validate_scope(kk: &str, k: &KubernetesConfig, e: &mut dyn FnMut(&str, String)) {
    if let Some(ns) = &k.namespaces {
        if k.role == KubeRole::Node && (!ns.names.is_empty() || ns.own_namespace) {
            e(&format!("{kk}.namespaces"), "nodes belong to no namespace".into());
        }
        if ns.own_namespace && (k.api_server.is_some() || k.kubeconfig.is_some()) {
            e(&format!("{kk}.namespaces.own_namespace"), "only in a pod (not with api_server or kubeconfig)".into());
        }
        for (i, n) in ns.names.iter().enumerate() {
            if !is_dns_label(n) {
                e(&format!("{kk}.namespaces.names[{i}]"), format!("`{n}` is not a namespace name"));
            }
        }
    }
    if k.attach_metadata.node && !matches!(k.role, KubeRole::Pod | KubeRole::Endpoints | KubeRole::EndpointSlice) {
        e(
            &format!("{kk}.attach_metadata.node"),
            format!("is for roles pod, endpoints and endpointslice, not {}", k.role.as_str()),
        );
    }
    if k.attach_metadata.namespace && k.role == KubeRole::Node {
        e(&format!("{kk}.attach_metadata.namespace"), "nodes belong to no namespace".into());
    }
}

/// One selector per role, of the roles the discovery's role takes, each parsing.
fn validate_selectors(kk: &str, k: &KubernetesConfig, e: &mut dyn FnMut(&str, String)) {
    let mut seen = Vec::new();
    for (i, sel) in k.selectors.iter().enumerate() {
        let sk = format!("{kk}.selectors[{i}]");
        if seen.contains(&sel.role) {
            e(&format!("{sk}.role"), format!("a second selector of role {}", sel.role.as_str()));
        }
        seen.push(sel.role);
        if !k.role.selector_roles().contains(&sel.role) {
            let allowed: Vec<&str> = k.role.selector_roles().iter().map(|r| r.as_str()).collect();
            e(
                &format!("{sk}.role"),
                format!("role {} takes selectors of {} only", k.role.as_str(), allowed.join(", ")),
            );
        }
        if let Some(Err(m)) = sel.label.as_deref().map(check_label_selector) {
            e(&format!("{sk}.label"), m);
        }
        if let Some(Err(m)) = sel.field.as_deref().map(check_field_selector) {
            e(&format!("{sk}.field"), m);
        }
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name.
fn is_label_key(k: &str) -> bool {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(|p| !p.is_empty() && p.len() <= 253 && p.split('.').all(is_dns_label))
        && is_label_value(name)
        && !name.is_empty()
}

/// A label value: empty, or up to 63 of `[A-Za-z0-9_.-]` starting and ending alphanumeric.
fn is_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            && v.as_bytes()[0].is_ascii_alphanumeric()
            && v.as_bytes()[v.len() - 1].is_ascii_alphanumeric())
}

/// Kubernetes' label selector syntax: `k`, `!k`, `k=v`, `k==v`, `k!=v`,
/// `k in (a,b)`, `k notin (a,b)`, `k>1`, `k<1`, joined by commas.
pub fn check_label_selector(sel: &str) -> Result<(), String> {
    let mut depth = 0;
    let mut terms = Vec::new();
    let mut start = 0;
    for (i, c) in sel.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&sel[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&sel[start..]);
    if sel.trim().is_empty() {
        return Ok(());
    }
    for term in terms {
        let t = term.trim();
        let bad = || {
            format!("`{t}` in label selector `{sel}` is not `key`, `!key`, `key=value`, `key!=value`, `key in (a,b)` or `key notin (a,b)`")
        };
        if let Some(k) = t.strip_prefix('!') {
            if !is_label_key(k.trim()) {
                return Err(bad());
            }
            continue;
        }
        let set = t.split_once(" in ").or_else(|| t.split_once(" notin ")).or_else(|| {
            let (k, rest) = t.split_once(char::is_whitespace)?;
            let rest = rest.trim_start();
            rest.strip_prefix("in(").or_else(|| rest.strip_prefix("notin(")).map(|r| (k, r))
        });
        if let Some((k, vals)) = set {
            let vals = vals.trim().trim_start_matches('(');
            let Some(vals) = vals.strip_suffix(')') else { return Err(bad()) };
            if !is_label_key(k.trim()) || !vals.split(',').all(|v| is_label_value(v.trim())) {
                return Err(bad());
            }
            continue;
        }
        let op = ["!=", "==", "=", ">", "<"].iter().find_map(|op| t.split_once(op));
        match op {
            Some((k, v)) if is_label_key(k.trim()) && is_label_value(v.trim()) => {}
            None if is_label_key(t) => {}
            _ => return Err(bad()),
        }
    }
    Ok(())
}

/// Kubernetes' field selector syntax: `field=value`, `field==value` or
/// `field!=value`, joined by commas (`\,`, `\=`, `\\` escape).
pub fn check_field_selector(sel: &str) -> Result<(), String> {
    if sel.trim().is_empty() {
        return Ok(());
    }
    let mut term = String::new();
    let mut terms = Vec::new();
    let mut chars = sel.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                term.push('\\');
                term.extend(chars.next());
            }
            ',' => terms.push(std::mem::take(&mut term)),
            c => term.push(c),
        }
    }
    terms.push(term);
    for t in terms {
        let ok = ["!=", "==", "="].iter().find_map(|op| t.split_once(op)).is_some_and(|(k, _)| {
            let k = k.trim();
            !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        });
        if !ok {
            return Err(format!("`{t}` in field selector `{sel}` is not `field=value` or `field!=value`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_and_field_selectors_parse_as_kubernetes_reads_them() {
        for ok in [
            "",
            "app=web",
            "app==web,tier!=db",
            "!canary",
            "env in (a, b),x notin (c)",
            "example.com/team=infra",
            "gen>2",
        ] {
            assert!(check_label_selector(ok).is_ok(), "{ok}");
        }
        for bad in ["app in (a,b", "=web", "app=we b", "-x=y", "app=a,,b=c"] {
            assert!(check_label_selector(bad).is_err(), "{bad}");
        }
        for ok in ["", "metadata.name=x", "spec.nodeName==n,status.phase!=Failed", r"metadata.name=a\,b"] {
            assert!(check_field_selector(ok).is_ok(), "{ok}");
        }
        for bad in ["metadata.name", "=x", "a=b,c"] {
            assert!(check_field_selector(bad).is_err(), "{bad}");
        }
    }
}
