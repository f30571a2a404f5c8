//! Table output of `tailship cloud ...` (JSON output prints the answer as is).

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::Value;

use super::parse;
use crate::cloud::model::{AccessPolicy, Conditions, Realm, Stack, Token};
use crate::commands::output::{self, cell, Output};

/// Listed records as a table under `headers`: each parsed as a `T`
/// (`what` names one in errors), then made a row by `row`.
pub(super) fn print_rows<T: serde::de::DeserializeOwned>(
    w: &mut impl Write,
    items: &[Value],
    what: &str,
    headers: &[&str],
    row: impl Fn(T) -> Vec<String>,
) -> anyhow::Result<()> {
    let rows = items.iter().map(|v| parse(v, what).map(&row)).collect::<anyhow::Result<Vec<_>>>()?;
    Ok(output::table(w, headers, &rows)?)
}

pub(super) fn realms_text(realms: &[Realm]) -> String {
    let parts: Vec<String> = realms
        .iter()
        .map(|r| {
            let mut s = format!("{}:{}", r.kind, r.identifier);
            for lp in &r.label_policies {
                s.push_str(&format!(" [{}]", lp.selector));
            }
            s
        })
        .collect();
    cell(Some(&parts.join(",")))
}

pub(super) fn subnets_text(c: &Option<Conditions>) -> String {
    cell(c.as_ref().map(|c| c.allowed_subnets.join(",")).as_deref())
}

pub(super) fn labels_text(l: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v}")).collect();
    cell(Some(&parts.join(",")))
}

pub(super) fn print_policy(w: &mut impl Write, v: &Value, out: Output) -> anyhow::Result<()> {
    if out == Output::Json {
        return Ok(output::json(w, v)?);
    }
    let p: AccessPolicy = parse(v, "the access policy")?;
    output::fields(
        w,
        &[
            ("id", p.id.clone()),
            ("name", p.name.clone()),
            ("display name", cell(Some(&p.display_name))),
            ("status", cell(p.status.as_deref())),
            ("scopes", cell(Some(&p.scopes.join(",")))),
            ("realms", realms_text(&p.realms)),
            ("allowed subnets", subnets_text(&p.conditions)),
            ("created at", cell(p.created_at.as_deref())),
            ("updated at", cell(p.updated_at.as_deref())),
        ],
    )?;
    Ok(())
}

/// Prints a token; the secret appears only when the service sent it (create).
pub(super) fn print_token(w: &mut impl Write, v: &Value, out: Output) -> anyhow::Result<()> {
    if out == Output::Json {
        return Ok(output::json(w, v)?);
    }
    let t: Token = parse(v, "the token")?;
    let mut pairs = vec![
        ("id", t.id.clone()),
        ("name", t.name.clone()),
        ("display name", cell(Some(&t.display_name))),
        ("access policy id", t.access_policy_id.clone()),
        ("expires at", t.expires_at.clone().unwrap_or_else(|| "never".into())),
        ("first used at", cell(t.first_used_at.as_deref())),
        ("last used at", cell(t.last_used_at.as_deref())),
        ("created at", cell(t.created_at.as_deref())),
    ];
    if let Some(s) = &t.token {
        pairs.push(("token", s.expose().to_string()));
    }
    output::fields(w, &pairs)?;
    Ok(())
}

pub(super) fn print_stack(w: &mut impl Write, v: &Value, out: Output) -> anyhow::Result<()> {
    if out == Output::Json {
        return Ok(output::json(w, v)?);
    }
    let s: Stack = parse(v, "the stack")?;
    output::fields(
        w,
        &[
            ("slug", s.slug.clone()),
            ("id", s.id.to_string()),
            ("name", s.name.clone()),
            ("url", cell(Some(&s.url))),
            ("region", cell(Some(&s.region_slug))),
            ("status", cell(Some(&s.status))),
            ("description", cell(Some(&s.description))),
            ("labels", labels_text(&s.labels)),
            ("delete protection", s.delete_protection.to_string()),
            ("logs url", cell(s.hl_instance_url.as_deref())),
            ("logs user", cell(s.hl_instance_id.map(|i| i.to_string()).as_deref())),
        ],
    )?;
    Ok(())
}

pub(super) fn print_connections(w: &mut impl Write, v: &Value) -> anyhow::Result<()> {
    let s = |p: &str| cell(v.pointer(p).and_then(Value::as_str));
    output::fields(
        w,
        &[
            ("influx url", s("/influxUrl")),
            ("otlp http url", s("/otlpHttpUrl")),
            ("oncall api url", s("/oncallApiUrl")),
            ("app platform url", s("/appPlatform/url")),
            ("private otlp dns", s("/privateConnectivityInfo/otlp/privateDNS")),
        ],
    )?;
    let tenants = v.pointer("/privateConnectivityInfo/tenants").and_then(Value::as_array);
    if let Some(ts) = tenants.filter(|t| !t.is_empty()) {
        writeln!(w)?;
        let rows: Vec<Vec<String>> = ts
            .iter()
            .map(|t| {
                let g = |p: &str| t.pointer(p).and_then(Value::as_str);
                vec![
                    cell(g("/type")),
                    t.get("id").map(|i| i.to_string()).unwrap_or_else(|| "-".into()),
                    cell(g("/info/privateDNS")),
                    cell(g("/info/serviceName")),
                    cell(g("/ipAllowListCNAME")),
                ]
            })
            .collect();
        output::table(w, &["TENANT TYPE", "ID", "PRIVATE DNS", "SERVICE NAME", "IP ALLOW LIST CNAME"], &rows)?;
    }
    Ok(())
}

pub(super) fn print_deleted(w: &mut impl Write, out: Output, what: &str, id: &str) -> anyhow::Result<()> {
    if out == Output::Json {
        output::json(w, &serde_json::json!({ "deleted": what, "id": id }))?;
    } else {
        writeln!(w, "deleted {what} {id}")?;
    }
    Ok(())
}
