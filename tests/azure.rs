//! `azure` targets (Promtail's `azure_sd_configs`) through the real binary.
//! Azure's resource manager and login have fixed addresses, so the agent
//! reaches stand-ins for both through `proxy_url`, a proxy written here that
//! serves each tunnel with a certificate for those names from a CA the
//! source trusts (`tls.ca_file`): machines and scale sets' machines are
//! targets with Prometheus' `__meta_azure_*` labels.

use crate::agent;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;

use std::collections::BTreeMap;
use std::time::Duration;

use agent::write_file;
use discovery::{bad_sources_exit_2, check_hides};
use mockhttp::{Mock, Pki, Reply, Req};
use scenario::{run_agent, Scenario};
use serde_json::json;

const SUB: &str = "/subscriptions/sub-1";

fn nic_ref(id: &str) -> serde_json::Value {
    json!({ "networkProfile": { "networkInterfaces": [ { "id": id } ] } })
}

fn azure(req: &Req) -> Reply {
    if req.path == "/tenant-1/oauth2/v2.0/token" {
        let form: BTreeMap<String, String> = url::form_urlencoded::parse(req.body.as_bytes()).into_owned().collect();
        if form.get("client_secret").map(String::as_str) != Some("az-s3cret")
            || form.get("scope").map(String::as_str) != Some("https://management.azure.com/.default")
        {
            return Reply::json(401, json!({ "error": "invalid_client" }));
        }
        return Reply::ok(json!({ "access_token": "eyJ-azure-token", "token_type": "Bearer", "expires_in": 3599 }));
    }
    if req.header("authorization") != Some("Bearer eyJ-azure-token") {
        return Reply::json(401, json!({ "error": { "code": "AuthenticationFailed" } }));
    }
    let rg = format!("{SUB}/resourceGroups/rg-web");
    let web_nic = format!("{rg}/providers/Microsoft.Network/networkInterfaces/web-1-nic");
    let set = format!("{rg}/providers/Microsoft.Compute/virtualMachineScaleSets/pool");
    let set_nic = format!("{set}/virtualMachines/0/networkInterfaces/pool-nic");
    match req.path.as_str() {
        p if p == format!("{SUB}/providers/Microsoft.Compute/virtualMachines") && !req.query.contains("page=2") => {
            let mut props = nic_ref(&web_nic);
            props["osProfile"] = json!({ "computerName": "web-1-host" });
            props["storageProfile"] = json!({ "osDisk": { "osType": "Linux" } });
            props["hardwareProfile"] = json!({ "vmSize": "Standard_B2s" });
            Reply::ok(json!({
                "value": [ { "id": format!("{rg}/providers/Microsoft.Compute/virtualMachines/web-1"), "name": "web-1",
                             "location": "westeurope", "tags": { "team.name": "shop" }, "properties": props } ],
                "nextLink": format!("https://management.azure.com{SUB}/providers/Microsoft.Compute/virtualMachines?api-version=2023-09-01&page=2")
            }))
        }
        p if p == format!("{SUB}/providers/Microsoft.Compute/virtualMachines") => Reply::ok(json!({ "value": [
            { "id": format!("{rg}/providers/Microsoft.Compute/virtualMachines/stopped-1"), "name": "stopped-1",
              "location": "westeurope", "properties": nic_ref(&format!("{rg}/providers/Microsoft.Network/networkInterfaces/gone")) } ] })),
        p if p == format!("{SUB}/providers/Microsoft.Compute/virtualMachineScaleSets") => {
            Reply::ok(json!({ "value": [ { "id": set, "name": "pool" } ] }))
        }
        p if p == format!("{set}/virtualMachines") => Reply::ok(json!({ "value": [ {
            "id": format!("{set}/virtualMachines/0"), "name": "pool_0", "instanceId": "0", "location": "westeurope",
            "sku": { "name": "Standard_D2s_v3" }, "properties": nic_ref(&set_nic) } ] })),
        p if p == web_nic => {
            Reply::ok(json!({ "properties": { "primary": true, "ipConfigurations": [ { "properties": {
            "privateIPAddress": "10.1.0.4", "publicIPAddress": { "properties": { "ipAddress": "20.1.2.3" } } } } ] } }))
        }
        p if p == set_nic => Reply::ok(json!({ "properties": { "primary": true, "ipConfigurations": [
            { "properties": { "privateIPAddress": "10.1.0.5" } } ] } })),
        _ => Reply::json(404, json!({ "error": { "code": "NotFound" } })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn azure_machines_and_scale_sets_through_a_proxy_name_the_files_and_a_converted_promtail_job_ships() {
    let pki = Pki::new(&["management.azure.com", "login.microsoftonline.com"]);
    let proxy = Mock::start_tls(pki.server.clone(), true, |req, _| azure(req)).await;
    let proxy_url = proxy.url.replace("https://", "http://");
    let s = Scenario::loki();
    let d = s.root();
    write_file(d, "ca.pem", &pki.ca);
    s.name_logs(&["web-1", "pool_0", "stopped-1"]);
    let jobs = format!(
        r#"  - job_name: azure
    azure_sd_configs:
      - subscription_id: sub-1
        tenant_id: tenant-1
        client_id: client-1
        client_secret: az-s3cret
        port: 9100
        refresh_interval: 1m
        proxy_url: {proxy_url}
        tls_config:
          ca_file: {d}/ca.pem
    relabel_configs:
      - source_labels: [__meta_azure_machine_name]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_azure_machine_name]
        target_label: name
      - source_labels: [__meta_azure_machine_resource_group]
        target_label: rg
      - source_labels: [__meta_azure_machine_public_ip]
        target_label: public_ip
      - source_labels: [__meta_azure_machine_tag_team_name]
        target_label: team
      - source_labels: [__meta_azure_machine_size]
        target_label: size
      - source_labels: [__meta_azure_machine_scale_set]
        target_label: scale_set
      - source_labels: [__meta_azure_machine_computer_name]
        target_label: computer
      - source_labels: [__address__]
        target_label: instance
"#,
        d = d.display(),
    );
    let cfg = s.convert(&jobs, "azure_sd_configs");
    check_hides(&cfg, "az-s3cret");
    let agent = run_agent(cfg).await;
    let of = |q: &str| s.labels(q);
    let l = &s.wait_labels(&agent, r#"{name="web-1"}"#, 1)[0];
    assert_eq!(
        (l["rg"].as_str(), l["public_ip"].as_str(), l["team"].as_str(), l["size"].as_str(), l["computer"].as_str()),
        ("rg-web", "20.1.2.3", "shop", "Standard_B2s", "web-1-host")
    );
    assert_eq!(l["instance"], "10.1.0.4:9100");
    s.wait_labels(&agent, r#"{name="pool_0"}"#, 1);
    let p = &of(r#"{name="pool_0"}"#)[0];
    assert_eq!(
        (p["scale_set"].as_str(), p["size"].as_str(), p["instance"].as_str()),
        ("pool", "Standard_D2s_v3", "10.1.0.5:9100")
    );
    assert!(of(r#"{name="stopped-1"}"#).is_empty(), "a machine whose interface is gone is no target");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_azure_settings_exit_2_naming_the_key_and_the_file() {
    let ok = r#"subscription_id = "s", tenant_id = "t", client_id = "c", client_secret = "x""#;
    let cases = [
        (r#"tenant_id = "t", client_id = "c", client_secret = "x""#.to_string(), "sources[0].azure.subscription_id"),
        (r#"subscription_id = "s", tenant_id = "t", client_id = "c""#.into(), "sources[0].azure.client_secret"),
        (format!(r#"{ok}, authentication_method = "Password""#), "sources[0].azure.authentication_method"),
        (format!(r#"{ok}, environment = "AzureMoonCloud""#), "sources[0].azure.environment"),
        (format!(r#"{ok}, refresh_interval = "0s""#), "sources[0].azure.refresh_interval"),
    ];
    bad_sources_exit_2(&cases.map(|(table, key)| (format!("azure = {{ {table} }}"), key)));
}
